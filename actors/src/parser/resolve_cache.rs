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

use crawl_core::canon::{CanonError, canonicalize_relative};
use crawl_core::urlparts::{JoinBase, PartsAt};
use url::{Position, Url};

/// Entries kept per parser thread before the memo starts over.
pub const CAPACITY: usize = 8192;

/// References looked up in a directory's table before its hit rate is judged.
const WARM_UP: u32 = 256;

/// A directory whose references hit less than a quarter of the time (links unique to each page) is resolved
/// directly for this many references, then its table is tried again.
const COLD_FOR: u32 = 4096;

/// Resolved references by base directory, then by reference.
#[derive(Default)]
struct Memo {
    dirs: HashMap<Box<str>, DirTable>,
    len: usize,
}

/// One directory's resolved references, and how often they were asked for again.
#[derive(Default)]
struct DirTable {
    refs: HashMap<Box<str>, String>,
    lookups: u32,
    hits: u32,
}

impl DirTable {
    fn cold(&self) -> bool {
        self.lookups >= WARM_UP && self.hits.saturating_mul(4) < self.lookups
    }
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The base's `scheme://authority/path-up-to-the-last-slash`, what resolving most references depends on.
fn base_dir(base: &Url) -> &str {
    let upto_path = &base[..Position::AfterPath];
    let start = base[..Position::BeforePath].len();
    let dir = upto_path[start..].rfind('/').map_or(0, |i| i + 1);
    &upto_path[..start + dir]
}

/// True when resolving `href` depends on more of the base than its directory: an empty reference, or one that
/// starts with `?` or `#`, after leading whitespace and an optional scheme (`http:?q` against an http base is the
/// relative reference `?q`).
fn keeps_last_segment(href: &str) -> bool {
    let href = href.trim_start_matches(|c: char| c.is_ascii_whitespace() || c.is_ascii_control());
    let scheme_len = href
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .filter(|&i| i > 0 && href[i..].starts_with(':'))
        .map_or(0, |i| i + 1);
    let rest = href[scheme_len..].trim_start_matches(['\t', '\n', '\r']);
    href.is_empty() || rest.is_empty() || rest.starts_with(['?', '#'])
}

/// Resolves the references of one page: [`canonicalize_relative`] against `base`, joined as strings where
/// [`JoinBase`] can, otherwise through the thread's memo. The memo's table for the base's directory is taken for
/// the page and given back when the resolver is dropped.
pub struct PageResolver<'a> {
    base: &'a Url,
    join: Option<JoinBase<'a>>,
    dir: &'a str,
    table: DirTable,
}

impl<'a> PageResolver<'a> {
    pub fn new(base: &'a Url) -> PageResolver<'a> {
        let dir = base_dir(base);
        let table = MEMO
            .with(|m| {
                let mut m = m.borrow_mut();
                let table = m.dirs.remove(dir);
                if let Some(t) = &table {
                    m.len = m.len.saturating_sub(t.refs.len());
                }
                table
            })
            .unwrap_or_default();
        PageResolver {
            base,
            join: JoinBase::new(base.as_str()),
            dir,
            table,
        }
    }

    /// The canonical URL `href` resolves to.
    pub fn resolve(&mut self, href: &str) -> Result<String, CanonError> {
        self.resolve_at(href).map(|(url, _)| url)
    }

    /// [`resolve`](Self::resolve), with where the URL's parts lie when it was joined as strings.
    pub fn resolve_at(&mut self, href: &str) -> Result<(String, Option<PartsAt>), CanonError> {
        if let Some((joined, at)) = self.join.as_ref().and_then(|j| j.join(href)) {
            return Ok((joined, Some(at)));
        }
        self.resolve_parsed(href).map(|url| (url, None))
    }

    /// The reference resolved with the parser, through the memo.
    fn resolve_parsed(&mut self, href: &str) -> Result<String, CanonError> {
        if keeps_last_segment(href) {
            return canonicalize_relative(self.base, href).map(String::from);
        }
        let t = &mut self.table;
        t.lookups = t.lookups.saturating_add(1);
        if t.cold() {
            // Counting on as references go by: past the cold stretch the table is tried again.
            if t.lookups >= WARM_UP + COLD_FOR {
                (t.lookups, t.hits) = (0, 0);
            }
            return canonicalize_relative(self.base, href).map(String::from);
        }
        if let Some(url) = t.refs.get(href) {
            t.hits += 1;
            return Ok(url.clone());
        }
        let url = String::from(canonicalize_relative(self.base, href)?);
        if t.refs.len() < CAPACITY {
            t.refs.insert(href.into(), url.clone());
        }
        Ok(url)
    }
}

impl Drop for PageResolver<'_> {
    fn drop(&mut self) {
        let table = std::mem::take(&mut self.table);
        if table.lookups == 0 {
            return;
        }
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            m.len += table.refs.len();
            if m.len > CAPACITY {
                m.dirs.clear();
                m.len = table.refs.len();
            }
            m.dirs.insert(self.dir.into(), table);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(r: Result<impl Into<String>, CanonError>) -> Result<String, CanonError> {
        r.map(Into::into)
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
                        outcome(PageResolver::new(&base).resolve(h)),
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
        assert_eq!(base_dir(&base), "http://a.test/x/");
        for h in [
            "?z", "#f", "  ", "", "http:?z", "http:", "HTTPS:#x", " \t?q",
        ] {
            assert!(keeps_last_segment(h), "{h:?}");
        }
        for h in [
            "z.html",
            "/z",
            "//b.test/",
            "http://b.test/?q",
            "z?q",
            "mailto:x",
        ] {
            assert!(!keeps_last_segment(h), "{h:?}");
        }
    }

    #[test]
    fn the_memo_stays_bounded_and_keeps_answering() {
        let base = Url::parse("http://a.test/").unwrap();
        let mut r = PageResolver::new(&base);
        for i in 0..CAPACITY + 10 {
            let href = format!("./p/{i}");
            assert_eq!(
                r.resolve(&href).unwrap().as_str(),
                format!("http://a.test/p/{i}")
            );
        }
        assert!(r.table.refs.len() <= CAPACITY);
        drop(r);
        for d in 0..3 {
            let other = Url::parse(&format!("http://b{d}.test/")).unwrap();
            let mut r = PageResolver::new(&other);
            for i in 0..CAPACITY / 2 {
                r.resolve(&format!("./q/{i}")).unwrap();
            }
        }
        MEMO.with(|m| {
            let m = m.borrow();
            assert!(m.len <= CAPACITY);
            assert_eq!(m.len, m.dirs.values().map(|t| t.refs.len()).sum::<usize>());
        });
        let mut r = PageResolver::new(&base);
        assert_eq!(r.resolve("./p/3").unwrap().as_str(), "http://a.test/p/3");
    }

    #[test]
    fn a_directory_of_unique_links_is_resolved_directly_then_tried_again() {
        let base = Url::parse("http://cold.test/d/p").unwrap();
        let mut r = PageResolver::new(&base);
        for i in 0..WARM_UP {
            r.resolve(&format!("./u/{i}")).unwrap();
        }
        assert!(r.table.cold(), "no hits in {WARM_UP} lookups");
        let kept = r.table.refs.len();
        // Cold: answers stay right and nothing more is stored.
        for i in 0..COLD_FOR - 1 {
            let got = r.resolve(&format!("./v/{i}")).unwrap();
            assert_eq!(got.as_str(), format!("http://cold.test/d/v/{i}"));
        }
        assert_eq!(r.table.refs.len(), kept);
        // Past the cold stretch the table is used again, and a repeated link is a hit.
        r.resolve("./w").unwrap();
        assert!(!r.table.cold());
        assert_eq!(
            r.resolve("./u/1").unwrap().as_str(),
            "http://cold.test/d/u/1"
        );
        assert_eq!(r.table.hits, 1);
    }
}
