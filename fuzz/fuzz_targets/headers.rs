//! Header values: `Retry-After` gives a delay within bounds (digits give exactly that many seconds, saturating; an
//! HTTP-date gives at most the time left until year 10000 and nothing negative; anything else gives nothing), the
//! robots product token is a prefix of the User-Agent made of `[A-Za-z_-]`, and a proxy hop parsed from a URL never
//! prints its password.
#![no_main]

use crawl_actors::proxy::socks::parse_hop;
use crawl_core::retry_after::parse_retry_after;
use crawl_core::robots::product_token;
use libfuzzer_sys::fuzz_target;
use std::time::{Duration, SystemTime};

/// 10000-01-01T00:00:00Z: no HTTP-date reaches it.
const YEAR_10000: u64 = 253_402_300_800;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (now, value) = data.split_at(4);
    let now_secs = u64::from(u32::from_le_bytes([now[0], now[1], now[2], now[3]]));
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(now_secs);
    let value = String::from_utf8_lossy(value);

    let trimmed = value.trim();
    match parse_retry_after(&value, now) {
        Some(d) if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) => {
            assert_eq!(
                d.as_secs(),
                trimmed.parse::<u64>().unwrap_or(u64::MAX),
                "{value:?}"
            );
            assert_eq!(d.subsec_nanos(), 0);
        }
        Some(d) => {
            assert!(d.as_secs() <= YEAR_10000 - now_secs, "{value:?} gave {d:?}");
            assert_eq!(d.subsec_nanos(), 0, "{value:?} gave {d:?}");
        }
        None => assert!(
            trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()),
            "{value:?} gave nothing"
        ),
    }

    let token = product_token(&value);
    assert!(
        value.trim_start().starts_with(token),
        "{token:?} of {value:?}"
    );
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_'),
        "{token:?}"
    );

    let url = format!("socks5://user:{}@{value}", "Pw%21sEcReT");
    if let Ok(hop) = parse_hop(&url) {
        for shown in [hop.to_string(), format!("{hop:?}")] {
            assert!(
                !shown.contains("Pw!sEcReT") && !shown.contains("Pw%21sEcReT"),
                "{shown}"
            );
        }
    }
});
