//! A set of IPv4/IPv6 addresses and CIDR blocks (the resolver's `bogus_ips`), answering
//! "is this address inside any entry?" by binary search over sorted, merged ranges.
//!
//! Entries are written `192.0.2.1`, `198.51.100.0/24`, `2001:db8::/32`; host bits below the
//! prefix are ignored. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is treated as the IPv4 address, both
//! as an entry and as a looked-up address, so `::ffff:192.0.2.1` matches `192.0.2.0/24`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// Why an entry or a file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum IpSetError {
    /// One entry is not an address or CIDR.
    #[error("invalid address `{entry}`: {reason}")]
    Invalid { entry: String, reason: &'static str },
    /// A line of a file is not an address or CIDR.
    #[error("{path}:{line}: invalid address `{entry}`: {reason}")]
    Line {
        path: String,
        /// 1-based line number.
        line: usize,
        entry: String,
        reason: &'static str,
    },
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One entry: an address and a prefix length (32 or 128 for a single address).
///
/// Always normalised: host bits are zero, and IPv4-mapped IPv6 blocks of prefix >= 96 are
/// stored as IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// A normalised block; `None` when `prefix` is longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        match addr {
            IpAddr::V4(v4) => {
                if prefix > 32 {
                    return None;
                }
                let bits = u32::from(v4) & mask_v4(prefix);
                Some(Cidr {
                    addr: IpAddr::V4(Ipv4Addr::from(bits)),
                    prefix,
                })
            }
            IpAddr::V6(v6) => {
                if prefix > 128 {
                    return None;
                }
                if let Some(v4) = v6.to_ipv4_mapped()
                    && prefix >= 96
                {
                    return Cidr::new(IpAddr::V4(v4), prefix - 96);
                }
                let bits = u128::from(v6) & mask_v6(prefix);
                Some(Cidr {
                    addr: IpAddr::V6(Ipv6Addr::from(bits)),
                    prefix,
                })
            }
        }
    }

    /// The network address (host bits zero).
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// True when `ip` lies inside this block (IPv4-mapped IPv6 is compared as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                u32::from(a) & mask_v4(self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                u128::from(a) & mask_v6(self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn mask_v4(prefix: u8) -> u32 {
    match prefix {
        0 => 0,
        p => u32::MAX << (32 - u32::from(p.min(32))),
    }
}

fn mask_v6(prefix: u8) -> u128 {
    match prefix {
        0 => 0,
        p => u128::MAX << (128 - u32::from(p.min(128))),
    }
}

/// IPv4-mapped IPv6 becomes IPv4; everything else is unchanged.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A set of addresses and CIDR blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpSet {
    /// Distinct entries, sorted.
    cidrs: Vec<Cidr>,
    /// Disjoint, sorted, merged inclusive ranges.
    v4: Vec<(u32, u32)>,
    v6: Vec<(u128, u128)>,
}

impl IpSet {
    /// An empty set.
    pub fn new() -> IpSet {
        IpSet::default()
    }

    /// Parses one entry: an address or `address/prefix`, surrounding whitespace ignored.
    pub fn parse_entry(s: &str) -> Result<Cidr, IpSetError> {
        let entry = s.trim();
        let invalid = |reason| IpSetError::Invalid {
            entry: entry.to_owned(),
            reason,
        };
        if entry.is_empty() {
            return Err(invalid("empty entry"));
        }
        let (addr_text, prefix_text) = match entry.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (entry, None),
        };
        let addr: IpAddr = addr_text
            .parse()
            .map_err(|_| invalid("not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix_text {
            None => max,
            Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u8>().map_err(|_| invalid("bad prefix length"))?
            }
            Some(_) => return Err(invalid("bad prefix length")),
        };
        Cidr::new(addr, prefix).ok_or_else(|| {
            invalid(if max == 32 {
                "prefix length above 32"
            } else {
                "prefix length above 128"
            })
        })
    }

    /// Builds a set from entries, stopping at the first bad one.
    pub fn from_entries<I, S>(entries: I) -> Result<IpSet, IpSetError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut cidrs = Vec::new();
        for entry in entries {
            cidrs.push(Self::parse_entry(entry.as_ref())?);
        }
        Ok(Self::from_cidrs(cidrs))
    }

    /// Builds a set from parsed entries.
    pub fn from_cidrs(cidrs: impl IntoIterator<Item = Cidr>) -> IpSet {
        let mut set = IpSet {
            cidrs: cidrs.into_iter().collect(),
            ..IpSet::default()
        };
        set.rebuild();
        set
    }

    /// Reads a file with one entry per line; `#` starts a comment (whole line or trailing) and
    /// blank lines are skipped. The first bad line is reported with its 1-based number.
    pub fn load_file(path: &Path) -> Result<IpSet, IpSetError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| IpSetError::Io {
            path: shown.clone(),
            source,
        })?;
        let mut cidrs = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            match Self::parse_entry(line) {
                Ok(c) => cidrs.push(c),
                Err(IpSetError::Invalid { entry, reason }) => {
                    return Err(IpSetError::Line {
                        path: shown,
                        line: i + 1,
                        entry,
                        reason,
                    });
                }
                Err(other) => return Err(other),
            }
        }
        Ok(Self::from_cidrs(cidrs))
    }

    /// Adds one entry.
    pub fn insert(&mut self, cidr: Cidr) {
        self.cidrs.push(cidr);
        self.rebuild();
    }

    /// Adds every entry of `other`.
    pub fn extend_from(&mut self, other: &IpSet) {
        self.cidrs.extend_from_slice(&other.cidrs);
        self.rebuild();
    }

    /// True when `ip` is inside any entry.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match canonical(ip) {
            IpAddr::V4(v4) => in_ranges(&self.v4, u32::from(v4)),
            IpAddr::V6(v6) => in_ranges(&self.v6, u128::from(v6)),
        }
    }

    /// Number of distinct entries.
    pub fn len(&self) -> usize {
        self.cidrs.len()
    }

    /// True when the set has no entries.
    pub fn is_empty(&self) -> bool {
        self.cidrs.is_empty()
    }

    /// The distinct entries, sorted.
    pub fn entries(&self) -> &[Cidr] {
        &self.cidrs
    }

    fn rebuild(&mut self) {
        self.cidrs.sort_unstable();
        self.cidrs.dedup();
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        for c in &self.cidrs {
            match c.addr {
                IpAddr::V4(a) => {
                    let lo = u32::from(a);
                    v4.push((lo, lo | !mask_v4(c.prefix)));
                }
                IpAddr::V6(a) => {
                    let lo = u128::from(a);
                    v6.push((lo, lo | !mask_v6(c.prefix)));
                }
            }
        }
        self.v4 = merge(v4);
        self.v6 = merge(v6);
    }
}

/// Sorts inclusive ranges and merges overlapping or adjacent ones.
fn merge<T: Ord + Copy + Bump>(mut ranges: Vec<(T, T)>) -> Vec<(T, T)> {
    ranges.sort_unstable();
    let mut out: Vec<(T, T)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        if let Some(last) = out.last_mut()
            && last.1.next().is_none_or(|n| lo <= n)
        {
            last.1 = last.1.max(hi);
            continue;
        }
        out.push((lo, hi));
    }
    out
}

/// `x + 1` without overflow, for merging adjacent ranges.
trait Bump: Sized {
    fn next(self) -> Option<Self>;
}

impl Bump for u32 {
    fn next(self) -> Option<u32> {
        self.checked_add(1)
    }
}

impl Bump for u128 {
    fn next(self) -> Option<u128> {
        self.checked_add(1)
    }
}

fn in_ranges<T: Ord + Copy>(ranges: &[(T, T)], x: T) -> bool {
    // The last range starting at or below x is the only candidate.
    let idx = ranges.partition_point(|(lo, _)| *lo <= x);
    idx.checked_sub(1)
        .and_then(|i| ranges.get(i))
        .is_some_and(|(_, hi)| x <= *hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip literal")
    }

    fn set(entries: &[&str]) -> IpSet {
        IpSet::from_entries(entries).expect("valid entries")
    }

    #[test]
    fn parses_addresses_and_blocks() {
        let c = IpSet::parse_entry(" 192.0.2.77/24 ").expect("cidr");
        assert_eq!((c.addr(), c.prefix()), (ip("192.0.2.0"), 24));
        assert_eq!(c.to_string(), "192.0.2.0/24");
        let c = IpSet::parse_entry("2001:db8::1").expect("single v6");
        assert_eq!((c.addr(), c.prefix()), (ip("2001:db8::1"), 128));
        let c = IpSet::parse_entry("::ffff:10.1.2.3/120").expect("mapped");
        assert_eq!((c.addr(), c.prefix()), (ip("10.1.2.0"), 24));
        let c = IpSet::parse_entry("0.0.0.0/0").expect("everything");
        assert!(c.contains(ip("203.0.113.9")) && !c.contains(ip("::1")));
    }

    #[test]
    fn rejects_bad_entries_with_reasons() {
        for (bad, reason) in [
            ("", "empty entry"),
            ("1.2.3", "not an IP address"),
            ("example.com", "not an IP address"),
            ("10.0.0.0/33", "prefix length above 32"),
            ("::/129", "prefix length above 128"),
            ("10.0.0.0/", "bad prefix length"),
            ("10.0.0.0/-1", "bad prefix length"),
            ("10.0.0.0/8/8", "bad prefix length"),
            ("10.0.0.0/0008", "bad prefix length"),
            ("10.0.0.0/999", "bad prefix length"),
        ] {
            match IpSet::parse_entry(bad) {
                Err(IpSetError::Invalid { reason: r, .. }) => assert_eq!(r, reason, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let err = IpSet::from_entries(["192.0.2.1", "nope"]).expect_err("bad");
        assert_eq!(err.to_string(), "invalid address `nope`: not an IP address");
    }

    #[test]
    fn contains_single_addresses_and_blocks() {
        let s = set(&[
            "192.0.2.1",
            "198.51.100.0/24",
            "2001:db8::/32",
            "10.0.0.0/8",
        ]);
        assert_eq!(s.len(), 4);
        assert!(s.contains(ip("192.0.2.1")));
        assert!(!s.contains(ip("192.0.2.2")));
        assert!(s.contains(ip("198.51.100.0")) && s.contains(ip("198.51.100.255")));
        assert!(!s.contains(ip("198.51.101.0")) && !s.contains(ip("198.51.99.255")));
        assert!(s.contains(ip("10.255.255.255")) && !s.contains(ip("11.0.0.0")));
        assert!(s.contains(ip("2001:db8:ffff::1")));
        assert!(!s.contains(ip("2001:db9::1")));
        // Families never mix, except through IPv4-mapped IPv6.
        assert!(!s.contains(ip("::c000:201")));
        assert!(s.contains(ip("::ffff:192.0.2.1")));
        assert!(s.contains(ip("::ffff:10.9.8.7")));
        assert!(!IpSet::new().contains(ip("192.0.2.1")));
        assert!(IpSet::new().is_empty());
    }

    #[test]
    fn mapped_entries_match_plain_ipv4() {
        let s = set(&["::ffff:203.0.113.5"]);
        assert!(s.contains(ip("203.0.113.5")));
        assert!(s.contains(ip("::ffff:203.0.113.5")));
        assert!(!s.contains(ip("203.0.113.6")));
        assert_eq!(s.entries()[0].addr(), ip("203.0.113.5"));
    }

    #[test]
    fn overlapping_adjacent_and_duplicate_entries() {
        let s = set(&[
            "10.0.0.0/25",
            "10.0.0.128/25",
            "10.0.0.5",
            "10.0.0.0/25",
            "10.0.2.0/24",
            "255.255.255.255",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::/1",
        ]);
        assert_eq!(s.len(), 7, "the duplicate counts once");
        assert!(s.contains(ip("10.0.0.200")) && s.contains(ip("10.0.0.5")));
        assert!(!s.contains(ip("10.0.1.0")));
        assert!(s.contains(ip("10.0.2.9")));
        assert!(s.contains(ip("255.255.255.255")));
        assert!(s.contains(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
        assert!(s.contains(ip("7fff::1")) && !s.contains(ip("8000::1")));
    }

    #[test]
    fn thousands_of_entries() {
        let entries: Vec<String> = (0..5_000u32)
            .map(|i| format!("{}.{}.{}.1", 1 + i / 65_536, (i / 256) % 256, i % 256))
            .collect();
        let s = IpSet::from_entries(&entries).expect("valid");
        assert_eq!(s.len(), 5_000);
        for i in (0..5_000u32).step_by(97) {
            let hit = ip(&format!("1.{}.{}.1", (i / 256) % 256, i % 256));
            let miss = ip(&format!("1.{}.{}.2", (i / 256) % 256, i % 256));
            assert!(s.contains(hit) && !s.contains(miss), "{hit}");
        }
    }

    #[test]
    fn insert_and_extend() {
        let mut s = set(&["192.0.2.0/24"]);
        s.insert(IpSet::parse_entry("2001:db8::1").expect("v6"));
        s.extend_from(&set(&["198.51.100.7", "192.0.2.0/24"]));
        assert_eq!(s.len(), 3);
        assert!(s.contains(ip("2001:db8::1")) && s.contains(ip("198.51.100.7")));
    }

    #[test]
    fn load_file_with_comments_and_line_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bogus.txt");
        let mut f = std::fs::File::create(&path).expect("create");
        writeln!(
            f,
            "# known forged answers\n\n203.0.113.0/24\n  2001:db8::/32  # docs\n"
        )
        .expect("write");
        drop(f);
        let s = IpSet::load_file(&path).expect("valid file");
        assert_eq!(s.len(), 2);
        assert!(s.contains(ip("203.0.113.200")) && s.contains(ip("2001:db8::5")));

        std::fs::write(&path, "192.0.2.1\n# x\n192.0.2.300\n").expect("write");
        match IpSet::load_file(&path) {
            Err(IpSetError::Line { line, entry, .. }) => {
                assert_eq!((line, entry.as_str()), (3, "192.0.2.300"));
            }
            other => panic!("{other:?}"),
        }
        let err = IpSet::load_file(&path).expect_err("bad line");
        assert!(
            err.to_string()
                .ends_with(":3: invalid address `192.0.2.300`: not an IP address")
        );

        let missing = dir.path().join("missing.txt");
        let err = IpSet::load_file(&missing).expect_err("missing");
        assert!(matches!(err, IpSetError::Io { .. }), "{err}");
    }
}
