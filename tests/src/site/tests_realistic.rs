//! Tests of the realistic corpus mode: the expected crawl is the plain mode's, `expected()` agrees with a BFS crawl
//! of the served pages, pages are 5 to 60 KB with documentation-like markup, and every link is found by scanning
//! for `href="`.

use std::collections::{BTreeMap, BTreeSet};

use super::graph::{Kind, Target, nav_links, page_links};
use super::tests::{client, fetch, text};
use super::tests_bfs::{bfs_crawl, hrefs, resolve};
use super::{ExpectOptions, Expected, Site, SiteSpec};

fn spec(realistic: bool, first_octet: u8) -> SiteSpec {
    SiteSpec {
        hosts: 2,
        pages_per_host: 120,
        links_per_page: 6,
        gzip: false,
        realistic,
        first_octet,
        ..SiteSpec::small()
    }
}

/// `expected` with every URL's origin replaced by its host index, so two sites on other ports compare.
fn by_host(site: &Site, e: &Expected) -> Vec<BTreeSet<String>> {
    let strip = |u: &String| {
        (0..site.hosts())
            .find_map(|h| u.strip_prefix(site.base(h)).map(|p| format!("{h}{p}")))
            .unwrap_or_else(|| u.clone())
    };
    let set = |s: &BTreeSet<String>| s.iter().map(strip).collect::<BTreeSet<_>>();
    let redirects: BTreeSet<String> = e
        .redirects
        .iter()
        .map(|(k, v)| format!("{} -> {}", strip(k), strip(v)))
        .collect();
    vec![
        set(&e.fetched_ok),
        redirects,
        set(&e.not_found),
        set(&e.robots_excluded),
        set(&e.never),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn realistic_mode_keeps_the_expected_crawl_and_agrees_with_a_bfs_crawl() {
    let plain = Site::start(spec(false, 50)).await.unwrap();
    let real = Site::start(spec(true, 52)).await.unwrap();
    let unlimited = [
        ExpectOptions::default(),
        ExpectOptions {
            respect_robots: false,
            follow_sitemaps: false,
            max_depth: None,
        },
    ];
    for opts in unlimited {
        for seeds in [&[0][..], &[0, 1]] {
            let (p, r) = (
                plain.expected_from(opts, seeds),
                real.expected_from(opts, seeds),
            );
            assert!(!r.fetched_ok.is_empty());
            assert_eq!(
                by_host(&plain, &p),
                by_host(&real, &r),
                "{opts:?} {seeds:?}"
            );
        }
    }
    // The header links are part of the graph: a depth limit reaches more pages than in plain mode, and exactly
    // what a crawl of the served HTML reaches.
    let depth2 = ExpectOptions {
        max_depth: Some(2),
        ..ExpectOptions::default()
    };
    assert!(real.expected(depth2).fetched_ok.len() > plain.expected(depth2).fetched_ok.len());
    for opts in [
        ExpectOptions::default(),
        depth2,
        ExpectOptions {
            max_depth: Some(1),
            respect_robots: false,
            follow_sitemaps: false,
        },
    ] {
        assert_eq!(
            bfs_crawl(&real, opts).await,
            real.expected(opts),
            "{opts:?}"
        );
    }
}

/// Every `href="..."` value in `html`, wherever it is (the simplest scan a crawler could do).
fn href_scan(html: &str) -> Vec<&str> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn realistic_pages_are_5_to_60_kb_and_every_link_is_a_plain_href() {
    let site = Site::start(spec(true, 54)).await.unwrap();
    let s = site.spec().clone();
    let c = client();
    let mut sizes = BTreeMap::new();
    let mut with = BTreeMap::<&str, usize>::new();
    let (mut graph, mut nav) = (Vec::new(), Vec::new());
    for host in 0..s.hosts {
        for n in 0..s.pages_per_host {
            let url = site.page_url(host, n);
            let (status, _, body) = fetch(&c, &url).await;
            assert_eq!(status, 200, "{url}");
            assert_eq!(fetch(&c, &url).await.2, body, "{url} is deterministic");
            sizes.insert((host, n), body.len());
            let html = text(&body);
            // Every href is an <a> (nothing hides in scripts, styles or code), ...
            let scanned = href_scan(&html);
            let anchors = hrefs(&html);
            assert_eq!(scanned.len(), anchors.len(), "{url}");
            let found: BTreeSet<String> = scanned.iter().map(|h| resolve(&url, h)).collect();
            // ... the scan finds every graph link and every header link, and nothing else but the page itself.
            page_links(&s, host, n, &mut graph);
            nav_links(&s, host, n, &mut nav);
            assert!(
                (30..=80).contains(&nav.len()),
                "{url}: {} nav links",
                nav.len()
            );
            let mut want: BTreeSet<String> = graph
                .iter()
                .chain(&nav)
                .map(|l| {
                    let mut u = site.base(l.target.host).to_owned();
                    l.target.write_path(&mut u);
                    u
                })
                .collect();
            want.insert(url.clone());
            assert_eq!(found, want, "{url}");
            let nofollow: BTreeSet<String> = anchors
                .iter()
                .filter(|(_, nf)| *nf)
                .map(|(h, _)| resolve(&url, h))
                .collect();
            assert_eq!(
                nofollow,
                BTreeSet::from([site.url(host, &format!("/nofollow/{n}"))])
            );
            let header = &html[html.find("<header").unwrap()..html.find("</header>").unwrap()];
            assert_eq!(href_scan(header).len(), nav.len(), "{url}");
            for tag in [
                "<style>",
                "<script>",
                "<aside",
                "<h2 id=",
                "<p>",
                "<code>",
                "<pre><code",
                "<table",
                "<img ",
                "<em>",
                "class=\"",
                "id=\"",
            ] {
                if html.contains(tag) {
                    *with.entry(tag).or_default() += 1;
                }
            }
        }
    }
    // Leaf pages share the layout, without links.
    for (kind, n) in [(Kind::Private, 3), (Kind::Nofollow, 5), (Kind::Orphan, 1)] {
        let mut path = String::new();
        Target { host: 1, kind, n }.write_path(&mut path);
        let (status, _, body) = fetch(&c, &site.url(1, &path)).await;
        assert_eq!(status, 200, "{path}");
        let html = text(&body);
        assert!(
            html.contains("<pre><code") || html.contains("<p>"),
            "{path}"
        );
        assert!(
            href_scan(&html).iter().all(|h| h.starts_with('#')),
            "{path}"
        );
        sizes.insert((9, n + 1000 * kind as usize), body.len());
    }
    let (min, max) = (
        *sizes.values().min().unwrap(),
        *sizes.values().max().unwrap(),
    );
    assert!(min >= 5_000 && max <= 60_000, "sizes {min}..{max}");
    assert!(min < 12_000 && max > 40_000, "sizes spread: {min}..{max}");
    let pages = s.hosts * s.pages_per_host;
    for (tag, count) in &with {
        let sometimes = ["<table", "<em>"];
        let floor = if sometimes.contains(tag) {
            pages * 2 / 5
        } else {
            pages
        };
        assert!(*count >= floor, "{tag} on {count} of {pages} pages");
    }
    assert_eq!(with.len(), 12, "{with:?}");
}
