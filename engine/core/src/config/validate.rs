//! Value validators for configuration strings (seed URLs, regexes, user agent, log directives,
//! enum names, paths, resolver addresses and names, the OTLP endpoint and listen addresses,
//! proxy hops, chain names and host patterns) and the "did you mean" name matcher. Each
//! validator returns the typed value or a [`ValueError`]; errors never contain a password.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;

use super::proxy::{DIRECT, is_scheme, redact_credentials};
use super::value_error::{HopProblem, LOG_LEVELS, NameRole, UrlProblem, UrlRole, ValueError};
use super::{
    LogFormat, OtlpCompression, OtlpProtocol, ProxyHop, ResolveAt, ResolverMode, Secret,
    SelectPolicy,
};
use crate::scope::ScopeMode;

/// `s` as written, with the user name and password of a `scheme://user:pass@host` authority replaced by `***`.
pub fn hide_userinfo(s: &str) -> std::borrow::Cow<'_, str> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return s.into();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]).into(),
        None => s.into(),
    }
}

/// A seed: an absolute `http`/`https` URL with a host.
pub(super) fn seed_url(s: &str) -> Result<url::Url, ValueError> {
    // A seed may carry a user name and password: never shown.
    let bad = |problem| ValueError::Url {
        role: UrlRole::Seed,
        shown: hide_userinfo(s).into_owned(),
        problem,
    };
    let url = url::Url::parse(s).map_err(|e| bad(UrlProblem::Syntax(e)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(UrlProblem::Scheme {
            found: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    Ok(url)
}

/// A regular expression; the error carries the regex crate's own description.
pub(super) fn regex(s: &str) -> Result<Regex, ValueError> {
    Regex::new(s).map_err(|e| ValueError::Regex {
        pattern: s.to_owned(),
        reason: regex_reason(&e),
    })
}

/// The essential line of a regex error ("error: unclosed group" becomes "unclosed group").
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| super::errors::one_line(&text), str::to_owned)
}

/// A `traps.strip_params` entry: a parameter name (no `=`, `&`, `;`, `#`, whitespace or control characters),
/// optionally ending in `*`; kept lowercase (names match case-insensitively).
pub(super) fn strip_param(s: &str) -> Result<String, ValueError> {
    let name = s.strip_suffix('*').unwrap_or(s);
    if name.is_empty() {
        return Err(ValueError::NoParameterName { text: s.to_owned() });
    }
    if let Some(c) = name.chars().find(|c| {
        matches!(c, '=' | '&' | ';' | '#' | '*' | '?' | '/') || c.is_whitespace() || c.is_control()
    }) {
        return Err(ValueError::ParameterCharacter {
            text: s.to_owned(),
            found: c,
        });
    }
    Ok(s.to_ascii_lowercase())
}

/// A User-Agent header value: non-empty printable ASCII.
pub(super) fn user_agent(s: &str) -> Result<String, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if let Some((i, c)) = s
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii() || c.is_ascii_control())
    {
        return Err(ValueError::NotPrintableAscii {
            found: c,
            at: i + 1,
        });
    }
    Ok(s.to_owned())
}

/// One EnvFilter-like directive: `level`, `target`, `target[span]=level`, `target=level`.
static DIRECTIVE: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<target>[A-Za-z_][A-Za-z0-9_\-]*(?:::[A-Za-z0-9_\-]+)*)?(?P<span>\[[^\]]*\])?(?:=(?P<level>[A-Za-z]+|[0-5]))?$",
    )
});

fn is_level(s: &str) -> bool {
    LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(s))
        || matches!(s, "0" | "1" | "2" | "3" | "4" | "5")
}

/// A tracing filter directive list such as `info` or `warn,crawl_core=debug`, checked loosely.
pub(super) fn log_level(s: &str) -> Result<String, ValueError> {
    let re = DIRECTIVE
        .as_ref()
        .map_err(|e| ValueError::DirectivePattern {
            reason: e.to_string(),
        })?;
    let directives: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        return Err(ValueError::NoLogDirective);
    }
    for d in directives {
        if is_level(d) {
            continue;
        }
        let Some(caps) = re.captures(d) else {
            return Err(ValueError::LogDirective {
                directive: d.to_owned(),
            });
        };
        let target = caps.name("target").map(|m| m.as_str());
        let span = caps.name("span");
        match caps.name("level").map(|m| m.as_str()) {
            Some(level) => {
                if target.is_none() && span.is_none() {
                    return Err(ValueError::LogDirectiveTarget {
                        directive: d.to_owned(),
                    });
                }
                if !is_level(level) {
                    return Err(ValueError::LogLevel {
                        level: level.to_owned(),
                        directive: d.to_owned(),
                    });
                }
            }
            None => {
                // A bare word is a target for EnvFilter, but a near-miss of a level is a typo.
                if let Some(word) = target.filter(|t| span.is_none() && !t.contains("::"))
                    && !is_level(word)
                    && let Some(level) = closest(word, LOG_LEVELS.iter().copied())
                {
                    return Err(ValueError::LogLevelTypo {
                        word: word.to_owned(),
                        suggestion: level,
                    });
                }
            }
        }
    }
    Ok(s.to_owned())
}

fn one_of<T: Copy>(s: &str, allowed: &[(&'static str, T)]) -> Result<T, ValueError> {
    if let Some((_, v)) = allowed.iter().find(|(name, _)| *name == s) {
        return Ok(*v);
    }
    Err(ValueError::UnknownName {
        text: s.to_owned(),
        expected: allowed.iter().map(|(n, _)| *n).collect(),
    })
}

/// `host`, `domain` or `any`.
pub(super) fn scope(s: &str) -> Result<ScopeMode, ValueError> {
    one_of(
        s,
        &[
            ("host", ScopeMode::Host),
            ("domain", ScopeMode::Domain),
            ("any", ScopeMode::Any),
        ],
    )
}

/// `auto`, `text` or `json`.
pub(super) fn log_format(s: &str) -> Result<LogFormat, ValueError> {
    one_of(
        s,
        &[
            ("auto", LogFormat::Auto),
            ("text", LogFormat::Text),
            ("json", LogFormat::Json),
        ],
    )
}

/// `grpc` or `http/protobuf`; `""` = from the environment.
pub(super) fn otlp_protocol(s: &str) -> Result<Option<OtlpProtocol>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    one_of(
        s,
        &[
            ("grpc", OtlpProtocol::Grpc),
            ("http/protobuf", OtlpProtocol::HttpProtobuf),
        ],
    )
    .map(Some)
}

/// `none` or `gzip`; `""` = from the environment.
pub(super) fn otlp_compression(s: &str) -> Result<Option<OtlpCompression>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    one_of(
        s,
        &[
            ("none", OtlpCompression::None),
            ("gzip", OtlpCompression::Gzip),
        ],
    )
    .map(Some)
}

/// `detect`, `doh`, `doh-first` or `plain`.
pub(super) fn resolver_mode(s: &str) -> Result<ResolverMode, ValueError> {
    one_of(
        s,
        &[
            ("detect", ResolverMode::Detect),
            ("doh", ResolverMode::Doh),
            ("doh-first", ResolverMode::DohFirst),
            ("plain", ResolverMode::Plain),
        ],
    )
}

/// A DNS server `ip:port` (`[v6]:port` for IPv6); a bare address means port 53.
pub(super) fn nameserver(s: &str) -> Result<SocketAddr, ValueError> {
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
pub(super) fn ip(s: &str) -> Result<IpAddr, ValueError> {
    s.parse()
        .map_err(|_| ValueError::IpAddress { text: s.to_owned() })
}

/// An IP address or `address/prefix` block, kept as written (surrounding spaces trimmed).
pub(super) fn ip_or_cidr(s: &str) -> Result<String, ValueError> {
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

/// A DoH endpoint: an absolute `https` URL with a host.
pub(super) fn doh_url(s: &str) -> Result<url::Url, ValueError> {
    let bad = |problem| ValueError::Url {
        role: UrlRole::Doh,
        shown: redact_credentials(s),
        problem,
    };
    let url = url::Url::parse(s).map_err(|e| bad(UrlProblem::Syntax(e)))?;
    if url.scheme() != "https" {
        return Err(bad(UrlProblem::Scheme {
            found: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    Ok(url)
}

/// A host name for `resolver.hosts`: IDNA-normalised, lowercase, without trailing dot.
pub(super) fn host_name(s: &str) -> Result<String, ValueError> {
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    if trimmed.is_empty() {
        return Err(ValueError::EmptyName(NameRole::HostName));
    }
    let invalid = |reason| ValueError::HostName {
        text: s.to_owned(),
        reason,
    };
    match url::Host::parse(trimmed) {
        Ok(url::Host::Domain(d)) if !d.contains("..") && !d.ends_with('.') => Ok(d),
        Ok(url::Host::Domain(_)) => Err(invalid(None)),
        Ok(_) => Err(ValueError::IpNotHostName { text: s.to_owned() }),
        Err(e) => Err(invalid(Some(e))),
    }
}

/// The first part of WARC file names: letters, digits, `.`, `_` and `-` (the parts are separated by `-`).
pub(super) fn warc_prefix(s: &str) -> Result<String, ValueError> {
    if s.is_empty() || s.len() > 64 {
        return Err(ValueError::WarcPrefixLength);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(ValueError::WarcPrefixCharacter);
    }
    Ok(s.to_owned())
}

/// A non-empty filesystem path (kept as written; `from_file` resolves relative ones).
pub(super) fn path(s: &str) -> Result<PathBuf, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if s.contains('\0') {
        return Err(ValueError::NulCharacter);
    }
    Ok(PathBuf::from(s))
}

/// An http or https URL with a host and without a user name or password, and the text to show it by (any user
/// name and password hidden); `role` names it in the errors.
pub(super) fn http_url(s: &str, role: UrlRole) -> Result<(url::Url, String), ValueError> {
    let shown = redact_credentials(s);
    let bad = |problem| ValueError::Url {
        role,
        shown: shown.clone(),
        problem,
    };
    let url = url::Url::parse(s).map_err(|e| bad(UrlProblem::Syntax(e)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(UrlProblem::Scheme {
            found: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(UrlProblem::Credentials));
    }
    Ok((url, shown))
}

/// An OTLP/gRPC collector `http(s)://host:port`: explicit port (not 0), no credentials, no
/// path other than `/`, no query or fragment. `""` = none.
pub(super) fn otlp_endpoint(s: &str) -> Result<Option<url::Url>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    let (url, shown) = http_url(s, UrlRole::OtlpEndpoint)?;
    let bad = |problem| {
        Err(ValueError::Url {
            role: UrlRole::OtlpEndpoint,
            shown: shown.clone(),
            problem,
        })
    };
    // `Url::port` hides a port equal to the scheme's default, so look at the text as written.
    if url.port().is_none() && !has_explicit_port(s) {
        return bad(UrlProblem::NoPort);
    }
    if url.port() == Some(0) {
        return bad(UrlProblem::PortZero);
    }
    if url.path() != "/" {
        return bad(UrlProblem::Path {
            path: url.path().to_owned(),
        });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return bad(UrlProblem::QueryOrFragment);
    }
    Ok(Some(url))
}

/// True when the authority of `scheme://authority/...` ends in `:port` with a non-empty port.
fn has_explicit_port(s: &str) -> bool {
    let rest = s.split_once("://").map_or(s, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // For `[v6]:port` only what follows the bracket can be the port.
    let after_host = host_port.rsplit_once(']').map_or(host_port, |(_, p)| p);
    after_host
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty())
}

/// A `service.name`: non-empty, without control characters.
pub(super) fn service_name(s: &str) -> Result<String, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if let Some((i, c)) = s.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(ValueError::ControlCharacter {
            found: c,
            at: i + 1,
        });
    }
    Ok(s.to_owned())
}

/// A listen address `ip:port` (`[v6]:port`; port 0 = any free port); `""` = off.
pub(super) fn listen_addr(s: &str) -> Result<Option<SocketAddr>, ValueError> {
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

/// `round-robin`, `least-failures` or `sticky`.
pub(super) fn select_policy(s: &str) -> Result<SelectPolicy, ValueError> {
    one_of(
        s,
        &[
            ("round-robin", SelectPolicy::RoundRobin),
            ("least-failures", SelectPolicy::LeastFailures),
            ("sticky", SelectPolicy::Sticky),
        ],
    )
}

/// `remote` or `local`.
pub(super) fn resolve_at(s: &str) -> Result<ResolveAt, ValueError> {
    one_of(
        s,
        &[("remote", ResolveAt::Remote), ("local", ResolveAt::Local)],
    )
}

/// A chain name (the `<name>` of `[proxy.chains.<name>]`): letters, digits, `-` and `_`, not
/// the reserved `direct`.
pub(super) fn chain_name(s: &str) -> Result<String, ValueError> {
    if s.is_empty() {
        return Err(ValueError::EmptyName(NameRole::ChainName));
    }
    if s == DIRECT {
        return Err(ValueError::ReservedChainName);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ValueError::ChainNameCharacter {
            shown: redact_credentials(s),
        });
    }
    Ok(s.to_owned())
}

/// A reference to a chain in `proxy.default` or `proxy.rules[].use`: `direct` or a declared name.
pub(super) fn chain_ref(s: &str, declared: &[String]) -> Result<String, ValueError> {
    if s == DIRECT || declared.iter().any(|d| d == s) {
        return Ok(s.to_owned());
    }
    let names = declared
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(DIRECT));
    Err(ValueError::UnknownChain {
        shown: redact_credentials(s),
        suggestion: closest(s, names).map(str::to_owned),
    })
}

/// A host glob for `proxy.rules[].hosts`: labels of letters, digits, `-`, `_` and `*` (IP
/// literals too), lowercased, non-ASCII labels converted to their `xn--` form, trailing dot
/// removed.
pub(super) fn host_pattern(s: &str) -> Result<String, ValueError> {
    let text = || s.to_owned();
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    if trimmed.is_empty() {
        return Err(ValueError::EmptyName(NameRole::HostPattern));
    }
    let mut labels = Vec::new();
    for label in trimmed.split('.') {
        if label.is_empty() {
            return Err(ValueError::HostPatternEmptyLabel { text: text() });
        }
        if label.is_ascii() {
            let ok = label.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'*' | b':' | b'[' | b']')
            });
            if !ok {
                return Err(ValueError::HostPatternCharacter { text: text() });
            }
            labels.push(label.to_ascii_lowercase());
        } else if label.contains('*') {
            return Err(ValueError::HostPatternWildcardLabel { text: text() });
        } else {
            match url::Host::parse(label) {
                Ok(url::Host::Domain(d)) if !d.contains('.') => labels.push(d),
                _ => return Err(ValueError::HostPatternLabel { text: text() }),
            }
        }
    }
    Ok(labels.join("."))
}

/// A hop `socks5://[user:pass@]host:port`. Credentials are percent-decoded and must be 1 to
/// 255 bytes each (RFC 1929); messages show the hop as `socks5://***@host:port`.
pub(super) fn proxy_hop(s: &str) -> Result<ProxyHop, ValueError> {
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

/// The candidate closest to `name` by edit distance (case-insensitive), if close enough to be
/// a plausible typo: at most a third of the longer name's length, and at least 1.
pub(super) fn closest<'s>(
    name: &str,
    candidates: impl Iterator<Item = &'s str>,
) -> Option<&'s str> {
    let lower = name.to_lowercase();
    let mut best: Option<(usize, &'s str)> = None;
    for cand in candidates {
        let limit = (lower.chars().count().max(cand.chars().count()) / 3).max(1);
        let d = edit_distance(&lower, &cand.to_lowercase());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}
