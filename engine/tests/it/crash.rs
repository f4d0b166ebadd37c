//! Crash safety of the real binary: `kill -9` at several points of a crawl (once or several times in a row, and
//! while the frontier file is being created), then the same command resumes and the JSONL ends with every URL
//! exactly once, none lost, and a URL in flight at the kill fetched again at most once; records committed but not
//! yet in the JSONL are rewritten from the outbox; a torn last line is cut on start; SIGTERM drains and exits 0
//! with a clean prefix (a second signal exits at once and stays crash-safe); a second process on the same data_dir
//! is refused; running a finished crawl again does nothing.
//!
//! Sites: 3 hosts x 150 gzip pages, every host seeded, every sixth `/missing/{n}` answering after 200 ms so work is
//! always in flight. Hosts use 127.0.0.90..=109 (this file's range); listeners take ephemeral ports, so two tests
//! of this file on one IP never collide.

use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crawl_core::frontier::FrontierStore as _;
use crawl_core::record::{Outcome, Reason, Record};
use crawl_store_embedded::EmbeddedFrontier;
use crawl_tests::engine::{RunResult, TestCrawl, signal, wait_with_deadline};
use crawl_tests::site::{ExpectOptions, Route, Site, SiteSpec};

const HOSTS: usize = 3;
const PAGES: usize = 150;
const SLOW: Duration = Duration::from_millis(200);
/// First answer of the "very slow" routes (`/missing/{n}` of host 0) of the double-signal test.
const VERY_SLOW: Duration = Duration::from_secs(3);
const VERY_SLOW_PAGES: [usize; 2] = [10, 40];
const GRACE_MS: u64 = 5000;
const DEADLINE: Duration = Duration::from_secs(40);
/// Appended by hand to simulate a write cut by a crash.
const TORN: &str = r#"{"url":"http://127.0.0.1:9/torn","outcome":"fetc"#;

fn overrides() -> String {
    format!(
        "[crawl]\nmax_depth = 1000\n[politeness]\nper_host_concurrency = 2\nmin_delay_ms = 5\n\
         [fetch]\nconcurrency = 8\n[shutdown]\ngrace_ms = {GRACE_MS}\n"
    )
}

/// What the record of an expected URL must say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Ok,
    Redirect,
    NotFound,
    Robots,
}

struct Fixture {
    site: Site,
    crawl: TestCrawl,
    want: BTreeMap<String, Want>,
}

/// A site on `127.0.0.{first_octet}..+3` with slow 404s, its expected records and a crawl of it. With `very_slow`,
/// `/missing/10` and `/missing/40` of host 0 answer their first request after [`VERY_SLOW`].
async fn fixture(first_octet: u8, very_slow: bool) -> Fixture {
    let spec = SiteSpec {
        hosts: HOSTS,
        pages_per_host: PAGES,
        first_octet,
        orphans: 2,
        page_bytes: 1024,
        gzip: true,
        ..SiteSpec::default()
    };
    let mut b = Site::builder(spec);
    for h in 0..HOSTS {
        for n in (0..PAGES).step_by(6) {
            b = b.route(h, &format!("/missing/{n}"), Route::not_found().delay(SLOW));
        }
    }
    if very_slow {
        for n in VERY_SLOW_PAGES {
            let first = Route::not_found().delay(VERY_SLOW);
            b = b.route(
                0,
                &format!("/missing/{n}"),
                Route::sequence(vec![first, Route::not_found()]),
            );
        }
    }
    let site = b.start().await.expect("start site");
    let exp = site.expected_from(ExpectOptions::default(), &[0, 1, 2]);
    let mut want = BTreeMap::new();
    for (urls, w) in [
        (exp.fetched_ok, Want::Ok),
        (exp.redirects.into_keys().collect(), Want::Redirect),
        (exp.not_found, Want::NotFound),
        (exp.robots_excluded, Want::Robots),
    ] {
        want.extend(urls.into_iter().map(|u| (u, w)));
    }
    let crawl = TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides()).expect("test crawl");
    Fixture { site, crawl, want }
}

/// The complete lines of the JSONL as records (a malformed complete line fails the test) and the number of bytes
/// after the last newline.
fn read_jsonl(fx: &Fixture) -> (Vec<Record>, usize) {
    let bytes = std::fs::read(&fx.crawl.jsonl).unwrap_or_default();
    let good = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    let text = std::str::from_utf8(&bytes[..good]).expect("jsonl is utf-8");
    let records = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("malformed line {}: {e}: {l}", i + 1))
        })
        .collect();
    (records, bytes.len() - good)
}

fn line_count(fx: &Fixture) -> usize {
    std::fs::read(&fx.crawl.jsonl).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
}

fn is_meta(path: &str) -> bool {
    path == "/robots.txt" || path.starts_with("/sitemap")
}

/// Page GET requests the site saw, as absolute URLs, in arrival order.
fn page_requests(site: &Site) -> Vec<String> {
    site.requests()
        .into_iter()
        .filter(|r| r.method == "GET" && !is_meta(r.path_only()))
        .map(|r| site.url(r.host, &r.path))
        .collect()
}

fn counts(urls: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for u in urls {
        *out.entry(u.clone()).or_default() += 1;
    }
    out
}

/// The JSONL is a valid prefix of a correct crawl: no torn tail, no malformed line, no URL twice, none unexpected.
fn assert_clean_prefix(fx: &Fixture, label: &str) -> Vec<Record> {
    let (records, torn) = read_jsonl(fx);
    assert_eq!(torn, 0, "{label}: {torn} bytes after the last newline");
    assert_whole_lines(fx, records, label)
}

/// The JSONL right after a `kill -9`: its whole lines are a valid prefix of a correct crawl. A torn tail may
/// follow them (Linux stops a write to a file between two pages when the process is killed), which the next run
/// cuts before it appends (the checks after that run see no torn tail).
fn assert_prefix_after_kill(fx: &Fixture, label: &str) -> Vec<Record> {
    let (records, _torn) = read_jsonl(fx);
    assert_whole_lines(fx, records, label)
}

fn assert_whole_lines(fx: &Fixture, records: Vec<Record>, label: &str) -> Vec<Record> {
    let urls: Vec<String> = records.iter().map(|r| r.url.clone()).collect();
    let dups: BTreeMap<_, _> = counts(&urls).into_iter().filter(|(_, n)| *n > 1).collect();
    assert!(dups.is_empty(), "{label}: duplicated URLs {dups:?}");
    let extra: Vec<&str> = records
        .iter()
        .map(|r| r.url.as_str())
        .filter(|u| !fx.want.contains_key(*u))
        .collect();
    assert!(extra.is_empty(), "{label}: unexpected URLs {extra:?}");
    records
}

/// The JSONL holds every expected URL exactly once, with the right outcome.
fn assert_exactly_once(fx: &Fixture, label: &str) -> Vec<Record> {
    let records = assert_clean_prefix(fx, label);
    let got: BTreeSet<&str> = records.iter().map(|r| r.url.as_str()).collect();
    let missing: Vec<&String> = fx
        .want
        .keys()
        .filter(|u| !got.contains(u.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{label}: {} of {} URLs missing: {missing:?}",
        missing.len(),
        fx.want.len()
    );
    for r in &records {
        let ok = match fx.want[&r.url] {
            Want::Ok => r.outcome == Outcome::Fetched && r.status == Some(200),
            Want::Redirect => r.outcome == Outcome::Fetched && r.status == Some(301),
            Want::NotFound => r.outcome == Outcome::Fetched && r.status == Some(404),
            Want::Robots => r.outcome == Outcome::Excluded && r.reason == Some(Reason::Robots),
        };
        assert!(ok, "{label}: wrong record for {:?}: {r:?}", fx.want[&r.url]);
    }
    records
}

/// State right after a kill (or a signal-forced exit).
struct Stop {
    label: String,
    /// URLs in the JSONL's complete lines then
    recorded: BTreeSet<String>,
    /// page requests the site had seen by then
    requests: usize,
}

async fn snapshot(fx: &Fixture, label: &str) -> Stop {
    // bytes the dead process sent may still be parsed by the site: they have all landed once the site has closed
    // every connection
    crawl_tests::wait::until(
        Duration::from_secs(10),
        &format!("{label}: the site closed every connection"),
        || fx.site.open_connections() == 0,
    )
    .await;
    let (records, torn) = read_jsonl(fx);
    let requests = page_requests(&fx.site).len();
    eprintln!(
        "{label}: {} lines, {torn} torn bytes, {requests} page requests, {} expected records",
        records.len(),
        fx.want.len()
    );
    Stop {
        label: label.to_owned(),
        recorded: records.into_iter().map(|r| r.url).collect(),
        requests,
    }
}

/// When to kill.
#[derive(Debug, Clone, Copy)]
enum Point {
    /// at the first page request the site sees
    FirstRequest,
    /// once the JSONL has this share of the expected records
    Share(f64),
}

/// Polls until `point`, bounded; fails if the process ends first.
async fn wait_for(fx: &Fixture, child: &mut Child, point: Point) {
    if let Err(e) = try_wait_for(fx, child, point).await {
        panic!("{e}");
    }
}

/// The crawl process ended before the kill point.
#[derive(Debug, thiserror::Error)]
#[error("crawl ended ({status}) before kill point {point:?}: {stderr}")]
struct EndedEarly {
    status: ExitStatus,
    point: Point,
    stderr: String,
}

/// Polls until `point`, bounded; an error (with the exit status and stderr) when the process ends first.
async fn try_wait_for(fx: &Fixture, child: &mut Child, point: Point) -> Result<(), EndedEarly> {
    let target = match point {
        Point::Share(s) => (fx.want.len() as f64 * s) as usize,
        _ => 0,
    };
    let start = Instant::now();
    loop {
        let reached = match point {
            Point::FirstRequest => !page_requests(&fx.site).is_empty(),
            Point::Share(_) => line_count(fx) >= target,
        };
        if reached {
            return Ok(());
        }
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read as _;
                let _ = e.read_to_string(&mut stderr);
            }
            return Err(EndedEarly {
                status,
                point,
                stderr,
            });
        }
        assert!(start.elapsed() < DEADLINE, "{point:?} not reached");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Runs the crawl, `kill -9`s it at `point` and returns the state then.
async fn kill_at(fx: &Fixture, point: Point) -> Stop {
    let mut child = fx.crawl.spawn();
    wait_for(fx, &mut child, point).await;
    child.kill().expect("kill -9");
    child.wait().expect("wait after kill");
    snapshot(fx, &format!("kill -9 at {point:?}")).await
}

async fn finish(child: Child) -> RunResult {
    tokio::task::spawn_blocking(move || wait_with_deadline(child, DEADLINE))
        .await
        .expect("join")
}

/// Runs the same command to its end; it must exit 0.
async fn run_to_end(fx: &Fixture, label: &str) -> RunResult {
    let res = finish(fx.crawl.spawn()).await;
    if let Some(l) = res.stderr.lines().find(|l| l.contains("resuming crawl")) {
        eprintln!("{label}: {l}");
    }
    assert_eq!(res.code(), Some(0), "{label}: {res:?}");
    res
}

/// Request counts after a crawl interrupted by `stops`: a URL is fetched at most once per run, never after it was
/// in the JSONL at a stop, at most `max` times in all, and at least once when it is not robots-excluded.
fn assert_fetch_counts(fx: &Fixture, stops: &[Stop], max: usize) {
    let reqs = page_requests(&fx.site);
    let total = counts(&reqs);
    let mut bad = Vec::new();
    let mut bounds: Vec<usize> = stops.iter().map(|s| s.requests).collect();
    bounds.insert(0, 0);
    bounds.push(reqs.len());
    for (run, w) in bounds.windows(2).enumerate() {
        for (u, n) in counts(&reqs[w[0]..w[1]]) {
            if n > 1 {
                bad.push(format!("{u} requested {n} times in run {}", run + 1));
            }
        }
    }
    for s in stops {
        for u in reqs[s.requests..]
            .iter()
            .filter(|u| s.recorded.contains(*u))
        {
            bad.push(format!(
                "{u} requested again although recorded before {}",
                s.label
            ));
        }
    }
    for (u, n) in &total {
        match fx.want.get(u) {
            None => bad.push(format!("{u} requested {n} times but must never be")),
            Some(Want::Robots) => {
                bad.push(format!("{u} is robots-excluded but requested {n} times"))
            }
            Some(_) if *n > max => bad.push(format!("{u} requested {n} times (at most {max})")),
            Some(_) => {}
        }
    }
    for (u, w) in &fx.want {
        if *w != Want::Robots && !total.contains_key(u) {
            bad.push(format!("{u} recorded but never requested"));
        }
    }
    assert!(bad.is_empty(), "fetch counts:\n{}", bad.join("\n"));
}

/// Kill once at `point`, resume to the end, check exactly-once.
async fn kill_and_resume(first_octet: u8, point: Point) {
    let fx = fixture(first_octet, false).await;
    let stop = kill_at(&fx, point).await;
    run_to_end(&fx, "resume").await;
    assert_exactly_once(&fx, &stop.label);
    assert_fetch_counts(&fx, &[stop], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_at_first_request_then_resume_records_each_url_once() {
    kill_and_resume(90, Point::FirstRequest).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_at_quarter_then_resume_records_each_url_once() {
    kill_and_resume(93, Point::Share(0.25)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_at_sixty_percent_then_resume_records_each_url_once() {
    kill_and_resume(96, Point::Share(0.6)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_at_ninety_percent_then_resume_records_each_url_once() {
    kill_and_resume(99, Point::Share(0.9)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_several_times_in_a_row_then_finish_records_each_url_once() {
    let fx = fixture(102, false).await;
    let mut stops = Vec::new();
    for point in [Point::Share(0.1), Point::Share(0.4), Point::Share(0.75)] {
        stops.push(kill_at(&fx, point).await);
        // each resumed run must stand on a clean prefix (the whole lines; a torn tail is cut by the resume)
        assert_prefix_after_kill(&fx, &stops[stops.len() - 1].label);
    }
    run_to_end(&fx, "final resume").await;
    assert_exactly_once(&fx, "after three kills");
    assert_fetch_counts(&fx, &stops, 2);
}

/// Value of `"key":N` in the "resuming crawl" log line.
fn resume_field(stderr: &str, key: &str) -> Option<u64> {
    let line = stderr.lines().find(|l| l.contains("resuming crawl"))?;
    let pat = format!("\"{key}\":");
    let rest = &line[line.find(&pat)? + pat.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn append_torn(fx: &Fixture) {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&fx.crawl.jsonl)
        .expect("open jsonl");
    f.write_all(TORN.as_bytes()).expect("append torn line");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_last_line_is_cut_on_resume_after_kill_and_after_completion() {
    let fx = fixture(105, false).await;
    let stop = kill_at(&fx, Point::Share(0.5)).await;
    append_torn(&fx);
    let res = run_to_end(&fx, "resume over a torn line").await;
    let repaired = resume_field(&res.stderr, "repaired_bytes");
    assert!(
        repaired.is_some_and(|n| n >= TORN.len() as u64),
        "the resume log reports the cut ({repaired:?}): {}",
        res.stderr
    );
    assert_exactly_once(&fx, "after kill + torn line");
    assert_fetch_counts(&fx, &[stop], 2);

    let done = std::fs::read(&fx.crawl.jsonl).expect("read jsonl");
    append_torn(&fx);
    let before = page_requests(&fx.site).len();
    run_to_end(&fx, "torn line after completion").await;
    let after = std::fs::read(&fx.crawl.jsonl).expect("read jsonl");
    assert!(
        after == done,
        "the torn bytes are cut, nothing else changes"
    );
    assert_exactly_once(&fx, "after completion + torn line");
    let new: Vec<String> = page_requests(&fx.site).split_off(before);
    assert!(new.is_empty(), "a finished crawl fetches no page: {new:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_in_flight_fetches_exits_zero_and_resume_completes() {
    let fx = fixture(90, false).await;
    let mut child = fx.crawl.spawn();
    wait_for(&fx, &mut child, Point::Share(0.4)).await;
    let sent = Instant::now();
    signal(&child, "TERM");
    let res = finish(child).await;
    let took = sent.elapsed();
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        took < Duration::from_millis(GRACE_MS + 3000),
        "exited {took:?} after SIGTERM (grace {GRACE_MS} ms)"
    );
    assert!(res.stdout.contains("stopped by signal"), "{}", res.stdout);
    let records = assert_clean_prefix(&fx, "after SIGTERM");
    assert!(records.len() < fx.want.len(), "SIGTERM stops early");
    // every fetch that reached the site (including those in flight at the signal) ended in a record
    let recorded: BTreeSet<&str> = records.iter().map(|r| r.url.as_str()).collect();
    let lost: Vec<String> = page_requests(&fx.site)
        .into_iter()
        .filter(|u| !recorded.contains(u.as_str()))
        .collect();
    assert!(lost.is_empty(), "fetched, not recorded: {lost:?}");

    run_to_end(&fx, "resume after SIGTERM").await;
    assert_exactly_once(&fx, "after SIGTERM + resume");
    // the drain finished every fetch in flight: nothing is fetched twice
    assert_fetch_counts(&fx, &[], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_sigterm_exits_at_once_and_resume_is_exact() {
    let fx = fixture(93, true).await;
    let slow: BTreeSet<String> = VERY_SLOW_PAGES
        .iter()
        .map(|n| fx.site.url(0, &format!("/missing/{n}")))
        .collect();
    let mut child = fx.crawl.spawn();
    let start = Instant::now();
    let slow_started = loop {
        let hit =
            fx.site.requests().into_iter().find(|r| {
                r.host == 0 && r.end.is_none() && slow.contains(&fx.site.url(0, &r.path))
            });
        if let Some(r) = hit {
            break r.start;
        }
        assert!(child.try_wait().expect("try_wait").is_none(), "ended");
        assert!(start.elapsed() < DEADLINE, "no very slow request in flight");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    signal(&child, "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "after one SIGTERM the crawl waits for the slow fetch in flight"
    );
    signal(&child, "TERM");
    let res = finish(child).await;
    let exited = Instant::now();
    assert!(
        exited < slow_started + VERY_SLOW,
        "the second SIGTERM exits without waiting for the in-flight fetch ({:?} after it started): {res:?}",
        exited - slow_started
    );
    let stop = snapshot(&fx, &format!("second SIGTERM (exit {:?})", res.code())).await;
    assert_clean_prefix(&fx, &stop.label);

    run_to_end(&fx, "resume after two SIGTERMs").await;
    assert_exactly_once(&fx, "after two SIGTERMs + resume");
    assert_fetch_counts(&fx, &[stop], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_process_on_same_data_dir_is_refused_and_first_completes() {
    let fx = fixture(96, false).await;
    let mut first = fx.crawl.spawn();
    wait_for(&fx, &mut first, Point::Share(0.05)).await;
    let lines = line_count(&fx);
    let second = finish(fx.crawl.spawn()).await;
    assert!(
        first.try_wait().expect("try_wait").is_none(),
        "the second process is refused while the first still runs"
    );
    assert_eq!(
        second.code(),
        Some(2),
        "second process must be refused: {second:?}"
    );
    let dir = fx.crawl.data_dir.display().to_string();
    assert!(
        second.stderr.contains(&dir) && second.stderr.contains("in use"),
        "the refusal names the data_dir as in use: {}",
        second.stderr
    );
    // The same command twice: one refusal (the data_dir's), not one per output the first process holds.
    assert_eq!(
        second
            .stderr
            .matches("in use by another crawl-engine process")
            .count(),
        1,
        "{}",
        second.stderr
    );
    assert!(!second.stdout.contains("crawl "), "{}", second.stdout);
    assert!(line_count(&fx) >= lines, "the JSONL is not truncated");
    let res = finish(first).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains("completed"), "{}", res.stdout);
    assert_exactly_once(&fx, "first process");
    assert_fetch_counts(&fx, &[], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_of_finished_crawl_writes_nothing_and_fetches_no_page() {
    let fx = fixture(99, false).await;
    let res = run_to_end(&fx, "first run").await;
    assert!(res.stdout.contains("completed"), "{}", res.stdout);
    assert_exactly_once(&fx, "first run");
    assert_fetch_counts(&fx, &[], 1);
    let done = std::fs::read(&fx.crawl.jsonl).expect("read jsonl");
    let before = page_requests(&fx.site).len();
    let res = run_to_end(&fx, "second run").await;
    assert!(res.stdout.contains("completed"), "{}", res.stdout);
    let after = std::fs::read(&fx.crawl.jsonl).expect("read jsonl");
    assert!(after == done, "a finished crawl writes no new line");
    let new: Vec<String> = page_requests(&fx.site).split_off(before);
    assert!(new.is_empty(), "a finished crawl fetches no page: {new:?}");
}

/// Kills the child as soon as `file` is no longer empty (busy-polling, on a blocking thread) and returns its size
/// then.
async fn kill_when_written(mut child: Child, file: std::path::PathBuf) -> u64 {
    let len = |f: &std::path::Path| std::fs::metadata(f).map_or(0, |m| m.len());
    tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        while len(&file) == 0 && start.elapsed() < DEADLINE {
            if child.try_wait().expect("try_wait").is_some() {
                break;
            }
            std::hint::spin_loop();
        }
        let _ = child.kill();
        child.wait().expect("wait after kill");
        len(&file)
    })
    .await
    .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_while_the_frontier_is_created_then_the_same_command_resumes() {
    // The window is short, so try several fresh data_dirs; each must resume.
    let mut failures = Vec::new();
    let mut last = None;
    for attempt in 0..4 {
        let fx = fixture(107, false).await;
        let db = fx.crawl.data_dir.join("frontier.redb");
        let len = kill_when_written(fx.crawl.spawn(), db).await;
        let mut child = fx.crawl.spawn();
        match try_wait_for(&fx, &mut child, Point::Share(0.02)).await {
            Ok(()) => {
                child.kill().expect("kill -9");
                child.wait().expect("wait after kill");
                last = Some(fx);
            }
            Err(e) => failures.push(format!(
                "attempt {attempt}: killed with frontier.redb at {len} bytes, then {}",
                e.to_string().trim()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "after kill -9 during startup the same command must resume:\n{}",
        failures.join("\n")
    );
    let fx = last.expect("a resumed attempt");
    run_to_end(&fx, "final resume").await;
    assert_exactly_once(&fx, "after kills during startup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_records_missing_from_the_jsonl_are_rewritten_once() {
    let fx = fixture(102, false).await;
    let mut stops = Vec::new();
    // Kill until the outbox holds records (it is empty only right after a commit that trimmed it).
    let (first, next) = loop {
        let share = [0.5, 0.7, 0.85][stops.len()];
        stops.push(kill_at(&fx, Point::Share(share)).await);
        let rec = EmbeddedFrontier::open(&fx.crawl.data_dir)
            .and_then(|mut store| store.recover())
            .expect("open the killed crawl's frontier");
        let lines = line_count(&fx) as u64;
        // every committed record not known to be written: a contiguous run ending at the last one
        let seqs: Vec<u64> = rec.outbox.iter().map(|(s, _)| *s).collect();
        let first = seqs.first().copied().unwrap_or(rec.next_record);
        assert!(
            seqs.iter().copied().eq(first..rec.next_record) && first <= lines + 1,
            "outbox {seqs:?}, next seq {}, {lines} lines",
            rec.next_record
        );
        if first < rec.next_record || stops.len() == 3 {
            break (first, rec.next_record);
        }
    };
    assert!(first < next, "the outbox held records at one of the kills");
    // Leave the file as a crash between the commit and the write does: without the outbox's records.
    let bytes = std::fs::read(&fx.crawl.jsonl).expect("read jsonl");
    let keep = (first - 1) as usize;
    let cut_at: usize = bytes
        .split_inclusive(|b| *b == b'\n')
        .take(keep)
        .map(<[u8]>::len)
        .sum();
    let (records, _) = read_jsonl(&fx);
    std::fs::write(&fx.crawl.jsonl, &bytes[..cut_at]).expect("cut the jsonl");
    eprintln!(
        "cut {} lines; the outbox holds {}",
        records.len() - keep,
        next - first
    );
    // the cut records are done in the frontier: they come back from the outbox, not from a new fetch
    if let Some(last) = stops.last_mut() {
        last.recorded.extend(records.into_iter().map(|r| r.url));
    }
    let res = run_to_end(&fx, "resume with the outbox missing from the file").await;
    let rewritten = resume_field(&res.stderr, "rewritten");
    assert_eq!(rewritten, Some(next - first), "{}", res.stderr);
    assert_exactly_once(&fx, "after rewrite from the outbox");
    assert_fetch_counts(&fx, &stops, 2);
}
