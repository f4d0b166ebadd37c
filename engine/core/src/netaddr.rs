//! IP address classification for SSRF protection.
//!
//! The fetcher must never connect to loopback, private, link-local or otherwise non-public
//! addresses unless explicitly allowed. [`classify_ip`] names the special-purpose range an
//! address falls in (following the IANA special-purpose registries) and [`is_public_ip`] is
//! the yes/no answer used by the DNS resolver and the IP-literal check. IPv6 forms that embed
//! an IPv4 address (IPv4-mapped, IPv4-compatible, 6to4) are judged by the embedded address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The class of an IP address; everything except [`IpClass::Public`] is refused by the fetcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpClass {
    /// Globally routable unicast address.
    Public,
    /// `0.0.0.0`, `::`.
    Unspecified,
    /// `0.0.0.0/8` ("this network").
    ThisNetwork,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64.0.0/10` carrier-grade NAT shared address space.
    SharedCgnat,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// `fc00::/7` unique local addresses (and the deprecated site-local `fec0::/10`).
    UniqueLocal,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// TEST-NET-1/2/3, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// `198.18.0.0/15`, `2001:2::/48`.
    Benchmarking,
    /// `2001::/32` Teredo tunnelling.
    Teredo,
    /// `64:ff9b::/96` and `64:ff9b:1::/48` NAT64 translation prefixes.
    Nat64,
    /// `240/4`, `192.0.0.0/24`, `192.88.99.0/24`, `100::/64`, ORCHID and IPv6 outside `2000::/3`.
    Reserved,
}

impl IpClass {
    /// A short, stable, lowercase name for logs and metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            IpClass::Public => "public",
            IpClass::Unspecified => "unspecified",
            IpClass::ThisNetwork => "this_network",
            IpClass::Loopback => "loopback",
            IpClass::Private => "private",
            IpClass::SharedCgnat => "shared_cgnat",
            IpClass::LinkLocal => "link_local",
            IpClass::UniqueLocal => "unique_local",
            IpClass::Multicast => "multicast",
            IpClass::Broadcast => "broadcast",
            IpClass::Documentation => "documentation",
            IpClass::Benchmarking => "benchmarking",
            IpClass::Teredo => "teredo",
            IpClass::Nat64 => "nat64",
            IpClass::Reserved => "reserved",
        }
    }

    /// True only for [`IpClass::Public`].
    pub fn is_public(self) -> bool {
        self == IpClass::Public
    }
}

impl std::fmt::Display for IpClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// True when `ip` is a globally routable unicast address that the crawler may connect to.
pub fn is_public_ip(ip: IpAddr) -> bool {
    classify_ip(ip).is_public()
}

/// Names the special-purpose class of `ip`, or [`IpClass::Public`].
pub fn classify_ip(ip: IpAddr) -> IpClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// True when the top `len` bits of `addr` equal those of `prefix`.
fn in_prefix_v4(addr: u32, prefix: u32, len: u32) -> bool {
    if len == 0 {
        return true;
    }
    let mask = u32::MAX << (32 - len);
    addr & mask == prefix & mask
}

fn in_prefix_v6(addr: u128, prefix: u128, len: u32) -> bool {
    if len == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - len);
    addr & mask == prefix & mask
}

fn classify_v4(ip: Ipv4Addr) -> IpClass {
    let a = u32::from(ip);
    let p = |o: [u8; 4], len: u32| in_prefix_v4(a, u32::from_be_bytes(o), len);
    if a == 0 {
        IpClass::Unspecified
    } else if a == u32::MAX {
        IpClass::Broadcast
    } else if p([0, 0, 0, 0], 8) {
        IpClass::ThisNetwork
    } else if p([127, 0, 0, 0], 8) {
        IpClass::Loopback
    } else if p([10, 0, 0, 0], 8) || p([172, 16, 0, 0], 12) || p([192, 168, 0, 0], 16) {
        IpClass::Private
    } else if p([100, 64, 0, 0], 10) {
        IpClass::SharedCgnat
    } else if p([169, 254, 0, 0], 16) {
        IpClass::LinkLocal
    } else if p([192, 0, 2, 0], 24) || p([198, 51, 100, 0], 24) || p([203, 0, 113, 0], 24) {
        IpClass::Documentation
    } else if p([198, 18, 0, 0], 15) {
        IpClass::Benchmarking
    } else if p([224, 0, 0, 0], 4) {
        IpClass::Multicast
    } else if p([240, 0, 0, 0], 4) || p([192, 0, 0, 0], 24) || p([192, 88, 99, 0], 24) {
        IpClass::Reserved
    } else {
        IpClass::Public
    }
}

/// The class of an embedded IPv4 address, mapped so that a public embedded address is public.
fn embedded_v4(bits: u32) -> IpClass {
    classify_v4(Ipv4Addr::from(bits))
}

fn classify_v6(ip: Ipv6Addr) -> IpClass {
    let a = u128::from(ip);
    let p = |prefix: u128, len: u32| in_prefix_v6(a, prefix, len);
    if a == 0 {
        return IpClass::Unspecified;
    }
    if a == 1 {
        return IpClass::Loopback;
    }
    // ::ffff:a.b.c.d (IPv4-mapped)
    if p(0xffff_0000_0000, 96) {
        return embedded_v4(a as u32);
    }
    // ::a.b.c.d (deprecated IPv4-compatible)
    if p(0, 96) {
        return embedded_v4(a as u32);
    }
    // 64:ff9b::/96 well-known NAT64 prefix, 64:ff9b:1::/48 local-use NAT64
    if p(0x0064_ff9b_u128 << 96, 96) || p(0x0064_ff9b_0001_u128 << 80, 48) {
        return IpClass::Nat64;
    }
    // 100::/64 discard-only
    if p(0x0100_u128 << 112, 64) {
        return IpClass::Reserved;
    }
    if p(0xff00_u128 << 112, 8) {
        return IpClass::Multicast;
    }
    if p(0xfe80_u128 << 112, 10) {
        return IpClass::LinkLocal;
    }
    if p(0xfc00_u128 << 112, 7) || p(0xfec0_u128 << 112, 10) {
        return IpClass::UniqueLocal;
    }
    if p(0x2001_0db8_u128 << 96, 32) || p(0x3fff_u128 << 112, 20) {
        return IpClass::Documentation;
    }
    if p(0x2001_0002_0000_u128 << 80, 48) {
        return IpClass::Benchmarking;
    }
    if p(0x2001_u128 << 112, 32) {
        return IpClass::Teredo;
    }
    // ORCHID (2001:10::/28, deprecated) and ORCHIDv2 (2001:20::/28)
    if p(0x2001_0010_u128 << 96, 28) || p(0x2001_0020_u128 << 96, 28) {
        return IpClass::Reserved;
    }
    // 6to4: 2002:AABB:CCDD::/48 wraps the IPv4 address AA.BB.CC.DD
    if p(0x2002_u128 << 112, 16) {
        let inner = embedded_v4((a >> 80) as u32);
        return if inner.is_public() {
            IpClass::Public
        } else {
            inner
        };
    }
    // Only 2000::/3 is allocated as global unicast.
    if !p(0x2000_u128 << 112, 3) {
        return IpClass::Reserved;
    }
    IpClass::Public
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> IpClass {
        classify_ip(s.parse().expect("valid ip literal"))
    }

    fn public(s: &str) -> bool {
        is_public_ip(s.parse().expect("valid ip literal"))
    }

    #[test]
    fn public_v4() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.15.255.255",
            "172.32.0.0",
        ] {
            assert_eq!(c(s), IpClass::Public, "{s}");
            assert!(public(s), "{s}");
        }
        assert!(public("100.63.255.255"));
        assert!(public("100.128.0.0"));
        assert!(public("198.17.255.255"));
        assert!(public("198.20.0.0"));
        assert!(public("223.255.255.255"));
    }

    #[test]
    fn v4_unspecified_and_this_network() {
        assert_eq!(c("0.0.0.0"), IpClass::Unspecified);
        assert_eq!(c("0.1.2.3"), IpClass::ThisNetwork);
        assert_eq!(c("0.255.255.255"), IpClass::ThisNetwork);
    }

    #[test]
    fn v4_loopback() {
        assert_eq!(c("127.0.0.1"), IpClass::Loopback);
        assert_eq!(c("127.255.255.254"), IpClass::Loopback);
        assert!(!public("127.0.0.1"));
    }

    #[test]
    fn v4_private() {
        for s in [
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "192.168.255.255",
        ] {
            assert_eq!(c(s), IpClass::Private, "{s}");
            assert!(!public(s));
        }
    }

    #[test]
    fn v4_cgnat() {
        assert_eq!(c("100.64.0.0"), IpClass::SharedCgnat);
        assert_eq!(c("100.127.255.255"), IpClass::SharedCgnat);
    }

    #[test]
    fn v4_link_local() {
        assert_eq!(c("169.254.169.254"), IpClass::LinkLocal);
        assert_eq!(c("169.254.0.1"), IpClass::LinkLocal);
    }

    #[test]
    fn v4_broadcast_and_multicast() {
        assert_eq!(c("255.255.255.255"), IpClass::Broadcast);
        assert_eq!(c("224.0.0.1"), IpClass::Multicast);
        assert_eq!(c("239.255.255.255"), IpClass::Multicast);
    }

    #[test]
    fn v4_documentation() {
        assert_eq!(c("192.0.2.1"), IpClass::Documentation);
        assert_eq!(c("198.51.100.7"), IpClass::Documentation);
        assert_eq!(c("203.0.113.200"), IpClass::Documentation);
    }

    #[test]
    fn v4_benchmarking() {
        assert_eq!(c("198.18.0.1"), IpClass::Benchmarking);
        assert_eq!(c("198.19.255.255"), IpClass::Benchmarking);
    }

    #[test]
    fn v4_reserved() {
        assert_eq!(c("240.0.0.1"), IpClass::Reserved);
        assert_eq!(c("255.255.255.254"), IpClass::Reserved);
        assert_eq!(c("192.0.0.8"), IpClass::Reserved);
        assert_eq!(c("192.88.99.1"), IpClass::Reserved);
    }

    #[test]
    fn public_v6() {
        for s in [
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
        ] {
            assert_eq!(c(s), IpClass::Public, "{s}");
        }
    }

    #[test]
    fn v6_loopback_unspecified() {
        assert_eq!(c("::1"), IpClass::Loopback);
        assert_eq!(c("::"), IpClass::Unspecified);
    }

    #[test]
    fn v6_unique_local_and_link_local() {
        assert_eq!(c("fc00::1"), IpClass::UniqueLocal);
        assert_eq!(c("fd12:3456:789a::1"), IpClass::UniqueLocal);
        assert_eq!(c("fec0::1"), IpClass::UniqueLocal);
        assert_eq!(c("fe80::1"), IpClass::LinkLocal);
        assert_eq!(c("febf::1"), IpClass::LinkLocal);
    }

    #[test]
    fn v6_multicast() {
        assert_eq!(c("ff02::1"), IpClass::Multicast);
        assert_eq!(c("ff0e::1"), IpClass::Multicast);
    }

    #[test]
    fn v6_documentation_and_benchmarking() {
        assert_eq!(c("2001:db8::1"), IpClass::Documentation);
        assert_eq!(c("2001:db8:ffff::1"), IpClass::Documentation);
        assert_eq!(c("3fff::1"), IpClass::Documentation);
        assert_eq!(c("2001:2::1"), IpClass::Benchmarking);
    }

    #[test]
    fn v6_teredo_and_nat64() {
        assert_eq!(c("2001::1"), IpClass::Teredo);
        assert_eq!(c("2001:0:4136:e378::1"), IpClass::Teredo);
        assert_eq!(c("64:ff9b::8.8.8.8"), IpClass::Nat64);
        assert_eq!(c("64:ff9b::7f00:1"), IpClass::Nat64);
        assert_eq!(c("64:ff9b:1::1"), IpClass::Nat64);
        // just outside the /96
        assert_eq!(c("64:ff9b:0:0:1::1"), IpClass::Reserved);
    }

    #[test]
    fn v6_mapped_and_compatible() {
        assert_eq!(c("::ffff:127.0.0.1"), IpClass::Loopback);
        assert_eq!(c("::ffff:10.1.2.3"), IpClass::Private);
        assert_eq!(c("::ffff:169.254.169.254"), IpClass::LinkLocal);
        assert_eq!(c("::ffff:0.0.0.0"), IpClass::Unspecified);
        assert_eq!(c("::ffff:8.8.8.8"), IpClass::Public);
        assert_eq!(c("::127.0.0.1"), IpClass::Loopback);
        assert_eq!(c("::192.168.1.1"), IpClass::Private);
        assert_eq!(c("::0.0.0.2"), IpClass::ThisNetwork);
    }

    #[test]
    fn v6_6to4() {
        // 2002:7f00:0001:: wraps 127.0.0.1
        assert_eq!(c("2002:7f00:1::1"), IpClass::Loopback);
        assert_eq!(c("2002:c0a8:0101::"), IpClass::Private);
        assert_eq!(c("2002:a9fe:a9fe::1"), IpClass::LinkLocal);
        assert_eq!(c("2002:0808:0808::1"), IpClass::Public);
    }

    #[test]
    fn v6_reserved() {
        assert_eq!(c("100::1"), IpClass::Reserved);
        assert_eq!(c("2001:10::1"), IpClass::Reserved);
        assert_eq!(c("2001:20::1"), IpClass::Reserved);
        assert_eq!(c("4000::1"), IpClass::Reserved);
        assert_eq!(c("1::1"), IpClass::Reserved);
    }

    #[test]
    fn names_are_stable() {
        assert_eq!(IpClass::Public.as_str(), "public");
        assert_eq!(IpClass::LinkLocal.to_string(), "link_local");
        assert!(IpClass::Public.is_public());
        assert!(!IpClass::Nat64.is_public());
    }
}
