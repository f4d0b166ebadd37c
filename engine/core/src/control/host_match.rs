//! Which hosts an operator's action names: `example.org` (the host on every port), `example.org:8080` (one
//! authority), or `*.example.org` (the host and every host under it, on every port: a site whatever its
//! subdomains), normalised as URLs are (lowercase, IDN to punycode, IPv6 in brackets, a trailing dot dropped).

use std::fmt;

/// A host, or one authority of it, as an operator names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostMatch {
    /// The host as URLs carry it (the politeness key).
    host: String,
    /// One port only; None = every port.
    port: Option<u16>,
    /// Every host under `host` too (`*.example.org`).
    subdomains: bool,
}

/// Why a host name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a host or host:port: {0}")]
pub struct BadHost(pub String);

impl HostMatch {
    /// Parses `host` or `host:port` (`[v6]` or `[v6]:port` for IPv6). Anything else (a scheme, a path, userinfo,
    /// an empty host, a port of 0 or above 65535) is refused.
    pub fn parse(text: &str) -> Result<HostMatch, BadHost> {
        let t = text.trim();
        if let Some(domain) = t.strip_prefix("*.") {
            let m = HostMatch::parse(domain)?;
            if m.port.is_some() || m.subdomains || m.host.starts_with('[') {
                return Err(BadHost(t.chars().take(300).collect()));
            }
            return Ok(HostMatch::domain(&m.host));
        }
        let bad = || BadHost(t.chars().take(300).collect());
        if t.is_empty()
            || t.contains(['/', '@', '?', '#', '\\', '*'])
            || t.contains(char::is_whitespace)
        {
            return Err(bad());
        }
        let url = url::Url::parse(&format!("http://{t}/")).map_err(|_| bad())?;
        let host = url.host_str().ok_or_else(bad)?;
        let host = host.strip_suffix('.').unwrap_or(host);
        if host.is_empty() {
            return Err(bad());
        }
        // `url` drops a default port (80 for http): keep what was written.
        let port = match explicit_port(t) {
            Some(Ok(p)) if p > 0 => Some(p),
            Some(_) => return Err(bad()),
            None => None,
        };
        Ok(HostMatch {
            host: host.to_owned(),
            port,
            subdomains: false,
        })
    }

    /// `domain` and every host under it, on every port (`domain` as URLs carry hosts).
    pub fn domain(domain: &str) -> HostMatch {
        HostMatch {
            host: domain.to_owned(),
            port: None,
            subdomains: true,
        }
    }

    /// True for `*.example.org`.
    pub fn has_subdomains(&self) -> bool {
        self.subdomains
    }

    /// Every port of `host`, a host as URLs carry it (already normalised).
    pub fn every_port(host: &str) -> HostMatch {
        HostMatch {
            host: host.to_owned(),
            port: None,
            subdomains: false,
        }
    }

    /// The host every port of.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, when one authority is meant.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// True for a URL of `host` (its politeness key) on `port` (its effective port).
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host_ok = self.host == host
            || (self.subdomains
                && host.len() > self.host.len()
                && host.ends_with(self.host.as_str())
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.');
        host_ok && self.port.is_none_or(|p| p == port)
    }

    /// True for a URL's host and port.
    pub fn matches_url(&self, url: &url::Url) -> bool {
        match (url.host_str(), url.port_or_known_default()) {
            (Some(h), Some(p)) => self.matches(h, p),
            _ => false,
        }
    }

    /// True when every URL this matches is matched by `other` too (`a.example:81` is within `a.example`).
    pub fn within(&self, other: &HostMatch) -> bool {
        let hosts = if other.subdomains {
            other.matches(&self.host, self.port.unwrap_or(0)) || other.host == self.host
        } else {
            !self.subdomains && self.host == other.host
        };
        hosts && (other.port.is_none() || other.port == self.port)
    }
}

/// The port written after the host, if any: None when there is none, Some(Err) when it is not a number.
fn explicit_port(t: &str) -> Option<Result<u16, ()>> {
    let after = match t.rfind(']') {
        Some(i) => &t[i + 1..],
        None => {
            if t.matches(':').count() > 1 {
                // A bare IPv6 address without brackets: url refuses it anyway.
                return Some(Err(()));
            }
            t.find(':').map_or("", |i| &t[i..])
        }
    };
    let digits = after.strip_prefix(':')?;
    Some(digits.parse::<u16>().map_err(|_| ()))
}

impl fmt::Display for HostMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.subdomains {
            f.write_str("*.")?;
        }
        match self.port {
            Some(p) => write!(f, "{}:{p}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// As its text (`host` or `host:port`): a JSON map key.
impl serde::Serialize for HostMatch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for HostMatch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HostMatch, D::Error> {
        let text = String::deserialize(d)?;
        HostMatch::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_matches_every_port_an_authority_one() {
        let h = HostMatch::parse("Example.ORG").unwrap();
        assert_eq!(h.to_string(), "example.org");
        assert!(h.matches("example.org", 80) && h.matches("example.org", 8443));
        assert!(!h.matches("www.example.org", 80));
        let a = HostMatch::parse("example.org:8080").unwrap();
        assert_eq!((a.host(), a.port()), ("example.org", Some(8080)));
        assert!(a.matches("example.org", 8080) && !a.matches("example.org", 80));
        assert!(a.within(&h) && !h.within(&a) && h.within(&h));
        // A default port written out is still one authority.
        let d = HostMatch::parse("example.org:80").unwrap();
        assert_eq!(d.port(), Some(80));
        let u = url::Url::parse("http://example.org/x").unwrap();
        assert!(d.matches_url(&u) && h.matches_url(&u) && !a.matches_url(&u));
    }

    #[test]
    fn names_are_normalised_as_urls_are() {
        assert_eq!(
            HostMatch::parse("bücher.example.").unwrap().host(),
            "xn--bcher-kva.example"
        );
        assert_eq!(
            HostMatch::parse("[::1]:81").unwrap().to_string(),
            "[::1]:81"
        );
        assert_eq!(HostMatch::parse("[::1]").unwrap().port(), None);
        assert_eq!(HostMatch::parse(" 127.0.0.1 ").unwrap().host(), "127.0.0.1");
    }

    #[test]
    fn a_domain_matches_itself_and_every_host_under_it() {
        let d = HostMatch::parse("*.Example.ORG").unwrap();
        assert_eq!(d.to_string(), "*.example.org");
        assert!(d.has_subdomains());
        assert!(d.matches("example.org", 80) && d.matches("www.example.org", 443));
        assert!(d.matches("a.b.example.org", 8080));
        assert!(!d.matches("badexample.org", 80) && !d.matches("example.org.evil", 80));
        assert!(HostMatch::parse("www.example.org").unwrap().within(&d));
        assert!(!d.within(&HostMatch::parse("example.org").unwrap()));
        assert_eq!(HostMatch::domain("example.org"), d);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<HostMatch>(&json).unwrap(), d);
        for bad in [
            "*.example.org:80",
            "*.*.example.org",
            "*.[::1]",
            "*.",
            "*example.org",
        ] {
            assert!(HostMatch::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            " ",
            "http://example.org",
            "example.org/path",
            "user@example.org",
            "example.org:0",
            "example.org:65536",
            "example.org:x",
            "::1",
            "exa mple.org",
            "example.org?q",
        ] {
            assert!(HostMatch::parse(bad).is_err(), "{bad:?}");
        }
    }
}
