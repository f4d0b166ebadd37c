//! What a store keeps per URL for continuous crawling, in a fixed little-endian layout:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | flags: 1 = ETag, 2 = Last-Modified, 4 = capture |
//! | 4 | next due, seconds since [`RECRAWL_EPOCH_S`] (rounded up) |
//! | 4 | interval (tenths of a second, unjittered) |
//! | 4 | visits |
//! | 6 | last fetch, ms since the epoch (48 bits: 8,900 years) |
//! | 4 | Last-Modified, Unix seconds (with flag 2) |
//! | 6 + 8 | capture: fetch time as above, digest key (with flag 4) |
//! | 1 + n | ETag: length, bytes (with flag 1; n ≤ [`MAX_ETAG_BYTES`](super::MAX_ETAG_BYTES)) |
//!
//! At most [`STORED_FIXED_MAX`] (38) bytes besides the ETag's text. Times before the epoch are stored as the
//! epoch; seconds past 2156 saturate.

use super::{Capture, DigestKey, Prior, Validators};
use crate::frontier::codec::{DecodeError, Reader};

/// 2020-01-01T00:00:00Z, the zero of stored times.
pub const RECRAWL_EPOCH_S: u64 = 1_577_836_800;
/// The most bytes an encoding takes besides the ETag's text.
pub const STORED_FIXED_MAX: usize = 1 + 4 + 4 + 4 + 6 + 4 + 6 + 8 + 1;
const _: () = assert!(
    STORED_FIXED_MAX <= 40,
    "the recrawl entry's budget is 40 bytes"
);

const ETAG: u8 = 1;
const LAST_MODIFIED: u8 = 2;
const CAPTURE: u8 = 4;
const EPOCH_MS: u64 = RECRAWL_EPOCH_S * 1000;
const MS_48: u64 = (1 << 48) - 1;

/// A URL's schedule and prior visit, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stored {
    /// When it comes due (Unix ms; stored in whole seconds, rounded up).
    pub next_due_ms: u64,
    pub prior: Prior,
}

fn put_u32(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&u32::try_from(v).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_ms48(out: &mut Vec<u8>, ms: u64) {
    let v = ms.saturating_sub(EPOCH_MS).min(MS_48);
    out.extend_from_slice(&v.to_le_bytes()[..6]);
}

fn u32_at(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    let b = r.bytes(4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn ms48_at(r: &mut Reader<'_>) -> Result<u64, DecodeError> {
    let b = r.bytes(6)?;
    let mut w = [0u8; 8];
    w[..6].copy_from_slice(b);
    Ok(u64::from_le_bytes(w) + EPOCH_MS)
}

impl Stored {
    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        Self::encode_with(self.next_due_ms, &self.prior)
    }

    /// The encoding of a URL due at `next_due_ms` whose previous visit was `p`.
    pub fn encode_with(next_due_ms: u64, p: &Prior) -> Vec<u8> {
        let etag = p
            .validators
            .etag
            .as_deref()
            .filter(|e| e.len() <= usize::from(u8::MAX));
        let mut out = Vec::with_capacity(STORED_FIXED_MAX + etag.map_or(0, str::len));
        let flags = if etag.is_some() { ETAG } else { 0 }
            | if p.validators.last_modified_s.is_some() {
                LAST_MODIFIED
            } else {
                0
            }
            | if p.capture.is_some() { CAPTURE } else { 0 };
        out.push(flags);
        put_u32(
            &mut out,
            next_due_ms.saturating_sub(EPOCH_MS).div_ceil(1000),
        );
        put_u32(&mut out, u64::from(p.interval_ds));
        put_u32(&mut out, u64::from(p.visits));
        put_ms48(&mut out, p.fetched_at_ms);
        if let Some(lm) = p.validators.last_modified_s {
            put_u32(&mut out, lm);
        }
        if let Some(c) = &p.capture {
            put_ms48(&mut out, c.fetched_at_ms);
            out.extend_from_slice(&c.digest.0);
        }
        if let Some(e) = etag {
            out.push(u8::try_from(e.len()).unwrap_or(u8::MAX));
            out.extend_from_slice(e.as_bytes());
        }
        out
    }

    /// Reads an encoding back; never panics on malformed input.
    pub fn decode(buf: &[u8]) -> Result<Stored, DecodeError> {
        let mut r = Reader::new(buf);
        let flags = r.u8()?;
        if flags & !(ETAG | LAST_MODIFIED | CAPTURE) != 0 {
            return Err(DecodeError("unknown recrawl flags"));
        }
        let next_due_ms = (u64::from(u32_at(&mut r)?) + RECRAWL_EPOCH_S) * 1000;
        let interval_ds = u32_at(&mut r)?;
        let visits = u32_at(&mut r)?;
        let fetched_at_ms = ms48_at(&mut r)?;
        let last_modified_s = if flags & LAST_MODIFIED != 0 {
            Some(u64::from(u32_at(&mut r)?))
        } else {
            None
        };
        let capture = if flags & CAPTURE != 0 {
            let fetched_at_ms = ms48_at(&mut r)?;
            let mut key = [0u8; 8];
            key.copy_from_slice(r.bytes(8)?);
            Some(Capture {
                fetched_at_ms,
                digest: DigestKey(key),
            })
        } else {
            None
        };
        let etag = if flags & ETAG != 0 {
            let n = usize::from(r.u8()?);
            let text =
                std::str::from_utf8(r.bytes(n)?).map_err(|_| DecodeError("etag not UTF-8"))?;
            Some(text.to_owned())
        } else {
            None
        };
        if !r.is_empty() {
            return Err(DecodeError("trailing bytes after a recrawl entry"));
        }
        Ok(Stored {
            next_due_ms,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Stored {
        Stored {
            next_due_ms: 1_796_600_000_000,
            prior: Prior {
                visits: 7,
                fetched_at_ms: 1_796_515_200_123,
                interval_ds: 864_000,
                validators: Validators {
                    etag: Some("W/\"5f-abc\"".into()),
                    last_modified_s: Some(784_111_777),
                },
                capture: Some(Capture {
                    fetched_at_ms: 1_790_000_000_456,
                    digest: DigestKey::of("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
                }),
            },
        }
    }

    #[test]
    fn round_trips_within_forty_bytes_besides_the_etag() {
        let s = full();
        let bytes = s.encode();
        let etag = s.prior.validators.etag.as_ref().map_or(0, String::len);
        assert_eq!(bytes.len() - etag, STORED_FIXED_MAX);
        assert_eq!(Stored::decode(&bytes), Ok(s));

        // The least: no validators, no capture.
        let bare = Stored {
            next_due_ms: RECRAWL_EPOCH_S * 1000 + 5_000,
            prior: Prior {
                visits: 1,
                fetched_at_ms: RECRAWL_EPOCH_S * 1000,
                ..Prior::default()
            },
        };
        let bytes = bare.encode();
        assert_eq!(bytes.len(), 19);
        assert_eq!(Stored::decode(&bytes), Ok(bare));
    }

    #[test]
    fn due_times_round_up_to_seconds_and_old_times_clamp_to_the_epoch() {
        let mut s = full();
        s.next_due_ms = 1_796_600_000_001;
        let back = Stored::decode(&s.encode()).unwrap();
        assert_eq!(
            back.next_due_ms, 1_796_600_001_000,
            "never earlier than asked"
        );
        s.prior.fetched_at_ms = 5;
        let back = Stored::decode(&s.encode()).unwrap();
        assert_eq!(back.prior.fetched_at_ms, RECRAWL_EPOCH_S * 1000);
    }

    #[test]
    fn malformed_input_is_an_error() {
        let bytes = full().encode();
        for n in 0..bytes.len() {
            assert!(Stored::decode(&bytes[..n]).is_err(), "cut at {n}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Stored::decode(&extra).is_err());
        let mut flags = bytes;
        flags[0] |= 0x80;
        assert!(Stored::decode(&flags).is_err());
    }
}
