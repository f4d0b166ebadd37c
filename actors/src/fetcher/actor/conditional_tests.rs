//! Revisits on a loopback site that records the requests it gets: a job whose entry carries the validators of the
//! URL's last fetch sends them (`If-None-Match`, `If-Modified-Since`), a first visit and robots.txt do not; a 304
//! is an outcome without a body that repeats the validators, and a 304 to a request without validators fails.

use super::*;
use crate::fetcher::http::HttpSettings;
use crate::parser::logic::tests::{job, settings};
use crate::parser::logic::{UNEXPECTED_304, process};
use crawl_core::record::Outcome as RecordOutcome;
use crawl_core::recrawl::{Capture, Prior, Validators};
use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The validators of the page's only version.
const ETAG: &str = "\"v1\"";
const LAST_MODIFIED: &str = "Sun, 06 Dec 2026 10:00:00 GMT";
/// [`LAST_MODIFIED`] as Unix seconds.
const LAST_MODIFIED_S: u64 = 1_796_551_200;

/// A request as the site saw it: its path and its header lines, names lowercased.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A site on 127.0.0.1 (keep-alive) that records every request. `/page` (and `/robots.txt`, `/sitemap.xml`)
/// answers `304 Not Modified` when the request's `If-None-Match` holds the page's ETag or its
/// `If-Modified-Since` is not before its Last-Modified, and `200` with both validators otherwise; `/always-304`
/// answers 304 to anything (a broken server).
async fn site() -> (std::net::SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                loop {
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&got).to_string();
                    let mut lines = head.split("\r\n");
                    let path = lines
                        .next()
                        .and_then(|l| l.split(' ').nth(1))
                        .unwrap_or("")
                        .to_owned();
                    let headers: Vec<(String, String)> = lines
                        .filter_map(|l| l.split_once(':'))
                        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                        .collect();
                    let req = Seen { path, headers };
                    let since = req
                        .header("if-modified-since")
                        .and_then(|v| httpdate::parse_http_date(v).ok());
                    let last = httpdate::parse_http_date(LAST_MODIFIED).unwrap();
                    let unchanged = req.header("if-none-match") == Some(ETAG)
                        || since.is_some_and(|s| s >= last);
                    let resp = if req.path == "/always-304" || unchanged {
                        format!(
                            "HTTP/1.1 304 Not Modified\r\netag: {ETAG}\r\nlast-modified: {LAST_MODIFIED}\r\n\r\n"
                        )
                    } else {
                        let body = "<html><body><a href=\"/next\">next</a></body></html>";
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\netag: {ETAG}\r\n\
                             last-modified: {LAST_MODIFIED}\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        )
                    };
                    log.lock().unwrap().push(req);
                    if conn.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

fn client() -> Rc<HttpClient> {
    Rc::new(
        HttpClient::new(HttpSettings {
            allow_private_networks: true,
            keep_request_headers: true,
            ..HttpSettings::default()
        })
        .unwrap(),
    )
}

/// A job for `url` of `kind`, a revisit when `validators` is given.
fn revisit(url: &str, kind: JobKind, validators: Option<Validators>) -> Job {
    let mut j = job(url, kind, 0);
    j.entry.prior = validators.map(|validators| {
        Box::new(Prior {
            visits: 1,
            fetched_at_ms: 1_796_551_300_000,
            validators,
            capture: Some(Capture {
                fetched_at_ms: 1_796_551_300_000,
                digest: crawl_core::recrawl::DigestKey::of("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
            }),
            interval_ds: 36_000,
        })
    });
    j
}

/// Runs `job` through the fetcher: the response it hands to the parser.
async fn fetch(client: &Rc<HttpClient>, job: Job) -> Parse {
    match run_job(client.clone(), job, Faults::default(), None).await {
        Step::Parse(p) => *p,
        Step::Done(d) => panic!("no answer: {:?}", d.result),
    }
}

fn page(result: JobResult) -> PageOutcome {
    match result {
        JobResult::Page(p) => *p,
        other => panic!("not a page: {other:?}"),
    }
}

use crate::protocol::PageOutcome;

#[tokio::test]
async fn a_revisit_sends_its_validators_and_a_304_has_no_body() {
    let (addr, seen) = site().await;
    let client = client();
    let url = format!("http://{addr}/page");
    let s = settings(None, 100);

    // The first visit: no validators; the 200 exposes them for the schedule.
    let first = fetch(&client, revisit(&url, JobKind::Page, None)).await;
    assert!(!first.response.conditional);
    let out = page(process(&s, &first.job, first.response));
    assert_eq!(out.status, 200);
    assert_eq!(out.etag.as_deref(), Some(ETAG));
    assert_eq!(out.last_modified.as_deref(), Some(LAST_MODIFIED));
    assert!(out.digest.is_some() && out.links_found == 1);
    assert!(out.requested_at_ms > 0);

    // The revisit sends both; the 304 is an outcome without body, digest or links.
    let both = Validators {
        etag: Some(ETAG.into()),
        last_modified_s: Some(LAST_MODIFIED_S),
    };
    let second = fetch(&client, revisit(&url, JobKind::Page, Some(both))).await;
    assert!(second.response.conditional);
    assert_eq!(second.response.status, 304);
    assert_eq!(
        second
            .response
            .request_headers
            .get(header_name("if-none-match")),
        Some(&http::HeaderValue::from_static(ETAG))
    );
    let out = page(process(&s, &second.job, second.response));
    assert_eq!(
        (out.status, out.content_length, out.digest.as_deref()),
        (304, 0, None)
    );
    assert!(out.body_error.is_none() && out.links.is_empty() && out.redirect_to.is_none());
    assert_eq!(out.etag.as_deref(), Some(ETAG));
    assert_eq!(out.last_modified.as_deref(), Some(LAST_MODIFIED));

    // Only a Last-Modified time: If-Modified-Since as an IMF-fixdate, and the server still says 304.
    let dated = Validators {
        etag: None,
        last_modified_s: Some(LAST_MODIFIED_S),
    };
    let third = fetch(&client, revisit(&url, JobKind::Page, Some(dated))).await;
    assert_eq!(third.response.status, 304);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].header("if-none-match"), None);
    assert_eq!(seen[0].header("if-modified-since"), None);
    assert_eq!(seen[1].header("if-none-match"), Some(ETAG));
    assert_eq!(seen[1].header("if-modified-since"), Some(LAST_MODIFIED));
    assert_eq!(seen[2].header("if-none-match"), None);
    assert_eq!(seen[2].header("if-modified-since"), Some(LAST_MODIFIED));
}

fn header_name(name: &'static str) -> http::header::HeaderName {
    http::header::HeaderName::from_static(name)
}

#[tokio::test]
async fn a_304_to_a_request_without_validators_fails_the_record() {
    let (addr, seen) = site().await;
    let client = client();
    let s = settings(None, 100);
    // A first visit (no prior) to a server that answers 304 to anything.
    let url = format!("http://{addr}/always-304");
    let got = fetch(&client, revisit(&url, JobKind::Page, None)).await;
    assert!(!got.response.conditional);
    let out = page(process(&s, &got.job, got.response));
    assert_eq!(out.status, 304);
    let (reason, detail) = out.body_error.clone().expect("a failure");
    assert_eq!(
        (reason, detail.as_str()),
        (Reason::Protocol, UNEXPECTED_304)
    );
    assert_eq!(reason.outcome(), RecordOutcome::Failed);
    assert_eq!(out.digest, None);
    // A prior without validators (nothing to send) is not a conditional request either.
    let empty = fetch(
        &client,
        revisit(&url, JobKind::Page, Some(Validators::default())),
    )
    .await;
    assert!(!empty.response.conditional);
    assert!(
        page(process(&s, &empty.job, empty.response))
            .body_error
            .is_some()
    );
    // An unconditional 304 for a sitemap: its error, no pages.
    let sm = fetch(&client, revisit(&url, JobKind::Sitemap, None)).await;
    match process(&s, &sm.job, sm.response) {
        JobResult::Sitemap(o) => {
            assert_eq!(o.error.as_deref(), Some(UNEXPECTED_304));
            assert!(o.pages.is_empty());
        }
        other => panic!("not a sitemap: {other:?}"),
    }
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|r| r.header("if-none-match").is_none()
        && r.header("if-modified-since").is_none()));
}

#[tokio::test]
async fn robots_txt_is_never_conditional_and_a_sitemap_is_on_a_revisit() {
    let (addr, seen) = site().await;
    let client = client();
    let s = settings(None, 100);
    let v = Validators {
        etag: Some(ETAG.into()),
        last_modified_s: Some(LAST_MODIFIED_S),
    };
    let robots = format!("http://{addr}/robots.txt");
    let got = fetch(&client, revisit(&robots, JobKind::Robots, Some(v.clone()))).await;
    assert!(!got.response.conditional);
    assert_eq!(got.response.status, 200);
    let sitemap = format!("http://{addr}/sitemap.xml");
    let got = fetch(&client, revisit(&sitemap, JobKind::Sitemap, Some(v))).await;
    assert!(got.response.conditional);
    assert_eq!(got.response.status, 304);
    match process(&s, &got.job, got.response) {
        JobResult::Sitemap(o) => {
            assert_eq!(o.error, None, "unchanged: nothing new, no error");
            assert!(o.pages.is_empty() && o.sitemaps.is_empty());
        }
        other => panic!("not a sitemap: {other:?}"),
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].path, "/robots.txt");
    assert_eq!(seen[0].header("if-none-match"), None);
    assert_eq!(seen[0].header("if-modified-since"), None);
    assert_eq!(seen[1].path, "/sitemap.xml");
    assert_eq!(seen[1].header("if-none-match"), Some(ETAG));
}

#[tokio::test]
async fn an_etag_that_is_no_header_value_is_left_out() {
    let (addr, seen) = site().await;
    let client = client();
    let url = format!("http://{addr}/page");
    let v = Validators {
        etag: Some("\"bad\nvalue\"".into()),
        last_modified_s: None,
    };
    let got = fetch(&client, revisit(&url, JobKind::Page, Some(v))).await;
    assert!(!got.response.conditional, "nothing was sent");
    assert_eq!(got.response.status, 200);
    assert_eq!(seen.lock().unwrap()[0].header("if-none-match"), None);
}
