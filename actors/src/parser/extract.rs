//! Link extraction from HTML pages.
//!
//! [`extract_links`] collects what a browser without JavaScript would follow: `a[href]`, `area[href]`,
//! `frame[src]`, `iframe[src]`, `<link href>` whose rel names a document (canonical, alternate, next, prev, index,
//! contents, search, help...) and `<meta http-equiv=refresh>` targets; plus `<base href>`, `<meta name=robots>`
//! directives and the `<title>`.
//!
//! The document is read by a tokenizer of its own (`extract/scan.rs`, with the element model of
//! `extract/tree.rs`) that finds tags the way lol_html's streaming rewriter does. lol_html, which this module used
//! before, still reads the rare documents where its result depends on its decoding or its internal modes: a `<meta>`
//! that may declare a charset other than UTF-8 (lol_html decodes the rest of the document with it), or a raw text
//! element's start tag ending `name=>`. Both feed the same collector (`extract/collect.rs`), and the tests check
//! that they agree.
//!
//! `<noscript>` is read as raw text (as a browser with scripting enabled does); its text is collected and read
//! again as markup afterwards, as a browser with scripting disabled sees it (mdBook's sidebar lives there).
//!
//! With [`ExtractOptions::embeds`] it also collects page requisites: images (src, srcset), picture/source, video
//! (src, poster), audio, track, embed, object, `<link>` icons, stylesheets, preloads and manifests, script src,
//! and CSS `url()`/`@import` in `<style>` blocks and style attributes. Requisites are never page links: an icon
//! or stylesheet `<link>` is not followed as a page whatever the options.
//!
//! Because `<base>` applies to the whole document even when it comes after some links, raw hrefs are kept until the
//! end and resolved (via `crawl_core::canon::canonicalize_relative`) once the document has been read. Memory is
//! bounded by the caps on links and requisites ([`ExtractOptions::max_links`]); what the caps cut is counted.
//! Unique references are found by a keyed 64-bit hash (confirmed by comparing the strings), raw ones before
//! resolution (each is resolved once) and resolved ones after.

use std::borrow::Cow;

use super::entities::decode_entities;
use crawl_core::canon::MAX_URL_LEN;
use crawl_core::record::MAX_TITLE_CHARS;
use url::Url;

mod collect;
mod lol;
mod scan;
mod tree;

use collect::Collector;
use tree::{Charset, Tree};

/// The default number of links kept per page (`parser.max_links_per_page`).
pub const MAX_LINKS: usize = 10_000;

/// Input is fed to lol_html in chunks of this size.
const CHUNK_SIZE: usize = 16 * 1024;

/// Raw hrefs longer than this (after dropping the fragment) are counted invalid without parsing.
const MAX_RAW_HREF: usize = MAX_URL_LEN * 2;

/// Raw title text kept (before collapsing whitespace); far more than [`MAX_TITLE_CHARS`] needs.
const MAX_RAW_TITLE: usize = 64 * 1024;

/// How many times `<noscript>` text is read again as markup (a noscript inside one is read on the next pass).
const NOSCRIPT_PASSES: usize = 2;

/// Which element a link came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    Anchor,
    Area,
    Frame,
    Iframe,
    Canonical,
    Alternate,
    /// `<link rel>` naming a document (next, prev, index, contents, search, help...).
    Related,
    /// `<meta http-equiv="refresh">`.
    Refresh,
}

/// One canonical outgoing link.
#[derive(Debug, Clone)]
pub struct Link {
    /// The canonical URL.
    pub url: String,
    pub kind: LinkKind,
    /// The element's `rel` contains `nofollow`.
    pub nofollow: bool,
    /// Where the URL's parts lie, when it was joined as strings (no need to find them again).
    pub at: Option<crawl_core::urlparts::PartsAt>,
}

/// What to collect.
#[derive(Debug, Clone, Copy)]
pub struct ExtractOptions<'a> {
    /// The crawler's robots token (e.g. `mybot`): `<meta name="mybot">` is honoured like `<meta name="robots">`.
    pub agent_token: &'a str,
    /// Links kept per page; requisites are capped separately at the same number.
    pub max_links: usize,
    /// Collect page requisites too.
    pub embeds: bool,
}

/// Everything extracted from one page.
#[derive(Debug, Clone, Default)]
pub struct ExtractedPage {
    /// Unique by URL, first occurrence wins, in document order (links inside `<noscript>` after the others).
    pub links: Vec<Link>,
    /// Page requisites (with [`ExtractOptions::embeds`]), canonical, unique, in document order.
    pub embeds: Vec<String>,
    /// Raw link attributes seen, before dedup and validation (includes links over the cap).
    pub links_found: usize,
    /// Link references the cap cut (each occurrence of a URL not kept).
    pub links_dropped: usize,
    /// Requisite references the cap cut.
    pub embeds_dropped: usize,
    /// Link attributes that did not yield a crawlable http(s) URL.
    pub invalid: usize,
    pub meta_nofollow: bool,
    pub meta_noindex: bool,
    /// The first `link rel=canonical` that resolved to a valid URL.
    pub canonical: Option<Url>,
    /// The document base from the first `<base href>`, if it was valid.
    pub base: Option<Url>,
    /// The first HTML `<title>`, whitespace collapsed, at most [`MAX_TITLE_CHARS`] characters; `None` when absent
    /// or empty.
    pub title: Option<String>,
}

/// Link extraction failed (only when the HTML parser gives up, e.g. its memory limit).
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("html parse failed: {0}")]
    Html(String),
}

/// Extracts links, requisites and robots directives from `html`, fetched from `page_url`.
///
/// Non-UTF-8 bytes are decoded lossily; `<meta charset>` is honoured.
pub fn extract_links(
    html: &[u8],
    page_url: &Url,
    opts: &ExtractOptions<'_>,
) -> Result<ExtractedPage, ExtractError> {
    match extract_scanned(html, page_url, opts) {
        Some(page) => Ok(page),
        // What lol_html makes of the document depends on its decoding or its internal modes: it reads it.
        None => lol::extract(html, page_url, opts),
    }
}

/// The two extractions [`extract_links`] chooses between, for the differential fuzz target (`fuzz/`).
pub mod fuzzing {
    use super::{ExtractError, ExtractOptions, ExtractedPage, Url};

    /// The tokenizer's extraction; `None` for a document that [`super::extract_links`] leaves to lol_html.
    pub fn extract_tokenizer(
        html: &[u8],
        page_url: &Url,
        opts: &ExtractOptions<'_>,
    ) -> Option<ExtractedPage> {
        super::extract_scanned(html, page_url, opts)
    }

    /// The lol_html extraction.
    pub fn extract_lol_html(
        html: &[u8],
        page_url: &Url,
        opts: &ExtractOptions<'_>,
    ) -> Result<ExtractedPage, ExtractError> {
        super::lol::extract(html, page_url, opts)
    }
}

/// Extracts with the tokenizer; `None` when a read stopped (see [`scan_pass`]).
fn extract_scanned(
    html: &[u8],
    page_url: &Url,
    opts: &ExtractOptions<'_>,
) -> Option<ExtractedPage> {
    let mut collector = Collector::new(opts);
    scan_pass(&mut collector, html, opts, Charset::Open).ok()?;
    for _ in 0..NOSCRIPT_PASSES {
        let noscript = collector.take_noscript();
        if noscript.is_empty() {
            break;
        }
        scan_pass(&mut collector, noscript.as_bytes(), opts, Charset::Off).ok()?;
    }
    Some(collector.finish(page_url))
}

/// One read of `html` (the document, or the text of its `<noscript>` elements read as markup); an error when it
/// stopped where lol_html's reading can differ: a `<meta>` that may declare a charset other than UTF-8 (in the
/// document), or a raw text element's start tag written `name=>`.
fn scan_pass(
    collector: &mut Collector,
    html: &[u8],
    opts: &ExtractOptions<'_>,
    charset: Charset,
) -> Result<(), scan::Abort> {
    let mut tree = Tree::new(collector, opts.agent_token, opts.embeds, charset);
    scan::scan(html, &mut tree)
}

/// The title as `document.title` gives it (ASCII whitespace stripped and collapsed, references decoded), cut to
/// [`MAX_TITLE_CHARS`] characters.
fn collapse_title(raw: &str) -> Option<String> {
    let decoded = decode_entities(raw);
    let mut out = String::new();
    for (n, word) in decoded
        .split(|c: char| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .enumerate()
    {
        if n > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() >= MAX_TITLE_CHARS * 4 {
            break;
        }
    }
    if out.is_empty() {
        return None;
    }
    if let Some((cut, _)) = out.char_indices().nth(MAX_TITLE_CHARS) {
        out.truncate(cut);
        out.truncate(out.trim_end().len());
    }
    Some(out)
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
fn clean_href(value: &str) -> Cow<'_, str> {
    match memchr::memchr2(b'&', b'#', value.as_bytes()) {
        None => Cow::Borrowed(value),
        Some(i) if value.as_bytes()[i] == b'#' => Cow::Borrowed(&value[..i]),
        Some(_) => {
            let mut decoded = decode_entities(value).into_owned();
            if let Some(i) = decoded.find('#') {
                decoded.truncate(i);
            }
            Cow::Owned(decoded)
        }
    }
}

/// Whether a space-separated `rel` value contains `token` (ASCII case-insensitive).
fn rel_has(rel: &str, token: &str) -> bool {
    rel.split_ascii_whitespace()
        .any(|t| t.eq_ignore_ascii_case(token))
}

/// The path of a canonical URL string (tests read links' paths).
#[cfg(test)]
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or(path)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod rules_tests;

#[cfg(test)]
mod scan_tests;
