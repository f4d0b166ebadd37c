//! Value validators for configuration strings (seed URLs, regexes, user agent, log directives,
//! enum names, paths, resolver addresses and names, the OTLP endpoint and listen addresses,
//! proxy hops, chain names and host patterns) and the "did you mean" name matcher. Each
//! validator returns the typed value or a one-line reason; reasons never contain a password.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;

use super::proxy::{DIRECT, is_scheme, redact_credentials};
use super::{
    LogFormat, OtlpCompression, OtlpProtocol, ProxyHop, ResolveAt, ResolverMode, Secret,
    SelectPolicy,
};
use crate::scope::ScopeMode;

/// A seed: an absolute `http`/`https` URL with a host.
pub(super) fn seed_url(s: &str) -> Result<url::Url, String> {
    // A seed may carry a user name and password: never shown.
    let shown = super::credentials::hide_userinfo(s);
    let url = url::Url::parse(s).map_err(|e| format!("invalid URL `{shown}`: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "URL `{shown}` must use http or https, found `{}`",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("URL `{shown}` has no host"));
    }
    Ok(url)
}

/// A regular expression; the error carries the regex crate's own description.
pub(super) fn regex(s: &str) -> Result<Regex, String> {
    Regex::new(s).map_err(|e| format!("invalid regex `{s}`: {}", regex_reason(&e)))
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
pub(super) fn strip_param(s: &str) -> Result<String, String> {
    let name = s.strip_suffix('*').unwrap_or(s);
    if name.is_empty() {
        return Err(format!("`{s}` names no parameter (a `*` needs a prefix)"));
    }
    if let Some(c) = name.chars().find(|c| {
        matches!(c, '=' | '&' | ';' | '#' | '*' | '?' | '/') || c.is_whitespace() || c.is_control()
    }) {
        return Err(format!(
            "`{s}` is not a parameter name (`{}` not allowed; `*` only at the end)",
            c.escape_default()
        ));
    }
    Ok(s.to_ascii_lowercase())
}

/// A User-Agent header value: non-empty printable ASCII.
pub(super) fn user_agent(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if let Some((i, c)) = s
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii() || c.is_ascii_control())
    {
        return Err(format!(
            "must be printable ASCII, found {:?} at character {}",
            c,
            i + 1
        ));
    }
    Ok(s.to_owned())
}

const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// One EnvFilter-like directive: `level`, `target`, `target[span]=level`, `target=level`.
static DIRECTIVE: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<target>[A-Za-z_][A-Za-z0-9_\-]*(?:::[A-Za-z0-9_\-]+)*)?(?P<span>\[[^\]]*\])?(?:=(?P<level>[A-Za-z]+|[0-5]))?$",
    )
});

fn is_level(s: &str) -> bool {
    LEVELS.iter().any(|l| l.eq_ignore_ascii_case(s))
        || matches!(s, "0" | "1" | "2" | "3" | "4" | "5")
}

/// A tracing filter directive list such as `info` or `warn,crawl_core=debug`, checked loosely.
pub(super) fn log_level(s: &str) -> Result<String, String> {
    let re = DIRECTIVE
        .as_ref()
        .map_err(|e| format!("internal error in directive pattern: {e}"))?;
    let directives: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        return Err("must not be empty (use a level such as `info`)".to_owned());
    }
    let allowed = LEVELS.join("`, `");
    for d in directives {
        if is_level(d) {
            continue;
        }
        let Some(caps) = re.captures(d) else {
            return Err(format!("invalid log directive `{d}`"));
        };
        let target = caps.name("target").map(|m| m.as_str());
        let span = caps.name("span");
        match caps.name("level").map(|m| m.as_str()) {
            Some(level) => {
                if target.is_none() && span.is_none() {
                    return Err(format!("invalid log directive `{d}`: missing target"));
                }
                if !is_level(level) {
                    return Err(format!(
                        "invalid log level `{level}` in `{d}`, expected one of `{allowed}`"
                    ));
                }
            }
            None => {
                // A bare word is a target for EnvFilter, but a near-miss of a level is a typo.
                if let Some(word) = target.filter(|t| span.is_none() && !t.contains("::"))
                    && !is_level(word)
                    && let Some(level) = closest(word, LEVELS.iter().copied())
                {
                    return Err(format!(
                        "invalid log level `{word}`; did you mean `{level}`?"
                    ));
                }
            }
        }
    }
    Ok(s.to_owned())
}

fn one_of<T: Copy>(s: &str, allowed: &[(&str, T)]) -> Result<T, String> {
    if let Some((_, v)) = allowed.iter().find(|(name, _)| *name == s) {
        return Ok(*v);
    }
    let names: Vec<String> = allowed.iter().map(|(n, _)| format!("`{n}`")).collect();
    Err(format!(
        "unknown value `{s}`, expected one of {}",
        names.join(", ")
    ))
}

/// `host`, `domain` or `any`.
pub(super) fn scope(s: &str) -> Result<ScopeMode, String> {
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
pub(super) fn log_format(s: &str) -> Result<LogFormat, String> {
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
pub(super) fn otlp_protocol(s: &str) -> Result<Option<OtlpProtocol>, String> {
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
pub(super) fn otlp_compression(s: &str) -> Result<Option<OtlpCompression>, String> {
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
pub(super) fn resolver_mode(s: &str) -> Result<ResolverMode, String> {
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
pub(super) fn nameserver(s: &str) -> Result<SocketAddr, String> {
    let addr = match s.parse::<SocketAddr>() {
        Ok(addr) => addr,
        Err(_) => match s.parse::<IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, 53),
            Err(_) => {
                return Err(format!(
                    "invalid nameserver `{s}`, expected ip:port such as `192.0.2.53:53` or `[2001:db8::53]:53`"
                ));
            }
        },
    };
    if addr.port() == 0 {
        return Err(format!("invalid nameserver `{s}`: port must not be 0"));
    }
    Ok(addr)
}

/// An IP address.
pub(super) fn ip(s: &str) -> Result<IpAddr, String> {
    s.parse().map_err(|_| format!("invalid IP address `{s}`"))
}

/// An IP address or `address/prefix` block, kept as written (surrounding spaces trimmed).
pub(super) fn ip_or_cidr(s: &str) -> Result<String, String> {
    let t = s.trim();
    let (addr, prefix) = match t.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (t, None),
    };
    let Ok(addr) = addr.parse::<IpAddr>() else {
        return Err(format!("invalid IP address or CIDR `{s}`"));
    };
    if let Some(p) = prefix {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let ok = !p.is_empty()
            && p.len() <= 3
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u8>().is_ok_and(|n| n <= max);
        if !ok {
            return Err(format!(
                "invalid CIDR `{s}`: prefix length must be 0 to {max}"
            ));
        }
    }
    Ok(t.to_owned())
}

/// A DoH endpoint: an absolute `https` URL with a host.
pub(super) fn doh_url(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("invalid URL `{s}`: {e}"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "DoH URL `{s}` must use https, found `{}`",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("DoH URL `{s}` has no host"));
    }
    Ok(url)
}

/// A host name for `resolver.hosts`: IDNA-normalised, lowercase, without trailing dot.
pub(super) fn host_name(s: &str) -> Result<String, String> {
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    if trimmed.is_empty() {
        return Err("host name must not be empty".to_owned());
    }
    match url::Host::parse(trimmed) {
        Ok(url::Host::Domain(d)) if !d.contains("..") && !d.ends_with('.') => Ok(d),
        Ok(url::Host::Domain(_)) => Err(format!("invalid host name `{s}`")),
        Ok(_) => Err(format!("`{s}` is an IP address, not a host name")),
        Err(e) => Err(format!("invalid host name `{s}`: {e}")),
    }
}

/// A non-empty filesystem path (kept as written; `from_file` resolves relative ones).
/// The first part of WARC file names: letters, digits, `.`, `_` and `-` (the parts are separated by `-`).
pub(super) fn warc_prefix(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 64 {
        return Err("must be 1 to 64 characters".to_owned());
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err("may hold only letters, digits, `.`, `_` and `-`".to_owned());
    }
    Ok(s.to_owned())
}

pub(super) fn path(s: &str) -> Result<PathBuf, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if s.contains('\0') {
        return Err("must not contain a NUL character".to_owned());
    }
    Ok(PathBuf::from(s))
}

/// An OTLP/gRPC collector `http(s)://host:port`: explicit port (not 0), no credentials, no
/// path other than `/`, no query or fragment. `""` = none.
/// An http or https URL with a host and without a user name or password, and the text to show it by (any user
/// name and password hidden). `kind` names it in a parse error, `what` in the others; `no_credentials` is the
/// error when it holds a user name or password.
pub(super) fn http_url(
    s: &str,
    kind: &str,
    what: &str,
    no_credentials: &str,
) -> Result<(url::Url, String), String> {
    let shown = redact_credentials(s);
    let url = url::Url::parse(s).map_err(|e| format!("invalid {kind} `{shown}`: {e}"))?;
    let bad = |why: &str| Err(format!("{what} `{shown}` {why}"));
    if !matches!(url.scheme(), "http" | "https") {
        return bad(&format!("must use http or https, found `{}`", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return bad("has no host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad(no_credentials);
    }
    Ok((url, shown))
}

pub(super) fn otlp_endpoint(s: &str) -> Result<Option<url::Url>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    let (url, shown) = http_url(s, "URL", "OTLP endpoint", "must not contain credentials")?;
    let bad = |why: &str| Err(format!("OTLP endpoint `{shown}` {why}"));
    // `Url::port` hides a port equal to the scheme's default, so look at the text as written.
    if url.port().is_none() && !has_explicit_port(s) {
        return bad("needs an explicit port, e.g. `http://127.0.0.1:4317`");
    }
    if url.port() == Some(0) {
        return bad("must not use port 0");
    }
    if url.path() != "/" {
        return bad(&format!(
            "must not have a path, found `{}` (the exporter adds the path of its protocol)",
            url.path()
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return bad("must not have a query or fragment");
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
pub(super) fn service_name(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if let Some((i, c)) = s.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(format!(
            "must not contain control characters, found {:?} at character {}",
            c,
            i + 1
        ));
    }
    Ok(s.to_owned())
}

/// A listen address `ip:port` (`[v6]:port`; port 0 = any free port); `""` = off.
pub(super) fn listen_addr(s: &str) -> Result<Option<SocketAddr>, String> {
    if s.is_empty() {
        return Ok(None);
    }
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(Some(addr));
    }
    let why = match s.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => "missing port",
        Ok(IpAddr::V6(_)) => "missing port (IPv6 addresses go in brackets)",
        Err(_) => "not an IP address and port",
    };
    Err(format!(
        "invalid listen address `{s}`: {why}; expected ip:port such as `127.0.0.1:9464` or `[::1]:9464` (\"\" = off)"
    ))
}

/// `round-robin`, `least-failures` or `sticky`.
pub(super) fn select_policy(s: &str) -> Result<SelectPolicy, String> {
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
pub(super) fn resolve_at(s: &str) -> Result<ResolveAt, String> {
    one_of(
        s,
        &[("remote", ResolveAt::Remote), ("local", ResolveAt::Local)],
    )
}

/// A chain name (the `<name>` of `[proxy.chains.<name>]`): letters, digits, `-` and `_`, not
/// the reserved `direct`.
pub(super) fn chain_name(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("chain name must not be empty".to_owned());
    }
    if s == DIRECT {
        return Err("`direct` is reserved (it means no proxy)".to_owned());
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "invalid chain name `{}`: use letters, digits, `-` and `_`",
            redact_credentials(s)
        ));
    }
    Ok(s.to_owned())
}

/// A reference to a chain in `proxy.default` or `proxy.rules[].use`: `direct` or a declared name.
pub(super) fn chain_ref(s: &str, declared: &[String]) -> Result<String, String> {
    if s == DIRECT || declared.iter().any(|d| d == s) {
        return Ok(s.to_owned());
    }
    let shown = redact_credentials(s);
    let names = declared
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(DIRECT));
    match closest(s, names) {
        Some(best) => Err(format!("unknown chain `{shown}`; did you mean `{best}`?")),
        None => Err(format!(
            "unknown chain `{shown}` (declare `[proxy.chains.{shown}]` or use `direct`)"
        )),
    }
}

/// A host glob for `proxy.rules[].hosts`: labels of letters, digits, `-`, `_` and `*` (IP
/// literals too), lowercased, non-ASCII labels converted to their `xn--` form, trailing dot
/// removed.
pub(super) fn host_pattern(s: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("invalid host pattern `{s}`: {why}"));
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    if trimmed.is_empty() {
        return Err("host pattern must not be empty".to_owned());
    }
    let mut labels = Vec::new();
    for label in trimmed.split('.') {
        if label.is_empty() {
            return bad("empty label");
        }
        if label.is_ascii() {
            let ok = label.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'*' | b':' | b'[' | b']')
            });
            if !ok {
                return bad("only letters, digits, `-`, `_`, `.` and `*` are allowed");
            }
            labels.push(label.to_ascii_lowercase());
        } else if label.contains('*') {
            return bad("a label with `*` must be ASCII (write the `xn--` form)");
        } else {
            match url::Host::parse(label) {
                Ok(url::Host::Domain(d)) if !d.contains('.') => labels.push(d),
                _ => return bad("not a valid host name label"),
            }
        }
    }
    Ok(labels.join("."))
}

/// A hop `socks5://[user:pass@]host:port`. Credentials are percent-decoded and must be 1 to
/// 255 bytes each (RFC 1929); messages show the hop as `socks5://***@host:port`.
pub(super) fn proxy_hop(s: &str) -> Result<ProxyHop, String> {
    let shown = redact_credentials(s);
    let bad = |why: &str| format!("invalid proxy hop `{shown}`: {why}");
    let form = "expected `socks5://[user:pass@]host:port`";
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(bad(form));
    };
    if !is_scheme(scheme) {
        return Err(bad(form));
    }
    if !scheme.eq_ignore_ascii_case("socks5") {
        let hint = if scheme.eq_ignore_ascii_case("socks5h") {
            " (write `socks5` and set `resolve = \"remote\"`)"
        } else {
            ""
        };
        return Err(format!(
            "proxy hop `{shown}` must use socks5, found `{scheme}`{hint}"
        ));
    }
    let (userinfo, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    let hostport = hostport.strip_suffix('/').unwrap_or(hostport);
    if hostport.contains(['/', '?', '#']) {
        return Err(bad("must not have a path, query or fragment"));
    }
    let (host, port) = hop_host_port(hostport).map_err(|why| bad(&why))?;
    let (username, password) = match userinfo {
        None => (None, None),
        Some(info) => {
            let Some((user, pass)) = info.split_once(':') else {
                return Err(bad(
                    "credentials need a user name and a password (`user:pass@`)",
                ));
            };
            let user = percent_decode(user).map_err(|why| bad(&why))?;
            let pass = percent_decode(pass).map_err(|why| bad(&why))?;
            for (what, v) in [("user name", &user), ("password", &pass)] {
                if v.is_empty() || v.len() > 255 {
                    return Err(bad(&format!("the {what} must be 1 to 255 bytes")));
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
fn hop_host_port(s: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(inner) = s.strip_prefix('[') {
        let Some((v6, after)) = inner.split_once(']') else {
            return Err("unclosed `[` in the host".to_owned());
        };
        let Some(port) = after.strip_prefix(':') else {
            return Err("missing port".to_owned());
        };
        let ip: std::net::Ipv6Addr = v6
            .parse()
            .map_err(|_| format!("invalid IPv6 address `{v6}`"))?;
        (ip.to_string(), port)
    } else {
        let Some((host, port)) = s.rsplit_once(':') else {
            return Err("missing port".to_owned());
        };
        if host.contains(':') {
            return Err("write IPv6 addresses in brackets, e.g. `[::1]:1080`".to_owned());
        }
        if host.is_empty() {
            return Err("missing host".to_owned());
        }
        let host = match url::Host::parse(host) {
            Ok(url::Host::Domain(d)) if !d.is_empty() && !d.contains("..") => d,
            Ok(url::Host::Domain(_)) => return Err(format!("invalid host `{host}`")),
            Ok(other) => other.to_string(),
            Err(e) => return Err(format!("invalid host `{host}`: {e}")),
        };
        (host, port)
    };
    if port.is_empty() {
        return Err("missing port".to_owned());
    }
    match port.parse::<u16>() {
        Ok(0) => Err("port must not be 0".to_owned()),
        Ok(p) if port.bytes().all(|b| b.is_ascii_digit()) => Ok((host, p)),
        _ => Err(format!("invalid port `{port}`")),
    }
}

/// Decodes `%XX` escapes; the result must be UTF-8. Messages never echo the input.
fn percent_decode(s: &str) -> Result<String, String> {
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
                return Err("invalid percent-encoding in the credentials".to_owned());
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the credentials are not valid UTF-8".to_owned())
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
