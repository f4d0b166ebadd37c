//! Writes real archives and reads them back twice: with this module's own minimal reader (headers, lengths,
//! digests, member bounds) and with warcio, the reference reader (`warcio check`, `warcio index` and its Python
//! API). warcio is found through env `WARCIO` (the `warcio` executable) or on `PATH`; without it the warcio
//! half of each test is skipped with a note, unless env `CI=true`, where its absence fails the test.

mod files;
mod payloads;
mod records;
mod revisits;
mod structure;

use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crawl_test_kit::warcio::{Warcio, warc_files};

use super::reader::MemberReader;
use super::record::{WarcFields, parse_record};
use super::*;

// ---------------------------------------------------------------------------------------------------------------
// Helpers: fixtures, the own reader, warcio.

fn date() -> SystemTime {
    UNIX_EPOCH + Duration::from_micros(1_796_276_400_123_456)
}

fn config(dir: &Path) -> WarcWriterConfig {
    let mut c = WarcWriterConfig::new(dir, "crawl");
    c.hostname = Some("testhost".to_string());
    c.config_digest = Some("sha1:CONFIGDIGEST".to_string());
    c
}

fn headers(pairs: &[(&str, &str)]) -> HttpHeaders {
    pairs.iter().map(|(n, v)| (*n, *v)).collect()
}

fn get(url: &str, version: HttpVersion) -> RequestHead {
    RequestHead::new(
        "GET",
        url,
        version,
        &headers(&[("user-agent", "crawl-engine/test"), ("accept", "*/*")]),
    )
    .unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A brotli stream of one uncompressed meta-block (RFC 7932 §9.2) and an empty last one.
fn brotli_stored(data: &[u8]) -> Vec<u8> {
    assert!(!data.is_empty() && data.len() <= 1 << 16);
    // WBITS=16 ('0'), ISLAST=0, MNIBBLES=4 ('00'), MLEN-1 in 16 bits, ISUNCOMPRESSED=1; then pad to a byte.
    let v: u32 = (((data.len() - 1) as u32) << 4) | (1 << 20);
    let mut out = vec![v as u8, (v >> 8) as u8, (v >> 16) as u8];
    out.extend_from_slice(data);
    out.push(0b11); // ISLAST=1, ISLASTEMPTY=1
    let mut back = Vec::new();
    std::io::Read::read_to_end(
        &mut brotli_decompressor::Decompressor::new(&out[..], 4096),
        &mut back,
    )
    .unwrap();
    assert_eq!(back, data, "the hand-made brotli stream decodes");
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    let out = ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest);
    let mut back = Vec::new();
    let mut src = &out[..];
    let mut dec = ruzstd::decoding::StreamingDecoder::new(&mut src).unwrap();
    std::io::Read::read_to_end(&mut dec, &mut back).unwrap();
    assert_eq!(back, data);
    out
}

/// Deterministic bytes that do not compress.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A record read back by the own reader.
#[derive(Debug)]
struct Rec {
    offset: u64,
    length: u64,
    fields: WarcFields,
    block: Vec<u8>,
}

impl Rec {
    fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name)
    }
    fn kind(&self) -> &str {
        self.get("WARC-Type").unwrap()
    }
    /// The block after the HTTP header section.
    fn payload(&self) -> &[u8] {
        let end = memchr::memmem::find(&self.block, b"\r\n\r\n").unwrap();
        &self.block[end + 4..]
    }
    fn http_head(&self) -> &str {
        let end = memchr::memmem::find(&self.block, b"\r\n\r\n").unwrap();
        std::str::from_utf8(&self.block[..end + 4]).unwrap()
    }
}

/// Reads every member of `path` (all must be whole) and checks each record's version, length and digests.
fn read_all(path: &Path) -> Vec<Rec> {
    let mut r = MemberReader::new(std::fs::File::open(path).unwrap());
    let mut out = Vec::new();
    while let Some(m) = r.next_member().unwrap() {
        let p = parse_record(&m.data).unwrap();
        assert_eq!(p.version, "WARC/1.1");
        let len: usize = p.get("Content-Length").unwrap().parse().unwrap();
        assert_eq!(len, p.block.len());
        let block_digest = Sha1::of(p.block).label();
        assert_eq!(p.get("WARC-Block-Digest"), Some(block_digest.as_str()));
        let rec = Rec {
            offset: m.offset,
            length: m.length,
            fields: p.fields.clone(),
            block: p.block.to_vec(),
        };
        if matches!(rec.kind(), "response" | "request") {
            let pd = Sha1::of(rec.payload()).label();
            assert_eq!(rec.get("WARC-Payload-Digest"), Some(pd.as_str()));
        }
        out.push(rec);
    }
    out
}

/// warcio, or `None` with a note (a failure when `CI=true`).
fn warcio() -> Option<Warcio> {
    Warcio::find("warc writer")
}

/// `warcio check -v`: exit 0, and every record with a checkable digest reports `digest pass`. warcio's report.
fn check(wio: &Warcio, path: &Path) -> String {
    wio.check(path).unwrap_or_else(|e| panic!("{e}"))
}

/// `warcio index` with the given fields, one JSON object per record.
fn index(wio: &Warcio, path: &Path, fields: &str) -> Vec<serde_json::Value> {
    wio.index(path, fields).unwrap_or_else(|e| panic!("{e}"))
}

/// Each record through warcio's Python API: type, URI, HTTP start line and headers, the payload as stored
/// (`raw_stream`), the payload as warcio decodes it (`content_stream`) and the member bounds warcio finds.
fn raw_records(wio: &Warcio, path: &Path) -> Vec<serde_json::Value> {
    let out = wio
        .python(RAW_RECORDS, &[path.to_path_buf()])
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_slice(&out).unwrap()
}

const RAW_RECORDS: &str = r#"
import json, sys
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
def walk(fn):
    with open(sys.argv[1], 'rb') as f:
        it = ArchiveIterator(f)
        return [fn(it, r) for r in it]
def raw(it, r):
    h = r.http_headers
    return {'type': r.rec_type, 'uri': r.rec_headers.get_header('WARC-Target-URI'),
            'start': (h.protocol + ' ' + h.statusline) if h else None,
            'headers': h.headers if h else None,
            'raw': r.raw_stream.read().hex()}
def content(it, r):
    return r.content_stream().read().hex()
def bounds(it, r):
    return [it.get_record_offset(), it.get_record_length()]
rows = walk(raw)
for row, c, b in zip(rows, walk(content), walk(bounds)):
    row['content'] = c
    row['bounds'] = b
    row['decoders'] = sorted(BufferedReader.get_supported_decompressors())
print(json.dumps(rows))
"#;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn capture<'a>(
    url: &'a str,
    req: &'a RequestHead,
    resp: &'a ResponseHead,
    body: &'a [u8],
) -> Capture<'a> {
    Capture {
        url,
        date: date(),
        ip: Some("192.0.2.7".parse::<IpAddr>().unwrap()),
        request: Some(req),
        response: resp,
        body,
        truncated: None,
    }
}
