//! The operator's first hour (127.0.0.250-254): the demo's config runs whatever holds the default metrics port, a
//! second process on one data_dir is told about the lock, `--check` opens what a run opens, a run that could fetch
//! nothing says why (and counts no fetch and no robots.txt request for it), and a finished crawl run again says it
//! is complete.

use super::crawl::{run_cmd, toml_str};
use crate::ENGINE;
use crawl_tests::engine::TestCrawl;
use crawl_tests::site::{Site, SiteSpec};
use std::process::{Command, Stdio};
use std::time::Duration;

fn spec(first_octet: u8, pages: usize, delay_ms: u64) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        first_octet,
        delay_ms,
        ..SiteSpec::small()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_config_runs_while_another_listener_holds_9464() {
    // Whoever holds 9464 (this test, or another program on the machine), the demo's config must not need it.
    let _held = std::net::TcpListener::bind("127.0.0.1:9464");
    let site = Site::start(spec(250, 20, 0)).await.expect("site");
    let dir = tempfile::tempdir().expect("tempdir");
    let demo = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../demo/config.toml"))
        .expect("demo config");
    // Copied as `make demo` copies it; only the resolver is kept off the network (the seeds are IP literals).
    assert!(
        !demo.contains("[resolver]"),
        "the demo's config has a resolver section"
    );
    let text =
        format!("{demo}\n[resolver]\nhijack_probe = false\nnameservers = [\"127.0.0.1:9\"]\n");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, text).expect("write config");
    let mut cmd = Command::new(ENGINE);
    cmd.arg("--config")
        .arg(&config)
        .arg("--no-progress")
        .arg("--seed")
        .arg(site.seed_url())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains("crawl completed"), "{}", res.stdout);
    // The bound address is logged; the files land under the config's folder.
    let line = res
        .stderr
        .lines()
        .find(|l| l.contains("metrics listening"))
        .unwrap_or_else(|| panic!("no metrics line:\n{}", res.stderr));
    // The JSON log (stderr is no terminal) names the address actually bound: a free port, never 0 or 9464.
    let v: serde_json::Value = serde_json::from_str(line).expect("json log line");
    let addr: std::net::SocketAddr = v["addr"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no bound address in {line}"));
    assert!(
        addr.ip().is_loopback() && addr.port() != 0 && addr.port() != 9464,
        "{line}"
    );
    assert!(dir.path().join("crawl.jsonl").exists());
    assert!(dir.path().join("warc").is_dir());
    assert!(dir.path().join("crawl-data").is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_one_data_dir_is_told_about_the_lock_not_the_port() {
    // A slow site keeps the first process running.
    let site = Site::start(spec(251, 30, 1000)).await.expect("site");
    let crawl = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[observability]\nmetrics_listen = \"127.0.0.1:0\"\n[politeness]\nper_host_concurrency = 1\n",
    ).expect("test crawl");
    let first = crawl.start();
    let addr = first.metrics_addr(Duration::from_secs(20));
    // Its signal handlers are in place once it has sent a request (they come before the first job).
    crawl_tests::wait::until(
        Duration::from_secs(20),
        "the first process sent a request",
        || site.total_requests() > 0,
    )
    .await;
    // The second process names the first one's port explicitly: it is busy, but the lock comes first.
    let second = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        &format!(
            "[observability]\nmetrics_listen = \"{addr}\"\n[frontier]\ndata_dir = {}\n",
            toml_str(&crawl.data_dir.display().to_string())
        ),
    )
    .expect("test crawl");
    let res = run_cmd(second.command()).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    assert!(
        res.stderr
            .contains("is in use by another crawl-engine process"),
        "{}",
        res.stderr
    );
    assert!(!res.stderr.contains("metrics_listen"), "{}", res.stderr);
    // --check says the same, and finds the busy port too.
    let mut cmd = second.command();
    cmd.arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    assert!(
        res.stderr.contains("frontier.data_dir:") && res.stderr.contains("in use"),
        "{}",
        res.stderr
    );
    assert!(
        res.stderr
            .contains("observability.metrics_listen: cannot listen on"),
        "{}",
        res.stderr
    );
    first.signal("TERM");
    let done = first.wait(Duration::from_secs(30));
    assert_eq!(done.code(), Some(0), "{done:?}");

    // With the data_dir free, a busy explicit port fails at start, naming the key (exit 2).
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    second
        .rewrite(&format!(
            "[observability]\nmetrics_listen = \"{}\"\n[frontier]\ndata_dir = {}\n",
            held.local_addr().expect("addr"),
            toml_str(&crawl.data_dir.display().to_string())
        ))
        .expect("rewrite config");
    let res = run_cmd(second.command()).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    assert!(
        res.stderr.contains("observability.metrics_listen"),
        "{}",
        res.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_opens_what_the_run_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("plain-file"), b"x").expect("write");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let crawl = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.252:9/".to_owned()],
        &format!(
            "[frontier]\ndata_dir = \"/proc/crawl-engine-check/data\"\n[output]\njsonl = {}\nwarc_dir = {}\n\
             [observability]\nmetrics_listen = \"{}\"\n",
            toml_str(
                &dir.path()
                    .join("plain-file/crawl.jsonl")
                    .display()
                    .to_string()
            ),
            toml_str(&dir.path().join("warc").display().to_string()),
            busy.local_addr().expect("addr")
        ),
    ).expect("test crawl");
    let mut cmd = crawl.command();
    cmd.arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    for key in [
        "frontier.data_dir:",
        "output.jsonl:",
        "observability.metrics_listen:",
    ] {
        assert!(res.stderr.contains(key), "{key} missing:\n{}", res.stderr);
    }
    assert!(!res.stderr.contains("output.warc_dir"), "{}", res.stderr);
    assert!(
        !dir.path().join("warc").exists(),
        "--check created the WARC folder"
    );

    // Seeds on loopback with private networks excluded: a warning, not a failure.
    let private = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.252:9/".to_owned()],
        "[security]\nallow_private_networks = false\n",
    )
    .expect("test crawl");
    let mut cmd = private.command();
    cmd.arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stderr.contains("warning: seed http://127.0.0.252:9/")
            && res
                .stderr
                .contains("security.allow_private_networks = false"),
        "{}",
        res.stderr
    );
    assert!(!private.data_dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fetches_nothing_says_why_and_a_finished_crawl_says_it_is_complete() {
    let site = Site::start(spec(253, 12, 0)).await.expect("site");
    let private = TestCrawl::new(
        ENGINE,
        &[site.seed_url()],
        "[security]\nallow_private_networks = false\n",
    )
    .expect("test crawl");
    let summary = private.dir.path().join("summary.json");
    let mut cmd = private.command();
    cmd.arg("--summary-json").arg(&summary);
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stdout
            .contains("nothing was fetched: 1 URLs are on private or loopback addresses"),
        "{}",
        res.stdout
    );
    // The refused seed is no fetch and no robots.txt request: the summary counts none, and the site saw none.
    for want in [
        "  fetched          0\n",
        "  excluded         1  (private_network 1)\n",
        "  all runs         1  done of 1 known (0 pages fetched)\n",
        " robots.txt 0,",
    ] {
        assert!(res.stdout.contains(want), "no {want:?} in\n{}", res.stdout);
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary json")).expect("json");
    assert_eq!(
        (
            &json["fetched"],
            &json["total_fetched"],
            &json["robots_fetches"]
        ),
        (&0.into(), &0.into(), &0.into()),
        "{json}"
    );
    assert_eq!(
        site.total_requests(),
        0,
        "the refused seed's site was asked"
    );

    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], "").expect("test crawl");
    let first = run_cmd(crawl.command()).await;
    assert_eq!(first.code(), Some(0), "{first:?}");
    let records = crawl.records().len();
    assert!(records > 12, "{records} records");
    assert!(
        !first.stdout.contains("already complete"),
        "{}",
        first.stdout
    );
    let again = run_cmd(crawl.command()).await;
    assert_eq!(again.code(), Some(0), "{again:?}");
    assert!(
        again.stdout.contains(&format!(
            "the crawl was already complete: all {records} URLs known in"
        )),
        "{}",
        again.stdout
    );
    assert!(
        again
            .stdout
            .contains(&format!("all runs  {records:>8}  done of {records} known")),
        "{}",
        again.stdout
    );
    assert_eq!(
        crawl.records().len(),
        records,
        "a complete crawl wrote again"
    );
}
