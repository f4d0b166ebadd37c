//! Alerts that act, end to end, with a real Prometheus and a real Alertmanager started by the test: the test site has
//! one host answering 429 to every request; the engine exports its metrics and takes
//! `[[api.alert_actions]] alert = "Crawl429Storm", action = "pause_host", host_label = "host_group"`; Prometheus
//! scrapes it every second and evaluates THE SHIPPED `observability/deploy/alerts.yml`, alerting to Alertmanager,
//! which posts to the engine's `/v1/alerts` with the bearer token from a file (`group_wait` and `group_interval`
//! 1s, `send_resolved`).
//!
//! Only the rules' time windows are changed, so that the test takes seconds instead of minutes: the test rewrites a
//! copy of the file, every range window (`[5m]`, `[10m]`) to `[10s]` and every `for:` hold to `2s`, and asserts that
//! the rewrite changed something. Thresholds, labels and expressions are the shipped ones.
//!
//! What it shows: the 429 host gets paused (no request reaches it once those in flight are done) while the other
//! hosts keep being fetched; the host is then switched to answering 200, and since the pause keeps every request
//! away from it its 429 rate falls to zero, the alert resolves, and the resolved notification resumes the host (it
//! is fetched again). Every process the test starts is killed on every path; the waits are bounded and a failure
//! shows the processes' logs. Without `prometheus` or `prometheus-alertmanager` the test is skipped locally and fails
//! under `CI=true`.
//!
//! Hosts use 127.0.5.10..=127.0.5.12.

use super::alerts::{Engine, chain_site};
use super::api::{api_addr, call, write};
use crate::ENGINE;
use crawl_tests::engine::TestCrawl;
use crawl_tests::site::{Route, Site};
use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "alerts-e2e-token-0123456789abcdef";
/// The longest any one step may take.
const STEP: Duration = Duration::from_secs(90);
/// The 429 host.
const STORMY: usize = 1;
/// Requests at a time per host.
const PER_HOST: usize = 2;

/// A process the test started: killed and reaped when dropped. Its stdout and stderr go to `log`.
struct Proc {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn spawn(name: &'static str, mut cmd: Command, log: PathBuf) -> Proc {
        let out = File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc { name, child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The address it listens on, from its `msg="Listening on" address=IP:PORT` line (the exporter toolkit logs
    /// the address actually bound, so port 0 gives the real port).
    fn listening(&mut self) -> SocketAddr {
        let start = Instant::now();
        loop {
            let log = self.log();
            if let Some(addr) = log
                .lines()
                .filter(|l| l.contains("msg=\"Listening on\""))
                .find_map(|l| l.split("address=").nth(1))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|a| a.parse().ok())
            {
                return addr;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited ({status}) before listening:\n{log}", self.name);
            }
            assert!(
                start.elapsed() < STEP,
                "{} logged no listening address:\n{log}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shipped rules with their time windows shortened: every `[<n>m]` range to `[10s]`, every `for: <n>m` to
/// `for: 2s`. Returns the text and how many windows were changed.
fn shorten_windows(rules: &str) -> (String, usize) {
    let mut out = String::with_capacity(rules.len());
    let mut changed = 0;
    for line in rules.lines() {
        let mut line = line.to_owned();
        if let Some(rest) = line.trim_start().strip_prefix("for: ")
            && rest.trim_end().ends_with('m')
        {
            let indent = line.len() - line.trim_start().len();
            line = format!("{}for: 2s", &line[..indent]);
            changed += 1;
        }
        // `[<digits>m]` anywhere in an expression.
        let mut shortened = String::with_capacity(line.len());
        let mut rest = line.as_str();
        while let Some(open) = rest.find('[') {
            shortened.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && after[digits..].starts_with("m]") {
                shortened.push_str("[10s]");
                rest = &after[digits + 2..];
                changed += 1;
            } else {
                shortened.push('[');
                rest = after;
            }
        }
        shortened.push_str(rest);
        out.push_str(&shortened);
        out.push('\n');
    }
    (out, changed)
}

/// `GET path` of a plain HTTP server on loopback (Prometheus's API, for a failure's report).
fn http_get(addr: SocketAddr, path: &str) -> String {
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return format!("(cannot connect to {addr})");
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The processes of the test, for waits that show their logs when they fail.
struct Stack<'a> {
    engine: &'a Engine,
    alertmanager: &'a Proc,
    prometheus: &'a Proc,
    prometheus_addr: SocketAddr,
}

impl Stack<'_> {
    fn report(&self) -> String {
        let tail = |text: String, n: usize| {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        };
        format!(
            "--- prometheus alerts:\n{}\n--- prometheus log:\n{}\n--- alertmanager log:\n{}\n--- engine log:\n{}",
            tail(http_get(self.prometheus_addr, "/api/v1/alerts"), 20),
            tail(self.prometheus.log(), 40),
            tail(self.alertmanager.log(), 60),
            tail(self.engine.running().stderr_so_far(), 80),
        )
    }

    /// Polls `cond` until it holds; fails naming `what`, with every log, after [`STEP`].
    async fn until(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < STEP,
                "waited {STEP:?} in vain: {what}\n{}",
                self.report()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Requests the site received for `host`.
fn hits(site: &Site, host: usize) -> usize {
    site.requests().iter().filter(|r| r.host == host).count()
}

/// The host as the API shows it.
fn host_view(api: SocketAddr, host: &str) -> serde_json::Value {
    let a = call(api, "GET", &format!("/v1/hosts/{host}"), Some(TOKEN), "");
    if a.status == 404 {
        return serde_json::Value::Null;
    }
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

#[test]
fn shortening_the_windows_changes_minute_windows_and_holds_only() {
    let (text, changed) = shorten_windows(
        "    expr: |\n      rate(x[5m]) > 0.2 and y[1h] and z[15m] and w[a]\n    for: 10m\n    labels:\n      for: x\n",
    );
    assert_eq!(changed, 3);
    assert_eq!(
        text,
        "    expr: |\n      rate(x[10s]) > 0.2 and y[1h] and z[10s] and w[a]\n    for: 2s\n    labels:\n      for: x\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_storm_pauses_its_host_until_the_alert_resolves() {
    if !crawl_test_kit::tool::require(
        "alerts end to end",
        &["prometheus", "prometheus-alertmanager"],
        "apt-get install prometheus prometheus-alertmanager",
    ) {
        return;
    }
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../observability/deploy/alerts.yml"
    ))
    .expect("the shipped alerts.yml");
    let (rules, changed) = shorten_windows(&shipped);
    assert!(
        changed >= 10,
        "the rewrite changed {changed} windows of alerts.yml"
    );
    assert!(
        rules.contains(r#"rate(crawl_antibot_responses_total{status="429"}[10s])) > 0.2"#),
        "Crawl429Storm is not the shipped rule any more:\n{rules}"
    );

    // The site: host 1 answers 429 to everything; the seeds keep it busy with 40 URLs, the other two hosts with a
    // long chain of pages each.
    let site = Site::builder(chain_site(10, 3, 600))
        .host_route(STORMY, Route::retry_after(429, "1"))
        .start()
        .await
        .expect("site");
    let mut seeds = vec![site.page_url(0, 0), site.page_url(2, 0)];
    seeds.extend((0..40).map(|n| site.page_url(STORMY, n)));
    let c = TestCrawl::new(ENGINE, &seeds, "").expect("test crawl");
    let dir = c.dir.path().to_owned();
    let token = write(&c, "api.token", &format!("{TOKEN}\n"));
    c.rewrite(&format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n\
         [politeness]\nper_host_concurrency = {PER_HOST}\nmin_delay_ms = 100\n\
         [observability]\nmetrics_listen = \"127.0.0.1:0\"\n\
         [api]\nlisten = \"127.0.0.1:0\"\ntoken_file = \"{}\"\n\
         [[api.alert_actions]]\nalert = \"Crawl429Storm\"\naction = \"pause_host\"\nhost_label = \"host_group\"\n",
        token.display()
    ))
    .expect("config");
    let engine = Engine::start(&c);
    let (api, metrics) = tokio::task::block_in_place(|| {
        (
            api_addr(engine.running()),
            engine.running().metrics_addr(Duration::from_secs(10)),
        )
    });

    // Alertmanager: every alert to the engine's /v1/alerts, quickly, resolutions too.
    let am_config = dir.join("alertmanager.yml");
    std::fs::write(
        &am_config,
        format!(
            "route:\n  receiver: crawl-engine\n  group_by: [alertname, instance, host_group]\n  group_wait: 1s\n  \
             group_interval: 1s\n  repeat_interval: 1h\nreceivers:\n  - name: crawl-engine\n    webhook_configs:\n      \
             - url: http://{api}/v1/alerts\n        send_resolved: true\n        max_alerts: 0\n        http_config:\n          \
             authorization:\n            type: Bearer\n            credentials_file: {}\n",
            token.display()
        ),
    )
    .expect("alertmanager.yml");
    let mut cmd = Command::new("prometheus-alertmanager");
    cmd.arg(format!("--config.file={}", am_config.display()))
        .arg(format!("--storage.path={}", dir.join("am").display()))
        .arg("--web.listen-address=127.0.0.1:0")
        .arg("--cluster.listen-address=")
        .arg("--log.level=debug");
    let mut alertmanager = Proc::spawn("alertmanager", cmd, dir.join("alertmanager.log"));
    let am = tokio::task::block_in_place(|| alertmanager.listening());

    // Prometheus: scrapes the engine every second and evaluates the shipped rules (windows shortened).
    let rules_path = dir.join("alerts.yml");
    std::fs::write(&rules_path, rules).expect("alerts.yml");
    let prom_config = dir.join("prometheus.yml");
    std::fs::write(
        &prom_config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
             alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [\"{am}\"]\n\
             scrape_configs:\n  - job_name: crawl-engine\n    metrics_path: /metrics\n    static_configs:\n      \
             - targets: [\"{metrics}\"]\n",
            rules_path.display()
        ),
    )
    .expect("prometheus.yml");
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", prom_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg("--web.listen-address=127.0.0.1:0");
    let mut prometheus = Proc::spawn("prometheus", cmd, dir.join("prometheus.log"));
    let prometheus_addr = tokio::task::block_in_place(|| prometheus.listening());
    let stack = Stack {
        engine: &engine,
        alertmanager: &alertmanager,
        prometheus: &prometheus,
        prometheus_addr,
    };
    let stormy = site.spec().ip(STORMY).to_string();

    // The storm: Prometheus sees the 429s, the alert fires, Alertmanager posts it, the engine pauses the host.
    stack
        .until("the 429 host was paused by Crawl429Storm", || {
            tokio::task::block_in_place(|| host_view(api, &stormy))["paused_by"]
                == "alert Crawl429Storm"
        })
        .await;
    let paused_at = hits(&site, STORMY);
    assert!(
        site.requests()
            .iter()
            .filter(|r| r.host == STORMY)
            .all(|r| r.status == 429),
        "the stormy host answered something else than 429"
    );
    // Those in flight may still arrive; then none, while the other hosts go on.
    let (zero, two) = (hits(&site, 0), hits(&site, 2));
    stack
        .until("the other hosts went on after the pause", || {
            hits(&site, 0) >= zero + 5 && hits(&site, 2) >= two + 5
        })
        .await;
    let settled = hits(&site, STORMY);
    assert!(
        settled <= paused_at + PER_HOST,
        "{} requests reached the host after its pause\n{}",
        settled - paused_at,
        stack.report()
    );
    let (zero, two) = (hits(&site, 0), hits(&site, 2));
    stack
        .until("the other hosts kept being fetched", || {
            hits(&site, 0) >= zero + 10 && hits(&site, 2) >= two + 10
        })
        .await;
    assert_eq!(
        hits(&site, STORMY),
        settled,
        "a request reached the paused host\n{}",
        stack.report()
    );

    // The site is fine again; nothing reaches it while paused, so its 429 rate falls to zero, the alert resolves,
    // and the resolved notification resumes it.
    site.remove_host_route(STORMY);
    stack
        .until("the host was resumed and fetched again", || {
            hits(&site, STORMY) > settled
        })
        .await;
    let after: Vec<u16> = site
        .requests()
        .iter()
        .filter(|r| r.host == STORMY)
        .skip(settled)
        .map(|r| r.status)
        .collect();
    assert!(after.iter().all(|s| *s == 200), "{after:?}");
    let view = tokio::task::block_in_place(|| host_view(api, &stormy));
    assert_eq!(view["paused"], false, "{view}");
    drop(prometheus);
    drop(alertmanager);

    let run = engine.stop().await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let actions: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("\"alert action\"") && l.contains("\"action\":\"pause_host\""))
        .collect();
    for result in ["applied", "undone"] {
        assert!(
            actions
                .iter()
                .any(|l| l.contains("\"by\":\"alert Crawl429Storm\"")
                    && l.contains(&format!("\"result\":\"{result}\""))),
            "no {result} action logged: {actions:?}"
        );
    }
    assert!(!run.stderr.contains(TOKEN), "the token is logged");
    site.shutdown().await;
}
