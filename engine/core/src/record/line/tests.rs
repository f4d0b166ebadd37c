//! The hand-written line is serde_json's, byte for byte, for every field absent and present, every outcome and
//! reason, and strings holding every character serde_json escapes.

use super::*;
use crate::record::{Outcome, Reason};

fn tricky() -> String {
    let mut s: String = (0u8..0x20).map(char::from).collect();
    s.push_str("\"quoted\" back\\slash / DEL\u{7f} é 漢字 🦀 </script> \u{2028}");
    s
}

fn full() -> Record {
    Record {
        url: format!("http://a.test/{}", tricky()),
        outcome: Outcome::Fetched,
        reason: None,
        status: Some(u16::MAX),
        depth: u32::MAX,
        parent: Some("http://a.test/".into()),
        redirect_to: Some("http://b.test/\"x\"".into()),
        content_type: Some("text/html; charset=utf-8".into()),
        content_length: Some(u64::MAX),
        links: Some(0),
        fetched_at: "2026-12-04T03:00:00.123Z".into(),
        elapsed_ms: Some(17),
        attempts: 3,
        http_version: Some("HTTP/1.1".into()),
        noindex: true,
        error: Some(tricky()),
        dns: Some(DnsInfo {
            source: "doh".into(),
            addresses: vec!["127.0.0.1".into(), "::1".into()],
            polluted: true,
            rules: vec!["bogus_ip".into()],
        }),
        proxy: Some("direct".into()),
        trace_id: Some("0123456789abcdef0123456789abcdef".into()),
        record_id: Some("00000000000000ff-1".into()),
        title: Some(tricky()),
        digest: Some("sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".into()),
        links_dropped: 9,
        kind: Some(RecordKind::Embed),
        revisit: Some(crate::record::Revisit {
            visit: u32::MAX,
            changed: Some(false),
            previous_fetched_at: Some("2026-12-03T03:00:00.000Z".into()),
            next_due_at: Some("2026-12-05T03:00:00.000Z".into()),
        }),
        warc: Some(RecordLocation {
            file: "crawl-0001.warc.gz".into(),
            offset: 0,
            length: u64::MAX,
        }),
    }
}

fn assert_same(r: &Record) {
    let mut mine = Vec::new();
    write(&mut mine, r);
    let serde = serde_json::to_vec(r).expect("serde_json writes a record");
    assert_eq!(
        String::from_utf8_lossy(&mine),
        String::from_utf8_lossy(&serde)
    );
}

#[test]
fn every_field_present_and_absent_writes_serde_jsons_bytes() {
    let full = full();
    assert_same(&full);
    let terminal = Record::terminal("http://a.test/x", 0, None, Reason::Robots, None);
    assert_same(&terminal);
    // Each optional field alone, on a record with nothing else.
    let alone: [fn(&mut Record, &Record); 19] = [
        |r, f| r.status = f.status,
        |r, f| r.parent = f.parent.clone(),
        |r, f| r.redirect_to = f.redirect_to.clone(),
        |r, f| r.content_type = f.content_type.clone(),
        |r, f| r.content_length = f.content_length,
        |r, f| r.links = f.links,
        |r, f| r.elapsed_ms = f.elapsed_ms,
        |r, f| r.http_version = f.http_version.clone(),
        |r, f| r.noindex = f.noindex,
        |r, f| r.error = f.error.clone(),
        |r, f| r.dns = f.dns.clone(),
        |r, f| r.proxy = f.proxy.clone(),
        |r, f| r.trace_id = f.trace_id.clone(),
        |r, f| r.record_id = f.record_id.clone(),
        |r, f| r.title = f.title.clone(),
        |r, f| r.links_dropped = f.links_dropped,
        |r, f| r.revisit = f.revisit.clone(),
        // A first visit: changed and previous_fetched_at are null, not absent.
        |r, _| {
            r.revisit = Some(crate::record::Revisit {
                visit: 1,
                changed: None,
                previous_fetched_at: None,
                next_due_at: None,
            })
        },
        |r, f| {
            r.kind = f.kind;
            r.warc = f.warc.clone();
            r.digest = f.digest.clone();
        },
    ];
    for set in alone {
        let mut r = terminal.clone();
        set(&mut r, &full);
        assert_same(&r);
    }
    let mut empty_lists = full.clone();
    empty_lists.dns = Some(DnsInfo {
        source: String::new(),
        addresses: Vec::new(),
        polluted: false,
        rules: Vec::new(),
    });
    assert_same(&empty_lists);
}

#[test]
fn every_outcome_and_reason_is_named_as_serde_names_it() {
    for reason in Reason::ALL {
        let mut r = Record::terminal("http://a.test/", 1, Some("http://a.test/p"), reason, None);
        assert_same(&r);
        for outcome in [Outcome::Fetched, Outcome::Failed, Outcome::Excluded] {
            r.outcome = outcome;
            assert_same(&r);
        }
    }
}

#[test]
fn every_single_character_is_escaped_as_serde_escapes_it() {
    let mut r = Record::terminal("http://a.test/", 0, None, Reason::Dns, None);
    for c in (0u32..0x300).chain([0x2028, 0x2029, 0xfeff, 0x1f980]) {
        let Some(c) = char::from_u32(c) else { continue };
        r.error = Some(format!("{c}"));
        r.url = format!("a{c}b{c}{c}");
        assert_same(&r);
    }
}

#[test]
fn an_escape_anywhere_in_a_long_string_is_found() {
    let mut r = Record::terminal("http://a.test/", 0, None, Reason::Dns, None);
    for c in (0u32..0x100).chain([0x2028, 0x1f980]) {
        let Some(c) = char::from_u32(c) else { continue };
        for at in 0..26 {
            let mut s = "x".repeat(26);
            s.insert(at, c);
            r.url = s;
            assert_same(&r);
        }
    }
}

#[test]
fn the_line_reads_back_as_the_record() {
    let r = full();
    let line = r.to_line();
    assert_eq!(line.last(), Some(&b'\n'));
    let back: Record = serde_json::from_slice(&line).expect("reads back");
    assert_eq!(back, r);
}
