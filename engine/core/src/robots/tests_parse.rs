//! Unit tests for `robots` parsing: agents, groups, line syntax, crawl-delay, sitemaps, size limit, robustness,
//! status classification and product tokens.

use super::tests::{allowed, check};
use super::*;

#[test]
fn agent_matching_is_case_insensitive_by_product_token() {
    let body = "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n";
    for agent in ["Foo", "foo", "FOO/1.2 (+https://foo)", "  foo"] {
        check(body, agent, &[("/x/y", true), ("/a", false)]);
    }
    check(body, "Bar", &[("/a", true)]);
    check(
        "user-agent: crawl-engine/0.1\ndisallow: /p\n",
        "CRAWL-ENGINE/9",
        &[("/p", false)],
    );
    // A different product token (prefix or extension) does not match.
    check(
        "user-agent: crawl\ndisallow: /\n",
        "crawl-engine/0.1",
        &[("/a", true)],
    );
    check(
        "user-agent: crawl-engine-news\ndisallow: /\n",
        "crawl-engine",
        &[("/a", true)],
    );
    // A crawler with an empty product token only obeys `*`.
    check(
        "user-agent: \ndisallow: /\nuser-agent: *\ndisallow: /s\n",
        "123",
        &[("/a", true), ("/s", false)],
    );
}

#[test]
fn groups_are_merged_and_specific_beats_global() {
    let body = "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: *\ndisallow: /baz\n\n\
user-agent: examplebot\ndisallow: /qux\n";
    let r = Robots::parse(body.as_bytes(), "ExampleBot/1");
    assert_eq!(r.rule_count(), 3);
    for (p, want) in [
        ("/foo", false),
        ("/bar", false),
        ("/qux", false),
        ("/baz", true),
    ] {
        assert_eq!(r.is_allowed(p), want, "{p}");
    }
    let g = Robots::parse(body.as_bytes(), "other");
    assert_eq!(g.rule_count(), 1);
    assert!(!g.is_allowed("/baz") && g.is_allowed("/foo"));

    let body = "user-agent: *\ndisallow: /x/\nuser-agent: FooBot\ndisallow: /y/\n";
    check(body, "FooBot", &[("/x/page", true), ("/y/page", false)]);
    // Global groups are merged too.
    check(
        "user-agent: *\ndisallow: /a\nuser-agent: *\ndisallow: /b\n",
        "x",
        &[("/a", false), ("/b", false), ("/c", true)],
    );
}

#[test]
fn google_group_syntax() {
    let body = "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\n\
allow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n";
    check(
        body,
        "FooBot",
        &[
            ("/x/b", true),
            ("/z/d", true),
            ("/y/c", false),
            ("/foo/bar/", false),
        ],
    );
    check(
        body,
        "BarBot",
        &[("/y/c", true), ("/w/a", true), ("/z/d", false)],
    );
    check(body, "BazBot", &[("/z/d", true), ("/foo/bar/", false)]);
    // Sitemap and unknown lines do not end a run of user-agent lines.
    let body = "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n";
    check(body, "BarBot", &[("/", false)]);
    let body = "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n";
    check(body, "FooBot", &[("/", false)]);
    // Both agents of a shared group get its rules; `*` and a specific name may share one.
    let body = "user-agent: *\nuser-agent: foobot\ndisallow: /s\nuser-agent: *\ndisallow: /g\n";
    check(body, "foobot", &[("/s", false), ("/g", true)]);
    check(body, "other", &[("/s", false), ("/g", false)]);
}

#[test]
fn rules_before_any_user_agent_are_ignored() {
    let r = Robots::parse(b"disallow: /\nallow: /x\ncrawl-delay: 4\n", "x");
    assert_eq!(r.rule_count(), 0);
    assert!(r.is_allowed("/a"));
    assert_eq!(r.crawl_delay(), None);
}

#[test]
fn no_matching_group_or_empty_file_allows_all() {
    let r = Robots::parse(
        b"user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n",
        "QuxBot",
    );
    assert!(r.is_allowed("/x/y"));
    assert_eq!(r.rule_count(), 0);
    for body in [
        &b""[..],
        b"\n\n\r\n",
        b"# only a comment\n",
        b"\xEF\xBB\xBF",
    ] {
        let r = Robots::parse(body, "x");
        assert_eq!(r, Robots::allow_all());
        assert!(r.is_allowed("/"));
    }
    // A matching but empty group allows all and hides `*`.
    check(
        "user-agent: *\ndisallow: /\nuser-agent: foo\n",
        "foo",
        &[("/a", true)],
    );
    check(
        "user-agent: *\ndisallow: /\nuser-agent: foo\ndisallow:\n",
        "foo",
        &[("/a", true)],
    );
}

#[test]
fn line_syntax_and_typos() {
    let variants = [
        "user-agent: FooBot\ndisallow: /\n",
        "USER-AGENT: FooBot\nDISALLOW: /\n",
        "  User-Agent  :   FooBot   \n\t Disallow\t:\t/ \n",
        "useragent: FooBot\ndissallow: /\n",
        "user agent: FooBot\ndisalow: /\n",
        "User_Agent: FooBot\ndisallows: /\n",
        "user-agent FooBot\ndisallow /\n",
        "user-agent: FooBot\r\ndisallow: /\r\n",
        "user-agent: FooBot\rdisallow: /\r",
        "\u{FEFF}user-agent: FooBot\ndisallow: /\n",
        "user-agent: FooBot # comment\ndisallow: / # comment\n",
        "foo: bar\nuser-agent: FooBot\nnoindex: /x\ndisallow: /",
    ];
    for body in variants {
        check(body, "FooBot", &[("/a", false)]);
    }
    // Unknown keys and values with extra tokens but no colon are ignored.
    for body in [
        "foo: FooBot\nbar: /\n",
        "user-agent: FooBot\ndisallow / x\n",
        "user-agent: FooBot\nallowed: /\n",
    ] {
        check(body, "FooBot", &[("/a", true)]);
    }
    // Values are case-sensitive.
    check(
        "user-agent: FooBot\ndisallow: /X/\n",
        "FooBot",
        &[("/x/y", true), ("/X/y", false)],
    );
    // A pattern without a leading `/` is anchored at the root.
    check(
        "user-agent: *\ndisallow: private/\n",
        "x",
        &[("/private/a", false), ("/a/private/", true)],
    );
}

#[test]
fn crawl_delay_parsing() {
    let cd = |v: &str| {
        Robots::parse(format!("user-agent: *\ncrawl-delay: {v}\n").as_bytes(), "x").crawl_delay()
    };
    assert_eq!(cd("10"), Some(Duration::from_secs(10)));
    assert_eq!(cd("0.5"), Some(Duration::from_millis(500)));
    assert_eq!(cd(".25"), Some(Duration::from_millis(250)));
    assert_eq!(cd("3."), Some(Duration::from_secs(3)));
    assert_eq!(cd("0"), Some(Duration::ZERO));
    // Whole milliseconds, rounded: a snapshot keeps milliseconds (the robots fuzz target found 0.222222 s coming
    // back from a snapshot as 222 ms).
    assert_eq!(cd("0.222222"), Some(Duration::from_millis(222)));
    assert_eq!(cd("0.0015"), Some(Duration::from_millis(2)));
    assert_eq!(cd("0.3"), Some(Duration::from_millis(300)));
    assert_eq!(cd("0.0004"), Some(Duration::ZERO));
    assert_eq!(cd("2 # two seconds"), Some(Duration::from_secs(2)));
    assert_eq!(
        cd("99999999999999999999999"),
        Some(Duration::from_secs(86_400))
    );
    for junk in [
        "", "abc", "-1", "1e3", "5s", "1.2.3", ".", "inf", "NaN", "+3", "1 2",
    ] {
        assert_eq!(cd(junk), None, "{junk:?}");
    }
    let body = "user-agent: *\ncrawl-delay: 7\nuser-agent: foo\ncrawl-delay: 2\nuser-agent: foo\ncrawl-delay: 3\n";
    assert_eq!(
        Robots::parse(body.as_bytes(), "foo").crawl_delay(),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        Robots::parse(body.as_bytes(), "bar").crawl_delay(),
        Some(Duration::from_secs(7))
    );
    // A specific group without a delay falls back to the `*` delay; its rules still win.
    let body = "user-agent: *\ncrawl-delay: 7\ndisallow: /\nuser-agent: foo\nallow: /\n";
    let r = Robots::parse(body.as_bytes(), "foo");
    assert_eq!(r.crawl_delay(), Some(Duration::from_secs(7)));
    assert!(r.is_allowed("/a"));
    // Crawl-delay ends a user-agent run.
    let body = "user-agent: a\ncrawl-delay: 1\nuser-agent: b\ndisallow: /\n";
    check(body, "a", &[("/x", true)]);
}

#[test]
fn sitemaps_are_collected_everywhere() {
    let body = "Sitemap: https://example.com/s1.xml\nuser-agent: foo\nsitemap:http://example.com/s2.xml\n\
disallow: /\nSITEMAP:   https://example.com/s1.xml  \nsitemap: /relative.xml\nsitemap: ftp://x/y\n\
sitemap:\nsite-map: HTTPS://example.com/s3.xml # c\nsitemap: https://\n";
    let want = [
        "https://example.com/s1.xml",
        "http://example.com/s2.xml",
        "HTTPS://example.com/s3.xml",
    ];
    for agent in ["foo", "bar"] {
        assert_eq!(Robots::parse(body.as_bytes(), agent).sitemaps(), want);
    }
    // Sitemap lines do not take part in groups.
    assert!(!allowed(body, "foo", "/x"));
}

#[test]
fn body_is_cut_at_max_bytes_on_a_line_boundary() {
    let mut body = String::from("user-agent: *\ndisallow: /early\n");
    let filler = "# filler filler filler filler filler filler filler filler\n";
    while body.len() + filler.len() < MAX_ROBOTS_BYTES - 20 {
        body.push_str(filler);
    }
    // This line straddles the limit: it must be dropped, not parsed as a shorter prefix.
    while body.len() < MAX_ROBOTS_BYTES - 12 {
        body.push('#');
    }
    body.push('\n');
    body.push_str("disallow: /straddle-0123456789\n");
    assert!(body.len() > MAX_ROBOTS_BYTES);
    while body.len() < 600 * 1024 {
        body.push_str("disallow: /late\n");
    }
    body.push_str("sitemap: https://example.com/late.xml\n");
    let r = Robots::parse(body.as_bytes(), "x");
    assert!(!r.is_allowed("/early"));
    assert!(r.is_allowed("/late"));
    assert!(
        r.is_allowed("/s"),
        "partial straddling line must be ignored"
    );
    assert!(r.is_allowed("/straddle-0123456789"));
    assert!(r.sitemaps().is_empty());
    assert_eq!(r.rule_count(), 1);

    // Cut exactly at a line end keeps the last full line.
    let last = "disallow: /last";
    let mut body = String::from("user-agent: *\n");
    body.push_str(&"#".repeat(MAX_ROBOTS_BYTES - body.len() - 1 - last.len()));
    body.push('\n');
    body.push_str(last);
    assert_eq!(body.len(), MAX_ROBOTS_BYTES);
    body.push_str("\ndisallow: /after\n");
    let r = Robots::parse(body.as_bytes(), "x");
    assert!(!r.is_allowed("/last"));
    assert!(r.is_allowed("/after"));
    // One huge line with no terminator before the limit yields nothing.
    let r = Robots::parse(&vec![b'a'; MAX_ROBOTS_BYTES + 10], "x");
    assert_eq!(r, Robots::allow_all());
}

#[test]
fn garbage_and_binary_input_do_not_panic() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as u8
    };
    let alphabet = b"user-agent:disallow:allow:crawl-delay:sitemap*$%/#\n\r\t ?.0123456789aAzZ\xEF\xBB\xBF\xFF\x00";
    for round in 0..200 {
        let len = (round * 37) % 3000;
        let body: Vec<u8> = (0..len)
            .map(|_| {
                let b = next();
                if round % 2 == 0 {
                    b
                } else {
                    alphabet[usize::from(b) % alphabet.len()]
                }
            })
            .collect();
        let r = Robots::parse(&body, "crawl-engine/0.1");
        let path: String = (0..20)
            .map(|_| char::from(alphabet[usize::from(next()) % 60]))
            .collect();
        let _ = r.is_allowed(&path);
        let _ = r.is_allowed("/");
        let _ = r.crawl_delay();
        assert!(
            r.sitemaps()
                .iter()
                .all(|s| s.to_ascii_lowercase().starts_with("http"))
        );
    }
    let all: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let r = Robots::parse(&all, "x");
    assert!(r.is_allowed("/robots.txt"));
    assert!(Robots::parse(b"user-agent: *\ndisallow: /\xFF\xFE%\n", "x").is_allowed("/a"));
}

#[test]
fn classify_status_matrix() {
    let cases = [
        (200, StatusClass::Parse),
        (204, StatusClass::Parse),
        (299, StatusClass::Parse),
        (301, StatusClass::Redirect),
        (302, StatusClass::Redirect),
        (304, StatusClass::Redirect),
        (307, StatusClass::Redirect),
        (308, StatusClass::Redirect),
        (400, StatusClass::AllowAll),
        (401, StatusClass::AllowAll),
        (403, StatusClass::AllowAll),
        (404, StatusClass::AllowAll),
        (410, StatusClass::AllowAll),
        (429, StatusClass::AllowAll),
        (499, StatusClass::AllowAll),
        (500, StatusClass::Unavailable),
        (503, StatusClass::Unavailable),
        (599, StatusClass::Unavailable),
        (100, StatusClass::Unavailable),
        (0, StatusClass::Unavailable),
        (600, StatusClass::Unavailable),
        (u16::MAX, StatusClass::Unavailable),
    ];
    for (status, want) in cases {
        assert_eq!(classify_status(status), want, "{status}");
    }
    assert_eq!(MAX_ROBOTS_REDIRECTS, 5);
    const { assert!(MAX_ROBOTS_BYTES >= 500 * 1024) };
}

#[test]
fn product_token_extraction() {
    let cases = [
        ("crawl-engine/0.1 (+https://x)", "crawl-engine"),
        ("Googlebot", "Googlebot"),
        ("Mozilla/5.0 (compatible; Foo)", "Mozilla"),
        ("  foo_bar baz", "foo_bar"),
        ("bot2000", "bot"),
        ("123bot", ""),
        ("", ""),
        ("ツbot", ""),
    ];
    for (ua, want) in cases {
        assert_eq!(product_token(ua), want, "{ua:?}");
    }
}

#[test]
fn a_snapshot_reads_back_as_the_same_rules() {
    let body = b"User-agent: other\nDisallow: /\n\nUser-agent: *\nAllow: /a/b$\nDisallow: /a\nDisallow: /x*y%7e z\n\
        Allow: /p/%C3%A9\nCrawl-delay: 2.5\nSitemap: http://h.test/sitemap.xml\nSitemap: http://h.test/s2.xml\n";
    let r = Robots::parse(body, "crawl-engine/0.1");
    let back = Robots::from_snapshot(&r.snapshot()).expect("a snapshot");
    assert_eq!(back, r);
    for path in [
        "/a/b",
        "/a/b/c",
        "/a",
        "/x1y~ z",
        "/p/%c3%a9",
        "/robots.txt",
        "/",
    ] {
        assert_eq!(back.is_allowed(path), r.is_allowed(path), "{path}");
    }
    assert_eq!(back.crawl_delay(), Some(Duration::from_millis(2500)));
    let r = Robots::parse(b"User-agent: *\nCrawl-delay: .222222\n", "crawl-engine/0.1");
    assert_eq!(Robots::from_snapshot(&r.snapshot()), Some(r));
    for r in [Robots::allow_all(), Robots::disallow_all()] {
        assert_eq!(Robots::from_snapshot(&r.snapshot()), Some(r));
    }
    assert_eq!(Robots::from_snapshot(b"User-agent: *\nDisallow: /\n"), None);
    assert_eq!(Robots::from_snapshot(b"robots/1\nrule x 1 0 /\n"), None);
}
