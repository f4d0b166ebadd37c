//! Unit tests for `robots` matching: RFC 9309 and Google spec examples, percent-encoding, precedence, wildcards.

use super::*;

pub(super) fn allowed(body: &str, agent: &str, path: &str) -> bool {
    Robots::parse(body.as_bytes(), agent).is_allowed(path)
}

/// Asserts each `(path, expected)` for one body and agent.
pub(super) fn check(body: &str, agent: &str, cases: &[(&str, bool)]) {
    let r = Robots::parse(body.as_bytes(), agent);
    for &(path, want) in cases {
        assert_eq!(
            r.is_allowed(path),
            want,
            "agent {agent:?} path {path:?} in\n{body}"
        );
    }
}

const RFC_EXAMPLE: &str = "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n\
User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n\
User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\nUser-Agent: quxbot\n\nEOF\n";

#[test]
fn rfc_5_1_simple_example() {
    check(
        RFC_EXAMPLE,
        "foobot/1.0",
        &[
            ("/example/page.html", true),
            ("/example/allowed.gif", true),
            ("/example/other.html", false),
            ("/", false),
            ("/publications/", false),
        ],
    );
    for agent in ["barbot", "bazbot/2 (+https://baz)"] {
        check(
            RFC_EXAMPLE,
            agent,
            &[
                ("/example/page.html", false),
                ("/example/other.html", true),
                ("/x.gif", true),
            ],
        );
    }
    check(
        RFC_EXAMPLE,
        "quxbot",
        &[("/example/page.html", true), ("/a.gif", true)],
    );
    check(
        RFC_EXAMPLE,
        "otherbot",
        &[
            ("/a/b.gif", false),
            ("/a/b.gif?x", true),
            ("/example/", false),
            ("/example/x", false),
            ("/publications/", true),
            ("/publications/x.gif", true),
            ("/other", true),
        ],
    );
}

#[test]
fn rfc_5_2_longest_match() {
    let body =
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n";
    check(
        body,
        "foobot",
        &[
            ("/example/page/disallowed.gif", false),
            ("/example/page/", true),
            ("/example/page/x", true),
        ],
    );
}

#[test]
fn rfc_percent_encoding_table() {
    let pat = |p: &str| format!("user-agent: *\ndisallow: /\nallow: {p}$\n");
    check(
        &pat("/foo/bar?baz=quz"),
        "x",
        &[("/foo/bar?baz=quz", true), ("/foo/bar?baz=qu", false)],
    );
    check(
        &pat("/foo/bar/ツ"),
        "x",
        &[("/foo/bar/%E3%83%84", true), ("/foo/bar/%e3%83%84", true)],
    );
    check(
        &pat("/foo/bar/%E3%83%84"),
        "x",
        &[("/foo/bar/%E3%83%84", true), ("/foo/bar/ツ", true)],
    );
    check(
        &pat("/foo/bar/%62%61%7A"),
        "x",
        &[("/foo/bar/baz", true), ("/foo/bar/%62%61%7A", true)],
    );
}

#[test]
fn percent_encoding_normalisation() {
    let body =
        "user-agent: *\ndisallow: /a%3cb\ndisallow: /%7Ebob\ndisallow: /sp ace\ndisallow: /%2F\n";
    check(
        body,
        "x",
        &[
            ("/a%3Cb", false),
            ("/a%3cb", false),
            ("/a<b", false),
            ("/~bob/x", false),
            ("/%7ebob", false),
            ("/sp%20ace", false),
            ("/%2f", false),
            ("/", true),
            ("/a%3Db", true),
        ],
    );
    // An encoded reserved character is not the same as the raw one.
    check(
        "user-agent: *\ndisallow: /a%2Fb\n",
        "x",
        &[("/a/b", true), ("/a%2fb", false)],
    );
    // A bare or malformed `%` is kept literally and does not panic.
    check(
        "user-agent: *\ndisallow: /50%\ndisallow: /%zz\n",
        "x",
        &[("/50%", false), ("/%zz", false), ("/%", true)],
    );
    // Invalid UTF-8 bytes in a pattern are encoded byte-wise (Latin-1 files match their encoded URLs).
    let r = Robots::parse(b"user-agent: *\ndisallow: /caf\xE9\n", "x");
    assert!(!r.is_allowed("/caf%E9"));
    assert!(r.is_allowed("/caf"));
}

#[test]
fn google_path_matching_examples() {
    let g = |p: &str| format!("user-agent: *\ndisallow: {p}\n");
    check(&g("/"), "x", &[("/", false), ("/a/b", false)]);
    check(&g("/*"), "x", &[("/", false), ("/a/b", false)]);
    check(&g("/$"), "x", &[("/", false), ("/a", true), ("/?x", true)]);
    let fish_yes = [
        "/fish",
        "/fish.html",
        "/fish/salmon.html",
        "/fishheads",
        "/fishheads/yummy.html",
        "/fish.php?id=anything",
    ];
    let fish_no = ["/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"];
    for p in ["/fish", "/fish*"] {
        let r = Robots::parse(g(p).as_bytes(), "x");
        fish_yes
            .iter()
            .for_each(|u| assert!(!r.is_allowed(u), "{p} should block {u}"));
        fish_no
            .iter()
            .for_each(|u| assert!(r.is_allowed(u), "{p} should not block {u}"));
    }
    check(
        &g("/fish/"),
        "x",
        &[
            ("/fish/", false),
            ("/fish/?id=anything", false),
            ("/fish/salmon.htm", false),
            ("/fish", true),
            ("/fish.html", true),
            ("/animals/fish/", true),
            ("/Fish/Salmon.asp", true),
        ],
    );
    check(
        &g("/*.php"),
        "x",
        &[
            ("/index.php", false),
            ("/folder/filename.php?parameters", false),
            ("/folder/any.php.file.html", false),
            ("/filename.php/", false),
            ("/", true),
            ("/windows.PHP", true),
        ],
    );
    check(
        &g("/*.php$"),
        "x",
        &[
            ("/filename.php", false),
            ("/folder/filename.php", false),
            ("/filename.php?parameters", true),
            ("/filename.php/", true),
            ("/filename.php5", true),
            ("/windows.PHP", true),
        ],
    );
    check(
        &g("/fish*.php"),
        "x",
        &[
            ("/fish.php", false),
            ("/fishheads/catfish.php?parameters", false),
            ("/Fish.PHP", true),
        ],
    );
}

#[test]
fn google_precedence_examples() {
    let b = |a: &str, d: &str| format!("user-agent: *\nallow: {a}\ndisallow: {d}\n");
    assert!(allowed(&b("/p", "/"), "x", "/page"));
    assert!(allowed(&b("/folder", "/folder"), "x", "/folder/page"));
    assert!(!allowed(&b("/page", "/*.htm"), "x", "/page.htm"));
    assert!(allowed(&b("/page", "/*.ph"), "x", "/page.php"));
    assert!(allowed(&b("/$", "/"), "x", "/"));
    assert!(!allowed(&b("/$", "/"), "x", "/page.htm"));
    assert!(allowed(&b("/x/page.", "/*.html"), "x", "/x/page.html"));
    assert!(!allowed(&b("/x/page.", "/*.html"), "x", "/x/y.html"));
    // Rule order in the file does not matter.
    assert!(allowed(
        "user-agent: *\ndisallow: /x\nallow: /x\n",
        "x",
        "/x"
    ));
}

#[test]
fn google_special_characters() {
    let body = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n";
    check(
        body,
        "FooBot",
        &[
            ("/foo/bar/quz", false),
            ("/foo/quz", true),
            ("/foo//quz", true),
            ("/foo/bax/quz", true),
        ],
    );
    let body = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n";
    check(
        body,
        "FooBot",
        &[
            ("/foo/bar", false),
            ("/foo/bar/qux", true),
            ("/foo/bar/", true),
            ("/foo/bar/baz", true),
        ],
    );
    let body = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n";
    check(body, "FooBot", &[("/foo/bar", true), ("/foo/quz", false)]);
    // `$` in the middle is literal; multiple stars collapse.
    check(
        "user-agent: *\ndisallow: /a$b\n",
        "x",
        &[("/a$b", false), ("/a", true)],
    );
    check(
        "user-agent: *\ndisallow: /a***b$\n",
        "x",
        &[("/a/x/b", false), ("/ab", false), ("/ab/", true)],
    );
    // Query strings take part in matching.
    check(
        "user-agent: *\ndisallow: /*?sid=\n",
        "x",
        &[("/p?sid=1", false), ("/p?x=1&sid=2", true), ("/p", true)],
    );
    check(
        "user-agent: *\ndisallow: /*sid=\n",
        "x",
        &[("/p?x=1&sid=2", false)],
    );
}

#[test]
fn is_allowed_input_handling() {
    let r = Robots::parse(b"user-agent: *\ndisallow: /a\ndisallow: /$\n", "x");
    assert!(!r.is_allowed(""), "empty input is the root");
    assert!(!r.is_allowed("a/b"), "missing slash is added");
    assert!(r.is_allowed("?q"), "`/$` does not match `/?q`");
    assert!(!r.is_allowed("/a#frag"));
    assert!(r.is_allowed("/b#/a"));
    assert!(r.is_allowed("/b/a"));
}

#[test]
fn robots_txt_is_always_allowed() {
    for r in [
        Robots::disallow_all(),
        Robots::parse(b"user-agent: *\ndisallow: /robots.txt\ndisallow: /\n", "x"),
    ] {
        assert!(r.is_allowed("/robots.txt"));
        assert!(r.is_allowed("/robots.txt?x=1"));
        assert!(!r.is_allowed("/robots.txt.bak"));
        assert!(!r.is_allowed("/"));
    }
}

#[test]
fn allow_all_and_disallow_all() {
    let a = Robots::allow_all();
    assert!(a.is_allowed("/") && a.is_allowed("/x?y"));
    assert_eq!(
        (a.rule_count(), a.crawl_delay(), a.sitemaps().len()),
        (0, None, 0)
    );
    let d = Robots::disallow_all();
    assert!(!d.is_allowed("/") && !d.is_allowed("/x?y") && !d.is_allowed(""));
    assert_eq!(d.rule_count(), 1);
    assert_ne!(a, d);
}

#[test]
fn pathological_wildcards_are_correct() {
    let text = format!("/{}", "a".repeat(2000));
    let body = "user-agent: *\ndisallow: /*a*a*a*a*a*a*a*b\nallow: /*a*a*a*a*a$\n";
    let r = Robots::parse(body.as_bytes(), "x");
    assert!(r.is_allowed(&text));
    assert!(!r.is_allowed(&format!("{text}b")));
    assert!(glob_match(b"/*a*b", b"/xaxbxb", true));
    assert!(!glob_match(b"/*a*b", b"/xaxbxc", true));
    assert!(glob_match(b"*", b"", true));
    assert!(!glob_match(b"/a", b"/", false));
}
