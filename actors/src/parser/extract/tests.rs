//! Unit tests for `extract.rs` (link extraction), kept in a sibling file for length.

use super::*;

const AGENT: &str = "crawlbot";

fn page() -> Url {
    Url::parse("https://example.com/dir/page.html").unwrap()
}

fn opts(agent_token: &str) -> ExtractOptions<'_> {
    ExtractOptions {
        agent_token,
        max_links: MAX_LINKS,
        embeds: false,
    }
}

fn extract(html: &str) -> ExtractedPage {
    extract_links(html.as_bytes(), &page(), &opts(AGENT)).unwrap()
}

fn urls(p: &ExtractedPage) -> Vec<&str> {
    p.links.iter().map(|l| l.url.as_str()).collect()
}

#[test]
fn basic_anchors_resolved_and_deduped() {
    let p = extract(
        r#"<html><body>
        <a href="a.html">A</a>
        <a href="/b">B</a>
        <a href="../c?x=1#frag">C</a>
        <a href="//other.org/d">D</a>
        <a href="https://example.com/dir/a.html">A again</a>
        <a href="a.html#top">A frag</a>
        <a>no href</a>
        </body></html>"#,
    );
    assert_eq!(
        urls(&p),
        [
            "https://example.com/dir/a.html",
            "https://example.com/b",
            "https://example.com/c?x=1",
            "https://other.org/d",
        ]
    );
    assert_eq!(p.links_found, 6);
    assert_eq!(p.invalid, 0);
    assert!(
        p.links
            .iter()
            .all(|l| l.kind == LinkKind::Anchor && !l.nofollow)
    );
}

#[test]
fn all_link_sources() {
    let p = extract(
        r#"<head>
        <link rel="canonical" href="/canon">
        <link rel="alternate" hreflang="de" href="/de/">
        <link rel="stylesheet" href="/style.css">
        <link rel="alternate stylesheet" href="/alt.css">
        <link rel="icon" href="/favicon.ico">
        </head><body>
        <map><area href="/area" shape="rect"></map>
        <iframe src="/frame-in"></iframe>
        <frameset><frame src="/frame"></frameset>
        <img src="/img.png">
        </body>"#,
    );
    let kinds: Vec<(&str, LinkKind)> = p
        .links
        .iter()
        .map(|l| (super::url_path(&l.url), l.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("/canon", LinkKind::Canonical),
            ("/de/", LinkKind::Alternate),
            ("/area", LinkKind::Area),
            ("/frame-in", LinkKind::Iframe),
            ("/frame", LinkKind::Frame),
        ]
    );
    assert_eq!(
        p.canonical.as_ref().map(Url::as_str),
        Some("https://example.com/canon")
    );
    assert_eq!(p.links_found, 5);
}

#[test]
fn base_href_after_links_applies_to_all() {
    let p = extract(
        r#"<a href="early">x</a><base href="https://cdn.example.net/root/"><base href="/ignored/">
        <a href="late">y</a><link rel=canonical href="c">"#,
    );
    assert_eq!(
        urls(&p),
        [
            "https://cdn.example.net/root/early",
            "https://cdn.example.net/root/late",
            "https://cdn.example.net/root/c",
        ]
    );
    assert_eq!(
        p.base.as_ref().map(Url::as_str),
        Some("https://cdn.example.net/root/")
    );
    assert_eq!(
        p.canonical.as_ref().map(Url::as_str),
        Some("https://cdn.example.net/root/c")
    );
}

#[test]
fn relative_base_and_invalid_base() {
    let p = extract(r#"<base href="../other/"><a href="x">x</a>"#);
    assert_eq!(urls(&p), ["https://example.com/other/x"]);
    let p = extract(r#"<base href="javascript:alert(1)"><a href="x">x</a>"#);
    assert!(p.base.is_none());
    assert_eq!(urls(&p), ["https://example.com/dir/x"]);
    let p = extract(r#"<base href="http://[bad"><a href="x">x</a>"#);
    assert!(p.base.is_none());
    assert_eq!(urls(&p), ["https://example.com/dir/x"]);
    let p = extract(r#"<base target="_blank"><base href="/b/"><a href="x">x</a>"#);
    assert_eq!(urls(&p), ["https://example.com/b/x"]);
}

#[test]
fn nofollow_rel_first_occurrence_wins() {
    let p = extract(
        r#"<a href="/s" rel="sponsored NoFollow">1</a><a href="/s">2</a>
        <a href="/f">3</a><a href="/f" rel="nofollow">4</a>"#,
    );
    let nf: Vec<(&str, bool)> = p
        .links
        .iter()
        .map(|l| (super::url_path(&l.url), l.nofollow))
        .collect();
    assert_eq!(nf, [("/s", true), ("/f", false)]);
    assert_eq!(p.links_found, 4);
}

#[test]
fn meta_robots_variants() {
    let cases: &[(&str, bool, bool)] = &[
        (
            r#"<meta name="robots" content="noindex, nofollow">"#,
            true,
            true,
        ),
        (r#"<meta name="ROBOTS" content="NOFOLLOW">"#, true, false),
        (r#"<meta name="robots" content="none">"#, true, true),
        (
            r#"<meta name="robots" content="noindex,follow">"#,
            false,
            true,
        ),
        (
            r#"<meta name="robots" content="index, follow">"#,
            false,
            false,
        ),
        (r#"<meta name="CrawlBot" content="nofollow">"#, true, false),
        (
            r#"<meta name="otherbot" content="noindex,nofollow">"#,
            false,
            false,
        ),
        (
            r#"<meta name="description" content="nofollow noindex">"#,
            false,
            false,
        ),
        (r#"<META NAME="robots" CONTENT="noindex">"#, false, true),
        (r#"<meta name="robots">"#, false, false),
        (r#"<meta content="none" name=" robots ">"#, true, true),
    ];
    for (html, nofollow, noindex) in cases {
        let p = extract(html);
        assert_eq!(
            (p.meta_nofollow, p.meta_noindex),
            (*nofollow, *noindex),
            "{html}"
        );
    }
}

#[test]
fn empty_agent_token_does_not_match_everything() {
    let p = extract_links(br#"<meta name="" content="none">"#, &page(), &opts("")).unwrap();
    assert!(!p.meta_nofollow && !p.meta_noindex);
}

#[test]
fn uppercase_tags_and_attributes() {
    let p = extract(
        r#"<A HREF="/Up">x</A><IFRAME SRC="/If"></IFRAME><LINK REL="CANONICAL" HREF="/C">"#,
    );
    assert_eq!(
        urls(&p),
        [
            "https://example.com/Up",
            "https://example.com/If",
            "https://example.com/C"
        ]
    );
    assert!(p.canonical.is_some());
}

#[test]
fn entities_in_hrefs() {
    let p = extract(
        r#"<a href="/s?a=1&amp;b=2">1</a><a href="/t?a=1&copy=2">2</a>
        <a href="/u?x=&#49;&#x32;&lt;">3</a><a href="&#x2F;v&sol;w">4</a><a href="/w?q=&amp">5</a>"#,
    );
    assert_eq!(
        urls(&p),
        [
            "https://example.com/s?a=1&b=2",
            "https://example.com/t?a=1&copy=2",
            "https://example.com/u?x=12%3C",
            "https://example.com/v/w",
            "https://example.com/w?q=&",
        ]
    );
}

#[test]
fn entity_decoder_edge_cases() {
    assert_eq!(decode_entities("a&b"), "a&b");
    assert_eq!(decode_entities("&"), "&");
    assert_eq!(decode_entities("&#"), "&#");
    assert_eq!(decode_entities("&#x"), "&#x");
    assert_eq!(
        decode_entities("&#0;&#x110000;&#xD800;"),
        "\u{fffd}\u{fffd}\u{fffd}"
    );
    assert_eq!(
        decode_entities("&#128;&#99999999999999999999;"),
        "€\u{fffd}"
    );
    assert_eq!(
        decode_entities("&amp;&ampx&amp=&lt&unknown;"),
        "&&ampx&amp=<&unknown;"
    );
    assert_eq!(decode_entities("é&quot;ü"), "é\"ü");
}

#[test]
fn skips_non_http_links_as_invalid() {
    let p = extract(
        r#"<a href="javascript:void(0)">j</a><a href="mailto:a@b.c">m</a>
        <a href="tel:+123">t</a><a href="ftp://f.com/">f</a><a href="data:text/html,x">d</a>
        <a href="http://[::1">bad</a><a href="javascript:void(0)">j again</a><a href="/ok">ok</a>"#,
    );
    assert_eq!(urls(&p), ["https://example.com/ok"]);
    assert_eq!(p.links_found, 8);
    assert_eq!(p.invalid, 7);
}

#[test]
fn whitespace_in_hrefs() {
    let p = extract("<a href=\"  /sp\n ace\t \">x</a><a href='\n\thttp://b.com/y  '>y</a>");
    assert_eq!(urls(&p), ["https://example.com/sp%20ace", "http://b.com/y"]);
}

#[test]
fn malformed_html() {
    let p = extract(
        r#"<html><body><div><a href="/one">unclosed <p><a href=/two>two<a href='/three'
        class=x>three</div></span></i><a href="/four"  href="/dup-attr">four<a href="/five"#,
    );
    assert_eq!(
        urls(&p),
        [
            "https://example.com/one",
            "https://example.com/two",
            "https://example.com/three",
            "https://example.com/four",
        ]
    );
}

#[test]
fn links_in_scripts_and_comments_are_ignored() {
    let p = extract(
        r#"<!-- <a href="/commented">x</a> --><script>document.write('<a href="/js">')</script>
        <textarea><a href="/ta"></a></textarea><a href="/real">r</a>"#,
    );
    assert_eq!(urls(&p), ["https://example.com/real"]);
}

#[test]
fn tags_split_across_chunks() {
    let mut html = "x".repeat(CHUNK_SIZE - 10);
    html.push_str(r#"<a href="/split-across-the-chunk-boundary">x</a>"#);
    let p = extract(&html);
    assert_eq!(
        urls(&p),
        ["https://example.com/split-across-the-chunk-boundary"]
    );
}

#[test]
fn garbage_and_binary_do_not_panic() {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut bin = Vec::with_capacity(200_000);
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bin.push((state >> 24) as u8);
    }
    let inputs: Vec<Vec<u8>> = vec![
        vec![],
        b"<".to_vec(),
        b"<a href=".to_vec(),
        b"<a href=\"".to_vec(),
        b"<a href=\"/x".to_vec(),
        b"</a></a></a>".to_vec(),
        b"<<<<>>>><a<a<a href=/ok>".to_vec(),
        b"\xff\xfe<\x00a\x00 \x00h\x00r\x00e\x00f\x00".to_vec(),
        b"<meta charset=\"windows-1251\"><a href=\"/\xe0\xe1\">x</a>".to_vec(),
        b"<meta charset=\"utf-16\"><a href=\"/u16\">x</a>".to_vec(),
        bin,
    ];
    for input in &inputs {
        if let Ok(p) = extract_links(input, &page(), &opts(AGENT)) {
            assert!(p.links.len() <= p.links_found);
            assert!(
                p.links
                    .iter()
                    .all(|l| l.url.starts_with("http://") || l.url.starts_with("https://"))
            );
        }
    }
    let p = extract_links(&inputs[8], &page(), &opts(AGENT)).unwrap();
    assert_eq!(urls(&p), ["https://example.com/%D0%B0%D0%B1"]);
}

#[test]
fn huge_attribute_is_invalid_not_fatal() {
    let html = format!(
        r#"<a href="/{}">x</a><a href="/small">y</a>"#,
        "a".repeat(1 << 20)
    );
    let p = extract(&html);
    assert_eq!(urls(&p), ["https://example.com/small"]);
    assert_eq!((p.links_found, p.invalid), (2, 1));
}

#[test]
fn caps_links_per_page() {
    let mut html = String::new();
    for i in 0..(MAX_LINKS + 500) {
        html.push_str(&format!("<a href=\"/p{i}\">x</a>"));
    }
    html.push_str("<a href=\"/p0\">again</a>");
    let p = extract(&html);
    assert_eq!(p.links.len(), MAX_LINKS);
    assert_eq!(p.links_found, MAX_LINKS + 501);
    // The 500 URLs past the cap are counted; the repeated /p0 was kept, so it is not.
    assert_eq!(p.links_dropped, 500);
    assert_eq!(super::url_path(&p.links[0].url), "/p0");
    assert_eq!(
        super::url_path(&p.links[MAX_LINKS - 1].url),
        format!("/p{}", MAX_LINKS - 1)
    );
}
