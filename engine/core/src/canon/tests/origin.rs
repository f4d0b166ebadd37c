//! Links written with the page's own `scheme://authority` resolve as path-absolute references: the result is the
//! full parse's, for every base and rest tried.

use crate::canon::*;

/// The resolution without the shortcut.
fn full_parse(base: &Url, href: &str) -> Result<String, CanonError> {
    let href = trim_input(href)?;
    Url::options()
        .base_url(Some(base))
        .parse(&href)
        .map_err(CanonError::from)
        .and_then(normalize)
        .map(String::from)
}

#[test]
fn same_origin_links_resolve_as_the_full_parse_does() {
    let bases = [
        "http://a.test/",
        "http://a.test/dir/page.html?q=1#f",
        "https://a.test:8443/x/",
        "http://u:p@a.test/x/y",
        "http://u@a.test/",
        "http://127.0.0.30:8080/p/1",
        "http://[::1]:81/p/q",
        "http://xn--bcher-kva.test/",
    ];
    let rests = [
        "",
        "/",
        "/x",
        "/x/../y",
        "/./z",
        "/%2e%2e/w",
        "/a b",
        "/é",
        "/p?q=1#f",
        "/?",
        "/#",
        "//evil.test/x",
        "/\\evil.test/x",
        "/\\",
        "//",
        ":80/x",
        ":8080/x",
        ".evil.test/x",
        "@evil.test/x",
        "?q",
        "#f",
        "/x\t/y",
        " /x ",
        "/x?utm_source=y&a=1",
        "/p;jsessionid=1/q",
        "/A/B",
        "/%7Euser",
        "/~user",
        "\\x",
        "/x\\y",
    ];
    let mut shortcuts = 0;
    for b in bases {
        let base = Url::parse(b).expect("base");
        let origin = &base[..Position::BeforePath];
        let upper = origin.to_ascii_uppercase();
        for rest in rests {
            for prefix in [origin, upper.as_str()] {
                let href = format!("{prefix}{rest}");
                let got = canonicalize_relative(&base, &href).map(String::from);
                assert_eq!(got, full_parse(&base, &href), "{b} + {href:?}");
                shortcuts += usize::from(
                    same_origin_path(&base, trim_input(&href).expect("short").as_ref()).is_some(),
                );
            }
        }
    }
    assert!(shortcuts >= 100, "the shortcut was taken {shortcuts} times");
}

#[test]
fn other_origins_and_authority_starts_take_the_full_parse() {
    let base = Url::parse("http://a.test:8080/p").expect("base");
    for href in [
        "http://a.test:8080//x",
        "http://a.test:8080/\\x",
        "http://a.test:80801/x",
        "http://a.test:8080.evil/x",
        "https://a.test:8080/x",
        "http://a.test/x",
        "HTTP://a.test:8080/x",
        "http://a.test:8080",
        "http://a.test:8080?q",
    ] {
        assert_eq!(same_origin_path(&base, href), None, "{href}");
    }
    assert_eq!(
        same_origin_path(&base, "http://a.test:8080/x?y"),
        Some("/x?y")
    );
    let ftp = Url::parse("ftp://a.test/p").expect("ftp base");
    assert_eq!(same_origin_path(&ftp, "ftp://a.test/x"), None);
}
