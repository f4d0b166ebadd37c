//! Proxy hops: `socks5://[user:pass@]host:port` taken apart, its credentials percent-decoded and
//! never echoed.

use crate::config::proxy::{is_scheme, redact_credentials};
use crate::config::value_error::{HopProblem, ValueError};
use crate::config::{ProxyHop, Secret};

/// A hop `socks5://[user:pass@]host:port`. Credentials are percent-decoded and must be 1 to
/// 255 bytes each (RFC 1929); messages show the hop as `socks5://***@host:port`.
pub(in crate::config) fn proxy_hop(s: &str) -> Result<ProxyHop, ValueError> {
    let bad = |problem| ValueError::ProxyHop {
        shown: redact_credentials(s),
        problem,
    };
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(bad(HopProblem::Form));
    };
    if !is_scheme(scheme) {
        return Err(bad(HopProblem::Form));
    }
    if !scheme.eq_ignore_ascii_case("socks5") {
        return Err(bad(HopProblem::Scheme {
            found: scheme.to_owned(),
        }));
    }
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let hostport = hostport.strip_suffix('/').unwrap_or(hostport);
    if hostport.contains(['/', '?', '#']) {
        return Err(bad(HopProblem::PathQueryOrFragment));
    }
    let (host, port) = hop_host_port(hostport).map_err(bad)?;
    let (username, password) = match userinfo {
        None => (None, None),
        Some(info) => {
            let Some((user, pass)) = info.split_once(':') else {
                return Err(bad(HopProblem::CredentialsForm));
            };
            let user = percent_decode(user).map_err(bad)?;
            let pass = percent_decode(pass).map_err(bad)?;
            for (what, v) in [("user name", &user), ("password", &pass)] {
                if v.is_empty() || v.len() > 255 {
                    return Err(bad(HopProblem::CredentialLength { what }));
                }
            }
            (Some(user), Some(Secret::new(pass)))
        }
    };
    Ok(ProxyHop {
        scheme: "socks5".to_owned(),
        host,
        port,
        username,
        password,
    })
}

/// `host:port` or `[v6]:port` of a hop; the host comes back lowercase, IPv6 without brackets.
fn hop_host_port(s: &str) -> Result<(String, u16), HopProblem> {
    let (host, port) = if let Some(inner) = s.strip_prefix('[') {
        let Some((v6, after)) = inner.split_once(']') else {
            return Err(HopProblem::UnclosedBracket);
        };
        let Some(port) = after.strip_prefix(':') else {
            return Err(HopProblem::MissingPort);
        };
        let ip: std::net::Ipv6Addr = v6.parse().map_err(|_| HopProblem::Ipv6Address {
            text: v6.to_owned(),
        })?;
        (ip.to_string(), port)
    } else {
        let Some((host, port)) = s.rsplit_once(':') else {
            return Err(HopProblem::MissingPort);
        };
        if host.contains(':') {
            return Err(HopProblem::Ipv6Brackets);
        }
        if host.is_empty() {
            return Err(HopProblem::MissingHost);
        }
        let invalid = |reason| HopProblem::Host {
            host: host.to_owned(),
            reason,
        };
        let host = match url::Host::parse(host) {
            Ok(url::Host::Domain(d)) if !d.is_empty() && !d.contains("..") => d,
            Ok(url::Host::Domain(_)) => return Err(invalid(None)),
            Ok(other) => other.to_string(),
            Err(e) => return Err(invalid(Some(e))),
        };
        (host, port)
    };
    if port.is_empty() {
        return Err(HopProblem::MissingPort);
    }
    match port.parse::<u16>() {
        Ok(0) => Err(HopProblem::PortZero),
        Ok(p) if port.bytes().all(|b| b.is_ascii_digit()) => Ok((host, p)),
        _ => Err(HopProblem::Port {
            text: port.to_owned(),
        }),
    }
}

/// Decodes `%XX` escapes; the result must be UTF-8. Messages never echo the input.
fn percent_decode(s: &str) -> Result<String, HopProblem> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(b) = hex else {
                return Err(HopProblem::PercentEncoding);
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| HopProblem::CredentialsUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop_problem(s: &str) -> HopProblem {
        match proxy_hop(s) {
            Err(ValueError::ProxyHop { problem, .. }) => problem,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn proxy_hops_name_the_problem_and_hide_credentials() {
        assert_eq!(hop_problem("127.0.0.1:1080"), HopProblem::Form);
        assert_eq!(
            hop_problem("socks5h://h:1080"),
            HopProblem::Scheme {
                found: "socks5h".to_owned()
            }
        );
        assert_eq!(hop_problem("socks5://h"), HopProblem::MissingPort);
        assert_eq!(hop_problem("socks5://h:0"), HopProblem::PortZero);
        assert_eq!(
            hop_problem("socks5://h:99999"),
            HopProblem::Port {
                text: "99999".to_owned()
            }
        );
        assert_eq!(hop_problem("socks5://::1:1080"), HopProblem::Ipv6Brackets);
        assert_eq!(
            hop_problem("socks5://[::1:1080"),
            HopProblem::UnclosedBracket
        );
        assert_eq!(
            hop_problem("socks5://h:1080/x"),
            HopProblem::PathQueryOrFragment
        );
        assert_eq!(
            hop_problem("socks5://user@h:1080"),
            HopProblem::CredentialsForm
        );
        assert_eq!(
            hop_problem("socks5://u:%zz@h:1080"),
            HopProblem::PercentEncoding
        );
        assert_eq!(
            hop_problem("socks5://:pw@h:1080"),
            HopProblem::CredentialLength { what: "user name" }
        );

        let e = proxy_hop("socks5h://u:hunter2@h:1080").unwrap_err();
        let text = e.to_string();
        assert_eq!(
            text,
            "proxy hop `socks5h://***@h:1080` must use socks5, found `socks5h` \
             (write `socks5` and set `resolve = \"remote\"`)"
        );
        assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
        let e = proxy_hop("socks5://u:hunter2@h:0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid proxy hop `socks5://***@h:0`: port must not be 0"
        );
    }

    #[test]
    fn hosts_come_back_lowercase_and_ipv6_without_brackets() {
        assert_eq!(
            hop_host_port("Proxy.Example:1080"),
            Ok(("proxy.example".to_owned(), 1080))
        );
        assert_eq!(hop_host_port("[::1]:9050"), Ok(("::1".to_owned(), 9050)));
        assert_eq!(hop_host_port("[::1]"), Err(HopProblem::MissingPort));
        assert_eq!(hop_host_port(":1080"), Err(HopProblem::MissingHost));
        assert_eq!(
            hop_host_port("[fe80::x]:1"),
            Err(HopProblem::Ipv6Address {
                text: "fe80::x".to_owned()
            })
        );
        assert_eq!(
            hop_host_port("h:+80"),
            Err(HopProblem::Port {
                text: "+80".to_owned()
            })
        );
    }

    #[test]
    fn credentials_decode_percent_escapes_into_utf8_only() {
        assert_eq!(percent_decode("p%40ss%3A"), Ok("p@ss:".to_owned()));
        assert_eq!(percent_decode("caf%C3%A9"), Ok("caf\u{e9}".to_owned()));
        assert_eq!(percent_decode("%4"), Err(HopProblem::PercentEncoding));
        assert_eq!(percent_decode("%+1"), Err(HopProblem::PercentEncoding));
        assert_eq!(percent_decode("%ff"), Err(HopProblem::CredentialsUtf8));
    }
}
