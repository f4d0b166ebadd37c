//! URL canonicalisation: the output is an http(s) URL with a host, no fragment and no userinfo, within
//! `MAX_URL_LEN`, that parses back to itself, and canonicalising it again changes nothing (idempotence), for
//! absolute inputs and for references resolved against a base.
#![no_main]

use crawl_core::canon::{MAX_URL_LEN, canonicalize, canonicalize_relative};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use url::Url;

static BASE: LazyLock<Url> = LazyLock::new(|| {
    Url::parse("https://Example.COM:443/a/b/c.html?q=1#f").expect("base url parses")
});

fn check(input: &str, url: &Url) {
    assert!(
        matches!(url.scheme(), "http" | "https"),
        "{input:?} gave {url}"
    );
    assert!(
        url.host_str().is_some_and(|h| !h.is_empty()),
        "{input:?} gave {url}"
    );
    assert!(url.fragment().is_none(), "{input:?} gave {url}");
    assert!(
        url.username().is_empty() && url.password().is_none(),
        "{input:?} gave {url}"
    );
    assert!(
        url.as_str().len() <= MAX_URL_LEN,
        "{input:?} gave a url too long"
    );
    let parsed = Url::parse(url.as_str()).expect("canonical output parses");
    assert_eq!(&parsed, url, "{input:?}: output does not parse to itself");
    let again = canonicalize(url.as_str())
        .unwrap_or_else(|e| panic!("{input:?} gave {url}, which does not canonicalise: {e}"));
    assert_eq!(&again, url, "{input:?}: not idempotent");
    let relative = canonicalize_relative(&BASE, url.as_str())
        .unwrap_or_else(|e| panic!("{url} against a base fails: {e}"));
    assert_eq!(
        &relative, url,
        "{input:?}: absolute url resolved against a base changed"
    );
}

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    if let Ok(url) = canonicalize(&input) {
        check(&input, &url);
    }
    if let Ok(url) = canonicalize_relative(&BASE, &input) {
        check(&input, &url);
    }
});
