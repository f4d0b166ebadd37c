//! WARC writer tests, continued: what records hold (no userinfo or credentials, revisit and metadata records,
//! robots.txt and sitemaps archived like any response). The fixtures and readers are in `tests.rs`.

use super::*;

#[test]
fn userinfo_and_credentials_never_reach_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    let url = "https://alice:s3cr3tpw@example.org/private?q=1";
    let sent = headers(&[
        ("user-agent", "crawl-engine/test"),
        ("Authorization", "Basic YWxpY2U6czNjcjN0cHc="),
        ("Proxy-Authorization", "Basic cHJveHk6czNjcjN0cHc="),
        ("Referer", "https://alice:s3cr3tpw@example.org/"),
    ]);
    let req = RequestHead::new("GET", url, HttpVersion::Http11, &sent).unwrap();
    let resp = ResponseHead::new(HttpVersion::Http11, 200, HttpHeaders::new());
    let body = b"same payload twice";
    let mut dedup = PayloadDedup::new(16);
    let first = w
        .append_capture_dedup(&capture(url, &req, &resp, body), &mut dedup)
        .unwrap();
    let url2 = "http://alice:s3cr3tpw@example.org:8080/copy";
    let req2 = RequestHead::new("GET", url2, HttpVersion::Http2, &sent).unwrap();
    let second = w
        .append_capture_dedup(&capture(url2, &req2, &resp, body), &mut dedup)
        .unwrap();
    assert!(second.is_revisit());
    let links = vec![
        "https://bob:hunter2@example.org/x".to_string(),
        "https://example.org/bad link".to_string(),
    ];
    w.append_metadata(&Metadata {
        url,
        date: date(),
        about: &first.response.id,
        outlinks: &links,
        fields: &[],
    })
    .unwrap();
    w.sync().unwrap();
    let file = &warc_files(dir.path())[0];
    let mut plain = Vec::new();
    let mut r = MemberReader::new(std::fs::File::open(file).unwrap());
    while let Some(m) = r.next_member().unwrap() {
        plain.extend_from_slice(&m.data);
    }
    let raw = std::fs::read(file).unwrap();
    for secret in [
        "s3cr3tpw", "alice", "hunter2", "bob:", "YWxpY2U6", "cHJveHk6", "Basic ",
    ] {
        let found = memchr::memmem::find(&plain, secret.as_bytes()).is_some()
            || memchr::memmem::find(&raw, secret.as_bytes()).is_some();
        assert!(!found, "{secret:?} reached the archive");
    }
    let recs = read_all(file);
    let uris: Vec<&str> = recs
        .iter()
        .filter_map(|r| r.get("WARC-Target-URI"))
        .collect();
    assert!(uris.contains(&"https://example.org/private?q=1"));
    assert!(uris.contains(&"http://example.org:8080/copy"));
    let meta = recs.iter().find(|r| r.kind() == "metadata").unwrap();
    assert_eq!(meta.block, b"outlink: https://example.org/x\r\n");
    if let Some(wio) = warcio() {
        check(&wio, file);
    }
}

#[test]
fn revisit_and_metadata_records_parse_in_warcio() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    let mut dedup = PayloadDedup::new(16);
    let body = gzip(b"<html>the same page</html>");
    let hs = headers(&[("Content-Type", "text/html"), ("Content-Encoding", "gzip")]);
    let resp = ResponseHead::new(HttpVersion::Http11, 200, hs);
    let u1 = "https://example.org/one";
    let u2 = "https://example.org/two";
    let (q1, q2) = (get(u1, HttpVersion::Http11), get(u2, HttpVersion::Http11));
    let first = w
        .append_capture_dedup(&capture(u1, &q1, &resp, &body), &mut dedup)
        .unwrap();
    assert!(!first.is_revisit());
    let second = w
        .append_capture_dedup(&capture(u2, &q2, &resp, &body), &mut dedup)
        .unwrap();
    assert!(second.is_revisit());
    assert_eq!(second.response.kind, RecordType::Revisit);
    // Empty and truncated payloads are never deduplicated.
    let empty = w
        .append_capture_dedup(&capture(u2, &q2, &resp, b""), &mut dedup)
        .unwrap();
    let empty2 = w
        .append_capture_dedup(&capture(u1, &q1, &resp, b""), &mut dedup)
        .unwrap();
    assert!(!empty.is_revisit() && !empty2.is_revisit());
    let links = vec!["https://example.org/three".to_string()];
    w.append_metadata(&Metadata {
        url: u2,
        date: date(),
        about: &second.response.id,
        outlinks: &links,
        fields: &[],
    })
    .unwrap();
    w.sync().unwrap();
    let file = &warc_files(dir.path())[0];
    let recs = read_all(file);
    let rv = recs.iter().find(|r| r.kind() == "revisit").unwrap();
    assert_eq!(
        rv.get("WARC-Profile"),
        Some("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
    );
    assert_eq!(rv.get("WARC-Refers-To"), Some(first.response.id.as_str()));
    assert_eq!(rv.get("WARC-Refers-To-Target-URI"), Some(u1));
    assert_eq!(
        rv.get("WARC-Refers-To-Date"),
        Some(first.response.date.as_str())
    );
    assert_eq!(
        rv.get("WARC-Payload-Digest").map(str::to_string),
        first.response.payload_digest.map(|d| d.label())
    );
    assert_eq!(rv.get("WARC-Truncated"), None);
    assert_eq!(
        rv.payload(),
        b"",
        "the block is the HTTP header section only"
    );
    assert_eq!(
        rv.http_head(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n"
    );

    let Some(wio) = warcio() else { return };
    let out = check(&wio, file);
    assert_eq!(out.matches("not checked (revisit)").count(), 1, "{out}");
    let idx = index(
        &wio,
        file,
        "warc-type,warc-target-uri,warc-refers-to,warc-refers-to-target-uri,warc-profile,http:status",
    );
    let rv = idx.iter().find(|v| v["warc-type"] == "revisit").unwrap();
    assert_eq!(rv["warc-target-uri"], u2);
    assert_eq!(rv["warc-refers-to"], first.response.id.as_str());
    assert_eq!(rv["warc-refers-to-target-uri"], u1);
    assert_eq!(rv["http:status"], "200");
    let rows = raw_records(&wio, file);
    let meta = rows.iter().find(|r| r["type"] == "metadata").unwrap();
    assert_eq!(meta["uri"], u2);
    assert_eq!(
        meta["raw"].as_str().unwrap(),
        hex(b"outlink: https://example.org/three\r\n")
    );
    let rv = rows.iter().find(|r| r["type"] == "revisit").unwrap();
    assert_eq!(rv["start"], "HTTP/1.1 200 OK");
    assert_eq!(rv["raw"], "");
}

#[test]
fn robots_and_sitemaps_are_archived_like_any_response() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    for (url, ct, body) in [
        (
            "https://example.org/robots.txt",
            "text/plain",
            &b"User-agent: *\nDisallow: /x\n"[..],
        ),
        (
            "https://example.org/sitemap.xml",
            "application/xml",
            &b"<urlset/>"[..],
        ),
    ] {
        let req = get(url, HttpVersion::Http11);
        let resp = ResponseHead::new(HttpVersion::Http11, 200, headers(&[("Content-Type", ct)]));
        w.append_capture(&capture(url, &req, &resp, body)).unwrap();
    }
    w.sync().unwrap();
    let file = &warc_files(dir.path())[0];
    let recs = read_all(file);
    assert_eq!(recs.iter().filter(|r| r.kind() == "response").count(), 2);
    if let Some(wio) = warcio() {
        check(&wio, file);
    }
}

#[test]
fn gzip_members_stored_or_deflated_decode_to_their_parts() {
    use std::io::Read;
    for size in [0usize, 10, 900, 1030, 1500, 100_000] {
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let (a, b) = data.split_at(size / 2);
        for level in [1, 6] {
            let member = super::capture::gzip_member(&[a, b, b"\r\n"], level).expect("member");
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(member.as_slice())
                .read_to_end(&mut out)
                .expect("a whole gzip member");
            assert_eq!(out.len(), size + 2, "size {size} level {level}");
            assert_eq!(&out[..size], data.as_slice());
            if size + 2 < 1024 {
                // header, one final stored block (1 + LEN + NLEN), the bytes, CRC and size
                assert_eq!(member.len(), 10 + 5 + size + 2 + 8, "stored: size {size}");
                assert_eq!(member[10], 1, "a final stored block");
            } else if size >= 100_000 {
                assert!(member.len() < size / 2, "deflated: {} bytes", member.len());
            }
        }
    }
}
