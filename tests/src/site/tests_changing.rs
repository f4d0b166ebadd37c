//! Tests of changing mode over real HTTP: versions that follow the site's clock, validators and 304s, misbehaving
//! hosts, sitemaps with `<lastmod>`, new pages, and the expected crawl when sitemaps list every page.

use std::collections::BTreeMap;
use std::time::Duration;

use super::conditional::w3c_date;
use super::tests::{between, client, fetch, fetch_with, text};
use super::tests_bfs::bfs_crawl;
use super::*;

const EPOCH: u64 = 1_700_000_000;

fn spec(hosts: usize, misbehaving: &[(usize, Misbehavior)]) -> SiteSpec {
    SiteSpec {
        hosts,
        pages_per_host: 12,
        gzip: false,
        changing: Some(ChangingSpec {
            misbehaving: misbehaving.iter().copied().collect::<BTreeMap<_, _>>(),
            new_pages: 2,
            new_every_s: 500,
            ..ChangingSpec::default()
        }),
        ..SiteSpec::small()
    }
}

/// The path of a page of `host` whose class satisfies `f`.
fn page_where(site: &Site, host: usize, f: impl Fn(ChangeClass) -> bool) -> String {
    (1..site.spec().pages_per_host)
        .map(|n| format!("/page/{n}"))
        .find(|p| site.change_class(host, p).is_some_and(&f))
        .expect("a page of that class")
}

fn periodic(c: ChangeClass) -> bool {
    matches!(c, ChangeClass::Periodic { .. })
}

fn version_of(body: &str) -> u64 {
    let v = between(body, "data-version=\"", "\"");
    v[0].parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_change_with_the_clock_and_answer_conditional_requests() {
    let site = Site::start(spec(1, &[])).await.unwrap();
    let c = client();
    let path = page_where(&site, 0, periodic);
    let url = site.url(0, &path);
    let (st, h, body) = fetch(&c, &url).await;
    assert_eq!(st, 200);
    assert_eq!(version_of(&text(&body)), 0);
    let etag0 = h["etag"].to_str().unwrap().to_owned();
    assert_eq!(Some(etag0.clone()), site.etag(0, &path, 0, false));
    assert_eq!(h["last-modified"], http_date(EPOCH).as_str());
    assert_eq!(h["date"], http_date(EPOCH).as_str());
    // the links are the plain page's
    assert!(text(&body).contains("<li><a href="));

    // same version: 304 with the validators and no body
    let (st, h, body) = fetch_with(&c, &url, &[("if-none-match", &etag0)]).await;
    assert_eq!(st, 304);
    assert!(body.is_empty());
    assert_eq!(h["etag"], etag0.as_str());
    assert_eq!(h["last-modified"], http_date(EPOCH).as_str());
    let (st, _, _) = fetch_with(&c, &url, &[("if-modified-since", &http_date(EPOCH))]).await;
    assert_eq!(st, 304);
    let weak_list = format!("\"nope\", W/{etag0}");
    assert_eq!(
        fetch_with(&c, &url, &[("if-none-match", &weak_list)])
            .await
            .0,
        304
    );
    assert_eq!(fetch_with(&c, &url, &[("if-none-match", "*")]).await.0, 304);

    // after the first change: version 1, new validators, the old ones get 200
    let first = site
        .changes_between(0, &path, EPOCH, EPOCH + 100_000)
        .unwrap()[0];
    site.clock().set_ms(first * 1000);
    assert_eq!(site.version(0, &path), Some((1, first)));
    let (st, h, body) = fetch_with(&c, &url, &[("if-none-match", &etag0)]).await;
    assert_eq!(st, 200);
    assert_eq!(version_of(&text(&body)), 1);
    let etag1 = h["etag"].to_str().unwrap().to_owned();
    assert_ne!(etag1, etag0);
    assert_eq!(h["last-modified"], http_date(first).as_str());
    assert_eq!(
        fetch_with(&c, &url, &[("if-modified-since", &http_date(EPOCH))])
            .await
            .0,
        200
    );
    assert_eq!(
        fetch_with(&c, &url, &[("if-modified-since", &http_date(first))])
            .await
            .0,
        304
    );
    // If-None-Match decides: a stale tag gets 200 although the date says unchanged
    let both = [
        ("if-none-match", etag0.as_str()),
        ("if-modified-since", &http_date(first)),
    ];
    assert_eq!(fetch_with(&c, &url, &both).await.0, 200);
    // an If-Modified-Since in the future or unparseable is ignored
    let future = http_date(first + 3_600);
    assert_eq!(
        fetch_with(&c, &url, &[("if-modified-since", &future)])
            .await
            .0,
        200
    );
    assert_eq!(
        fetch_with(&c, &url, &[("if-modified-since", "soon")])
            .await
            .0,
        200
    );

    // the request log says which requests were conditional and which got 304
    let log = site.requests();
    assert_eq!(log.len(), 11);
    assert!(!log[0].conditional && !log[0].not_modified);
    assert!(log[1].conditional && log[1].not_modified && log[1].status == 304);
    assert_eq!(log[1].if_none_match.as_deref(), Some(etag0.as_str()));
    assert!(log[5].conditional && !log[5].not_modified);
    let not_modified = log.iter().filter(|r| r.not_modified).count();
    assert_eq!(not_modified, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_versions_follow_the_ground_truth_in_every_class() {
    let site = Site::start(spec(1, &[])).await.unwrap();
    let c = client();
    let mut classes = std::collections::BTreeSet::new();
    let paths: Vec<String> = site.changing_paths(0);
    for step in 0..8u64 {
        let t = EPOCH + step * 450;
        site.clock().set_ms(t * 1000);
        for p in &paths {
            let class = site.change_class(0, p).unwrap();
            classes.insert(
                format!("{class:?}")
                    .split([' ', '{'])
                    .next()
                    .unwrap()
                    .to_owned(),
            );
            let (st, h, body) = fetch(&c, &site.url(0, p)).await;
            let truth = site.changes_between(0, p, EPOCH, t).unwrap();
            assert_eq!(st, 200, "{p}");
            assert_eq!(
                version_of(&text(&body)) as usize,
                truth.len(),
                "{p} {class:?} at {t}"
            );
            let lm = truth.last().copied().unwrap_or(EPOCH);
            assert_eq!(h["last-modified"], http_date(lm).as_str(), "{p}");
            if class == ChangeClass::Never {
                assert!(truth.is_empty());
            }
        }
    }
    assert_eq!(classes.len(), 4, "{classes:?}");
    // a body is a function of (page, version): the same version twice is the same bytes
    site.clock().set_ms(EPOCH * 1000);
    let a = fetch(&c, &site.page_url(0, 3)).await.2;
    site.clock().advance(Duration::from_secs(100_000));
    site.clock().set_ms(EPOCH * 1000);
    assert_eq!(fetch(&c, &site.page_url(0, 3)).await.2, a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_representations_have_their_own_strong_etag() {
    let site = Site::start(SiteSpec {
        gzip: true,
        ..spec(1, &[])
    })
    .await
    .unwrap();
    let c = client();
    let url = site.page_url(0, 1);
    let gz = [("accept-encoding", "gzip")];
    let (st, h, _) = fetch_with(&c, &url, &gz).await;
    assert_eq!(st, 200);
    assert_eq!(h["content-encoding"], "gzip");
    let etag = h["etag"].to_str().unwrap().to_owned();
    assert!(etag.ends_with("-gz\""), "{etag}");
    let (st, h, _) = fetch_with(&c, &url, &[gz[0], ("if-none-match", &etag)]).await;
    assert_eq!(st, 304);
    assert_eq!(h["vary"], "accept-encoding");
    // the identity representation does not match the gzip one's tag
    assert_eq!(
        fetch_with(&c, &url, &[("if-none-match", &etag)]).await.0,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_hosts_do_what_they_are_told() {
    use Misbehavior::*;
    let bad = [
        EtagChurn,
        IgnoreConditional,
        FutureLastModified,
        BadLastModified,
        AlwaysNotModified,
        NoValidators,
    ];
    let list: Vec<(usize, Misbehavior)> = bad.iter().copied().enumerate().collect();
    let site = Site::start(spec(bad.len(), &list)).await.unwrap();
    let c = client();
    let url = |h: usize| site.page_url(h, 1);

    // ETag churn: same body, a new tag every time, which never matches
    let (_, h1, b1) = fetch(&c, &url(0)).await;
    let (_, h2, b2) = fetch(&c, &url(0)).await;
    assert_eq!(b1, b2);
    assert_ne!(h1["etag"], h2["etag"]);
    let (st, h3, _) = fetch_with(
        &c,
        &url(0),
        &[("if-none-match", h2["etag"].to_str().unwrap())],
    )
    .await;
    assert_eq!(st, 200);
    assert_ne!(h3["etag"], h2["etag"]);

    // ignores conditional headers
    let (_, h, _) = fetch(&c, &url(1)).await;
    let cond = [
        ("if-none-match", h["etag"].to_str().unwrap()),
        ("if-modified-since", h["last-modified"].to_str().unwrap()),
    ];
    let (st, _, body) = fetch_with(&c, &url(1), &cond).await;
    assert_eq!(st, 200);
    assert!(!body.is_empty());

    // Last-Modified a day after the response's Date
    let (_, h, _) = fetch(&c, &url(2)).await;
    let lm = parse_http_date(h["last-modified"].to_str().unwrap()).unwrap();
    let date = parse_http_date(h["date"].to_str().unwrap()).unwrap();
    assert_eq!(lm, date + 86_400);

    // Last-Modified that is not a date
    let (st, h, _) = fetch(&c, &url(3)).await;
    assert_eq!(st, 200);
    assert_eq!(h["last-modified"], "not a date");
    assert_eq!(parse_http_date(h["last-modified"].to_str().unwrap()), None);
    assert!(h.contains_key("etag"));

    // 304 to a request without validators
    let (st, h, body) = fetch(&c, &url(4)).await;
    assert_eq!(st, 304);
    assert!(body.is_empty());
    assert!(h.contains_key("etag"));

    // no validators, conditions ignored
    let (st, h, _) = fetch_with(&c, &url(5), &[("if-none-match", "*")]).await;
    assert_eq!(st, 200);
    assert!(!h.contains_key("etag") && !h.contains_key("last-modified"));

    let log = site.requests();
    assert!(
        log.iter()
            .any(|r| r.host == 4 && !r.conditional && r.not_modified)
    );
    assert!(
        log.iter()
            .any(|r| r.host == 5 && r.conditional && !r.not_modified)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_give_true_lastmods_or_lie_and_list_new_pages_once_born() {
    let site = Site::start(spec(2, &[(1, Misbehavior::LyingSitemap)]))
        .await
        .unwrap();
    let c = client();
    let t = EPOCH + 900;
    site.clock().set_ms(t * 1000);
    let map = text(&fetch(&c, &site.url(0, "/sitemap-pages.xml")).await.2);
    let urls = between(&map, "<url>", "</url>");
    // 12 pages, 2 orphans, new page 0 (born at +500), not new page 1 (born at +1000)
    assert_eq!(urls.len(), 15, "{map}");
    for u in &urls {
        let loc = &between(u, "<loc>", "</loc>")[0];
        let path = &loc[site.base(0).len()..];
        let (_, since) = site.version(0, path).unwrap();
        assert_eq!(
            between(u, "<lastmod>", "</lastmod>")[0],
            w3c_date(since),
            "{u}"
        );
        let class = site.change_class(0, path).unwrap();
        assert_eq!(
            between(u, "<changefreq>", "</changefreq>")[0],
            class.changefreq()
        );
    }
    assert!(map.contains("/new/0</loc>") && !map.contains("/new/1</loc>"));
    assert_eq!(fetch(&c, &site.url(0, "/new/1")).await.0, 404);
    // a new page's schedule starts at its birth, the others' at the epoch
    assert_eq!(site.schedule_start(0, "/new/1"), Some(EPOCH + 1000));
    assert_eq!(site.schedule_start(0, "/page/3"), Some(EPOCH));
    assert_eq!(site.schedule_start(0, "/robots.txt"), None);
    let (st, _, body) = fetch(&c, &site.url(0, "/new/0")).await;
    assert_eq!(st, 200);
    assert!(text(&body).contains("new page 0"));
    site.clock().advance(Duration::from_secs(100));
    assert_eq!(fetch(&c, &site.url(0, "/new/1")).await.0, 200);
    assert_eq!(site.changing_paths(0).len(), 16);

    // the lying host says every URL changed a second ago
    let lie = text(&fetch(&c, &site.url(1, "/sitemap-pages.xml")).await.2);
    let now = w3c_date(site.clock().now_s() - 1);
    let lastmods = between(&lie, "<lastmod>", "</lastmod>");
    assert_eq!(lastmods.len(), 16);
    assert!(lastmods.iter().all(|l| *l == now), "{lie}");
    // its pages keep true validators
    let (_, h, _) = fetch(&c, &site.page_url(1, 1)).await;
    let (_, since) = site.version(1, "/page/1").unwrap();
    assert_eq!(h["last-modified"], http_date(since).as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expected_crawl_follows_sitemaps_that_list_every_page() {
    let mut s = spec(1, &[]);
    if let Some(ch) = s.changing.as_mut() {
        ch.new_pages = 0;
    }
    s.links_per_page = 1;
    let site = Site::start(s).await.unwrap();
    for depth in [Some(1), Some(2), None] {
        let opts = ExpectOptions {
            max_depth: depth,
            ..ExpectOptions::default()
        };
        let want = site.expected(opts);
        assert_eq!(bfs_crawl(&site, opts).await, want, "depth {depth:?}");
        // every page is in the sitemap, so depth 1 reaches them all
        assert!(want.fetched_ok.contains(&site.page_url(0, 11)), "{depth:?}");
    }
}
