//! The resolver against `canonicalize_relative` on generated references and bases (deterministic).

use super::resolve::Resolver;
use crawl_core::canon::canonicalize_relative;
use url::Url;

const BASES: &[&str] = &[
    "https://example.com/dir/page.html",
    "https://example.com/",
    "https://example.com",
    "http://example.com:8080/a/b/c?q=1&r=2",
    "https://user:pw@example.com/x/y/",
    "https://EXAMPLE.com./%7Euser/idx.php?x#frag",
    "http://127.0.0.1/a/%2e%2E/b/",
    "https://xn--bcher-kva.example/%C3%A9t%C3%A9/",
    "https://example.com/a;p/b:c/d@e/",
    "https://example.com/dir/page.html?",
    "http://[::1]:81/a",
    "ftp://files.example.com/pub/",
    "mailto:someone@example.com",
    "data:text/html,x",
];

const PIECES: &[&str] = &[
    "",
    "a",
    "b.html",
    "/",
    "//",
    "?",
    "#",
    ".",
    "..",
    "./",
    "../",
    "%2e",
    "%2E%2e",
    "%2e./",
    "%",
    "%41",
    "%7e",
    "%zz",
    "%c3%a9",
    "é",
    " ",
    "\t",
    "\n",
    "\\",
    ";",
    ":",
    "@",
    "=",
    "&",
    "~",
    "!",
    "$",
    "'",
    "(",
    ")",
    "*",
    "+",
    ",",
    "q=1",
    "x y",
    "http:",
    "https:",
    "HTTP:",
    "http://",
    "https://",
    "https://other.org",
    "HtTpS://",
    "javascript:",
    "mailto:",
    "ftp://",
    "a:b",
    "c+d.e-f:g",
    "1a:",
    "localhost:8080",
    "example.com",
    "other.org:443",
    "[::1]",
    "user@",
    "a%20b",
    "|",
    "^",
    "`",
    "{",
    "}",
    "<",
    ">",
    "\"",
    "\u{0}",
    "\u{7f}",
    "index.html",
    "..%2f",
    "%00",
    "xn--",
    "WWW.Example.COM",
    ".hidden",
    "...",
    "/./",
    "/../",
];

/// xorshift64*.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn href(state: &mut u64) -> String {
    let n = (next(state) % 7) as usize;
    (0..n)
        .map(|_| PIECES[(next(state) % PIECES.len() as u64) as usize])
        .collect()
}

fn same(resolver: &mut Resolver<'_>, base: &Url, href: &str) {
    let fast = resolver.resolve(href).map(|u| u.to_string());
    let slow = canonicalize_relative(base, href).map(|u| u.to_string());
    match (&fast, &slow) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "base {base} href {href:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("base {base} href {href:?}: {fast:?} vs {slow:?}"),
    }
}

#[test]
fn resolves_like_canonicalize_relative() {
    let mut state = 0x1234_5678_9abc_def1u64;
    for base in BASES {
        let base = Url::parse(base).unwrap();
        let mut resolver = Resolver::new(&base);
        for _ in 0..20_000 {
            let href = href(&mut state);
            same(&mut resolver, &base, &href);
        }
        for piece in PIECES {
            same(&mut resolver, &base, piece);
        }
        let long = format!("{}x", "a/../".repeat(1_000));
        same(&mut resolver, &base, &long);
        same(&mut resolver, &base, &format!("/{}", "b".repeat(3_000)));
    }
}

#[test]
fn resolves_common_references() {
    let base = Url::parse("https://example.com/dir/page.html?q=1").unwrap();
    let mut r = Resolver::new(&base);
    let cases = [
        ("a.html", "https://example.com/dir/a.html"),
        ("../b?x=1", "https://example.com/b?x=1"),
        ("/c/./d", "https://example.com/c/d"),
        ("//cdn.example.net/f.pdf", "https://cdn.example.net/f.pdf"),
        ("?p=2", "https://example.com/dir/page.html?p=2"),
        ("", "https://example.com/dir/page.html?q=1"),
        ("HTTP://Other.ORG:80/%7ex", "http://other.org/~x"),
    ];
    for (href, want) in cases {
        assert_eq!(r.resolve(href).unwrap().as_str(), want, "{href}");
    }
    assert!(r.resolve("javascript:void(0)").is_err());
    assert!(r.resolve("mailto:a@b.c").is_err());
}
