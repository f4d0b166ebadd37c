//! What the engine tells an operator holds from the first scrape and matches its documentation: every counter with
//! known labels is scraped at 0 before any fetch has finished, and every panel of the shipped Grafana dashboard
//! has a series (or falls back to 0) in that scrape; spans the collector never takes are counted and warned about
//! once; every span name, attribute and enumerated value a crawl exports is in docs/OBSERVABILITY.md.
//!
//! Hosts use 127.0.0.196..=198 (part of the observe range); the dashboard's crawl asks a listener on 127.0.0.1 that
//! never answers.

use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crawl_observability::metrics::known;
use crawl_tests::engine::TestCrawl;
use crawl_tests::otlp::{AttrValue, OtlpReceiver, SpanRecord};
use crawl_tests::prom;
use crawl_tests::site::{Route, Site, SiteSpec};

const DEADLINE: Duration = Duration::from_secs(60);

/// A proxy section whose one chain is never used (every host goes direct): its series exist, and every fetch has
/// a `proxy.connect` span with `proxy.result = "direct"`.
const PROXY_DIRECT: &str = "[proxy]\ndefault = \"direct\"\n[proxy.chains.spare]\nhops = [\"socks5://127.0.0.1:9\"]\n\
                            [[proxy.rules]]\nhosts = [\"spare.test\"]\nuse = \"spare\"\n";

fn spec(first_octet: u8, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        links_per_page: 2,
        cross_host_ratio: 0.0,
        robots: true,
        sitemaps: false,
        redirects: true,
        missing: true,
        orphans: 0,
        first_octet,
        log_requests: false,
        ..SiteSpec::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_scrape_has_every_known_series_at_zero() {
    // robots.txt answers after 30 s: no page can be fetched, let alone recorded, before the scrape.
    let site = Site::builder(spec(196, 4))
        .route(
            0,
            "/robots.txt",
            Route::text(200, "User-agent: *\nDisallow:\n").delay(Duration::from_secs(30)),
        )
        .start()
        .await
        .expect("site");
    let overrides = format!("[observability]\nmetrics_listen = \"127.0.0.1:0\"\n{PROXY_DIRECT}");
    let c = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let run = c.start();
    let addr = tokio::task::block_in_place(|| run.metrics_addr(Duration::from_secs(10)));
    // Once robots.txt is asked for, every actor is up (the request went through the proxy actor), and no fetch
    // can have finished.
    let start = Instant::now();
    while site.in_flight(0) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "robots.txt never asked for"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, text) = prom::scrape(addr, None).expect("scrape");
    run.signal("KILL");
    let _ = tokio::task::spawn_blocking(move || run.wait(Duration::from_secs(10)))
        .await
        .expect("join");
    let scrape = prom::parse(&text).expect("parse");
    assert!(
        c.records().is_empty(),
        "a record was written before the scrape"
    );

    let zero = |name: &str, labels: &[(&str, &str)]| {
        let found: Vec<_> = scrape
            .matching(name, labels)
            .filter(|s| s.labels.len() == labels.len())
            .collect();
        assert_eq!(found.len(), 1, "{name} {labels:?} in\n{text}");
        assert_eq!(found[0].value, 0.0, "{name} {labels:?}");
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
    for (source, outcome) in known::DNS_LOOKUPS {
        zero(
            "crawl_dns_lookups_total",
            &[("source", source), ("outcome", outcome)],
        );
    }
    for rule in known::DNS_POLLUTION_RULES {
        zero("crawl_dns_pollution_rules_total", &[("rule", rule)]);
    }
    for actor in known::ACTORS {
        zero("crawl_actor_restarts_total", &[("actor", actor)]);
    }
    for kind in known::PROXY_FAULT_KINDS {
        zero(
            "crawl_proxy_faults_total",
            &[("chain", "spare"), ("kind", kind)],
        );
    }
    for result in known::PROXY_CONNECT_RESULTS {
        zero(
            "crawl_proxy_connects_total",
            &[("chain", "spare"), ("result", result)],
        );
    }
    zero("crawl_dns_polluted_total", &[]);
    zero("crawl_trace_spans_dropped_total", &[]);
    if crawl_test_kit::tool::require(
        "the first scrape: promtool check metrics",
        &["promtool"],
        "apt-get install prometheus",
    ) {
        prom::promtool_check_metrics(&text).expect("promtool check metrics");
    }
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_panel_has_a_series_in_the_first_scrape() {
    // A server that takes connections and never answers: robots.txt is asked for, nothing is ever fetched.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    std::thread::spawn({
        let accepted = std::sync::Arc::clone(&accepted);
        move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                accepted.store(true, std::sync::atomic::Ordering::SeqCst);
                held.push(conn);
            }
        }
    });
    // No proxy chain, no exporter: a first crawl as the template starts it.
    let c = TestCrawl::new(
        ENGINE,
        &[format!("http://{addr}/")],
        "[observability]\nmetrics_listen = \"127.0.0.1:0\"\n",
    )
    .expect("test crawl");
    let run = c.start();
    let metrics = tokio::task::block_in_place(|| run.metrics_addr(Duration::from_secs(10)));
    crawl_tests::wait::until(Duration::from_secs(10), "robots.txt asked for", || {
        accepted.load(std::sync::atomic::Ordering::SeqCst)
    })
    .await;
    let (_, text) = prom::scrape(metrics, None).expect("scrape");
    run.signal("KILL");
    let _ = tokio::task::spawn_blocking(move || run.wait(Duration::from_secs(10)))
        .await
        .expect("join");
    assert!(c.records().is_empty(), "a record before the scrape");
    let scrape = prom::parse(&text).expect("parse");

    let queries = prom::dashboard::panel_queries(include_str!(
        "../../../observability/deploy/grafana/dashboards/crawl-engine.json"
    ))
    .expect("dashboard");
    assert!(queries.len() >= 30, "{queries:?}");
    let problems = prom::dashboard::no_data(&queries, &scrape);
    assert!(
        problems.is_empty(),
        "panels without data in the first scrape:\n{problems:#?}\n{text}"
    );
    // The ones that fall back to 0 are those whose series come with the first event or a configured chain.
    let fallbacks: BTreeSet<&str> = queries
        .iter()
        .filter(|q| q.expr.ends_with(prom::dashboard::ZERO_FALLBACK))
        .flat_map(|q| prom::dashboard::metric_names(&q.expr))
        .filter(|name| !scrape.has(name))
        .map(|name| {
            [
                "crawl_antibot_responses_total",
                "crawl_proxy_connects_total",
                "crawl_proxy_faults_total",
                "crawl_proxy_breaker_open",
            ]
            .into_iter()
            .find(|known| *known == name)
            .unwrap_or_else(|| panic!("{name} falls back to 0 but could exist from the start"))
        })
        .collect();
    assert!(
        fallbacks.contains("crawl_antibot_responses_total"),
        "{fallbacks:?}"
    );
    // The latency histogram is there for every outcome before any fetch.
    for outcome in known::LATENCY_OUTCOMES {
        assert_eq!(
            scrape.value(
                "crawl_fetch_duration_seconds_count",
                &[("outcome", outcome)]
            ),
            Some(0.0),
            "{outcome}"
        );
    }
}

/// How many stderr lines report dropped spans.
fn drop_warnings(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains("trace spans dropped"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_the_collector_never_takes_are_counted_and_warned_once() {
    // A collector address where nothing listens.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    // The last page hangs, so the crawl is still running (and serving /metrics) after several export rounds.
    let site = Site::builder(spec(197, 12))
        .route(
            0,
            "/page/11",
            Route::ok("late").delay(Duration::from_secs(60)),
        )
        .start()
        .await
        .expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"http://{closed}\"\nmetrics_listen = \"127.0.0.1:0\"\n\
         [shutdown]\ngrace_ms = 300\n"
    );
    let c = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let run = c.start();
    let addr = tokio::task::block_in_place(|| run.metrics_addr(Duration::from_secs(10)));
    let start = Instant::now();
    let dropped = loop {
        let (_, text) = prom::scrape(addr, None).expect("scrape");
        let scrape = prom::parse(&text).expect("parse");
        let dropped = scrape.sum("crawl_trace_spans_dropped_total");
        if dropped > 0.0 && !c.records().is_empty() {
            break dropped;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no dropped span counted:\n{text}\n{}",
            run.stderr_so_far()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // Export rounds keep failing while the crawl waits for the hanging page: still one warning.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    run.signal("TERM");
    let out = tokio::task::spawn_blocking(move || run.wait(DEADLINE))
        .await
        .expect("join");
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(dropped >= 1.0);
    assert_eq!(
        drop_warnings(&out.stderr),
        1,
        "one warning about dropped spans in a short crawl:\n{}",
        out.stderr
    );
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("trace spans dropped"))
        .expect("warning");
    let v: serde_json::Value = serde_json::from_str(line).expect("json log line");
    assert_eq!(v["level"], "WARN", "{line}");
    assert!(v["spans"].as_u64().is_some_and(|n| n > 0), "{line}");
    site.shutdown().await;
}

/// The span table of docs/OBSERVABILITY.md: span name → the text of its attributes cell.
fn documented_spans(doc: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line.starts_with("| span |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", name, where, attributes, ""]
        if cells.len() < 5 || cells[1].starts_with("---") {
            continue;
        }
        let name = cells[1].split('`').nth(1).unwrap_or_default().to_owned();
        out.insert(name, cells[3].to_owned());
    }
    out
}

/// Whether `word` stands in `text` on its own (not inside a longer name).
fn has_word(text: &str, word: &str) -> bool {
    let ok =
        |c: Option<char>| !c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    text.match_indices(word).any(|(i, _)| {
        ok(text[..i].chars().next_back()) && ok(text[i + word.len()..].chars().next())
    })
}

/// Attributes whose values form a documented set.
const ENUMERATED: [&str; 7] = [
    "crawl.kind",
    "crawl.outcome",
    "robots.verdict",
    "robots.result",
    "dns.source",
    "dns.outcome",
    "proxy.result",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exported_span_name_attribute_and_value_is_documented() {
    let rx = OtlpReceiver::start().await;
    // One page asks not to be indexed: its parse span says so, the others carry no flag.
    let site = Site::builder(spec(198, 10))
        .route(
            0,
            "/noindex",
            Route::ok(
                r#"<html><head><meta name="robots" content="noindex"></head><body>x</body></html>"#,
            ),
        )
        .start()
        .await
        .expect("site");
    let port = site.addr(0).expect("host 0").port();
    // A name from resolver.hosts, and one no nameserver knows (a failed network lookup, then cached).
    let named = format!("http://named-doc.test:{port}/page/1");
    let unknown = format!("http://unknown-doc.test:{port}/page/2");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\n[resolver.hosts]\n\"named-doc.test\" = [\"127.0.0.198\"]\n\
         [fetch]\nmax_retries = 1\n{PROXY_DIRECT}",
        rx.http_endpoint()
    );
    let noindex = site.url(0, "/noindex");
    let c = TestCrawl::new(
        ENGINE,
        &[site.seed_url(), named, unknown, noindex.clone()],
        &overrides,
    )
    .expect("test crawl");
    let (c, run) = tokio::task::spawn_blocking(move || {
        let r = c.run(DEADLINE);
        (c, r)
    })
    .await
    .expect("join");
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let records = c.records();
    assert!(records.len() > 5, "{}", records.len());
    let want = records.len();
    rx.wait_for(
        |spans| {
            spans
                .iter()
                .filter(|s| s.is_root() && s.attr_str("crawl.outcome").is_some())
                .count()
                >= want
        },
        Duration::from_secs(10),
    );
    let spans = rx.spans();

    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/OBSERVABILITY.md"
    ))
    .expect("docs/OBSERVABILITY.md");
    let table = documented_spans(&doc);
    assert!(table.len() >= 10, "{table:?}");
    let mut problems = BTreeSet::new();
    for s in &spans {
        let Some(row) = table.get(&s.name) else {
            problems.insert(format!("span {} is not documented", s.name));
            continue;
        };
        for (key, value) in &s.attributes {
            if !row.contains(&format!("`{key}`")) {
                problems.insert(format!("{}: attribute {key} is not documented", s.name));
            }
            if let (true, AttrValue::Str(v)) = (ENUMERATED.contains(&key.as_str()), value)
                && !has_word(row, v)
            {
                problems.insert(format!("{}: {key} = {v:?} is not documented", s.name));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/OBSERVABILITY.md lacks:\n{problems:#?}"
    );

    // The cases the documentation names explicitly were all exercised.
    let has = |f: &dyn Fn(&SpanRecord) -> bool| spans.iter().any(f);
    assert!(has(
        &|s| s.name == "dns.resolve" && s.attr_str("dns.source") == Some("lookup")
    ));
    assert!(has(
        &|s| s.name == "dns.resolve" && s.attr_str("dns.source") == Some("hosts")
    ));
    assert!(!has(&|s| s.is_root() && s.attr_str("dns.source").is_some()));
    assert!(has(
        &|s| s.name == "frontier.wait" && s.attr_str("robots.verdict") == Some("allowed")
    ));
    // The noindex page's parse span has the flag, every other page's has none.
    let noindex_trace = records
        .iter()
        .find(|r| r.url == noindex)
        .and_then(|r| r.trace_id.clone())
        .expect("the noindex page's record has a trace");
    let parses: Vec<&SpanRecord> = spans.iter().filter(|s| s.name == "parse").collect();
    assert!(parses.len() > 1, "{parses:?}");
    assert!(parses.iter().any(|s| s.trace_id == noindex_trace));
    for s in parses {
        let want = (s.trace_id == noindex_trace).then_some(true);
        assert_eq!(s.attr_bool("crawl.noindex"), want, "{s:?}");
    }
    assert!(has(
        &|s| s.name == "proxy.connect" && s.attr_str("proxy.result") == Some("direct")
    ));
    assert!(has(
        &|s| s.name == "frontier.wait" && s.attr_str("crawl.host").is_none()
    ));
    let robots_roots: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.is_root() && s.attr_str("crawl.kind") == Some("robots"))
        .collect();
    assert!(!robots_roots.is_empty());
    for r in robots_roots {
        assert!(r.attr_str("robots.result").is_some(), "{r:?}");
        assert!(r.attr_str("crawl.outcome").is_none(), "{r:?}");
    }
    for needle in [
        "`robots.result`",
        "absent when the robots gate dropped the URL",
        "lookup (asked over the network now)",
        "ok/fault/direct",
    ] {
        assert!(
            doc.contains(needle),
            "docs/OBSERVABILITY.md lacks {needle:?}"
        );
    }
    site.shutdown().await;
}
