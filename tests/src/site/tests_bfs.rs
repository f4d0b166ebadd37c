//! `expected()` checked against an independent crawl: a minimal BFS crawler over the served HTML with its own href
//! scanner and URL resolver (no regex), compared for exact URL sets under several crawl options.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

use super::tests::{between, client, fetch, text};
use super::{ExpectOptions, Expected, Site, SiteSpec};

/// `(href, rel=nofollow)` of every `<a>` in `html`.
pub(super) fn hrefs(html: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<a ") {
        let tag_end = rest[i..].find('>').map_or(rest.len(), |j| i + j);
        let tag = &rest[i..tag_end];
        if let Some(h) = tag.find("href=\"") {
            let v = &tag[h + 6..];
            if let Some(q) = v.find('"') {
                out.push((v[..q].to_owned(), tag.contains("rel=\"nofollow\"")));
            }
        }
        rest = &rest[tag_end..];
    }
    out
}

fn origin(url: &str) -> &str {
    let after = &url["http://".len()..];
    let end = after.find('/').map_or(url.len(), |i| "http://".len() + i);
    &url[..end]
}

fn normalize(path: &str) -> String {
    let segs: Vec<&str> = path.split('/').collect();
    let mut out: Vec<&str> = Vec::new();
    for (i, s) in segs.iter().enumerate().skip(1) {
        let last = i == segs.len() - 1;
        match *s {
            "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
        if last && (*s == "." || *s == "..") {
            out.push("");
        }
    }
    format!("/{}", out.join("/"))
}

/// Resolves `href` against `base` (http URLs only) and drops the fragment.
pub(super) fn resolve(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or("");
    if href.is_empty() {
        // a fragment-only reference names the document itself
        return base.split('#').next().unwrap_or(base).to_owned();
    }
    if href.starts_with("http://") {
        let o = origin(href);
        let p = &href[o.len()..];
        return format!("{o}{}", normalize(if p.is_empty() { "/" } else { p }));
    }
    let o = origin(base);
    if href.starts_with('/') {
        return format!("{o}{}", normalize(href));
    }
    let path = &base[o.len()..];
    let dir = &path[..=path.rfind('/').unwrap_or(0)];
    format!("{o}{}", normalize(&format!("{dir}{href}")))
}

#[test]
fn resolver_cases() {
    assert_eq!(resolve("http://h:1/page/3", "7"), "http://h:1/page/7");
    assert_eq!(resolve("http://h:1/page/3", "../"), "http://h:1/");
    assert_eq!(
        resolve("http://h:1/page/3", "../private/3"),
        "http://h:1/private/3"
    );
    assert_eq!(resolve("http://h:1/", "./"), "http://h:1/");
    assert_eq!(resolve("http://h:1/", "page/5#top"), "http://h:1/page/5");
    assert_eq!(resolve("http://h:1/", "http://g:2"), "http://g:2/");
    assert_eq!(resolve("http://h:1/page/3", "#sec-2"), "http://h:1/page/3");
}

/// A minimal polite crawler: robots.txt per host, sitemaps at depth 1, 301s at the same depth, nofollow skipped.
pub(super) async fn bfs_crawl(site: &Site, opts: ExpectOptions) -> Expected {
    let c = client();
    let max = opts.max_depth.unwrap_or(u32::MAX);
    let mut out = Expected::default();
    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    heap.push(Reverse((0u32, seq, site.seed_url())));
    let mut done: HashSet<String> = HashSet::new();
    let mut disallow: HashMap<String, Vec<String>> = HashMap::new();
    while let Some(Reverse((d, _, url))) = heap.pop() {
        if d > max || !done.insert(url.clone()) {
            continue;
        }
        let o = origin(&url).to_owned();
        if !disallow.contains_key(&o) {
            let (st, _, body) = fetch(&c, &format!("{o}/robots.txt")).await;
            let robots = if st == 200 {
                text(&body)
            } else {
                String::new()
            };
            let rules = robots
                .lines()
                .filter_map(|l| l.strip_prefix("Disallow: "))
                .map(str::to_owned)
                .collect();
            disallow.insert(o.clone(), rules);
            let maps: Vec<String> = robots
                .lines()
                .filter_map(|l| l.strip_prefix("Sitemap: "))
                .map(str::to_owned)
                .collect();
            if opts.follow_sitemaps && max >= 1 {
                for m in maps {
                    let index = text(&fetch(&c, &m).await.2);
                    for child in between(&index, "<loc>", "</loc>") {
                        for loc in between(&text(&fetch(&c, &child).await.2), "<loc>", "</loc>") {
                            seq += 1;
                            heap.push(Reverse((1, seq, loc)));
                        }
                    }
                }
            }
        }
        let path = &url[o.len()..];
        if opts.respect_robots && disallow[&o].iter().any(|p| path.starts_with(p.as_str())) {
            out.robots_excluded.insert(url);
            continue;
        }
        let (st, hd, body) = fetch(&c, &url).await;
        match st.as_u16() {
            200 => {
                out.fetched_ok.insert(url.clone());
                if hd["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("text/html")
                {
                    for (href, nofollow) in hrefs(&text(&body)) {
                        let target = resolve(&url, &href);
                        if nofollow {
                            out.never.insert(target);
                        } else if d < max {
                            seq += 1;
                            heap.push(Reverse((d + 1, seq, target)));
                        }
                    }
                }
            }
            301 => {
                let target = resolve(&url, hd["location"].to_str().unwrap());
                out.redirects.insert(url, target.clone());
                seq += 1;
                heap.push(Reverse((d, seq, target)));
            }
            404 => {
                out.not_found.insert(url);
            }
            s => panic!("unexpected status {s} for {url}"),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expected_agrees_with_a_bfs_crawl() {
    let site = Site::start(SiteSpec::small()).await.unwrap();
    let full = site.expected(ExpectOptions::default());
    // every linked page and every orphan is reached; nofollow targets are never fetched
    assert_eq!(full.fetched_ok.len(), site.spec().total_pages() + 4);
    assert_eq!(full.never.len(), site.spec().total_pages());
    assert_eq!(full.robots_excluded.len(), site.spec().total_pages());
    assert_eq!(full.not_found.len(), site.spec().total_pages());
    assert!(!full.redirects.is_empty());
    assert!(full.fetched_ok.contains(&site.page_url(1, 29)));
    assert!(full.never.iter().all(|u| !full.fetched_ok.contains(u)));
    let options = [
        ExpectOptions::default(),
        ExpectOptions {
            respect_robots: false,
            follow_sitemaps: false,
            max_depth: None,
        },
        ExpectOptions {
            max_depth: Some(0),
            ..ExpectOptions::default()
        },
        ExpectOptions {
            max_depth: Some(1),
            ..ExpectOptions::default()
        },
        ExpectOptions {
            max_depth: Some(2),
            follow_sitemaps: false,
            ..ExpectOptions::default()
        },
        ExpectOptions {
            max_depth: Some(3),
            respect_robots: false,
            ..ExpectOptions::default()
        },
    ];
    for opts in options {
        let want = site.expected(opts);
        let got = bfs_crawl(&site, opts).await;
        assert_eq!(got, want, "{opts:?}");
    }
    let depth0 = site.expected(ExpectOptions {
        max_depth: Some(0),
        ..ExpectOptions::default()
    });
    assert_eq!(depth0.fetched_ok, BTreeSet::from([site.seed_url()]));
    let no_robots = site.expected(ExpectOptions {
        respect_robots: false,
        ..ExpectOptions::default()
    });
    assert!(no_robots.robots_excluded.is_empty());
    assert!(no_robots.fetched_ok.contains(&site.url(0, "/private/3")));
    // the crawls never fetched a nofollow page
    let nofollow_hits = site
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/nofollow/"))
        .count();
    assert_eq!(nofollow_hits, 0);
    // seeding every host gives the same full crawl here, but lower depths per host
    let all = site.expected_from(
        ExpectOptions {
            max_depth: Some(0),
            ..ExpectOptions::default()
        },
        &[0, 1],
    );
    assert_eq!(
        all.fetched_ok,
        site.all_seed_urls().into_iter().collect::<BTreeSet<_>>()
    );
}
