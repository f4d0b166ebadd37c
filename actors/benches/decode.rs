//! Benchmarks decoding a gzip-encoded 30 KB HTML page (the common case of a crawl: most servers gzip their pages),
//! and compressing it again as the WARC writer does.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;

use bytes::Bytes;
use crawl_actors::parser::decode::decode_body;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// About 30 KB of documentation-like markup (repetitive enough to compress about 5:1, like real pages).
fn page() -> String {
    let mut html =
        String::from("<!DOCTYPE html><html><head><title>decode bench</title></head><body>");
    let mut i = 0u32;
    while html.len() < 30 * 1024 {
        let _ = write!(
            html,
            r#"<p class="para-{}">Paragraph {i} of the page, <a href="/docs/section/{}/page-{i}.html">a link</a>
with <code>inline_code({i})</code> and some text that varies: {}.</p>"#,
            i % 7,
            i % 13,
            i.wrapping_mul(2_654_435_761)
        );
        i += 1;
    }
    html.push_str("</body></html>");
    html
}

fn bench_decode(c: &mut Criterion) {
    let html = page();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    if let Err(e) = enc.write_all(html.as_bytes()) {
        panic!("gzip: {e}");
    }
    let gz = match enc.finish() {
        Ok(v) => Bytes::from(v),
        Err(e) => panic!("gzip: {e}"),
    };
    match decode_body(Some("gzip"), gz.clone(), 10 << 20) {
        Ok(b) if b.as_ref() == html.as_bytes() => {}
        other => panic!(
            "bench body does not decode as expected: {:?}",
            other.map(|b| b.len())
        ),
    }
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(html.len() as u64));
    group.bench_function("gzip_30k", |b| {
        b.iter(|| decode_body(black_box(Some("gzip")), black_box(gz.clone()), 10 << 20))
    });
    // Compressing the same page, as the WARC writer does for each record (level 6, its default).
    group.bench_function("deflate_30k_level6", |b| {
        b.iter(|| {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
            let _ = enc.write_all(black_box(html.as_bytes()));
            enc.finish().map(|v| v.len()).unwrap_or(0)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
