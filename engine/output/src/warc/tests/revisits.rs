//! WARC writer tests, continued: revisits of a URL's earlier capture — a `304 Not Modified` (server-not-modified)
//! and an unchanged payload after a restart (identical-payload-digest, from the capture the store remembers) —
//! read back by the own reader and by warcio.

use super::*;

const URL: &str = "https://example.org/page";
const SNM: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
const IPD: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
/// When the earlier capture was fetched (Unix ms), and its `WARC-Date` at that precision.
const PRIOR_MS: u64 = 1_796_190_000_250;
const PRIOR_DATE: &str = "2026-12-02T05:40:00.250Z";

fn prior(body: &[u8]) -> PriorCapture {
    PriorCapture::of(&crawl_core::recrawl::Capture {
        fetched_at_ms: PRIOR_MS,
        digest: crawl_core::recrawl::DigestKey::of(&Sha1::of(body).label()),
    })
}

fn not_modified_head() -> ResponseHead {
    ResponseHead::new(
        HttpVersion::Http11,
        304,
        headers(&[
            ("ETag", "\"v1\""),
            ("Date", "Thu, 03 Dec 2026 05:40:00 GMT"),
        ]),
    )
}

fn ok_head() -> ResponseHead {
    ResponseHead::new(
        HttpVersion::Http11,
        200,
        headers(&[("Content-Type", "text/html"), ("ETag", "\"v1\"")]),
    )
}

const BODY: &[u8] = b"<html>a page that did not change</html>";

#[test]
fn a_prior_capture_date_is_its_fetch_time_to_the_millisecond() {
    let p = prior(BODY);
    assert_eq!(p.date, PRIOR_DATE);
    assert!(p.matches(&Sha1::of(BODY)));
    assert!(!p.matches(&Sha1::of(b"another page")));
    let odd = PriorCapture::of(&crawl_core::recrawl::Capture {
        fetched_at_ms: 0,
        digest: crawl_core::recrawl::DigestKey::of("md5:nope"),
    });
    assert_eq!(odd.date.as_str(), "1970-01-01T00:00:00.000Z");
    assert!(!odd.matches(&Sha1::of(BODY)));
}

#[test]
fn a_304_is_a_server_not_modified_revisit_of_the_last_capture() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    let mut dedup = PayloadDedup::new(16);
    let req = get(URL, HttpVersion::Http11);
    let resp = not_modified_head();
    let level = 6;

    // Of a capture from an earlier run: refers to it by URI and date, no record id.
    let p =
        Prepared::not_modified(&capture(URL, &req, &resp, b""), Some(prior(BODY)), level).unwrap();
    assert!(p.is_not_modified());
    let restarted = w.append_prepared(p, Some(&mut dedup)).unwrap();
    assert!(restarted.is_revisit() && restarted.request.is_some());

    // Of a capture this process archived: the same (the store keeps no record id; the capture is named by URI
    // and date).
    let ok = ok_head();
    let full = Prepared::new(&capture(URL, &req, &ok, BODY), level).unwrap();
    let first = w.append_prepared(full, Some(&mut dedup)).unwrap();
    assert!(!first.is_revisit());
    let p =
        Prepared::not_modified(&capture(URL, &req, &resp, b""), Some(prior(BODY)), level).unwrap();
    let known = w.append_prepared(p, Some(&mut dedup)).unwrap();
    assert!(known.is_revisit());

    // Without a known capture (and without dedup): still a revisit, referring to nothing.
    let p = Prepared::not_modified(&capture(URL, &req, &resp, b""), None, level).unwrap();
    let orphan = w.append_prepared(p, None).unwrap();
    assert!(orphan.is_revisit());
    w.sync().unwrap();

    let file = &warc_files(dir.path())[0];
    let recs = read_all(file);
    let at = |id: &RecordId| {
        recs.iter()
            .find(|r| r.get("WARC-Record-ID") == Some(id.as_str()))
            .unwrap()
    };
    for written in [&restarted, &known] {
        let rv = at(&written.response.id);
        assert_eq!(rv.kind(), "revisit");
        assert_eq!(rv.get("WARC-Profile"), Some(SNM));
        assert_eq!(rv.get("WARC-Target-URI"), Some(URL));
        assert_eq!(rv.get("WARC-Refers-To-Target-URI"), Some(URL));
        assert_eq!(rv.get("WARC-Refers-To-Date"), Some(PRIOR_DATE));
        assert_eq!(rv.get("WARC-Refers-To"), None);
        // The earlier payload's digest is not kept (the store has an 8-byte comparison key): none is claimed.
        assert_eq!(rv.get("WARC-Payload-Digest"), None);
        assert_eq!(rv.get("WARC-Truncated"), None);
        assert_eq!(
            rv.http_head(),
            "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nDate: Thu, 03 Dec 2026 05:40:00 GMT\r\n\r\n"
        );
        assert_eq!(rv.payload(), b"");
        let rq = at(&written.request.as_ref().unwrap().id);
        assert_eq!(
            rq.get("WARC-Concurrent-To"),
            Some(written.response.id.as_str())
        );
    }
    let rv = at(&orphan.response.id);
    assert_eq!(rv.get("WARC-Profile"), Some(SNM));
    for absent in [
        "WARC-Refers-To",
        "WARC-Refers-To-Target-URI",
        "WARC-Refers-To-Date",
        "WARC-Payload-Digest",
    ] {
        assert_eq!(rv.get(absent), None, "{absent}");
    }

    let Some(wio) = warcio() else { return };
    let out = check(&wio, file);
    assert_eq!(out.matches("not checked (revisit)").count(), 3, "{out}");
    let idx = index(
        &wio,
        file,
        "warc-type,warc-record-id,warc-profile,warc-refers-to,warc-refers-to-target-uri,warc-refers-to-date,http:status",
    );
    let revisits: Vec<_> = idx.iter().filter(|v| v["warc-type"] == "revisit").collect();
    assert_eq!(revisits.len(), 3);
    for v in &revisits {
        assert_eq!(v["warc-profile"], SNM);
        assert_eq!(v["http:status"], "304");
    }
    let by_id = |id: &RecordId| {
        idx.iter()
            .find(|v| v["warc-record-id"] == id.as_str())
            .unwrap()
    };
    let v = by_id(&restarted.response.id);
    assert_eq!(v["warc-refers-to-target-uri"], URL);
    assert_eq!(v["warc-refers-to-date"], PRIOR_DATE);
    assert!(v.get("warc-refers-to").is_none(), "{v}");
    let v = by_id(&known.response.id);
    assert_eq!(v["warc-refers-to-date"], PRIOR_DATE);
    let rows = raw_records(&wio, file);
    let rv = rows.iter().find(|r| r["type"] == "revisit").unwrap();
    assert_eq!(rv["start"], "HTTP/1.1 304 Not Modified");
    assert_eq!(rv["raw"], "");
}

#[test]
fn an_unchanged_payload_after_a_restart_is_a_revisit_of_the_last_capture() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    // A new process: its table knows nothing.
    let mut dedup = PayloadDedup::new(16);
    let req = get(URL, HttpVersion::Http11);
    let ok = ok_head();
    let prepared = |body: &[u8], prior: Option<PriorCapture>| {
        Prepared::new(&capture(URL, &req, &ok, body), 6)
            .unwrap()
            .with_prior(prior)
    };

    let same = w
        .append_prepared(prepared(BODY, Some(prior(BODY))), Some(&mut dedup))
        .unwrap();
    assert!(same.is_revisit());
    assert!(
        dedup.is_empty(),
        "no payload was archived: nothing to remember"
    );
    // A changed page is archived in full (and remembered).
    let changed = w
        .append_prepared(
            prepared(b"<html>changed</html>", Some(prior(BODY))),
            Some(&mut dedup),
        )
        .unwrap();
    assert!(!changed.is_revisit());
    assert_eq!(dedup.len(), 1);
    // Back to what it was: the table does not know that payload, the prior capture does.
    // With warc_dedup off (no table) every payload is archived in full.
    let undeduplicated = w
        .append_prepared(prepared(BODY, Some(prior(BODY))), None)
        .unwrap();
    assert!(!undeduplicated.is_revisit());
    // The table wins when it knows the payload: its record is named.
    let again = w
        .append_prepared(
            prepared(b"<html>changed</html>", Some(prior(BODY))),
            Some(&mut dedup),
        )
        .unwrap();
    assert!(again.is_revisit());
    w.sync().unwrap();

    let file = &warc_files(dir.path())[0];
    let recs = read_all(file);
    let at = |id: &RecordId| {
        recs.iter()
            .find(|r| r.get("WARC-Record-ID") == Some(id.as_str()))
            .unwrap()
    };
    let rv = at(&same.response.id);
    assert_eq!(rv.kind(), "revisit");
    assert_eq!(rv.get("WARC-Profile"), Some(IPD));
    assert_eq!(rv.get("WARC-Refers-To-Target-URI"), Some(URL));
    assert_eq!(rv.get("WARC-Refers-To-Date"), Some(PRIOR_DATE));
    assert_eq!(rv.get("WARC-Refers-To"), None);
    let digest = Sha1::of(BODY).label();
    assert_eq!(rv.get("WARC-Payload-Digest"), Some(digest.as_str()));
    assert_eq!(rv.payload(), b"");
    assert_eq!(at(&changed.response.id).kind(), "response");
    assert_eq!(at(&undeduplicated.response.id).kind(), "response");
    let rv = at(&again.response.id);
    assert_eq!(rv.get("WARC-Profile"), Some(IPD));
    assert_eq!(rv.get("WARC-Refers-To"), Some(changed.response.id.as_str()));
    assert_eq!(
        rv.get("WARC-Refers-To-Date"),
        Some(changed.response.date.as_str())
    );

    let Some(wio) = warcio() else { return };
    let out = check(&wio, file);
    assert_eq!(out.matches("not checked (revisit)").count(), 2, "{out}");
    let idx = index(
        &wio,
        file,
        "warc-type,warc-record-id,warc-profile,warc-refers-to-target-uri,warc-refers-to-date,warc-payload-digest",
    );
    let v = idx
        .iter()
        .find(|v| v["warc-record-id"] == same.response.id.as_str())
        .unwrap();
    assert_eq!(v["warc-type"], "revisit");
    assert_eq!(v["warc-profile"], IPD);
    assert_eq!(v["warc-refers-to-target-uri"], URL);
    assert_eq!(v["warc-refers-to-date"], PRIOR_DATE);
    assert_eq!(v["warc-payload-digest"], digest.as_str());
}
