//! Trace export of the real binary through the standard exporter, seen by an in-process OTLP receiver: the
//! `OTEL_EXPORTER_OTLP_HEADERS` the operator sets reach the collector over both protocols (and never the log);
//! sampling at 0.1 exports about a tenth of the traces, each whole; a slow collector that lets the export queue
//! overflow has every lost span counted; shutdown flushes the spans still queued.
//!
//! Hosts use 127.0.0.192..=195 (part of the observe range).

use super::crawl::run_cmd;
use crate::ENGINE;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crawl_core::record::Outcome;
use crawl_tests::engine::{RunResult, TestCrawl};
use crawl_tests::otlp::{OtlpReceiver, SpanRecord, traces};
use crawl_tests::site::{Site, SiteSpec};

fn spec(first_octet: u8, hosts: usize, pages_per_host: usize) -> SiteSpec {
    SiteSpec {
        hosts,
        pages_per_host,
        links_per_page: 3,
        cross_host_ratio: 0.2,
        robots: true,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        first_octet,
        ..SiteSpec::default()
    }
}

/// Root spans of records (robots.txt fetches have traces too, and no record).
fn record_roots(spans: &[SpanRecord]) -> usize {
    spans
        .iter()
        .filter(|s| s.is_root() && s.attr_str("crawl.kind") != Some("robots"))
        .count()
}

/// Crawls `seeds` with `overrides` and the environment `env` to a successful end.
async fn crawl_with_env(
    seeds: &[String],
    overrides: &str,
    env: &[(&str, &str)],
) -> (TestCrawl, RunResult) {
    let c = TestCrawl::new(ENGINE, seeds, overrides).expect("test crawl");
    let mut cmd = c.command();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let run = run_cmd(cmd).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    (c, run)
}

/// The `spans` and `dropped` fields of the exporter's account at exit.
fn exit_account(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("trace exporter shut down"))
        .unwrap_or_else(|| panic!("no account at exit:\n{stderr}"));
    let v: serde_json::Value = serde_json::from_str(line).expect("json log line");
    let field = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {line}"));
    (field("spans"), field("dropped"))
}

/// An authenticated collector (it refuses exports without the right `authorization` header) gets every trace
/// over gRPC and over OTLP/HTTP when the header comes from `OTEL_EXPORTER_OTLP_HEADERS`; the secret stays out of
/// the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otel_exporter_otlp_headers_reach_an_authenticated_collector_over_both_protocols() {
    let site = Site::builder(spec(192, 2, 8)).start().await.expect("site");
    for protocol in ["grpc", "http/protobuf"] {
        let rx = OtlpReceiver::start().await;
        rx.require_authorization("Bearer s3cr3t-t0ken");
        let endpoint = match protocol {
            "grpc" => rx.endpoint(),
            _ => rx.http_endpoint(),
        };
        let overrides = format!(
            "[observability]\notlp_endpoint = \"{endpoint}\"\notlp_protocol = \"{protocol}\"\n"
        );
        let env = [(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20s3cr3t-t0ken",
        )];
        let (c, run) = crawl_with_env(&[site.seed_url()], &overrides, &env).await;
        let want = c.records().len();
        assert!(want > 10, "{want}");
        assert!(
            rx.wait_for_async(|s| record_roots(s) >= want, Duration::from_secs(10))
                .await,
            "{protocol}: {} of {want} roots\n{}",
            record_roots(&rx.spans()),
            run.stderr
        );
        assert_eq!(rx.unauthorized(), 0, "{protocol}");
        assert_eq!(exit_account(&run.stderr).1, 0, "{protocol}");
        assert!(
            !run.stderr.contains("s3cr3t"),
            "the header's secret in the log:\n{}",
            run.stderr
        );
    }
    // Without the header every export is refused, and the spans are counted as dropped.
    let rx = OtlpReceiver::start().await;
    rx.require_authorization("Bearer s3cr3t-t0ken");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\notlp_protocol = \"grpc\"\n",
        rx.endpoint()
    );
    let (_, run) = crawl_with_env(&[site.seed_url()], &overrides, &[]).await;
    assert!(rx.unauthorized() > 0);
    assert!(rx.spans().is_empty());
    let (spans, dropped) = exit_account(&run.stderr);
    assert!(spans > 0 && dropped == spans, "{spans} {dropped}");
    site.shutdown().await;
}

/// At `sample_ratio = 0.1` about a tenth of the records' traces are exported, each whole: a root and every child
/// span of its record, and no span of a trace whose root was not sampled; every record keeps its trace id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ratio_of_a_tenth_exports_about_a_tenth_of_the_traces_each_whole() {
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(spec(193, 3, 80)).start().await.expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\nsample_ratio = 0.1\n",
        rx.http_endpoint()
    );
    let (c, _) = crawl_with_env(&[site.seed_url()], &overrides, &[]).await;
    let records = c.records();
    assert!(records.len() >= 200, "{}", records.len());
    assert!(records.iter().all(|r| r.trace_id.is_some()));
    // The process flushed before it exited; the receiver may still be handing the last batch over.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let spans = rx.spans();
    let by_trace = traces(&spans);
    let ids: BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r.trace_id.as_deref())
        .collect();
    let sampled: Vec<_> = records
        .iter()
        .filter(|r| {
            r.trace_id
                .as_deref()
                .is_some_and(|id| by_trace.contains_key(id))
        })
        .collect();
    // Binomial(n >= 200, 0.1): the mean is 20 or more and its standard deviation about 4.2.
    let share = sampled.len() as f64 / records.len() as f64;
    assert!(
        (0.04..=0.2).contains(&share),
        "{} of {} traces exported",
        sampled.len(),
        records.len()
    );
    for (id, trace) in &by_trace {
        let roots: Vec<_> = trace.iter().filter(|s| s.is_root()).collect();
        assert_eq!(roots.len(), 1, "trace {id}: {trace:#?}");
        let root = roots[0];
        assert!(
            trace
                .iter()
                .all(|s| s.is_root() || s.parent_span_id.as_deref() == Some(root.span_id.as_str())),
            "trace {id} has a span off its root"
        );
        if root.attr_str("crawl.kind") != Some("robots") {
            assert!(ids.contains(id.as_str()), "trace {id} of no record");
        }
    }
    for r in sampled {
        let trace = &by_trace[r.trace_id.as_deref().unwrap_or_default()];
        if r.outcome == Outcome::Fetched {
            let names: BTreeSet<&str> = trace.iter().map(|s| s.name.as_str()).collect();
            for want in [
                "frontier.wait",
                "http.first_byte",
                "http.body",
                "parse",
                "frontier.commit",
            ] {
                assert!(
                    names.contains(want),
                    "{}: {want} missing from {names:?}",
                    r.url
                );
            }
        }
    }
    site.shutdown().await;
}

/// A collector slower than the crawl, with a small export queue: the spans that find the queue full are
/// dropped and counted (warned about once, in the account at exit), and every span the queue took arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_collector_overflows_the_queue_and_every_lost_span_is_counted() {
    let rx = OtlpReceiver::start().await;
    rx.delay_exports(Duration::from_millis(400));
    let site = Site::builder(spec(194, 2, 12)).start().await.expect("site");
    let overrides = format!(
        "[observability]\notlp_endpoint = \"{}\"\n",
        rx.http_endpoint()
    );
    let env = [
        ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8"),
    ];
    let (_, run) = crawl_with_env(&[site.seed_url()], &overrides, &env).await;
    let (taken, dropped) = exit_account(&run.stderr);
    assert!(dropped > 0, "no span dropped:\n{}", run.stderr);
    let warning = run
        .stderr
        .lines()
        .find(|l| l.contains("trace spans dropped"))
        .unwrap_or_else(|| panic!("no warning:\n{}", run.stderr));
    assert!(warning.contains("export queue full"), "{warning}");
    // Every span the queue took (the account's `spans`; those it refused are not among them) was delivered: the
    // exporter's account and the collector's agree.
    assert!(
        rx.wait_for_async(|s| s.len() as u64 >= taken, Duration::from_secs(5))
            .await
    );
    assert_eq!(rx.spans().len() as u64, taken);
    site.shutdown().await;
}

/// With an export interval longer than the crawl, nothing goes out before the process ends: shutdown flushes
/// every trace, and the process still exits at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_flushes_the_spans_still_queued() {
    let rx = OtlpReceiver::start().await;
    let site = Site::builder(spec(195, 2, 12)).start().await.expect("site");
    for protocol in ["grpc", "http/protobuf"] {
        rx.clear();
        let endpoint = match protocol {
            "grpc" => rx.endpoint(),
            _ => rx.http_endpoint(),
        };
        let overrides = format!(
            "[observability]\notlp_endpoint = \"{endpoint}\"\notlp_protocol = \"{protocol}\"\n"
        );
        let env = [("OTEL_BSP_SCHEDULE_DELAY", "600000")];
        let started = Instant::now();
        let (c, run) = crawl_with_env(&[site.seed_url()], &overrides, &env).await;
        assert!(started.elapsed() < Duration::from_secs(60), "{protocol}");
        let want = c.records().len();
        assert!(want > 20, "{want}");
        // Received before the process exited (the flush waits for the collector's answer).
        assert_eq!(record_roots(&rx.spans()), want, "{protocol}");
        assert_eq!(
            exit_account(&run.stderr).1,
            0,
            "{protocol}:\n{}",
            run.stderr
        );
    }
    site.shutdown().await;
}
