//! The README's "Crawling a real site", step by step, against a generated site (127.0.0.41): copy the template,
//! set its seeds and user agent (and, the site being on loopback, its block in `security.allow_cidrs`, as the README
//! says), `--check`, run, Ctrl-C mid-crawl, run again (it resumes: no URL twice in the JSONL), run on the finished
//! crawl (it says so and exits 0 at once).

use super::template::TEMPLATE;
use crate::ENGINE;
use crawl_tests::engine::{Drained, RunResult, read_records, signal};
use crawl_tests::site::{ExpectOptions, Site, SiteSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// `crawl-engine --config CONFIG [--check]`, as the README writes it, from another working directory.
fn recipe_command(config: &Path, check: bool) -> Command {
    let mut c = Command::new(ENGINE);
    c.arg("--config").arg(config);
    if check {
        c.arg("--check");
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("CRAWL_ENGINE_CONFIG")
        .env_remove("RUST_LOG");
    c
}

async fn run_to_end(config: &Path, check: bool) -> RunResult {
    let child = recipe_command(config, check).spawn().expect("spawn");
    tokio::task::spawn_blocking(move || Drained::new(child).finish(DEADLINE))
        .await
        .expect("join")
}

/// `text` with `from` replaced by `to`, which must be there once.
fn set(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "the template has no {from:?}"
    );
    text.replace(from, to)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_recipe_checks_runs_stops_resumes_and_finishes() {
    let site = Site::start(SiteSpec {
        hosts: 1,
        pages_per_host: 8,
        links_per_page: 2,
        cross_host_ratio: 0.0,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        first_octet: 41,
        ..SiteSpec::default()
    })
    .await
    .expect("site");
    let expected = site.expected(ExpectOptions::default());
    let mut want: BTreeSet<String> = expected.fetched_ok.clone();
    want.extend(expected.robots_excluded.iter().cloned());
    assert!(expected.fetched_ok.len() >= 8, "{expected:?}");

    // mkdir -p ~/crawls/docs && cp config.toml ~/crawls/docs/config.toml; then $EDITOR it.
    let folder = tempfile::tempdir().expect("tempdir");
    let config = folder.path().join("config.toml");
    let template = std::fs::read_to_string(TEMPLATE).expect("template");
    let mut text = set(
        &template,
        "\nseeds = []\n",
        &format!("\nseeds = [\"{}\"]\n", site.seed_url()),
    );
    text = set(
        &text,
        "+https://example.com/CHANGE-ME-crawler-contact",
        "+https://example.com/recipe-test-crawler",
    );
    // The site is on loopback: its block goes in security.allow_cidrs.
    text = set(
        &text,
        "\nallow_cidrs = []\n",
        "\nallow_cidrs = [\"127.0.0.41/32\"]\n",
    );
    // Tests run side by side: this crawl takes any free metrics port, as the README says a second crawl must.
    text = set(
        &text,
        "metrics_listen = \"127.0.0.1:9464\"",
        "metrics_listen = \"127.0.0.1:0\"",
    );
    // This machine's resolver stays out of it (the seed is an address: no name is resolved, and no probe).
    text = set(&text, "hijack_probe = true", "hijack_probe = false");
    text = set(&text, "nameservers = []", "nameservers = [\"127.0.0.1:9\"]");
    std::fs::write(&config, text).expect("write config");
    let jsonl = folder.path().join("crawl.jsonl");

    // --check: ok, no warning about the seed.
    let res = run_to_end(&config, true).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains(": ok (1 seed,"), "{}", res.stdout);
    assert!(!res.stderr.contains("warning"), "{}", res.stderr);
    assert_eq!(site.total_requests(), 0, "--check sent a request");

    // Run, and Ctrl-C once a few pages are recorded (one page a second: the crawl is far from done).
    let first = Drained::new(recipe_command(&config, false).spawn().expect("spawn"));
    crawl_tests::wait::until(DEADLINE, "three records in the JSONL", || {
        read_records(&jsonl).len() >= 3
    })
    .await;
    signal(first.child(), "INT");
    let res = tokio::task::spawn_blocking(move || first.finish(DEADLINE))
        .await
        .expect("join");
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stdout.contains("crawl stopped by signal"),
        "{}",
        res.stdout
    );
    let stopped = read_records(&jsonl).len();
    assert!(
        stopped < want.len(),
        "{stopped} records: the crawl had ended"
    );
    // The log named the config file; the files are beside it.
    assert!(
        res.stderr.contains("\"message\":\"config file\""),
        "{}",
        res.stderr
    );
    for file in ["crawl-data", "warc"] {
        assert!(
            folder.path().join(file).is_dir(),
            "no {file}/ beside the config"
        );
    }

    // The same command resumes and completes: every URL once.
    let res = run_to_end(&config, false).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains("crawl completed"), "{}", res.stdout);
    let records = read_records(&jsonl);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &records {
        *seen.entry(r.url.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "recorded more than once: {twice:?}");
    let got: BTreeSet<String> = seen.keys().map(|u| (*u).to_owned()).collect();
    assert_eq!(got, want);
    assert!(
        res.stdout.contains(&format!(
            "done of {} known ({} pages fetched)",
            want.len(),
            expected.fetched_ok.len()
        )),
        "{}",
        res.stdout
    );

    // And on the finished crawl: complete, at once, nothing written.
    let start = Instant::now();
    let res = run_to_end(&config, false).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        res.stdout.contains("the crawl was already complete"),
        "{}",
        res.stdout
    );
    assert_eq!(read_records(&jsonl).len(), records.len());
    site.shutdown().await;
}
