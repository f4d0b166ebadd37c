//! Unit tests for `logic.rs`: what a page's or a requisite's outcome carries (title, digest, links and requisites
//! judged against their scopes, what the per-page cap cut), and stylesheets fetched as requisites.

use super::*;
use crate::protocol::Timings;
use crawl_core::frontier::Entry;
use crawl_core::scope::{ScopeMode, ScopeVerdict};
use std::time::Instant;

fn policy(mode: ScopeMode) -> Arc<ScopePolicy> {
    let seed = url::Url::parse("http://a.test/").unwrap();
    Arc::new(ScopePolicy::new(mode, &[seed], Vec::new(), Vec::new(), 5))
}

pub(crate) fn settings(embeds: Option<ScopeMode>, max_links: usize) -> ParseSettings {
    ParseSettings {
        scope: policy(ScopeMode::Host),
        user_agent: "crawlbot/1.0".into(),
        max_body_bytes: 1 << 20,
        sitemap_max_bytes: 1 << 20,
        sitemap_max_urls: 100,
        max_links_per_page: max_links,
        embeds: embeds.map(policy),
        archive_level: None,
        inline_max_bytes: 0,
    }
}

pub(crate) fn job(url: &str, kind: JobKind, depth: u32) -> Job {
    let mut entry = Entry::page(url, depth, None);
    entry.kind = kind;
    Job {
        id: 1,
        host: 0,
        entry,
        started_at: Instant::now(),
        trace: Default::default(),
        gate: None,
    }
}

pub(crate) fn resp(status: u16, headers: &[(&'static str, &str)], body: &str) -> RawResponse {
    let mut map = http::HeaderMap::new();
    for (k, v) in headers {
        map.insert(*k, http::HeaderValue::from_str(v).unwrap());
    }
    RawResponse {
        status,
        headers: map,
        version: http::Version::HTTP_11,
        body: bytes::Bytes::copy_from_slice(body.as_bytes()),
        remote_addr: None,
        request_headers: http::HeaderMap::new(),
        sent_at: std::time::SystemTime::now(),
        truncated: false,
        conditional: false,
        proxy: None,
        timings: Timings::default(),
    }
}

pub(crate) const HTML: &str = r#"<html><head><title> Home   page </title>
    <link rel="stylesheet" href="/site.css"><link rel="icon" href="https://cdn.test/fav.ico"></head>
    <body><a href="/a">a</a><a href="/b">b</a><a href="/c">c</a><img src="/logo.png"></body></html>"#;

fn found(links: &[FoundLink]) -> Vec<(&str, ScopeVerdict)> {
    links.iter().map(|l| (l.url.as_str(), l.verdict)).collect()
}

#[test]
fn a_page_carries_its_title_digest_links_and_requisites() {
    let s = settings(Some(ScopeMode::Host), 100);
    let out = process_page(
        &s,
        &job("http://a.test/", JobKind::Page, 5),
        resp(200, &[("content-type", "text/html")], HTML),
    );
    assert_eq!(out.title.as_deref(), Some("Home page"));
    assert_eq!(
        out.digest,
        Some(crawl_output::warc::Sha1::of(HTML.as_bytes()).label())
    );
    // Links one deeper than the page: past max_depth 5 here; requisites at the page's own depth.
    assert!(out.links.iter().all(|l| l.verdict == ScopeVerdict::TooDeep));
    assert_eq!(
        found(&out.embeds),
        [
            ("http://a.test/site.css", ScopeVerdict::InScope),
            ("https://cdn.test/fav.ico", ScopeVerdict::OutOfScope),
            ("http://a.test/logo.png", ScopeVerdict::InScope),
        ]
    );
    assert_eq!((out.links_dropped, out.embeds_dropped), (0, 0));
}

#[test]
fn without_embeds_no_requisites_and_the_cap_comes_from_the_settings() {
    let s = settings(None, 2);
    let out = process_page(
        &s,
        &job("http://a.test/", JobKind::Page, 0),
        resp(200, &[("content-type", "text/html")], HTML),
    );
    assert!(out.embeds.is_empty());
    assert_eq!(
        found(&out.links),
        [
            ("http://a.test/a", ScopeVerdict::InScope),
            ("http://a.test/b", ScopeVerdict::InScope)
        ]
    );
    assert_eq!((out.links_found, out.links_dropped), (3, 1));
}

#[test]
fn a_stylesheet_fetched_as_a_requisite_yields_its_requisites_and_nothing_else() {
    let s = settings(Some(ScopeMode::Any), 100);
    let css =
        r#"@import "print.css"; body { background: url(../img/bg.png) } a { b: url(/img/bg.png) }"#;
    let out = process_page(
        &s,
        &job("http://a.test/css/site.css", JobKind::Embed, 2),
        resp(200, &[("content-type", "text/css; charset=utf-8")], css),
    );
    assert_eq!(
        found(&out.embeds),
        [
            ("http://a.test/css/print.css", ScopeVerdict::InScope),
            ("http://a.test/img/bg.png", ScopeVerdict::InScope),
        ]
    );
    assert!(out.links.is_empty() && out.digest.is_some());
    // An HTML body fetched as a requisite is not parsed for links.
    let out = process_page(
        &s,
        &job("http://a.test/frame.html", JobKind::Embed, 2),
        resp(200, &[("content-type", "text/html")], HTML),
    );
    assert!(out.links.is_empty() && out.embeds.is_empty() && out.title.is_none());
    assert_eq!(out.links_found, 0);
}

#[test]
fn a_requisite_redirect_is_judged_against_the_requisites_scope() {
    let s = settings(Some(ScopeMode::Any), 100);
    let moved = [("location", "https://cdn.test/logo.png")];
    let out = process_page(
        &s,
        &job("http://a.test/logo.png", JobKind::Embed, 1),
        resp(301, &moved, ""),
    );
    let target = out.redirect_to.unwrap().unwrap();
    assert_eq!(target.verdict, ScopeVerdict::InScope);
    let out = process_page(
        &s,
        &job("http://a.test/page", JobKind::Page, 1),
        resp(301, &moved, ""),
    );
    let target = out.redirect_to.unwrap().unwrap();
    assert_eq!(target.verdict, ScopeVerdict::OutOfScope);
}

#[test]
fn an_unusable_location_is_carried_with_its_reason_and_without_userinfo() {
    let s = settings(None, 100);
    let page = job("http://a.test/page", JobKind::Page, 1);
    let out = process_page(
        &s,
        &page,
        resp(302, &[("location", "http://u:pw@[bad/x")], ""),
    );
    assert_eq!(
        out.redirect_to,
        Some(Err(RedirectError::Unusable {
            location: "http://***@[bad/x".to_owned(),
            reason: canon::CanonError::Parse(url::ParseError::InvalidIpv6Address),
        }))
    );
    let out = process_page(&s, &page, resp(301, &[("location", "ftp://a.test/f")], ""));
    assert!(
        matches!(
            &out.redirect_to,
            Some(Err(RedirectError::Unusable {
                reason: canon::CanonError::UnsupportedScheme(scheme),
                ..
            })) if scheme == "ftp"
        ),
        "{:?}",
        out.redirect_to
    );
    let out = process_page(&s, &page, resp(302, &[], ""));
    assert_eq!(out.redirect_to, None, "no Location");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn page_of(r: JobResult) -> PageOutcome {
    match r {
        JobResult::Page(p) => *p,
        other => panic!("not a page: {other:?}"),
    }
}

fn declined(i: Inline) -> RawResponse {
    match i {
        Inline::Declined(back) => back.0,
        Inline::Done(r) => panic!("parsed inline: {r:?}"),
    }
}

#[test]
fn a_small_page_parsed_inline_gives_what_the_parser_threads_give() {
    let mut s = settings(None, 100);
    s.inline_max_bytes = 4096;
    let j = job("http://a.test/", JobKind::Page, 0);
    let html = [("content-type", "text/html")];
    let gz = [("content-type", "text/html"), ("content-encoding", "gzip")];
    for (headers, body) in [
        (&html[..], HTML.as_bytes().to_vec()),
        (&gz[..], gzip(HTML.as_bytes())),
    ] {
        let mut r = resp(200, headers, "");
        r.body = bytes::Bytes::from(body);
        let Inline::Done(inline) = process_inline(&s, &j, r.clone(), None) else {
            panic!("declined a page of {} bytes", r.body.len());
        };
        let (a, b) = (page_of(inline), page_of(process_at(&s, &j, r, None)));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert!(
            a.title.is_some() && !a.links.is_empty() && a.digest.is_some(),
            "{a:?}"
        );
        assert_eq!(a.content_length, HTML.len() as u64);
    }
}

#[test]
fn what_could_take_long_is_declined_untouched() {
    let mut s = settings(None, 100);
    s.inline_max_bytes = HTML.len() - 1;
    let page = job("http://a.test/", JobKind::Page, 0);
    let html = [("content-type", "text/html")];
    // Larger than the bound on the wire.
    let back = declined(process_inline(&s, &page, resp(200, &html, HTML), None));
    assert_eq!(back.body, HTML.as_bytes());
    // Small on the wire, larger than the bound once decoded: declined after a decode cut off at the bound.
    let body = gzip(HTML.as_bytes());
    assert!(body.len() <= s.inline_max_bytes);
    let mut r = resp(200, &[("content-encoding", "gzip")], "");
    r.body = bytes::Bytes::from(body.clone());
    let back = declined(process_inline(&s, &page, r, None));
    assert_eq!(back.body, body, "the body handed back is the one read");
    // Robots.txt, sitemaps, WARC output, a truncated body, and the bound 0 always go to the parser threads.
    s.inline_max_bytes = 1 << 16;
    for kind in [JobKind::Robots, JobKind::Sitemap] {
        declined(process_inline(
            &s,
            &job("http://a.test/x", kind, 0),
            resp(200, &[], "x"),
            None,
        ));
    }
    let mut truncated = resp(200, &html, HTML);
    truncated.truncated = true;
    declined(process_inline(&s, &page, truncated, None));
    let mut archived = s.clone();
    archived.archive_level = Some(1);
    declined(process_inline(
        &archived,
        &page,
        resp(200, &html, HTML),
        None,
    ));
    s.inline_max_bytes = 0;
    declined(process_inline(&s, &page, resp(200, &html, HTML), None));
}

#[test]
fn a_body_over_max_body_bytes_is_recorded_too_large_inline_as_on_the_parser_threads() {
    // The bound at or above max_body_bytes: decoding past it is the page's own error, not a reason to decline.
    let mut s = settings(None, 100);
    s.max_body_bytes = 100;
    s.inline_max_bytes = 4096;
    let body = gzip(HTML.as_bytes());
    let mut r = resp(200, &[("content-encoding", "gzip")], "");
    r.body = bytes::Bytes::from(body);
    let j = job("http://a.test/", JobKind::Page, 0);
    let Inline::Done(done) = process_inline(&s, &j, r.clone(), None) else {
        panic!("declined");
    };
    let (a, b) = (page_of(done), page_of(process_at(&s, &j, r, None)));
    assert_eq!(a.body_error.as_ref().map(|e| e.0), Some(Reason::TooLarge));
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

/// The `network.protocol.version` attribute, made when compiling, names each version as the record does.
#[test]
fn the_version_attribute_names_each_version_as_the_record_does() {
    use crawl_observability::AttrValue;
    for v in [
        http::Version::HTTP_09,
        http::Version::HTTP_10,
        http::Version::HTTP_11,
        http::Version::HTTP_2,
        http::Version::HTTP_3,
    ] {
        let a = version_attr(v);
        assert_eq!(a.key, "network.protocol.version");
        let AttrValue::Preset(kv) = a.value else {
            panic!("a preset: {a:?}");
        };
        let name = version_str(v);
        assert_eq!(kv, name);
    }
}

#[test]
fn a_urlset_hands_its_entries_hints_on_by_canonical_url() {
    let body = r#"<?xml version="1.0"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one</loc><lastmod>2026-12-01T10:00:00Z</lastmod></url>
  <url><loc>not a url</loc><lastmod>2026-12-02</lastmod></url>
  <url><loc>http://a.test/two</loc></url>
  <url><loc>HTTP://A.TEST/three#x</loc><changefreq>hourly</changefreq></url>
</urlset>"#;
    let out = process_sitemap(
        &settings(None, 100),
        resp(200, &[("content-type", "application/xml")], body),
    );
    assert_eq!(out.pages.len(), 3);
    assert_eq!(
        out.hints,
        vec![
            crawl_core::frontier::SitemapHint {
                url: "http://a.test/one".into(),
                lastmod: Some("2026-12-01T10:00:00Z".into()),
                changefreq: None,
            },
            crawl_core::frontier::SitemapHint {
                url: "http://a.test/three".into(),
                lastmod: None,
                changefreq: Some("hourly".into()),
            },
        ]
    );
}
