//! The string forms of `urlparts` against the parser: split, parse with remembered origins, join.

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
        "a", "b", "A", "0", "1", ".", "..", "/", "/", "/", "?", "#", ":", "@", "%", "%2e", "%2E",
        "%41", "%4", "-", "~", "&", "=", ";", " ", "\\", "\"", "'", "<", "é", "\t", "*", "+", ",",
        "!", "$", "(", ")", "_", "`", "{", "|", "^",
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
        "0", "1", "9", "10", "99", "100", "127", "199", "200", "249", "250", "255", "256", "299",
        "300", "00", "01", "010", "0255", "1000", "", "1a",
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

/// `href` joined to `base` as strings; the positions it gives are those of `split`'s parts.
fn join(base: &str, href: &str) -> Option<String> {
    let (joined, at) = JoinBase::new(base)?.join(href)?;
    assert_eq!(at.parts(&joined), split(&joined), "{base:?} + {href:?}");
    Some(joined)
}

/// `join` gives what resolving with the parser gives, wherever it answers.
fn check_join(base: &str, href: &str) -> bool {
    let Some(joined) = join(base, href) else {
        return false;
    };
    let parsed = url::Url::parse(base)
        .unwrap_or_else(|e| panic!("join answered for {base:?} the parser refuses: {e}"));
    let resolved = canon::canonicalize_relative(&parsed, href).map(String::from);
    assert_eq!(Ok(joined), resolved, "{base:?} + {href:?}");
    true
}

#[test]
fn join_gives_what_the_parser_gives() {
    let base = "http://a.test/dir/page.html?q=1";
    for (href, joined) in [
        ("p", Some("http://a.test/dir/p")),
        ("p/q?x=1&y=2", Some("http://a.test/dir/p/q?x=1&y=2")),
        ("/abs/p", Some("http://a.test/abs/p")),
        ("/", Some("http://a.test/")),
        ("p#frag", Some("http://a.test/dir/p")),
        ("p?a.b", Some("http://a.test/dir/p?a.b")),
        ("a..b", Some("http://a.test/dir/a..b")),
        ("", None),
        ("#f", None),
        ("?q", None),
        ("p?", None),
        ("./p", None),
        ("../p", None),
        ("p/.", None),
        ("//b.test/p", None),
        ("/\\b.test/p", None),
        ("mailto:x@y", None),
        ("http://b.test/p", Some("http://b.test/p")),
        ("https://b.test:8443/p?q#f", Some("https://b.test:8443/p?q")),
        ("http://a.test/dir/x", Some("http://a.test/dir/x")),
        ("http://b.test", None),
        ("HTTP://b.test/p", None),
        ("http://b.test/p?", None),
        ("http://u@b.test/p", None),
        ("http://b.test/%41", None),
        ("http://b.test:80/p", None),
        ("http://b.test/./p", None),
        ("p%41", None),
        (" p", None),
        ("p q", None),
        ("p\tq", None),
        ("é", None),
    ] {
        assert_eq!(join(base, href).as_deref(), joined, "{href:?}");
        if joined.is_some() {
            assert!(check_join(base, href));
        }
    }
    for base in [
        "http://a.test/%41/",
        "http://a.test/x#f",
        "http://A.test/x",
        "http://a.test:80/x",
        "http://u@a.test/x",
        "http://[::1]/x",
        "http://a.test",
    ] {
        assert_eq!(join(base, "p"), None, "{base:?}");
    }
    let long = format!("/{}", "x".repeat(canon::MAX_URL_LEN));
    assert_eq!(join(base, &long), None, "over the length limit");
}

#[test]
fn join_agrees_with_the_parser_on_generated_pairs() {
    const BASES: &[&str] = &[
        "http://a.test/",
        "http://a.test/d/",
        "http://a.test/d/p.html",
        "https://b.example:8443/d/e/p?q=1",
        "http://127.0.0.30:40123/page/7",
        "http://a.test/d;p/x",
        "http://a.test/%41/x",
        "http://a.test/x?q=%20",
        "http://A.test/x",
    ];
    const PIECES: &[&str] = &[
        "a", "b", "A", "0", ".", "..", "/", "/", "/", "?", "#", ":", "@", "%", "%2e", "%41", "-",
        "~", "&", "=", ";", " ", "\\", "\"", "'", "<", "é", "\t", "*", "+", ",", "!", "$", "(",
        ")", "_", "`", "{", "|", "^", "[", "]",
    ];
    let mut next = xorshift(0x5851_f42d_4c95_7f2d);
    let mut joined = 0;
    for _ in 0..60_000 {
        let base = BASES[(next() % BASES.len() as u64) as usize];
        const ORIGINS: &[&str] = &[
            "",
            "",
            "",
            "http://a.test",
            "https://b.example:8443",
            "http://127.0.0.30:40123",
            "http://A.test",
            "http://a.test:80",
            "http:",
            "https://",
        ];
        let mut href = String::from(ORIGINS[(next() % ORIGINS.len() as u64) as usize]);
        for _ in 0..1 + next() % 8 {
            href.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
        }
        joined += usize::from(check_join(base, &href));
    }
    assert!(
        joined > 1_500,
        "the generator must reach the join ({joined})"
    );
}
