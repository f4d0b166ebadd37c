//! Streaming link extraction from HTML pages (lol_html).
//!
//! [`extract_links`] feeds the body to an `HtmlRewriter` in chunks, discarding its output, and
//! collects the raw values of `a[href]`, `area[href]`, `frame[src]`, `iframe[src]` and
//! `link[href]` (rel canonical/alternate), plus `<base href>` and `<meta name=robots>` directives.
//! Because `<base>` applies to the whole document even when it comes after some links, raw hrefs
//! are kept until the end and resolved (via `crawl_core::canon::canonicalize_relative`) once the
//! document has been read. Memory is bounded by the number of links (at most [`MAX_LINKS`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crawl_core::canon::{MAX_URL_LEN, canonicalize_relative};
use lol_html::html_content::Element;
use lol_html::{ElementContentHandlers, HtmlRewriter, MemorySettings, Selector, Settings};
use url::Url;

/// Maximum number of links kept per page; the rest are only counted in `links_found`.
pub const MAX_LINKS: usize = 10_000;

/// Input is fed to the rewriter in chunks of this size.
const CHUNK_SIZE: usize = 16 * 1024;

/// Upper bound on lol_html's internal buffers (a single tag split across chunks is buffered).
const MAX_PARSER_MEMORY: usize = 64 * 1024 * 1024;

/// Raw hrefs longer than this (after dropping the fragment) are counted invalid without parsing.
const MAX_RAW_HREF: usize = MAX_URL_LEN * 2;

const SELECTOR: &str =
    "a[href], area[href], frame[src], iframe[src], link[href], base[href], meta[name]";

/// Which element a link came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Anchor,
    Area,
    Frame,
    Iframe,
    Canonical,
    Alternate,
}

/// One canonical outgoing link.
#[derive(Debug, Clone)]
pub struct Link {
    pub url: Url,
    pub kind: LinkKind,
    /// The element's `rel` contains `nofollow`.
    pub nofollow: bool,
}

/// Everything extracted from one page.
#[derive(Debug, Clone, Default)]
pub struct ExtractedPage {
    /// Unique by URL, first occurrence wins, in document order.
    pub links: Vec<Link>,
    /// Raw link attributes seen, before dedup and validation (includes links over the cap).
    pub links_found: usize,
    /// Link attributes that did not yield a crawlable http(s) URL.
    pub invalid: usize,
    pub meta_nofollow: bool,
    pub meta_noindex: bool,
    /// The first `link rel=canonical` that resolved to a valid URL.
    pub canonical: Option<Url>,
    /// The document base from the first `<base href>`, if it was valid.
    pub base: Option<Url>,
}

/// Link extraction failed (only when the HTML parser gives up, e.g. its memory limit).
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("html parse failed: {0}")]
    Html(String),
}

/// Extracts links and robots directives from `html`, fetched from `page_url`.
///
/// `agent_token` is the crawler's robots token (e.g. `mybot`): `<meta name="mybot">` is honoured
/// like `<meta name="robots">`. Non-UTF-8 bytes are decoded lossily; `<meta charset>` is honoured.
pub fn extract_links(
    html: &[u8],
    page_url: &Url,
    agent_token: &str,
) -> Result<ExtractedPage, ExtractError> {
    let mut collector = Collector::default();
    {
        let selector: Selector = SELECTOR
            .parse()
            .map_err(|e: lol_html::errors::SelectorError| ExtractError::Html(e.to_string()))?;
        let handler = |el: &mut Element<'_, '_>| {
            collector.element(el, agent_token);
            Ok(())
        };
        let settings = Settings::new()
            .with_strict(false)
            .with_adjust_charset_on_meta_tag(true)
            .with_memory_settings(
                MemorySettings::new().with_max_allowed_memory_usage(MAX_PARSER_MEMORY),
            )
            .append_element_content_handler((
                Cow::Owned(selector),
                ElementContentHandlers::default().element(handler),
            ));
        let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
        for chunk in html.chunks(CHUNK_SIZE) {
            rewriter
                .write(chunk)
                .map_err(|e| ExtractError::Html(e.to_string()))?;
        }
        rewriter
            .end()
            .map_err(|e| ExtractError::Html(e.to_string()))?;
    }
    Ok(collector.finish(page_url))
}

/// A unique raw href awaiting resolution.
struct RawLink {
    order: usize,
    kind: LinkKind,
    nofollow: bool,
    occurrences: usize,
}

#[derive(Default)]
struct Collector {
    raw: HashMap<String, RawLink>,
    links_found: usize,
    invalid: usize,
    base_href: Option<String>,
    canonical_href: Option<String>,
    meta_nofollow: bool,
    meta_noindex: bool,
}

impl Collector {
    fn element(&mut self, el: &Element<'_, '_>, agent_token: &str) {
        let tag = el.tag_name();
        match tag.as_str() {
            "a" => self.link(el, "href", LinkKind::Anchor),
            "area" => self.link(el, "href", LinkKind::Area),
            "frame" => self.link(el, "src", LinkKind::Frame),
            "iframe" => self.link(el, "src", LinkKind::Iframe),
            "link" => {
                let rel = el.get_attribute("rel").unwrap_or_default();
                if rel_has(&rel, "canonical") {
                    if self.canonical_href.is_none() {
                        self.canonical_href = el.get_attribute("href").map(|h| clean_href(&h));
                    }
                    self.link(el, "href", LinkKind::Canonical);
                } else if rel_has(&rel, "alternate") && !rel_has(&rel, "stylesheet") {
                    self.link(el, "href", LinkKind::Alternate);
                }
            }
            "base" if self.base_href.is_none() => {
                self.base_href = el.get_attribute("href").map(|h| decode_entities(&h).into());
            }
            "meta" => self.meta(el, agent_token),
            _ => {}
        }
    }

    fn link(&mut self, el: &Element<'_, '_>, attr: &str, kind: LinkKind) {
        let Some(value) = el.get_attribute(attr) else {
            return;
        };
        self.links_found += 1;
        let href = clean_href(&value);
        if href.len() > MAX_RAW_HREF {
            self.invalid += 1;
            return;
        }
        if let Some(existing) = self.raw.get_mut(&href) {
            existing.occurrences += 1;
            return;
        }
        if self.raw.len() >= MAX_LINKS {
            return;
        }
        let nofollow = el
            .get_attribute("rel")
            .is_some_and(|rel| rel_has(&rel, "nofollow"));
        let order = self.raw.len();
        self.raw.insert(
            href,
            RawLink {
                order,
                kind,
                nofollow,
                occurrences: 1,
            },
        );
    }

    fn meta(&mut self, el: &Element<'_, '_>, agent_token: &str) {
        let Some(name) = el.get_attribute("name") else {
            return;
        };
        let name = name.trim();
        let applies = name.eq_ignore_ascii_case("robots")
            || (!agent_token.is_empty() && name.eq_ignore_ascii_case(agent_token));
        if !applies {
            return;
        }
        let content = el.get_attribute("content").unwrap_or_default();
        for token in content
            .split(|c: char| c == ',' || c.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            if token.eq_ignore_ascii_case("nofollow") {
                self.meta_nofollow = true;
            } else if token.eq_ignore_ascii_case("noindex") {
                self.meta_noindex = true;
            } else if token.eq_ignore_ascii_case("none") {
                self.meta_nofollow = true;
                self.meta_noindex = true;
            }
        }
    }

    fn finish(self, page_url: &Url) -> ExtractedPage {
        let base = self
            .base_href
            .as_deref()
            .and_then(|href| resolve_base(page_url, href));
        let effective = base.as_ref().unwrap_or(page_url);

        let mut raw: Vec<(String, RawLink)> = self.raw.into_iter().collect();
        raw.sort_unstable_by_key(|(_, r)| r.order);

        let mut page = ExtractedPage {
            links_found: self.links_found,
            invalid: self.invalid,
            meta_nofollow: self.meta_nofollow,
            meta_noindex: self.meta_noindex,
            canonical: self
                .canonical_href
                .as_deref()
                .and_then(|h| canonicalize_relative(effective, h).ok()),
            ..ExtractedPage::default()
        };
        let mut seen: HashSet<Url> = HashSet::with_capacity(raw.len());
        for (href, r) in raw {
            match canonicalize_relative(effective, &href) {
                Ok(url) => {
                    if seen.insert(url.clone()) {
                        page.links.push(Link {
                            url,
                            kind: r.kind,
                            nofollow: r.nofollow,
                        });
                    }
                }
                Err(_) => page.invalid += r.occurrences,
            }
        }
        page.base = base;
        page
    }
}

/// Resolves `<base href>` as WHATWG does: failures and `data:`/`javascript:` fall back to the page.
fn resolve_base(page_url: &Url, href: &str) -> Option<Url> {
    let trimmed = href.trim_matches(|c: char| c.is_ascii_whitespace());
    if trimmed.len() > MAX_RAW_HREF {
        return None;
    }
    let mut url = page_url.join(trimmed).ok()?;
    if matches!(url.scheme(), "data" | "javascript") {
        return None;
    }
    url.set_fragment(None);
    Some(url)
}

/// Decodes entities and drops the fragment (irrelevant after canonicalisation, helps dedup).
fn clean_href(value: &str) -> String {
    let decoded = decode_entities(value);
    match decoded.find('#') {
        Some(i) => decoded[..i].to_string(),
        None => decoded.into_owned(),
    }
}

/// Whether a space-separated `rel` value contains `token` (ASCII case-insensitive).
fn rel_has(rel: &str, token: &str) -> bool {
    rel.split_ascii_whitespace()
        .any(|t| t.eq_ignore_ascii_case(token))
}

/// Named references decoded in attribute values (the ones that matter in URLs).
const NAMED: &[(&str, char)] = &[
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("quot", '"'),
    ("apos", '\''),
    ("nbsp", '\u{a0}'),
    ("Tab", '\t'),
    ("NewLine", '\n'),
    ("sol", '/'),
    ("quest", '?'),
    ("equals", '='),
    ("num", '#'),
    ("percnt", '%'),
    ("colon", ':'),
    ("semi", ';'),
    ("comma", ','),
    ("period", '.'),
    ("excl", '!'),
    ("plus", '+'),
    ("dollar", '$'),
    ("lowbar", '_'),
    ("commat", '@'),
    ("lpar", '('),
    ("rpar", ')'),
    ("lsqb", '['),
    ("rsqb", ']'),
    ("lcub", '{'),
    ("rcub", '}'),
    ("verbar", '|'),
    ("ast", '*'),
    ("copy", '©'),
    ("reg", '®'),
];

/// Legacy references that are also recognised without a trailing semicolon.
const LEGACY: &[&str] = &["amp", "lt", "gt", "quot", "nbsp", "copy", "reg"];

/// Windows-1252 mapping of numeric references 0x80..=0x9F (HTML spec).
const C1: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž', '\u{8f}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}', 'ž', 'Ÿ',
];

/// Decodes character references in an attribute value, following the HTML rules for
/// attributes: a legacy named reference without `;` followed by `=` or an alphanumeric is kept.
fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('&') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        match decode_one(after) {
            Some((ch, used)) => {
                out.push(ch);
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Decodes one reference at the start of `s` (just after `&`): the char and bytes consumed.
fn decode_one(s: &str) -> Option<(char, usize)> {
    let bytes = s.as_bytes();
    if let Some(num) = s.strip_prefix('#') {
        let (hex, digits_start) = match num.as_bytes().first() {
            Some(b'x' | b'X') => (true, 2),
            _ => (false, 1),
        };
        let digits = &bytes[digits_start..];
        let len = digits
            .iter()
            .take_while(|b| {
                if hex {
                    b.is_ascii_hexdigit()
                } else {
                    b.is_ascii_digit()
                }
            })
            .count();
        if len == 0 {
            return None;
        }
        let mut value: u32 = 0;
        for &d in &digits[..len] {
            let v = char::from(d)
                .to_digit(if hex { 16 } else { 10 })
                .unwrap_or(0);
            value = value
                .saturating_mul(if hex { 16 } else { 10 })
                .saturating_add(v);
        }
        let mut used = digits_start + len;
        if bytes.get(used) == Some(&b';') {
            used += 1;
        }
        return Some((numeric_char(value), used));
    }
    let name_len = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    let name = &s[..name_len];
    let with_semi = bytes.get(name_len) == Some(&b';');
    if with_semi && let Some(&(_, ch)) = NAMED.iter().find(|(n, _)| *n == name) {
        return Some((ch, name_len + 1));
    }
    // Legacy form without ';': the longest legacy prefix, unless followed by '=' or alphanumeric.
    let legacy = LEGACY
        .iter()
        .filter(|n| name.starts_with(**n))
        .max_by_key(|n| n.len())?;
    let next = bytes.get(legacy.len());
    if next.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'=') {
        return None;
    }
    let ch = NAMED.iter().find(|(n, _)| n == legacy).map(|&(_, c)| c)?;
    Some((ch, legacy.len()))
}

fn numeric_char(value: u32) -> char {
    match value {
        0 => '\u{fffd}',
        0x80..=0x9f => C1[(value - 0x80) as usize],
        v => char::from_u32(v).unwrap_or('\u{fffd}'),
    }
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
