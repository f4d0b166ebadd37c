//! The parts of a URL string already in the crawler's canonical form, found without a full WHATWG parse.
//!
//! A full parse costs about half a microsecond (twice that for an IP host); the scheduler and the robots table
//! only need the authority and the path of URLs that [`crate::canon`] produced, several times per URL. [`split`]
//! answers only when the string is plainly in the form the parser would give back unchanged (an `http`/`https`
//! scheme, a lowercase ASCII domain or dotted-quad host, an optional port, a path of characters WHATWG leaves as
//! they are); for anything else it returns `None` and the caller parses. Where it answers, it agrees with the
//! parser: a test compares both on many generated strings. [`parse`] gives the fetcher the full `Url` of such a
//! string without parsing its host again when the thread has parsed the same origin before.

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
        crate::canon::authority_key_of(self.scheme, self.host, self.port)
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
    // Byte by byte: the three delimiters are ASCII (a set of chars is searched char by char, decoding UTF-8).
    let end = rest
        .bytes()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, parse_port(port)?),
        None => (authority, default_port),
    };
    if port == default_port && authority.len() != host.len() {
        return None; // the parser drops a default port: the string would change
    }
    if !plain_host(host) {
        return None;
    }
    let path_and_query = match tail.find('#') {
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
    let authority_next = matches!(b.get(1), Some(b'/' | b'\\' | b'\t' | b'\n' | b'\r'));
    (plain_authority && !authority_next).then_some((origin, rest))
}

/// A decimal port without leading zeros (the parser rewrites `:080`), 1..=65535.
fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || s.starts_with('0') || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok()
}

/// A lowercase ASCII domain whose labels are letters, digits and hyphens (no punycode label, which the parser
/// validates, and a last label that is not numeric, which it reads as IPv4), or a canonical dotted quad.
fn plain_host(host: &str) -> bool {
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    let last = host.rsplit('.').next().unwrap_or("");
    if last.bytes().next().is_some_and(|b| b.is_ascii_digit()) || last.starts_with("0x") {
        return dotted_quad(host);
    }
    host.split('.').all(|label| {
        !label.is_empty()
            && !label.starts_with("xn--")
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
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
    let query_at = pq.find('?').unwrap_or(b.len());
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
mod tests {
    use super::*;
    use crate::canon;

    fn via_parser(s: &str) -> Option<(String, String, String)> {
        let url = url::Url::parse(s).ok()?;
        if url.as_str() != s.split('#').next().unwrap_or(s) {
            return None;
        }
        Some((
            canon::authority_key(&url),
            canon::host_key(&url).to_owned(),
            canon::path_and_query(&url).to_owned(),
        ))
    }

    fn check(s: &str) {
        if let Some(p) = split(s) {
            let parsed =
                url::Url::parse(s).unwrap_or_else(|e| panic!("split accepted {s:?}, parser: {e}"));
            assert_eq!(p.authority_key(), canon::authority_key(&parsed), "{s:?}");
            assert_eq!(p.host, canon::host_key(&parsed), "{s:?}");
            assert_eq!(p.path_and_query, canon::path_and_query(&parsed), "{s:?}");
            assert_eq!(p.scheme, parsed.scheme(), "{s:?}");
            assert_eq!(Some(p.port), parsed.port_or_known_default(), "{s:?}");
        }
    }

    #[test]
    fn canonical_urls_are_split() {
        for s in [
            "http://a.test/",
            "https://docs.example.com/guide/p/1.html?a=b&c=d",
            "http://127.0.0.30:40123/page/7",
            "https://x-y.example:8443/a;b/c?q=%20x",
            "http://a.test/.well-known/x",
            "http://a.test/a..b/c.",
        ] {
            let p = split(s).unwrap_or_else(|| panic!("{s} not split"));
            assert_eq!(via_parser(s).map(|v| v.0), Some(p.authority_key()), "{s}");
            check(s);
        }
    }

    #[test]
    fn forms_the_parser_would_change_are_left_to_it() {
        for s in [
            "HTTP://a.test/",
            "http://A.test/",
            "http://a.test",
            "http://a.test:80/",
            "https://a.test:443/",
            "http://a.test:080/",
            "http://user:pw@a.test/",
            "http://127.1/",
            "http://0x7f.0.0.1/",
            "http://010.0.0.1/",
            "http://1.2.3.256/",
            "http://a.test.1/",
            "http://xn--nxasmq6b.test/",
            "http://[::1]:8080/",
            "http://a.test/a/../b",
            "http://a.test/a/./b",
            "http://a.test/a/.",
            "http://a.test/%2e%2E/b",
            "http://a.test/a b",
            "http://a.test/a\\b",
            "http://a.test/a\"b",
            "http://a.test/a<b>",
            "http://a.test/a'b?c'd",
            "http://a.test/\u{e9}",
            "http://a.test/%zz",
            "ftp://a.test/",
            "http://a..test/",
            "http://:80/",
        ] {
            assert_eq!(split(s), None, "{s}");
        }
    }

    /// A repeatable stream of pseudo-random numbers (xorshift64) for the generated cases.
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn split_agrees_with_the_parser_on_generated_strings() {
        const HOSTS: &[&str] = &[
            "a",
            "b.test",
            "x-y.example",
            "127.0.0.1",
            "10.1.2.3",
            "A.test",
            "0x7f.1",
            "1.2.3.256",
            "01.2.3.4",
            "xn--a.test",
            "a..b",
            "",
            "a.1b",
            "-a.test",
            "a_b.test",
            "[::1]",
            "u:p@a.test",
            "a.test.",
        ];
        const PORTS: &[&str] = &[
            "", "", "", ":80", ":443", ":8080", ":08", ":0", ":99999", ":1",
        ];
        const PIECES: &[&str] = &[
            "a", "b", "A", "0", "1", ".", "..", "/", "/", "/", "?", "#", ":", "@", "%", "%2e",
            "%2E", "%41", "%4", "-", "~", "&", "=", ";", " ", "\\", "\"", "'", "<", "é", "\t", "*",
            "+", ",", "!", "$", "(", ")", "_", "`", "{", "|", "^",
        ];
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let (mut split_some, mut memo_hits) = (0, 0);
        for _ in 0..60_000 {
            let mut s = String::from(if next().is_multiple_of(2) {
                "http://"
            } else {
                "https://"
            });
            s.push_str(HOSTS[(next() % HOSTS.len() as u64) as usize]);
            s.push_str(PORTS[(next() % PORTS.len() as u64) as usize]);
            if !next().is_multiple_of(8) {
                s.push('/');
            }
            let n = next() % 10;
            for _ in 0..n {
                s.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
            }
            if split(&s).is_some() {
                split_some += 1;
            }
            check(&s);
            memo_hits += usize::from(check_parse(&s));
        }
        assert!(
            split_some > 1_000,
            "the generator must reach the fast path ({split_some})"
        );
        assert!(
            memo_hits > 10_000,
            "the generator must reach the parsed origins ({memo_hits})"
        );
    }

    /// `parse` gives what the parser gives, the first time and again (when the origin may be remembered).
    /// Returns whether the second parse resolved against a remembered origin.
    fn check_parse(s: &str) -> bool {
        let full = url::Url::parse(s).map(String::from);
        assert_eq!(parse(s).map(String::from), full, "{s:?}");
        let remembered = origin_and_rest(s)
            .is_some_and(|(origin, _)| PARSED_ORIGINS.with(|m| m.borrow().contains_key(origin)));
        assert_eq!(parse(s).map(String::from), full, "{s:?} again");
        remembered
    }

    #[test]
    fn parse_agrees_with_the_parser_and_remembers_only_origins_written_as_it_writes_them() {
        for (s, remembered) in [
            ("http://a.test/x?q=1#f", true),
            ("http://a.test/y", true),
            ("https://u:p@a.test:8443/p", true),
            ("http://127.0.0.30:40123/page/7", true),
            ("http://[::1]:81/x", true),
            ("http://a.test//x", false),
            ("http://a.test/\\x", false),
            ("http://a.test/\tx", false),
            ("http://a.test/\t/x", false),
            ("http://a.test/x\t", true),
            ("http://A.test/x", false),
            ("http://a.test:80/x", false),
            ("http://a.test./x", true),
            ("http://a.t\test/x", false),
            ("http://a.test?q/x", false),
            ("http://a.test#f/x", false),
            ("http://b\\a.test/x", false),
            ("http://%61.test/x", false),
            ("http://bücher.test/x", false),
            ("http://a.test", false),
            (" http://a.test/x", false),
            ("ftp://a.test/x", false),
            ("http://[::1/x", false),
        ] {
            assert_eq!(check_parse(s), remembered, "{s:?}");
        }
        // A remembered origin resolves the rest: a different path, query and fragment of the same origin.
        assert_eq!(
            parse("http://a.test/other/../z?b#c").map(String::from),
            Ok("http://a.test/z?b#c".to_owned())
        );
    }

    /// The former dotted-quad check, written with the standard library's splitting and parsing.
    fn dotted_quad_reference(host: &str) -> bool {
        let mut parts = 0;
        for part in host.split('.') {
            parts += 1;
            let ok = !part.is_empty()
                && part.len() <= 3
                && part.bytes().all(|b| b.is_ascii_digit())
                && (part.len() == 1 || !part.starts_with('0'))
                && part.parse::<u16>().is_ok_and(|n| n <= 255);
            if !ok {
                return false;
            }
        }
        parts == 4
    }

    #[test]
    fn dotted_quads_agree_with_the_reference_and_the_parser() {
        // Hosts of 1 to 5 numeric parts (0..=300, some with leading zeros, some empty, some with a letter).
        const PARTS: &[&str] = &[
            "0", "1", "9", "10", "99", "100", "127", "199", "200", "249", "250", "255", "256",
            "299", "300", "00", "01", "010", "0255", "1000", "", "1a",
        ];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut quads = 0;
        for _ in 0..20_000 {
            // Four parts half the time, 1 to 5 otherwise.
            let n = if next().is_multiple_of(2) {
                4
            } else {
                1 + next() % 5
            };
            let host: Vec<&str> = (0..n)
                .map(|_| PARTS[(next() % PARTS.len() as u64) as usize])
                .collect();
            let host = host.join(".");
            assert_eq!(dotted_quad(&host), dotted_quad_reference(&host), "{host:?}");
            let s = format!("http://{host}/x");
            check(&s);
            quads += usize::from(split(&s).is_some());
        }
        assert!(
            quads > 500,
            "the generator must reach the fast path ({quads})"
        );
    }
}
