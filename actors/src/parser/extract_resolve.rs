//! Resolution of a page's references against its base URL, with the result of
//! [`crawl_core::canon::canonicalize_relative`] but mostly without its relative parse.
//!
//! Against an http(s) base, a reference made only of printable ASCII (no space, backslash or `#`) resolves to the
//! same URL as the base's serialization cut at the right place with the reference appended: its origin for
//! `/path`, its directory for `path`, its path for `?query`, its scheme for `//host`, the whole base for an
//! empty reference. That string is canonicalised as an absolute URL (WHATWG parsing then removes the dot segments
//! exactly as relative resolution does). Anything else (other bases, `http:path` without slashes, whitespace,
//! non-ASCII, very long results) goes through `canonicalize_relative` itself.

use crawl_core::canon::{CanonError, MAX_URL_LEN, canonicalize, canonicalize_relative};
use url::{Position, Url};

/// Joined strings longer than this are left to `canonicalize_relative` (which limits its own input length).
const MAX_JOINED: usize = MAX_URL_LEN * 4;

/// The base cut where references are appended to it.
struct Parts<'a> {
    /// `https`
    scheme: &'a str,
    /// `https://host:port`
    origin: &'a str,
    /// `https://host:port/dir/`
    dir: &'a str,
    /// `https://host:port/dir/page`
    path: &'a str,
    /// `https://host:port/dir/page?query`
    query: &'a str,
}

pub(super) struct Resolver<'a> {
    base: &'a Url,
    parts: Option<Parts<'a>>,
    buf: String,
}

impl<'a> Resolver<'a> {
    pub(super) fn new(base: &'a Url) -> Resolver<'a> {
        let s = base.as_str();
        let special = matches!(base.scheme(), "http" | "https")
            && base.host_str().is_some_and(|h| !h.is_empty());
        let parts = special.then(|| {
            let path_start = base[..Position::BeforePath].len();
            let path_end = base[..Position::AfterPath].len();
            let dir_end = s[path_start..path_end]
                .rfind('/')
                .map_or(path_start, |i| path_start + i + 1);
            Parts {
                scheme: base.scheme(),
                origin: &s[..path_start],
                dir: &s[..dir_end],
                path: &s[..path_end],
                query: &base[..Position::AfterQuery],
            }
        });
        Resolver {
            base,
            parts,
            buf: String::new(),
        }
    }

    /// `canonicalize_relative(base, href)`.
    pub(super) fn resolve(&mut self, href: &str) -> Result<Url, CanonError> {
        let Some(parts) = &self.parts else {
            return canonicalize_relative(self.base, href);
        };
        let bytes = href.as_bytes();
        if !bytes
            .iter()
            .all(|&b| b > b' ' && b < 0x7f && b != b'\\' && b != b'#')
        {
            return canonicalize_relative(self.base, href);
        }
        self.buf.clear();
        match bytes.first() {
            None => return canonicalize(parts.query),
            Some(b'/') if bytes.get(1) == Some(&b'/') => {
                if bytes.get(2) == Some(&b'/') {
                    // `///host`: the url crate resolves it unlike `https:///host`.
                    return canonicalize_relative(self.base, href);
                }
                self.buf.push_str(parts.scheme);
                self.buf.push(':');
            }
            Some(b'/') => self.buf.push_str(parts.origin),
            Some(b'?') => self.buf.push_str(parts.path),
            Some(_) => match scheme_len(bytes) {
                Some(n) => {
                    let scheme = &href[..n];
                    if !(scheme.eq_ignore_ascii_case("http")
                        || scheme.eq_ignore_ascii_case("https"))
                    {
                        return Err(CanonError::UnsupportedScheme(scheme.to_ascii_lowercase()));
                    }
                    let rest = &href[n + 1..];
                    if !rest.starts_with("//") || rest.starts_with("///") {
                        return canonicalize_relative(self.base, href);
                    }
                    return canonicalize(href);
                }
                None => self.buf.push_str(parts.dir),
            },
        }
        self.buf.push_str(href);
        if self.buf.len() > MAX_JOINED {
            return canonicalize_relative(self.base, href);
        }
        canonicalize(&self.buf)
    }
}

/// The length of the scheme of `href` (`scheme:`), if it starts with one.
fn scheme_len(href: &[u8]) -> Option<usize> {
    if !href.first()?.is_ascii_alphabetic() {
        return None;
    }
    let n = href
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (href[n] == b':').then_some(n)
}
