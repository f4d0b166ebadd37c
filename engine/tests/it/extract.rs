//! What the crawler finds in pages, end to end: links that live only in `<noscript>`, `<link rel=next>` followed
//! while icons and stylesheets are not fetched as pages, `<meta http-equiv=refresh>` targets, a page over
//! `parser.max_links_per_page` (counted on its record and in a log line), the title and digest on records, and a
//! crawl with `crawl.embeds` whose requisites are fetched once each at their page's depth and recorded with
//! `kind: "embed"`.
//!
//! Sites use `first_octet` 240..=249.

use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crawl_core::record::{Outcome, Record, RecordKind};
use crawl_output::warc::Sha1;
use crawl_tests::engine::{RunResult, TestCrawl, wait_with_deadline};
use crawl_tests::site::{ExpectOptions, Route, Site, SiteSpec};

const DEADLINE: Duration = Duration::from_secs(40);

async fn crawl_ok(seeds: &[String], overrides: &str) -> (TestCrawl, RunResult) {
    let crawl = TestCrawl::new(ENGINE, seeds, overrides).expect("test crawl");
    let cmd = crawl.command();
    let res = tokio::task::spawn_blocking(move || {
        let mut cmd = cmd;
        wait_with_deadline(cmd.spawn().expect("spawn crawl-engine"), DEADLINE)
    })
    .await
    .expect("join");
    assert_eq!(res.code(), Some(0), "stderr:\n{}", res.stderr);
    (crawl, res)
}

fn spec(first_octet: u8, pages: usize) -> SiteSpec {
    SiteSpec {
        hosts: 1,
        pages_per_host: pages,
        first_octet,
        ..SiteSpec::small()
    }
}

fn index(records: &[Record]) -> BTreeMap<String, &Record> {
    let mut out = BTreeMap::new();
    for r in records {
        assert!(
            out.insert(r.url.clone(), r).is_none(),
            "{} recorded twice",
            r.url
        );
    }
    out
}

fn fetched_200(records: &[Record]) -> BTreeSet<String> {
    records
        .iter()
        .filter(|r| r.outcome == Outcome::Fetched && r.status == Some(200) && r.kind.is_none())
        .map(|r| r.url.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_only_inside_noscript_are_all_followed() {
    let site = Site::start(SiteSpec {
        noscript_links: true,
        ..spec(240, 25)
    })
    .await
    .expect("site");
    let (crawl, _) = crawl_ok(&[site.seed_url()], "[crawl]\nscope = \"host\"\n").await;
    let records = crawl.records();
    let exp = site.expected(ExpectOptions::default());
    assert!(exp.fetched_ok.len() > 20, "{exp:?}");
    assert_eq!(fetched_200(&records), exp.fetched_ok);
    let by = index(&records);
    for (url, target) in &exp.redirects {
        assert_eq!(by[url].redirect_to.as_deref(), Some(target.as_str()));
    }
    for url in &exp.never {
        assert!(
            !by.contains_key(url),
            "nofollow inside noscript followed: {url}"
        );
    }
    site.shutdown().await;
}

const HEAD_LINKS: &str = r#"<!DOCTYPE html><html><head><title>  Chapter
    one </title>
    <link rel="next" href="/chapter-2">
    <link rel="prev" href="/chapter-0">
    <link rel="alternate icon" href="/favicon.svg">
    <link rel="icon" href="/favicon.ico">
    <link rel="stylesheet" href="/style.css">
    <link rel="preload" as="image" href="/hero.png">
    </head><body><p>no anchors at all</p></body></html>"#;

const CHAPTER_2: &str =
    "<!DOCTYPE html><html><head><title>Chapter 2</title></head><body>end</body></html>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_rel_next_is_followed_and_icons_and_stylesheets_are_not_pages() {
    let site = Site::builder(spec(242, 1))
        .route(0, "/book", Route::ok(HEAD_LINKS))
        .route(0, "/chapter-2", Route::ok(CHAPTER_2))
        .route(0, "/chapter-0", Route::ok(CHAPTER_2))
        .start()
        .await
        .expect("site");
    let book = site.url(0, "/book");
    let (crawl, _) = crawl_ok(
        std::slice::from_ref(&book),
        "[crawl]\nfollow_sitemaps = false\n",
    )
    .await;
    let records = crawl.records();
    let by = index(&records);
    let r = by[&book];
    assert_eq!(r.title.as_deref(), Some("Chapter one"));
    assert_eq!(
        r.digest.as_deref(),
        Some(Sha1::of(HEAD_LINKS.as_bytes()).label().as_str())
    );
    for path in ["/chapter-2", "/chapter-0"] {
        let c = by[&site.url(0, path)];
        assert_eq!((c.status, c.depth), (Some(200), 1), "{c:?}");
        assert_eq!(c.parent.as_deref(), Some(book.as_str()));
        assert_eq!(c.title.as_deref(), Some("Chapter 2"));
        assert_eq!(c.kind, None);
        assert_eq!(site.hits(0, path), 1);
    }
    for path in ["/favicon.svg", "/favicon.ico", "/style.css", "/hero.png"] {
        assert_eq!(site.hits(0, path), 0, "{path} fetched");
        assert!(!by.contains_key(&site.url(0, path)), "{path} recorded");
    }
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_refresh_targets_are_followed() {
    let moved =
        r#"<html><head><meta http-equiv="refresh" content="2; URL='/new-home'"></head></html>"#;
    let site = Site::builder(spec(243, 1))
        .route(0, "/old-home", Route::ok(moved))
        .route(0, "/new-home", Route::ok(CHAPTER_2))
        .start()
        .await
        .expect("site");
    let old = site.url(0, "/old-home");
    let (crawl, _) = crawl_ok(
        std::slice::from_ref(&old),
        "[crawl]\nfollow_sitemaps = false\n",
    )
    .await;
    let records = crawl.records();
    let by = index(&records);
    assert_eq!(by[&old].links, Some(1));
    let new = by[&site.url(0, "/new-home")];
    assert_eq!((new.status, new.depth), (Some(200), 1));
    assert_eq!(new.parent.as_deref(), Some(old.as_str()));
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_over_max_links_per_page_keeps_the_first_and_counts_the_rest() {
    let mut html = String::from("<html><body>");
    for i in 0..30 {
        html.push_str(&format!("<a href=\"/l/{i}\">{i}</a>\n"));
    }
    html.push_str("</body></html>");
    let site = Site::builder(spec(244, 1))
        .route(0, "/many", Route::ok(html))
        .start()
        .await
        .expect("site");
    let many = site.url(0, "/many");
    let (crawl, res) = crawl_ok(
        std::slice::from_ref(&many),
        "[crawl]\nfollow_sitemaps = false\n[parser]\nmax_links_per_page = 10\n",
    )
    .await;
    let records = crawl.records();
    let by = index(&records);
    let r = by[&many];
    assert_eq!((r.links, r.links_dropped), (Some(30), 20));
    let followed: BTreeSet<String> = records
        .iter()
        .filter(|r| r.url.contains("/l/"))
        .map(|r| r.url.clone())
        .collect();
    let first_ten: BTreeSet<String> = (0..10).map(|i| site.url(0, &format!("/l/{i}"))).collect();
    assert_eq!(followed, first_ten);
    for i in 10..30 {
        assert_eq!(site.hits(0, &format!("/l/{i}")), 0);
    }
    // One structured log line for the page (fields at the top level or under `fields`).
    let lines: Vec<serde_json::Value> = res
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v.get("fields").cloned().unwrap_or(v))
        .filter(|v| v["message"] == "references over the per-page cap dropped")
        .collect();
    assert_eq!(lines.len(), 1, "stderr:\n{}", res.stderr);
    assert_eq!(lines[0]["links_dropped"], 20);
    assert_eq!(lines[0]["embeds_dropped"], 0);
    assert_eq!(lines[0]["url"], many.as_str());
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embeds_crawl_fetches_each_requisite_once_at_its_page_depth() {
    let site = Site::start(SiteSpec {
        embeds: true,
        ..spec(246, 8)
    })
    .await
    .expect("site");
    let (crawl, _) = crawl_ok(
        &[site.seed_url()],
        "[crawl]\nscope = \"host\"\nembeds = true\n",
    )
    .await;
    let records = crawl.records();
    let by = index(&records);
    let exp = site.expected(ExpectOptions::default());
    assert!(!exp.embeds.is_empty());
    let embeds: BTreeSet<String> = records
        .iter()
        .filter(|r| r.kind == Some(RecordKind::Embed))
        .map(|r| r.url.clone())
        .collect();
    assert_eq!(embeds, exp.embeds);
    assert_eq!(fetched_200(&records), exp.fetched_ok, "pages are unchanged");
    for url in &exp.embeds {
        let r = by[url];
        assert_eq!(
            (r.outcome, r.status),
            (Outcome::Fetched, Some(200)),
            "{r:?}"
        );
        assert!(r.digest.as_deref().is_some_and(|d| d.starts_with("sha1:")));
        let path = url.trim_start_matches(site.base(0));
        assert_eq!(site.hits(0, path), 1, "{path} requested once");
        // At the depth of the page (or stylesheet) that referenced it.
        let parent = by[r.parent.as_deref().expect("a requisite has a parent")];
        assert_eq!(r.depth, parent.depth, "{r:?} from {parent:?}");
    }
    // The stylesheet's own requisites come from parsing it: the imported sheet and what that one loads.
    let font = by[&site.url(0, "/static/font.woff2")];
    assert_eq!(
        font.parent.as_deref(),
        Some(site.url(0, "/static/extra.css").as_str())
    );
    let extra = by[&site.url(0, "/static/extra.css")];
    assert_eq!(
        extra.parent.as_deref(),
        Some(site.url(0, "/static/site.css").as_str())
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_embeds_no_requisite_is_requested() {
    let site = Site::start(SiteSpec {
        embeds: true,
        ..spec(248, 8)
    })
    .await
    .expect("site");
    let (crawl, _) = crawl_ok(&[site.seed_url()], "[crawl]\nscope = \"host\"\n").await;
    let records = crawl.records();
    let exp = site.expected(ExpectOptions::default());
    assert_eq!(fetched_200(&records), exp.fetched_ok);
    assert!(records.iter().all(|r| r.kind.is_none()));
    assert!(
        site.requests()
            .iter()
            .all(|r| !r.path.starts_with("/static/")),
        "a requisite was requested"
    );
    site.shutdown().await;
}
