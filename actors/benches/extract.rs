//! Benchmarks link extraction over a ~30 KB HTML page and parsing of a 10,000-URL sitemap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::fmt::Write as _;
use std::hint::black_box;

use crawl_actors::parser::extract::{ExtractOptions, MAX_LINKS, extract_links};
use crawl_actors::parser::sitemap::parse_sitemap;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use url::Url;

/// A realistic page: head with canonical/alternates, nav, ~100 links in text, scripts, comments.
fn html_page() -> String {
    let mut html = String::with_capacity(32 * 1024);
    html.push_str(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="robots" content="index, follow"><title>Bench page</title>
<link rel="canonical" href="https://www.example.com/articles/bench">
<link rel="alternate" hreflang="de" href="/de/articles/bench">
<link rel="stylesheet" href="/static/site.css">
<script>window.dataLayer = window.dataLayer || []; function gtag(){dataLayer.push(arguments);}</script>
</head><body><header><nav><ul>"#,
    );
    for i in 0..10 {
        let _ = write!(
            html,
            r#"<li class="nav-item"><a class="nav-link" href="/section/{i}/">Section {i}</a></li>"#
        );
    }
    html.push_str("</ul></nav></header><main><article>");
    let mut i = 0;
    while html.len() < 28 * 1024 {
        let href = match i % 6 {
            0 => format!("/articles/{i}?ref=body&amp;utm_source=bench"),
            1 => format!("../related/{i}.html"),
            2 => format!("https://other{}.example.org/page/{i}", i % 7),
            3 => format!("#section-{i}"),
            4 => format!("//cdn.example.net/files/{i}.pdf"),
            _ => "javascript:void(0)".to_string(),
        };
        let rel = if i % 9 == 0 {
            r#" rel="nofollow noopener""#
        } else {
            ""
        };
        let _ = write!(
            html,
            r#"<p class="para">Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor
incididunt ut labore et dolore magna aliqua <a href="{href}"{rel}>link number {i}</a>. Ut enim ad minim veniam.</p>
<!-- comment {i} -->"#
        );
        i += 1;
    }
    html.push_str(r#"</article></main><footer><a href="/about">About</a></footer></body></html>"#);
    html
}

fn sitemap(n: usize) -> String {
    let mut xml = String::with_capacity(n * 100);
    xml.push_str(r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for i in 0..n {
        let _ = write!(
            xml,
            "\n  <url><loc>https://www.example.com/products/{i}?color=red&amp;size=m</loc><lastmod>2024-05-01</lastmod><changefreq>weekly</changefreq></url>"
        );
    }
    xml.push_str("\n</urlset>\n");
    xml
}

fn bench_extract(c: &mut Criterion) {
    let page_url = match Url::parse("https://www.example.com/articles/bench") {
        Ok(u) => u,
        Err(e) => panic!("bad bench page url: {e}"),
    };
    let html = html_page();
    let opts = ExtractOptions {
        agent_token: "benchbot",
        max_links: MAX_LINKS,
        embeds: false,
    };
    match extract_links(html.as_bytes(), &page_url, &opts) {
        Ok(p) if p.links_found >= 100 && p.links.len() >= 50 => {}
        other => panic!("bench page does not extract as expected: {other:?}"),
    }
    let mut group = c.benchmark_group("extract");
    group.throughput(Throughput::Bytes(html.len() as u64));
    group.bench_function("extract_links_30k", |b| {
        b.iter(|| extract_links(black_box(html.as_bytes()), black_box(&page_url), &opts))
    });
    group.finish();

    let xml = sitemap(10_000);
    match parse_sitemap(xml.as_bytes(), 50_000) {
        Ok(p) if p.locs.len() == 10_000 => {}
        other => panic!("bench sitemap does not parse as expected: {other:?}"),
    }
    let mut group = c.benchmark_group("sitemap");
    group.throughput(Throughput::Bytes(xml.len() as u64));
    group.bench_function("parse_sitemap_10000", |b| {
        b.iter(|| parse_sitemap(black_box(xml.as_bytes()), 50_000))
    });
    group.finish();
}

criterion_group!(benches, bench_extract);
criterion_main!(benches);
