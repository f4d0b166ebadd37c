//! The engine's Prometheus metrics: one process-wide registry, updated where the engine already counts (the
//! scheduler when it writes a record, the resolver, the proxy actor, the supervisor) and encoded on scrape.
//! Names follow docs/OBSERVABILITY.md.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;

/// Label pairs of one series.
pub type Labels = Vec<(&'static str, String)>;

type CounterFamily = Family<Labels, Counter>;
type GaugeFamily = Family<Labels, Gauge>;

/// Fetch latency buckets in seconds.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Store request latency buckets in seconds (a local commit with its fsync, or a Redis round trip).
pub const STORE_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// What a page references, for `crawl_links_dropped`.
const LINK_KINDS: [&str; 2] = ["link", "embed"];

/// The store operations timed.
const STORE_OPS: [&str; 3] = ["commit", "next_urls", "poll"];

/// Every metric of the engine.
pub struct Metrics {
    registry: Registry,
    records: CounterFamily,
    responses: CounterFamily,
    fetch_duration: Family<Labels, HistogramWithExemplars<Labels>>,
    body_bytes: Counter,
    fetch_errors: CounterFamily,
    retries: Counter,
    antibot: CounterFamily,
    in_flight: Gauge,
    frontier_urls: GaugeFamily,
    frontier_hosts: Gauge,
    robots_fetches: CounterFamily,
    parse_failures: CounterFamily,
    links_dropped: CounterFamily,
    dns_lookups: CounterFamily,
    dns_polluted: CounterFamily,
    proxy_connects: CounterFamily,
    proxy_faults: CounterFamily,
    proxy_breaker_open: GaugeFamily,
    actor_restarts: CounterFamily,
    config_reloads: CounterFamily,
    last_reload: Gauge<f64, AtomicU64>,
    store_duration: Family<Labels, prometheus_client::metrics::histogram::Histogram>,
    store_errors: CounterFamily,
    shards_owned: Gauge,
    shard_changes: CounterFamily,
    fenced_records: Counter,
    lease_events: CounterFamily,
    spooled: Gauge,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

fn l1(k: &'static str, v: &str) -> Labels {
    vec![(k, v.to_owned())]
}

impl Metrics {
    fn new() -> Metrics {
        let mut r = Registry::default();
        let records = CounterFamily::default();
        r.register(
            "crawl_records",
            "Records written to the output, by outcome and reason (one per JSONL line)",
            records.clone(),
        );
        let responses = CounterFamily::default();
        r.register(
            "crawl_responses",
            "Page fetches that got an HTTP answer, by status class",
            responses.clone(),
        );
        let fetch_duration =
            Family::<Labels, HistogramWithExemplars<Labels>>::new_with_constructor(|| {
                HistogramWithExemplars::new(LATENCY_BUCKETS.into_iter())
            });
        r.register_with_unit(
            "crawl_fetch_duration",
            "Page fetch latency from request start to body end, by outcome",
            Unit::Seconds,
            fetch_duration.clone(),
        );
        let body_bytes = Counter::default();
        r.register_with_unit(
            "crawl_response_body",
            "Decoded body bytes of fetched pages",
            Unit::Bytes,
            body_bytes.clone(),
        );
        let fetch_errors = CounterFamily::default();
        r.register(
            "crawl_fetch_errors",
            "Fetch attempts that got no HTTP answer, by reason (retried attempts included)",
            fetch_errors.clone(),
        );
        let retries = Counter::default();
        r.register(
            "crawl_retries",
            "URLs queued again after a transient error or a 429/503",
            retries.clone(),
        );
        let antibot = CounterFamily::default();
        r.register(
            "crawl_antibot_responses",
            "403, 429 and 503 answers by status and registrable domain",
            antibot.clone(),
        );
        let in_flight = Gauge::default();
        r.register(
            "crawl_fetches_in_flight",
            "Jobs leased to fetchers right now",
            in_flight.clone(),
        );
        let frontier_urls = GaugeFamily::default();
        r.register(
            "crawl_frontier_urls",
            "Frontier URLs by state (queued, in_flight, known)",
            frontier_urls.clone(),
        );
        let frontier_hosts = Gauge::default();
        r.register(
            "crawl_frontier_hosts",
            "Hosts the frontier holds queues for",
            frontier_hosts.clone(),
        );
        let robots_fetches = CounterFamily::default();
        r.register(
            "crawl_robots_fetches",
            "robots.txt fetches by result (rules, allow_all, unavailable)",
            robots_fetches.clone(),
        );
        let parse_failures = CounterFamily::default();
        r.register(
            "crawl_parse_failures",
            "Bodies that could not be parsed, by kind",
            parse_failures.clone(),
        );
        let links_dropped = CounterFamily::default();
        r.register(
            "crawl_links_dropped",
            "Link (kind=link) and page requisite (kind=embed) references cut by parser.max_links_per_page",
            links_dropped.clone(),
        );
        let dns_lookups = CounterFamily::default();
        r.register(
            "crawl_dns_lookups",
            "Name lookups by answer source and outcome",
            dns_lookups.clone(),
        );
        let dns_polluted = CounterFamily::default();
        r.register(
            "crawl_dns_polluted",
            "Answers judged polluted, by the rule that fired",
            dns_polluted.clone(),
        );
        let proxy_connects = CounterFamily::default();
        r.register(
            "crawl_proxy_connects",
            "Connections opened through a proxy chain, by chain and result",
            proxy_connects.clone(),
        );
        let proxy_faults = CounterFamily::default();
        r.register(
            "crawl_proxy_faults",
            "Proxy faults by chain and kind",
            proxy_faults.clone(),
        );
        let proxy_breaker_open = GaugeFamily::default();
        r.register(
            "crawl_proxy_breaker_open",
            "1 while a chain's circuit breaker is open",
            proxy_breaker_open.clone(),
        );
        let actor_restarts = CounterFamily::default();
        r.register(
            "crawl_actor_restarts",
            "Actor restarts by actor",
            actor_restarts.clone(),
        );
        let config_reloads = CounterFamily::default();
        r.register(
            "crawl_config_reloads",
            "SIGHUP config reloads by outcome (success, invalid, rejected)",
            config_reloads.clone(),
        );
        let last_reload = Gauge::<f64, AtomicU64>::default();
        r.register_with_unit(
            "crawl_config_last_reload_success_timestamp",
            "Unix time of the last successful config reload (or of the start)",
            Unit::Seconds,
            last_reload.clone(),
        );
        let store_duration =
            Family::<Labels, prometheus_client::metrics::histogram::Histogram>::new_with_constructor(
                || {
                    prometheus_client::metrics::histogram::Histogram::new(
                        STORE_BUCKETS,
                    )
                },
            );
        r.register_with_unit(
            "crawl_store_request_duration",
            "Frontier store requests (commit, next_urls, poll) from send to answer; the Redis latency in a shared crawl",
            Unit::Seconds,
            store_duration.clone(),
        );
        let store_errors = CounterFamily::default();
        r.register(
            "crawl_store_errors",
            "Frontier store requests that failed, by operation",
            store_errors.clone(),
        );
        let shards_owned = Gauge::default();
        r.register(
            "crawl_shards_owned",
            "Shards this process owns (a crawl shared through Redis)",
            shards_owned.clone(),
        );
        let shard_changes = CounterFamily::default();
        r.register(
            "crawl_shard_changes",
            "Shard leases taken (gained) and given up or lost (lost) by this process",
            shard_changes.clone(),
        );
        let fenced_records = Counter::default();
        r.register(
            "crawl_fenced_records",
            "Records refused by the store because their shard had passed to another process (fencing)",
            fenced_records.clone(),
        );
        let lease_events = CounterFamily::default();
        r.register(
            "crawl_shard_leases",
            "Shard lease renewals by result: renewed, or lost (another process had taken the shard)",
            lease_events.clone(),
        );
        let spooled = Gauge::default();
        r.register(
            "crawl_store_spooled_commits",
            "Commits waiting in data_dir/spool for an unreachable Redis",
            spooled.clone(),
        );
        let build_info = GaugeFamily::default();
        build_info
            .get_or_create(&l1("version", env!("CARGO_PKG_VERSION")))
            .set(1);
        r.register("crawl_build_info", "Build of the engine", build_info);
        let m = Metrics {
            registry: r,
            records,
            responses,
            fetch_duration,
            body_bytes,
            fetch_errors,
            retries,
            antibot,
            in_flight,
            frontier_urls,
            frontier_hosts,
            robots_fetches,
            parse_failures,
            links_dropped,
            dns_lookups,
            dns_polluted,
            proxy_connects,
            proxy_faults,
            proxy_breaker_open,
            actor_restarts,
            config_reloads,
            last_reload,
            store_duration,
            store_errors,
            shards_owned,
            shard_changes,
            fenced_records,
            lease_events,
            spooled,
        };
        m.last_reload.set(unix_now());
        // Series every dashboard expects, present from the first scrape.
        for outcome in ["success", "invalid", "rejected"] {
            let _ = m.config_reloads.get_or_create(&l1("outcome", outcome));
        }
        for state in ["queued", "in_flight", "known"] {
            let _ = m.frontier_urls.get_or_create(&l1("state", state));
        }
        for op in STORE_OPS {
            let _ = m.store_errors.get_or_create(&l1("op", op));
            let _ = m.store_duration.get_or_create(&l1("op", op));
        }
        for change in ["gained", "lost"] {
            let _ = m.shard_changes.get_or_create(&l1("change", change));
        }
        for result in ["renewed", "lost"] {
            let _ = m.lease_events.get_or_create(&l1("result", result));
        }
        for kind in LINK_KINDS {
            let _ = m.links_dropped.get_or_create(&l1("kind", kind));
        }
        m
    }

    /// One frontier store request (`op`: commit, next_urls, poll) that took `seconds`.
    pub fn store_request(&self, op: &str, seconds: f64, ok: bool) {
        self.store_duration
            .get_or_create(&l1("op", op))
            .observe(seconds);
        if !ok {
            self.store_errors.get_or_create(&l1("op", op)).inc();
        }
    }

    /// Shard ownership of this process: how many it owns now and how many it took and gave up since last time.
    pub fn shards(&self, owned: u64, gained: u64, lost: u64) {
        self.shards_owned.set(owned as i64);
        self.shard_changes
            .get_or_create(&l1("change", "gained"))
            .inc_by(gained);
        self.shard_changes
            .get_or_create(&l1("change", "lost"))
            .inc_by(lost);
    }

    /// Shard lease renewals so far (totals: the counters are raised to them).
    pub fn shard_leases(&self, renewed: u64, lost: u64) {
        for (result, total) in [("renewed", renewed), ("lost", lost)] {
            let c = self.lease_events.get_or_create(&l1("result", result));
            let now = c.get();
            if total > now {
                c.inc_by(total - now);
            }
        }
    }

    /// Commits waiting in the spool now.
    pub fn spooled(&self, commits: u64) {
        self.spooled.set(commits as i64);
    }

    /// Records the store refused (fencing).
    pub fn fenced(&self, records: u64) {
        self.fenced_records.inc_by(records);
    }

    /// One JSONL record.
    pub fn record(&self, outcome: &str, reason: &str) {
        self.records
            .get_or_create(&vec![
                ("outcome", outcome.to_owned()),
                ("reason", reason.to_owned()),
            ])
            .inc();
    }

    /// A page fetch with an HTTP answer.
    pub fn response(&self, status: u16, body_bytes: u64) {
        let class = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.responses
            .get_or_create(&l1("status_class", class))
            .inc();
        self.body_bytes.inc_by(body_bytes);
    }

    /// The latency of a page fetch, with the trace id as exemplar when the trace is exported.
    pub fn fetch_duration(&self, outcome: &str, seconds: f64, trace_id: Option<String>) {
        self.fetch_duration
            .get_or_create(&l1("outcome", outcome))
            .observe(seconds, trace_id.map(|t| vec![("trace_id", t)]), None);
    }

    /// A fetch attempt without an HTTP answer.
    pub fn fetch_error(&self, reason: &str) {
        self.fetch_errors.get_or_create(&l1("reason", reason)).inc();
    }

    pub fn retry(&self) {
        self.retries.inc();
    }

    /// A 403/429/503 answer from a host of `host_group`.
    pub fn antibot(&self, status: u16, host_group: &str) {
        self.antibot
            .get_or_create(&vec![
                ("status", status.to_string()),
                ("host_group", host_group.to_owned()),
            ])
            .inc();
    }

    /// The frontier's sizes.
    pub fn frontier(&self, queued: u64, in_flight: u64, known: u64, hosts: u64) {
        let set = |state: &str, v: u64| {
            self.frontier_urls
                .get_or_create(&l1("state", state))
                .set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        set("queued", queued);
        set("in_flight", in_flight);
        set("known", known);
        self.in_flight
            .set(i64::try_from(in_flight).unwrap_or(i64::MAX));
        self.frontier_hosts
            .set(i64::try_from(hosts).unwrap_or(i64::MAX));
    }

    pub fn robots_fetch(&self, result: &str) {
        self.robots_fetches
            .get_or_create(&l1("result", result))
            .inc();
    }

    /// References of one page cut by the per-page cap: `kind` is `link` or `embed`.
    pub fn links_dropped(&self, kind: &str, n: u64) {
        if n > 0 {
            self.links_dropped
                .get_or_create(&l1("kind", kind))
                .inc_by(n);
        }
    }

    pub fn parse_failure(&self, kind: &str) {
        self.parse_failures.get_or_create(&l1("kind", kind)).inc();
    }

    pub fn dns_lookup(&self, source: &str, outcome: &str) {
        self.dns_lookups
            .get_or_create(&vec![
                ("source", source.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
    }

    pub fn dns_polluted(&self, rule: &str) {
        self.dns_polluted.get_or_create(&l1("rule", rule)).inc();
    }

    pub fn proxy_connect(&self, chain: &str, ok: bool) {
        self.proxy_connects
            .get_or_create(&vec![
                ("chain", chain.to_owned()),
                ("result", if ok { "ok" } else { "fault" }.to_owned()),
            ])
            .inc();
    }

    pub fn proxy_fault(&self, chain: &str, kind: &str) {
        self.proxy_faults
            .get_or_create(&vec![
                ("chain", chain.to_owned()),
                ("kind", kind.to_owned()),
            ])
            .inc();
    }

    pub fn proxy_breaker(&self, chain: &str, open: bool) {
        self.proxy_breaker_open
            .get_or_create(&l1("chain", chain))
            .set(i64::from(open));
    }

    pub fn actor_restart(&self, actor: &str) {
        self.actor_restarts.get_or_create(&l1("actor", actor)).inc();
    }

    /// A config reload ended with `outcome` (success, invalid, rejected).
    pub fn config_reload(&self, outcome: &str) {
        self.config_reloads
            .get_or_create(&l1("outcome", outcome))
            .inc();
        if outcome == "success" {
            self.last_reload.set(unix_now());
        }
    }

    /// The OpenMetrics text (with exemplars and `# EOF`).
    pub fn openmetrics(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// The Prometheus text format 0.0.4 (no exemplars), for scrapers that do not ask for OpenMetrics.
    pub fn prometheus_text(&self) -> String {
        openmetrics_to_text(&self.openmetrics())
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Content type of [`Metrics::openmetrics`].
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Content type of [`Metrics::prometheus_text`].
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Rewrites OpenMetrics text as Prometheus text 0.0.4: counter families take their `_total` sample name, `# UNIT`
/// and `# EOF` go, exemplars are cut off, and `unknown` becomes `untyped`.
pub fn openmetrics_to_text(om: &str) -> String {
    let counters: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_once(' '))
        .filter(|(_, t)| *t == "counter")
        .map(|(name, _)| name)
        .collect();
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let ty = if ty == "unknown" { "untyped" } else { ty };
            if counters.contains(name) && !name.ends_with("_total") {
                out.push_str(&format!("# TYPE {name}_total {ty}\n"));
            } else {
                out.push_str(&format!("# TYPE {name} {ty}\n"));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if counters.contains(name) && !name.ends_with("_total") {
                out.push_str(&format!("# HELP {name}_total {help}\n"));
            } else {
                out.push_str(&format!("# HELP {name} {help}\n"));
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        out.push_str(strip_exemplar(line));
        out.push('\n');
    }
    out
}

/// A sample line without its ` # {..} value` exemplar (a `#` inside a quoted label value is not one).
fn strip_exemplar(line: &str) -> &str {
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            '\\' if in_quotes && !escaped => {
                escaped = true;
                continue;
            }
            '"' if !escaped => in_quotes = !in_quotes,
            '#' if !in_quotes => return line[..i].trim_end(),
            _ => {}
        }
        escaped = false;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_renames_counters_and_cuts_exemplars() {
        let om = "# HELP crawl_x Things.\n# TYPE crawl_x counter\ncrawl_x_total{a=\"q # r\"} 3\n\
                  # HELP crawl_d_seconds Lat.\n# TYPE crawl_d_seconds histogram\n# UNIT crawl_d_seconds seconds\n\
                  crawl_d_seconds_bucket{le=\"0.5\"} 1 # {trace_id=\"abc\"} 0.3\n# EOF\n";
        let t = openmetrics_to_text(om);
        assert_eq!(
            t,
            "# HELP crawl_x_total Things.\n# TYPE crawl_x_total counter\ncrawl_x_total{a=\"q # r\"} 3\n\
             # HELP crawl_d_seconds Lat.\n# TYPE crawl_d_seconds histogram\ncrawl_d_seconds_bucket{le=\"0.5\"} 1\n"
        );
    }

    #[test]
    fn the_registry_encodes_every_family_and_exemplars() {
        let m = metrics();
        m.record("fetched", "");
        m.response(200, 10);
        m.fetch_duration(
            "fetched",
            0.02,
            Some("0af7651916cd43dd8448eb211c80319c".into()),
        );
        let om = m.openmetrics();
        assert!(
            om.contains("crawl_records_total{outcome=\"fetched\",reason=\"\"}"),
            "{om}"
        );
        assert!(
            om.contains("# {trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 0.02"),
            "{om}"
        );
        assert!(om.ends_with("# EOF\n"));
        let text = m.prometheus_text();
        assert!(text.contains("# TYPE crawl_records_total counter"));
        assert!(
            text.contains("crawl_fetch_duration_seconds_bucket{le=\"0.025\",outcome=\"fetched\"}")
                || text.contains(
                    "crawl_fetch_duration_seconds_bucket{outcome=\"fetched\",le=\"0.025\"}"
                ),
            "{text}"
        );
        assert!(!text.contains("trace_id"));
        assert!(text.contains("crawl_build_info{version="));
        assert!(
            text.contains("crawl_links_dropped_total{kind=\"embed\"}"),
            "{text}"
        );
        m.links_dropped("link", 3);
        let text = m.prometheus_text();
        let line = text
            .lines()
            .find(|l| l.starts_with("crawl_links_dropped_total{kind=\"link\"}"))
            .unwrap();
        assert!(
            line.rsplit(' ').next().unwrap().parse::<u64>().unwrap() >= 3,
            "{line}"
        );
    }
}
