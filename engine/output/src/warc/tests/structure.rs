//! WARC writer tests: the records' structure (golden archive read by the own reader and warcio) and bodies cut
//! at the limit. The fixtures and readers are in `tests.rs`.

use super::*;

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
    check(&wio, &files[0]);
    let idx = index(
        &wio,
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
        check(&wio, file);
    }
}
