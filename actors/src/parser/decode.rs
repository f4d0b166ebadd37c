//! Content-Encoding decoding of fetched bodies with a hard cap on decoded size.
//!
//! The fetcher stores bodies exactly as received; this module undoes `Content-Encoding`
//! (gzip / x-gzip, deflate, br, zstd, identity, and stacks such as `gzip, br`, decoded in reverse
//! order) before parsing. Every decoder is read through `take(max + 1)`, so a decompression bomb
//! stops after `max_decoded + 1` bytes of output and is reported as [`DecodeError::TooLarge`]
//! instead of exhausting memory.

use std::io::Read;

use bytes::Bytes;
// The bufread decoders read the body slice in place (the read ones copy it through a BufReader first).
use flate2::bufread::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use ruzstd::decoding::StreamingDecoder;
use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The decoded output would be larger than the allowed maximum.
    #[error("decoded body exceeds {limit} bytes")]
    TooLarge { limit: u64 },
    /// The compressed data is malformed or truncated.
    #[error("corrupt {encoding} body: {detail}")]
    Corrupt { encoding: String, detail: String },
    /// A content-coding this crawler does not implement (e.g. `compress`).
    #[error("unsupported content-encoding {0}")]
    Unsupported(String),
}

/// The codings we can undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Identity,
    Gzip,
    Deflate,
    Brotli,
    Zstd,
}

impl Coding {
    fn parse(token: &str) -> Option<Coding> {
        match token.to_ascii_lowercase().as_str() {
            "identity" => Some(Coding::Identity),
            "gzip" | "x-gzip" => Some(Coding::Gzip),
            "deflate" => Some(Coding::Deflate),
            "br" => Some(Coding::Brotli),
            "zstd" => Some(Coding::Zstd),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }
}

/// Smallest zstd window accepted regardless of `max_decoded` (RFC 9659 requires 8 MiB).
const ZSTD_MIN_WINDOW: u64 = 8 * 1024 * 1024;
/// Largest zstd window accepted (ruzstd's default limit).
const ZSTD_MAX_WINDOW: u64 = ruzstd::decoding::DEFAULT_MAX_WINDOW_SIZE;
/// Internal buffer size for the brotli reader.
const BROTLI_BUFFER: usize = 8 * 1024;

/// Decodes `raw` according to the `Content-Encoding` header value.
///
/// `None`, an empty header and `identity` return `raw` itself (no copy). Codings are
/// case-insensitive, separated by commas, and undone from last to first. The decoded result is
/// never longer than `max_decoded` bytes; longer output gives [`DecodeError::TooLarge`].
/// An empty body is accepted for every coding (servers send those for HEAD-like responses).
pub fn decode_body(
    content_encoding: Option<&str>,
    raw: Bytes,
    max_decoded: u64,
) -> Result<Bytes, DecodeError> {
    let mut codings = Vec::new();
    for token in content_encoding.unwrap_or("").split(',') {
        let token = token.trim();
        if token.is_empty() {
            continue;
        }
        match Coding::parse(token) {
            Some(Coding::Identity) => {}
            Some(coding) => codings.push(coding),
            None => return Err(DecodeError::Unsupported(token.to_ascii_lowercase())),
        }
    }

    let mut current = raw;
    for coding in codings.into_iter().rev() {
        if current.is_empty() {
            break;
        }
        current = Bytes::from(decode_layer(coding, &current, max_decoded)?);
    }
    if current.len() as u64 > max_decoded {
        return Err(DecodeError::TooLarge { limit: max_decoded });
    }
    Ok(current)
}

fn decode_layer(coding: Coding, data: &[u8], max: u64) -> Result<Vec<u8>, DecodeError> {
    match coding {
        Coding::Identity => Ok(data.to_vec()),
        Coding::Gzip => {
            read_limited_sized(MultiGzDecoder::new(data), max, coding, gzip_size_hint(data))
        }
        Coding::Deflate => decode_deflate(data, max),
        Coding::Brotli => read_limited(
            brotli_decompressor::Decompressor::new(data, BROTLI_BUFFER),
            max,
            coding,
        ),
        Coding::Zstd => decode_zstd(data, max),
    }
}

fn corrupt(coding: Coding, detail: impl std::fmt::Display) -> DecodeError {
    DecodeError::Corrupt {
        encoding: coding.name().to_string(),
        detail: detail.to_string(),
    }
}

/// Reads at most `max + 1` bytes from `reader`; more than `max` is `TooLarge`.
fn read_limited(reader: impl Read, max: u64, coding: Coding) -> Result<Vec<u8>, DecodeError> {
    read_limited_sized(reader, max, coding, 0)
}

/// [`read_limited`] into a buffer reserved for `hint` bytes (capped by `max + 1`), so that a body whose size is known
/// is decoded without the buffer growing in steps.
fn read_limited_sized(
    reader: impl Read,
    max: u64,
    coding: Coding,
    hint: u64,
) -> Result<Vec<u8>, DecodeError> {
    let cap = hint.min(max.saturating_add(1)).min(MAX_HINT);
    let mut out = Vec::with_capacity(usize::try_from(cap).unwrap_or(0));
    read_limited_into(reader, max, coding, &mut out)?;
    Ok(out)
}

/// Largest buffer reserved up front from a size the body declares (a lie costs at most this much).
const MAX_HINT: u64 = 16 * 1024 * 1024;

/// The decoded size a single-member gzip body declares in its trailer (ISIZE, modulo 2^32); 0 when it has none.
/// Only a hint: a wrong or multi-member value makes the buffer grow as it would without one.
fn gzip_size_hint(data: &[u8]) -> u64 {
    match data.len().checked_sub(4).and_then(|at| data.get(at..)) {
        Some(&[a, b, c, d]) if data.len() >= 18 => u64::from(u32::from_le_bytes([a, b, c, d])) + 1,
        _ => 0,
    }
}

/// Appends the output of `reader` to `out`, keeping `out` within `max` bytes.
fn read_limited_into(
    reader: impl Read,
    max: u64,
    coding: Coding,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let budget = max.saturating_sub(out.len() as u64).saturating_add(1);
    reader
        .take(budget)
        .read_to_end(out)
        .map_err(|e| corrupt(coding, e))?;
    if out.len() as u64 > max {
        return Err(DecodeError::TooLarge { limit: max });
    }
    Ok(())
}

/// True when the first two bytes form a valid zlib header (CM=8, FCHECK ok).
fn looks_like_zlib(data: &[u8]) -> bool {
    match data {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

/// `deflate` is meant to be zlib-wrapped, but many servers send raw deflate: try both.
fn decode_deflate(data: &[u8], max: u64) -> Result<Vec<u8>, DecodeError> {
    if looks_like_zlib(data) {
        match read_limited(ZlibDecoder::new(data), max, Coding::Deflate) {
            Err(DecodeError::Corrupt { .. }) => {}
            other => return other,
        }
    }
    read_limited(DeflateDecoder::new(data), max, Coding::Deflate)
}

/// Decodes every zstd frame in `data`, skipping skippable frames and verifying checksums.
fn decode_zstd(data: &[u8], max: u64) -> Result<Vec<u8>, DecodeError> {
    let window = max.clamp(ZSTD_MIN_WINDOW, ZSTD_MAX_WINDOW);
    let mut src: &[u8] = data;
    let mut out = Vec::new();
    while !src.is_empty() {
        let decoder = match StreamingDecoder::new_with_max_window_size(&mut src, window) {
            Ok(decoder) => decoder,
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                // The magic number and length field were consumed; skip the payload.
                let length = usize::try_from(length).unwrap_or(usize::MAX);
                let Some(rest) = src.get(length..) else {
                    return Err(corrupt(Coding::Zstd, "truncated skippable frame"));
                };
                src = rest;
                continue;
            }
            Err(e) => return Err(corrupt(Coding::Zstd, e)),
        };
        let budget = max.saturating_sub(out.len() as u64).saturating_add(1);
        let mut limited = decoder.take(budget);
        limited
            .read_to_end(&mut out)
            .map_err(|e| corrupt(Coding::Zstd, e))?;
        if out.len() as u64 > max {
            return Err(DecodeError::TooLarge { limit: max });
        }
        let decoder = limited.into_inner();
        if !decoder.decoder.is_finished() {
            return Err(corrupt(Coding::Zstd, "truncated frame"));
        }
        if let (Some(expected), Some(actual)) = (
            decoder.decoder.get_checksum_from_data(),
            decoder.decoder.get_calculated_checksum(),
        ) && expected != actual
        {
            return Err(corrupt(Coding::Zstd, "checksum mismatch"));
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use std::io::Write;

    const TEXT: &[u8] = b"<html><body>hello, decoded world! hello, decoded world!</body></html>";

    pub(super) fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    pub(super) fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    pub(super) fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    pub(super) fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    pub(super) fn decode(enc: Option<&str>, data: Vec<u8>, max: u64) -> Result<Bytes, DecodeError> {
        decode_body(enc, Bytes::from(data), max)
    }

    /// `brotli -c` of "hello brotli world, hello brotli world, hello brotli world!\n".
    const BR_SAMPLE: &[u8] = &[
        0xa1, 0xd8, 0x01, 0xc0, 0xef, 0x4c, 0xb0, 0x71, 0x42, 0xbd, 0xbb, 0xe1, 0x25, 0x9a, 0x98,
        0x42, 0x82, 0xb0, 0xd1, 0x55, 0x99, 0x5c, 0x87, 0xa4, 0xb1, 0xbd, 0x49, 0x49, 0x9a, 0x19,
        0xa8, 0x46, 0x78, 0x69, 0xa9, 0xfd, 0xb3, 0x1d, 0x3a, 0x08,
    ];
    const BR_TEXT: &[u8] = b"hello brotli world, hello brotli world, hello brotli world!\n";

    /// `head -c 2000000 /dev/zero | brotli -c`.
    const BR_ZEROS_2MB: &[u8] = &[
        0x9f, 0x7f, 0x84, 0x1e, 0xf8, 0x27, 0x00, 0xe2, 0xb1, 0x40, 0x20, 0x87, 0xcf, 0x03,
    ];

    /// `printf 'hello gzip then brotli\n' | gzip -n -c | brotli -c` (Content-Encoding: gzip, br).
    const GZIP_THEN_BR: &[u8] = &[
        0x0f, 0x15, 0x80, 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48,
        0xcd, 0xc9, 0xc9, 0x57, 0x48, 0xaf, 0xca, 0x2c, 0x50, 0x28, 0xc9, 0x48, 0xcd, 0x53, 0x48,
        0x2a, 0xca, 0x2f, 0xc9, 0xc9, 0xe4, 0x02, 0x00, 0xd5, 0xb7, 0x4d, 0x93, 0x17, 0x00, 0x00,
        0x00, 0x03,
    ];

    /// Two frames from the zstd CLI (`zstd -c a; zstd -c b`), each with a content checksum.
    const ZSTD_TWO_FRAMES: &[u8] = &[
        0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x36, 0xd5, 0x00, 0x00, 0xa0, 0x68, 0x65, 0x6c, 0x6c, 0x6f,
        0x20, 0x7a, 0x73, 0x74, 0x64, 0x20, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x2c, 0x20, 0x21, 0x0a,
        0x01, 0x00, 0xca, 0x99, 0x61, 0xfb, 0x9c, 0xdf, 0x05, 0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x3c,
        0xe5, 0x00, 0x00, 0xb0, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x62, 0x72, 0x6f, 0x74, 0x6c,
        0x69, 0x20, 0x77, 0x6f, 0x72, 0x6c, 0x64, 0x2c, 0x20, 0x21, 0x0a, 0x01, 0x00, 0xde, 0x33,
        0x99, 0x58, 0xd2, 0x10, 0x40,
    ];
    const ZSTD_TWO_FRAMES_TEXT: &[u8] = b"hello zstd world, hello zstd world, hello zstd world!\n\
        hello brotli world, hello brotli world, hello brotli world!\n";

    #[test]
    fn identity_returns_input_without_copy() {
        let raw = Bytes::from_static(TEXT);
        for enc in [
            None,
            Some(""),
            Some("identity"),
            Some("IDENTITY"),
            Some(" identity , "),
        ] {
            let out = decode_body(enc, raw.clone(), 1024).unwrap();
            assert_eq!(out, TEXT);
            assert_eq!(out.as_ptr(), raw.as_ptr(), "{enc:?} copied the body");
        }
    }

    #[test]
    fn identity_over_limit_is_too_large() {
        let err = decode(None, TEXT.to_vec(), 10).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { limit: 10 }));
    }

    #[test]
    fn gzip_and_x_gzip() {
        for enc in ["gzip", "x-gzip", "GZIP", " Gzip "] {
            assert_eq!(decode(Some(enc), gzip(TEXT), 1024).unwrap(), TEXT, "{enc}");
        }
    }

    #[test]
    fn gzip_multi_member() {
        let mut data = gzip(b"first ");
        data.extend(gzip(b"second"));
        assert_eq!(
            decode(Some("gzip"), data, 1024).unwrap(),
            &b"first second"[..]
        );
    }

    #[test]
    fn deflate_zlib_wrapped_and_raw() {
        assert_eq!(decode(Some("deflate"), zlib(TEXT), 1024).unwrap(), TEXT);
        assert_eq!(
            decode(Some("Deflate"), raw_deflate(TEXT), 1024).unwrap(),
            TEXT
        );
    }

    #[test]
    fn brotli() {
        assert_eq!(
            decode(Some("br"), BR_SAMPLE.to_vec(), 1024).unwrap(),
            BR_TEXT
        );
        assert_eq!(
            decode(Some("BR"), BR_SAMPLE.to_vec(), 1024).unwrap(),
            BR_TEXT
        );
    }

    #[test]
    fn brotli_bomb_is_too_large() {
        let err = decode(Some("br"), BR_ZEROS_2MB.to_vec(), 1_000_000).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { limit: 1_000_000 }));
        let ok = decode(Some("br"), BR_ZEROS_2MB.to_vec(), 2_000_000).unwrap();
        assert_eq!(ok.len(), 2_000_000);
        assert!(ok.iter().all(|b| *b == 0));
    }

    #[test]
    fn zstd_from_ruzstd_encoder() {
        assert_eq!(decode(Some("zstd"), zstd(TEXT), 1024).unwrap(), TEXT);
    }

    #[test]
    fn zstd_cli_frames_with_checksums() {
        let out = decode(Some("zstd"), ZSTD_TWO_FRAMES.to_vec(), 1024).unwrap();
        assert_eq!(out, ZSTD_TWO_FRAMES_TEXT);
    }

    #[test]
    fn zstd_skippable_frame_is_skipped() {
        let mut data = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9];
        data.extend(zstd(TEXT));
        assert_eq!(decode(Some("zstd"), data, 1024).unwrap(), TEXT);
    }

    #[test]
    fn zstd_bad_checksum_is_corrupt() {
        let mut data = ZSTD_TWO_FRAMES[..39].to_vec();
        let last = data.len() - 1;
        data[last] ^= 0xff;
        let err = decode(Some("zstd"), data, 1024).unwrap_err();
        assert!(
            matches!(err, DecodeError::Corrupt { ref encoding, ref detail }
                if encoding == "zstd" && detail.contains("checksum")),
            "{err:?}"
        );
    }

    #[test]
    fn zstd_bomb_is_too_large() {
        let data = zstd(&vec![0u8; 2_000_000]);
        assert!(data.len() < 100_000);
        let err = decode(Some("zstd"), data, 1_000_000).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { limit: 1_000_000 }));
    }

    #[test]
    fn stacked_gzip_then_br() {
        let out = decode(Some("gzip, br"), GZIP_THEN_BR.to_vec(), 1024).unwrap();
        assert_eq!(out, &b"hello gzip then brotli\n"[..]);
    }

    #[test]
    fn stacked_encodings_decode_in_reverse_order() {
        // deflate applied first, then gzip, then zstd
        let data = zstd(&gzip(&zlib(TEXT)));
        let out = decode(Some("deflate, gzip,zstd"), data, 1024).unwrap();
        assert_eq!(out, TEXT);
        // the wrong order fails
        let data = gzip(&zlib(TEXT));
        assert!(decode(Some("gzip, deflate"), data, 1024).is_err());
    }

    #[test]
    fn gzip_bomb_stops_at_limit() {
        let chunk = vec![0u8; 1 << 20];
        // Level 9: zlib-rs's fastest level compresses runs of zeros only about 200:1.
        let mut e = GzEncoder::new(Vec::new(), Compression::best());
        for _ in 0..100 {
            e.write_all(&chunk).unwrap();
        }
        let bomb = e.finish().unwrap();
        assert!(bomb.len() < 1_000_000, "bomb is {} bytes", bomb.len());
        let err = decode(Some("gzip"), bomb, 1 << 20).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { limit } if limit == 1 << 20));
    }

    #[test]
    fn exact_limit_is_accepted() {
        let out = decode(Some("gzip"), gzip(TEXT), TEXT.len() as u64).unwrap();
        assert_eq!(out, TEXT);
        let err = decode(Some("gzip"), gzip(TEXT), TEXT.len() as u64 - 1).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { .. }));
    }

    #[test]
    fn corrupt_bodies() {
        let junk = b"this is definitely not compressed data at all".to_vec();
        for (enc, name) in [
            ("gzip", "gzip"),
            ("br", "br"),
            ("zstd", "zstd"),
            ("deflate", "deflate"),
        ] {
            let err = decode(Some(enc), junk.clone(), 1024).unwrap_err();
            assert!(
                matches!(err, DecodeError::Corrupt { ref encoding, .. } if encoding == name),
                "{enc}: {err:?}"
            );
        }
    }

    #[test]
    fn truncated_bodies_are_corrupt() {
        let g = gzip(TEXT);
        let err = decode(Some("gzip"), g[..g.len() / 2].to_vec(), 1024).unwrap_err();
        assert!(matches!(err, DecodeError::Corrupt { .. }), "gzip: {err:?}");
        let z = zstd(TEXT);
        let err = decode(Some("zstd"), z[..z.len() - 3].to_vec(), 1024).unwrap_err();
        assert!(matches!(err, DecodeError::Corrupt { .. }), "zstd: {err:?}");
        let err = decode(Some("br"), BR_SAMPLE[..20].to_vec(), 1024).unwrap_err();
        assert!(matches!(err, DecodeError::Corrupt { .. }), "br: {err:?}");
    }

    #[test]
    fn unsupported_encoding() {
        let err = decode(Some("compress"), TEXT.to_vec(), 1024).unwrap_err();
        assert!(matches!(err, DecodeError::Unsupported(ref e) if e == "compress"));
        let err = decode(Some("gzip, SDCH"), gzip(TEXT), 1024).unwrap_err();
        assert!(matches!(err, DecodeError::Unsupported(ref e) if e == "sdch"));
        assert_eq!(err.to_string(), "unsupported content-encoding sdch");
    }

    #[test]
    fn empty_body_with_encoding_is_empty() {
        for enc in ["gzip", "br", "zstd", "deflate", "gzip, br"] {
            assert!(
                decode(Some(enc), Vec::new(), 1024).unwrap().is_empty(),
                "{enc}"
            );
        }
    }
}

#[cfg(test)]
mod bomb_tests;
