//! The compact binary encoding of the stores' values: LEB128 varints, fixed 8-byte fingerprints, and
//! length-prefixed strings. A decoder never panics: short or malformed input is an error.

use super::{Fp, JobKind, UrlRef};

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
    out.extend_from_slice(&r.fp.to_le_bytes());
    out.push(r.slot);
}

pub fn read_ref(r: &mut Reader<'_>) -> Result<UrlRef, DecodeError> {
    Ok(UrlRef {
        fp: r.u64_fixed()?,
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
}

pub fn encode_queued(v: &QueuedValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    put_ref(&mut out, v.id);
    out.push(v.kind.code());
    put_varint(&mut out, u64::from(v.attempt));
    put_varint(&mut out, u64::from(v.retries));
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
    let kind = JobKind::from_code(r.u8()?).ok_or(DecodeError("unknown kind"))?;
    let attempt = r.u32()?;
    let retries = r.u32()?;
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
    })
}

/// The page that linked a pending URL, kept with the URL until it is done.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Parent {
    #[default]
    None,
    /// A stored URL.
    Ref(UrlRef),
    /// A URL that is not stored (a sitemap).
    Url(String),
}

/// State of a URL in the URL table.
pub const PENDING: u8 = 1;
pub const DONE: u8 = 2;

const HAS_PARENT_REF: u8 = 0x10;
const HAS_PARENT_URL: u8 = 0x20;

/// One URL of a fingerprint: its state, the URL, and (while pending) its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub state: u8,
    pub url: String,
    pub parent: Parent,
}

/// The URLs sharing one fingerprint (almost always one), as stored in the URL table: per URL a state byte (with
/// flags for a parent), the URL, and the parent while pending. A done URL keeps only its state and URL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UrlSlots {
    pub slots: Vec<Slot>,
}

fn read_slot(r: &mut Reader<'_>) -> Result<(u8, String, Parent), DecodeError> {
    let flags = r.u8()?;
    let state = flags & 0x0f;
    if state != PENDING && state != DONE {
        return Err(DecodeError("unknown url state"));
    }
    let url = r.str()?.to_owned();
    let parent = if flags & HAS_PARENT_REF != 0 {
        Parent::Ref(read_ref(r)?)
    } else if flags & HAS_PARENT_URL != 0 {
        Parent::Url(r.str()?.to_owned())
    } else {
        Parent::None
    };
    Ok((state, url, parent))
}

impl UrlSlots {
    pub fn find(&self, url: &str) -> Option<u8> {
        self.slots
            .iter()
            .position(|s| s.url == url)
            .and_then(|i| u8::try_from(i).ok())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.slots.iter().map(|s| s.url.len() + 12).sum());
        for s in &self.slots {
            let parent = if s.state == DONE {
                &Parent::None
            } else {
                &s.parent
            };
            let flags = s.state
                | match parent {
                    Parent::None => 0,
                    Parent::Ref(_) => HAS_PARENT_REF,
                    Parent::Url(_) => HAS_PARENT_URL,
                };
            out.push(flags);
            put_str(&mut out, &s.url);
            match parent {
                Parent::None => {}
                Parent::Ref(r) => put_ref(&mut out, *r),
                Parent::Url(u) => put_str(&mut out, u),
            }
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<UrlSlots, DecodeError> {
        let mut r = Reader::new(buf);
        let mut slots = Vec::with_capacity(1);
        while !r.is_empty() {
            let (state, url, parent) = read_slot(&mut r)?;
            slots.push(Slot { state, url, parent });
        }
        Ok(UrlSlots { slots })
    }
}

/// Finds `url` in an encoded slot list. Returns its slot.
pub fn find_slot(buf: &[u8], url: &str) -> Result<Option<u8>, DecodeError> {
    let mut r = Reader::new(buf);
    let mut i = 0u8;
    while !r.is_empty() {
        let (_, u, _) = read_slot(&mut r)?;
        if u == url {
            return Ok(Some(i));
        }
        i = i.checked_add(1).ok_or(DecodeError("too many slots"))?;
    }
    Ok(None)
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

const PENDING_PARENT_REF: u8 = 0x01;
const PENDING_PARENT_URL: u8 = 0x02;

/// A pending URL as a store shared by many processes keeps it in one value: everything but its queue position
/// (depth and discovery order live in the queue's score), the parent URL inline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PendingValue {
    pub url: String,
    pub host: Fp,
    pub kind: JobKind,
    pub attempt: u32,
    pub retries: u32,
    pub parent: Option<String>,
    pub parent_ref: Option<UrlRef>,
    pub redirect_chain: Vec<String>,
}

pub fn encode_pending(v: &PendingValue) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(16 + v.url.len() + v.parent.as_ref().map_or(0, |p| p.len() + 10));
    out.push(v.kind.code());
    let mut flags = 0;
    if v.parent_ref.is_some() {
        flags |= PENDING_PARENT_REF;
    }
    if v.parent.is_some() {
        flags |= PENDING_PARENT_URL;
    }
    out.push(flags);
    out.extend_from_slice(&v.host.to_le_bytes());
    put_varint(&mut out, u64::from(v.attempt));
    put_varint(&mut out, u64::from(v.retries));
    put_str(&mut out, &v.url);
    if let Some(r) = v.parent_ref {
        put_ref(&mut out, r);
    }
    if let Some(p) = &v.parent {
        put_str(&mut out, p);
    }
    put_varint(&mut out, v.redirect_chain.len() as u64);
    for u in &v.redirect_chain {
        put_str(&mut out, u);
    }
    out
}

pub fn decode_pending(buf: &[u8]) -> Result<PendingValue, DecodeError> {
    let mut r = Reader::new(buf);
    let kind = JobKind::from_code(r.u8()?).ok_or(DecodeError("unknown kind"))?;
    let flags = r.u8()?;
    let host = r.u64_fixed()?;
    let attempt = r.u32()?;
    let retries = r.u32()?;
    let url = r.str()?.to_owned();
    let parent_ref = if flags & PENDING_PARENT_REF != 0 {
        Some(read_ref(&mut r)?)
    } else {
        None
    };
    let parent = if flags & PENDING_PARENT_URL != 0 {
        Some(r.str()?.to_owned())
    } else {
        None
    };
    let n = r.varint()?;
    let mut redirect_chain = Vec::new();
    for _ in 0..n {
        redirect_chain.push(r.str()?.to_owned());
    }
    if !r.is_empty() {
        return Err(DecodeError("trailing bytes"));
    }
    Ok(PendingValue {
        url,
        host,
        kind,
        attempt,
        retries,
        parent,
        parent_ref,
        redirect_chain,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            id: UrlRef { fp: 42, slot: 0 },
            kind: JobKind::Page,
            attempt: 1,
            retries: 2,
            redirect_chain: vec![],
        };
        let b = encode_queued(&v);
        assert_eq!(b.len(), 9 + 1 + 1 + 1);
        assert_eq!(decode_queued(&b).unwrap(), v);
        let v2 = QueuedValue {
            kind: JobKind::TooDeep,
            redirect_chain: vec!["http://a/".into(), "http://b/".into()],
            ..v
        };
        assert_eq!(decode_queued(&encode_queued(&v2)).unwrap(), v2);
    }

    #[test]
    fn pending_round_trip() {
        let v = PendingValue {
            url: "http://a/x".into(),
            host: 77,
            kind: JobKind::Page,
            attempt: 1,
            retries: 3,
            parent: Some("http://a/".into()),
            parent_ref: Some(UrlRef { fp: 9, slot: 0 }),
            redirect_chain: vec!["http://a/old".into()],
        };
        assert_eq!(decode_pending(&encode_pending(&v)).unwrap(), v);
        let bare = PendingValue {
            url: "http://b/".into(),
            kind: JobKind::OutOfScope,
            ..PendingValue::default()
        };
        let b = encode_pending(&bare);
        assert_eq!(b.len(), 1 + 1 + 8 + 1 + 1 + 1 + 9 + 1);
        assert_eq!(decode_pending(&b).unwrap(), bare);
        assert!(decode_pending(&b[..b.len() - 1]).is_err());
    }

    #[test]
    fn embed_kind_round_trips_and_old_kind_codes_keep_their_meaning() {
        let v = QueuedValue {
            id: UrlRef { fp: 5, slot: 1 },
            kind: JobKind::Embed,
            ..QueuedValue::default()
        };
        assert_eq!(decode_queued(&encode_queued(&v)).unwrap(), v);
        let p = PendingValue {
            url: "http://a/i.png".into(),
            kind: JobKind::Embed,
            ..PendingValue::default()
        };
        assert_eq!(decode_pending(&encode_pending(&p)).unwrap(), p);
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
            let _ = UrlSlots::decode(&junk);
            let _ = find_slot(&junk, "x");
            let _ = decode_host(&junk);
            let _ = decode_pending(&junk);
        }
        assert!(decode_queued(&[1, 2, 3]).is_err());
    }

    #[test]
    fn slots_find_the_exact_url_and_keep_parents_while_pending() {
        let s = UrlSlots {
            slots: vec![
                Slot {
                    state: DONE,
                    url: "http://a/1".into(),
                    parent: Parent::None,
                },
                Slot {
                    state: PENDING,
                    url: "http://b/2".into(),
                    parent: Parent::Ref(UrlRef { fp: 9, slot: 0 }),
                },
                Slot {
                    state: PENDING,
                    url: "http://b/3".into(),
                    parent: Parent::Url("http://b/sitemap.xml".into()),
                },
            ],
        };
        let b = s.encode();
        assert_eq!(UrlSlots::decode(&b).unwrap(), s);
        assert_eq!(find_slot(&b, "http://b/3").unwrap(), Some(2));
        assert_eq!(find_slot(&b, "http://b/4").unwrap(), None);
        assert_eq!(s.find("http://a/1"), Some(0));
        // a done URL drops its parent
        let mut done = s.clone();
        done.slots[1].state = DONE;
        let d = UrlSlots::decode(&done.encode()).unwrap();
        assert_eq!(d.slots[1].parent, Parent::None);
    }
}
