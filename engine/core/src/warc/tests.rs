//! Writes real archives and reads them back twice: with this module's own minimal reader (headers, lengths,
//! digests, member bounds) and with warcio, the reference reader (`warcio check`, `warcio index` and its Python
//! API). warcio is found through env `WARCIO` (the `warcio` executable) or on `PATH`; without it the warcio
//! half of each test is skipped with a note, unless env `CI=true`, where its absence fails the test.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    v.sort();
    v
}

struct Warcio {
    exe: PathBuf,
    python: PathBuf,
}

/// warcio, or `None` with a note (a panic when `CI=true`).
fn warcio() -> Option<Warcio> {
    let exe = std::env::var_os("WARCIO")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join("warcio"))
                .find(|p| p.is_file())
        });
    let Some(exe) = exe else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("warcio not found (set WARCIO or put warcio on PATH); CI=true requires it");
        }
        // Straight to stderr, past the test harness's capture, once per run.
        static NOTE: std::sync::Once = std::sync::Once::new();
        NOTE.call_once(|| {
            let _ = writeln!(
                std::io::stderr(),
                "note: warcio not found (set WARCIO or put warcio on PATH): warcio checks skipped"
            );
        });
        return None;
    };
    // The interpreter warcio was installed for: its shebang, else a python3 beside it.
    let shebang = std::fs::read_to_string(&exe)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
        .and_then(|l| l.strip_prefix("#!").map(|p| PathBuf::from(p.trim())));
    let python = shebang
        .filter(|p| p.is_file())
        .or_else(|| {
            exe.parent()
                .map(|d| d.join("python3"))
                .filter(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("python3"));
    Some(Warcio { exe, python })
}

impl Warcio {
    /// `warcio check -v`: exit 0, and every record with a checkable digest reports `digest pass`.
    fn check(&self, path: &Path) -> String {
        let out = Command::new(&self.exe)
            .arg("check")
            .arg("-v")
            .arg(path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "warcio check failed on {}:\n{stdout}\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!stdout.contains("failed"), "{stdout}");
        assert!(!stdout.contains("no digest"), "{stdout}");
        let records = stdout.matches("WARC-Record-ID").count();
        let passed = stdout.matches("digest pass").count();
        let revisits = stdout.matches("not checked (revisit)").count();
        assert_eq!(records, passed + revisits, "{stdout}");
        assert!(records > 0, "{stdout}");
        stdout
    }

    /// `warcio index` with the given fields, one JSON object per record.
    fn index(&self, path: &Path, fields: &str) -> Vec<serde_json::Value> {
        let out = Command::new(&self.exe)
            .args(["index", "-f", fields])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Each record through warcio's Python API: type, URI, HTTP start line and headers, the payload as stored
    /// (`raw_stream`), the payload as warcio decodes it (`content_stream`) and the member bounds warcio finds.
    fn records(&self, path: &Path) -> Vec<serde_json::Value> {
        const SCRIPT: &str = r#"
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
        let out = Command::new(&self.python)
            .args(["-c", SCRIPT])
            .arg(path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

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

// ---------------------------------------------------------------------------------------------------------------
// Tests.

#[test]
fn golden_structure_read_by_own_reader_and_warcio() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    assert!(w.open_report().created);
    let url = "https://example.org/page?x=1";
    let req = get(url, HttpVersion::Http11);
    let resp = ResponseHead::new(
        HttpVersion::Http11,
        200,
        headers(&[("Content-Type", "text/html"), ("Content-Length", "27")]),
    );
    let body = b"<a href=\"/next\">next</a>\n\r\n";
    let written = w.append_capture(&capture(url, &req, &resp, body)).unwrap();
    let request = written.request.clone().unwrap();
    let links = vec!["https://example.org/next".to_string()];
    let meta = w
        .append_metadata(&Metadata {
            url,
            date: date(),
            about: &written.response.id,
            outlinks: &links,
            fields: &[("via".to_string(), "https://example.org/".to_string())],
        })
        .unwrap();
    let cp = w.sync().unwrap();
    assert_eq!(&cp, w.checkpoint());
    let files = warc_files(dir.path());
    assert_eq!(files.len(), 1);
    assert_eq!(cp.file, files[0].file_name().unwrap().to_str().unwrap());
    assert_eq!(cp.bytes, std::fs::metadata(&files[0]).unwrap().len());

    let recs = read_all(&files[0]);
    let kinds: Vec<&str> = recs.iter().map(Rec::kind).collect();
    assert_eq!(kinds, ["warcinfo", "response", "request", "metadata"]);

    let info = &recs[0];
    assert_eq!(info.get("Content-Type"), Some("application/warc-fields"));
    assert_eq!(info.get("WARC-Filename"), Some(cp.file.as_str()));
    let info_text = std::str::from_utf8(&info.block).unwrap();
    for line in [
        &format!("software: crawl-engine/{}\r\n", env!("CARGO_PKG_VERSION")),
        "hostname: testhost\r\n",
        "format: WARC File Format 1.1\r\n",
        "conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n",
        "config-digest: sha1:CONFIGDIGEST\r\n",
    ] {
        assert!(info_text.contains(line), "{line:?} in {info_text:?}");
    }

    let (r, q, m) = (&recs[1], &recs[2], &recs[3]);
    assert_eq!(r.get("WARC-Target-URI"), Some(url));
    assert_eq!(r.get("WARC-Date"), Some("2026-12-03T05:40:00.123456Z"));
    assert_eq!(r.get("WARC-IP-Address"), Some("192.0.2.7"));
    assert_eq!(
        r.get("Content-Type"),
        Some("application/http;msgtype=response")
    );
    assert_eq!(r.get("WARC-Record-ID"), Some(written.response.id.as_str()));
    assert_eq!(r.get("WARC-Concurrent-To"), Some(request.id.as_str()));
    assert_eq!(r.get("WARC-Truncated"), None);
    assert_eq!(r.get("WARC-Protocol"), None);
    assert_eq!(r.payload(), body);
    assert_eq!(
        r.http_head(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 27\r\n\r\n"
    );
    assert_eq!(
        r.get("WARC-Payload-Digest").map(str::to_string),
        written.response.payload_digest.map(|d| d.label())
    );
    assert_eq!(
        q.get("Content-Type"),
        Some("application/http;msgtype=request")
    );
    assert_eq!(
        q.get("WARC-Concurrent-To"),
        Some(written.response.id.as_str())
    );
    assert!(
        q.http_head()
            .starts_with("GET /page?x=1 HTTP/1.1\r\nHost: example.org\r\n")
    );
    assert_eq!(m.get("Content-Type"), Some("application/warc-fields"));
    assert_eq!(m.get("WARC-Refers-To"), Some(written.response.id.as_str()));
    assert_eq!(
        m.get("WARC-Concurrent-To"),
        Some(written.response.id.as_str())
    );
    assert_eq!(
        m.block,
        b"outlink: https://example.org/next\r\nvia: https://example.org/\r\n"
    );
    // Locations are the members' bounds.
    for (rec, loc) in [
        (r, &written.response.location),
        (q, &request.location),
        (m, &meta.location),
    ] {
        assert_eq!((rec.offset, rec.length), (loc.offset, loc.length));
        assert_eq!(loc.file, cp.file);
    }
    assert_eq!(recs[0].offset, 0);

    let Some(wio) = warcio() else { return };
    wio.check(&files[0]);
    let idx = wio.index(
        &files[0],
        "offset,length,warc-type,warc-target-uri,http:status",
    );
    let got: Vec<(String, String)> = idx
        .iter()
        .map(|v| {
            (
                v["warc-type"].as_str().unwrap().to_string(),
                v["warc-target-uri"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("warcinfo".to_string(), String::new()),
            ("response".to_string(), url.to_string()),
            ("request".to_string(), url.to_string()),
            ("metadata".to_string(), url.to_string()),
        ]
    );
    assert_eq!(idx[1]["http:status"], "200");
    for (v, rec) in idx.iter().zip(&recs) {
        assert_eq!(v["offset"].as_str().unwrap(), rec.offset.to_string());
        assert_eq!(v["length"].as_str().unwrap(), rec.length.to_string());
    }
}

#[test]
fn payloads_round_trip_through_warcio_for_each_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    let text: Vec<u8> = b"Hello, archive! ".repeat(40);
    // A de-chunked body that looks like a chunk-size line: a reader that still saw `Transfer-Encoding: chunked`
    // would cut it down to "hello".
    let dechunked = b"5\r\nhello\r\n0\r\n\r\nand the rest of the page".to_vec();
    // (name, protocol, headers, body as stored, body decoded)
    type Case<'a> = (
        &'a str,
        HttpVersion,
        Vec<(&'a str, &'a str)>,
        Vec<u8>,
        Vec<u8>,
    );
    let cases: Vec<Case> = vec![
        (
            "identity",
            HttpVersion::Http11,
            vec![("Content-Type", "text/plain")],
            text.clone(),
            text.clone(),
        ),
        (
            "gzip",
            HttpVersion::Http11,
            vec![("Content-Encoding", "gzip")],
            gzip(&text),
            text.clone(),
        ),
        (
            "br",
            HttpVersion::Http11,
            vec![("Content-Encoding", "br")],
            brotli_stored(&text),
            text.clone(),
        ),
        (
            "zstd",
            HttpVersion::Http11,
            vec![("Content-Encoding", "zstd")],
            zstd(&text),
            text.clone(),
        ),
        (
            "chunked",
            HttpVersion::Http11,
            vec![
                ("Content-Type", "text/plain"),
                ("Transfer-Encoding", "chunked"),
            ],
            dechunked.clone(),
            dechunked.clone(),
        ),
        (
            "h2",
            HttpVersion::Http2,
            vec![("content-type", "text/plain"), ("content-encoding", "gzip")],
            gzip(&text),
            text.clone(),
        ),
    ];
    let mut written = Vec::new();
    for (name, version, hs, stored, _) in &cases {
        let url = format!("https://example.org/{name}");
        let req = get(&url, *version);
        let resp = ResponseHead::new(*version, 200, headers(hs));
        let c = capture(&url, &req, &resp, stored);
        written.push(w.append_capture(&c).unwrap());
    }
    w.sync().unwrap();
    let file = &warc_files(dir.path())[0];
    let recs = read_all(file);
    let responses: Vec<&Rec> = recs.iter().filter(|r| r.kind() == "response").collect();
    for ((name, _, _, stored, _), r) in cases.iter().zip(&responses) {
        assert_eq!(r.payload(), &stored[..], "{name}");
    }
    let chunked = responses[4];
    assert!(
        !chunked
            .http_head()
            .to_ascii_lowercase()
            .contains("transfer-encoding")
    );
    let h2 = responses[5];
    assert!(
        h2.http_head()
            .starts_with("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n")
    );
    assert_eq!(h2.get("WARC-Protocol"), Some("h2"));
    let h2_request = &recs[recs.iter().position(|r| std::ptr::eq(r, h2)).unwrap() + 1];
    assert_eq!(h2_request.get("WARC-Protocol"), Some("h2"));
    assert!(h2_request.http_head().contains("\r\nHost: example.org\r\n"));

    let Some(wio) = warcio() else { return };
    wio.check(file);
    let rows = wio.records(file);
    let rows: Vec<&serde_json::Value> = rows.iter().filter(|r| r["type"] == "response").collect();
    assert_eq!(rows.len(), cases.len());
    for ((name, _, _, stored, plain), row) in cases.iter().zip(&rows) {
        assert_eq!(row["uri"], format!("https://example.org/{name}"));
        assert_eq!(
            row["raw"].as_str().unwrap(),
            hex(stored),
            "{name}: stored payload"
        );
        let decodable = match *name {
            "br" => row["decoders"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d == "br"),
            "zstd" => false, // warcio has no zstd decoder: content_stream gives the stored bytes
            _ => true,
        };
        let want = if decodable { hex(plain) } else { hex(stored) };
        assert_eq!(
            row["content"].as_str().unwrap(),
            want,
            "{name}: decoded payload"
        );
    }
    assert_eq!(rows[5]["start"], "HTTP/1.1 200 OK");
    for (row, wr) in rows.iter().zip(&written) {
        let loc = &wr.response.location;
        assert_eq!(row["bounds"], serde_json::json!([loc.offset, loc.length]));
    }
}

#[test]
fn truncated_body_is_marked_and_still_checks() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    let url = "http://example.org/big.bin";
    let req = get(url, HttpVersion::Http11);
    let resp = ResponseHead::new(
        HttpVersion::Http11,
        200,
        headers(&[("Content-Length", "1000000")]),
    );
    let body = noise(4096, 1);
    let mut c = capture(url, &req, &resp, &body);
    c.truncated = Some(Truncation::Length);
    w.append_capture(&c).unwrap();
    w.sync().unwrap();
    let file = &warc_files(dir.path())[0];
    let recs = read_all(file);
    assert_eq!(recs[1].get("WARC-Truncated"), Some("length"));
    assert_eq!(recs[1].payload(), &body[..]);
    assert_eq!(recs[2].get("WARC-Truncated"), None, "the request is whole");
    if let Some(wio) = warcio() {
        wio.check(file);
    }
}

#[path = "tests_files.rs"]
mod files;
#[path = "tests_records.rs"]
mod records;
