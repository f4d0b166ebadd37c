//! Sitemaps: `parse_sitemap` keeps at most `max_urls` locs (`truncated` exactly when it cut), plain-text locs are
//! http(s) lines; hints name locs that exist, in order, each value at most 64 bytes; `process_sitemap` (what the parser does with a fetched sitemap) returns only absolute, canonical
//! http(s) URLs, at most `max_urls` of them.
#![no_main]

use crawl_actors::parser::logic::{ParseSettings, process_sitemap};
use crawl_actors::parser::sitemap::{SitemapKind, parse_sitemap};
use crawl_actors::protocol::{RawResponse, Timings};
use crawl_core::canon::canonicalize;
use crawl_core::scope::{ScopeMode, ScopePolicy};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use url::Url;

fn check_url(s: &str) {
    let url = Url::parse(s).unwrap_or_else(|e| panic!("{s:?} is not absolute: {e}"));
    assert!(matches!(url.scheme(), "http" | "https"), "{s:?}");
    assert!(url.host_str().is_some_and(|h| !h.is_empty()), "{s:?}");
    let again = canonicalize(s).unwrap_or_else(|e| panic!("{s:?} is not canonical: {e}"));
    assert_eq!(again.as_str(), s, "not canonical");
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, body)) = data.split_first() else {
        return;
    };
    let max_urls = usize::from(n % 32);
    if let Ok(parsed) = parse_sitemap(body, max_urls) {
        assert!(
            parsed.locs.len() <= max_urls,
            "{} locs over {max_urls}",
            parsed.locs.len()
        );
        if !parsed.truncated && parsed.kind == SitemapKind::Text {
            assert!(!parsed.locs.is_empty(), "a text sitemap without urls");
        }
        if parsed.truncated {
            assert_eq!(parsed.locs.len(), max_urls, "truncated before the cap");
        }
        let mut last = None;
        for h in &parsed.hints {
            assert!(
                h.loc < parsed.locs.len(),
                "a hint of loc {} of {}",
                h.loc,
                parsed.locs.len()
            );
            assert!(last.is_none_or(|l| h.loc > l), "hints out of order");
            last = Some(h.loc);
            assert!(
                h.lastmod.is_some() || h.changefreq.is_some(),
                "an empty hint"
            );
            for v in [&h.lastmod, &h.changefreq].into_iter().flatten() {
                assert!(v.len() <= 64 && !v.is_empty(), "{v:?}");
            }
        }
        if parsed.kind == SitemapKind::Text {
            assert!(parsed.hints.is_empty(), "hints in a text sitemap");
            for loc in &parsed.locs {
                let lower = loc.to_ascii_lowercase();
                assert!(
                    lower.starts_with("http://") || lower.starts_with("https://"),
                    "{loc:?}"
                );
            }
        }
    }

    let seed = Url::parse("https://example.com/").expect("seed parses");
    let settings = ParseSettings {
        scope: Arc::new(ScopePolicy::new(
            ScopeMode::Domain,
            &[seed],
            Vec::new(),
            Vec::new(),
            5,
        )),
        user_agent: "crawlbot/1.0".into(),
        max_body_bytes: 1 << 20,
        sitemap_max_bytes: 1 << 20,
        sitemap_max_urls: max_urls,
        archive_level: None,
        max_links_per_page: 100,
        embeds: None,
        inline_max_bytes: 0,
    };
    let resp = RawResponse {
        status: 200,
        headers: http::HeaderMap::new(),
        version: http::Version::HTTP_11,
        body: bytes::Bytes::copy_from_slice(body),
        remote_addr: None,
        request_headers: http::HeaderMap::new(),
        sent_at: std::time::SystemTime::UNIX_EPOCH,
        truncated: false,
        conditional: false,
        proxy: None,
        timings: Timings::default(),
    };
    let out = process_sitemap(&settings, resp);
    assert!(
        out.pages.len() + out.sitemaps.len() <= max_urls,
        "over the cap"
    );
    for page in &out.pages {
        check_url(&page.url);
    }
    for s in &out.sitemaps {
        check_url(s);
    }
});
