//! Content decoding: whatever the body and `Content-Encoding`, the decoded output never exceeds the limit; and a
//! body compressed with one or two codings (gzip, possibly as several members, zlib or raw deflate, brotli, zstd)
//! decodes back to exactly the original when every layer fits the limit, and to `TooLarge` when one does not.
#![no_main]

use bytes::Bytes;
use crawl_actors::parser::decode::{DecodeError, decode_body};
use libfuzzer_sys::fuzz_target;
use std::io::Write;

const HEADERS: &[&str] = &[
    "gzip",
    "x-gzip",
    "deflate",
    "br",
    "zstd",
    "identity",
    "GZIP, br",
    "br, gzip",
    "zstd,deflate",
    "compress",
    "gzip, identity",
    "",
    " , ",
];

#[derive(Clone, Copy, Debug)]
enum Enc {
    Gzip,
    GzipMembers(usize),
    Zlib,
    RawDeflate,
    Brotli,
    Zstd,
    ZstdStored,
}

impl Enc {
    fn of(b: u8) -> Enc {
        match b % 7 {
            0 => Enc::Gzip,
            1 => Enc::GzipMembers(usize::from(b >> 3)),
            2 => Enc::Zlib,
            3 => Enc::RawDeflate,
            4 => Enc::Brotli,
            5 => Enc::Zstd,
            _ => Enc::ZstdStored,
        }
    }

    fn token(self) -> &'static str {
        match self {
            Enc::Gzip | Enc::GzipMembers(_) => "gzip",
            Enc::Zlib | Enc::RawDeflate => "deflate",
            Enc::Brotli => "br",
            Enc::Zstd | Enc::ZstdStored => "zstd",
        }
    }

    fn encode(self, x: &[u8]) -> Vec<u8> {
        use flate2::Compression;
        use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
        let gzip = |x: &[u8]| {
            let mut e = GzEncoder::new(Vec::new(), Compression::fast());
            e.write_all(x).expect("gzip");
            e.finish().expect("gzip")
        };
        match self {
            Enc::Gzip => gzip(x),
            Enc::GzipMembers(cut) => {
                let cut = cut.min(x.len());
                let mut out = gzip(&x[..cut]);
                out.extend_from_slice(&gzip(&x[cut..]));
                out
            }
            Enc::Zlib => {
                let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
                e.write_all(x).expect("zlib");
                e.finish().expect("zlib")
            }
            Enc::RawDeflate => {
                let mut e = DeflateEncoder::new(Vec::new(), Compression::best());
                e.write_all(x).expect("deflate");
                e.finish().expect("deflate")
            }
            Enc::Brotli => {
                let mut out = Vec::new();
                {
                    let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 18);
                    w.write_all(x).expect("brotli");
                }
                out
            }
            Enc::Zstd => {
                ruzstd::encoding::compress_to_vec(x, ruzstd::encoding::CompressionLevel::Fastest)
            }
            Enc::ZstdStored => ruzstd::encoding::compress_to_vec(
                x,
                ruzstd::encoding::CompressionLevel::Uncompressed,
            ),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, body) = data.split_at(4);
    let max = u64::from(u16::from_le_bytes([head[1], head[2]]));
    if head[0] & 1 == 0 {
        let header = HEADERS[usize::from(head[3]) % HEADERS.len()];
        if let Ok(out) = decode_body(Some(header), Bytes::copy_from_slice(body), max) {
            assert!(
                out.len() as u64 <= max,
                "{} bytes over the limit {max}",
                out.len()
            );
        }
        return;
    }
    // Round trip: one or two codings, applied first to last, listed in the header in that order.
    let mut codings = vec![Enc::of(head[3])];
    if head[0] & 2 == 2 {
        codings.push(Enc::of(head[0] >> 2));
    }
    let mut layers = vec![body.to_vec()];
    for enc in &codings {
        let next = enc.encode(layers.last().expect("a layer"));
        layers.push(next);
    }
    let header = codings
        .iter()
        .map(|e| e.token())
        .collect::<Vec<_>>()
        .join(", ");
    let encoded = Bytes::from(layers.pop().expect("the encoded body"));
    let fits = layers.iter().all(|l| l.len() as u64 <= max);
    match decode_body(Some(&header), encoded, max) {
        Ok(out) => {
            assert!(fits, "decoded although a layer exceeds {max}");
            assert_eq!(&out[..], body, "{codings:?} did not round-trip");
        }
        Err(DecodeError::TooLarge { limit }) => {
            assert_eq!(limit, max);
            assert!(
                !fits,
                "{codings:?}: TooLarge although every layer fits {max}"
            );
        }
        Err(e) => panic!("{codings:?} of {} bytes: {e}", body.len()),
    }
});
