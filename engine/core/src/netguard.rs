//! The SSRF guard: which addresses the fetcher may dial.
//!
//! [`NetGuard::check`] is asked about every address right before a connection to it is opened (and about IP-literal
//! hosts before anything else). Public addresses pass. Non-public ones ([`crate::netaddr::classify_ip`]) pass only
//! when `security.allow_private_networks` is set or one of `security.allow_cidrs` contains them. The unspecified
//! address, multicast and broadcast are never dialed, whatever the settings: connecting to `0.0.0.0` reaches the
//! local host, and the others cannot carry a TCP connection. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is
//! matched against the IPv4 blocks of `allow_cidrs` as the IPv4 address it is.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::netaddr::{IpClass, classify_ip};

/// An address block `address/prefix` (a bare address is a /32 or /128); the address has no host bits set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The block of `addr` with `prefix` bits; `None` when the prefix is too long for the family or host bits are
    /// set.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Cidr> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let c = Cidr { addr, prefix };
        (prefix <= max && c.network() == addr).then_some(c)
    }

    /// The first address of the block.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4(
                (u32::from(a) & mask32(self.prefix.min(32)))
                    .to_be_bytes()
                    .into(),
            ),
            IpAddr::V6(a) => IpAddr::V6(
                (u128::from(a) & mask128(self.prefix.min(128)))
                    .to_be_bytes()
                    .into(),
            ),
        }
    }

    /// True when `ip` is inside the block (same family only).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                let m = mask32(self.prefix);
                u32::from(a) & m == u32::from(net) & m
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                let m = mask128(self.prefix);
                u128::from(a) & m == u128::from(net) & m
            }
            _ => false,
        }
    }
}

fn mask32(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

fn mask128(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Why a text is not an address block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidrError {
    /// The part before the `/` is not an IP address.
    #[error("invalid address block `{text}`: `{addr}` is not an IP address")]
    Address { text: String, addr: String },
    /// The prefix length is not a number from 0 to `max` (32 for IPv4, 128 for IPv6).
    #[error("invalid address block `{text}`: the prefix length must be 0 to {max}")]
    Prefix { text: String, max: u8 },
    /// The address has bits set beyond the prefix; `network` is the block probably meant.
    #[error(
        "invalid address block `{text}`: host bits are set (did you mean `{network}/{prefix}`?)"
    )]
    HostBits {
        text: String,
        network: IpAddr,
        prefix: u8,
    },
}

impl FromStr for Cidr {
    type Err = CidrError;

    /// `10.1.0.0/16`, `fd00::/8`, or a bare address. The error says what is wrong (and, for host bits, which
    /// block was probably meant).
    fn from_str(s: &str) -> Result<Cidr, CidrError> {
        let t = s.trim();
        let (addr, prefix) = match t.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (t, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| CidrError::Address {
            text: s.to_owned(),
            addr: addr.to_owned(),
        })?;
        let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max && p.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => {
                    return Err(CidrError::Prefix {
                        text: s.to_owned(),
                        max,
                    });
                }
            },
        };
        let loose = Cidr { addr, prefix };
        Cidr::new(addr, prefix).ok_or_else(|| CidrError::HostBits {
            text: s.to_owned(),
            network: loose.network(),
            prefix,
        })
    }
}

/// Why the guard refused an address: its class, or that it is never dialed at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused(pub IpClass);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// Which addresses may be dialed: `security.allow_private_networks` and `security.allow_cidrs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetGuard {
    allow_private: bool,
    allow: Vec<Cidr>,
}

impl NetGuard {
    pub fn new(allow_private: bool, allow: Vec<Cidr>) -> NetGuard {
        NetGuard {
            allow_private,
            allow,
        }
    }

    /// Whether every non-public address passes (`allow_private_networks`).
    pub fn allows_private(&self) -> bool {
        self.allow_private
    }

    /// The blocks allowed besides public addresses.
    pub fn allowed_blocks(&self) -> &[Cidr] {
        &self.allow
    }

    /// Ok when `ip` may be dialed, else the class it was refused for.
    pub fn check(&self, ip: IpAddr) -> Result<(), Refused> {
        let class = classify_ip(ip);
        match class {
            IpClass::Public => return Ok(()),
            IpClass::Unspecified | IpClass::Multicast | IpClass::Broadcast => {
                return Err(Refused(class));
            }
            _ => {}
        }
        if self.allow_private {
            return Ok(());
        }
        let as_v4 = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        let listed = self
            .allow
            .iter()
            .any(|c| c.contains(ip) || as_v4.is_some_and(|v4| c.contains(v4)));
        if listed { Ok(()) } else { Err(Refused(class)) }
    }

    /// True when `ip` may be dialed.
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.check(ip).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip literal")
    }

    fn guard(blocks: &[&str]) -> NetGuard {
        NetGuard::new(
            false,
            blocks
                .iter()
                .map(|b| b.parse().expect("valid block"))
                .collect(),
        )
    }

    #[test]
    fn blocks_parse_and_contain() {
        let c: Cidr = "10.1.0.0/16".parse().unwrap();
        assert!(c.contains(ip("10.1.255.3")));
        assert!(!c.contains(ip("10.2.0.1")));
        assert!(!c.contains(ip("::ffff:10.1.0.1")), "families do not mix");
        let bare: Cidr = "127.0.1.5".parse().unwrap();
        assert_eq!(bare.to_string(), "127.0.1.5/32");
        let v6: Cidr = " fd00::/8 ".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")));
        assert!(!v6.contains(ip("fe80::1")));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("8.8.8.8")));
    }

    #[test]
    fn bad_blocks_say_what_is_wrong() {
        let e = "10.1.2.3/16".parse::<Cidr>().unwrap_err();
        assert_eq!(
            e,
            CidrError::HostBits {
                text: "10.1.2.3/16".to_owned(),
                network: ip("10.1.0.0"),
                prefix: 16
            }
        );
        assert_eq!(
            e.to_string(),
            "invalid address block `10.1.2.3/16`: host bits are set (did you mean `10.1.0.0/16`?)"
        );
        let e = "10.0.0.0/33".parse::<Cidr>().unwrap_err();
        assert!(matches!(e, CidrError::Prefix { max: 32, .. }), "{e:?}");
        assert!(
            e.to_string().contains("prefix length must be 0 to 32"),
            "{e}"
        );
        let e = "fd00::/129".parse::<Cidr>().unwrap_err();
        assert!(matches!(e, CidrError::Prefix { max: 128, .. }), "{e:?}");
        assert!(e.to_string().contains("0 to 128"), "{e}");
        let e = "intranet/8".parse::<Cidr>().unwrap_err();
        assert!(
            matches!(&e, CidrError::Address { addr, .. } if addr == "intranet"),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("`intranet` is not an IP address"),
            "{e}"
        );
        for bad in ["10.0.0.0/+8", "10.0.0.0/"] {
            let e = bad.parse::<Cidr>().unwrap_err();
            assert!(
                matches!(e, CidrError::Prefix { max: 32, .. }),
                "{bad}: {e:?}"
            );
        }
    }

    #[test]
    fn public_passes_and_every_special_range_is_refused() {
        let g = NetGuard::default();
        assert_eq!(g.check(ip("93.184.216.34")), Ok(()));
        assert_eq!(g.check(ip("2606:4700::1111")), Ok(()));
        for (addr, class) in [
            ("0.0.0.0", IpClass::Unspecified),
            ("::", IpClass::Unspecified),
            ("127.0.0.1", IpClass::Loopback),
            ("::1", IpClass::Loopback),
            ("10.0.0.1", IpClass::Private),
            ("100.64.0.1", IpClass::SharedCgnat),
            ("169.254.169.254", IpClass::LinkLocal),
            ("fe80::1", IpClass::LinkLocal),
            ("fc00::1", IpClass::UniqueLocal),
            ("fd12:3456::1", IpClass::UniqueLocal),
            ("224.0.0.1", IpClass::Multicast),
            ("ff02::1", IpClass::Multicast),
            ("255.255.255.255", IpClass::Broadcast),
            ("::ffff:127.0.0.1", IpClass::Loopback),
            ("::ffff:169.254.169.254", IpClass::LinkLocal),
            ("64:ff9b::a00:1", IpClass::Nat64),
            ("64:ff9b::7f00:1", IpClass::Nat64),
            ("2002:a9fe:a9fe::1", IpClass::LinkLocal),
        ] {
            assert_eq!(g.check(ip(addr)), Err(Refused(class)), "{addr}");
        }
    }

    #[test]
    fn allow_private_networks_opens_all_but_the_never_dialed() {
        let g = NetGuard::new(true, Vec::new());
        for addr in ["127.0.0.1", "10.0.0.1", "::1", "fd00::1", "169.254.169.254"] {
            assert!(g.allows(ip(addr)), "{addr}");
        }
        for addr in ["0.0.0.0", "::", "224.0.0.1", "ff02::1", "255.255.255.255"] {
            assert!(!g.allows(ip(addr)), "{addr}");
        }
    }

    #[test]
    fn allow_cidrs_open_only_their_blocks() {
        let g = guard(&["127.0.1.0/24", "10.1.0.0/16", "fd00:1::/32"]);
        assert!(g.allows(ip("127.0.1.5")));
        assert_eq!(g.check(ip("127.0.2.5")), Err(Refused(IpClass::Loopback)));
        assert!(g.allows(ip("10.1.2.3")));
        assert!(
            g.allows(ip("::ffff:10.1.2.3")),
            "mapped form of a listed v4"
        );
        assert_eq!(g.check(ip("10.2.0.1")), Err(Refused(IpClass::Private)));
        assert!(g.allows(ip("fd00:1::5")));
        assert!(!g.allows(ip("fd00:2::5")));
        // A NAT64 form of a listed v4 address is not that address: refused.
        assert!(!g.allows(ip("64:ff9b::a01:203")));
        // Never dialed even when listed.
        let wide = guard(&["0.0.0.0/0", "::/0"]);
        assert!(!wide.allows(ip("0.0.0.0")));
        assert!(!wide.allows(ip("224.0.0.1")));
        assert!(wide.allows(ip("192.168.1.1")));
    }

    #[test]
    fn the_config_key_loads_and_its_errors_name_it() {
        let c = crate::config::Config::from_str(
            "[security]\nallow_cidrs = [\"127.0.1.0/24\", \"::1\"]\n",
            "t.toml",
        )
        .expect("valid config");
        let g = c.security.guard();
        assert!(g.allows(ip("127.0.1.9")) && g.allows(ip("::1")));
        assert!(!g.allows(ip("127.0.2.9")));
        let e = crate::config::Config::from_str(
            "[security]\nallow_cidrs = [\"10.0.0.0/8\", \"10.1.2.3/16\"]\n",
            "t.toml",
        )
        .expect_err("host bits");
        let text = e.to_string();
        assert!(
            text.contains("`security.allow_cidrs[1]`: invalid address block `10.1.2.3/16`"),
            "{text}"
        );
        assert!(
            crate::config::reload::classify("security.allow_cidrs")
                == Some(crate::config::reload::KeyClass::RestartOnly)
        );
        // A reload that changes it is rejected as a whole, naming the key.
        let widened = crate::config::Config::from_str(
            "[security]\nallow_cidrs = [\"127.0.1.0/24\", \"::1\", \"10.0.0.0/8\"]\n",
            "t.toml",
        )
        .expect("valid config");
        let p = crate::config::reload::plan(&c, &widened);
        assert!(p.rejected());
        assert_eq!(
            p.message(),
            "reload rejected: security.allow_cidrs cannot change while running (restart to apply)"
        );
    }
}
