//! Benchmarks URL canonicalisation over a realistic mix of 1,000 URLs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::hint::black_box;

use crawl_core::canon::{canonicalize, canonicalize_relative};
use criterion::{Criterion, criterion_group, criterion_main};
use url::Url;

/// A deterministic mix of absolute URLs: plain, tracking queries, escapes, IDN, ports, IPs.
fn absolute_urls() -> Vec<String> {
    let hosts = [
        "www.example.com",
        "Blog.Example.CO.UK",
        "shop.bücher.de",
        "127.0.0.1:8080",
        "[2001:db8::1]",
        "cdn.example.net.",
    ];
    (0..1000)
        .map(|i| {
            let host = hosts[i % hosts.len()];
            let scheme = if i % 3 == 0 { "HTTP" } else { "https" };
            match i % 5 {
                0 => format!("{scheme}://{host}/articles/{i}/index.html"),
                1 => {
                    format!("{scheme}://{host}/search?q=rust+crawler&page={i}&utm_source=x#results")
                }
                2 => format!("{scheme}://user:pw@{host}/a/b/../c/./%7euser/%2fdoc-{i}?"),
                3 => format!("{scheme}://{host}:443/caf%c3%a9/%41%42%43/{i}"),
                _ => format!("{scheme}://{host}/p/{i}?a=1&b=%e2%82%ac&c=%5B%5D"),
            }
        })
        .collect()
}

/// Hrefs as found in HTML, resolved against a page URL.
fn relative_hrefs() -> Vec<String> {
    (0..1000)
        .map(|i| match i % 8 {
            0 => format!("/section/{i}"),
            1 => format!("../up/{i}.html"),
            2 => format!("page-{i}.html#frag"),
            3 => format!("?page={i}"),
            4 => format!("//static.example.org/asset/{i}.js"),
            5 => format!("  https://other.example/x/{i}\n"),
            6 => "javascript:void(0)".to_string(),
            _ => format!("./a%2db/c%7E{i}/"),
        })
        .collect()
}

fn bench_canon(c: &mut Criterion) {
    let absolute = absolute_urls();
    let relative = relative_hrefs();
    let base = match Url::parse("https://www.example.com/dir/sub/page.html?x=1") {
        Ok(u) => u,
        Err(e) => panic!("bad bench base url: {e}"),
    };

    c.bench_function("canonicalize_1000", |b| {
        b.iter(|| {
            let mut ok = 0usize;
            for s in &absolute {
                ok += usize::from(canonicalize(black_box(s)).is_ok());
            }
            black_box(ok)
        })
    });
    c.bench_function("canonicalize_relative_1000", |b| {
        b.iter(|| {
            let mut ok = 0usize;
            for s in &relative {
                ok += usize::from(canonicalize_relative(black_box(&base), black_box(s)).is_ok());
            }
            black_box(ok)
        })
    });
}

criterion_group!(benches, bench_canon);
criterion_main!(benches);
