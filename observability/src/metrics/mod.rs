//! The engine's Prometheus metrics: one process-wide registry, updated where the engine already counts (the
//! scheduler when it writes a record, the resolver, the proxy actor, the supervisor) and encoded on scrape.
//! Names follow docs/OBSERVABILITY.md.

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabel as _, EncodeLabelSet, LabelSetEncoder};
pub use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;

mod exemplar;
mod handles;
pub mod known;
mod sinks;
mod text;

pub use exemplar::EXEMPLAR_EVERY;
use exemplar::ExemplarGate;
use handles::Handles;
pub use sinks::{SINK_ERROR_KINDS, SinkMetrics};

pub use text::{OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, openmetrics_to_text};

/// Label pairs of one series.
pub type Labels = Vec<(&'static str, String)>;

/// The exemplar of a latency sample: the id of the trace it belongs to, kept as its 16 bytes (no string, no label
/// vector built for every sample) and written as `trace_id` in 32 hex digits when the metrics are read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceExemplar(pub [u8; 16]);

impl EncodeLabelSet for TraceExemplar {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        let hex = crate::trace::hex_bytes(self.0);
        ("trace_id", hex.as_str()).encode(encoder.encode_label())
    }
}

type CounterFamily = Family<Labels, Counter>;
type GaugeFamily = Family<Labels, Gauge>;

/// Fetch latency buckets in seconds: 1-2.5-5 steps from 100 µs (a loopback answer) to 60 s (a slow site at the
/// request deadline), so both ends have buckets of their own.
pub const LATENCY_BUCKETS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 25.0, 60.0,
];

/// Store request latency buckets in seconds (a local commit with its fsync, or a Redis round trip).
pub const STORE_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Every metric of the engine.
pub struct Metrics {
    registry: Registry,
    records: CounterFamily,
    responses: CounterFamily,
    fetch_duration: Family<Labels, HistogramWithExemplars<TraceExemplar>>,
    body_bytes: Counter,
    fetch_errors: CounterFamily,
    retries: Counter,
    antibot: CounterFamily,
    in_flight: Gauge,
    frontier_urls: GaugeFamily,
    /// The series of `frontier_urls` in the order of [`known::FRONTIER_STATES`] (queued, in_flight, known), held so
    /// that the per-event update does not look them up by label.
    frontier_states: [Gauge; 3],
    frontier_hosts: Gauge,
    robots_fetches: CounterFamily,
    parse_failures: CounterFamily,
    links_dropped: CounterFamily,
    dns_lookups: CounterFamily,
    dns_polluted: Counter,
    dns_pollution_rules: CounterFamily,
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
    revisits: CounterFamily,
    recrawl_anomalies: CounterFamily,
    revisits_scheduled: Gauge,
    revisit_next_due: Gauge,
    spans_dropped: Counter,
    sinks: SinkMetrics,
    /// Held series of `records` by (outcome, reason), `responses` by status class, `fetch_duration` by outcome.
    record_handles: Handles<(&'static str, &'static str), Counter>,
    response_handles: Handles<&'static str, Counter>,
    latency_handles: Handles<&'static str, (HistogramWithExemplars<TraceExemplar>, ExemplarGate)>,
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
            Family::<Labels, HistogramWithExemplars<TraceExemplar>>::new_with_constructor(|| {
                HistogramWithExemplars::new(LATENCY_BUCKETS.into_iter())
            });
        r.register_with_unit(
            "crawl_fetch_duration",
            "Page fetch latency from request start to body end (failed fetches: to the error), by outcome",
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
        let dns_polluted = Counter::default();
        r.register(
            "crawl_dns_polluted",
            "Network DNS answers judged polluted, each once (answers served from the cache are not counted again)",
            dns_polluted.clone(),
        );
        let dns_pollution_rules = CounterFamily::default();
        r.register(
            "crawl_dns_pollution_rules",
            "Rules that fired on polluted network DNS answers (one answer may fire several)",
            dns_pollution_rules.clone(),
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
        let revisits = CounterFamily::default();
        for changed in known::REVISIT_RESULTS {
            let _ = revisits.get_or_create(&l1("changed", changed));
        }
        r.register(
            "crawl_revisits",
            "Fetches of URLs fetched before (continuous crawling), by whether the page changed: true, false, or \
             unknown (no body read)",
            revisits.clone(),
        );
        let recrawl_anomalies = CounterFamily::default();
        for a in known::RECRAWL_ANOMALIES {
            let _ = recrawl_anomalies.get_or_create(&l1("anomaly", a));
        }
        r.register(
            "crawl_recrawl_anomalies",
            "Odd validators, dates and sitemap hints seen by the revisit schedule, by kind",
            recrawl_anomalies.clone(),
        );
        let revisits_scheduled = Gauge::default();
        r.register(
            "crawl_revisits_scheduled",
            "URLs waiting in the revisit schedule (continuous crawling)",
            revisits_scheduled.clone(),
        );
        let revisit_next_due = Gauge::default();
        r.register(
            "crawl_revisit_next_due_timestamp_seconds",
            "When the earliest scheduled revisit is due (Unix seconds; 0 when none is)",
            revisit_next_due.clone(),
        );
        let spooled = Gauge::default();
        r.register(
            "crawl_store_spooled_commits",
            "Commits waiting in data_dir/spool for an unreachable Redis",
            spooled.clone(),
        );
        let spans_dropped = Counter::default();
        r.register(
            "crawl_trace_spans_dropped",
            "Spans that never reached the OTLP collector: failed or timed-out exports, a full export queue, spans \
             still queued when the exporter shut down",
            spans_dropped.clone(),
        );
        let build_info = GaugeFamily::default();
        build_info
            .get_or_create(&l1("version", env!("CARGO_PKG_VERSION")))
            .set(1);
        r.register("crawl_build_info", "Build of the engine", build_info);
        let sinks = SinkMetrics::register(&mut r);
        let m = Metrics {
            sinks,
            registry: r,
            records,
            responses,
            fetch_duration,
            record_handles: Handles::new(),
            response_handles: Handles::new(),
            latency_handles: Handles::new(),
            body_bytes,
            fetch_errors,
            retries,
            antibot,
            in_flight,
            frontier_states: known::FRONTIER_STATES
                .map(|state| frontier_urls.get_or_create(&l1("state", state)).clone()),
            frontier_urls,
            frontier_hosts,
            robots_fetches,
            parse_failures,
            links_dropped,
            dns_lookups,
            dns_polluted,
            dns_pollution_rules,
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
            revisits,
            recrawl_anomalies,
            revisits_scheduled,
            revisit_next_due,
            spans_dropped,
        };
        m.last_reload.set(unix_now());
        m.precreate();
        m
    }

    /// Creates at zero every series whose labels are known before any event (see [`known`]), the fetch latency
    /// histogram's by outcome included.
    fn precreate(&self) {
        let pairs =
            |f: &CounterFamily, keys: (&'static str, &'static str), values: &[(&str, &str)]| {
                for (a, b) in values {
                    let _ = f
                        .get_or_create(&vec![(keys.0, (*a).to_owned()), (keys.1, (*b).to_owned())]);
                }
            };
        let singles = |f: &CounterFamily, key: &'static str, values: &[&str]| {
            for v in values {
                let _ = f.get_or_create(&l1(key, v));
            }
        };
        pairs(&self.records, ("outcome", "reason"), &known::RECORDS);
        singles(&self.responses, "status_class", &known::STATUS_CLASSES);
        singles(&self.fetch_errors, "reason", &known::FETCH_ERROR_REASONS);
        singles(&self.robots_fetches, "result", &known::ROBOTS_RESULTS);
        singles(&self.parse_failures, "kind", &known::PARSE_FAILURE_KINDS);
        singles(&self.links_dropped, "kind", &known::LINK_KINDS);
        pairs(
            &self.dns_lookups,
            ("source", "outcome"),
            &known::DNS_LOOKUPS,
        );
        singles(
            &self.dns_pollution_rules,
            "rule",
            &known::DNS_POLLUTION_RULES,
        );
        singles(&self.actor_restarts, "actor", &known::ACTORS);
        singles(
            &self.config_reloads,
            "outcome",
            &known::CONFIG_RELOAD_OUTCOMES,
        );
        singles(&self.store_errors, "op", &known::STORE_OPS);
        singles(&self.shard_changes, "change", &known::SHARD_CHANGES);
        singles(&self.lease_events, "result", &known::LEASE_RESULTS);
        for state in known::FRONTIER_STATES {
            let _ = self.frontier_urls.get_or_create(&l1("state", state));
        }
        for op in known::STORE_OPS {
            let _ = self.store_duration.get_or_create(&l1("op", op));
        }
        for outcome in known::LATENCY_OUTCOMES {
            let _ = self.fetch_duration.get_or_create(&l1("outcome", outcome));
        }
    }

    /// The series of a configured proxy chain, at zero until it is used: its connects by result, its faults by
    /// kind, and its breaker gauge (closed).
    pub fn proxy_chain(&self, chain: &str) {
        for result in known::PROXY_CONNECT_RESULTS {
            let _ = self.proxy_connects.get_or_create(&vec![
                ("chain", chain.to_owned()),
                ("result", result.to_owned()),
            ]);
        }
        for kind in known::PROXY_FAULT_KINDS {
            let _ = self.proxy_faults.get_or_create(&vec![
                ("chain", chain.to_owned()),
                ("kind", kind.to_owned()),
            ]);
        }
        self.proxy_breaker(chain, false);
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
    /// A fetch of a URL fetched before: `changed` is whether its page changed (None: no body read).
    pub fn revisit(&self, changed: Option<bool>) {
        let label = match changed {
            Some(true) => "true",
            Some(false) => "false",
            None => "unknown",
        };
        self.revisits.get_or_create(&l1("changed", label)).inc();
    }

    /// Something odd the revisit schedule saw (`crawl_core::recrawl::Anomaly::as_str`).
    pub fn recrawl_anomaly(&self, anomaly: &str) {
        self.recrawl_anomalies
            .get_or_create(&l1("anomaly", anomaly))
            .inc();
    }

    /// The revisit schedule: URLs waiting, and when the earliest is due (Unix ms; None: nothing scheduled).
    pub fn revisit_schedule(&self, scheduled: u64, next_due_ms: Option<u64>) {
        self.revisits_scheduled
            .set(i64::try_from(scheduled).unwrap_or(i64::MAX));
        self.revisit_next_due
            .set(next_due_ms.map_or(0, |ms| i64::try_from(ms / 1000).unwrap_or(i64::MAX)));
    }

    pub fn spooled(&self, commits: u64) {
        self.spooled.set(commits as i64);
    }

    /// Records the store refused (fencing).
    pub fn fenced(&self, records: u64) {
        self.fenced_records.inc_by(records);
    }

    /// One JSONL record.
    pub fn record(&self, outcome: &'static str, reason: &'static str) {
        let make = || {
            let labels = vec![
                ("outcome", outcome.to_owned()),
                ("reason", reason.to_owned()),
            ];
            self.records.get_or_create(&labels).clone()
        };
        self.record_handles.with((outcome, reason), make, |c| {
            c.inc();
        });
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
        let make = || {
            self.responses
                .get_or_create(&l1("status_class", class))
                .clone()
        };
        self.response_handles.with(class, make, |c| {
            c.inc();
        });
        self.body_bytes.inc_by(body_bytes);
    }

    /// The latency of a page fetch; with `exemplar` (an exported trace's id and when the sample was taken), the
    /// trace id as the bucket's exemplar, which a bucket takes at most once every [`EXEMPLAR_EVERY`].
    pub fn fetch_duration(
        &self,
        outcome: &'static str,
        seconds: f64,
        exemplar: Option<([u8; 16], std::time::Instant)>,
    ) {
        let make = || {
            let h = self
                .fetch_duration
                .get_or_create(&l1("outcome", outcome))
                .clone();
            (
                h,
                ExemplarGate::new(&LATENCY_BUCKETS, std::time::Instant::now()),
            )
        };
        self.latency_handles.with(outcome, make, |(h, gate)| {
            let exemplar = exemplar
                .filter(|(_, at)| gate.admits(seconds, *at))
                .map(|(id, _)| TraceExemplar(id));
            h.observe(seconds, exemplar, None);
        });
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
        for (gauge, v) in self.frontier_states.iter().zip([queued, in_flight, known]) {
            gauge.set(i64::try_from(v).unwrap_or(i64::MAX));
        }
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

    /// The counter of `dns_lookup(source, outcome)`, to count with one atomic add where the same pair is counted
    /// again and again (a fetcher's copy of the resolver's answers).
    pub fn dns_lookup_counter(&self, source: &str, outcome: &str) -> Counter {
        self.dns_lookups
            .get_or_create(&vec![
                ("source", source.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .clone()
    }

    pub fn dns_lookup(&self, source: &str, outcome: &str) {
        self.dns_lookups
            .get_or_create(&vec![
                ("source", source.to_owned()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
    }

    /// A network answer judged polluted (counted once) and the rules that fired on it. Answers served from the
    /// resolver's cache are not counted again, so this never passes the network lookups.
    pub fn dns_polluted<'a>(&self, rules: impl IntoIterator<Item = &'a str>) {
        self.dns_polluted.inc();
        for rule in rules {
            self.dns_pollution_rules
                .get_or_create(&l1("rule", rule))
                .inc();
        }
    }

    /// Spans lost on the way to the collector.
    pub fn trace_spans_dropped(&self, spans: u64) {
        self.spans_dropped.inc_by(spans);
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

    /// The sinks' metrics.
    pub fn sinks(&self) -> &SinkMetrics {
        &self.sinks
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

#[cfg(test)]
mod tests;
