//! Unit tests for the extraction rules a browser without JavaScript follows: `<noscript>` read as markup, `<link>`
//! rels that name documents versus requisites, meta refresh, the title, page requisites and the per-page cap.

use super::*;

fn page() -> Url {
    Url::parse("https://example.com/book/ch1.html").unwrap()
}

fn run(html: &str, max_links: usize, embeds: bool) -> ExtractedPage {
    let opts = ExtractOptions {
        agent_token: "crawlbot",
        max_links,
        embeds,
    };
    extract_links(html.as_bytes(), &page(), &opts).unwrap()
}

fn links(p: &ExtractedPage) -> Vec<(&str, LinkKind)> {
    p.links
        .iter()
        .map(|l| (super::url_path(&l.url), l.kind))
        .collect()
}

fn embeds(p: &ExtractedPage) -> Vec<&str> {
    p.embeds.iter().map(|u| super::url_path(u)).collect()
}

#[test]
fn noscript_content_is_read_as_markup() {
    // mdBook: the sidebar is only in <noscript> (a script builds it otherwise).
    let p = run(
        r#"<head><noscript><link rel="next" href="ch2.html"></noscript></head><body>
        <a href="intro.html">intro</a>
        <noscript><nav><ol>
          <li><a href="ch1.html">1</a></li>
          <li><a href="sub/ch3.html" rel="nofollow">3</a></li>
          <li><a href="ch4.html">4 &amp; more</a></li>
        </ol></nav></noscript>
        <noscript><meta http-equiv="refresh" content="0; url=/nojs"></noscript>
        <script>document.write("<noscript><a href='/in-script'>x</a></noscript>")</script>
        </body>"#,
        MAX_LINKS,
        false,
    );
    assert_eq!(
        links(&p),
        [
            ("/book/intro.html", LinkKind::Anchor),
            ("/book/ch2.html", LinkKind::Related),
            ("/book/ch1.html", LinkKind::Anchor),
            ("/book/sub/ch3.html", LinkKind::Anchor),
            ("/book/ch4.html", LinkKind::Anchor),
            ("/nojs", LinkKind::Refresh),
        ]
    );
    assert!(p.links[3].nofollow, "rel=nofollow inside noscript is kept");
    assert_eq!(p.links_found, 6);
}

#[test]
fn noscript_links_honour_base_and_a_nested_noscript_is_read_too() {
    let p = run(
        r#"<base href="https://docs.example.org/v2/">
        <noscript><a href="a.html">a</a><noscript><a href="b.html">b</a></noscript></noscript>"#,
        MAX_LINKS,
        false,
    );
    let urls: Vec<&str> = p.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://docs.example.org/v2/a.html",
            "https://docs.example.org/v2/b.html"
        ]
    );
}

#[test]
fn link_rels_that_name_documents_are_followed_and_requisites_never_are() {
    let p = run(
        r#"<head>
        <link rel="next" href="ch2.html">
        <link rel="prev" href="ch0.html">
        <link rel="index" href="/genindex">
        <link rel="contents" href="toc.html">
        <link rel="search" href="/search">
        <link rel="help" href="/help">
        <link rel="alternate" type="application/rss+xml" href="/feed.xml">
        <link rel="alternate icon" href="/favicon.svg">
        <link rel="alternate" type="image/png" href="/icon-alt.png">
        <link rel="icon" href="/favicon.ico">
        <link rel="shortcut icon" href="/shortcut.ico">
        <link rel="apple-touch-icon" href="/apple.png">
        <link rel="stylesheet" href="/site.css">
        <link rel="alternate stylesheet" href="/dark.css">
        <link rel="preload" as="font" href="/f.woff2">
        <link rel="modulepreload" href="/m.js">
        <link rel="manifest" href="/app.webmanifest">
        <link rel="dns-prefetch" href="//cdn.example.com">
        </head>"#,
        MAX_LINKS,
        false,
    );
    assert_eq!(
        links(&p),
        [
            ("/book/ch2.html", LinkKind::Related),
            ("/book/ch0.html", LinkKind::Related),
            ("/genindex", LinkKind::Related),
            ("/book/toc.html", LinkKind::Related),
            ("/search", LinkKind::Related),
            ("/help", LinkKind::Related),
            ("/feed.xml", LinkKind::Alternate),
        ]
    );
    assert!(
        p.embeds.is_empty(),
        "requisites are only collected with embeds on"
    );
}

#[test]
fn icons_stylesheets_preloads_and_manifests_are_requisites_with_embeds_on() {
    let p = run(
        r#"<link rel="alternate icon" href="/favicon.svg">
        <link rel="icon" href="/favicon.ico">
        <link rel="stylesheet" href="/site.css">
        <link rel="preload" as="font" href="/f.woff2">
        <link rel="modulepreload" href="/m.js">
        <link rel="manifest" href="/app.webmanifest">
        <link rel="next" href="ch2.html">"#,
        MAX_LINKS,
        true,
    );
    assert_eq!(
        embeds(&p),
        [
            "/favicon.svg",
            "/favicon.ico",
            "/site.css",
            "/f.woff2",
            "/m.js",
            "/app.webmanifest"
        ]
    );
    assert_eq!(links(&p), [("/book/ch2.html", LinkKind::Related)]);
}

#[test]
fn meta_refresh_targets_are_followed() {
    let p = run(
        r#"<meta http-equiv="Refresh" content="5; URL='/moved/here?x=1&amp;y=2'">
        <meta http-equiv="refresh" content="30">
        <meta http-equiv="refresh" content="0;url=next.html">
        <meta name="refresh" content="0; url=/not-http-equiv">"#,
        MAX_LINKS,
        false,
    );
    let urls: Vec<(&str, LinkKind)> = p.links.iter().map(|l| (l.url.as_str(), l.kind)).collect();
    assert_eq!(
        urls,
        [
            ("https://example.com/moved/here?x=1&y=2", LinkKind::Refresh),
            ("https://example.com/book/next.html", LinkKind::Refresh),
        ]
    );
    assert_eq!(p.links_found, 2);
}

#[test]
fn title_is_collapsed_decoded_and_capped() {
    let p = run(
        "<html><head><title>\n  The   Rust\tBook &amp; more &#8212; ch.\u{a0}1 </title></head>\
         <body><svg><title>svg title</title></svg><title>second</title></body>",
        MAX_LINKS,
        false,
    );
    assert_eq!(
        p.title.as_deref(),
        Some("The Rust Book & more — ch.\u{a0}1")
    );
    let p = run(
        "<svg><title>only an svg title</title></svg><p>x</p>",
        MAX_LINKS,
        false,
    );
    assert_eq!(p.title, None, "an SVG title is not the document's");
    assert_eq!(
        run("<title>  \n </title><a href=x>", MAX_LINKS, false).title,
        None
    );
    assert_eq!(run("<p>no title</p>", MAX_LINKS, false).title, None);
    let long = format!("<title>{}</title>", "é".repeat(2000));
    let t = run(&long, MAX_LINKS, false).title.unwrap();
    assert_eq!(t.chars().count(), crawl_core::record::MAX_TITLE_CHARS);
    let words = format!("<title>{}</title>", "word ".repeat(500));
    let t = run(&words, MAX_LINKS, false).title.unwrap();
    assert!(t.chars().count() <= crawl_core::record::MAX_TITLE_CHARS);
    assert!(!t.ends_with(' '));
}

#[test]
fn requisites_of_images_media_scripts_and_css() {
    let html = r#"<html><head>
        <style>
          @import url("/css/print.css");
          body { background: url('../img/bg.png') }
          .x { background: url(data:image/png;base64,AAAA) }
        </style>
        <script src="/js/app.js"></script>
        <script>var notAUrl = "url(/in-js.png)";</script>
        </head><body>
        <img src="/img/a.png" srcset="/img/a-2x.png 2x, /img/a-3x.png 3x">
        <img src="/img/a.png" alt="again">
        <picture><source srcset="/img/b.webp 1x, /img/b@2x.webp 2x" type="image/webp">
          <img src="/img/b.jpg"></picture>
        <video src="/v/movie.mp4" poster="/v/poster.jpg">
          <source src="/v/movie.webm"><track src="/v/subs.vtt"></video>
        <audio src="/a/sound.ogg"></audio>
        <input type="image" src="/img/button.png"><input type="text" src="/not-an-image">
        <div style="background-image: url(&quot;/img/div.png&quot;)">x</div>
        <a href="/page">a page</a>
        </body></html>"#;
    let p = run(html, MAX_LINKS, true);
    assert_eq!(
        embeds(&p),
        [
            "/css/print.css",
            "/img/bg.png",
            "/js/app.js",
            "/img/a.png",
            "/img/a-2x.png",
            "/img/a-3x.png",
            "/img/b.webp",
            "/img/b@2x.webp",
            "/img/b.jpg",
            "/v/movie.mp4",
            "/v/poster.jpg",
            "/v/movie.webm",
            "/v/subs.vtt",
            "/a/sound.ogg",
            "/img/button.png",
            "/img/div.png",
        ]
    );
    assert_eq!(links(&p), [("/page", LinkKind::Anchor)]);
    let off = run(html, MAX_LINKS, false);
    assert!(off.embeds.is_empty());
    assert_eq!(links(&off), [("/page", LinkKind::Anchor)]);
}

#[test]
fn the_cap_is_configurable_and_counts_what_it_cuts() {
    let html = r#"<a href="/1">1</a><a href="/2">2</a><a href="/1">1 again</a><a href="/3">3</a>
        <a href="/4">4</a><a href="/3">3 again</a><a href="/2">2 again</a>
        <img src="/i1.png"><img src="/i2.png"><img src="/i3.png"><img src="/i1.png">"#;
    let p = run(html, 2, true);
    assert_eq!(
        links(&p),
        [("/1", LinkKind::Anchor), ("/2", LinkKind::Anchor)]
    );
    assert_eq!(p.links_found, 7);
    assert_eq!((p.links_dropped, p.embeds_dropped), (3, 1));
    assert_eq!(embeds(&p), ["/i1.png", "/i2.png"]);
    let p = run(html, 10, true);
    assert_eq!((p.links.len(), p.embeds.len()), (4, 3));
    assert_eq!((p.links_dropped, p.embeds_dropped), (0, 0));
}
