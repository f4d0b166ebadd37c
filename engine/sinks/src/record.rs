//! A committed record as the sinks ship it: the JSONL line as written, and the few fields a target indexes.

use bytes::Bytes;
use serde::Deserialize;

use crate::SinkError;

/// Where a record's response sits in the WARC files.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WarcLocation {
    pub file: String,
    pub offset: u64,
    pub length: u64,
}

/// One record to ship.
#[derive(Debug, Clone, PartialEq)]
pub struct ShipRecord {
    /// Its line number in the JSONL.
    pub seq: u64,
    /// The JSONL line, without its newline.
    pub line: Bytes,
    /// Unique per fetch: what every target deduplicates on.
    pub record_id: String,
    pub url: String,
    /// The URL's host (lowercase; empty for a URL without one).
    pub host: String,
    /// The URL's 64-bit fingerprint (the start of its record id): Kafka's `url` key.
    pub fp: u64,
    /// `fetched`, `failed` or `excluded`.
    pub outcome: String,
    pub status: Option<u16>,
    /// RFC 3339.
    pub fetched_at: Option<String>,
    pub warc: Option<WarcLocation>,
}

#[derive(Deserialize)]
struct Fields {
    url: String,
    outcome: String,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    fetched_at: Option<String>,
    #[serde(default)]
    warc: Option<WarcLocation>,
    #[serde(default)]
    record_id: Option<String>,
}

impl ShipRecord {
    /// Reads the record on line `seq` (`line` without its newline) for the sink `sink`. A line without a
    /// `record_id` (written before records carried one) is named by its URL's fingerprint and its line number.
    pub fn parse(sink: &str, seq: u64, line: Bytes) -> Result<ShipRecord, SinkError> {
        let f: Fields = serde_json::from_slice(&line).map_err(|e| SinkError::BadRecord {
            sink: sink.to_owned(),
            seq,
            detail: e.to_string(),
        })?;
        let fp = crawl_core::frontier::url_fp(&f.url);
        let host = host_of(&f.url).to_owned();
        let record_id = f.record_id.unwrap_or_else(|| format!("{fp:016x}-l{seq}"));
        Ok(ShipRecord {
            seq,
            line,
            record_id,
            url: f.url,
            host,
            fp,
            outcome: f.outcome,
            status: f.status,
            fetched_at: f.fetched_at,
            warc: f.warc,
        })
    }

    /// The bytes a record takes in the JSONL (its line and newline): what the byte lag counts.
    pub fn jsonl_bytes(&self) -> u64 {
        self.line.len() as u64 + 1
    }
}

/// The host of a record's URL (canonical: `scheme://host[:port]/...`, lowercase, no userinfo; an IPv6 host in
/// brackets); empty for a URL without one.
fn host_of(url: &str) -> &str {
    let Some((_, rest)) = url.split_once("://") else {
        return "";
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |i| &authority[..=i]);
    }
    authority.split_once(':').map_or(authority, |(h, _)| h)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_of_a_url() {
        for (url, host) in [
            ("http://a.test:8080/x", "a.test"),
            ("https://b.test/", "b.test"),
            ("http://c.test?q=1", "c.test"),
            ("http://[::1]:9000/p", "[::1]"),
            ("http://u@d.test/", "d.test"),
            ("mailto:x", ""),
        ] {
            assert_eq!(super::host_of(url), host, "{url}");
        }
    }

    use super::*;

    #[test]
    fn a_record_line_gives_its_fields() {
        let line = Bytes::from_static(
            br#"{"url":"http://a.test:8080/x","outcome":"fetched","status":200,"fetched_at":"2026-12-06T10:00:00.123Z","warc":{"file":"c-1.warc.gz","offset":12,"length":300},"record_id":"00ab-1"}"#,
        );
        let r = ShipRecord::parse("k", 7, line.clone()).unwrap();
        assert_eq!(r.seq, 7);
        assert_eq!(r.record_id, "00ab-1");
        assert_eq!(r.host, "a.test");
        assert_eq!(r.status, Some(200));
        assert_eq!(r.fp, crawl_core::frontier::url_fp("http://a.test:8080/x"));
        assert_eq!(r.warc.as_ref().map(|w| w.offset), Some(12));
        assert_eq!(r.jsonl_bytes(), line.len() as u64 + 1);
    }

    #[test]
    fn an_excluded_record_has_no_status_and_an_old_line_gets_an_id() {
        let r = ShipRecord::parse(
            "k",
            3,
            Bytes::from_static(br#"{"url":"http://b.test/","outcome":"excluded","status":null}"#),
        )
        .unwrap();
        assert_eq!(r.status, None);
        assert!(r.record_id.ends_with("-l3"), "{}", r.record_id);
    }

    #[test]
    fn a_line_that_is_not_a_record_is_an_error_naming_the_line() {
        let e = ShipRecord::parse("pg", 9, Bytes::from_static(b"{\"url\":1}")).unwrap_err();
        assert_eq!(e.kind(), "bad_record");
        assert!(e.to_string().contains("line 9"), "{e}");
    }
}
