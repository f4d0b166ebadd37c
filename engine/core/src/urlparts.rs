//! The parts of a URL string already in the crawler's canonical form, found without a full WHATWG parse.
//!
//! A full parse costs about half a microsecond (twice that for an IP host); the scheduler and the robots table
//! only need the authority and the path of URLs that [`crate::canon`] produced, several times per URL. [`split`]
//! answers only when the string is plainly in the form the parser would give back unchanged (an `http`/`https`
//! scheme, a lowercase ASCII domain or dotted-quad host, an optional port, a path of characters WHATWG leaves as
//! they are); for anything else it returns `None` and the caller parses. Where it answers, it agrees with the
//! parser: a test compares both on many generated strings. [`parse`] gives the fetcher the full `Url` of such a
//! string without parsing its host again when the thread has parsed the same origin before, and [`JoinBase`]
//! resolves a page's plain links against it as strings, where resolving them with the parser takes a parse each.

use crate::canon;
use foldhash::quality::RandomState;
use std::collections::HashMap;

/// Scheme, host, port and path-and-query of a URL string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// `http` or `https`.
    pub scheme: &'a str,
    /// The host as it is written (lowercase).
    pub host: &'a str,
    /// The port, or the scheme's default.
    pub port: u16,
    /// The path and the query (`/p?q`), without a fragment.
    pub path_and_query: &'a str,
}

impl UrlParts<'_> {
    /// `scheme://host:port` with the port always explicit: the same string as [`crate::canon::authority_key`].
    pub fn authority_key(&self) -> String {
        canon::authority_key_of(self.scheme, self.host, self.port)
    }
}

/// The parts of `url` when it is in a form a WHATWG parse would return unchanged; `None` otherwise.
pub fn split(url: &str) -> Option<UrlParts<'_>> {
    let (scheme, rest, default_port) = if let Some(r) = url.strip_prefix("http://") {
        ("http", r, 80)
    } else if let Some(r) = url.strip_prefix("https://") {
        ("https", r, 443)
    } else {
        return None;
    };
    // Byte by byte: the delimiters are ASCII (a char pattern is searched through its UTF-8 encoding, and costs
    // more than these short scans on every URL).
    let end = rest
        .bytes()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    // Short strings: a plain loop beats a vectorised search's setup.
    let (host, port) = match authority.bytes().rposition(|b| b == b':') {
        Some(i) => (&authority[..i], parse_port(&authority[i + 1..])?),
        None => (authority, default_port),
    };
    if port == default_port && authority.len() != host.len() {
        return None; // the parser drops a default port: the string would change
    }
    if !plain_host(host) {
        return None;
    }
    let path_and_query = match tail.bytes().position(|b| b == b'#') {
        Some(i) => &tail[..i],
        None => tail,
    };
    if !path_and_query.starts_with('/') || !plain_path(path_and_query) {
        return None;
    }
    Some(UrlParts {
        scheme,
        host,
        port,
        path_and_query,
    })
}

/// Origins already parsed on this thread, by `scheme://authority` as the parser writes it.
const ORIGINS: usize = 256;

thread_local! {
    static PARSED_ORIGINS: std::cell::RefCell<HashMap<Box<str>, url::Url, RandomState>> =
        std::cell::RefCell::new(HashMap::default());
}

/// Parses `url` with the same result as `Url::parse`, faster for the URLs the frontier hands out again and
/// again: when its `scheme://authority` is one this thread has parsed before, written exactly as the parser
/// writes it, the rest is resolved as a path-absolute reference against that origin, which keeps the origin's
/// scheme, userinfo, host and port without parsing the host again (for an IP address or a domain, most of a
/// short URL's parse). Only for a rest that starts with `/` followed by none of `/`, `\`, tab and newline
/// (those could start an authority of their own in a reference). The memo holds at most [`ORIGINS`] origins a
/// thread and starts over when full.
pub fn parse(url: &str) -> Result<url::Url, url::ParseError> {
    let Some((origin, rest)) = origin_and_rest(url) else {
        return url::Url::parse(url);
    };
    let known = PARSED_ORIGINS.with(|m| {
        m.borrow()
            .get(origin)
            .map(|base| url::Url::options().base_url(Some(base)).parse(rest))
    });
    if let Some(parsed) = known {
        return parsed;
    }
    let parsed = url::Url::parse(url)?;
    if parsed[..url::Position::BeforePath] == *origin {
        PARSED_ORIGINS.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= ORIGINS {
                m.clear();
            }
            m.insert(origin.into(), parsed.clone());
        });
    }
    Ok(parsed)
}

/// `http(s)://authority` and the path-absolute rest of `url`, when the rest may be resolved against the origin.
fn origin_and_rest(url: &str) -> Option<(&str, &str)> {
    let after_scheme = if url.starts_with("http://") {
        7
    } else if url.starts_with("https://") {
        8
    } else {
        return None;
    };
    let end = after_scheme + url[after_scheme..].bytes().position(|b| b == b'/')?;
    let (origin, rest) = url.split_at(end);
    let b = rest.as_bytes();
    let plain_authority = origin[after_scheme..]
        .bytes()
        .all(|b| b > b' ' && !matches!(b, b'?' | b'#' | b'\\' | 0x7f));
    // A tab or newline there is removed by the parser, and what follows it could be a second `/`.
    let tab_next = matches!(b.get(1), Some(b'\t' | b'\n' | b'\r'));
    (plain_authority && canon::path_absolute(b) && !tab_next).then_some((origin, rest))
}

/// A base URL references (as found in a page) are joined to as strings: [`JoinBase::join`] gives the same string as
/// `canon::canonicalize_relative` wherever it answers (a test compares both on many generated pairs). It answers
/// for a base [`split`] takes without a `%` in its path and query, and a path-absolute (`/p`) or path-relative
/// (`p`, `d/p?q`) reference whose characters are all ones WHATWG leaves as they are, with no dot segment, no `%`,
/// no `:` in its first segment (that could be a scheme) and no empty query, or an absolute `http(s)` URL that
/// [`split`] takes with no `%` and no empty query; the fragment is dropped. Most links of most pages are of that
/// kind, and joining them costs a fraction of a parse.
#[derive(Debug, Clone, Copy)]
pub struct JoinBase<'a> {
    base: &'a str,
    /// `scheme://authority`.
    origin_len: usize,
    /// Up to and including the last `/` of the path.
    dir_len: usize,
    /// The base's parts.
    at: PartsAt,
}

/// Where [`split`]'s parts lie in a URL string it takes (without a fragment), so that they need not be found
/// again: a page's joined links carry it from [`JoinBase::join`] to the scope check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartsAt {
    https: bool,
    host_end: usize,
    port: u16,
    path_start: usize,
}

impl PartsAt {
    /// The positions of `parts` in `url` (the string they were split from, without a fragment).
    fn of(url: &str, parts: &UrlParts<'_>) -> PartsAt {
        PartsAt {
            https: parts.scheme == "https",
            host_end: parts.scheme.len() + 3 + parts.host.len(),
            port: parts.port,
            path_start: url.len() - parts.path_and_query.len(),
        }
    }

    /// The parts of `url`, the string this was made for (`None` where the positions do not fit it).
    pub fn parts<'a>(&self, url: &'a str) -> Option<UrlParts<'a>> {
        let scheme = if self.https { "https" } else { "http" };
        Some(UrlParts {
            scheme,
            host: url.get(scheme.len() + 3..self.host_end)?,
            port: self.port,
            path_and_query: url.get(self.path_start..)?,
        })
    }
}

impl<'a> JoinBase<'a> {
    /// `None` for a base references cannot be joined to as strings.
    pub fn new(base: &'a str) -> Option<JoinBase<'a>> {
        let parts = split(base)?;
        // `split` took the authority up to the first `/` after the scheme, and the path from there.
        let after_scheme = base.find("://")? + 3;
        let origin_len = after_scheme + base[after_scheme..].find('/')?;
        if base.len() != origin_len + parts.path_and_query.len() || base[origin_len..].contains('%')
        {
            return None; // a fragment after it, or escapes the canonical form may rewrite
        }
        let path_end = base[origin_len..]
            .find('?')
            .map_or(base.len(), |i| origin_len + i);
        let dir_len = base[..path_end].rfind('/')? + 1;
        Some(JoinBase {
            base,
            origin_len,
            dir_len,
            at: PartsAt::of(base, &parts),
        })
    }

    /// The canonical URL `href` resolves to and where its parts lie, or `None` where that takes the parser.
    pub fn join(&self, href: &str) -> Option<(String, PartsAt)> {
        // Byte scans throughout: a char pattern is searched through its UTF-8 encoding, slower on short strings.
        let href = match href.bytes().position(|c| c == b'#') {
            Some(i) => &href[..i],
            None => href,
        };
        let b = href.as_bytes();
        let escaped = b.contains(&b'%');
        if b.starts_with(b"http://") || b.starts_with(b"https://") {
            // An absolute URL in the form the parser gives back unchanged is its own canonical form.
            let parts = split(href)?;
            let joinable =
                !href.ends_with('?') && !escaped && href.len() <= crate::canon::MAX_URL_LEN;
            return joinable.then(|| (href.to_owned(), PartsAt::of(href, &parts)));
        }
        let prefix = match b.first()? {
            b'?' => return None,
            b'/' if !canon::path_absolute(b) => return None,
            b'/' => &self.base[..self.origin_len],
            _ => {
                let first_segment = b
                    .iter()
                    .position(|&c| matches!(c, b'/' | b'?'))
                    .unwrap_or(b.len());
                if b[..first_segment].contains(&b':') {
                    return None;
                }
                &self.base[..self.dir_len]
            }
        };
        if href.ends_with('?') || escaped || prefix.len() + href.len() > crate::canon::MAX_URL_LEN {
            return None;
        }
        let mut out = String::with_capacity(prefix.len() + href.len());
        out.push_str(prefix);
        out.push_str(href);
        let at = PartsAt {
            path_start: self.origin_len,
            ..self.at
        };
        plain_path(&out[self.origin_len..]).then_some((out, at))
    }
}

/// A decimal port without leading zeros (the parser rewrites `:080`), 1..=65535.
fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || s.starts_with('0') || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // At most five digits: no overflow of a u32.
    let port = s
        .bytes()
        .fold(0u32, |port, b| port * 10 + u32::from(b - b'0'));
    u16::try_from(port).ok()
}

/// A lowercase ASCII domain whose labels are letters, digits and hyphens (no punycode label, which the parser
/// validates, and a last label that is not numeric, which it reads as IPv4), or a canonical dotted quad.
fn plain_host(host: &str) -> bool {
    let b = host.as_bytes();
    if b.is_empty() || b.len() > 253 {
        return false;
    }
    let last = &b[b.iter().rposition(|&c| c == b'.').map_or(0, |i| i + 1)..];
    if last.first().is_some_and(u8::is_ascii_digit) || last.starts_with(b"0x") {
        return dotted_quad(host);
    }
    // One pass: every label non-empty, of letters, digits and hyphens, and not starting with `xn--`.
    let mut label = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'.' {
            if i == label {
                return false;
            }
            label = i + 1;
        } else if !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            || (i == label + 3 && &b[label..=i] == b"xn--")
        {
            return false;
        }
    }
    label < b.len()
}

/// Four decimal numbers 0..=255 without leading zeros, as the parser writes an IPv4 address.
fn dotted_quad(host: &str) -> bool {
    // One pass: (dots seen, digits of the current number, its value, its first digit).
    let (mut dots, mut digits, mut value, mut first) = (0, 0, 0u16, 0u8);
    for &b in host.as_bytes() {
        if b == b'.' {
            if digits == 0 || dots == 3 {
                return false;
            }
            (dots, digits, value) = (dots + 1, 0, 0);
            continue;
        }
        if !b.is_ascii_digit() || digits == 3 || (digits == 1 && first == b'0') {
            return false;
        }
        if digits == 0 {
            first = b;
        }
        value = value * 10 + u16::from(b - b'0');
        if value > 255 {
            return false;
        }
        digits += 1;
    }
    dots == 3 && digits > 0
}

/// Path and query characters that WHATWG parsing keeps as they are, with no dot segment and no percent-encoded
/// dot: unreserved and sub-delimiter characters, `:`, `@`, `/`, `?`, `=`, `&` and valid percent escapes.
fn plain_path(pq: &str) -> bool {
    let b = pq.as_bytes();
    let query_at = b.iter().position(|&c| c == b'?').unwrap_or(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // Most characters are decided by the table alone (a scan of the URL per robots.txt check: one load each
        // instead of a chain of comparisons).
        if PLAIN[usize::from(c)] {
            i += 1;
            continue;
        }
        let ok = match c {
            // A dot is fine except as a whole path segment (`/./`, `/../`, a trailing `/.`), which the parser
            // resolves.
            b'.' => i >= query_at || !dot_segment(b, i, query_at),
            b'%' => {
                let hex = |k: usize| b.get(k).is_some_and(|h| h.is_ascii_hexdigit());
                hex(i + 1)
                    && hex(i + 2)
                    && !(i < query_at && b[i + 1] == b'2' && (b[i + 2] == b'e' || b[i + 2] == b'E'))
            }
            _ => false,
        };
        if !ok {
            return false;
        }
        i += 1;
    }
    true
}

/// Path and query bytes kept as they are whatever surrounds them: unreserved and sub-delimiter characters, `:`,
/// `@`, `/`, `?`, `=` and `&` (a dot and a percent sign depend on what follows; everything else is refused).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b':'
                    | b'@'
                    | b'/'
                    | b'?'
            );
        c += 1;
    }
    t
};

/// True when the dot at `i` belongs to a segment made only of dots (`.` or `..`) in the path `b[..end]`.
fn dot_segment(b: &[u8], i: usize, end: usize) -> bool {
    let start = b[..i].iter().rposition(|&c| c == b'/').map_or(0, |p| p + 1);
    let stop = b[i..end]
        .iter()
        .position(|&c| c == b'/')
        .map_or(end, |p| i + p);
    let segment = &b[start..stop];
    segment == b"." || segment == b".."
}

#[cfg(test)]
mod tests;
