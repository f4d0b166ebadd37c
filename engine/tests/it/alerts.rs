//! Alerts that act, with the real binary: the test posts Alertmanager's webhook (version 4) to `POST /v1/alerts`
//! of a crawl of the test site and watches what the crawl does. A firing `pause_host` alert pauses its host (the
//! site sees no request for it once the one in flight is done, while the other hosts go on) and its resolution
//! resumes it; a host an operator paused by hand is neither taken over nor resumed by an alert; a setting an alert
//! sets is applied to the running config and undone when the last alert holding it resolves, unless a reload set
//! the key in between; bodies that are not webhooks are 400, and the token is required as everywhere.
//!
//! Hosts use 127.0.5.1..=127.0.5.9 (this file's range; `alerts_e2e` has 127.0.5.10..=127.0.5.19).

use super::api::{Answer, api_addr, call, write};
use crate::ENGINE;
use crawl_tests::engine::{RunResult, Running, TestCrawl};
use crawl_tests::site::{Site, SiteSpec};
use crawl_tests::wait::until;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "alerts-test-token-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(30);

/// A running engine that is killed (and reaped) when dropped, so that a failing test leaves no process behind.
pub(crate) struct Engine(Option<Running>);

impl Engine {
    pub(crate) fn start(c: &TestCrawl) -> Engine {
        Engine(Some(c.start()))
    }

    pub(crate) fn running(&self) -> &Running {
        self.0.as_ref().expect("the engine runs")
    }

    /// Asks it to stop (SIGTERM) and waits for its end.
    pub(crate) async fn stop(mut self) -> RunResult {
        let r = self.0.take().expect("the engine runs");
        r.signal("TERM");
        tokio::task::spawn_blocking(move || r.wait(Duration::from_secs(60)))
            .await
            .expect("join")
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            r.signal("KILL");
            let _ = r.wait(Duration::from_secs(10));
        }
    }
}

/// `hosts` hosts of `pages` pages each, every page linking to the next one only: a crawl that goes on, one page
/// after the other, for as long as the test needs.
pub(crate) fn chain_site(first_octet: u8, hosts: usize, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts,
        pages_per_host: pages,
        links_per_page: 0,
        cross_host_ratio: 0.0,
        robots: false,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        gzip: false,
        prefix: [127, 0, 5],
        first_octet,
        ..SiteSpec::default()
    }
}

/// Config overrides: one request at a time per host, 100 ms apart, the API with the token in `token`, and
/// `extra` (alert actions, a resolver section).
fn config(token: &Path, per_host: u32, min_delay_ms: u64, extra: &str) -> String {
    format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n\
         [politeness]\nper_host_concurrency = {per_host}\nmin_delay_ms = {min_delay_ms}\n\
         [api]\nlisten = \"127.0.0.1:0\"\ntoken_file = \"{}\"\n{extra}",
        token.display()
    )
}

/// A webhook body as Alertmanager sends it, with one alert (`labels` as JSON).
fn webhook(status: &str, labels: &str, fingerprint: &str) -> String {
    format!(
        r#"{{"receiver":"crawl-engine","status":"{status}","alerts":[{{"status":"{status}","labels":{labels},
        "annotations":{{"summary":"test"}},"startsAt":"2026-12-06T10:00:00Z","endsAt":"0001-01-01T00:00:00Z",
        "generatorURL":"http://prometheus.test/graph","fingerprint":"{fingerprint}"}}],"groupLabels":{{}},
        "commonLabels":{labels},"commonAnnotations":{{}},"externalURL":"http://alertmanager.test",
        "version":"4","groupKey":"{{}}:{{}}","truncatedAlerts":0}}"#
    )
}

fn post_alert(addr: SocketAddr, status: &str, labels: &str, fingerprint: &str) -> Answer {
    call(
        addr,
        "POST",
        "/v1/alerts",
        Some(TOKEN),
        &webhook(status, labels, fingerprint),
    )
}

/// The one action of an answer: `(alert, fingerprint, action, result)` and its detail.
fn only_action(a: &Answer) -> ((String, String, String, String), String) {
    assert_eq!(a.status, 200, "{}", a.body);
    let j = a.json();
    let actions = j["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 1, "{j}");
    let s = |k: &str| actions[0][k].as_str().unwrap_or_default().to_owned();
    (
        (s("alert"), s("fingerprint"), s("action"), s("result")),
        s("detail"),
    )
}

fn get(addr: SocketAddr, path: &str) -> serde_json::Value {
    let a = call(addr, "GET", path, Some(TOKEN), "");
    assert_eq!(a.status, 200, "GET {path}: {}", a.body);
    a.json()
}

/// Requests the site received for `host`.
fn hits(site: &Site, host: usize) -> usize {
    site.requests().iter().filter(|r| r.host == host).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_firing_alert_pauses_its_host_and_its_resolution_resumes_it() {
    let site = Site::start(chain_site(1, 3, 400)).await.expect("site");
    let c = TestCrawl::new(ENGINE, &site.all_seed_urls(), "").expect("test crawl");
    let token = write(&c, "api.token", TOKEN);
    let actions = "[[api.alert_actions]]\nalert = \"HostThrottled\"\naction = \"pause_host\"\n";
    c.rewrite(&config(&token, 1, 100, actions)).expect("config");
    let engine = Engine::start(&c);
    let addr = tokio::task::block_in_place(|| api_addr(engine.running()));
    let host = |h: usize| site.spec().ip(h).to_string();
    let labels = |h: usize| format!(r#"{{"alertname":"HostThrottled","host":"{}"}}"#, host(h));

    // The token first, as on every endpoint; bodies that are not webhooks are refused naming the problem.
    let body = webhook("firing", &labels(0), "h0");
    let a = call(addr, "POST", "/v1/alerts", None, &body);
    assert_eq!(a.status, 401, "{}", a.body);
    for (bad, code) in [
        (r#"{"version": "4", "alerts": ["#, "malformed_json"),
        (r#"{"version": "4", "status": "firing"}"#, "invalid_body"),
        (
            r#"{"version": "3", "status": "firing", "alerts": []}"#,
            "unsupported_version",
        ),
    ] {
        let a = call(addr, "POST", "/v1/alerts", Some(TOKEN), bad);
        assert_eq!(
            (a.status, a.json()["error"]["code"].as_str()),
            (400, Some(code)),
            "{bad}: {}",
            a.body
        );
    }
    let a = call(
        addr,
        "POST",
        "/v1/alerts",
        Some(TOKEN),
        r#"{"version": "4"}"#,
    );
    assert!(
        a.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing field `alerts`")),
        "{}",
        a.body
    );
    until(WAIT, "every host was fetched", || {
        (0..3).all(|h| hits(&site, h) > 0)
    })
    .await;

    // Firing: host 0 is paused by the alert.
    let (what, detail) = only_action(&post_alert(addr, "firing", &labels(0), "h0"));
    let paused_at = hits(&site, 0);
    assert_eq!(
        what,
        (
            "HostThrottled".into(),
            "h0".into(),
            "pause_host".into(),
            "applied".into()
        ),
        "{detail}"
    );
    let h = get(addr, &format!("/v1/hosts/{}", host(0)));
    assert_eq!(
        (h["paused"].as_bool(), h["paused_by"].as_str()),
        (Some(true), Some("alert HostThrottled")),
        "{h}"
    );
    // The request in flight when it was paused may still arrive; none after it, while the others go on.
    let other = hits(&site, 1);
    until(WAIT, "host 1 went on after the pause", || {
        hits(&site, 1) >= other + 5
    })
    .await;
    let settled = hits(&site, 0);
    assert!(
        settled <= paused_at + 1,
        "{} requests reached the paused host after the pause",
        settled - paused_at
    );
    let (one, two) = (hits(&site, 1), hits(&site, 2));
    until(WAIT, "hosts 1 and 2 went on", || {
        hits(&site, 1) >= one + 10 && hits(&site, 2) >= two + 10
    })
    .await;
    assert_eq!(hits(&site, 0), settled, "a request reached the paused host");

    // Sent again while it fires: nothing changes.
    let (what, detail) = only_action(&post_alert(addr, "firing", &labels(0), "h0"));
    assert_eq!(what.3, "applied");
    assert!(detail.contains("by this alert"), "{detail}");

    // Resolved: resumed, and fetched again.
    let (what, detail) = only_action(&post_alert(addr, "resolved", &labels(0), "h0"));
    assert_eq!(what.3, "undone", "{detail}");
    until(WAIT, "the resumed host was fetched again", || {
        hits(&site, 0) > settled
    })
    .await;
    let h = get(addr, &format!("/v1/hosts/{}", host(0)));
    assert_eq!(h["paused"].as_bool(), Some(false), "{h}");

    // An operator's pause of the host: the alert's own pause (of the host and every host under it) is another
    // rule, so its resolution undoes that one only and the operator's stands.
    let a = call(
        addr,
        "POST",
        "/v1/pause",
        Some(TOKEN),
        &format!(r#"{{"host": "{}"}}"#, host(1)),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let (what, detail) = only_action(&post_alert(addr, "firing", &labels(1), "h1"));
    assert_eq!(what.3, "applied", "{detail}");
    let (what, detail) = only_action(&post_alert(addr, "resolved", &labels(1), "h1"));
    assert_eq!(what.3, "undone", "{detail}");
    let h = get(addr, &format!("/v1/hosts/{}", host(1)));
    assert!(
        h["paused_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("api 127.0.0.1:")),
        "{h}"
    );
    let held = hits(&site, 1);
    let two = hits(&site, 2);
    until(WAIT, "host 2 went on", || hits(&site, 2) >= two + 10).await;
    assert!(
        hits(&site, 1) <= held + 1,
        "the operator's pause was undone"
    );

    let run = engine.stop().await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let logged: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("\"alert action\""))
        .collect();
    assert_eq!(logged.len(), 5, "{}", run.stderr);
    assert!(
        logged
            .iter()
            .all(|l| l.contains("\"by\":\"alert HostThrottled\"")),
        "{logged:?}"
    );
    assert!(!run.stderr.contains(TOKEN), "the token is logged");
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setting_an_alert_sets_is_undone_unless_a_reload_set_it_since() {
    let site = Site::start(chain_site(5, 1, 600)).await.expect("site");
    let c = TestCrawl::new(ENGINE, &site.all_seed_urls(), "").expect("test crawl");
    let token = write(&c, "api.token", TOKEN);
    let extra = |mode: &str| {
        format!(
            "[resolver]\nmode = \"{mode}\"\n[[resolver.doh]]\nurl = \"https://127.0.5.9:9/dns-query\"\n\
             [[api.alert_actions]]\nalert = \"DnsPollution\"\naction = \"resolver_doh\"\n\
             [[api.alert_actions]]\nalert = \"Slow\"\naction = \"lower_concurrency\"\nfactor = 0.5\n"
        )
    };
    c.rewrite(&config(&token, 4, 100, &extra("detect")))
        .expect("config");
    let engine = Engine::start(&c);
    let addr = tokio::task::block_in_place(|| api_addr(engine.running()));
    let mode = || get(addr, "/v1/status")["config"]["resolver"]["mode"].clone();
    let per_host =
        || get(addr, "/v1/status")["config"]["politeness"]["per_host_concurrency"].clone();
    let dns = |instance: &str| format!(r#"{{"alertname":"DnsPollution","instance":"{instance}"}}"#);

    // Set while it fires, in memory only.
    let (what, detail) = only_action(&post_alert(addr, "firing", &dns("a"), "d1"));
    assert_eq!(
        what,
        (
            "DnsPollution".into(),
            "d1".into(),
            "resolver_doh".into(),
            "applied".into()
        )
    );
    assert!(
        detail.starts_with("resolver.mode = \"doh\" (was \"detect\")")
            && detail.contains("not kept across a restart"),
        "{detail}"
    );
    assert_eq!(mode(), "doh");
    // Two alerts hold it: undone when the last one resolves.
    let (what, _) = only_action(&post_alert(addr, "firing", &dns("b"), "d2"));
    assert_eq!(what.3, "applied");
    let (what, detail) = only_action(&post_alert(addr, "resolved", &dns("a"), "d1"));
    assert_eq!(what.3, "kept");
    assert!(
        detail.contains("still set by alert DnsPollution"),
        "{detail}"
    );
    assert_eq!(mode(), "doh");
    let (what, detail) = only_action(&post_alert(addr, "resolved", &dns("b"), "d2"));
    assert_eq!(what.3, "undone", "{detail}");
    assert_eq!(mode(), "detect");

    // Lower concurrency: the configured value times the factor, then back.
    let slow = r#"{"alertname":"Slow"}"#;
    assert_eq!(per_host(), 4);
    let fetch = || {
        get(addr, "/v1/status")["config"]["fetch"]["concurrency"]
            .as_u64()
            .unwrap_or(0)
    };
    let configured = fetch();
    assert!(configured >= 2, "{configured}");
    let (what, detail) = only_action(&post_alert(addr, "firing", slow, "s1"));
    assert_eq!(
        (what.2.as_str(), what.3.as_str()),
        ("lower_concurrency", "applied"),
        "{detail}"
    );
    assert_eq!(per_host(), 2);
    assert_eq!(fetch(), configured / 2, "fetch.concurrency halved too");
    let (what, _) = only_action(&post_alert(addr, "resolved", slow, "s1"));
    assert_eq!(what.3, "undone");
    assert_eq!(per_host(), 4);
    assert_eq!(fetch(), configured);

    // A reload that leaves the key alone keeps the alert's value; one that sets it ends the override, and the
    // resolution then leaves the reload's value.
    let (what, _) = only_action(&post_alert(addr, "firing", &dns("a"), "d3"));
    assert_eq!(what.3, "applied");
    c.rewrite(&config(&token, 4, 150, &extra("detect")))
        .expect("config");
    let a = call(addr, "POST", "/v1/reload", Some(TOKEN), "");
    assert_eq!(
        a.json(),
        serde_json::json!({"outcome": "applied", "changed": ["politeness.min_delay_ms"]}),
        "{}",
        a.body
    );
    assert_eq!(mode(), "doh");
    c.rewrite(&config(&token, 4, 150, &extra("plain")))
        .expect("config");
    let a = call(addr, "POST", "/v1/reload", Some(TOKEN), "");
    assert_eq!(
        a.json(),
        serde_json::json!({"outcome": "applied", "changed": ["resolver.mode"]}),
        "{}",
        a.body
    );
    assert_eq!(mode(), "plain");
    let (what, detail) = only_action(&post_alert(addr, "resolved", &dns("a"), "d3"));
    assert_eq!(what.3, "kept", "{detail}");
    assert!(
        detail.contains("a reload set resolver.mode") && detail.contains("\"plain\" stands"),
        "{detail}"
    );
    assert_eq!(mode(), "plain");

    let run = engine.stop().await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("the reload set a key an alert had set"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("\"alert action\"") && l.contains("\"by\":\"alert Slow\"")),
        "{}",
        run.stderr
    );
    site.shutdown().await;
}
