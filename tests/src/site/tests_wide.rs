//! Tests of wide mode: how many links a page carries, that they are distinct across the site, which of them
//! answer 404, and that nothing of it depends on anything but the spec.

use std::collections::BTreeSet;

use super::graph::{wide_children, wide_ok};
use super::render::NOT_FOUND;
use super::tests::{client, fetch, text};
use super::tests_bfs::{hrefs, resolve};
use super::*;

fn wide(links: usize, ratio: f64) -> SiteSpec {
    SiteSpec {
        hosts: 2,
        pages_per_host: 3,
        links_per_page: 2,
        wide_links: links,
        wide_ok_ratio: ratio,
        ..SiteSpec::small()
    }
}

/// The `/w/{id}` URLs linked from a page, resolved against it.
fn wide_links_of(page_url: &str, html: &str) -> Vec<String> {
    hrefs(html)
        .into_iter()
        .map(|(h, _)| resolve(page_url, &h))
        .filter(|u| u.contains("/w/"))
        .collect()
}

#[test]
fn links_are_distinct_across_nodes_and_only_200_nodes_carry_them() {
    let spec = wide(1000, 0.1);
    assert_eq!(wide_children(&spec, 0, 0), 1..1001);
    let mut seen = BTreeSet::new();
    let mut frontier = vec![0usize];
    let mut ok_nodes = 0;
    let mut parents = Vec::new();
    // Three levels: page 0, its real children, their real children.
    for _ in 0..2 {
        parents.push(frontier.len());
        let mut next = Vec::new();
        for id in frontier {
            let kids = wide_children(&spec, 0, id);
            assert_eq!(kids.len(), 1000, "node {id}");
            for k in kids {
                assert!(seen.insert(k), "{k} linked twice");
                if wide_ok(&spec, 0, k) {
                    next.push(k);
                } else {
                    assert!(
                        wide_children(&spec, 0, k).is_empty(),
                        "404 node {k} has links"
                    );
                }
            }
        }
        ok_nodes += next.len();
        frontier = next;
    }
    // About a tenth answer 200.
    let share = ok_nodes as f64 / (seen.len() as f64);
    assert!((0.08..0.12).contains(&share), "share of 200 nodes {share}");
    assert_eq!(seen.len(), 1000 * (parents[0] + parents[1]));
    assert!(parents[1] > 50, "{parents:?}");
}

#[test]
fn wide_mode_is_deterministic_per_seed_and_host_and_ends_before_overflow() {
    let spec = wide(1000, 0.3);
    let ok = |s: &SiteSpec, h| {
        (1..2000)
            .filter(|&id| wide_ok(s, h, id))
            .collect::<Vec<_>>()
    };
    assert_eq!(ok(&spec, 0), ok(&spec.clone(), 0));
    assert_ne!(ok(&spec, 0), ok(&spec, 1));
    assert_ne!(
        ok(&spec, 0),
        ok(
            &SiteSpec {
                seed: 8,
                ..spec.clone()
            },
            0
        )
    );
    let huge = (1..usize::MAX / 10)
        .step_by(usize::MAX / 1000)
        .find(|&id| wide_ok(&spec, 0, id) && id > usize::MAX / 1000)
        .unwrap();
    assert!(wide_children(&spec, 0, huge).is_empty());
    // Off: no wide links, nothing served.
    let off = wide(0, 1.0);
    assert!(wide_children(&off, 0, 0).is_empty());
    assert!(!wide_ok(&off, 0, 1));
    // Ratio 0 and 1 are exact.
    assert!((1..500).all(|id| !wide_ok(&wide(10, 0.0), 0, id)));
    assert!((1..500).all(|id| wide_ok(&wide(10, 1.0), 0, id)));
}

#[test]
fn sibling_mode_links_only_urls_the_parent_linked() {
    let spec = SiteSpec {
        wide_siblings: true,
        ..wide(100, 0.2)
    };
    let root = wide_children(&spec, 1, 0);
    assert_eq!(root, 1..101);
    for id in root.clone().filter(|&id| wide_ok(&spec, 1, id)) {
        assert_eq!(wide_children(&spec, 1, id), root, "node {id}");
    }
    let deeper = (101..10_000).find(|&id| wide_ok(&spec, 1, id)).unwrap();
    let parent = (deeper - 1) / 100;
    assert_eq!(
        wide_children(&spec, 1, deeper),
        parent * 100 + 1..parent * 100 + 101
    );
    // Which ids answer 200 does not change.
    let grow = SiteSpec {
        wide_siblings: false,
        ..spec.clone()
    };
    assert!((1..5000).all(|id| wide_ok(&spec, 0, id) == wide_ok(&grow, 0, id)));
}

#[tokio::test]
async fn served_pages_carry_the_links_and_unlisted_ids_answer_404() {
    let site = Site::start(wide(40, 0.25)).await.unwrap();
    let c = client();
    let spec = site.spec().clone();
    for h in 0..site.hosts() {
        let root = site.page_url(h, 0);
        let (st, _, body) = fetch(&c, &root).await;
        assert_eq!(st, 200);
        let links = wide_links_of(&root, &text(&body));
        let want: Vec<String> = (1..=40)
            .map(|id| site.url(h, &format!("/w/{id}")))
            .collect();
        assert_eq!(links, want, "host {h}");
        let mut statuses = (0, 0);
        for (id, url) in (1usize..).zip(&links) {
            let (st, _, body) = fetch(&c, url).await;
            if wide_ok(&spec, h, id) {
                assert_eq!(st, 200, "{url}");
                statuses.0 += 1;
                let kids = wide_links_of(url, &text(&body));
                let want: Vec<String> = (id * 40 + 1..=id * 40 + 40)
                    .map(|k| site.url(h, &format!("/w/{k}")))
                    .collect();
                assert_eq!(kids, want, "{url}");
            } else {
                assert_eq!(st, 404, "{url}");
                assert_eq!(body.as_ref(), NOT_FOUND);
                statuses.1 += 1;
            }
        }
        assert!(statuses.0 > 0 && statuses.1 > statuses.0, "{statuses:?}");
    }
    // Normal pages keep their links and carry no wide ones.
    let p1 = site.page_url(0, 1);
    let (_, _, body) = fetch(&c, &p1).await;
    assert!(wide_links_of(&p1, &text(&body)).is_empty());
    for p in ["/w/0", "/w/01", "/w/x", "/w/"] {
        assert_eq!(fetch(&c, &site.url(0, p)).await.0, 404, "{p}");
    }
    site.shutdown().await;

    let off = Site::start(SiteSpec::small()).await.unwrap();
    let root = off.page_url(0, 0);
    let (_, _, body) = fetch(&c, &root).await;
    assert!(wide_links_of(&root, &text(&body)).is_empty());
    assert_eq!(fetch(&c, &off.url(0, "/w/1")).await.0, 404);
    off.shutdown().await;
}

#[tokio::test]
async fn too_many_wide_links_are_refused() {
    let spec = SiteSpec {
        wide_links: MAX_WIDE_LINKS + 1,
        ..SiteSpec::small()
    };
    assert!(matches!(
        Site::start(spec).await,
        Err(SiteError::InvalidSpec(_))
    ));
}
