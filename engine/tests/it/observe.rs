//! Observability of the real binary: every JSONL record has one OpenTelemetry trace (received by an in-process
//! OTLP receiver, over OTLP/HTTP and over gRPC) whose root span names the URL and whose child spans (queue wait, robots, DNS, connect, first
//! byte, body, parse, output) hang off it; secrets in URLs never reach a span; no trace header reaches a site;
//! sampling at 0 exports nothing but still ids every record; `/metrics` counts match the JSONL, pass
//! `promtool check metrics`, and carry trace-id exemplars in OpenMetrics.
//!
//! Hosts use 127.0.0.190..=199 (this file's range).

use super::crawl::run_cmd;
use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crawl_core::record::{Outcome, Record};
use crawl_tests::engine::{RunResult, TestCrawl};
use crawl_tests::otlp::{OtlpReceiver, SpanRecord, traces};
use crawl_tests::prom;
use crawl_tests::site::{Route, Site, SiteSpec};

fn spec(first_octet: u8) -> SiteSpec {
    SiteSpec {
        hosts: 2,
        pages_per_host: 12,
        links_per_page: 3,
        cross_host_ratio: 0.2,
        robots: true,
        sitemaps: false,
        redirects: true,
        missing: true,
        orphans: 0,
        first_octet,
        log_requests: true,
        ..SiteSpec::default()
    }
}

fn is_hex32(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn names(spans: &[SpanRecord]) -> BTreeSet<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_has_one_trace_with_child_spans_from_every_actor() {
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(spec(190)).start().await.expect("site");
    let port = site.addr(0).expect("host 0").port();
    // One seed by name (resolved through resolver.hosts) and one with a secret. One fetcher: the named host's
    // robots.txt is the first fetch of that name (the resolver is asked: a dns.resolve span), its page the next
    // (answered from the fetcher's copy: no span).
    let named = format!("http://named-site.test:{port}/page/1");
    let secret = format!("{}?sig=s3cr3tvalue&keep=1", site.page_url(0, 2));
    let seeds = vec![site.seed_url(), named.clone(), secret.clone()];
    let overrides = format!(
        "[fetch]\nfetchers = 1\n[observability]\notlp_endpoint = \"{}\"\n[resolver.hosts]\n\"named-site.test\" = [\"127.0.0.190\"]\n",
        rx.http_endpoint()
    );
    let (c, run) = crawl_ok(&seeds, &overrides).await;
    // No protocol configured: OTLP/HTTP, the specification's default, and no warning about the port.
    assert_start_line_names(&run.stderr, "http/protobuf");
    assert!(
        !run.stderr.contains("other protocol's port"),
        "{}",
        run.stderr
    );
    let records: Vec<Record> = c.records();
    assert!(records.len() > 20, "{}", records.len());

    // Spans were flushed before the process exited; give the receiver a moment to hand them over.
    let want = records.len();
    rx.wait_for(
        |spans| {
            spans
                .iter()
                .filter(|s| s.name == "crawl.url" && s.attr_str("crawl.kind") == Some("page"))
                .count()
                >= want
        },
        Duration::from_secs(10),
    );
    let spans = rx.spans();
    let by_trace = traces(&spans);

    let mut ids = BTreeSet::new();
    let mut saw_connect = false;
    for r in &records {
        let id = r
            .trace_id
            .as_deref()
            .unwrap_or_else(|| panic!("no trace_id: {r:?}"));
        assert!(is_hex32(id), "{id}");
        assert!(
            ids.insert(id.to_owned()),
            "trace id shared by two records: {id}"
        );
        let trace = by_trace
            .get(id)
            .unwrap_or_else(|| panic!("no trace exported for {} ({id})", r.url));
        let roots: Vec<&SpanRecord> = trace
            .iter()
            .filter(|s| s.parent_span_id.is_none())
            .collect();
        assert_eq!(roots.len(), 1, "{}: roots {roots:?}", r.url);
        let root = roots[0];
        assert_eq!(root.name, "crawl.url");
        assert_eq!(
            root.attr_str("crawl.outcome"),
            Some(r.outcome.as_str()),
            "{}",
            r.url
        );
        let service = root.resource.get("service.name").map(|v| format!("{v:?}"));
        assert!(
            service.is_some_and(|v| v.contains("crawl-engine")),
            "{:?}",
            root.resource
        );
        assert_eq!(
            root.resource_str("crawl.frontier.backend"),
            Some("embedded"),
            "{:?}",
            root.resource
        );
        for s in trace.iter().filter(|s| s.parent_span_id.is_some()) {
            assert_eq!(
                s.parent_span_id.as_deref(),
                Some(root.span_id.as_str()),
                "{}: {} is not a child of the root",
                r.url,
                s.name
            );
            assert!(
                s.start_unix_nanos >= root.start_unix_nanos,
                "{}: {} starts before the root",
                r.url,
                s.name
            );
            assert!(
                s.end_unix_nanos <= root.end_unix_nanos,
                "{}: {} ends after the root",
                r.url,
                s.name
            );
        }
        let n = names(trace);
        // The root ends when the record is written: its line number is on the root, the write has no span.
        assert!(root.attr_int("crawl.jsonl_line").is_some(), "{}", r.url);
        assert!(!n.contains("output.write"), "{}: {n:?}", r.url);
        assert!(n.contains("frontier.commit"), "{}: {n:?}", r.url);
        if r.outcome == Outcome::Fetched {
            for want in ["frontier.wait", "http.first_byte", "http.body", "parse"] {
                assert!(n.contains(want), "{}: {want} missing from {n:?}", r.url);
            }
            // The robots verdict that let the page go is an attribute of its wait, not a span of its own.
            let wait = trace
                .iter()
                .find(|s| s.name == "frontier.wait")
                .expect("wait span");
            assert_eq!(
                wait.attr_str("robots.verdict"),
                Some("allowed"),
                "{}",
                r.url
            );
            assert!(!n.contains("robots.check"), "{}: {n:?}", r.url);
            let body = trace
                .iter()
                .find(|s| s.name == "http.body")
                .expect("body span");
            assert!(body.attr_int("http.response.body.size").is_some());
            assert!(body.attr_str("network.protocol.version").is_some());
            let parse = trace
                .iter()
                .find(|s| s.name == "parse")
                .expect("parse span");
            // Both on the engine's one clock: the parse starts once the body is in.
            assert!(
                parse.start_unix_nanos >= body.end_unix_nanos,
                "{}: parse starts before the body ended",
                r.url
            );
            if r.status == Some(200) {
                assert_eq!(
                    parse.attr_int("crawl.links_found"),
                    r.links.map(i64::from),
                    "{}",
                    r.url
                );
            }
        }
        saw_connect |= n.contains("net.connect");
    }
    assert!(saw_connect, "no trace has a net.connect span");

    // The named host was looked up once, from resolver.hosts, by its robots.txt fetch: one dns.resolve span that
    // says so, under that trace's root.
    let named_lookups: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.name == "dns.resolve" && s.attr_str("dns.name") == Some("named-site.test"))
        .collect();
    assert_eq!(named_lookups.len(), 1, "{named_lookups:?}");
    let dns = named_lookups[0];
    let lookup_root = by_trace[dns.trace_id.as_str()]
        .iter()
        .find(|s| s.is_root())
        .expect("the lookup's root");
    assert_eq!(
        dns.parent_span_id.as_deref(),
        Some(lookup_root.span_id.as_str())
    );
    assert_eq!(
        lookup_root.attr_str("url.full"),
        Some(format!("http://named-site.test:{port}/robots.txt").as_str())
    );
    assert_eq!(dns.attr_str("dns.source"), Some("hosts"));
    assert_eq!(dns.attr_bool("dns.polluted"), Some(false));
    assert_eq!(dns.attr_str("dns.outcome"), Some("resolved"));
    // The page came next and was answered from the fetcher's copy: no span, and the record says where the answer
    // came from.
    let named_rec = records
        .iter()
        .find(|r| r.url == named)
        .expect("named seed record");
    let named_trace = &by_trace[named_rec.trace_id.as_deref().expect("id")];
    assert!(
        !names(named_trace).contains("dns.resolve"),
        "{:?}",
        names(named_trace)
    );
    assert_eq!(
        named_rec.dns.as_ref().map(|d| d.source.as_str()),
        Some("hosts")
    );
    let named_root = named_trace
        .iter()
        .find(|s| s.is_root())
        .expect("named root");
    assert_eq!(named_root.attr_str("dns.source"), None);

    // Robots.txt fetches are traces of their own.
    assert!(
        spans
            .iter()
            .any(|s| s.name == "crawl.url" && s.attr_str("crawl.kind") == Some("robots"))
    );

    // The secret query value is in the JSONL (it is the URL) but in no span.
    assert!(records.iter().any(|r| r.url.contains("s3cr3tvalue")));
    for s in &spans {
        for (k, v) in &s.attributes {
            assert!(
                !format!("{v:?}").contains("s3cr3tvalue"),
                "{} {k} leaks the signature",
                s.name
            );
        }
    }
    let secret_root = spans
        .iter()
        .find(|s| {
            s.name == "crawl.url" && s.attr_str("url.full").is_some_and(|u| u.contains("keep=1"))
        })
        .expect("root of the signed url");
    assert!(
        secret_root
            .attr_str("url.full")
            .is_some_and(|u| u.contains("sig=REDACTED"))
    );

    // Nothing of the trace context went to the sites.
    let sent: Vec<_> = site
        .requests()
        .into_iter()
        .filter(|r| r.trace_header.is_some())
        .collect();
    assert!(sent.is_empty(), "trace headers sent to the site: {sent:?}");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_ratio_zero_exports_nothing_but_every_record_keeps_a_trace_id() {
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(spec(191)).start().await.expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\nsample_ratio = 0\n",
        rx.http_endpoint()
    );
    let (c, _) = crawl_ok(&[site.seed_url()], &overrides).await;
    let records = c.records();
    assert!(!records.is_empty());
    assert!(
        records
            .iter()
            .all(|r| r.trace_id.as_deref().is_some_and(is_hex32))
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.spans().len(), 0, "spans exported at sample_ratio 0");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_otlp_grpc_every_record_s_trace_arrives_whole() {
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(spec(193)).start().await.expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"\n",
        rx.endpoint()
    );
    let (c, run) = crawl_ok(&[site.seed_url()], &overrides).await;
    assert_start_line_names(&run.stderr, "grpc");
    let records = c.records();
    assert!(records.len() > 20, "{}", records.len());
    let want = records.len();
    rx.wait_for(|spans| record_roots(spans) >= want, Duration::from_secs(10));
    let spans = rx.spans();
    let by_trace = traces(&spans);
    for r in &records {
        let id = r.trace_id.as_deref().expect("trace id");
        let trace = by_trace
            .get(id)
            .unwrap_or_else(|| panic!("no trace exported for {} ({id})", r.url));
        let root = trace.iter().find(|s| s.is_root()).expect("root");
        assert_eq!(root.attr_str("crawl.outcome"), Some(r.outcome.as_str()));
        assert!(
            root.resource_str("service.name")
                .is_some_and(|s| s.contains("crawl-engine"))
        );
        assert!(root.attr_str("url.full").is_some() && root.attr_int("crawl.depth").is_some());
        assert!(
            trace
                .iter()
                .all(|s| s.is_root() || s.parent_span_id.as_deref() == Some(root.span_id.as_str())),
            "{}: every child hangs off the root",
            r.url
        );
        if r.outcome == Outcome::Fetched {
            let n = names(trace);
            for want in [
                "frontier.wait",
                "http.first_byte",
                "http.body",
                "parse",
                "frontier.commit",
            ] {
                assert!(n.contains(want), "{}: {want} missing from {n:?}", r.url);
            }
        }
    }
    assert_eq!(record_roots(&spans), want, "one root a record, none twice");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_overloaded_for_a_moment_loses_no_span() {
    let rx = OtlpReceiver::start().await;
    // The first exports are refused with 503 and `Retry-After: 0`: each is sent again.
    rx.refuse_next(3);
    let site = Site::builder(spec(194)).start().await.expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\n",
        rx.http_endpoint()
    );
    let (c, run) = crawl_ok(&[site.seed_url()], &overrides).await;
    assert_eq!(rx.refused(), 3, "the collector refused three exports");
    let records = c.records();
    assert!(records.len() > 20, "{}", records.len());
    let want = records.len();
    rx.wait_for(|spans| record_roots(spans) >= want, Duration::from_secs(10));
    assert_eq!(
        record_roots(&rx.spans()),
        want,
        "every record's trace, once"
    );
    // The exporter's own account at exit: nothing dropped, and no warning about dropped spans.
    let end = run
        .stderr
        .lines()
        .find(|l| l.contains("trace exporter shut down"))
        .unwrap_or_else(|| panic!("no account at exit:\n{}", run.stderr));
    assert!(end.contains(r#""dropped":0"#), "{end}");
    assert!(
        !run.stderr.contains("trace spans dropped"),
        "{}",
        run.stderr
    );
    site.shutdown().await;
}

/// Exports compressed with gzip (over OTLP/HTTP, the default) arrive whole: the receiver inflates them.
#[tokio::test]
async fn gzip_compressed_exports_arrive_whole() {
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(spec(199)).start().await.expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\notlp_compression = \"gzip\"\n",
        rx.http_endpoint()
    );
    let (c, run) = crawl_ok(&[site.seed_url()], &overrides).await;
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("exporting traces over otlp")
                && l.contains(r#""compression":"gzip""#)),
        "the start line names the compression: {}",
        run.stderr
    );
    let want = c.records().len();
    assert!(want > 20, "{want}");
    rx.wait_for(|spans| record_roots(spans) >= want, Duration::from_secs(10));
    assert_eq!(
        record_roots(&rx.spans()),
        want,
        "every record's trace, once"
    );
    assert!(rx.gzipped() > 0, "the exports came compressed");
    site.shutdown().await;
}

/// Crawls `seeds` with the config `overrides` to the end, which must be a success.
async fn crawl_ok(seeds: &[String], overrides: &str) -> (TestCrawl, RunResult) {
    let c = TestCrawl::new(ENGINE, seeds, overrides).expect("test crawl");
    let run = run_cmd(c.command()).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    (c, run)
}

/// The engine's start line names `protocol` as the one traces are exported over (a field of that line, not any
/// mention of it on stderr).
fn assert_start_line_names(stderr: &str, protocol: &str) {
    let field = format!(r#""protocol":"{protocol}""#);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("exporting traces over otlp") && l.contains(&field)),
        "the start line names {protocol}: {stderr}"
    );
}

/// Root spans of records (robots.txt fetches have traces too, and no record).
fn record_roots(spans: &[SpanRecord]) -> usize {
    spans
        .iter()
        .filter(|s| s.is_root() && s.attr_str("crawl.kind") != Some("robots"))
        .count()
}

/// Waits until the JSONL has `n` lines and stays so for a moment.
fn wait_lines(c: &TestCrawl, n: usize, deadline: Duration) -> Vec<Record> {
    let start = Instant::now();
    let mut last = (0, Instant::now());
    loop {
        let recs = c.records();
        if recs.len() != last.0 {
            last = (recs.len(), Instant::now());
        }
        if recs.len() >= n && last.1.elapsed() > Duration::from_millis(1500) {
            return recs;
        }
        assert!(
            start.elapsed() < deadline,
            "jsonl has {} of {n} lines",
            recs.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_match_the_jsonl_pass_promtool_and_carry_exemplars() {
    let rx = OtlpReceiver::start().await;
    let spec = SiteSpec {
        hosts: 1,
        pages_per_host: 16,
        cross_host_ratio: 0.0,
        ..spec(192)
    };
    // The last page hangs, so the crawl is still running (and serving /metrics) once everything else is written.
    let site = Site::builder(spec)
        .route(
            0,
            "/page/15",
            Route::ok("late").delay(Duration::from_secs(60)),
        )
        .route(0, "/page/7", Route::new(429).header("Retry-After", "0"))
        .start()
        .await
        .expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\nmetrics_listen = \"127.0.0.1:0\"\n[fetch]\nmax_retries = 1\nrequest_timeout_ms = 90000\nheader_timeout_ms = 90000\n",
        rx.http_endpoint()
    );
    let c = TestCrawl::new(ENGINE, &[site.seed_url()], &overrides).expect("test crawl");
    let run = c.start();
    let addr = tokio::task::block_in_place(|| run.metrics_addr(Duration::from_secs(10)));
    let (_c, records) = tokio::task::spawn_blocking(move || {
        let recs = wait_lines(&c, 10, Duration::from_secs(30));
        (c, recs)
    })
    .await
    .expect("join");
    let (ctype, text) = prom::scrape(addr, None).expect("scrape");
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    let (om_type, om) =
        prom::scrape(addr, Some("application/openmetrics-text; version=1.0.0")).expect("scrape om");
    run.signal("KILL");
    let _ = tokio::task::spawn_blocking(move || run.wait(Duration::from_secs(10)))
        .await
        .expect("join");

    let scrape = prom::parse(&text).expect("parse");
    assert_eq!(
        scrape.sum("crawl_records_total") as usize,
        records.len(),
        "{text}"
    );
    let mut by_outcome: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &records {
        *by_outcome.entry(r.outcome.as_str()).or_default() += 1;
    }
    for (outcome, n) in &by_outcome {
        assert_eq!(
            scrape
                .value("crawl_records_total", &[("outcome", outcome)])
                .unwrap_or(0.0) as usize,
            *n,
            "outcome {outcome}"
        );
    }
    let ok2xx = records
        .iter()
        .filter(|r| {
            r.outcome == Outcome::Fetched && r.status.is_some_and(|s| (200..300).contains(&s))
        })
        .count();
    assert_eq!(
        scrape
            .value("crawl_responses_total", &[("status_class", "2xx")])
            .unwrap_or(0.0) as usize,
        ok2xx
    );
    let bytes: u64 = records
        .iter()
        .filter(|r| r.outcome == Outcome::Fetched)
        .filter_map(|r| r.content_length)
        .sum();
    assert_eq!(scrape.sum("crawl_response_body_bytes_total") as u64, bytes);
    assert!(
        scrape
            .value("crawl_antibot_responses_total", &[("status", "429")])
            .unwrap_or(0.0)
            >= 1.0
    );
    assert!(scrape.sum("crawl_retries_total") >= 1.0);
    assert_eq!(
        scrape.value("crawl_fetches_in_flight", &[]),
        Some(1.0),
        "the hanging page is in flight"
    );
    assert!(
        scrape
            .value("crawl_robots_fetches_total", &[("result", "allow_all")])
            .unwrap_or(0.0)
            + scrape
                .value("crawl_robots_fetches_total", &[("result", "rules")])
                .unwrap_or(0.0)
            >= 1.0
    );
    let hist_count = scrape.sum("crawl_fetch_duration_seconds_count") as usize;
    assert_eq!(
        hist_count,
        records.iter().filter(|r| r.elapsed_ms.is_some()).count()
    );
    assert_eq!(
        scrape
            .types
            .get("crawl_fetch_duration_seconds")
            .map(String::as_str),
        Some("histogram")
    );
    if crawl_test_kit::tool::require(
        "metrics match the jsonl: promtool check metrics",
        &["promtool"],
        "apt-get install prometheus",
    ) {
        prom::promtool_check_metrics(&text).expect("promtool check metrics");
    }

    assert!(
        om_type.starts_with("application/openmetrics-text"),
        "{om_type}"
    );
    assert!(om.trim_end().ends_with("# EOF"));
    let ids: BTreeSet<String> = records.iter().filter_map(|r| r.trace_id.clone()).collect();
    let exemplar = om
        .lines()
        .filter(|l| l.starts_with("crawl_fetch_duration_seconds_bucket"))
        .find_map(|l| {
            l.split_once("# {trace_id=\"")
                .map(|(_, rest)| rest[..32].to_owned())
        })
        .expect("an exemplar with a trace id");
    assert!(
        ids.contains(&exemplar),
        "exemplar {exemplar} is no record's trace"
    );
    site.shutdown().await;
}
