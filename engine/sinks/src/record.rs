//! A committed record as the sinks ship it: the JSONL line as written, and the few fields a target indexes.
//!
//! The fields are places in the line (a string with a JSON escape in it is kept unescaped beside), so a record is
//! parsed without copying its text and a clone is a few words: the shared reader hands every record sink its own.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;

use crate::SinkError;

/// Where a record's response sits in the WARC files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarcLocation<'a> {
    pub file: &'a str,
    pub offset: u64,
    pub length: u64,
}

/// A string field of a record: where it is in the line, or its unescaped text when it had a JSON escape.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Text {
    In { from: usize, to: usize },
    Own(Box<str>),
}

/// One record to ship.
#[derive(Debug, Clone, PartialEq)]
pub struct ShipRecord {
    /// Its line number in the JSONL.
    pub seq: u64,
    /// The JSONL line, without its newline.
    pub line: Bytes,
    /// The URL's 64-bit fingerprint (the start of its record id): Kafka's `url` key.
    pub fp: u64,
    pub status: Option<u16>,
    record_id: Text,
    url: Text,
    host: Text,
    outcome: Text,
    fetched_at: Option<Text>,
    warc: Option<(Text, u64, u64)>,
}

#[derive(Deserialize)]
struct Warc<'a> {
    #[serde(borrow)]
    file: Cow<'a, str>,
    offset: u64,
    length: u64,
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    url: Cow<'a, str>,
    #[serde(borrow)]
    outcome: Cow<'a, str>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default, borrow)]
    fetched_at: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    warc: Option<Warc<'a>>,
    #[serde(default, borrow)]
    record_id: Option<Cow<'a, str>>,
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
        let place = |c: &str| text_in(&line, c);
        let fp = crawl_core::frontier::url_fp(&f.url);
        let url = place(&f.url);
        let host = match (&url, host_span(&f.url)) {
            (Text::In { from, .. }, (a, b)) => Text::In {
                from: from + a,
                to: from + b,
            },
            (Text::Own(_), (a, b)) => Text::Own(f.url[a..b].into()),
        };
        let record_id = match &f.record_id {
            Some(id) => place(id),
            None => Text::Own(format!("{fp:016x}-l{seq}").into()),
        };
        Ok(ShipRecord {
            seq,
            fp,
            status: f.status,
            record_id,
            url,
            host,
            outcome: place(&f.outcome),
            fetched_at: f.fetched_at.as_deref().map(place),
            warc: f
                .warc
                .as_ref()
                .map(|w| (place(&w.file), w.offset, w.length)),
            line,
        })
    }

    /// Unique per fetch: what every target deduplicates on.
    pub fn record_id(&self) -> &str {
        self.text(&self.record_id)
    }

    pub fn url(&self) -> &str {
        self.text(&self.url)
    }

    /// The URL's host (lowercase; empty for a URL without one).
    pub fn host(&self) -> &str {
        self.text(&self.host)
    }

    /// `fetched`, `failed` or `excluded`.
    pub fn outcome(&self) -> &str {
        self.text(&self.outcome)
    }

    /// RFC 3339.
    pub fn fetched_at(&self) -> Option<&str> {
        self.fetched_at.as_ref().map(|t| self.text(t))
    }

    pub fn warc(&self) -> Option<WarcLocation<'_>> {
        self.warc
            .as_ref()
            .map(|(file, offset, length)| WarcLocation {
                file: self.text(file),
                offset: *offset,
                length: *length,
            })
    }

    /// The bytes a record takes in the JSONL (its line and newline): what the byte lag counts.
    pub fn jsonl_bytes(&self) -> u64 {
        self.line.len() as u64 + 1
    }

    fn text<'a>(&'a self, t: &'a Text) -> &'a str {
        match t {
            // A place made from a string the parser found in this line: whole characters of valid UTF-8.
            Text::In { from, to } => self
                .line
                .get(*from..*to)
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or_default(),
            Text::Own(s) => s,
        }
    }
}

/// Where `value` is in `line` when the parser found it there, else (it had to unescape it) its own copy.
fn text_in(line: &[u8], value: &str) -> Text {
    let from = (value.as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
    if from <= line.len() && value.len() <= line.len() - from {
        Text::In {
            from,
            to: from + value.len(),
        }
    } else {
        Text::Own(value.into())
    }
}

/// Where the host of a record's URL is in it (canonical: `scheme://host[:port]/...`, lowercase, no userinfo; an
/// IPv6 host in brackets); empty for a URL without one.
fn host_span(url: &str) -> (usize, usize) {
    let Some(i) = url.find("://") else {
        return (0, 0);
    };
    let start = i + 3;
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let skip = authority.rfind('@').map_or(0, |a| a + 1);
    let host = &authority[skip..];
    let len = if host.starts_with('[') {
        host.find(']').map_or(host.len(), |i| i + 1)
    } else {
        host.find(':').unwrap_or(host.len())
    };
    (start + skip, start + skip + len)
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
            let (a, b) = super::host_span(url);
            assert_eq!(&url[a..b], host, "{url}");
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
        assert_eq!(r.record_id(), "00ab-1");
        assert_eq!(r.host(), "a.test");
        assert_eq!(r.url(), "http://a.test:8080/x");
        assert_eq!(r.outcome(), "fetched");
        assert_eq!(r.fetched_at(), Some("2026-12-06T10:00:00.123Z"));
        assert_eq!(r.warc().map(|w| w.file), Some("c-1.warc.gz"));
        assert_eq!(r.status, Some(200));
        assert_eq!(r.fp, crawl_core::frontier::url_fp("http://a.test:8080/x"));
        assert_eq!(r.warc().map(|w| (w.offset, w.length)), Some((12, 300)));
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
        assert!(r.record_id().ends_with("-l3"), "{}", r.record_id());
        assert_eq!((r.fetched_at(), r.warc()), (None, None));
    }

    #[test]
    fn escaped_strings_are_read_unescaped_and_a_clone_is_the_same_record() {
        let line = Bytes::from(
            r#"{"url":"http://\u00e9.test/a\"b","outcome":"fetched","status":200,"record_id":"id\t1","warc":{"file":"w\u0041.warc.gz","offset":1,"length":2}}"#,
        );
        let r = ShipRecord::parse("k", 1, line).unwrap();
        assert_eq!(r.url(), "http://\u{e9}.test/a\"b");
        assert_eq!(r.host(), "\u{e9}.test");
        assert_eq!(r.record_id(), "id\t1");
        assert_eq!(r.warc().map(|w| w.file), Some("wA.warc.gz"));
        let c = r.clone();
        drop(r);
        assert_eq!(c.url(), "http://\u{e9}.test/a\"b");
        assert_eq!(
            c.fp,
            crawl_core::frontier::url_fp("http://\u{e9}.test/a\"b")
        );
    }

    #[test]
    fn a_line_that_is_not_a_record_is_an_error_naming_the_line() {
        let e = ShipRecord::parse("pg", 9, Bytes::from_static(b"{\"url\":1}")).unwrap_err();
        assert_eq!(e.kind(), "bad_record");
        assert!(e.to_string().contains("line 9"), "{e}");
    }
}
