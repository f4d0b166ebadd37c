//! Failure handling, continued: every stage panicking or frozen (`CRAWL_ENGINE_FAULTS=STAGE[/freeze]:MARKER`):
//! fatal panics exit 1 at once and the rerun completes exactly once, frozen stages are replaced or end the crawl on
//! SIGTERM, unknown stages are usage errors. The helpers are in `faults.rs`.

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// 9. every stage: panic and freeze (CRAWL_ENGINE_FAULTS=STAGE[/freeze]:MARKER)

/// How long a fatal panic may take to end the process (after the crawl reached the marked URL).
const FATAL_WITHIN: Duration = Duration::from_secs(5);

/// A root linking `/n/0..n` and `extra`, each `/n/i` a leaf page.
fn leaves(n: usize, extra: &[&str]) -> Vec<(String, Route)> {
    let mut root: Vec<String> = (0..n).map(|i| format!("/n/{i}")).collect();
    root.extend(extra.iter().map(|s| (*s).to_owned()));
    let mut routes = vec![("/".to_owned(), page(&root))];
    routes.extend((0..n).map(|i| (format!("/n/{i}"), page::<&str>(&[]))));
    routes.extend(extra.iter().map(|s| ((*s).to_owned(), page::<&str>(&[]))));
    routes
}

/// Runs with `faults`, asserts exit 1 soon after the marked URL was served and the cause on stderr, then runs again
/// without faults and asserts every URL recorded exactly once over both runs.
async fn fatal_then_resume(octet: u8, faults: &str, marked: &str, cause: &str) {
    let site = start(octet, leaves(12, &[marked])).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[crawl]\nrespect_robots = false\n",
    )
    .expect("test crawl");
    let started = std::time::Instant::now();
    let first = run(&crawl, Some(faults)).await;
    let took = started.elapsed();
    assert_eq!(
        first.code,
        Some(1),
        "a panic in {cause} is fatal\nstderr:\n{}",
        first.stderr
    );
    // The guard's report, or (for the sink) the scheduler's failed write when it notices first.
    let line = first
        .stderr
        .lines()
        .find(|l| l.starts_with("crawl-engine: "))
        .unwrap_or_else(|| panic!("no error line on stderr:\n{}", first.stderr));
    assert!(line.contains(cause), "the cause names the actor: {line}");
    assert!(
        first.stderr.contains("injected fault for"),
        "stderr:\n{}",
        first.stderr
    );
    assert!(
        first.stderr.contains("fault injection is on (test hook)"),
        "the hook warns at start:\n{}",
        first.stderr
    );
    // The whole run (start, a few pages, the panic) is far shorter than the bound; a hang would hit DEADLINE.
    assert!(took < FATAL_WITHIN * 2, "took {took:?}");
    assert!(site.hits(0, marked) >= 1, "the marked url was reached");
    let after_first = index(crawl.records());
    assert!(
        !after_first.contains_key(&site.url(0, marked)),
        "the marked url's record was not written by the failed run"
    );

    let second = run(&crawl, None).await;
    second.assert_ok();
    let m = index(crawl.records());
    assert_eq!(
        m.len(),
        14,
        "every url exactly once over both runs: {:?}",
        m.keys()
    );
    for (url, r) in &after_first {
        assert_eq!(
            m.get(url),
            Some(r),
            "records of the first run stay as they were"
        );
    }
    fetched(&m, &site.url(0, marked), 200);
    for i in 0..12 {
        fetched(&m, &site.url(0, &format!("/n/{i}")), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sink_panic_exits_1_at_once_and_the_rerun_completes_exactly_once() {
    fatal_then_resume(121, "sink:/mark/sink", "/mark/sink", "sink").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_panic_exits_1_at_once_and_the_rerun_completes_exactly_once() {
    fatal_then_resume(122, "scheduler:/mark/sched", "/mark/sched", "scheduler").await;
}

/// Runs with `STAGE/freeze:MARKER` until the site has served `started` (then half a second more for the stage to
/// block), sends SIGTERM and asserts exit 1 within the grace period plus 5 s (and, with `says_grace`, that stderr
/// says the crawl did not end within it); a rerun then records all 8 URLs exactly once.
async fn sigterm_after_freeze(
    octet: u8,
    stage: &str,
    marker: &str,
    started: &str,
    says_grace: bool,
) {
    const GRACE: Duration = Duration::from_millis(500);
    let site = start(octet, leaves(6, &[marker])).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        &format!(
            "[crawl]\nrespect_robots = false\n[shutdown]\ngrace_ms = {}\n",
            GRACE.as_millis()
        ),
    )
    .expect("test crawl");
    let mut cmd = crawl.command();
    cmd.env("CRAWL_ENGINE_FAULTS", format!("{stage}/freeze:{marker}"));
    let mut child = cmd.spawn().expect("spawn crawl-engine");
    // Its stderr, read as it comes: the stage logs the freeze before it blocks its thread for good.
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let pipe = child.stderr.take().expect("stderr piped");
        let stderr = std::sync::Arc::clone(&stderr);
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = stderr.lock().expect("stderr");
                all.push_str(&line);
                all.push('\n');
            }
        })
    };
    let froze = || stderr.lock().expect("stderr").contains("injected freeze");
    crawl_tests::wait::until(
        DEADLINE,
        &format!("{started} was requested and the {stage} stage froze on {marker}"),
        || site.hits(0, started) > 0 && froze(),
    )
    .await;
    crawl_tests::engine::signal(&child, "TERM");
    let sent = std::time::Instant::now();
    let res = tokio::task::spawn_blocking(move || wait_with_deadline(child, DEADLINE))
        .await
        .expect("join");
    let took = sent.elapsed();
    reader.join().expect("stderr reader");
    let stderr = stderr.lock().expect("stderr").clone();
    assert_eq!(
        res.code(),
        Some(1),
        "the crawl did not end: status 1\nstderr:\n{stderr}"
    );
    assert!(
        took < GRACE + Duration::from_secs(5) + Duration::from_secs(1),
        "exited {took:?} after SIGTERM"
    );
    if says_grace {
        assert!(
            stderr.contains("did not end within the grace period"),
            "stderr:\n{stderr}"
        );
    }
    // Nothing committed was lost: a rerun completes with each url once.
    let second = run(&crawl, None).await;
    second.assert_ok();
    let m = index(crawl.records());
    assert_eq!(m.len(), 8, "{:?}", m.keys());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_after_a_scheduler_freeze_exits_within_grace_plus_5s() {
    sigterm_after_freeze(123, "scheduler", "/mark/freeze", "/mark/freeze", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fault_stage_or_mode_is_a_usage_error() {
    let site = start(124, leaves(1, &[])).await;
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], "").expect("test crawl");
    for spec in ["cooker:/x", "parser/sleep:/x", "fetcher"] {
        let out = run(&crawl, Some(spec)).await;
        assert_eq!(out.code, Some(2), "{spec}: stderr:\n{}", out.stderr);
        assert!(
            out.stderr.contains("CRAWL_ENGINE_FAULTS"),
            "{spec}: {}",
            out.stderr
        );
    }
    assert_eq!(site.hits(0, "/"), 0, "nothing was crawled");
}

/// Config lines that resolve `names` to the site's address through the resolver's static hosts.
fn static_hosts(site: &Site, names: &[&str]) -> String {
    let ip = site.addr(0).expect("addr").ip();
    let entries: Vec<String> = names
        .iter()
        .map(|n| format!("\"{n}\" = \"{ip}\""))
        .collect();
    format!("[resolver]\nhosts = {{ {} }}\n", entries.join(", "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolver_panic_records_the_url_and_the_resolver_keeps_serving() {
    let site = start(125, leaves(3, &[])).await;
    let port = site.addr(0).expect("addr").port();
    let good = format!("http://good.test:{port}/");
    let bad = format!("http://boom.test:{port}/");
    let crawl = TestCrawl::new(
        ENGINE,
        &[good.clone(), bad.clone()],
        &format!(
            "{}[crawl]\nrespect_robots = false\n[fetch]\nmax_retries = 1\nretry_base_ms = 50\n",
            static_hosts(&site, &["good.test", "boom.test"])
        ),
    )
    .expect("test crawl");
    let out = run(&crawl, Some("resolver:boom.test")).await;
    out.assert_ok();
    let m = index(crawl.records());
    let r = failed(&m, &bad, Reason::Dns);
    assert_eq!(r.attempts, 2, "retried once: {r:?}");
    assert!(
        r.error
            .as_deref()
            .unwrap_or("")
            .contains("resolver panicked"),
        "{r:?}"
    );
    fetched(&m, &good, 200);
    for i in 0..3 {
        fetched(&m, &format!("http://good.test:{port}/n/{i}"), 200);
    }
    assert_eq!(m.len(), 5, "{:?}", m.keys());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolver_freeze_fails_named_hosts_and_the_crawl_still_ends() {
    let site = start(126, leaves(3, &[])).await;
    let port = site.addr(0).expect("addr").port();
    let frozen = format!("http://frozen.test:{port}/");
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url(), frozen.clone()],
        &format!(
            "{}[crawl]\nrespect_robots = false\n[fetch]\nmax_retries = 1\nretry_base_ms = 50\n\
             connect_timeout_ms = 500\nheader_timeout_ms = 1000\nrequest_timeout_ms = 1000\n",
            static_hosts(&site, &["frozen.test"])
        ),
    )
    .expect("test crawl");
    let out = run(&crawl, Some("resolver/freeze:frozen.test")).await;
    out.assert_ok();
    let m = index(crawl.records());
    let r = failed(&m, &frozen, Reason::Dns);
    assert!(
        r.error
            .as_deref()
            .unwrap_or("")
            .contains("no answer from the resolver"),
        "{r:?}"
    );
    fetched(&m, &site.seed_url(), 200);
    for i in 0..3 {
        fetched(&m, &site.url(0, &format!("/n/{i}")), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetcher_freeze_is_replaced_and_the_url_ends_poison() {
    // The frozen URL comes first, so the crawl still has work when the stuck fetcher's probe times out.
    let mut links = vec!["/mark/ffreeze".to_owned()];
    links.extend((0..10).map(|i| format!("/n/{i}")));
    let mut routes = vec![("/".to_owned(), page(&links))];
    routes.extend(links.iter().map(|l| (l.clone(), page::<&str>(&[]))));
    let site = start(127, routes).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        // A polite pace keeps the crawl going past the probe of the stuck fetcher.
        "[crawl]\nrespect_robots = false\n[politeness]\nmin_delay_ms = 600\n\
         [fetch]\nfetchers = 2\nconnect_timeout_ms = 500\n\
         header_timeout_ms = 1000\nrequest_timeout_ms = 1000\n\
         [supervisor]\nmax_attempts = 2\nparse_budget_ms = 500\n",
    )
    .expect("test crawl");
    let out = run(&crawl, Some("fetcher/freeze:/mark/ffreeze")).await;
    out.assert_ok();
    let m = index(crawl.records());
    failed(&m, &site.url(0, "/mark/ffreeze"), Reason::Poison);
    for i in 0..10 {
        fetched(&m, &site.url(0, &format!("/n/{i}")), 200);
    }
    let stderr = std::fs::read_to_string(crawl.dir.path().join("stderr.log")).unwrap_or_default();
    assert!(
        out.summary_u64("restarts") >= 1,
        "the stuck fetcher was replaced: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parser_freeze_is_replaced_and_the_url_ends_poison() {
    let site = start(128, leaves(10, &["/mark/pfreeze"])).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[crawl]\nrespect_robots = false\n[fetch]\nconnect_timeout_ms = 500\nheader_timeout_ms = 1000\n\
         request_timeout_ms = 1000\n[parser]\nthreads = 2\n\
         [supervisor]\nmax_attempts = 2\nparse_budget_ms = 500\n",
    ).expect("test crawl");
    let out = run(&crawl, Some("parser/freeze:/mark/pfreeze")).await;
    out.assert_ok();
    let m = index(crawl.records());
    failed(&m, &site.url(0, "/mark/pfreeze"), Reason::Poison);
    for i in 0..10 {
        fetched(&m, &site.url(0, &format!("/n/{i}")), 200);
    }
    assert!(
        out.summary_u64("restarts") >= 2,
        "each stuck parser thread was replaced"
    );
}

/// A store panic (in the commit of a batch that discovers the marked URL) ends the process with exit 1 at once; the
/// rerun, without faults, records every URL exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_panic_exits_1_at_once_and_the_rerun_completes_exactly_once() {
    let site = start(114, leaves(8, &["/mark/store"])).await;
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[crawl]\nrespect_robots = false\n",
    )
    .expect("test crawl");
    let started = std::time::Instant::now();
    let first = run(&crawl, Some("store:/mark/store")).await;
    assert_eq!(first.code, Some(1), "stderr:\n{}", first.stderr);
    assert!(
        started.elapsed() < FATAL_WITHIN * 2,
        "took {:?}",
        started.elapsed()
    );
    let line = first
        .stderr
        .lines()
        .find(|l| l.starts_with("crawl-engine: "))
        .unwrap_or_else(|| panic!("no error line on stderr:\n{}", first.stderr));
    assert!(line.contains("store"), "the cause names the store: {line}");
    assert_eq!(
        site.hits(0, "/mark/store"),
        0,
        "never committed, never fetched"
    );
    let second = run(&crawl, None).await;
    second.assert_ok();
    let m = index(crawl.records());
    assert_eq!(
        m.len(),
        10,
        "every url exactly once over both runs: {:?}",
        m.keys()
    );
    fetched(&m, &site.url(0, "/mark/store"), 200);
}

/// A frozen store (its thread blocked in a commit) stalls the crawl without losing anything: SIGTERM ends it within
/// the grace period plus 5 s, and the rerun records every URL exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_after_a_store_freeze_exits_within_grace_plus_5s() {
    // The seed's links reach the store, whose thread then blocks for good.
    sigterm_after_freeze(115, "store", "/mark/sfreeze", "/", false).await;
}
