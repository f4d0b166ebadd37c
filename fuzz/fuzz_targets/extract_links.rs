//! Link extraction: the tokenizer and the lol_html fallback agree wherever the tokenizer reads the document (but
//! for lol_html's BOM sniffing of attribute values, see `has_bom_after_start`), and
//! every link or requisite `extract_links` returns is an absolute http(s) URL that canonicalises to itself, unique,
//! within the cap.
#![no_main]

use crawl_actors::parser::extract::fuzzing::{extract_lol_html, extract_tokenizer};
use crawl_actors::parser::extract::{ExtractOptions, extract_links};
use crawl_core::canon::{MAX_URL_LEN, canonicalize};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use std::sync::{LazyLock, Once};
use url::Url;

static PAGE: LazyLock<Url> =
    LazyLock::new(|| Url::parse("https://example.com/dir/page.html").expect("page url parses"));

fn check_url(url: &str, what: &str) {
    let parsed = Url::parse(url).unwrap_or_else(|e| panic!("{what} {url} does not parse: {e}"));
    assert!(
        matches!(parsed.scheme(), "http" | "https"),
        "{what} {url} is not http(s)"
    );
    assert!(
        parsed.host_str().is_some_and(|h| !h.is_empty()),
        "{what} {url} has no host"
    );
    assert!(url.len() <= MAX_URL_LEN, "{what} {url} is too long");
    let again = canonicalize(url)
        .unwrap_or_else(|e| panic!("{what} {url} does not canonicalise again: {e}"));
    assert_eq!(again.as_str(), url, "{what} is not canonical");
}

/// lol_html decodes each attribute value with BOM sniffing (`Encoding::decode`): a value starting with a UTF-8 BOM
/// loses it and one starting with `FF FE` / `FE FF` is read as UTF-16. The tokenizer keeps the bytes, as HTML and
/// the URL standard do; such documents are not compared.
fn has_bom_after_start(html: &[u8]) -> bool {
    html.windows(3).skip(1).any(|w| w == b"\xEF\xBB\xBF")
        || html
            .windows(2)
            .skip(1)
            .any(|w| w == b"\xFF\xFE" || w == b"\xFE\xFF")
}

/// lol_html's `debug_assert!`s on its internal inconsistencies panic in this (debug-assertions) build, where release
/// builds return an error; `extract_lol.rs` catches the panic and reports that error. The fuzzer's panic hook aborts
/// before any unwinding, so panics raised inside lol_html are passed over here and the catch is left to do its work.
fn let_lol_html_panics_unwind() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info
                .location()
                .is_some_and(|l| l.file().contains("/lol_html-"))
            {
                return;
            }
            fuzzer_hook(info)
        }));
    });
}

fuzz_target!(|data: &[u8]| {
    let_lol_html_panics_unwind();
    let Some((&flags, html)) = data.split_first() else {
        return;
    };
    let opts = ExtractOptions {
        agent_token: "crawlbot",
        max_links: if flags & 2 == 0 {
            10_000
        } else {
            usize::from(flags >> 2) % 4
        },
        embeds: flags & 1 == 1,
    };
    if !has_bom_after_start(html)
        && let Some(new) = extract_tokenizer(html, &PAGE, &opts)
        && let Ok(old) = extract_lol_html(html, &PAGE, &opts)
    {
        assert_eq!(
            format!("{new:#?}"),
            format!("{old:#?}"),
            "tokenizer and lol_html differ"
        );
    }
    let Ok(page) = extract_links(html, &PAGE, &opts) else {
        return;
    };
    assert!(page.links.len() <= opts.max_links, "links over the cap");
    assert!(
        page.embeds.len() <= opts.max_links,
        "requisites over the cap"
    );
    let mut seen = HashSet::new();
    for link in &page.links {
        check_url(&link.url, "link");
        assert!(
            seen.insert(link.url.as_str()),
            "duplicate link {}",
            link.url
        );
    }
    let mut seen = HashSet::new();
    for url in &page.embeds {
        check_url(url, "requisite");
        assert!(seen.insert(url.as_str()), "duplicate requisite {url}");
    }
    if let Some(canonical) = &page.canonical {
        check_url(canonical.as_str(), "canonical");
    }
    assert!(
        page.links_found >= page.links.len() + page.invalid,
        "counts"
    );
});
