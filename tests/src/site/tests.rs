//! Tests of the site generator: served content, override routes, observation, and `expected()` checked against an
//! independent BFS crawl over the served HTML.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{HeaderMap, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::render::accepts_gzip;
use super::tests_bfs::{hrefs, resolve};
use super::*;

pub(super) type TestClient = Client<HttpConnector, Full<Bytes>>;

pub(super) fn client() -> TestClient {
    Client::builder(TokioExecutor::new()).build_http()
}

pub(super) fn h2_client() -> TestClient {
    Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http()
}

fn request(url: &str, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    let mut b = Request::builder().uri(url);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::new())).unwrap()
}

pub(super) async fn fetch_with(
    c: &TestClient,
    url: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Bytes) {
    let resp = c.request(request(url, headers)).await.unwrap();
    let (parts, body) = resp.into_parts();
    (
        parts.status,
        parts.headers,
        body.collect().await.unwrap().to_bytes(),
    )
}

pub(super) async fn fetch(c: &TestClient, url: &str) -> (StatusCode, HeaderMap, Bytes) {
    fetch_with(c, url, &[]).await
}

pub(super) fn text(b: &Bytes) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// Everything between `<tag>` and `</tag>`.
pub(super) fn between(s: &str, open: &str, close: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find(open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(close) else { break };
        out.push(after[..j].to_owned());
        rest = &after[j + close.len()..];
    }
    out
}

#[tokio::test]
async fn robots_and_sitemaps() {
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let c = client();
    for h in 0..site.hosts() {
        let (st, hd, body) = fetch(&c, &site.url(h, "/robots.txt")).await;
        assert_eq!(st, 200);
        assert!(
            hd["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/plain")
        );
        let expect = format!(
            "User-agent: *\nDisallow: /private/\n\nSitemap: {}/sitemap.xml\n",
            site.base(h)
        );
        assert_eq!(text(&body), expect);

        let (st, _, index) = fetch(&c, &site.url(h, "/sitemap.xml")).await;
        assert_eq!(st, 200);
        let index = text(&index);
        assert!(index.contains("<sitemapindex"), "{index}");
        let children = between(&index, "<loc>", "</loc>");
        assert_eq!(children, vec![site.url(h, "/sitemap-pages.xml")]);

        let (st, _, pages) = fetch(&c, &children[0]).await;
        assert_eq!(st, 200);
        let pages = text(&pages);
        assert!(pages.contains("<urlset"));
        let locs = between(&pages, "<loc>", "</loc>");
        assert_eq!(locs, site.orphan_urls(h));
        assert_eq!(locs.len(), 2);
        for l in &locs {
            assert_eq!(fetch(&c, l).await.0, 200);
        }
    }
    site.shutdown().await;

    let spec = SiteSpec {
        robots: false,
        sitemaps: false,
        ..SiteSpec::small()
    };
    let site = Site::start(spec).await.unwrap();
    assert_eq!(fetch(&c, &site.url(0, "/robots.txt")).await.0, 404);
    assert_eq!(fetch(&c, &site.url(0, "/sitemap.xml")).await.0, 404);
    assert_eq!(fetch(&c, &site.url(0, "/orphan/0")).await.0, 404);
    assert!(site.orphan_urls(0).is_empty());

    let spec = SiteSpec {
        sitemaps: false,
        ..SiteSpec::small()
    };
    let site = Site::start(spec).await.unwrap();
    let (_, _, body) = fetch(&c, &site.url(0, "/robots.txt")).await;
    assert_eq!(text(&body), "User-agent: *\nDisallow: /private/\n");
}

#[tokio::test]
async fn redirects_and_not_found() {
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let c = client();
    let (st, hd, _) = fetch(&c, &site.url(1, "/old/5")).await;
    assert_eq!(st, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(hd["location"], site.page_url(1, 5).as_str());
    let (st, hd, _) = fetch(&c, &site.url(0, "/old/0")).await;
    assert_eq!(st, 301);
    assert_eq!(hd["location"], site.page_url(0, 0).as_str());
    assert!(site.page_url(0, 0).ends_with('/'));
    for p in [
        "/missing/3",
        "/page/0",
        "/page/007",
        "/page/30",
        "/page/x",
        "/nope",
        "/private/30",
        "/old/30",
    ] {
        let (st, _, body) = fetch(&c, &site.url(0, p)).await;
        assert_eq!(st, 404, "{p}");
        assert!(text(&body).contains("Not Found"));
    }
    assert_eq!(fetch(&c, &site.url(0, "/page/29?x=1")).await.0, 200);
    assert_eq!(fetch(&c, &site.url(0, "/private/3")).await.0, 200);
    assert_eq!(fetch(&c, &site.url(0, "/nofollow/3")).await.0, 200);

    let site = Site::start(SiteSpec {
        redirects: false,
        ..SiteSpec::small()
    })
    .await
    .unwrap();
    assert_eq!(fetch(&c, &site.url(0, "/old/5")).await.0, 404);
    let (_, _, body) = fetch(&c, &site.url(0, "/page/5")).await;
    assert!(!text(&body).contains("/old/"));
}

#[tokio::test]
async fn gzip_only_when_accepted() {
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let c = client();
    let url = site.url(0, "/page/4");
    let (_, hd, plain) = fetch(&c, &url).await;
    assert!(hd.get("content-encoding").is_none());
    let (st, hd, zipped) = fetch_with(&c, &url, &[("accept-encoding", "br, gzip;q=0.8")]).await;
    assert_eq!(st, 200);
    assert_eq!(hd["content-encoding"], "gzip");
    assert_eq!(hd["vary"], "accept-encoding");
    assert!(zipped.len() < plain.len());
    assert_eq!(gunzip(&zipped), plain.to_vec());
    let (_, hd, body) = fetch_with(
        &c,
        &site.url(0, "/robots.txt"),
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert_eq!(hd["content-encoding"], "gzip");
    assert!(
        String::from_utf8(gunzip(&body))
            .unwrap()
            .starts_with("User-agent: *")
    );
    let (_, hd, _) = fetch_with(&c, &url, &[("accept-encoding", "gzip;q=0, br")]).await;
    assert!(hd.get("content-encoding").is_none());
    let (_, hd, _) = fetch_with(
        &c,
        &site.url(0, "/missing/1"),
        &[("accept-encoding", "gzip")],
    )
    .await;
    assert!(hd.get("content-encoding").is_none());

    let site = Site::start(SiteSpec {
        gzip: false,
        ..SiteSpec::small()
    })
    .await
    .unwrap();
    let (_, hd, _) = fetch_with(&c, &site.url(0, "/page/4"), &[("accept-encoding", "gzip")]).await;
    assert!(hd.get("content-encoding").is_none());
}

#[test]
fn accept_encoding_parsing() {
    assert!(accepts_gzip("gzip"));
    assert!(accepts_gzip("deflate, GZIP;q=0.5"));
    assert!(accepts_gzip("x-gzip"));
    assert!(!accepts_gzip("gzip;q=0"));
    assert!(!accepts_gzip("gzip; q=0.0"));
    assert!(!accepts_gzip("br, deflate"));
    assert!(!accepts_gzip(""));
}

#[tokio::test]
async fn page_links_shape() {
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let c = client();
    let (_, hd, body) = fetch(&c, &site.url(0, "/page/3")).await;
    assert!(
        hd["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = text(&body);
    assert!(
        html.contains("<a href=\"/nofollow/3\" rel=\"nofollow\">"),
        "{html}"
    );
    assert!(html.contains("private/3\""));
    assert!(html.contains("missing/3\""));
    assert!(html.contains("/old/"));
    let hrefs = hrefs(&html);
    assert!(hrefs.iter().any(|(h, _)| h.starts_with("http://")));
    assert!(hrefs.iter().any(|(h, _)| h.starts_with('/')));
    assert!(
        hrefs
            .iter()
            .any(|(h, _)| !h.starts_with('/') && !h.starts_with("http"))
    );
    assert!(hrefs.iter().any(|(h, _)| h.ends_with("#top")));
    let resolved: Vec<String> = hrefs
        .iter()
        .map(|(h, _)| resolve(&site.url(0, "/page/3"), h))
        .collect();
    let unique: BTreeSet<&String> = resolved.iter().collect();
    assert!(unique.len() < resolved.len(), "expected duplicate links");
    assert!(
        resolved.contains(&site.page_url(0, 4)),
        "chain link to the next page"
    );
    // padded to about page_bytes
    let want = site.spec().page_bytes;
    assert!(
        html.len() + 100 >= want && html.len() <= want + 2048,
        "{} vs {want}",
        html.len()
    );
    // page 0 of host 0 links page 0 of host 1
    let (_, _, root) = fetch(&c, &site.seed_url()).await;
    assert!(text(&root).contains(&format!("href=\"{}\"", site.page_url(1, 0))));
}

#[tokio::test]
async fn graph_is_deterministic() {
    let a = Site::start(SiteSpec::small()).await.unwrap();
    let b = Site::start(SiteSpec::small()).await.unwrap();
    let other = Site::start(SiteSpec {
        seed: 8,
        ..SiteSpec::small()
    })
    .await
    .unwrap();
    let c = client();
    let norm = |s: &Site, body: String| body.replace(s.base(0), "H0").replace(s.base(1), "H1");
    let page_a = norm(&a, text(&fetch(&c, &a.url(1, "/page/7")).await.2));
    let page_b = norm(&b, text(&fetch(&c, &b.url(1, "/page/7")).await.2));
    let page_o = norm(&other, text(&fetch(&c, &other.url(1, "/page/7")).await.2));
    assert_eq!(page_a, page_b);
    assert_ne!(page_a, page_o);
    let set = |s: &Site| -> Vec<String> {
        let e = s.expected(ExpectOptions::default());
        e.fetched_ok
            .iter()
            .chain(e.not_found.iter())
            .map(|u| norm(s, u.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    assert_eq!(set(&a), set(&b));
}

#[tokio::test]
async fn stall_forever_until_shutdown() {
    let body = Bytes::from(vec![b'x'; 100]);
    let site = Site::builder(SiteSpec::small())
        .route(0, "/stall", Route::ok(body).stall_after(10))
        .start()
        .await
        .unwrap();
    let c = client();
    let resp = c
        .request(request(&site.url(0, "/stall"), &[]))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-length"], "100");
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first.len(), 10);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), body.frame())
            .await
            .is_err(),
        "body must stall"
    );
    assert_eq!(site.in_flight(0), 1);
    assert_eq!(site.requests()[0].end, None);
    site.shutdown().await;
    assert_eq!(site.live_tasks(), 0);
    assert_eq!(site.in_flight(0), 0);
    assert!(site.requests()[0].end.is_some());
}

#[tokio::test]
async fn stall_for_then_resume_delay_trickle_chunked() {
    let site = Site::builder(SiteSpec::small())
        .route(
            0,
            "/pause",
            Route::ok(vec![b'p'; 50]).stall_after_for(10, Duration::from_millis(150)),
        )
        .route(
            0,
            "/delay",
            Route::ok("late").delay(Duration::from_millis(150)),
        )
        .route(
            0,
            "/trickle",
            Route::ok(vec![b't'; 20]).trickle(5, Duration::from_millis(20)),
        )
        .route(0, "/chunked", Route::large(3000).chunked())
        .start()
        .await
        .unwrap();
    let c = client();
    let t = Instant::now();
    let (st, _, body) = fetch(&c, &site.url(0, "/pause")).await;
    assert_eq!((st, body.len()), (StatusCode::OK, 50));
    assert!(t.elapsed() >= Duration::from_millis(150));

    let t = Instant::now();
    let resp = c
        .request(request(&site.url(0, "/delay"), &[]))
        .await
        .unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "headers only after the delay"
    );
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), "late");

    let resp = c
        .request(request(&site.url(0, "/trickle"), &[]))
        .await
        .unwrap();
    let mut body = resp.into_body();
    let (mut frames, mut total) = (0, 0);
    let t = Instant::now();
    while let Some(f) = body.frame().await {
        let d = f.unwrap().into_data().unwrap();
        assert!(d.len() <= 5);
        total += d.len();
        frames += 1;
    }
    assert_eq!((frames, total), (4, 20));
    assert!(t.elapsed() >= Duration::from_millis(60));

    let (st, hd, body) = fetch(&c, &site.url(0, "/chunked")).await;
    assert_eq!(st, 200);
    assert!(hd.get("content-length").is_none());
    assert_eq!(hd["transfer-encoding"], "chunked");
    assert_eq!(body.len(), 3000);
    assert!(text(&body).starts_with("<!DOCTYPE html>") && text(&body).ends_with("</html>\n"));
}

#[tokio::test]
async fn sequence_retry_after_and_runtime_routes() {
    let site = Site::builder(SiteSpec::small())
        .route(
            1,
            "/robots.txt",
            Route::sequence(vec![
                Route::retry_after(503, "2"),
                Route::text(503, "busy"),
                Route::text(200, "User-agent: *\nDisallow: /\n"),
            ]),
        )
        .start()
        .await
        .unwrap();
    let c = client();
    let url = site.url(1, "/robots.txt");
    let (st, hd, _) = fetch(&c, &url).await;
    assert_eq!(
        (st, hd["retry-after"].to_str().unwrap()),
        (StatusCode::SERVICE_UNAVAILABLE, "2")
    );
    let (st, hd, _) = fetch(&c, &url).await;
    assert_eq!(st, 503);
    assert!(hd.get("retry-after").is_none());
    for _ in 0..2 {
        let (st, _, body) = fetch(&c, &url).await;
        assert_eq!(
            (st, text(&body).as_str()),
            (StatusCode::OK, "User-agent: *\nDisallow: /\n")
        );
    }
    assert_eq!(site.hits(1, "/robots.txt"), 4);
    assert_eq!(site.hits(0, "/robots.txt"), 0);
    let statuses: Vec<u16> = site.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![503, 503, 200, 200]);
    // host 0 is not overridden
    assert!(text(&fetch(&c, &site.url(0, "/robots.txt")).await.2).contains("/private/"));

    site.set_route(
        0,
        "/page/3",
        Route::redirect(302, "/page/4").header("x-test", "1"),
    );
    let (st, hd, _) = fetch(&c, &site.url(0, "/page/3")).await;
    assert_eq!(
        (
            st,
            hd["location"].to_str().unwrap(),
            hd["x-test"].to_str().unwrap()
        ),
        (StatusCode::FOUND, "/page/4", "1")
    );
    site.remove_route(0, "/page/3");
    assert_eq!(fetch(&c, &site.url(0, "/page/3")).await.0, 200);
    site.set_route(0, "/q?x=1", Route::new(418));
    assert_eq!(fetch(&c, &site.url(0, "/q?x=1")).await.0, 418);
    assert_eq!(fetch(&c, &site.url(0, "/q?x=2")).await.0, 404);
}

#[tokio::test]
async fn a_host_route_answers_every_path_without_its_own_until_removed() {
    let site = Site::builder(SiteSpec::small())
        .host_route(1, Route::retry_after(429, "1"))
        .route(1, "/robots.txt", Route::text(200, "User-agent: *\n"))
        .start()
        .await
        .unwrap();
    let c = client();
    for path in ["/", "/page/3", "/sitemap.xml", "/nothing?x=1"] {
        let (st, hd, _) = fetch(&c, &site.url(1, path)).await;
        assert_eq!(
            (st, hd["retry-after"].to_str().unwrap()),
            (StatusCode::TOO_MANY_REQUESTS, "1"),
            "{path}"
        );
    }
    // A path's own route comes first; another host is not overridden.
    assert_eq!(fetch(&c, &site.url(1, "/robots.txt")).await.0, 200);
    assert_eq!(fetch(&c, &site.page_url(0, 3)).await.0, 200);
    // Switched at run time.
    site.remove_host_route(1);
    assert_eq!(fetch(&c, &site.page_url(1, 3)).await.0, 200);
    site.set_host_route(0, Route::new(503));
    assert_eq!(fetch(&c, &site.page_url(0, 3)).await.0, 503);
    let statuses: Vec<(usize, u16)> = site.requests().iter().map(|r| (r.host, r.status)).collect();
    assert_eq!(
        statuses,
        [
            (1, 429),
            (1, 429),
            (1, 429),
            (1, 429),
            (1, 200),
            (0, 200),
            (1, 200),
            (0, 503)
        ]
    );
}

#[tokio::test]
async fn close_without_response() {
    let site = Site::builder(SiteSpec::small())
        .route(0, "/close", Route::close())
        .start()
        .await
        .unwrap();
    let c = client();
    assert!(
        c.request(request(&site.url(0, "/close"), &[]))
            .await
            .is_err()
    );
    let log = site.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].status, 0);
    assert!(log[0].end.is_some());
    assert_eq!(site.in_flight(0), 0);
}

#[tokio::test]
async fn gzip_bombs_and_large_bodies() {
    let n = 3 * 1024 * 1024 + 123;
    let site = Site::builder(SiteSpec::small())
        .route(0, "/bomb-small", Route::gzip_bomb_of(n))
        .route(0, "/bomb", Route::gzip_bomb())
        .route(0, "/tiny-bomb", Route::gzip_bomb_of(5))
        .route(0, "/large", Route::large(100_000))
        .start()
        .await
        .unwrap();
    let c = client();
    let (_, hd, z) = fetch(&c, &site.url(0, "/bomb-small")).await;
    assert_eq!(hd["content-encoding"], "gzip");
    let raw = gunzip(&z);
    assert_eq!(raw.len(), n);
    assert!(raw.iter().all(|b| *b == 0));
    assert_eq!(
        gunzip(&fetch(&c, &site.url(0, "/tiny-bomb")).await.2),
        vec![0u8; 5]
    );

    let (st, hd, z) = fetch(&c, &site.url(0, "/bomb")).await;
    assert_eq!(
        (st, hd["content-encoding"].to_str().unwrap()),
        (StatusCode::OK, "gzip")
    );
    assert!(
        z.len() > 10_000 && z.len() < 300_000,
        "bomb is {} bytes compressed",
        z.len()
    );
    // the trailer claims the full size, and the start inflates to zeros
    let isize = u32::from_le_bytes(z[z.len() - 4..].try_into().unwrap());
    assert_eq!(isize as usize, GZIP_BOMB_SIZE);
    let mut head = vec![0u8; 1 << 20];
    flate2::read::GzDecoder::new(&z[..])
        .read_exact(&mut head)
        .unwrap();
    assert!(head.iter().all(|b| *b == 0));

    let (_, hd, body) = fetch(&c, &site.url(0, "/large")).await;
    assert_eq!(hd["content-length"], "100000");
    assert_eq!(body.len(), 100_000);
}
