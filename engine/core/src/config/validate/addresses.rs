//! Network addresses: IP addresses and address blocks, DNS servers and listen sockets.

use std::net::{IpAddr, SocketAddr};

use crate::config::value_error::ValueError;

/// A DNS server `ip:port` (`[v6]:port` for IPv6); a bare address means port 53.
pub(in crate::config) fn nameserver(s: &str) -> Result<SocketAddr, ValueError> {
    let addr = match s.parse::<SocketAddr>() {
        Ok(addr) => addr,
        Err(_) => match s.parse::<IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, 53),
            Err(_) => {
                return Err(ValueError::Nameserver { text: s.to_owned() });
            }
        },
    };
    if addr.port() == 0 {
        return Err(ValueError::NameserverPortZero { text: s.to_owned() });
    }
    Ok(addr)
}

/// An IP address.
pub(in crate::config) fn ip(s: &str) -> Result<IpAddr, ValueError> {
    s.parse()
        .map_err(|_| ValueError::IpAddress { text: s.to_owned() })
}

/// An IP address or `address/prefix` block, kept as written (surrounding spaces trimmed).
pub(in crate::config) fn ip_or_cidr(s: &str) -> Result<String, ValueError> {
    let t = s.trim();
    let (addr, prefix) = match t.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (t, None),
    };
    let Ok(addr) = addr.parse::<IpAddr>() else {
        return Err(ValueError::IpOrCidr { text: s.to_owned() });
    };
    if let Some(p) = prefix {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let ok = !p.is_empty()
            && p.len() <= 3
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u8>().is_ok_and(|n| n <= max);
        if !ok {
            return Err(ValueError::CidrPrefix {
                text: s.to_owned(),
                max,
            });
        }
    }
    Ok(t.to_owned())
}

/// A listen address `ip:port` (`[v6]:port`; port 0 = any free port); `""` = off.
pub(in crate::config) fn listen_addr(s: &str) -> Result<Option<SocketAddr>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(Some(addr));
    }
    Err(ValueError::ListenAddress {
        text: s.to_owned(),
        ip: s.parse::<IpAddr>().ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nameservers_default_to_port_53_and_refuse_port_0() {
        assert_eq!(nameserver("192.0.2.1"), Ok("192.0.2.1:53".parse().unwrap()));
        assert_eq!(nameserver("[::1]:5353"), Ok("[::1]:5353".parse().unwrap()));
        assert_eq!(
            nameserver("192.0.2.1:0"),
            Err(ValueError::NameserverPortZero {
                text: "192.0.2.1:0".to_owned()
            })
        );
        assert!(matches!(
            nameserver("dns.example"),
            Err(ValueError::Nameserver { .. })
        ));
    }

    #[test]
    fn address_blocks_are_kept_as_written_within_the_family_s_prefix() {
        assert_eq!(ip_or_cidr(" 10.0.0.0/8 "), Ok("10.0.0.0/8".to_owned()));
        assert_eq!(ip_or_cidr("::1"), Ok("::1".to_owned()));
        assert_eq!(ip_or_cidr("fd00::/128"), Ok("fd00::/128".to_owned()));
        assert_eq!(
            ip_or_cidr("10.0.0.0/33"),
            Err(ValueError::CidrPrefix {
                text: "10.0.0.0/33".to_owned(),
                max: 32
            })
        );
        for s in ["10.0.0.0/", "10.0.0.0/+8", "10.0.0.0/0008"] {
            assert!(
                matches!(ip_or_cidr(s), Err(ValueError::CidrPrefix { .. })),
                "{s}"
            );
        }
        assert_eq!(
            ip_or_cidr("host/8"),
            Err(ValueError::IpOrCidr {
                text: "host/8".to_owned()
            })
        );
    }

    #[test]
    fn a_listen_address_needs_a_port_and_says_so_for_a_bare_ip() {
        assert_eq!(listen_addr(""), Ok(None));
        assert_eq!(
            listen_addr("127.0.0.1:0"),
            Ok(Some("127.0.0.1:0".parse().unwrap()))
        );
        let v6: IpAddr = "::1".parse().unwrap();
        let e = listen_addr("::1").unwrap_err();
        assert_eq!(
            e,
            ValueError::ListenAddress {
                text: "::1".to_owned(),
                ip: Some(v6)
            }
        );
        assert!(
            e.to_string()
                .contains("missing port (IPv6 addresses go in brackets)"),
            "{e}"
        );
        assert_eq!(
            ip("not-an-ip"),
            Err(ValueError::IpAddress {
                text: "not-an-ip".to_owned()
            })
        );
    }
}
