//! Value validators for configuration strings (seed URLs, regexes, user agent, log directives,
//! enum names, paths, resolver addresses and names) and the "did you mean" name matcher. Each validator returns the typed
//! value or a one-line reason.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;

use super::{LogFormat, ResolverMode};
use crate::scope::ScopeMode;

/// A seed: an absolute `http`/`https` URL with a host.
pub(super) fn seed_url(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("invalid URL `{s}`: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "URL `{s}` must use http or https, found `{}`",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("URL `{s}` has no host"));
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
pub(super) fn path(s: &str) -> Result<PathBuf, String> {
    if s.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if s.contains('\0') {
        return Err("must not contain a NUL character".to_owned());
    }
    Ok(PathBuf::from(s))
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
