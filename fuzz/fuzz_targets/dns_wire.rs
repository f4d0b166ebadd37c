//! DNS messages: parsing arbitrary bytes never panics and what it returns is consistent (no duplicate addresses,
//! only addresses of the question's type, a normalised question name); a query built for a name, its QR bit set, parses back with the same id and
//! question.
#![no_main]

use crawl_actors::resolver::wire::{QType, build_query, normalize_name, parse_response};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

const NAME_BYTES: &[u8] = b"abcxyz019-._.";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let Ok(resp) = parse_response(rest) else {
            return;
        };
        let mut seen = HashSet::new();
        for ip in &resp.ips {
            assert!(seen.insert(*ip), "duplicate address {ip}");
        }
        if let Some((name, qtype)) = &resp.question {
            assert_eq!(name, &normalize_name(name), "question name not normalised");
            for ip in &resp.ips {
                assert_eq!(ip.is_ipv4(), *qtype == QType::A, "{ip} for {qtype:?}");
            }
        }
        return;
    }
    // A name from a small alphabet, so that most are valid.
    let name: String = rest
        .iter()
        .skip(2)
        .map(|&b| char::from(NAME_BYTES[usize::from(b) % NAME_BYTES.len()]))
        .collect();
    let id = u16::from_be_bytes([
        rest.first().copied().unwrap_or(0),
        rest.get(1).copied().unwrap_or(0),
    ]);
    let qtype = if mode & 2 == 0 { QType::A } else { QType::Aaaa };
    let Ok(mut query) = build_query(id, &name, qtype) else {
        return;
    };
    query[2] |= 0x80;
    let resp =
        parse_response(&query).unwrap_or_else(|e| panic!("query for {name:?} does not parse: {e}"));
    assert_eq!(resp.id, id);
    assert_eq!(
        resp.question,
        Some((normalize_name(&name), qtype)),
        "question of {name:?}"
    );
    assert!(resp.ips.is_empty() && !resp.truncated && resp.rcode == 0);
});
