//! WARC 1.1 records: kinds, ids, dates, named fields, serialisation, and a minimal reader of what this module
//! writes (used to repair a torn file and by the tests).

use std::borrow::Cow;
use std::fmt;
use std::time::SystemTime;

use ring::rand::SecureRandom;

use super::WarcError;

/// The version line this module writes.
pub const WARC_VERSION: &str = "WARC/1.1";

/// The record types written here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordType {
    Warcinfo,
    Request,
    Response,
    Metadata,
    Revisit,
    Resource,
}

impl RecordType {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Warcinfo => "warcinfo",
            RecordType::Request => "request",
            RecordType::Response => "response",
            RecordType::Metadata => "metadata",
            RecordType::Revisit => "revisit",
            RecordType::Resource => "resource",
        }
    }
}

/// Why a block holds less than the whole payload (`WARC-Truncated`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Truncation {
    /// The body passed the crawler's size limit.
    Length,
    /// The fetch passed its time limit.
    Time,
    /// The connection ended early.
    Disconnect,
    Unspecified,
}

impl Truncation {
    pub fn as_str(self) -> &'static str {
        match self {
            Truncation::Length => "length",
            Truncation::Time => "time",
            Truncation::Disconnect => "disconnect",
            Truncation::Unspecified => "unspecified",
        }
    }
}

/// A `WARC-Record-ID`: `<urn:uuid:...>` with a random (version 4) UUID.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RecordId(String);

impl RecordId {
    /// A new random id from the system's secure random source.
    pub fn random() -> Result<RecordId, WarcError> {
        let mut b = [0u8; 16];
        ring::rand::SystemRandom::new()
            .fill(&mut b)
            .map_err(|_| WarcError::Random)?;
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = |r: std::ops::Range<usize>| -> String {
            b[r].iter().map(|x| format!("{x:02x}")).collect()
        };
        Ok(RecordId(format!(
            "<urn:uuid:{}-{}-{}-{}-{}>",
            h(0..4),
            h(4..6),
            h(6..8),
            h(8..10),
            h(10..16)
        )))
    }

    /// An id read back from a record (`<...>` form, no spaces); `None` when malformed.
    pub fn parse(s: &str) -> Option<RecordId> {
        let ok = s.len() > 2
            && s.starts_with('<')
            && s.ends_with('>')
            && !s
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control());
        ok.then(|| RecordId(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `WARC-Date` with microseconds, e.g. `2026-12-03T05:40:00.123456Z`.
pub fn warc_date(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// `url` without its userinfo (`user:password@`): everything between `//` and the last `@` of the authority.
/// The rest of the URL is kept byte for byte.
pub fn strip_userinfo(url: &str) -> Cow<'_, str> {
    let Some(colon) = url.find(':') else {
        return Cow::Borrowed(url);
    };
    let scheme = &url[..colon];
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
    let rest = &url[colon + 1..];
    let Some(after) = rest
        .strip_prefix("//")
        .or_else(|| rest.strip_prefix("\\\\"))
        .or_else(|| rest.strip_prefix("/\\"))
        .or_else(|| rest.strip_prefix("\\/"))
    else {
        return Cow::Borrowed(url);
    };
    if !scheme_ok {
        return Cow::Borrowed(url);
    }
    let end = after.find(['/', '?', '#', '\\']).unwrap_or(after.len());
    let Some(at) = after[..end].rfind('@') else {
        return Cow::Borrowed(url);
    };
    let start = colon + 1 + (rest.len() - after.len());
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..start]);
    out.push_str(&after[at + 1..]);
    Cow::Owned(out)
}

/// The named fields of one record, in the order written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarcFields(Vec<(String, String)>);

impl WarcFields {
    /// `WARC-Type`, `WARC-Record-ID` and `WARC-Date`, the fields every record starts with here.
    pub fn new(kind: RecordType, id: &RecordId, date: SystemTime) -> WarcFields {
        WarcFields(vec![
            ("WARC-Type".to_string(), kind.as_str().to_string()),
            ("WARC-Record-ID".to_string(), id.as_str().to_string()),
            ("WARC-Date".to_string(), warc_date(date)),
        ])
    }

    /// Adds a field. Names must be tokens and values must not hold control characters (a CR or LF would end
    /// the field early).
    pub fn push(&mut self, name: &str, value: impl Into<String>) -> Result<(), WarcError> {
        let value = value.into();
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !name_ok || value.chars().any(|c| c.is_control()) {
            return Err(WarcError::InvalidField(format!("{name}: {value:?}")));
        }
        self.0.push((name.to_string(), value));
        Ok(())
    }

    /// Adds a URI field (`WARC-Target-URI`, `WARC-Refers-To-Target-URI`): userinfo removed, no whitespace.
    pub fn push_uri(&mut self, name: &str, uri: &str) -> Result<(), WarcError> {
        let uri = strip_userinfo(uri);
        if uri.is_empty() || uri.chars().any(|c| c.is_whitespace()) {
            return Err(WarcError::InvalidField(format!("{name}: {uri:?}")));
        }
        self.push(name, uri.into_owned())
    }

    /// The first value of `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (repeatable fields such as `WARC-Concurrent-To`).
    pub fn get_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The header section: version line, the fields, `Content-Length`, and the empty line.
    pub fn encode(&self, content_length: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(WARC_VERSION.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (n, v) in &self.0 {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("Content-Length: {content_length}\r\n\r\n").as_bytes());
        out
    }
}

/// One record read back: its version line, its fields (including `Content-Length`) and its block.
#[derive(Debug)]
pub struct ParsedRecord<'a> {
    pub version: &'a str,
    pub fields: WarcFields,
    pub block: &'a [u8],
}

impl ParsedRecord<'_> {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name)
    }
}

/// Parses exactly one whole record: `WARC/1.x`, fields, empty line, `Content-Length` bytes of block, then
/// `\r\n\r\n` and nothing else (one gzip member holds one record).
pub fn parse_record(bytes: &[u8]) -> Result<ParsedRecord<'_>, WarcError> {
    let bad = |what: &str| WarcError::Malformed(what.to_string());
    let end = memchr::memmem::find(bytes, b"\r\n\r\n").ok_or_else(|| bad("no end of header"))?;
    let head = std::str::from_utf8(&bytes[..end]).map_err(|_| bad("header is not utf-8"))?;
    let mut lines = head.split("\r\n");
    let version = lines.next().unwrap_or("");
    if !version.starts_with("WARC/1.") {
        return Err(bad("no WARC/1.x version line"));
    }
    let mut fields = WarcFields::default();
    for line in lines {
        let (n, v) = line
            .split_once(':')
            .ok_or_else(|| bad("field without a colon"))?;
        fields.0.push((n.trim().to_string(), v.trim().to_string()));
    }
    let len: usize = fields
        .get("Content-Length")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("no Content-Length"))?;
    let start = end + 4;
    let block_end = start
        .checked_add(len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad("block shorter than Content-Length"))?;
    if &bytes[block_end..] != b"\r\n\r\n" {
        return Err(bad(
            "record does not end with exactly CRLF CRLF after its block",
        ));
    }
    Ok(ParsedRecord {
        version,
        fields,
        block: &bytes[start..block_end],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn record_ids_are_random_v4_urns() {
        let a = RecordId::random().unwrap();
        let b = RecordId::random().unwrap();
        assert_ne!(a, b);
        let s = a.as_str();
        assert_eq!(s.len(), "<urn:uuid:>".len() + 36, "{s}");
        assert!(s.starts_with("<urn:uuid:") && s.ends_with('>'));
        let uuid = &s[10..46];
        assert_eq!(&uuid[14..15], "4", "{uuid}");
        assert!("89ab".contains(&uuid[19..20]), "{uuid}");
        assert_eq!(RecordId::parse(s), Some(a));
        assert_eq!(RecordId::parse("<a b>"), None);
    }

    #[test]
    fn dates_have_microseconds() {
        let t = UNIX_EPOCH + Duration::from_micros(1_796_276_400_123_456);
        assert_eq!(warc_date(t), "2026-12-03T05:40:00.123456Z");
    }

    #[test]
    fn userinfo_is_stripped_and_nothing_else_changes() {
        for (i, o) in [
            ("https://u:p@example.org/a?b#c", "https://example.org/a?b#c"),
            ("http://u@h:81", "http://h:81"),
            ("http://a:b@c@h/x@y", "http://h/x@y"),
            ("HTTP://U:P@H/?q=@", "HTTP://H/?q=@"),
            ("http:\\\\u:p@h\\x", "http:\\\\h\\x"),
            ("https://example.org/p@q", "https://example.org/p@q"),
            ("mailto:a@b.c", "mailto:a@b.c"),
            ("no scheme u:p@h", "no scheme u:p@h"),
        ] {
            assert_eq!(strip_userinfo(i), o, "{i}");
        }
        let parsed = url::Url::parse("https://user:pw@example.org:8080/x").unwrap();
        assert_eq!(
            strip_userinfo(parsed.as_str()),
            "https://example.org:8080/x"
        );
    }

    #[test]
    fn fields_refuse_line_breaks_and_encode_in_order() {
        let id = RecordId::random().unwrap();
        let mut f = WarcFields::new(RecordType::Resource, &id, UNIX_EPOCH);
        assert!(f.push("X-A", "a\r\nWARC-Type: response").is_err());
        assert!(f.push("X A", "a").is_err());
        assert!(f.push_uri("WARC-Target-URI", "http://a b/").is_err());
        f.push_uri("WARC-Target-URI", "http://u:p@h/").unwrap();
        let mut rec = f.encode(3);
        rec.extend_from_slice(b"abc\r\n\r\n");
        let p = parse_record(&rec).unwrap();
        assert_eq!(p.version, "WARC/1.1");
        assert_eq!(p.get("warc-type"), Some("resource"));
        assert_eq!(p.get("WARC-Target-URI"), Some("http://h/"));
        assert_eq!(p.get("WARC-Date"), Some("1970-01-01T00:00:00.000000Z"));
        assert_eq!(p.block, b"abc");
        assert!(parse_record(&rec[..rec.len() - 1]).is_err());
        let mut longer = rec.clone();
        longer.push(b'x');
        assert!(parse_record(&longer).is_err());
    }
}
