//! URL canonicalisation for the crawler.
//!
//! Every URL that enters the frontier goes through [`canonicalize`] (seeds, sitemap entries) or
//! [`canonicalize_relative`] (hrefs found in HTML), so that equal resources map to one string.
//! Parsing follows WHATWG (via the `url` crate: lowercase host, IDN to punycode, default ports
//! removed, dot segments resolved); on top of it we drop fragments and userinfo, strip the
//! trailing dot of the host, drop an empty `?` and normalise percent-encoding (RFC 3986 6.2.2).
//! The query is kept in its original order. Only `http` and `https` are accepted.
//!
//! The helpers [`authority_key`], [`host_key`], [`robots_url`] and [`path_and_query`] derive the
//! keys used by the robots.txt cache, politeness and robots matching.

use std::borrow::Cow;

use url::{Host, Position, Url};

/// Maximum length in bytes of a canonical URL; longer URLs are rejected.
pub const MAX_URL_LEN: usize = 2048;

/// Inputs longer than this are rejected before parsing (dot segments and whitespace removal can
/// shorten a URL, but never by this much in practice).
const MAX_INPUT_LEN: usize = MAX_URL_LEN * 4;

/// Why a string could not be turned into a canonical crawlable URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    /// WHATWG parsing failed.
    #[error("invalid url: {0}")]
    Parse(#[from] url::ParseError),
    /// The scheme is not http or https.
    #[error("unsupported scheme: {0}")]
    UnsupportedScheme(String),
    /// The URL has no (or an empty) host.
    #[error("url has no host")]
    NoHost,
    /// The URL (input or canonical form) is longer than [`MAX_URL_LEN`].
    #[error("url too long: {0} bytes")]
    TooLong(usize),
}

/// Canonicalises an absolute URL.
pub fn canonicalize(input: &str) -> Result<Url, CanonError> {
    let input = trim_input(input)?;
    let url = Url::parse(&input)?;
    normalize(url)
}

/// Resolves `href` (as found in an HTML attribute) against `base` and canonicalises the result.
///
/// Leading and trailing ASCII whitespace is trimmed and tabs/newlines are removed, as WHATWG does.
pub fn canonicalize_relative(base: &Url, href: &str) -> Result<Url, CanonError> {
    let href = trim_input(href)?;
    let href = same_origin_path(base, &href).unwrap_or(&href);
    let url = Url::options().base_url(Some(base)).parse(href)?;
    normalize(url)
}

/// For an absolute `href` that starts with the base's own `scheme://authority` exactly as the base writes it,
/// the path-absolute reference (from the `/` after the authority) that resolves to the same URL: the authority
/// would parse back to the base's own scheme, userinfo, host and port, and resolving the reference keeps those
/// without parsing the host again (IDNA processing, most of a link's resolution on small pages). Only for a `/`
/// followed by neither `/` nor `\`, which would start an authority of their own in a reference.
fn same_origin_path<'h>(base: &Url, href: &'h str) -> Option<&'h str> {
    if !matches!(base.scheme(), "http" | "https") {
        return None;
    }
    let rest = href.strip_prefix(&base[..Position::BeforePath])?;
    path_absolute(rest.as_bytes()).then_some(rest)
}

/// `scheme://host:port` with the port always explicit (`http://a.com:80`): the robots.txt cache key.
pub fn authority_key(url: &Url) -> String {
    let port = url.port_or_known_default().unwrap_or(0);
    authority_key_of(url.scheme(), host_key(url), port)
}

/// [`authority_key`] from its parts, put together by hand (the formatter's machinery cost four times the rest of
/// a robots gate lookup).
pub(crate) fn authority_key_of(scheme: &str, host: &str, port: u16) -> String {
    let mut digits = itoa::Buffer::new();
    let port = digits.format(port);
    let mut key = String::with_capacity(scheme.len() + host.len() + 4 + port.len());
    key.push_str(scheme);
    key.push_str("://");
    key.push_str(host);
    key.push(':');
    key.push_str(port);
    key
}

/// The host (lowercase, punycode, IPv6 in brackets): the politeness key.
pub fn host_key(url: &Url) -> &str {
    url.host_str().unwrap_or("")
}

/// `scheme://host[:port]/robots.txt` for the authority of `url`.
pub fn robots_url(url: &Url) -> Url {
    let mut robots = url.clone();
    // Both calls only fail for URLs without a host, where there is no userinfo to strip.
    let _ = robots.set_username("");
    let _ = robots.set_password(None);
    robots.set_path("/robots.txt");
    robots.set_query(None);
    robots.set_fragment(None);
    robots
}

/// The path plus query (`/p?q`), the part robots.txt rules match against.
pub fn path_and_query(url: &Url) -> &str {
    &url[Position::BeforePath..Position::AfterQuery]
}

/// Removes the query parameters and `;` path parameters (`/a;jsessionid=1F/b`) whose names match `names`
/// (`traps.strip_params`: lowercase names, a trailing `*` matches any suffix; names compare case-insensitively),
/// so that URLs differing only in a session id or a tracking tag collapse into one. An emptied query is dropped.
/// Returns whether the URL changed.
pub fn strip_params(url: &mut Url, names: &[String]) -> bool {
    if names.is_empty() {
        return false;
    }
    let mut changed = false;
    if url.path().contains(';') {
        let path: Vec<String> = url
            .path()
            .split('/')
            .map(|segment| {
                let mut parts = segment.split(';');
                let mut kept = parts.next().unwrap_or("").to_owned();
                for param in parts {
                    if param_matches(param, names) {
                        changed = true;
                    } else {
                        kept.push(';');
                        kept.push_str(param);
                    }
                }
                kept
            })
            .collect();
        if changed {
            url.set_path(&path.join("/"));
        }
    }
    if let Some(query) = url.query()
        && query.split('&').any(|p| param_matches(p, names))
    {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|p| !param_matches(p, names))
            .collect();
        let kept = kept.join("&");
        url.set_query((!kept.is_empty()).then_some(kept.as_str()));
        changed = true;
    }
    changed
}

/// Whether the name of `param` (`name=value` or `name`) matches one of `names`.
fn param_matches(param: &str, names: &[String]) -> bool {
    let name = param.split('=').next().unwrap_or("");
    !name.is_empty()
        && names.iter().any(|n| match n.strip_suffix('*') {
            Some(prefix) => {
                name.len() >= prefix.len()
                    && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
            }
            None => name.eq_ignore_ascii_case(n),
        })
}

/// Removes leading/trailing ASCII whitespace and C0 controls, and all tabs and newlines.
fn trim_input(input: &str) -> Result<Cow<'_, str>, CanonError> {
    if input.len() > MAX_INPUT_LEN {
        return Err(CanonError::TooLong(input.len()));
    }
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    if trimmed.contains(['\t', '\n', '\r']) {
        Ok(Cow::Owned(
            trimmed
                .chars()
                .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                .collect(),
        ))
    } else {
        Ok(Cow::Borrowed(trimmed))
    }
}

/// Applies the crawler's canonical form to a parsed URL.
fn normalize(mut url: Url) -> Result<Url, CanonError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(CanonError::UnsupportedScheme(other.to_string())),
    }
    let stripped_host = match url.host() {
        None => return Err(CanonError::NoHost),
        Some(Host::Domain("")) => return Err(CanonError::NoHost),
        Some(Host::Domain(d)) if d.ends_with('.') => Some(d.trim_end_matches('.').to_string()),
        Some(_) => None,
    };
    if let Some(host) = stripped_host {
        if host.is_empty() {
            return Err(CanonError::NoHost);
        }
        url.set_host(Some(&host))?;
    }
    // Cannot fail: http(s) URLs always have a host here.
    if !url.username().is_empty() || url.password().is_some() {
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    if url.fragment().is_some() {
        url.set_fragment(None);
    }

    if let Cow::Owned(path) = normalize_percent(url.path()) {
        url.set_path(&path);
    }
    if url.path().is_empty() {
        url.set_path("/");
    }
    match url.query() {
        Some("") => url.set_query(None),
        Some(q) => {
            if let Cow::Owned(query) = normalize_percent(q) {
                url.set_query(Some(&query));
            }
        }
        None => {}
    }

    let len = url.as_str().len();
    if len > MAX_URL_LEN {
        return Err(CanonError::TooLong(len));
    }
    Ok(url)
}

/// RFC 3986 6.2.2: uppercase the hex digits of escapes and decode escapes of unreserved
/// characters. A `%` not followed by two hex digits is left alone, and an escape of a hex digit
/// right after such a `%` (or `%` and one hex digit) stays encoded: decoding it would make a new
/// escape (`%%41a` is not `%Aa`), and the result would change when canonicalised again.
fn normalize_percent(s: &str) -> Cow<'_, str> {
    let bytes = s.as_bytes();
    let Some(first) = memchr_percent(bytes) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..first]);
    let mut changed = false;
    let mut i = first;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex_val(bytes[i + 1]), hex_val(bytes[i + 2]))
        {
            let v = hi * 16 + lo;
            if is_unreserved(v) && !(v.is_ascii_hexdigit() && ends_in_bare_percent(&out)) {
                out.push(char::from(v));
                changed = true;
            } else {
                let upper = [
                    b'%',
                    bytes[i + 1].to_ascii_uppercase(),
                    bytes[i + 2].to_ascii_uppercase(),
                ];
                if upper[1] != bytes[i + 1] || upper[2] != bytes[i + 2] {
                    changed = true;
                }
                out.extend(upper.iter().map(|&c| char::from(c)));
            }
            i += 3;
            continue;
        }
        // Copy the run up to the next '%' verbatim (keeps UTF-8 sequences intact).
        let next = memchr_percent(&bytes[i + 1..]).map_or(bytes.len(), |p| i + 1 + p);
        out.push_str(&s[i..next]);
        i = next;
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// Whether `out` (built by [`normalize_percent`], where every escape is pushed whole) ends with a `%`
/// that starts no escape, alone or followed by one hex digit.
fn ends_in_bare_percent(out: &str) -> bool {
    match out.as_bytes() {
        [.., b'%'] => true,
        [.., b'%', h] => h.is_ascii_hexdigit(),
        _ => false,
    }
}

fn memchr_percent(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'%')
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Whether a reference (its tabs and newlines removed) is path-absolute against an `http(s)` base: a `/`
/// followed by neither `/` nor `\`, either of which would start an authority of its own.
pub(crate) fn path_absolute(reference: &[u8]) -> bool {
    reference.first() == Some(&b'/') && !matches!(reference.get(1), Some(b'/' | b'\\'))
}

#[cfg(test)]
mod tests;
