//! A host's robots.txt rules as the store keeps them beside its shard.

use crawl_core::frontier::SharedRobots;

/// A stored robots.txt entry: `expires_ms host\n` then the rules' snapshot.
pub(super) fn parse_robots(authority: String, value: &[u8]) -> Option<SharedRobots> {
    let nl = value.iter().position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&value[..nl]).ok()?;
    let (expires, host) = head.split_once(' ')?;
    Some(SharedRobots {
        host: host.to_owned(),
        authority,
        expires_ms: expires.parse().ok()?,
        snapshot: value[nl + 1..].to_vec(),
    })
}

/// How a robots.txt entry is stored (read back by [`parse_robots`]).
pub(super) fn robots_value(r: &SharedRobots) -> Vec<u8> {
    let mut value = format!("{} {}\n", r.expires_ms, r.host).into_bytes();
    value.extend_from_slice(&r.snapshot);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_entries_read_back_as_written() {
        let r = SharedRobots {
            host: "h.example".into(),
            authority: "h.example:443".into(),
            expires_ms: 1_700_000_000_000,
            snapshot: b"rules\nwith lines".to_vec(),
        };
        let back = parse_robots(r.authority.clone(), &robots_value(&r)).unwrap();
        assert_eq!(
            (back.host, back.authority, back.expires_ms, back.snapshot),
            (r.host, r.authority, r.expires_ms, r.snapshot)
        );
        assert!(parse_robots("a".into(), b"no newline").is_none());
        assert!(parse_robots("a".into(), b"soon h\n").is_none());
    }
}
