//! Unit tests of [`Crawl`] (continued): page requisites (admission at the page's depth, their scope verdicts,
//! records of kind embed, redirects and failures of requisites), the record fields that come from the page's content,
//! and robots.txt sitemaps on hosts out of scope. The harness is in the parent module.

use super::*;
use crawl_core::record::RecordKind;

fn page_with(links: Vec<FoundLink>, embeds: Vec<FoundLink>) -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: 200,
        content_type: Some("text/html".into()),
        content_length: 100,
        http_version: "HTTP/1.1".into(),
        links_found: links.len() as u32,
        links,
        embeds,
        title: Some("Home".into()),
        digest: Some("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ".into()),
        links_dropped: 3,
        embeds_dropped: 2,
        ..PageOutcome::default()
    }))
}

fn image() -> JobResult {
    JobResult::Page(Box::new(PageOutcome {
        status: 200,
        content_type: Some("image/png".into()),
        content_length: 42,
        http_version: "HTTP/1.1".into(),
        digest: Some("sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into()),
        ..PageOutcome::default()
    }))
}

#[test]
fn requisites_are_queued_at_the_page_depth_and_recorded_as_embeds() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let root = h.one(0);
    let embeds = vec![
        link("http://a.test/i.png", ScopeVerdict::InScope),
        link("http://cdn.test/f.woff2", ScopeVerdict::InScope),
        link("http://elsewhere.test/e.png", ScopeVerdict::OutOfScope),
        // Linked and embedded: fetched once, as a requisite.
        link("http://a.test/both.png", ScopeVerdict::InScope),
    ];
    let links = inscope(&["http://a.test/x", "http://a.test/both.png"]);
    h.done(&root, page_with(links, embeds), 0);
    let (jobs, _) = h.lease(0);
    let got: Vec<(&str, JobKind, u32)> = jobs
        .iter()
        .map(|j| (j.entry.url.as_str(), j.entry.kind, j.entry.depth))
        .collect();
    assert_eq!(
        got,
        [
            ("http://a.test/i.png", JobKind::Embed, 0),
            ("http://cdn.test/f.woff2", JobKind::Embed, 0)
        ],
        "requisites at depth 0 go before the page's links at depth 1 (one at a time per host)"
    );
    for j in &jobs {
        assert_eq!(j.entry.parent.as_deref(), Some("http://a.test/"));
        h.done(j, image(), 0);
    }
    let mut rest = Vec::new();
    for _ in 0..4 {
        let (jobs, _) = h.lease(0);
        for j in jobs {
            rest.push((j.entry.url.clone(), j.entry.kind, j.entry.depth));
            h.done(&j, image(), 0);
        }
    }
    assert_eq!(
        rest,
        [
            ("http://a.test/both.png".to_owned(), JobKind::Embed, 0),
            ("http://a.test/x".to_owned(), JobKind::Page, 1)
        ]
    );
    h.flush();
    h.assert_unique();
    let r = h.record("http://a.test/");
    assert_eq!(r.title.as_deref(), Some("Home"));
    assert_eq!(
        r.digest.as_deref(),
        Some("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
    );
    assert_eq!((r.links_dropped, r.kind), (5, None));
    for url in [
        "http://a.test/i.png",
        "http://cdn.test/f.woff2",
        "http://a.test/both.png",
    ] {
        let e = h.record(url);
        assert_eq!(
            (e.outcome, e.kind, e.depth),
            (Outcome::Fetched, Some(RecordKind::Embed), 0)
        );
        assert_eq!(e.content_type.as_deref(), Some("image/png"));
        assert_eq!(e.parent.as_deref(), Some("http://a.test/"));
    }
    let out = h.record("http://elsewhere.test/e.png");
    assert_eq!(
        (out.outcome, out.reason, out.depth),
        (Outcome::Excluded, Some(Reason::Scope), 0)
    );
    assert_eq!(h.record("http://a.test/x").kind, None);
    assert_eq!(h.crawl.finished(), Some(FinishReason::Completed));
}

#[test]
fn a_requisite_that_redirects_stays_a_requisite_and_its_failures_say_embed() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let root = h.one(0);
    let embeds = vec![
        link("http://a.test/old.css", ScopeVerdict::InScope),
        link("http://a.test/gone.js", ScopeVerdict::InScope),
    ];
    h.done(&root, page_with(Vec::new(), embeds), 0);
    let old = h.one(0);
    assert_eq!(old.entry.kind, JobKind::Embed);
    h.done(&old, redirect("http://a.test/new.css"), 0);
    let gone = h.one(0);
    assert_eq!(gone.entry.url, "http://a.test/gone.js");
    h.done(&gone, failed(Reason::Connect, false), 0);
    let new = h.one(0);
    assert_eq!(
        (new.entry.url.as_str(), new.entry.kind, new.entry.depth),
        ("http://a.test/new.css", JobKind::Embed, 0)
    );
    assert_eq!(new.entry.redirect_chain, vec!["http://a.test/old.css"]);
    h.done(&new, image(), 0);
    h.flush();
    let r = h.record("http://a.test/old.css");
    assert_eq!((r.status, r.kind), (Some(301), Some(RecordKind::Embed)));
    let r = h.record("http://a.test/gone.js");
    assert_eq!(
        (r.outcome, r.reason, r.kind),
        (
            Outcome::Failed,
            Some(Reason::Connect),
            Some(RecordKind::Embed)
        )
    );
    assert_eq!(
        h.record("http://a.test/new.css").kind,
        Some(RecordKind::Embed)
    );
}

#[test]
fn without_requisites_nothing_is_queued_and_records_keep_their_shape() {
    let mut h = H::new(settings(), policy(1));
    h.seed("http://a.test/");
    let root = h.one(0);
    h.done(&root, ok(inscope(&["http://a.test/x"])), 0);
    let x = h.one(0);
    assert_eq!(x.entry.kind, JobKind::Page);
    h.done(&x, ok(Vec::new()), 0);
    h.flush();
    for r in &h.file {
        let v = serde_json::to_value(r).unwrap();
        for absent in ["kind", "links_dropped", "title", "digest"] {
            assert!(v.get(absent).is_none(), "{absent} in {v}");
        }
    }
}

#[test]
fn a_robots_sitemap_on_a_host_out_of_scope_is_not_fetched() {
    let mut h = H::new(
        CrawlSettings {
            respect_robots: true,
            ..settings()
        },
        policy(1),
    );
    let seed = url::Url::parse("http://a.test/").unwrap();
    h.crawl.admission = Admission::new(Arc::new(ScopePolicy::new(
        ScopeMode::Host,
        &[seed],
        Vec::new(),
        Vec::new(),
        10,
    )));
    h.seed("http://a.test/");
    let r = h.one(0);
    assert_eq!(r.entry.kind, JobKind::Robots);
    h.done(
        &r,
        robots(
            "User-agent: *\nAllow: /\nSitemap: http://other.test/sitemap.xml\n\
             Sitemap: http://a.test/sitemap.xml\n",
        ),
        0,
    );
    let sm = h.one(0);
    assert_eq!(
        (sm.entry.kind, sm.entry.url.as_str()),
        (JobKind::Sitemap, "http://a.test/sitemap.xml")
    );
    h.done(&sm, JobResult::Sitemap(SitemapOutcome::default()), 0);
    let page = h.one(0);
    h.done(&page, ok(Vec::new()), 0);
    assert!(h.lease(0).0.is_empty());
    assert!(!h.leased_urls().iter().any(|u| u.contains("other.test")));
    let s = h.crawl.stats();
    assert_eq!((s.sitemap_fetches, s.sitemaps_out_of_scope), (1, 1));
}
