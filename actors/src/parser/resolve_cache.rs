//! A per-thread memo of resolved references: most links of a site are navigation that every page repeats, and
//! resolving one (a WHATWG parse against the base, then canonicalisation) costs far more than looking it up.
//!
//! The result of [`crawl_core::canon::canonicalize_relative`] depends on the base only through the part up to
//! the last `/` of its path for every reference except an empty one and those starting with `?` or `#` (which
//! keep the base's last segment or query): those are resolved every time. The key is that prefix of the base and
//! the reference, both compared in full, so a hit is exactly what resolving would give. The memo holds at most
//! [`CAPACITY`] entries and starts over when full.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use crawl_core::canon::{CanonError, canonicalize_relative};
use url::{Position, Url};

/// Entries kept per parser thread before the memo starts over.
pub const CAPACITY: usize = 8192;

/// Entries sharing one hash: the base prefix, the reference and what they resolve to.
type Bucket = Vec<(Box<str>, Box<str>, Url)>;

#[derive(Default)]
struct Memo {
    hasher: std::collections::hash_map::RandomState,
    map: HashMap<u64, Bucket, NoHash>,
    len: usize,
}

/// The keys are already hashed by the memo's own keyed hasher.
#[derive(Default, Clone, Copy)]
struct NoHash;

impl BuildHasher for NoHash {
    type Hasher = PassThrough;
    fn build_hasher(&self) -> PassThrough {
        PassThrough(0)
    }
}

struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The part of `base` that resolving `href` depends on, or `None` when it depends on all of it.
fn base_key<'a>(base: &'a Url, href: &str) -> Option<&'a str> {
    let href = href.trim_start_matches(|c: char| c.is_ascii_whitespace() || c.is_ascii_control());
    // `http:?q` against an http base is the relative reference `?q`: look past a leading scheme too.
    let scheme_len = href
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .filter(|&i| i > 0 && href[i..].starts_with(':'))
        .map_or(0, |i| i + 1);
    let rest = href[scheme_len..].trim_start_matches(['\t', '\n', '\r']);
    if href.is_empty() || rest.is_empty() || rest.starts_with(['?', '#']) {
        return None;
    }
    let upto_path = &base[..Position::AfterPath];
    let start = &base[..Position::BeforePath];
    let path = &upto_path[start.len()..];
    let dir = path.rfind('/').map_or(0, |i| i + 1);
    Some(&upto_path[..start.len() + dir])
}

/// [`canonicalize_relative`] through the thread's memo.
pub fn resolve(base: &Url, href: &str) -> Result<Url, CanonError> {
    let Some(key) = base_key(base, href) else {
        return canonicalize_relative(base, href);
    };
    let hit = MEMO.with(|m| {
        let m = m.borrow();
        let h = hash(&m.hasher, key, href);
        m.map.get(&h).and_then(|bucket| {
            bucket
                .iter()
                .find(|(k, r, _)| &**k == key && &**r == href)
                .map(|(_, _, url)| url.clone())
        })
    });
    if let Some(url) = hit {
        return Ok(url);
    }
    let url = canonicalize_relative(base, href)?;
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len >= CAPACITY {
            m.map.clear();
            m.len = 0;
        }
        let h = hash(&m.hasher, key, href);
        m.map
            .entry(h)
            .or_default()
            .push((key.into(), href.into(), url.clone()));
        m.len += 1;
    });
    Ok(url)
}

fn hash(hasher: &std::collections::hash_map::RandomState, key: &str, href: &str) -> u64 {
    let mut h = hasher.build_hasher();
    key.hash(&mut h);
    href.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(r: Result<Url, CanonError>) -> Result<String, String> {
        r.map(|u| u.to_string()).map_err(|e| e.to_string())
    }

    #[test]
    fn memo_gives_what_resolving_gives() {
        let bases = [
            "http://a.test/",
            "http://a.test/x/y.html",
            "http://a.test/x/y.html?q=1",
            "http://a.test/x/",
            "http://a.test/x/z.html",
            "https://a.test/x/y.html",
            "http://b.test:8080/x/y.html",
            "http://u:p@a.test/x/y.html",
            "http://a.test/x/y;p=1/z",
            "http://[::1]:81/p/q",
        ];
        let hrefs = [
            "",
            "?",
            "?a=b",
            "#f",
            "#",
            "y.html",
            "./y.html",
            "../up.html",
            "../../../../a",
            "/abs/p",
            "//c.test/p",
            "https://d.test/p#x",
            "http:rel",
            "https:rel",
            " /sp ",
            "\t/t\nab",
            "z.html?x#y",
            "..",
            ".",
            "mailto:x@y",
            "javascript:void(0)",
            "/%2e%2e/x",
            "/a b",
            "HTTP://E.TEST/A",
            "http://",
            "//",
            "/p?utm_source=x",
            "http:?q",
            "HTTP:#f",
            "http:",
            "https:?q",
            "http:\t?q",
            "h\ttp:?q",
            "http:\\\\e.test\\p",
            "x.html?a=b",
        ];
        // Twice over, in both orders, so that each pair is answered from the memo filled by other bases.
        for round in 0..2 {
            for (i, b) in bases.iter().enumerate() {
                let base = Url::parse(b).unwrap();
                for (j, h) in hrefs.iter().enumerate() {
                    let (base, h) = if round == 0 {
                        (base.clone(), *h)
                    } else {
                        (
                            Url::parse(bases[bases.len() - 1 - i]).unwrap(),
                            hrefs[hrefs.len() - 1 - j],
                        )
                    };
                    assert_eq!(
                        outcome(resolve(&base, h)),
                        outcome(canonicalize_relative(&base, h)),
                        "base {base} href {h:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn references_that_keep_the_last_segment_are_not_memoised() {
        let base = Url::parse("http://a.test/x/y.html?q=1").unwrap();
        assert_eq!(base_key(&base, "?z"), None);
        assert_eq!(base_key(&base, "#f"), None);
        assert_eq!(base_key(&base, "  "), None);
        assert_eq!(base_key(&base, "z.html"), Some("http://a.test/x/"));
        assert_eq!(base_key(&base, "/z"), Some("http://a.test/x/"));
        assert_eq!(base_key(&base, "http:?z"), None);
        assert_eq!(base_key(&base, "http:"), None);
    }

    #[test]
    fn the_memo_starts_over_when_full() {
        let base = Url::parse("http://a.test/").unwrap();
        for i in 0..CAPACITY + 10 {
            let href = format!("/p/{i}");
            assert_eq!(
                resolve(&base, &href).unwrap().as_str(),
                format!("http://a.test/p/{i}")
            );
        }
        MEMO.with(|m| assert!(m.borrow().len <= CAPACITY));
        assert_eq!(
            resolve(&base, "/p/3").unwrap().as_str(),
            "http://a.test/p/3"
        );
    }
}
