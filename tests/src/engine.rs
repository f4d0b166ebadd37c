//! Running the real `crawl-engine` binary from tests: a temporary directory with a config file, the data_dir and
//! the JSONL; helpers to run it with a deadline, send signals, and read the records back.
//!
//! The binary's path always comes from the test: `env!("CARGO_BIN_EXE_crawl-engine")` in a test of the
//! `crawl-engine` package, so a run never picks up a stale build.

use crate::site::Site;
use crawl_core::record::{Outcome, Record};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::{self, BufRead as _, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
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

/// Why a [`TestCrawl`] could not be set up or its config written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestCrawlError {
    /// The temporary directory could not be made.
    #[error("cannot create the crawl's directory: {0}")]
    TempDir(#[source] io::Error),
    /// The config file could not be written or put in place.
    #[error("cannot write the config {}: {source}", path.display())]
    WriteConfig { path: PathBuf, source: io::Error },
    /// The overrides given by the test are not TOML.
    #[error("the config overrides are not TOML: {0}")]
    Overrides(#[source] toml::de::Error),
    /// The merged config could not be written as TOML.
    #[error("cannot render the config: {0}")]
    Render(#[from] toml::ser::Error),
}

/// One crawl's working directory and the binary that runs it.
pub struct TestCrawl {
    pub engine: PathBuf,
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
    pub jsonl: PathBuf,
    pub data_dir: PathBuf,
    seeds: Vec<String>,
    /// What the command line starts with before the binary (see [`TestCrawl::wrap`]).
    wrapper: Vec<OsString>,
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
    pub fn new(
        engine: impl AsRef<Path>,
        seeds: &[String],
        overrides: &str,
    ) -> Result<TestCrawl, TestCrawlError> {
        let dir = tempfile::tempdir().map_err(TestCrawlError::TempDir)?;
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
            wrapper: Vec::new(),
        };
        crawl.rewrite(overrides)?;
        Ok(crawl)
    }

    /// Writes the config file again with other `overrides` (same defaults, seeds, data_dir and JSONL), atomically,
    /// so a running crawl that re-reads it (SIGHUP) never sees half a file.
    pub fn rewrite(&self, overrides: &str) -> Result<(), TestCrawlError> {
        self.write_raw(&self.render(overrides)?)
    }

    /// Replaces the config file with `text` as is (atomically).
    pub fn write_raw(&self, text: &str) -> Result<(), TestCrawlError> {
        let tmp = self.config_path.with_extension("toml.tmp");
        let failed = |path: &Path| {
            let path = path.to_owned();
            move |source| TestCrawlError::WriteConfig { path, source }
        };
        std::fs::write(&tmp, text).map_err(failed(&tmp))?;
        std::fs::rename(&tmp, &self.config_path).map_err(failed(&self.config_path))
    }

    fn render(&self, overrides: &str) -> Result<String, TestCrawlError> {
        let (seeds, jsonl, data_dir) = (&self.seeds, &self.jsonl, &self.data_dir);
        let mut base = toml::toml! {
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
            // Never the system's nameservers in tests: names not set up by a test fail fast on loopback.
            [resolver]
            nameservers = ["127.0.0.1:9"]
            hijack_probe = false
            timeout_ms = 300
            attempts = 1
            // Parallel tests must not fight over the default port; tests that scrape set their own.
            [observability]
            metrics_listen = ""
            log_level = "info"
            log_format = "json"
            progress_interval_s = 1
        };
        let over: toml::Table = toml::from_str(overrides).map_err(TestCrawlError::Overrides)?;
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
        Ok(toml::to_string(&base)?)
    }

    /// Runs the binary through `wrapper` from now on: the command becomes `wrapper[0] wrapper[1..] <binary> <args>`
    /// (e.g. `ip netns exec <namespace>`, which execs the binary, so the child's pid stays the binary's and signals
    /// reach it). An empty wrapper runs the binary directly again.
    pub fn wrap<S: Into<OsString>>(&mut self, wrapper: impl IntoIterator<Item = S>) {
        self.wrapper = wrapper.into_iter().map(Into::into).collect();
    }

    /// The command, ready to spawn (stdout/stderr piped).
    pub fn command(&self) -> Command {
        let mut c = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&self.engine);
                c
            }
            None => Command::new(&self.engine),
        };
        c.arg("--config")
            .arg(&self.config_path)
            .arg("--no-progress");
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.env_remove("RUST_LOG");
        c
    }

    /// Spawns the crawl with its stderr read as it comes (see [`Running`]).
    pub fn start(&self) -> Running {
        Running::new(self.spawn())
    }

    pub fn spawn(&self) -> Child {
        self.command()
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.engine.display()))
    }

    /// Spawns the crawl with its output drained from the start (see [`Drained`]).
    pub fn spawn_drained(&self) -> Drained {
        Drained::new(self.spawn())
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
pub fn wait_with_deadline(child: Child, deadline: Duration) -> RunResult {
    Drained::new(child).finish(deadline)
}

/// A child whose stdout and stderr are drained from the moment it is made: tests that run several processes at
/// once, or sleep while one runs, never leave one blocked on a full pipe while they wait for another.
pub struct Drained {
    child: Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
}

impl Drained {
    pub fn new(mut child: Child) -> Drained {
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        Drained { child, out, err }
    }

    /// The process (for its pid and signals).
    pub fn child(&self) -> &Child {
        &self.child
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process, killing it after `deadline`, with everything it wrote.
    pub fn finish(mut self, deadline: Duration) -> RunResult {
        let status = wait_or_kill(&mut self.child, deadline);
        RunResult {
            status,
            stdout: self.out.join().unwrap_or_default(),
            stderr: self.err.join().unwrap_or_default(),
        }
    }
}

/// Reads a pipe to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
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

/// The child's exit status, killing it first when it outlives `deadline` or when its state cannot be read.
fn wait_or_kill(child: &mut Child, deadline: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return s,
            Ok(None) if start.elapsed() <= deadline => {}
            Ok(None) | Err(_) => return kill_and_reap(child),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the child (SIGKILL) and reaps it. A status that cannot be read after the kill is reported as the kill's
/// own (terminated by SIGKILL), which is what a test checking the status must see.
fn kill_and_reap(child: &mut Child) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt as _;
    const SIGKILL: i32 = 9;
    let _ = child.kill();
    child
        .wait()
        .unwrap_or_else(|_| ExitStatus::from_raw(SIGKILL))
}

/// Every process exited 0; on failure every process's log is shown (one that never ends may be waiting on
/// another).
pub fn assert_all_exit_0(results: &[RunResult], label: &str) {
    let all: String = results
        .iter()
        .enumerate()
        .map(|(i, r)| format!("process {i} ({:?}):\n{}\n", r.code(), r.stderr))
        .collect();
    for r in results {
        assert_eq!(r.code(), Some(0), "{label}: {all}");
    }
}

/// Every URL of `want` (a site's ground truth, e.g. from [`Site::expected_from`]) exactly once in the merged
/// `records`, nothing else, and at least one page fetched with 200; `label` names the case in a failure.
pub fn assert_exactly_once(want: &BTreeSet<String>, records: &[Record], label: &str) {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        *seen.entry(r.url.as_str()).or_default() += 1;
    }
    let dups: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(dups.is_empty(), "{label}: URLs twice: {dups:?}");
    let missing: Vec<&String> = want
        .iter()
        .filter(|u| !seen.contains_key(u.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{label}: {} of {} URLs missing: {:?}",
        missing.len(),
        want.len(),
        missing.iter().take(20).collect::<Vec<_>>()
    );
    let unexpected: Vec<&str> = seen
        .keys()
        .filter(|u| !want.contains(**u))
        .copied()
        .collect();
    assert!(unexpected.is_empty(), "{label}: unexpected {unexpected:?}");
    assert!(
        records
            .iter()
            .any(|r| r.outcome == Outcome::Fetched && r.status == Some(200)),
        "{label}: no page fetched with 200"
    );
}

/// No host of `site` had requests of two processes in flight at once: the processes of a shared crawl send
/// User-Agents of their own, and the site logged when each request started and ended.
pub fn assert_one_process_per_host(site: &Site, label: &str) {
    let reqs = site.requests();
    for h in 0..site.hosts() {
        let mut spans: Vec<_> = reqs
            .iter()
            .filter(|r| r.host == h)
            .map(|r| {
                (
                    r.start,
                    r.end.unwrap_or(r.start),
                    r.user_agent.clone().unwrap_or_default(),
                )
            })
            .collect();
        spans.sort_by_key(|s| s.0);
        for w in spans.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            assert!(
                a.2 == b.2 || b.0 >= a.1,
                "{label}: host {h}: {} and {} fetched at once ({:?} overlap)",
                a.2,
                b.2,
                a.1 - b.0
            );
        }
    }
}

/// Runs `crawl-engine merge` over the JSONL files of `crawls` that exist (a process killed before its first
/// record has none: it wrote nothing) into a file in the first crawl's folder, and reads the merged records.
pub fn merge_outputs(crawls: &[TestCrawl]) -> Vec<Record> {
    let Some(first) = crawls.first() else {
        return Vec::new();
    };
    let out = first.dir.path().join("merged.jsonl");
    let files: Vec<&PathBuf> = crawls
        .iter()
        .map(|t| &t.jsonl)
        .filter(|p| p.exists())
        .collect();
    let res = wait_with_deadline(
        std::process::Command::new(&first.engine)
            .arg("merge")
            .arg("-o")
            .arg(&out)
            .args(&files)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn merge: {e}")),
        Duration::from_secs(30),
    );
    assert_eq!(res.code(), Some(0), "merge: {res:?}");
    read_records(&out)
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

/// A running `crawl-engine` whose stderr is read line by line as it comes: a test can wait for a log line (such as
/// the one with the metrics listener's bound address) and still gets the whole stderr when the process ends.
pub struct Running {
    child: Child,
    stderr: Arc<(Mutex<StderrLines>, Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct StderrLines {
    lines: Vec<String>,
    closed: bool,
}

impl Running {
    fn new(mut child: Child) -> Running {
        let stderr = Arc::new((Mutex::new(StderrLines::default()), Condvar::new()));
        let reader = child.stderr.take().map(|pipe| {
            let shared = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut pipe = BufReader::new(pipe);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    let done = !matches!(pipe.read_until(b'\n', &mut line), Ok(n) if n > 0);
                    let (lock, cv) = &*shared;
                    let mut log = lock.lock().unwrap_or_else(|e| e.into_inner());
                    if done {
                        log.closed = true;
                    } else {
                        let text = String::from_utf8_lossy(&line);
                        log.lines
                            .push(text.trim_end_matches(['\n', '\r']).to_owned());
                    }
                    cv.notify_all();
                    if done {
                        break;
                    }
                }
            })
        });
        Running {
            child,
            stderr,
            reader,
        }
    }

    /// The process (for its pid).
    pub fn child(&self) -> &Child {
        &self.child
    }

    /// Sends `sig` (e.g. "HUP", "TERM", "KILL").
    pub fn signal(&self, sig: &str) {
        signal(&self.child, sig);
    }

    /// The stderr seen so far.
    pub fn stderr_so_far(&self) -> String {
        let log = self.stderr.0.lock().unwrap_or_else(|e| e.into_inner());
        log.lines.join("\n")
    }

    /// Waits until a stderr line satisfies `found` and returns its answer; `None` when stderr closes or `timeout`
    /// passes first.
    pub fn wait_for_line<T>(
        &self,
        timeout: Duration,
        found: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let start = Instant::now();
        let (lock, cv) = &*self.stderr;
        let mut log = lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen = 0;
        loop {
            if let Some(t) = log.lines[seen..].iter().find_map(|l| found(l)) {
                return Some(t);
            }
            seen = log.lines.len();
            let left = timeout.checked_sub(start.elapsed())?;
            if log.closed {
                return None;
            }
            log = cv
                .wait_timeout(log, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// The address the metrics listener bound (`metrics_listen` with port 0 gets a free port from the system), read
    /// from the engine's `metrics listening` log line (JSON logs, level info or lower). Panics with the stderr seen
    /// when no such line comes within `timeout`.
    pub fn metrics_addr(&self, timeout: Duration) -> SocketAddr {
        self.wait_for_line(timeout, metrics_listening)
            .unwrap_or_else(|| {
                panic!(
                    "no `metrics listening` line on stderr:\n{}",
                    self.stderr_so_far()
                )
            })
    }

    /// The address the control API listener bound (`[api] listen` with port 0 gets a free port), read from the
    /// engine's `api listening` log line, as [`Running::metrics_addr`] reads the metrics listener's.
    pub fn api_addr(&self, timeout: Duration) -> SocketAddr {
        self.wait_for_line(timeout, api_listening)
            .unwrap_or_else(|| {
                panic!(
                    "no `api listening` line on stderr:\n{}",
                    self.stderr_so_far()
                )
            })
    }

    /// Runs to the end, killing the process if it outlives `deadline`.
    pub fn wait(mut self, deadline: Duration) -> RunResult {
        let out = drain(self.child.stdout.take());
        let status = wait_or_kill(&mut self.child, deadline);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let stdout = out.join().unwrap_or_default();
        let mut stderr = self.stderr_so_far();
        if !stderr.is_empty() {
            stderr.push('\n');
        }
        RunResult {
            status,
            stdout,
            stderr,
        }
    }
}

/// A test that fails (panics) before it waits for its engine must not leave the process running: it is killed.
impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `addr` of a JSON `metrics listening` log line.
fn metrics_listening(line: &str) -> Option<SocketAddr> {
    listening(line, "metrics listening")
}

/// The `addr` of a JSON `api listening` log line.
fn api_listening(line: &str) -> Option<SocketAddr> {
    listening(line, "api listening")
}

/// The `addr` of a JSON log line with this message.
fn listening(line: &str, message: &str) -> Option<SocketAddr> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let fields = v.get("fields").unwrap_or(&v);
    if fields.get("message")?.as_str()? != message {
        return None;
    }
    fields.get("addr")?.as_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{Drained, Running, TestCrawl, TestCrawlError, api_listening, metrics_listening};
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn a_running_engine_dropped_unwaited_is_killed() {
        let child = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let proc_dir = format!("/proc/{}", child.id());
        let running = Running::new(child);
        assert!(std::path::Path::new(&proc_dir).exists());
        drop(running);
        assert!(
            !std::path::Path::new(&proc_dir).exists(),
            "{proc_dir} still there: not killed and reaped"
        );
    }

    #[test]
    fn the_config_is_the_defaults_with_the_overrides_merged_in() {
        let seed = "http://127.0.0.1:9/".to_owned();
        let c = TestCrawl::new(
            "crawl-engine",
            std::slice::from_ref(&seed),
            "[fetch]\nconcurrency = 2\n",
        )
        .expect("test crawl");
        let text = std::fs::read_to_string(&c.config_path).expect("config");
        let t: toml::Table = toml::from_str(&text).expect("toml");
        assert_eq!(t["fetch"]["concurrency"].as_integer(), Some(2));
        assert_eq!(t["fetch"]["retry_base_ms"].as_integer(), Some(50));
        assert_eq!(t["crawl"]["seeds"][0].as_str(), Some(seed.as_str()));
        assert_eq!(
            t["resolver"]["nameservers"][0].as_str(),
            Some("127.0.0.1:9")
        );
        assert_eq!(t["observability"]["metrics_listen"].as_str(), Some(""));
        let jsonl = c.jsonl.display().to_string();
        assert_eq!(t["output"]["jsonl"].as_str(), Some(jsonl.as_str()));
    }

    #[test]
    fn bad_overrides_and_unwritable_configs_are_errors() {
        let e = TestCrawl::new("crawl-engine", &[], "[fetch\n").err();
        assert!(matches!(e, Some(TestCrawlError::Overrides(_))), "{e:?}");
        let mut c = TestCrawl::new("crawl-engine", &[], "").expect("test crawl");
        let before = std::fs::read_to_string(&c.config_path).expect("config");
        assert!(matches!(
            c.rewrite("[fetch\n"),
            Err(TestCrawlError::Overrides(_))
        ));
        let after = std::fs::read_to_string(&c.config_path).expect("config");
        assert_eq!(before, after, "a failed rewrite left the config alone");
        c.config_path = c.dir.path().join("no-such-dir").join("config.toml");
        match c.write_raw("") {
            Err(TestCrawlError::WriteConfig { path, source }) => {
                assert!(
                    path.starts_with(c.dir.path().join("no-such-dir")),
                    "{path:?}"
                );
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
    }

    /// A wrapper comes before the binary, the binary's arguments after it; an empty one runs the binary again.
    #[test]
    fn a_wrapped_crawl_runs_the_binary_through_its_wrapper() {
        let mut c = TestCrawl::new("echo", &[], "").expect("test crawl");
        c.wrap(["env", "WRAPPED=1"]);
        let cmd = c.command();
        assert_eq!(cmd.get_program(), "env");
        let args: Vec<_> = cmd.get_args().collect();
        assert_eq!(args[..2], ["WRAPPED=1", "echo"]);
        let res = c.run(Duration::from_secs(10));
        assert_eq!(res.code(), Some(0), "{res:?}");
        let config = c.config_path.display().to_string();
        assert_eq!(
            res.stdout.trim(),
            format!("--config {config} --no-progress")
        );
        c.wrap(Vec::<String>::new());
        assert_eq!(c.command().get_program(), "echo");
    }

    #[test]
    fn a_child_that_outlives_its_deadline_is_killed() {
        let child = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sleep");
        let start = Instant::now();
        let res = Drained::new(child).finish(Duration::from_millis(200));
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(res.status.signal(), Some(9), "{res:?}");
    }

    /// A child that writes four pipes' worth to each of stdout and stderr runs to its end while nobody waits for
    /// it: its output is read from the moment it was made, and all of it comes back.
    #[test]
    fn a_drained_childs_output_is_read_before_anyone_waits_for_it() {
        let child = Command::new("sh")
            .arg("-c")
            .arg("head -c 262144 /dev/zero | tr '\\0' o; head -c 262144 /dev/zero | tr '\\0' e >&2")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        let mut d = Drained::new(child);
        let start = Instant::now();
        let exited = loop {
            if let Some(s) = d.child.try_wait().expect("try_wait") {
                break Some(s);
            }
            if start.elapsed() > Duration::from_secs(20) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(exited.is_some(), "the child blocked on a full pipe");
        let res = d.finish(Duration::from_secs(5));
        assert_eq!(res.code(), Some(0));
        assert_eq!(res.stdout.len(), 262_144);
        assert!(res.stdout.bytes().all(|b| b == b'o'));
        assert_eq!(res.stderr.len(), 262_144);
        assert!(res.stderr.bytes().all(|b| b == b'e'));
    }

    #[test]
    fn metrics_listening_reads_the_bound_address() {
        let flat = r#"{"timestamp":"t","level":"INFO","message":"metrics listening","addr":"127.0.0.1:40123","target":"x"}"#;
        assert_eq!(
            metrics_listening(flat),
            Some("127.0.0.1:40123".parse().expect("addr"))
        );
        let nested =
            r#"{"level":"INFO","fields":{"message":"metrics listening","addr":"[::1]:9464"}}"#;
        assert_eq!(
            metrics_listening(nested),
            Some("[::1]:9464".parse().expect("addr"))
        );
        for other in [
            r#"{"message":"config reloaded","addr":"127.0.0.1:1"}"#,
            r#"{"message":"metrics listening"}"#,
            "metrics listening addr=127.0.0.1:1",
            "",
        ] {
            assert_eq!(metrics_listening(other), None, "{other}");
        }
    }

    #[test]
    fn api_listening_reads_the_bound_address() {
        let line = r#"{"level":"INFO","fields":{"message":"api listening","addr":"127.0.0.1:40124","tls":false}}"#;
        assert_eq!(
            api_listening(line),
            Some("127.0.0.1:40124".parse().expect("addr"))
        );
        let metrics = r#"{"message":"metrics listening","addr":"127.0.0.1:1"}"#;
        assert_eq!(api_listening(metrics), None);
    }
}
