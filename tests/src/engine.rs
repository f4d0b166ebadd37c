//! Running the real `crawl-engine` binary from tests: a temporary directory with a config file, the data_dir and
//! the JSONL; helpers to run it with a deadline, send signals, and read the records back.
//!
//! The binary's path always comes from the test: `env!("CARGO_BIN_EXE_crawl-engine")` in a test of the
//! `crawl-engine` package, so a run never picks up a stale build.

use crawl_core::record::Record;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// One crawl's working directory and the binary that runs it.
pub struct TestCrawl {
    pub engine: PathBuf,
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
    pub jsonl: PathBuf,
    pub data_dir: PathBuf,
    seeds: Vec<String>,
}

/// How a run ended.
#[derive(Debug)]
pub struct RunResult {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl RunResult {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl TestCrawl {
    /// A crawl run by the binary at `engine`, with a config for loopback tests (private networks allowed, no
    /// politeness delay, quick retries) with `overrides` (TOML text, deep-merged over the defaults) applied.
    pub fn new(engine: impl AsRef<Path>, seeds: &[String], overrides: &str) -> TestCrawl {
        let dir = tempfile::tempdir().expect("tempdir");
        let jsonl = dir.path().join("crawl.jsonl");
        let data_dir = dir.path().join("data");
        let config_path = dir.path().join("config.toml");
        let crawl = TestCrawl {
            engine: engine.as_ref().to_path_buf(),
            dir,
            config_path,
            jsonl,
            data_dir,
            seeds: seeds.to_vec(),
        };
        crawl.rewrite(overrides);
        crawl
    }

    /// Writes the config file again with other `overrides` (same defaults, seeds, data_dir and JSONL), atomically,
    /// so a running crawl that re-reads it (SIGHUP) never sees half a file.
    pub fn rewrite(&self, overrides: &str) {
        self.write_raw(&self.render(overrides));
    }

    /// Replaces the config file with `text` as is (atomically).
    pub fn write_raw(&self, text: &str) {
        let tmp = self.config_path.with_extension("toml.tmp");
        std::fs::write(&tmp, text).expect("write config");
        std::fs::rename(&tmp, &self.config_path).expect("replace config");
    }

    fn render(&self, overrides: &str) -> String {
        let (seeds, jsonl, data_dir) = (&self.seeds, &self.jsonl, &self.data_dir);
        let mut base: toml::Table = toml::from_str(
            r#"
            [crawl]
            robots_retry_ms = 200
            [politeness]
            min_delay_ms = 0
            per_host_concurrency = 4
            backoff_base_ms = 100
            [fetch]
            concurrency = 16
            retry_base_ms = 50
            connect_timeout_ms = 2000
            header_timeout_ms = 5000
            idle_timeout_ms = 5000
            request_timeout_ms = 10000
            [security]
            allow_private_networks = true
            [supervisor]
            backoff_base_ms = 10
            [shutdown]
            grace_ms = 5000
            [resolver]
            # Never the system's nameservers in tests: names not set up by a test fail fast on loopback.
            nameservers = ["127.0.0.1:9"]
            hijack_probe = false
            timeout_ms = 300
            attempts = 1
            [observability]
            # Parallel tests must not fight over the default port; tests that scrape set their own.
            metrics_listen = ""
            log_level = "info"
            log_format = "json"
            progress_interval_s = 1
            "#,
        )
        .expect("base config");
        let over: toml::Table = toml::from_str(overrides).expect("override toml");
        merge(&mut base, over);
        let crawl = base
            .entry("crawl")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let toml::Value::Table(t) = crawl {
            t.entry("seeds").or_insert_with(|| {
                toml::Value::Array(
                    seeds
                        .iter()
                        .map(|s| toml::Value::String(s.clone()))
                        .collect(),
                )
            });
        }
        let frontier = base
            .entry("frontier")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let toml::Value::Table(t) = frontier {
            t.entry("data_dir")
                .or_insert_with(|| toml::Value::String(data_dir.display().to_string()));
        }
        let output = base
            .entry("output")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        if let toml::Value::Table(t) = output {
            t.entry("jsonl")
                .or_insert_with(|| toml::Value::String(jsonl.display().to_string()));
        }
        toml::to_string(&base).expect("render config")
    }

    /// The command, ready to spawn (stdout/stderr piped).
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.engine);
        c.arg("--config")
            .arg(&self.config_path)
            .arg("--no-progress");
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.env_remove("RUST_LOG");
        c
    }

    pub fn spawn(&self) -> Child {
        self.command()
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.engine.display()))
    }

    /// Runs to the end, killing the process if it outlives `deadline`.
    pub fn run(&self, deadline: Duration) -> RunResult {
        wait_with_deadline(self.spawn(), deadline)
    }

    /// The JSONL records.
    pub fn records(&self) -> Vec<Record> {
        read_records(&self.jsonl)
    }
}

/// Waits for a child, killing it after `deadline` (the test then fails on the status). Its stdout and stderr are
/// drained on threads while it runs, so a chatty child never blocks on a full pipe.
pub fn wait_with_deadline(mut child: Child, deadline: Duration) -> RunResult {
    fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut buf = String::new();
            if let Some(mut p) = pipe {
                let mut bytes = Vec::new();
                let _ = p.read_to_end(&mut bytes);
                buf = String::from_utf8_lossy(&bytes).into_owned();
            }
            buf
        })
    }
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            break child.wait().expect("wait after kill");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    RunResult {
        status,
        stdout,
        stderr,
    }
}

/// Parses a JSONL file into records (panics on a malformed line: that is a test failure).
pub fn read_records(path: &Path) -> Vec<Record> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("line {} of {}: {e}: {l}", i + 1, path.display()))
        })
        .collect()
}

/// Sends a signal to a child by pid with the `kill` command (no unsafe code).
pub fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status();
}

/// A TCP port free on 127.0.0.1 right now (for a listener the binary opens, e.g. `metrics_listen`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}
