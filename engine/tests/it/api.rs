//! The control API with the real binary: a crawl of the test site with `[api] listen = "127.0.0.1:0"` and a token
//! file; status with and without the token, errors naming fields, bodies over the cap, reloads applied and
//! refused through the SIGHUP path, HTTPS with a test CA, and `crawl-engine ctl` end to end with its exit
//! statuses (0 done, 1 nothing listening or untrusted, 2 refused).
//!
//! Hosts use 127.0.0.130..=134 (this file's range).

use crate::ENGINE;
use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crawl_tests::certs::server_cert;
use crawl_tests::engine::{RunResult, Running, TestCrawl};
use crawl_tests::site::{Site, SiteSpec};

const DEADLINE: Duration = Duration::from_secs(90);
const TOKEN: &str = "api-test-token-0123456789abcdef";

fn slow_site(first_octet: u8, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        links_per_page: 0,
        cross_host_ratio: 0.0,
        robots: false,
        sitemaps: false,
        redirects: false,
        missing: false,
        orphans: 0,
        gzip: false,
        first_octet,
        log_requests: false,
        ..SiteSpec::default()
    }
}

/// Config overrides: one request at a time `delay_ms` apart, and `api` lines in `[api]`.
fn overrides(delay_ms: u64, api: &str) -> String {
    format!(
        "[crawl]\nrespect_robots = false\nmax_depth = 1000\n[politeness]\nper_host_concurrency = 1\nmin_delay_ms = {delay_ms}\n[api]\n{api}\n"
    )
}

/// A file in the crawl's directory.
pub(crate) fn write(c: &TestCrawl, name: &str, text: &str) -> PathBuf {
    let p = c.dir.path().join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// `[api]` lines for a loopback listener on any port with the token in `token`.
fn api_lines(token: &Path, extra: &str) -> String {
    format!(
        "listen = \"127.0.0.1:0\"\ntoken_file = \"{}\"\nmax_body_bytes = 2048\n{extra}",
        token.display()
    )
}

/// An answer: status, headers (lowercase names) and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a whole HTTP/1.1 answer (`Connection: close`, body as sent or de-chunked by length).
fn parse_answer(raw: &str) -> Answer {
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no head: {raw:?}"));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {raw:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Sends a raw request text and reads the whole answer.
fn raw(addr: SocketAddr, request: &str) -> Answer {
    tokio::task::block_in_place(|| {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        s.write_all(request.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        parse_answer(&out)
    })
}

/// `method path` with `body`, with the bearer `token` if given.
pub(crate) fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> Answer {
    raw(addr, &request_text(method, path, token, body))
}

fn request_text(method: &str, path: &str, token: Option<&str>, body: &str) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: api\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Runs `crawl-engine ctl ARGS`.
fn ctl(args: &[&str]) -> Output {
    tokio::task::block_in_place(|| {
        Command::new(ENGINE)
            .arg("ctl")
            .args(args)
            .env_remove("CRAWL_ENGINE_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run ctl")
    })
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub(crate) fn api_addr(child: &Running) -> SocketAddr {
    tokio::task::block_in_place(|| child.api_addr(Duration::from_secs(10)))
}

async fn finish(child: Running) -> RunResult {
    tokio::task::spawn_blocking(move || child.wait(DEADLINE))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_refuses_strangers_and_reloads_like_sighup() {
    let site = Site::builder(slow_site(130, 40))
        .start()
        .await
        .expect("site");
    let c = TestCrawl::new(ENGINE, &[site.page_url(0, 0)], "").expect("test crawl");
    let token = write(&c, "api.token", &format!("  {TOKEN}\n"));
    c.rewrite(&overrides(400, &api_lines(&token, "")))
        .expect("config");
    let child = c.start();
    let addr = api_addr(&child);

    // No token, a wrong one: 401 without detail.
    for t in [None, Some("api-test-token-0123456789abcdeX")] {
        let a = call(addr, "GET", "/v1/status", t, "");
        assert_eq!(a.status, 401, "{}", a.body);
        assert_eq!(a.header("www-authenticate"), Some("Bearer"));
        assert_eq!(
            a.json(),
            serde_json::json!({"error": {"code": "unauthorized", "message": "unauthorized"}})
        );
    }
    let a = call(addr, "GET", "/v1/status", Some(TOKEN), "");
    assert_eq!(a.status, 200, "{}", a.body);
    let s = a.json();
    assert_eq!(s["state"], "running", "{s}");
    assert!(s["counters"]["known"].as_u64().is_some(), "{s}");
    assert_eq!(s["config"]["politeness"]["min_delay_ms"], 400);
    assert_eq!(
        s["config"]["api"]["token_file"],
        token.display().to_string()
    );
    assert!(!a.body.contains(TOKEN), "the token is shown: {}", a.body);

    // Malformed JSON and a wrong type name the field; an oversized body is 413, chunked or not.
    let a = call(addr, "POST", "/v1/pause", Some(TOKEN), r#"{"host": 5}"#);
    assert_eq!(
        (a.status, a.json()["error"]["field"].as_str()),
        (400, Some("host")),
        "{}",
        a.body
    );
    let a = call(addr, "POST", "/v1/pause", Some(TOKEN), r#"{"host": "#);
    assert_eq!(
        (a.status, a.json()["error"]["code"].as_str()),
        (400, Some("malformed_json"))
    );
    let a = call(
        addr,
        "POST",
        "/v1/urls",
        Some(TOKEN),
        r#"{"urls": ["http://a.example/", false]}"#,
    );
    assert_eq!(
        (a.status, a.json()["error"]["field"].as_str()),
        (400, Some("urls[1]"))
    );
    let big = format!(r#"{{"urls": ["http://a.example/{}"]}}"#, "x".repeat(4000));
    let a = call(addr, "POST", "/v1/urls", Some(TOKEN), &big);
    assert_eq!(
        (a.status, a.json()["error"]["code"].as_str()),
        (413, Some("payload_too_large"))
    );
    let chunk = "x".repeat(1500);
    let a = raw(
        addr,
        &format!(
            "POST /v1/urls HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5DC\r\n{chunk}\r\n5DC\r\n{chunk}\r\n0\r\n\r\n"
        ),
    );
    assert_eq!(a.status, 413, "{}", a.body);
    // Routing, and an operation the crawl does not offer yet.
    let a = call(addr, "GET", "/v1/nothing", Some(TOKEN), "");
    assert_eq!(a.status, 404);
    let a = call(addr, "DELETE", "/v1/status", Some(TOKEN), "");
    assert_eq!((a.status, a.header("allow")), (405, Some("GET")));
    let a = call(addr, "POST", "/v1/pause", Some(TOKEN), "{}");
    assert_eq!(
        (a.status, a.json()["error"]["code"].as_str()),
        (501, Some("not_implemented"))
    );
    let a = call(addr, "GET", "/v1/openapi.json", Some(TOKEN), "");
    assert_eq!(
        (a.status, a.json()["openapi"].as_str()),
        (200, Some("3.1.0"))
    );

    // ctl: a table, the JSON as is, 2 without the token, 1 with nothing listening.
    let api = format!("http://{addr}");
    let token_arg = token.display().to_string();
    let out = ctl(&["--api", &api, "--token-file", &token_arg, "status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.starts_with("state ") && table.contains("running"),
        "{table}"
    );
    assert!(table.lines().any(|l| l.starts_with("fetched ")), "{table}");
    let out = ctl(&[
        "--api",
        &api,
        "--token-file",
        &token_arg,
        "--json",
        "status",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("ctl --json prints JSON");
    assert_eq!(json["state"], "running");
    let out = ctl(&["--api", &api, "status"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("unauthorized (401)") && err.lines().count() == 1,
        "{err}"
    );
    let out = ctl(&["--api", "http://127.0.0.134:9", "status"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot reach the API at http://127.0.0.134:9"),
        "{}",
        text(&out.stderr)
    );
    let out = ctl(&["--api", &api, "--token-file", &token_arg, "pause", "a/b"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = ctl(&["--api", &api, "--token-file", &token_arg, "pause"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "501 is the server's failure: {}",
        text(&out.stderr)
    );
    // ctl finds the API and the token through --config.
    let config_arg = c.config_path.display().to_string();
    let out = ctl(&["--config", &config_arg, "reload"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the config's port is 0, not the bound one: {}",
        text(&out.stderr)
    );
    let out = ctl(&["--config", &config_arg, "--api", &api, "reload"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "config reloaded: no change\n");

    // Reloads: an invalid file keeps the running config (422), a valid one is applied (200).
    c.write_raw("[politeness]\nmin_delay_ms = \"fast\"\n")
        .expect("write config");
    let a = call(addr, "POST", "/v1/reload", Some(TOKEN), "");
    assert_eq!(
        (a.status, a.json()["outcome"].as_str()),
        (422, Some("invalid")),
        "{}",
        a.body
    );
    assert!(
        a.json()["errors"][0]
            .as_str()
            .is_some_and(|e| e.contains("min_delay_ms")),
        "{}",
        a.body
    );
    let out = ctl(&["--api", &api, "--token-file", &token_arg, "reload"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    c.rewrite(&overrides(0, &api_lines(&token, "")))
        .expect("config");
    let a = call(addr, "POST", "/v1/reload", Some(TOKEN), "");
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.json(),
        serde_json::json!({"outcome": "applied", "changed": ["politeness.min_delay_ms"]})
    );
    let a = call(addr, "GET", "/v1/status", Some(TOKEN), "");
    assert_eq!(
        a.json()["config"]["politeness"]["min_delay_ms"],
        0,
        "{}",
        a.body
    );

    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("config reloaded"), "{}", run.stderr);
    assert!(
        run.stderr.contains("reload asked through the api"),
        "{}",
        run.stderr
    );
    let action = run
        .stderr
        .lines()
        .find(|l| l.contains("api action") && l.contains("\"reload\""))
        .unwrap_or_else(|| panic!("no action line: {}", run.stderr));
    assert!(action.contains("\"peer\":\"127.0.0.1:"), "{action}");
    assert!(
        run.stderr.contains("api request unauthorized"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(TOKEN), "the token is logged");
    // The crawl went on to its end through all of it, each URL recorded once.
    let records = c.records();
    let urls: std::collections::BTreeSet<&str> = records.iter().map(|r| r.url.as_str()).collect();
    assert!(
        records.len() >= 40 && urls.len() == records.len(),
        "{} records",
        records.len()
    );
    site.shutdown().await;
}

/// A GET over TLS trusting `ca_pem` only.
fn tls_get(addr: SocketAddr, ca_pem: &str, path: &str) -> Answer {
    use rustls::pki_types::pem::PemObject as _;
    tokio::task::block_in_place(|| {
        let mut roots = rustls::RootCertStore::empty();
        let ca = rustls::pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("ca");
        roots.add(ca).expect("root");
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
        let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("conn");
        let sock = std::net::TcpStream::connect(addr).expect("connect");
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(request_text("GET", path, Some(TOKEN), "").as_bytes())
            .expect("write");
        let mut out = Vec::new();
        // The server closes without close_notify only on error; an unexpected EOF after the answer is fine.
        let _ = tls.read_to_end(&mut out);
        parse_answer(&String::from_utf8_lossy(&out))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_over_tls_is_https_only() {
    let site = Site::builder(slow_site(131, 40))
        .start()
        .await
        .expect("site");
    let c = TestCrawl::new(ENGINE, &[site.page_url(0, 0)], "").expect("test crawl");
    let certs = server_cert("api.test").expect("certificates");
    let token = write(&c, "api.token", TOKEN);
    let cert = write(&c, "api.crt", &certs.cert_pem);
    let key = write(&c, "api.key", &certs.key_pem);
    let ca = write(&c, "ca.crt", &certs.ca_pem);
    let tls = format!(
        "cert_file = \"{}\"\nkey_file = \"{}\"\n",
        cert.display(),
        key.display()
    );
    c.rewrite(&overrides(400, &api_lines(&token, &tls)))
        .expect("config");
    let child = c.start();
    let addr = api_addr(&child);

    let a = tls_get(addr, &certs.ca_pem, "/v1/status");
    assert_eq!(
        (a.status, a.json()["state"].as_str()),
        (200, Some("running")),
        "{}",
        a.body
    );
    // Plain HTTP gets no HTTP answer.
    let plain = tokio::task::block_in_place(|| {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        s.write_all(request_text("GET", "/v1/status", Some(TOKEN), "").as_bytes())
            .expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        out
    });
    assert!(!plain.starts_with(b"HTTP/1.1"), "{}", text(&plain));

    let api = format!("https://127.0.0.1:{}", addr.port());
    let (token_arg, ca_arg) = (token.display().to_string(), ca.display().to_string());
    let out = ctl(&[
        "--api",
        &api,
        "--token-file",
        &token_arg,
        "--ca-file",
        &ca_arg,
        "--json",
        "status",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        json["config"]["api"]["cert_file"],
        cert.display().to_string()
    );
    // Without the test CA the server is not trusted: nothing reached.
    let out = ctl(&["--api", &api, "--token-file", &token_arg, "status"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    child.signal("TERM");
    let run = finish(child).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("\"tls\":true"), "{}", run.stderr);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_api_setting_refuses_to_start() {
    let site = Site::builder(slow_site(132, 2))
        .start()
        .await
        .expect("site");
    let c = TestCrawl::new(ENGINE, &[site.page_url(0, 0)], "").expect("test crawl");
    let token = write(&c, "api.token", TOKEN);
    let short = write(&c, "short.token", "s3cret\n");
    let garbage = write(&c, "garbage.pem", "not a certificate\n");
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let cases = [
        (
            api_lines(
                &token,
                &format!(
                    "cert_file = \"{0}\"\nkey_file = \"{0}\"\n",
                    garbage.display()
                ),
            ),
            "api.cert_file: ",
        ),
        (api_lines(&short, ""), "api.token_file: "),
        (
            format!("listen = \"{}\"\n", held.local_addr().expect("addr")),
            "api.listen: cannot listen on",
        ),
        (
            "listen = \"0.0.0.0:0\"\n".to_owned(),
            "`api.listen`: 0.0.0.0:0 is reachable from other machines",
        ),
        (
            api_lines(&token, "cert_file = \"api.crt\"\n"),
            "`api.cert_file`: needs `key_file` too",
        ),
    ];
    for (api, expected) in cases {
        c.rewrite(&overrides(0, &api)).expect("config");
        let run = tokio::task::block_in_place(|| c.run(DEADLINE));
        assert_eq!(run.code(), Some(2), "{api}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{api}: {}", run.stderr);
        assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
    }
    assert!(c.records().is_empty(), "a refused start crawled");
    site.shutdown().await;
}
