//! Every output is owned by one crawl (127.0.0.20-29): a second crawl on a running crawl's JSONL or WARC folder is
//! refused before it writes a byte (exit 2, naming the key, the path and the holder) while the first finishes and
//! resumes; a crawl started over with a leftover archive is refused with every path to delete, and `--fresh` moves
//! the old outputs aside so the new archive has warcinfo records of its own; `--check` says the same as the run;
//! a run and `--check` give the same exit status for each failure class, Redis reached or not included.

use super::crawl::{run_cmd, toml_str};
use crate::ENGINE;
use crawl_test_kit::redis::{self as redis_tools, Options, RedisServer};
use crawl_test_kit::warcio::{Warcio, warc_files};
use crawl_tests::engine::{RunResult, TestCrawl};
use crawl_tests::site::{Site, SiteSpec};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

const PREFIX: &str = "crawl-engine: ";

fn spec(first_octet: u8, pages: usize, delay_ms: u64) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        first_octet,
        delay_ms,
        ..SiteSpec::small()
    }
}

/// A crawl of the slow site that keeps running until told to stop.
fn slow(seed: &str, extra: &str) -> TestCrawl {
    TestCrawl::new(
        ENGINE,
        &[seed.to_owned()],
        &format!("[politeness]\nper_host_concurrency = 1\n{extra}"),
    )
    .expect("test crawl")
}

async fn check(crawl: &TestCrawl, extra: &[&str]) -> RunResult {
    let mut cmd = crawl.command();
    cmd.arg("--check").args(extra);
    run_cmd(cmd).await
}

async fn run_with(crawl: &TestCrawl, extra: &[&str]) -> RunResult {
    let mut cmd = crawl.command();
    cmd.args(extra);
    run_cmd(cmd).await
}

/// The line of stderr about `key` (the run's first line carries the program's name; `--check`'s do not).
fn line_about(stderr: &str, key: &str) -> String {
    stderr
        .lines()
        .map(|l| l.strip_prefix(PREFIX).unwrap_or(l))
        .find(|l| l.starts_with(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("nothing about {key} in:\n{stderr}"))
        .to_owned()
}

/// The crawl id a data_dir holds.
fn crawl_id(data_dir: &Path) -> String {
    let text = std::fs::read_to_string(data_dir.join("crawl-id")).expect("crawl-id");
    let v: serde_json::Value = serde_json::from_str(&text).expect("crawl-id is json");
    v["crawl"].as_str().expect("crawl").to_owned()
}

/// Every file under `dir` with its length: what a refused process must leave as it was.
fn listing(dir: &Path) -> BTreeSet<(PathBuf, u64)> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(listing(&p));
        } else {
            out.insert((p.clone(), std::fs::metadata(&p).map_or(0, |m| m.len())));
        }
    }
    out
}

/// Each URL once in the JSONL.
fn assert_each_url_once(crawl: &TestCrawl) -> usize {
    let records = crawl.records();
    let urls: BTreeSet<&str> = records.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls.len(), records.len(), "a URL recorded twice");
    records.len()
}

/// A crawl told to drain, then run again to its end: it resumes where it stopped, each URL once.
async fn drain_and_resume(first: crawl_tests::engine::Running, crawl: &TestCrawl) {
    first.signal("TERM");
    let done = first.wait(Duration::from_secs(30));
    assert_eq!(done.code(), Some(0), "{done:?}");
    let again = run_with(crawl, &[]).await;
    assert_eq!(again.code(), Some(0), "{again:?}");
    assert!(again.stdout.contains("crawl completed"), "{}", again.stdout);
    assert!(again.stderr.contains("resuming crawl"), "{}", again.stderr);
    assert_each_url_once(crawl);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_crawl_on_a_running_crawls_jsonl_is_refused_before_it_writes() {
    let site = Site::start(spec(20, 25, 150)).await.expect("site");
    let first = slow(&site.seed_url(), "");
    let running = first.start();
    crawl_tests::wait::until(
        Duration::from_secs(20),
        "the first crawl sent a request",
        || site.total_requests() > 0,
    )
    .await;
    let pid = running.child().id();
    // A copied config with its own data_dir and WARC folder, and the same JSONL.
    let second = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        &format!(
            "[output]\njsonl = {}\nwarc_dir = \"warc\"\n",
            toml_str(&first.jsonl.display().to_string())
        ),
    )
    .expect("test crawl");
    let res = run_with(&second, &[]).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    let line = line_about(&res.stderr, "output.jsonl");
    let jsonl = first.jsonl.display().to_string();
    assert!(
        line.starts_with(&format!(
            "output.jsonl: {jsonl} is in use by another crawl-engine process (pid {pid}, crawl {}, data_dir {})",
            crawl_id(&first.data_dir),
            first.data_dir.display()
        )),
        "{line}"
    );
    // Nothing of the second crawl was made: it was refused before it wrote a byte.
    assert!(!second.data_dir.exists());
    assert!(!second.dir.path().join("warc").exists());
    let checked = check(&second, &[]).await;
    assert_eq!(checked.code(), Some(2), "{checked:?}");
    assert_eq!(line_about(&checked.stderr, "output.jsonl"), line);

    drain_and_resume(running, &first).await;

    // Finished, the JSONL still belongs to the first crawl: judged by its crawl id, not by a lock. The marker
    // names the process that last ran it (the one that resumed).
    let marker: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{jsonl}.owner")).expect("marker"))
            .expect("marker is json");
    let last = marker["pid"].as_u64().expect("pid");
    let res = run_with(&second, &[]).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    let line = line_about(&res.stderr, "output.jsonl");
    assert!(
        line.starts_with(&format!(
            "output.jsonl: {jsonl} belongs to another crawl (pid {last}, crawl {}, data_dir {}); give this crawl \
             its own output.jsonl, or to start over, delete {jsonl}, or run with --fresh",
            crawl_id(&first.data_dir),
            first.data_dir.display()
        )),
        "{line}"
    );
    assert!(!second.data_dir.exists());
    let checked = check(&second, &[]).await;
    assert_eq!(checked.code(), Some(2), "{checked:?}");
    assert_eq!(line_about(&checked.stderr, "output.jsonl"), line);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_crawl_on_a_running_crawls_warc_folder_is_refused_before_it_writes() {
    let Some(warcio) = Warcio::find("two crawls on one warc_dir") else {
        return;
    };
    let site = Site::start(spec(22, 25, 150)).await.expect("site");
    let first = slow(&site.seed_url(), "[output]\nwarc_dir = \"warc\"\n");
    let warc = first.dir.path().join("warc");
    let running = first.start();
    crawl_tests::wait::until(
        Duration::from_secs(20),
        "the first crawl sent a request",
        || site.total_requests() > 0,
    )
    .await;
    let pid = running.child().id();
    // Only the data_dir changed: the JSONL and the WARC folder are the first crawl's.
    let second = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        &format!(
            "[output]\njsonl = {}\nwarc_dir = {}\n",
            toml_str(&first.jsonl.display().to_string()),
            toml_str(&warc.display().to_string())
        ),
    )
    .expect("test crawl");
    let res = run_with(&second, &[]).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    let line = line_about(&res.stderr, "output.warc_dir");
    assert!(
        line.starts_with(&format!(
            "output.warc_dir: {} is in use by another crawl-engine process (pid {pid}, crawl {}, data_dir {}); \
             stop it, or give this crawl its own output.warc_dir",
            warc.display(),
            crawl_id(&first.data_dir),
            first.data_dir.display()
        )),
        "{line}"
    );
    // Each refused output has a line of its own, said once.
    assert_eq!(
        res.stderr.matches("output.warc_dir: ").count(),
        1,
        "{res:?}"
    );
    assert_eq!(res.stderr.matches("output.jsonl: ").count(), 1, "{res:?}");
    assert!(!second.data_dir.exists());
    let checked = check(&second, &[]).await;
    assert_eq!(checked.code(), Some(2), "{checked:?}");
    assert_eq!(line_about(&checked.stderr, "output.warc_dir"), line);

    drain_and_resume(running, &first).await;
    let files = warc_files(&warc);
    assert!(!files.is_empty());
    for f in &files {
        warcio.check(f).unwrap_or_else(|e| panic!("{e}"));
    }
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_archive_is_refused_after_a_start_over_and_fresh_moves_it_aside() {
    let Some(warcio) = Warcio::find("a leftover archive after a start-over") else {
        return;
    };
    let site = Site::start(spec(24, 12, 0)).await.expect("site");
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[output]\nwarc_dir = \"warc\"\n",
    )
    .expect("test crawl");
    let warc = crawl.dir.path().join("warc");
    let res = run_with(&crawl, &[]).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let old_id = crawl_id(&crawl.data_dir);
    let records = assert_each_url_once(&crawl);

    // "To start over, delete both": the data_dir and the JSONL go, the archive stays.
    std::fs::remove_dir_all(&crawl.data_dir).expect("remove data_dir");
    std::fs::remove_file(&crawl.jsonl).expect("remove jsonl");
    let before = listing(crawl.dir.path());
    let res = run_with(&crawl, &[]).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    let line = line_about(&res.stderr, "output.warc_dir");
    let w = warc.display().to_string();
    assert_eq!(
        line,
        format!(
            "output.warc_dir: {w} belongs to an earlier crawl (crawl {old_id}) whose frontier.data_dir {} was \
             deleted or replaced since; give this crawl its own output.warc_dir, or to start over, delete {w}, or \
             run with --fresh to move it aside",
            crawl.data_dir.display()
        )
    );
    assert_eq!(listing(crawl.dir.path()), before, "the refused run wrote");
    let checked = check(&crawl, &[]).await;
    assert_eq!(checked.code(), Some(2), "{checked:?}");
    assert_eq!(line_about(&checked.stderr, "output.warc_dir"), line);
    let checked = check(&crawl, &["--fresh"]).await;
    assert_eq!(checked.code(), Some(0), "{checked:?}");
    assert!(
        checked
            .stdout
            .contains(&format!("--fresh moves output.warc_dir {w} aside")),
        "{}",
        checked.stdout
    );
    assert_eq!(listing(crawl.dir.path()), before, "--check --fresh moved");

    let res = run_with(&crawl, &["--fresh"]).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let moved = res
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{PREFIX}--fresh: moved output.warc_dir {w} to ")))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("where the archive went is not said:\n{}", res.stderr));
    assert!(
        moved.starts_with(crawl.dir.path())
            && moved
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("warc.")),
        "{moved:?}"
    );
    // The old archive is whole where it went; the new crawl's archive is its own.
    let old_files = warc_files(&moved);
    assert_eq!(
        old_files.len(),
        before
            .iter()
            .filter(|(p, _)| p.to_string_lossy().ends_with(".warc.gz"))
            .count()
    );
    let new_id = crawl_id(&crawl.data_dir);
    assert_ne!(new_id, old_id);
    assert_eq!(assert_each_url_once(&crawl), records);
    for (dir, id) in [(&warc, &new_id), (&moved, &old_id)] {
        let files = warc_files(dir);
        assert!(!files.is_empty(), "{dir:?}");
        for f in &files {
            warcio.check(f).unwrap_or_else(|e| panic!("{e}"));
        }
        let all = warcio.records(&files).unwrap_or_else(|e| panic!("{e}"));
        let infos: Vec<String> = all
            .iter()
            .filter(|r| r.kind == "warcinfo")
            .map(|r| String::from_utf8_lossy(&r.content_bytes()).into_owned())
            .collect();
        assert_eq!(infos.len(), files.len(), "one warcinfo per file in {dir:?}");
        for info in &infos {
            assert!(info.contains(&format!("isPartOf: {id}\r\n")), "{info}");
        }
        // Every URL archived once.
        let responses: Vec<&str> = all
            .iter()
            .filter(|r| r.kind == "response")
            .filter_map(|r| r.uri.as_deref())
            .collect();
        let unique: BTreeSet<&&str> = responses.iter().collect();
        assert_eq!(
            unique.len(),
            responses.len(),
            "a URL archived twice in {dir:?}"
        );
    }
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_and_check_exit_alike_for_each_failure_class() {
    // Config: 2 for both.
    let bad = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.26:9/".to_owned()],
        "[crawl]\ncolour = \"blue\"\n",
    )
    .expect("test crawl");
    for res in [run_with(&bad, &[]).await, check(&bad, &[]).await] {
        assert_eq!(res.code(), Some(2), "{res:?}");
        assert!(res.stderr.contains("colour"), "{res:?}");
    }
    // A path a run cannot make: 2 for both.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    let blocked = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.26:9/".to_owned()],
        &format!(
            "[frontier]\ndata_dir = {}\n",
            toml_str(&file.display().to_string())
        ),
    )
    .expect("test crawl");
    for res in [run_with(&blocked, &[]).await, check(&blocked, &[]).await] {
        assert_eq!(res.code(), Some(2), "{res:?}");
        assert!(
            res.stderr.contains(&format!(
                "frontier.data_dir: {} is not a directory",
                file.display()
            )),
            "{res:?}"
        );
    }

    // A Redis nothing listens on: 1 for both (a runtime failure; the same command starts once it is reached).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let gone = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.26:9/".to_owned()],
        &format!(
            "[frontier]\nbackend = \"redis\"\n[frontier.redis]\nurls = [\"redis://:gone-pw-4417@127.0.0.1:{port}/0\"]\n"
        ),
    )
    .expect("test crawl");
    let shown = format!("redis://:***@127.0.0.1:{port}/0");
    let res = run_with(&gone, &[]).await;
    assert_eq!(res.code(), Some(1), "{res:?}");
    assert!(
        res.stderr.contains(&shown)
            && res
                .stderr
                .contains("(the same command resumes once it can be reached)"),
        "{res:?}"
    );
    let res = check(&gone, &[]).await;
    assert_eq!(res.code(), Some(1), "{res:?}");
    let line = line_about(&res.stderr, "frontier.redis.urls");
    assert!(
        line.starts_with(&format!("frontier.redis.urls: redis {shown}: ")),
        "{line}"
    );
    for res in [run_with(&gone, &[]).await, check(&gone, &[]).await] {
        assert!(!format!("{res:?}").contains("gone-pw-4417"), "{res:?}");
    }

    // A JSONL that no longer matches its checkpoint: 1, and the same command does not resume; --fresh starts over.
    let site = Site::start(spec(27, 8, 0)).await.expect("site");
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], "").expect("test crawl");
    let res = run_with(&crawl, &[]).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let records = assert_each_url_once(&crawl);
    let len = std::fs::metadata(&crawl.jsonl).expect("jsonl").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&crawl.jsonl)
        .and_then(|f| f.set_len(len / 2))
        .expect("truncate");
    let res = run_with(&crawl, &[]).await;
    assert_eq!(res.code(), Some(1), "{res:?}");
    assert!(
        res.stderr.contains("(the same command does not resume: ")
            && res.stderr.contains("--fresh"),
        "{res:?}"
    );
    let res = run_with(&crawl, &["--fresh"]).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    for key in ["frontier.data_dir", "output.jsonl"] {
        assert!(
            res.stderr
                .contains(&format!("{PREFIX}--fresh: moved {key} ")),
            "{key}: {}",
            res.stderr
        );
    }
    assert_eq!(assert_each_url_once(&crawl), records);
    // Done: 0 for both.
    assert_eq!(check(&crawl, &[]).await.code(), Some(0));
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_connects_to_redis_as_the_run_would_and_names_servers_it_cannot_reach() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    // Servers a run only warns about: a collector and a proxy's first hop that do not answer.
    let warned = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.28:9/".to_owned()],
        &format!(
            "[observability]\notlp_endpoint = \"http://127.0.0.1:{closed}\"\n\
             [proxy]\ndefault = [\"a\"]\n[proxy.chains.a]\nhops = [\"socks5://u:hop-pw-8812@127.0.0.1:{closed}\"]\n"
        ),
    )
    .expect("test crawl");
    let res = check(&warned, &[]).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    for key in ["observability.otlp_endpoint", "proxy.chains.a"] {
        assert!(
            res.stderr
                .contains(&format!("warning: {key}: cannot connect to ")),
            "{key}: {res:?}"
        );
    }
    assert!(
        res.stderr
            .contains(&format!("its first hop socks5://***@127.0.0.1:{closed}: ")),
        "{res:?}"
    );
    assert!(!format!("{res:?}").contains("hop-pw-8812"));

    if !redis_tools::require("--check against a live redis", false) {
        return;
    }
    let srv = RedisServer::with(Options {
        password: Some("live-pw-6650".into()),
        aof: false,
        ..Options::default()
    });
    let overrides = |url: &str| {
        format!(
            "[frontier]\nbackend = \"redis\"\n[frontier.redis]\nurls = [{}]\ncrawl = \"checked\"\n",
            toml_str(url)
        )
    };
    let live = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.28:9/".to_owned()],
        &overrides(&srv.url()),
    )
    .expect("test crawl");
    let res = check(&live, &[]).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains("frontier: redis "), "{}", res.stdout);
    assert!(!format!("{res:?}").contains("live-pw-6650"));
    let wrong = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.28:9/".to_owned()],
        &overrides(&srv.url().replace("live-pw-6650", "wrong-pw-2231")),
    )
    .expect("test crawl");
    for res in [check(&wrong, &[]).await, run_with(&wrong, &[]).await] {
        assert_eq!(res.code(), Some(1), "{res:?}");
        let text = format!("{res:?}");
        assert!(
            !text.contains("wrong-pw-2231") && !text.contains("live-pw-6650"),
            "{text}"
        );
    }
}
