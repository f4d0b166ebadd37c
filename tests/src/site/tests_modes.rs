//! Tests of the markup modes: links only inside `<noscript>`, and page requisites under `/static/` with the expected
//! set computed from the same functions the pages are rendered from.

use super::tests::{client, fetch, text};
use super::{ExpectOptions, Site, SiteSpec};

fn spec(noscript_links: bool, embeds: bool) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: 4,
        gzip: false,
        noscript_links,
        embeds,
        ..SiteSpec::small()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noscript_mode_puts_every_link_inside_noscript() {
    let site = Site::start(spec(true, false)).await.unwrap();
    let (status, _, body) = fetch(&client(), &site.page_url(0, 1)).await;
    assert_eq!(status, 200);
    let html = text(&body);
    let open = html.find("<noscript>").unwrap();
    let close = html.find("</noscript>").unwrap();
    let hrefs: Vec<usize> = html.match_indices("href=").map(|(i, _)| i).collect();
    assert!(!hrefs.is_empty());
    assert!(hrefs.iter().all(|i| (open..close).contains(i)), "{html}");
    // The graph, and so the expected crawl, does not change.
    let plain = Site::start(SiteSpec {
        first_octet: 20,
        ..spec(false, false)
    })
    .await
    .unwrap();
    let (a, b) = (
        site.expected(ExpectOptions::default()),
        plain.expected(ExpectOptions::default()),
    );
    assert_eq!(a.fetched_ok.len(), b.fetched_ok.len());
    assert!(a.embeds.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embeds_mode_serves_every_expected_requisite_with_its_type() {
    let site = Site::start(SiteSpec {
        first_octet: 24,
        ..spec(false, true)
    })
    .await
    .unwrap();
    let exp = site.expected(ExpectOptions::default());
    // 4 pages x 3 of their own + 5 shared by the host.
    assert_eq!(exp.embeds.len(), 4 * 3 + 5, "{:?}", exp.embeds);
    let c = client();
    for url in &exp.embeds {
        let (status, headers, body) = fetch(&c, url).await;
        assert_eq!(status, 200, "{url}");
        let ct = headers["content-type"].to_str().unwrap();
        let want = match url.rsplit('.').next().unwrap() {
            "css" => "text/css",
            "png" => "image/png",
            "ico" => "image/x-icon",
            _ => "font/woff2",
        };
        assert!(ct.starts_with(want), "{url}: {ct}");
        assert!(!body.is_empty());
    }
    let (_, _, page) = fetch(&c, &site.page_url(0, 2)).await;
    let page = text(&page);
    for p in [
        "/static/img/2.png",
        "/static/img/2-2x.png 2x",
        "url('/static/bg/2.png')",
    ] {
        assert!(page.contains(p), "{p} in {page}");
    }
    let (_, _, css) = fetch(&c, &site.url(0, "/static/site.css")).await;
    assert!(text(&css).contains("@import url(\"/static/extra.css\")"));
    for missing in ["/static/img/9.png", "/static/img/x.png", "/static/nope.css"] {
        assert_eq!(fetch(&c, &site.url(0, missing)).await.0, 404, "{missing}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_mode_holds_every_answer_for_its_delay() {
    let site = Site::start(SiteSpec {
        first_octet: 28,
        delay_ms: 300,
        ..spec(false, false)
    })
    .await
    .unwrap();
    let c = client();
    for url in [site.page_url(0, 1), site.url(0, "/robots.txt")] {
        let start = std::time::Instant::now();
        let (status, _, _) = fetch(&c, &url).await;
        assert_eq!(status, 200, "{url}");
        assert!(
            start.elapsed() >= std::time::Duration::from_millis(300),
            "{url} answered early"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_names_mode_names_every_host_in_absolute_urls() {
    let site = Site::start(SiteSpec {
        hosts: 2,
        first_octet: 26,
        cross_host_ratio: 0.5,
        host_names: true,
        ..spec(false, false)
    })
    .await
    .unwrap();
    for host in 0..2 {
        let port = site.addr(host).unwrap().port();
        assert_eq!(site.base(host), format!("http://h{host}.test:{port}"));
    }
    // The pages are served on the hosts' IPs as before; their absolute links name the hosts.
    let ip_url = format!("http://{}/", site.addr(0).unwrap());
    let (status, _, body) = fetch(&client(), &ip_url).await;
    assert_eq!(status, 200);
    let html = text(&body);
    assert!(html.contains("href=\"http://h"), "{html}");
    assert!(!html.contains("href=\"http://127."), "{html}");
    let exp = site.expected(ExpectOptions::default());
    assert!(!exp.fetched_ok.is_empty());
    assert!(
        exp.fetched_ok.iter().all(|u| u.starts_with("http://h")),
        "{:?}",
        exp.fetched_ok
    );
}
