//! The schedule's encodings: a scheduled URL's entry in its row chunk, and the (due, row) pairs of a due chunk.
//! Decoders never panic: short or malformed input is an error.

use crawl_core::frontier::JobKind;
use crawl_core::frontier::codec::{DecodeError, Reader, put_varint};
use crawl_core::recrawl::{Capture, DigestKey, Prior, RECRAWL_EPOCH_S, Validators};

const EPOCH_MS: u64 = RECRAWL_EPOCH_S * 1000;

/// A due time as stored: whole seconds since [`RECRAWL_EPOCH_S`], rounded up (never earlier than asked), times
/// before the epoch as the epoch, times past 2156 saturated (as [`crawl_core::recrawl::Stored`] keeps them).
pub fn due_s(ms: u64) -> u32 {
    u32::try_from(ms.saturating_sub(EPOCH_MS).div_ceil(1000)).unwrap_or(u32::MAX)
}

/// A stored due time in Unix ms.
pub fn due_ms(s: u32) -> u64 {
    (u64::from(s) + RECRAWL_EPOCH_S) * 1000
}

/// The last stored due time at or before `now_ms` (None: before the epoch, nothing can be due).
pub fn due_upto_s(now_ms: u64) -> Option<u32> {
    let since = now_ms.checked_sub(EPOCH_MS)?;
    Some(u32::try_from(since / 1000).unwrap_or(u32::MAX))
}

/// A scheduled revisit as the schedule keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revisit {
    /// The URL's row (its [`crawl_core::frontier::UrlRef`] key).
    pub row: u64,
    /// When it comes due ([`due_s`]).
    pub due_s: u32,
    pub depth: u32,
    /// `Page` or `Embed`.
    pub kind: JobKind,
    pub prior: Prior,
}

// The head byte of an entry: which fields follow, the kind, and the depth when it is below 7.
const ETAG: u8 = 0x01;
const LAST_MODIFIED: u8 = 0x02;
const CAPTURE: u8 = 0x04;
/// The capture was fetched at the last fetch (a changed or first full body): its time is not stored.
const CAPTURE_AT_FETCH: u8 = 0x08;
const EMBED: u8 = 0x10;
const DEPTH_SHIFT: u8 = 5;
/// Depth bits saying that the depth follows as a varint.
const DEPTH_ESCAPE: u8 = 7;

/// A signed difference (taken wrapping, so that any two u64 round-trip) as a zigzag varint: small either way.
fn put_diff(out: &mut Vec<u8>, a: u64, b: u64) {
    let d = a.wrapping_sub(b) as i64;
    put_varint(out, ((d << 1) ^ (d >> 63)) as u64);
}

/// The `b` of [`put_diff`] given `a`.
fn read_diff(r: &mut Reader<'_>, a: u64) -> Result<u64, DecodeError> {
    let z = r.varint()?;
    let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
    Ok(a.wrapping_sub(d as u64))
}

/// Appends an entry (after its row offset): the due time (4 bytes LE), the head byte, the depth when it is 7 or
/// more (varint), visits and interval (varints), then the differences, as zigzag varints: due time − last fetch (ms),
/// last fetch − Last-Modified (s), last fetch − capture (ms, unless the capture is the last fetch), then the
/// capture's digest key (8 bytes), and the ETag (length byte, text). An ETag longer than 255 bytes is not kept
/// (none is: the policy keeps at most 128).
pub fn put_entry(out: &mut Vec<u8>, e: &Revisit) {
    let p = &e.prior;
    let fetched = p.fetched_at_ms;
    let etag = p
        .validators
        .etag
        .as_deref()
        .filter(|t| t.len() <= usize::from(u8::MAX));
    let depth_bits = u8::try_from(e.depth)
        .ok()
        .filter(|d| *d < DEPTH_ESCAPE)
        .unwrap_or(DEPTH_ESCAPE);
    let mut head = depth_bits << DEPTH_SHIFT;
    if etag.is_some() {
        head |= ETAG;
    }
    if p.validators.last_modified_s.is_some() {
        head |= LAST_MODIFIED;
    }
    if let Some(c) = &p.capture {
        head |= CAPTURE;
        if c.fetched_at_ms == fetched {
            head |= CAPTURE_AT_FETCH;
        }
    }
    if e.kind == JobKind::Embed {
        head |= EMBED;
    }
    out.extend_from_slice(&e.due_s.to_le_bytes());
    out.push(head);
    if depth_bits == DEPTH_ESCAPE {
        put_varint(out, u64::from(e.depth));
    }
    put_varint(out, u64::from(p.visits));
    put_varint(out, u64::from(p.interval_ds));
    put_diff(out, due_ms(e.due_s), fetched);
    if let Some(lm) = p.validators.last_modified_s {
        put_diff(out, fetched / 1000, lm);
    }
    if let Some(c) = &p.capture {
        if head & CAPTURE_AT_FETCH == 0 {
            put_diff(out, fetched, c.fetched_at_ms);
        }
        out.extend_from_slice(&c.digest.0);
    }
    if let Some(t) = etag {
        out.push(u8::try_from(t.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(t.as_bytes());
    }
}

/// Reads an entry of row `row` back.
pub fn read_entry(r: &mut Reader<'_>, row: u64) -> Result<Revisit, DecodeError> {
    let b = r.bytes(4)?;
    let due_s = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let head = r.u8()?;
    let depth = match head >> DEPTH_SHIFT {
        DEPTH_ESCAPE => r.u32()?,
        d => u32::from(d),
    };
    let visits = r.u32()?;
    let interval_ds = r.u32()?;
    let fetched_at_ms = read_diff(r, due_ms(due_s))?;
    let last_modified_s = if head & LAST_MODIFIED != 0 {
        Some(read_diff(r, fetched_at_ms / 1000)?)
    } else {
        None
    };
    let capture = if head & CAPTURE != 0 {
        let at = if head & CAPTURE_AT_FETCH != 0 {
            fetched_at_ms
        } else {
            read_diff(r, fetched_at_ms)?
        };
        let mut key = [0u8; 8];
        key.copy_from_slice(r.bytes(8)?);
        Some(Capture {
            fetched_at_ms: at,
            digest: DigestKey(key),
        })
    } else if head & CAPTURE_AT_FETCH != 0 {
        return Err(DecodeError("capture time without a capture"));
    } else {
        None
    };
    let etag = if head & ETAG != 0 {
        let n = usize::from(r.u8()?);
        let text = std::str::from_utf8(r.bytes(n)?).map_err(|_| DecodeError("etag not UTF-8"))?;
        Some(text.to_owned())
    } else {
        None
    };
    Ok(Revisit {
        row,
        due_s,
        depth,
        kind: if head & EMBED != 0 {
            JobKind::Embed
        } else {
            JobKind::Page
        },
        prior: Prior {
            visits,
            fetched_at_ms,
            interval_ds,
            validators: Validators {
                etag,
                last_modified_s,
            },
            capture,
        },
    })
}

/// The length of the entry at the start of `buf` ([`put_entry`]), read without decoding it.
pub fn entry_len(buf: &[u8]) -> Result<usize, DecodeError> {
    let mut r = Reader::new(buf);
    r.bytes(4)?;
    let head = r.u8()?;
    if head >> DEPTH_SHIFT == DEPTH_ESCAPE {
        r.varint()?;
    }
    r.varint()?; // visits
    r.varint()?; // interval
    r.varint()?; // last fetch
    if head & LAST_MODIFIED != 0 {
        r.varint()?;
    }
    if head & CAPTURE != 0 {
        if head & CAPTURE_AT_FETCH == 0 {
            r.varint()?;
        }
        r.bytes(8)?;
    }
    if head & ETAG != 0 {
        let n = usize::from(r.u8()?);
        r.bytes(n)?;
    }
    Ok(buf.len() - r.rest().len())
}

/// The due time of an entry ([`put_entry`]), its first four bytes.
pub fn entry_due_s(body: &[u8]) -> Result<u32, DecodeError> {
    match body {
        [a, b, c, d, ..] => Ok(u32::from_le_bytes([*a, *b, *c, *d])),
        _ => Err(DecodeError("truncated")),
    }
}

/// Reads varints from a byte slice, knowing where it stands.
#[derive(Debug)]
pub struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cur<'a> {
    pub fn new(buf: &'a [u8]) -> Cur<'a> {
        Cur { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(DecodeError("truncated"))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError("varint too long"))
    }

    pub fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        if self.buf.len() - self.pos < n {
            return Err(DecodeError("truncated"));
        }
        self.pos += n;
        Ok(())
    }
}

/// A due pair: (due time as stored, row).
pub type DuePair = (u32, u64);

/// A due pair after `prev` (pairs are sorted): the difference of the due times (varint), then the difference of the
/// rows when the due time is the same, else the row (varint).
pub fn put_due_delta(out: &mut Vec<u8>, prev: DuePair, p: DuePair) {
    let dd = p.0.wrapping_sub(prev.0);
    put_varint(out, u64::from(dd));
    put_varint(
        out,
        if dd == 0 {
            p.1.wrapping_sub(prev.1)
        } else {
            p.1
        },
    );
}

pub fn read_due_delta(c: &mut Cur<'_>, prev: DuePair) -> Result<DuePair, DecodeError> {
    let dd = u32::try_from(c.varint()?).map_err(|_| DecodeError("value out of range"))?;
    let v = c.varint()?;
    if dd == 0 {
        if v == 0 {
            return Err(DecodeError("a due pair repeated"));
        }
        let row = prev
            .1
            .checked_add(v)
            .ok_or(DecodeError("due row out of range"))?;
        Ok((prev.0, row))
    } else {
        let due = prev
            .0
            .checked_add(dd)
            .ok_or(DecodeError("due time out of range"))?;
        Ok((due, v))
    }
}

/// A row after `prev` (rows are sorted): the difference (varint).
pub fn put_row_delta(out: &mut Vec<u8>, prev: u64, row: u64) {
    put_varint(out, row.wrapping_sub(prev));
}

pub fn read_row_delta(c: &mut Cur<'_>, prev: u64) -> Result<u64, DecodeError> {
    match c.varint()? {
        0 => Err(DecodeError("a row repeated in its chunk")),
        d => prev.checked_add(d).ok_or(DecodeError("row out of range")),
    }
}

#[cfg(test)]
mod tests;
