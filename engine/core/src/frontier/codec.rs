//! The compact binary encoding of the stores' values: LEB128 varints, fixed 8-byte fingerprints, and
//! length-prefixed strings. A decoder never panics: short or malformed input is an error.

use super::{JobKind, UrlRef};

/// Why a value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub &'static str);

/// Appends `v` as an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads values from a byte slice.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        let (&b, rest) = self.buf.split_first().ok_or(DecodeError("truncated"))?;
        self.buf = rest;
        Ok(b)
    }

    pub fn u64_fixed(&mut self) -> Result<u64, DecodeError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError("varint too long"))
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        u32::try_from(self.varint()?).map_err(|_| DecodeError("value out of range"))
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError("truncated"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub fn str(&mut self) -> Result<&'a str, DecodeError> {
        let n = usize::try_from(self.varint()?).map_err(|_| DecodeError("length out of range"))?;
        std::str::from_utf8(self.bytes(n)?).map_err(|_| DecodeError("not utf-8"))
    }

    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }
}

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

pub fn put_ref(out: &mut Vec<u8>, r: UrlRef) {
    out.extend_from_slice(&r.key.to_le_bytes());
    out.push(r.slot);
}

pub fn read_ref(r: &mut Reader<'_>) -> Result<UrlRef, DecodeError> {
    Ok(UrlRef {
        key: r.u64_fixed()?,
        slot: r.u8()?,
    })
}

/// The stored part of a pending entry in its queue: its URL reference, kind and counters (its URL and parent live
/// in the URL table, its host and position in the queue key). About 13 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueuedValue {
    pub id: UrlRef,
    pub kind: JobKind,
    pub attempt: u32,
    pub retries: u32,
    pub redirect_chain: Vec<String>,
    /// A revisit's prior visit (continuous crawling).
    pub prior: Option<Box<crate::recrawl::Prior>>,
}

/// Set on the kind byte of a queued value that carries a prior visit (a length-prefixed
/// [`crate::recrawl::Stored`] after the counters); values written without it read as before.
const HAS_PRIOR: u8 = 0x80;

/// A revisit's prior visit in a queue value or element: its length, then [`crate::recrawl::Stored`]'s encoding
/// (with no due time: a queued URL is due).
fn put_prior(out: &mut Vec<u8>, p: &crate::recrawl::Prior) {
    let stored = crate::recrawl::Stored::encode_with(0, p);
    put_varint(out, stored.len() as u64);
    out.extend_from_slice(&stored);
}

/// Reads what [`put_prior`] wrote.
fn read_prior(r: &mut Reader<'_>) -> Result<crate::recrawl::Prior, DecodeError> {
    let n = usize::try_from(r.varint()?).map_err(|_| DecodeError("prior too long"))?;
    Ok(crate::recrawl::Stored::decode(r.bytes(n)?)?.prior)
}

pub fn encode_queued(v: &QueuedValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    put_ref(&mut out, v.id);
    let flag = if v.prior.is_some() { HAS_PRIOR } else { 0 };
    out.push(v.kind.code() | flag);
    put_varint(&mut out, u64::from(v.attempt));
    put_varint(&mut out, u64::from(v.retries));
    if let Some(p) = &v.prior {
        put_prior(&mut out, p);
    }
    if !v.redirect_chain.is_empty() {
        put_varint(&mut out, v.redirect_chain.len() as u64);
        for u in &v.redirect_chain {
            put_str(&mut out, u);
        }
    }
    out
}

pub fn decode_queued(buf: &[u8]) -> Result<QueuedValue, DecodeError> {
    let mut r = Reader::new(buf);
    let id = read_ref(&mut r)?;
    let code = r.u8()?;
    let kind = JobKind::from_code(code & !HAS_PRIOR).ok_or(DecodeError("unknown kind"))?;
    let attempt = r.u32()?;
    let retries = r.u32()?;
    let prior = if code & HAS_PRIOR != 0 {
        Some(Box::new(read_prior(&mut r)?))
    } else {
        None
    };
    let mut redirect_chain = Vec::new();
    if !r.is_empty() {
        let n = r.varint()?;
        for _ in 0..n {
            redirect_chain.push(r.str()?.to_owned());
        }
    }
    Ok(QueuedValue {
        id,
        kind,
        attempt,
        retries,
        redirect_chain,
        prior,
    })
}

/// The page that linked a URL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Parent {
    #[default]
    None,
    /// A stored URL.
    Ref(UrlRef),
    /// A URL that is not stored (a sitemap).
    Url(String),
}

const NO_PARENT: u8 = 0;
const PARENT_REF: u8 = 1;
const PARENT_URL: u8 = 2;

/// A URL's row in the embedded store's URL table: the URL and the page that linked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub url: String,
    pub parent: Parent,
}

/// A row: a byte saying what the parent is, the URL, then the parent (a reference or a URL).
pub fn encode_row(url: &str, parent: &Parent) -> Vec<u8> {
    let mut out = Vec::with_capacity(url.len() + 12);
    out.push(match parent {
        Parent::None => NO_PARENT,
        Parent::Ref(_) => PARENT_REF,
        Parent::Url(_) => PARENT_URL,
    });
    put_str(&mut out, url);
    match parent {
        Parent::None => {}
        Parent::Ref(r) => put_ref(&mut out, *r),
        Parent::Url(u) => put_str(&mut out, u),
    }
    out
}

/// The URL of an encoded row, without decoding the rest.
pub fn row_url(buf: &[u8]) -> Result<&str, DecodeError> {
    let mut r = Reader::new(buf);
    if r.u8()? > PARENT_URL {
        return Err(DecodeError("unknown parent kind"));
    }
    r.str()
}

pub fn decode_row(buf: &[u8]) -> Result<Row, DecodeError> {
    let mut r = Reader::new(buf);
    let kind = r.u8()?;
    let url = r.str()?.to_owned();
    let parent = match kind {
        NO_PARENT => Parent::None,
        PARENT_REF => Parent::Ref(read_ref(&mut r)?),
        PARENT_URL => Parent::Url(r.str()?.to_owned()),
        _ => return Err(DecodeError("unknown parent kind")),
    };
    if !r.is_empty() {
        return Err(DecodeError("trailing bytes after a row"));
    }
    Ok(Row { url, parent })
}

/// A host's row: pending count and name.
pub fn encode_host(pending: u64, name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 4);
    put_varint(&mut out, pending);
    out.extend_from_slice(name.as_bytes());
    out
}

pub fn decode_host(buf: &[u8]) -> Result<(u64, String), DecodeError> {
    let mut r = Reader::new(buf);
    let pending = r.varint()?;
    let name = std::str::from_utf8(r.rest()).map_err(|_| DecodeError("host not utf-8"))?;
    Ok((pending, name.to_owned()))
}

/// Flag bits of a queue element's flags byte (its low four bits are the kind).
const ELEM_PARENT: u8 = 0x10;
const ELEM_PARENT_REF: u8 = 0x20;
/// The parent-reference bit without the parent bit (a combination elements written before revisits never have,
/// and which their decoders refuse): the element is a revisit and carries its prior visit.
const ELEM_PRIOR: u8 = ELEM_PARENT_REF;
const ELEM_FULL_URL: u8 = 0x40;
const ELEM_EXTRA: u8 = 0x80;
const ELEM_KIND: u8 = 0x0f;

/// A pending URL as an element of its host queue in a store shared by many processes (one list per host and
/// depth, so the depth is the list's). The element is `seq` (varint), a flags byte (kind in the low four bits,
/// then: parent, parent key is the parent's stored reference, full URL, extra fields), the parent's key (8 bytes,
/// when there is a parent: the parent URL itself is kept once per parent, under this key) or, for a revisit (the
/// reference bit without the parent bit), its prior visit (a length-prefixed [`crate::recrawl::Stored`] whose due
/// time is 0), the extra fields (attempt, retries and the redirect chain, only when one of them is not empty), and
/// last the URL: only its path (from the first `/` after the authority) when the URL starts with the queue's
/// origin, else the whole URL. A revisit keeps no parent: an element has one or the other.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueElement {
    pub seq: u64,
    pub kind: JobKind,
    /// The key of the parent's row in the parent table, and whether it is the parent's [`UrlRef`] key (slot 0)
    /// rather than only a key for the table. Not encoded when `prior` is set.
    pub parent: Option<(u64, bool)>,
    pub attempt: u32,
    pub retries: u32,
    pub redirect_chain: Vec<String>,
    pub url: String,
    /// A revisit's prior visit (continuous crawling).
    pub prior: Option<Box<crate::recrawl::Prior>>,
}

/// The origin of a URL as a queue element elides it (`scheme://authority`), and where its path starts; None when
/// the URL has no `/` after its authority.
pub fn url_origin(url: &str) -> Option<(&str, usize)> {
    let s = url.find("://")? + 3;
    let p = s + url[s..].find('/')?;
    Some((&url[..p], p))
}

/// The part of an element between its sequence number and its URL: flags, parent key, extra fields. The script
/// that queues the URL puts the sequence number before it and the URL (or its path) after it, and sets
/// the full-URL flag when the origin does not match.
pub fn encode_element_head(e: &QueueElement) -> Vec<u8> {
    let mut out = Vec::with_capacity(12);
    let mut flags = e.kind.code() & ELEM_KIND;
    let parent = if e.prior.is_some() { None } else { e.parent };
    if let Some((_, is_ref)) = parent {
        flags |= ELEM_PARENT;
        if is_ref {
            flags |= ELEM_PARENT_REF;
        }
    } else if e.prior.is_some() {
        flags |= ELEM_PRIOR;
    }
    let extra = e.attempt != 0 || e.retries != 0 || !e.redirect_chain.is_empty();
    if extra {
        flags |= ELEM_EXTRA;
    }
    out.push(flags);
    if let Some((key, _)) = parent {
        out.extend_from_slice(&key.to_le_bytes());
    }
    if let Some(p) = &e.prior {
        put_prior(&mut out, p);
    }
    if extra {
        put_varint(&mut out, u64::from(e.attempt));
        put_varint(&mut out, u64::from(e.retries));
        put_varint(&mut out, e.redirect_chain.len() as u64);
        for u in &e.redirect_chain {
            put_str(&mut out, u);
        }
    }
    out
}

/// A whole element for a queue whose origin is `origin` (what the queueing script builds from the head).
pub fn encode_element(e: &QueueElement, origin: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + e.url.len());
    put_varint(&mut out, e.seq);
    let head = encode_element_head(e);
    match url_origin(&e.url) {
        Some((o, p)) if o == origin => {
            out.extend_from_slice(&head);
            out.extend_from_slice(&e.url.as_bytes()[p..]);
        }
        _ => {
            out.push(head[0] | ELEM_FULL_URL);
            out.extend_from_slice(&head[1..]);
            out.extend_from_slice(e.url.as_bytes());
        }
    }
    out
}

/// Decodes an element of a queue whose origin is `origin`.
pub fn decode_element(buf: &[u8], origin: &str) -> Result<QueueElement, DecodeError> {
    let mut r = Reader::new(buf);
    let seq = r.varint()?;
    let flags = r.u8()?;
    let kind = JobKind::from_code(flags & ELEM_KIND).ok_or(DecodeError("unknown kind"))?;
    let (mut parent, mut prior) = (None, None);
    if flags & ELEM_PARENT != 0 {
        parent = Some((r.u64_fixed()?, flags & ELEM_PARENT_REF != 0));
    } else if flags & ELEM_PRIOR != 0 {
        prior = Some(Box::new(read_prior(&mut r)?));
    }
    let (mut attempt, mut retries, mut redirect_chain) = (0, 0, Vec::new());
    if flags & ELEM_EXTRA != 0 {
        attempt = r.u32()?;
        retries = r.u32()?;
        let n = r.varint()?;
        for _ in 0..n {
            redirect_chain.push(r.str()?.to_owned());
        }
    }
    let tail = std::str::from_utf8(r.rest()).map_err(|_| DecodeError("url not utf-8"))?;
    let url = if flags & ELEM_FULL_URL != 0 {
        tail.to_owned()
    } else if tail.starts_with('/') {
        format!("{origin}{tail}")
    } else {
        return Err(DecodeError("path of an element does not start with /"));
    };
    Ok(QueueElement {
        seq,
        kind,
        parent,
        attempt,
        retries,
        redirect_chain,
        url,
        prior,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::TrapKind;

    #[test]
    fn varints_round_trip() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(Reader::new(&b).varint().unwrap(), v);
        }
        assert!(Reader::new(&[0x80, 0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
    }

    #[test]
    fn queued_round_trip_and_size() {
        let v = QueuedValue {
            id: UrlRef { key: 42, slot: 0 },
            kind: JobKind::Page,
            attempt: 1,
            retries: 2,
            redirect_chain: vec![],
            prior: None,
        };
        let b = encode_queued(&v);
        assert_eq!(b.len(), 9 + 1 + 1 + 1);
        assert_eq!(decode_queued(&b).unwrap(), v);
        let v2 = QueuedValue {
            kind: JobKind::TooDeep,
            redirect_chain: vec!["http://a/".into(), "http://b/".into()],
            ..v.clone()
        };
        assert_eq!(decode_queued(&encode_queued(&v2)).unwrap(), v2);
    }

    #[test]
    fn a_revisit_keeps_its_prior_visit_in_the_queue() {
        use crate::recrawl::{Capture, DigestKey, Prior, Validators};
        let v = QueuedValue {
            id: UrlRef { key: 7, slot: 0 },
            kind: JobKind::Embed,
            attempt: 0,
            retries: 1,
            redirect_chain: vec!["http://a/old".into()],
            prior: Some(Box::new(Prior {
                visits: 3,
                fetched_at_ms: 1_796_515_200_123,
                interval_ds: 36_000,
                validators: Validators {
                    etag: Some("\"abc\"".into()),
                    last_modified_s: Some(1_796_000_000),
                },
                capture: Some(Capture {
                    fetched_at_ms: 1_796_000_000_456,
                    digest: DigestKey::of("sha1:AAAA"),
                }),
            })),
        };
        let b = encode_queued(&v);
        assert_eq!(decode_queued(&b).unwrap(), v);
        // A value written before priors existed reads as a first visit.
        let plain = QueuedValue { prior: None, ..v };
        assert_eq!(decode_queued(&encode_queued(&plain)).unwrap().prior, None);
        // Cut anywhere inside the prior (after the reference, kind, counters and its length): an error.
        let start = 9 + 1 + 1 + 1 + 1;
        let len = usize::from(b[start - 1]);
        for n in start..start + len {
            assert!(decode_queued(&b[..n]).is_err(), "cut at {n}");
        }
    }

    fn element(url: &str) -> QueueElement {
        QueueElement {
            seq: 300_007,
            kind: JobKind::Page,
            parent: None,
            attempt: 0,
            retries: 0,
            redirect_chain: vec![],
            url: url.into(),
            prior: None,
        }
    }

    #[test]
    fn elements_round_trip_and_elide_their_queue_origin() {
        let url = "http://host-7.example:8080/docs/section-123/page-45678.html";
        let mut e = element(url);
        e.parent = Some((0x0102_0304_0506_0708, true));
        let origin = "http://host-7.example:8080";
        let b = encode_element(&e, origin);
        // seq (3 bytes), flags, parent key, the path only
        assert_eq!(
            b.len(),
            3 + 1 + 8 + "/docs/section-123/page-45678.html".len()
        );
        assert!(b.ends_with(b"/docs/section-123/page-45678.html"));
        assert_eq!(decode_element(&b, origin).unwrap(), e);
        // the head is what the script puts between the sequence number and the path
        let mut seq = Vec::new();
        put_varint(&mut seq, e.seq);
        assert_eq!(
            &b[seq.len()..seq.len() + 9],
            encode_element_head(&e).as_slice()
        );

        let full = vec![
            e.clone(),
            QueueElement {
                kind: JobKind::Trap(TrapKind::Calendar),
                parent: Some((9, false)),
                attempt: 2,
                retries: 5,
                redirect_chain: vec!["http://a/old".into(), "https://b/".into()],
                ..e.clone()
            },
            element("https://other.example/x?y=1"),
            element("http://no-path.example"),
            element("mailto:someone@example.com"),
        ];
        for e in full {
            for o in [origin, "", "https://other.example"] {
                let b = encode_element(&e, o);
                assert_eq!(decode_element(&b, o).unwrap(), e, "{e:?} in {o:?}");
            }
        }
    }

    #[test]
    fn a_revisit_element_carries_its_prior_in_place_of_a_parent() {
        use crate::recrawl::{Capture, DigestKey, Prior, Validators};
        let prior = Prior {
            visits: 2,
            fetched_at_ms: 1_796_515_200_123,
            interval_ds: 864_000,
            validators: Validators {
                etag: Some("\"5f3c1a2b-1e4\"".into()),
                last_modified_s: Some(1_796_000_000),
            },
            capture: Some(Capture {
                fetched_at_ms: 1_796_000_000_456,
                digest: DigestKey::of("sha1:AAAA"),
            }),
        };
        let origin = "http://a.example";
        let e = QueueElement {
            kind: JobKind::Embed,
            prior: Some(Box::new(prior.clone())),
            ..element("http://a.example/style.css")
        };
        let b = encode_element(&e, origin);
        assert_eq!(decode_element(&b, origin).unwrap(), e);
        let with_extra = QueueElement {
            retries: 2,
            redirect_chain: vec!["http://a.example/old.css".into()],
            ..e.clone()
        };
        for o in [origin, "https://b.example"] {
            let b = encode_element(&with_extra, o);
            assert_eq!(decode_element(&b, o).unwrap(), with_extra);
        }
        // One or the other: a revisit's element keeps no parent.
        let both = QueueElement {
            parent: Some((7, true)),
            ..e.clone()
        };
        assert_eq!(encode_element(&both, origin), b);
        // A first visit's element is as before: no prior, no bytes for one.
        let first = QueueElement {
            prior: None,
            ..e.clone()
        };
        let plain = encode_element(&first, origin);
        assert_eq!(plain.len(), 3 + 1 + "/style.css".len());
        assert_eq!(decode_element(&plain, origin).unwrap().prior, None);
        // Cut inside the prior: an error.
        for n in 4..b.len() - "/style.css".len() {
            assert!(decode_element(&b[..n], origin).is_err(), "cut at {n}");
        }
    }

    #[test]
    fn elements_fall_back_to_the_full_url_when_the_origin_differs() {
        let e = element("https://a.example/p");
        let same = encode_element(&e, "https://a.example");
        let other = encode_element(&e, "http://a.example");
        assert_eq!(other.len(), same.len() + "https://a.example".len());
        assert!(other.ends_with(b"https://a.example/p"));
        assert_eq!(decode_element(&other, "http://a.example").unwrap(), e);
        assert_eq!(
            url_origin("http://h:1/a/b"),
            Some(("http://h:1", "http://h:1".len()))
        );
        assert_eq!(url_origin("http://h"), None);
        // a path-only element needs its origin: it never decodes to a URL without one
        assert!(decode_element(&same[..4], "https://a.example").is_err());
        assert!(decode_element(&[], "").is_err());
    }

    #[test]
    fn embed_kind_round_trips_and_old_kind_codes_keep_their_meaning() {
        let v = QueuedValue {
            id: UrlRef { key: 5, slot: 1 },
            kind: JobKind::Embed,
            ..QueuedValue::default()
        };
        assert_eq!(decode_queued(&encode_queued(&v)).unwrap(), v);
        let p = QueueElement {
            kind: JobKind::Embed,
            ..element("http://a/i.png")
        };
        assert_eq!(
            decode_element(&encode_element(&p, "http://a"), "http://a").unwrap(),
            p
        );
        // Values written before the embed kind existed: a page stored as code 0, an excluded URL as code 3.
        let old_page = [5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        assert_eq!(decode_queued(&old_page).unwrap().kind, JobKind::Page);
        let mut old_scope = old_page;
        old_scope[9] = 3;
        assert_eq!(decode_queued(&old_scope).unwrap().kind, JobKind::OutOfScope);
        assert!(JobKind::Embed.is_fetched() && JobKind::Page.is_fetched());
        assert!(!JobKind::Robots.is_fetched() && !JobKind::TooDeep.is_fetched());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for len in 0..40 {
            let junk: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = decode_queued(&junk);
            let _ = decode_row(&junk);
            let _ = row_url(&junk);
            let _ = decode_host(&junk);
            let _ = decode_element(&junk, "http://a");
        }
        assert!(decode_queued(&[1, 2, 3]).is_err());
    }

    #[test]
    fn rows_round_trip_with_each_kind_of_parent() {
        for parent in [
            Parent::None,
            Parent::Ref(UrlRef { key: 9, slot: 0 }),
            Parent::Url("http://b/sitemap.xml".into()),
        ] {
            let b = encode_row("http://b/2", &parent);
            assert_eq!(row_url(&b).unwrap(), "http://b/2");
            let row = decode_row(&b).unwrap();
            assert_eq!((row.url.as_str(), row.parent), ("http://b/2", parent));
            assert!(decode_row(&b[..b.len() - 1]).is_err());
        }
        let mut bad = encode_row("http://a/", &Parent::None);
        bad[0] = 7;
        assert!(decode_row(&bad).is_err() && row_url(&bad).is_err());
        bad[0] = 0;
        bad.push(0);
        assert!(decode_row(&bad).is_err(), "trailing bytes");
    }
}
