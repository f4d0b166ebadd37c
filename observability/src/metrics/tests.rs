//! The registry: encodings, exemplars, the series present from the first scrape, the latency buckets, the
//! pollution counters, and the metric table of docs/OBSERVABILITY.md.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

/// One sample of Prometheus text: name, labels, value.
fn parse_line(line: &str) -> Option<(String, BTreeMap<String, String>, f64)> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let (series, value) = line.rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let (name, labels) = match series.split_once('{') {
        Some((n, rest)) => (n, rest.strip_suffix('}')?),
        None => (series, ""),
    };
    let mut map = BTreeMap::new();
    for pair in labels.split("\",").filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once("=\"")?;
        map.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
    }
    Some((name.to_owned(), map, value))
}

/// The value of the series `name` with exactly `labels`.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    text.lines()
        .filter_map(parse_line)
        .find(|(n, l, _)| n == name && *l == want)
        .map(|(_, _, v)| v)
}

#[test]
fn the_registry_encodes_every_family_and_exemplars() {
    let m = metrics();
    m.record("fetched", "");
    m.response(200, 10);
    let id = [
        0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31,
        0x9c,
    ];
    m.fetch_duration("fetched", 0.02, Some((id, std::time::Instant::now())));
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
            || text
                .contains("crawl_fetch_duration_seconds_bucket{outcome=\"fetched\",le=\"0.025\"}"),
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

#[test]
fn a_fresh_registry_has_every_known_series_at_zero() {
    let text = Metrics::new().prometheus_text();
    let zero = |name: &str, labels: &[(&str, &str)]| {
        assert_eq!(
            value(&text, name, labels),
            Some(0.0),
            "{name} {labels:?} in\n{text}"
        );
    };
    for (outcome, reason) in known::RECORDS {
        zero(
            "crawl_records_total",
            &[("outcome", outcome), ("reason", reason)],
        );
    }
    for class in known::STATUS_CLASSES {
        zero("crawl_responses_total", &[("status_class", class)]);
    }
    for reason in known::FETCH_ERROR_REASONS {
        zero("crawl_fetch_errors_total", &[("reason", reason)]);
    }
    for result in known::ROBOTS_RESULTS {
        zero("crawl_robots_fetches_total", &[("result", result)]);
    }
    for kind in known::PARSE_FAILURE_KINDS {
        zero("crawl_parse_failures_total", &[("kind", kind)]);
    }
    for kind in known::LINK_KINDS {
        zero("crawl_links_dropped_total", &[("kind", kind)]);
    }
    for (source, outcome) in known::DNS_LOOKUPS {
        zero(
            "crawl_dns_lookups_total",
            &[("source", source), ("outcome", outcome)],
        );
    }
    zero("crawl_dns_polluted_total", &[]);
    for rule in known::DNS_POLLUTION_RULES {
        zero("crawl_dns_pollution_rules_total", &[("rule", rule)]);
    }
    for actor in known::ACTORS {
        zero("crawl_actor_restarts_total", &[("actor", actor)]);
    }
    for outcome in known::CONFIG_RELOAD_OUTCOMES {
        zero("crawl_config_reloads_total", &[("outcome", outcome)]);
    }
    for op in known::STORE_OPS {
        zero("crawl_store_errors_total", &[("op", op)]);
    }
    for change in known::SHARD_CHANGES {
        zero("crawl_shard_changes_total", &[("change", change)]);
    }
    for result in known::LEASE_RESULTS {
        zero("crawl_shard_leases_total", &[("result", result)]);
    }
    for outcome in known::LATENCY_OUTCOMES {
        zero(
            "crawl_fetch_duration_seconds_count",
            &[("outcome", outcome)],
        );
        zero(
            "crawl_fetch_duration_seconds_bucket",
            &[("outcome", outcome), ("le", "+Inf")],
        );
    }
    for name in [
        "crawl_retries_total",
        "crawl_response_body_bytes_total",
        "crawl_fenced_records_total",
        "crawl_trace_spans_dropped_total",
    ] {
        zero(name, &[]);
    }
    // A chain's series exist from its configuration on.
    let m = Metrics::new();
    m.proxy_chain("tor");
    let text = m.prometheus_text();
    for result in known::PROXY_CONNECT_RESULTS {
        assert_eq!(
            value(
                &text,
                "crawl_proxy_connects_total",
                &[("chain", "tor"), ("result", result)]
            ),
            Some(0.0)
        );
    }
    for kind in known::PROXY_FAULT_KINDS {
        assert_eq!(
            value(
                &text,
                "crawl_proxy_faults_total",
                &[("chain", "tor"), ("kind", kind)]
            ),
            Some(0.0),
            "{kind}"
        );
    }
    assert_eq!(
        value(&text, "crawl_proxy_breaker_open", &[("chain", "tor")]),
        Some(0.0)
    );
}

#[test]
fn frontier_gauges_show_the_last_update() {
    let m = Metrics::new();
    m.frontier(5, 2, 9, 1);
    m.frontier(4, 3, 10, 2);
    let text = m.prometheus_text();
    let state = |s| value(&text, "crawl_frontier_urls", &[("state", s)]);
    assert_eq!(state("queued"), Some(4.0));
    assert_eq!(state("in_flight"), Some(3.0));
    assert_eq!(state("known"), Some(10.0));
    assert_eq!(value(&text, "crawl_frontier_hosts", &[]), Some(2.0));
    assert_eq!(value(&text, "crawl_fetches_in_flight", &[]), Some(3.0));
}

#[test]
fn a_polluted_answer_counts_once_whatever_the_number_of_rules() {
    let m = Metrics::new();
    m.dns_polluted(["bogus_ip", "cross_check"]);
    m.dns_polluted(["bogus_ip"]);
    let text = m.prometheus_text();
    assert_eq!(value(&text, "crawl_dns_polluted_total", &[]), Some(2.0));
    let rule = |r| value(&text, "crawl_dns_pollution_rules_total", &[("rule", r)]);
    assert_eq!(rule("bogus_ip"), Some(2.0));
    assert_eq!(rule("cross_check"), Some(1.0));
    assert_eq!(rule("non_public"), Some(0.0));
}

#[test]
fn latency_buckets_resolve_loopback_and_slow_fetches_in_seconds() {
    let m = Metrics::new();
    // 180 µs (a loopback answer) and 3.2 s (a slow site) land in buckets of their own, not in the first or last.
    m.fetch_duration("fetched", 0.000_18, None);
    m.fetch_duration("fetched", 3.2, None);
    let text = m.prometheus_text();
    let bucket = |le: &str| {
        value(
            &text,
            "crawl_fetch_duration_seconds_bucket",
            &[("le", le), ("outcome", "fetched")],
        )
        .unwrap_or_else(|| panic!("no bucket {le} in\n{text}"))
    };
    assert_eq!(bucket("0.0001"), 0.0);
    assert_eq!(bucket("0.00025"), 1.0);
    assert_eq!(bucket("2.5"), 1.0);
    assert_eq!(bucket("5.0"), 2.0);
    assert_eq!(bucket("60.0"), 2.0);
    let sum = value(
        &text,
        "crawl_fetch_duration_seconds_sum",
        &[("outcome", "fetched")],
    )
    .unwrap();
    assert!((sum - 3.200_18).abs() < 1e-9, "{sum}");
    assert!(LATENCY_BUCKETS.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(LATENCY_BUCKETS.first(), Some(&0.0001));
    assert_eq!(LATENCY_BUCKETS.last(), Some(&60.0));
}

/// The metric names of docs/OBSERVABILITY.md's metric table.
fn documented_metrics() -> BTreeSet<String> {
    let doc = include_str!("../../../docs/OBSERVABILITY.md");
    let table = doc
        .split("## Metrics")
        .nth(1)
        .expect("a Metrics section")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .filter(|n| n.starts_with("crawl_"))
        .collect()
}

/// The families of the registry and their types. Families without a series are not encoded: the ones not
/// created up front get a sample.
fn registered() -> BTreeMap<String, String> {
    let m = Metrics::new();
    m.antibot(429, "example.com");
    m.fetch_duration("fetched", 0.1, None);
    m.proxy_chain("tor");
    m.sinks().register_sink("pg", 0.0);
    m.prometheus_text()
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(n, t)| (n.to_owned(), t.to_owned()))
        .collect()
}

#[test]
fn every_registered_metric_is_documented_and_every_documented_one_exists() {
    let registered: BTreeSet<String> = registered().into_keys().collect();
    let documented = documented_metrics();
    assert!(registered.len() > 20, "{registered:?}");
    let undocumented: Vec<_> = registered.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/OBSERVABILITY.md: {undocumented:?}"
    );
    let unknown: Vec<_> = documented.difference(&registered).collect();
    assert!(
        unknown.is_empty(),
        "documented but not registered: {unknown:?}"
    );
}

/// The `crawl_*` metric names an expression file refers to (a histogram's `_bucket`, `_sum` and `_count` samples
/// under their family's name).
fn referenced(text: &str, families: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crawl_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        // The log target of the actors crate, named in runbook text, is no metric.
        if name != "crawl_actors" {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|base| families.get(*base).is_some_and(|t| t == "histogram"))
                .unwrap_or(name);
            out.insert(family.to_owned());
        }
        rest = &tail[end..];
    }
    out
}

#[test]
fn the_dashboard_and_the_alert_rules_use_only_metrics_the_engine_has() {
    let families = registered();
    for (file, text) in [
        (
            "grafana/dashboards/crawl-engine.json",
            include_str!("../../deploy/grafana/dashboards/crawl-engine.json"),
        ),
        ("alerts.yml", include_str!("../../deploy/alerts.yml")),
        (
            "alerts_test.yml",
            include_str!("../../deploy/alerts_test.yml"),
        ),
    ] {
        let names = referenced(text, &families);
        assert!(!names.is_empty(), "{file}");
        let unknown: Vec<_> = names
            .iter()
            .filter(|n| !families.contains_key(*n))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} refers to metrics the engine does not have: {unknown:?}"
        );
    }
}

#[test]
fn a_sink_has_its_series_from_the_start_and_counts_what_it_delivers() {
    let m = Metrics::new();
    let s = m.sinks();
    s.register_sink("pg", 1_000.5);
    let text = m.prometheus_text();
    let sink = [("sink", "pg")];
    assert_eq!(value(&text, "crawl_sink_records_total", &sink), Some(0.0));
    assert_eq!(
        value(&text, "crawl_sink_last_success_timestamp_seconds", &sink),
        Some(1_000.5)
    );
    for kind in SINK_ERROR_KINDS {
        assert_eq!(
            value(
                &text,
                "crawl_sink_errors_total",
                &[("sink", "pg"), ("kind", kind)]
            ),
            Some(0.0),
            "{kind}"
        );
    }
    s.delivered("pg", 500, 60_000, 2, 1_010.0);
    s.error("pg", "transient");
    s.lag("pg", 1_200, 150_000, true);
    let text = m.prometheus_text();
    assert_eq!(value(&text, "crawl_sink_records_total", &sink), Some(500.0));
    assert_eq!(
        value(&text, "crawl_sink_bytes_total", &sink),
        Some(60_000.0)
    );
    assert_eq!(
        value(
            &text,
            "crawl_sink_records_skipped_total",
            &[("sink", "pg"), ("reason", "oversize")]
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &text,
            "crawl_sink_errors_total",
            &[("sink", "pg"), ("kind", "transient")]
        ),
        Some(1.0)
    );
    assert_eq!(value(&text, "crawl_sink_lag_records", &sink), Some(1_200.0));
    assert_eq!(value(&text, "crawl_sink_lag_bytes", &sink), Some(150_000.0));
    assert_eq!(value(&text, "crawl_sink_backpressure", &sink), Some(1.0));
    assert_eq!(
        value(&text, "crawl_sink_last_success_timestamp_seconds", &sink),
        Some(1_010.0)
    );
}
