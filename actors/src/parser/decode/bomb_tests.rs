//! Decompression bombs in every supported coding, alone and stacked: each fails `TooLarge` at the limit instead of
//! inflating to its full size (every layer reads at most `limit + 1` bytes, so memory stays within a few limits).

use super::tests::{decode, gzip, raw_deflate, zlib, zstd};
use super::*;

const LIMIT: u64 = 1 << 20;
/// 64 MiB of zeros: 64 times the limit.
const BOMB: usize = 64 << 20;

/// `brotli.compress(b"\0" * (64 << 20), quality=11)` (Python's brotli, the reference encoder): 106 bytes.
const BR_BOMB_HEX: &str = "cbffff3ff82700e2b14020f7fe8fffff7ff04f00c4611180eefd1fffffffe09f0088c30200ddfb3ffeffffc13f0110870500baf77ffcffff837f02200e0b0074effff8ffff07ff04401c1600e8defff1ffff0ffe0980382c00d0bdffe3ffff1ffc1300715800a07bff37";

fn br_bomb() -> Vec<u8> {
    (0..BR_BOMB_HEX.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&BR_BOMB_HEX[i..i + 2], 16).unwrap())
        .collect()
}

fn too_large(enc: &str, body: Vec<u8>) {
    let size = body.len();
    match decode(Some(enc), body, LIMIT) {
        Err(DecodeError::TooLarge { limit }) => assert_eq!(limit, LIMIT, "{enc}"),
        other => panic!("{enc} bomb of {size} bytes: {:?}", other.map(|b| b.len())),
    }
}

#[test]
fn a_bomb_in_each_coding_stops_at_the_limit() {
    let zeros = vec![0u8; BOMB];
    let gz = gzip(&zeros);
    assert!(gz.len() < BOMB / 500, "gzip bomb is {} bytes", gz.len());
    too_large("gzip", gz);
    too_large("x-gzip", gzip(&zeros));
    too_large("deflate", zlib(&zeros));
    too_large("deflate", raw_deflate(&zeros));
    let z = zstd(&zeros);
    assert!(z.len() < BOMB / 500, "zstd bomb is {} bytes", z.len());
    too_large("zstd", z);
    let br = br_bomb();
    assert_eq!(br.len(), 106);
    too_large("br", br);
}

#[test]
fn stacked_bombs_stop_at_the_limit_in_whichever_layer_overflows() {
    let zeros = vec![0u8; BOMB];
    // gzip inside gzip: the inner stream is small, the innermost layer is the bomb.
    let inner = gzip(&zeros);
    too_large("gzip, gzip", gzip(&inner));
    // br inside gzip: the gzip layer unpacks 106 bytes, the br layer is the bomb.
    too_large("br, gzip", gzip(&br_bomb()));
    // zstd inside deflate inside gzip.
    too_large("zstd, deflate, gzip", gzip(&zlib(&zstd(&zeros))));
    // An outer layer that is itself over the limit stops there (a gzip of 2 MiB of noise-free text).
    too_large("identity, gzip", gzip(&vec![b'a'; 2 * LIMIT as usize]));
}

#[test]
fn a_body_just_under_the_limit_in_every_coding_decodes() {
    let body = vec![b'x'; LIMIT as usize];
    for (enc, data) in [
        ("gzip", gzip(&body)),
        ("deflate", zlib(&body)),
        ("zstd", zstd(&body)),
        ("gzip, gzip", gzip(&gzip(&body))),
    ] {
        let out = decode(Some(enc), data, LIMIT).unwrap_or_else(|e| panic!("{enc}: {e}"));
        assert_eq!(out.len() as u64, LIMIT, "{enc}");
    }
}
