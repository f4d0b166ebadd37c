//! Failure handling, continued: hostile input (garbage bytes, malformed markup, odd links) causes no panic and
//! every URL still gets its record. The helpers are in `faults.rs`.

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// 8. hostile input

/// Deterministic pseudo-random bytes.
fn garbage(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_pages_and_odd_links_cause_no_panic() {
    let long = format!("/long/{}", "a".repeat(5000));
    let odd = [
        "javascript:fetch('/js/1')",
        "JavaScript:void(0)",
        "mailto:someone@example.invalid",
        "tel:+123",
        "data:text/html,<a href=/data/1>x</a>",
        "ftp://127.0.0.120/ftp/1",
        "http://[::1",
        "http://exa mple.invalid/",
        "http://",
        "https://:0/",
        "http://999.999.999.999/",
        "%zz%%",
        "",
        "#only-fragment",
        long.as_str(),
    ];
    // (path, content-type or None for no header, body)
    let never = |n: u32| html(&[format!("/never/{n}")]).into_bytes();
    let typed: Vec<(&str, Option<&str>, Vec<u8>)> = vec![
        ("/ct/octet", Some("application/octet-stream"), never(1)),
        ("/ct/png", Some("image/png"), never(2)),
        ("/ct/xml", Some("application/xml"), never(3)),
        ("/ct/empty", Some(""), never(4)),
        ("/ct/junk", Some(";;;=\"x"), garbage(3000)),
        (
            "/ct/bogus-charset",
            Some("text/html; charset=x-bogus"),
            html(&["/ok/5"]).into_bytes(),
        ),
        (
            "/ct/upper",
            Some("TEXT/HTML; Charset=UTF-8"),
            html(&["/ok/7"]).into_bytes(),
        ),
        ("/ct/untyped", None, html(&["/ok/8"]).into_bytes()),
        (
            "/ct/garbage-html",
            Some("text/html"),
            [garbage(20_000), b"<a href=\"/ok/6\">".to_vec()].concat(),
        ),
    ];
    let mut root: Vec<u8> = b"<!DOCTYPE html><html><head><title>bad</title><body><div><p><table><tr><td>\n\
          <a href=\"/ok/1\">quoted<b><i></a></b>\n<a href=/ok/2>unquoted\n<A HREF='/ok/3'>upper</A>\n\
          <a href=\"  /ok/4  \">spaces</a><<<>>></div></div></span>\n<a href\n<a =\"x\" href=>\n"
        .to_vec();
    for h in odd.iter().chain(typed.iter().map(|(p, _, _)| p)) {
        root.extend_from_slice(format!("<a href=\"{h}\">odd</a>\n").as_bytes());
    }
    root.extend_from_slice(&garbage(4096));
    root.extend_from_slice(b"\0\0<a href=\"\xff\xfe/bin\0ary\">bin</a><!-- unterminated");
    let mut routes = vec![("/".into(), Route::ok(root))];
    for (path, ct, body) in typed {
        let mut r = Route::new(200).body(body);
        if let Some(ct) = ct {
            r = r.header("content-type", ct);
        }
        routes.push((path.into(), r));
    }
    let site = start(120, routes).await;
    let crawl = TestCrawl::new(ENGINE, &[site.seed_url()], "").expect("test crawl");
    let out = run(&crawl, None).await;
    out.assert_ok();
    assert_eq!(out.summary_u64("panics"), 0, "stderr:\n{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "stderr:\n{}", out.stderr);
    let m = index(crawl.records());
    for url in m.keys() {
        let http = url.starts_with("http://") || url.starts_with("https://");
        assert!(http, "only http(s) urls are recorded: {url}");
    }
    for p in [
        "/ok/1", "/ok/2", "/ok/3", "/ok/4", "/ok/7", "/ct/png", "/ct/junk",
    ] {
        assert!(m.contains_key(&site.url(0, p)), "{p} followed and recorded");
    }
    for req in site.requests() {
        let path = req.path_only();
        let bad = ["/never/", "/js/", "/data/", "/ftp/"]
            .iter()
            .any(|b| path.starts_with(b));
        assert!(
            !bad && !path.contains("mailto"),
            "followed a link it must not follow: {path}"
        );
    }
}
