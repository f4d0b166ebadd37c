//! The command line: `--check` with positioned errors, missing seeds and seeds without a scheme, `--help`,
//! `--version`, unreadable configs, and which config file a run uses (logged at start).
//!
//! Seeds use 127.0.0.64-65 and 127.0.0.42 (refused by the network guard or never answered: nothing is served).

use super::crawl::{run_cmd, toml_str};
use crate::ENGINE;
use crawl_tests::engine::TestCrawl;
use std::process::Command;

fn engine() -> Command {
    let mut c = Command::new(ENGINE);
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c.env_remove("CRAWL_ENGINE_CONFIG");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_every_config_error_with_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("data");
    let config = dir.path().join("bad.toml");
    let text = format!(
        "[crawl]\nseeds = [\"ftp//no-scheme\"]\nmax_pages = \"ten\"\ninclude = [\"(unclosed\"]\ncolour = \"blue\"\n\
         [frontier]\ndata_dir = {}\n",
        toml_str(&data_dir.display().to_string())
    );
    std::fs::write(&config, text).expect("write config");
    let mut cmd = engine();
    cmd.current_dir(dir.path())
        .arg("--config")
        .arg(&config)
        .arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    let path = config.display().to_string();
    for (line, word) in [
        (2, "ftp//no-scheme"),
        (3, "max_pages"),
        (4, "regex"),
        (5, "colour"),
    ] {
        let prefix = format!("{path}:{line}:");
        let l = res
            .stderr
            .lines()
            .find(|l| l.contains(&prefix))
            .unwrap_or_else(|| panic!("no error at line {line}:\n{}", res.stderr));
        let rest = &l[l.find(&prefix).expect("prefix") + prefix.len()..];
        let (col, msg) = rest
            .split_once(": ")
            .unwrap_or_else(|| panic!("no column in {l}"));
        assert!(col.parse::<u32>().is_ok_and(|c| c >= 1), "column of {l}");
        assert!(msg.contains(word) || l.contains(word), "line {line}: {l}");
    }
    assert!(!data_dir.exists(), "--check created the data_dir");
    assert!(!dir.path().join("crawl-data").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_accepts_a_good_config_and_missing_seeds_are_refused_by_a_run_and_a_warning_of_check()
{
    let good =
        TestCrawl::new(ENGINE, &["http://127.0.0.64:9/".to_owned()], "").expect("test crawl");
    let mut cmd = good.command();
    cmd.arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains("ok"), "stdout:\n{}", res.stdout);
    assert!(!good.data_dir.exists(), "--check created the data_dir");

    // Without seeds a run is refused; --check passes with a warning (the seeds may come from --seed).
    let empty = TestCrawl::new(ENGINE, &[], "").expect("test crawl");
    let res = run_cmd(empty.command()).await;
    assert_eq!(res.code(), Some(2), "{res:?}");
    assert!(res.stderr.contains("no seeds"), "stderr:\n{}", res.stderr);
    let mut cmd = empty.command();
    cmd.arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stdout.contains("ok (0 seeds"),
        "stdout:\n{}",
        res.stdout
    );
    assert!(
        res.stderr.contains("warning: no seeds"),
        "stderr:\n{}",
        res.stderr
    );
    assert!(!empty.data_dir.exists());

    // The demo's config passes --check as it is (the template, which binds 9464 under --check, in `template`).
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../demo/config.toml");
    let res = run_cmd({
        let mut c = Command::new(ENGINE);
        c.args(["--config", demo, "--check"]);
        c
    })
    .await;
    assert_eq!(res.code(), Some(0), "{res:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_without_a_scheme_are_each_refused_with_the_url_they_stand_for() {
    let crawl = TestCrawl::new(
        ENGINE,
        &[
            "docs.example.org/start".to_owned(),
            "https://fine.example/".to_owned(),
            "127.0.0.42:8080".to_owned(),
        ],
        "",
    )
    .expect("test crawl");
    let config = crawl.config_path.display().to_string();
    for check in [false, true] {
        let mut cmd = crawl.command();
        cmd.args(["--seed", "www.example.org", "--seed", "localhost:8080/"]);
        if check {
            cmd.arg("--check");
        }
        let res = run_cmd(cmd).await;
        assert_eq!(res.code(), Some(2), "--check {check}: {res:?}");
        // Every bad seed, of the file (at its position) and of the command line, in one report.
        for want in [
            "`crawl.seeds[0]`: URL `docs.example.org/start` has no scheme; did you mean \
             `https://docs.example.org/start`?",
            "`crawl.seeds[2]`: URL `127.0.0.42:8080` has no scheme; did you mean `http://127.0.0.42:8080/`?",
            "--seed: URL `www.example.org` has no scheme; did you mean `https://www.example.org/`?",
            "--seed: URL `localhost:8080/` has no scheme; did you mean `http://localhost:8080/`?",
        ] {
            assert!(
                res.stderr.contains(want),
                "--check {check}: no {want:?} in\n{}",
                res.stderr
            );
        }
        assert!(res.stderr.contains(&format!("{config}:")), "{}", res.stderr);
        for noise in [
            "relative URL without a base",
            "unsupported scheme",
            "no seeds",
        ] {
            assert!(!res.stderr.contains(noise), "{noise}:\n{}", res.stderr);
        }
        assert!(res.stdout.is_empty(), "{}", res.stdout);
        assert!(
            !crawl.data_dir.exists(),
            "a refused start opened the data_dir"
        );
    }
}

/// The `config file` (or `no config file`) line of a run's JSON log.
fn config_line(stderr: &str) -> serde_json::Value {
    let line = stderr
        .lines()
        .find(|l| l.contains("config file\""))
        .unwrap_or_else(|| panic!("no config file line:\n{stderr}"));
    serde_json::from_str(line).expect("json log line")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_logs_its_config_file_and_says_when_it_was_found_in_the_working_directory() {
    // The seed is refused by the network guard: the run ends at once without a connection.
    let crawl = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.42:9/".to_owned()],
        "[security]\nallow_private_networks = false\n",
    )
    .expect("test crawl");
    let config = std::fs::canonicalize(&crawl.config_path).expect("config");
    // The line names the file by an absolute path.
    let path_of = |v: &serde_json::Value| {
        let p =
            std::path::PathBuf::from(v["path"].as_str().unwrap_or_else(|| panic!("no path: {v}")));
        assert!(p.is_absolute(), "{v}");
        std::fs::canonicalize(p).expect("logged path exists")
    };

    // --config: named, and said to be.
    let res = run_cmd(crawl.command()).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let v = config_line(&res.stderr);
    assert_eq!(v["level"], "INFO", "{v}");
    assert_eq!(v["message"], "config file", "{v}");
    assert_eq!(v["origin"], "--config", "{v}");
    assert_eq!(path_of(&v), config, "{v}");

    // No --config: ./config.toml of the working directory, and the line says why.
    let mut cmd = engine();
    cmd.current_dir(crawl.dir.path()).arg("--no-progress");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let v = config_line(&res.stderr);
    assert_eq!(
        v["origin"], "the working directory's config.toml: no --config given",
        "{v}"
    );
    assert_eq!(path_of(&v), config, "{v}");
    // --check says the same on its ok line.
    let mut cmd = engine();
    cmd.current_dir(crawl.dir.path()).arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stdout.starts_with(
            "config.toml (the working directory's config.toml: no --config given): ok"
        ),
        "{}",
        res.stdout
    );

    // CRAWL_ENGINE_CONFIG names it too, from elsewhere.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let mut cmd = engine();
    cmd.current_dir(elsewhere.path())
        .env("CRAWL_ENGINE_CONFIG", &config)
        .arg("--no-progress");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let v = config_line(&res.stderr);
    assert_eq!(v["origin"], "CRAWL_ENGINE_CONFIG", "{v}");
    assert_eq!(path_of(&v), config, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_protocol_from_the_environment_that_is_not_supported_stops_the_start() {
    let c = TestCrawl::new(ENGINE, &["http://127.0.0.65:9/".to_owned()], "").expect("test crawl");
    let mut cmd = c.command();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let res = run_cmd(cmd).await;
    assert_ne!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && res.stderr.contains("http/json"),
        "stderr:\n{}",
        res.stderr
    );
    // The config's protocol wins over the environment's.
    let c = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.65:9/".to_owned()],
        "[observability]\notlp_protocol = \"http/protobuf\"\n",
    )
    .expect("test crawl");
    let mut cmd = c.command();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_compression_from_the_environment_that_is_not_supported_stops_the_start() {
    let c = TestCrawl::new(ENGINE, &["http://127.0.0.65:9/".to_owned()], "").expect("test crawl");
    let mut cmd = c.command();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd");
    let res = run_cmd(cmd).await;
    assert_ne!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stderr
            .contains("OTEL_EXPORTER_OTLP_COMPRESSION=\"zstd\" is not supported (none or gzip)"),
        "stderr:\n{}",
        res.stderr
    );
    // The config's compression wins over the environment's, and the start line names it.
    let c = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.65:9/".to_owned()],
        "[observability]\notlp_compression = \"none\"\n",
    )
    .expect("test crawl");
    let mut cmd = c.command();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_COMPRESSION", "zstd");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stderr.contains(r#""compression":"none""#),
        "{}",
        res.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_on_the_grpc_port_under_the_default_protocol_is_warned_about() {
    // Nothing listens there: the exports fail at once, the crawl (of a refused seed) ends all the same.
    let endpoint = "http://127.0.0.65:4317";
    let c = TestCrawl::new(ENGINE, &["http://127.0.0.65:9/".to_owned()], "").expect("test crawl");
    let mut cmd = c.command();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    let warning = res
        .stderr
        .lines()
        .find(|l| l.contains("otlp endpoint is on the other protocol's port"))
        .unwrap_or_else(|| panic!("no warning:\n{}", res.stderr));
    assert!(
        warning.contains(r#""protocol":"http/protobuf""#)
            && warning.contains(r#"otlp_protocol = \"grpc\""#)
            && warning.contains("4318"),
        "{warning}"
    );
    // The same endpoint with the protocol it is the port of: no warning.
    let c = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.65:9/".to_owned()],
        "[observability]\notlp_protocol = \"grpc\"\n",
    )
    .expect("test crawl");
    let mut cmd = c.command();
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        !res.stderr.contains("other protocol's port"),
        "{}",
        res.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_version_and_unreadable_config() {
    let mut help = engine();
    help.arg("--help");
    let res = run_cmd(help).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    // The options, where the config comes from, where the outputs go and what the signals do.
    for words in [
        "--config",
        "--seed",
        "--check",
        "--fresh",
        "Exit status",
        "CRAWL_ENGINE_CONFIG",
        "./config.toml in the working directory",
        "output.jsonl",
        "output.warc_dir",
        "frontier.data_dir",
        "SIGINT",
        "SIGTERM",
        "SIGHUP",
        "the same command resumes",
    ] {
        assert!(
            res.stdout.contains(words),
            "help lacks {words}:\n{}",
            res.stdout
        );
    }
    // The exit statuses: one table in --help, and a row for each in the README.
    assert!(
        res.stdout.contains(crawl_engine::error::EXIT_STATUS),
        "{}",
        res.stdout
    );
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README");
    for status in ["0", "1", "2", "130"] {
        assert!(
            readme.contains(&format!("\n| `{status}` | ")),
            "the README's exit status table has no row for {status}"
        );
    }
    let mut version = engine();
    version.arg("--version");
    let res = run_cmd(version).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        res.stdout
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.toml");
    for path in [missing.as_path(), dir.path()] {
        let mut cmd = engine();
        cmd.current_dir(dir.path()).arg("--config").arg(path);
        let res = run_cmd(cmd).await;
        assert_eq!(res.code(), Some(2), "{path:?}: {res:?}");
        assert!(
            res.stderr.contains(&path.display().to_string()),
            "stderr:\n{}",
            res.stderr
        );
    }
    assert!(!dir.path().join("crawl-data").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_keeps_one_record_per_identity_and_reports_torn_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    std::fs::write(
        &a,
        "{\"url\":\"http://x/1\",\"record_id\":\"01\",\"status\":200}\n{\"url\":\"http://x/2\",\"record_id\":\"02\"}\n",
    )
    .expect("write a");
    std::fs::write(
        &b,
        "{\"url\":\"http://x/1\",\"record_id\":\"01\",\"status\":500}\n{\"url\":\"http://x/3\",\"record_id\":\"03\"}\n{\"url\":\"http://x/4\"",
    )
    .expect("write b");
    let out = dir.path().join("all.jsonl");
    let mut cmd = engine();
    cmd.arg("merge").arg("-o").arg(&out).arg(&a).arg(&b);
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stdout.contains("merged 3 records from 2 files") && res.stdout.contains("1 duplicates"),
        "{res:?}"
    );
    assert!(
        res.stderr.contains("b.jsonl: the last line is incomplete"),
        "{res:?}"
    );
    let text = std::fs::read_to_string(&out).expect("merged");
    let urls: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(urls.len(), 3);
    assert_eq!(urls[0]["status"], 200, "the first copy is kept");

    let mut cmd = engine();
    cmd.arg("merge").arg("-o").arg(&out);
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(2), "files are required: {res:?}");
    let mut cmd = engine();
    cmd.arg("merge").arg("-o").arg(&a).arg(&a);
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(1), "{res:?}");
    assert!(res.stderr.contains("also an input"), "{res:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_names_the_redis_frontier_without_its_password() {
    let t = TestCrawl::new(
        ENGINE,
        &["http://127.0.0.64:9/".to_owned()],
        "[frontier]\nbackend = \"redis\"\n[frontier.redis]\nurls = [\"redis://:canary-pw-7731@127.0.0.1:1/0\"]\ncrawl = \"news\"\n",
    ).expect("test crawl");
    // --check connects as the run would: nothing listens there, a runtime failure (exit 1) for both.
    let mut cmd = t.command();
    cmd.arg("--check");
    let res = run_cmd(cmd).await;
    assert_eq!(res.code(), Some(1), "{res:?}");
    assert!(
        res.stderr
            .contains("frontier.redis.urls: redis redis://:***@127.0.0.1:1/0: "),
        "{}",
        res.stderr
    );
    assert!(!format!("{res:?}").contains("canary-pw-7731"));

    // A crawl whose Redis cannot be reached fails at start with exit 1, naming it without the password.
    let res = run_cmd(t.command()).await;
    assert_eq!(res.code(), Some(1), "{res:?}");
    assert!(
        res.stderr.contains("redis://:***@127.0.0.1:1/0"),
        "{}",
        res.stderr
    );
    assert!(!format!("{res:?}").contains("canary-pw-7731"));
}
