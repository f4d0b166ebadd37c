//! The schedule's encodings: a scheduled URL's entry in its row chunk, and the (due, row) pairs of a due chunk.
//! Decoders never panic: short or malformed input is an error.

use crawl_core::frontier::JobKind;
use crawl_core::frontier::codec::{DecodeError, Reader, put_varint};
use crawl_core::recrawl::{Capture, DigestKey, Prior, RECRAWL_EPOCH_S, Validators};

const EPOCH_MS: u64 = RECRAWL_EPOCH_S * 1000;

/// Rows per row chunk: a row's chunk is keyed by the row divided by this, its entry starts with the remainder.
pub const ROWS_PER_CHUNK: u64 = 64;

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
    put_varint(out, u64::from(p.interval_s));
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
    let interval_s = r.u32()?;
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
            interval_s,
            validators: Validators {
                etag,
                last_modified_s,
            },
            capture,
        },
    })
}

/// The key of a row's chunk.
pub fn chunk_of(row: u64) -> u64 {
    row / ROWS_PER_CHUNK
}

/// A row chunk: its entries in row order, each after its row's offset in the chunk (one byte).
pub fn encode_row_chunk(entries: &[Revisit]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * 32);
    for e in entries {
        out.push(u8::try_from(e.row % ROWS_PER_CHUNK).unwrap_or(u8::MAX));
        put_entry(&mut out, e);
    }
    out
}

/// The entries of the row chunk keyed `key`, in row order.
pub fn decode_row_chunk(key: u64, buf: &[u8]) -> Result<Vec<Revisit>, DecodeError> {
    let base = key
        .checked_mul(ROWS_PER_CHUNK)
        .ok_or(DecodeError("row chunk key out of range"))?;
    let mut r = Reader::new(buf);
    let mut out: Vec<Revisit> = Vec::new();
    while !r.is_empty() {
        let off = u64::from(r.u8()?);
        if off >= ROWS_PER_CHUNK || out.last().is_some_and(|l| l.row >= base + off) {
            return Err(DecodeError("row offsets out of order"));
        }
        out.push(read_entry(&mut r, base + off)?);
    }
    Ok(out)
}

/// A due pair: (due time as stored, row).
pub type DuePair = (u32, u64);

/// The value of a due chunk keyed by its first pair: the pairs after it, each as the difference of its due time
/// to the previous one (varint), then its row: the difference to the previous row when the due time is the same
/// (pairs are sorted), else the row itself (varints).
pub fn encode_due_chunk(first: DuePair, rest: &[DuePair]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rest.len() * 5);
    let mut prev = first;
    for &(due, row) in rest {
        let dd = due.wrapping_sub(prev.0);
        put_varint(&mut out, u64::from(dd));
        put_varint(
            &mut out,
            if dd == 0 {
                row.wrapping_sub(prev.1)
            } else {
                row
            },
        );
        prev = (due, row);
    }
    out
}

/// The pairs of the due chunk keyed `first`, that one included, in order.
pub fn decode_due_chunk(first: DuePair, buf: &[u8]) -> Result<Vec<DuePair>, DecodeError> {
    let mut out = Vec::with_capacity(1 + buf.len() / 4);
    out.push(first);
    let mut prev = first;
    let mut r = Reader::new(buf);
    while !r.is_empty() {
        let dd = r.u32()?;
        let v = r.varint()?;
        let pair = if dd == 0 {
            if v == 0 {
                return Err(DecodeError("a due pair repeated"));
            }
            (
                prev.0,
                prev.1
                    .checked_add(v)
                    .ok_or(DecodeError("due row out of range"))?,
            )
        } else {
            (
                prev.0
                    .checked_add(dd)
                    .ok_or(DecodeError("due time out of range"))?,
                v,
            )
        };
        out.push(pair);
        prev = pair;
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
