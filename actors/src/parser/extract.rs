//! Streaming link extraction from HTML pages (lol_html).
//!
//! [`extract_links`] feeds the body to an `HtmlRewriter` in chunks, discarding its output, and collects what a
//! browser without JavaScript would follow: `a[href]`, `area[href]`, `frame[src]`, `iframe[src]`, `<link href>`
//! whose rel names a document (canonical, alternate, next, prev, index, contents, search, help...) and
//! `<meta http-equiv=refresh>` targets; plus `<base href>`, `<meta name=robots>` directives and the `<title>`.
//!
//! lol_html reads `<noscript>` as raw text (as a browser with scripting enabled does); its text is collected and
//! read again as markup afterwards, as a browser with scripting disabled sees it (mdBook's sidebar lives there).
//!
//! With [`ExtractOptions::embeds`] it also collects page requisites: images (src, srcset), picture/source, video
//! (src, poster), audio, track, embed, object, `<link>` icons, stylesheets, preloads and manifests, script src,
//! and CSS `url()`/`@import` in `<style>` blocks and style attributes. Requisites are never page links: an icon
//! or stylesheet `<link>` is not followed as a page whatever the options.
//!
//! Because `<base>` applies to the whole document even when it comes after some links, raw hrefs are kept until the
//! end and resolved (via `crawl_core::canon::canonicalize_relative`) once the document has been read. Memory is
//! bounded by the caps on links and requisites ([`ExtractOptions::max_links`]); what the caps cut is counted.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use super::css::css_urls;
use super::entities::decode_entities;
use super::values::{refresh_url, srcset_urls};
use crawl_core::canon::{MAX_URL_LEN, canonicalize_relative};
use crawl_core::record::MAX_TITLE_CHARS;
use lol_html::html_content::{Element, TextChunk};
use lol_html::{ElementContentHandlers, HtmlRewriter, MemorySettings, Selector, Settings};
use url::Url;

/// The default number of links kept per page (`parser.max_links_per_page`).
pub const MAX_LINKS: usize = 10_000;

/// Input is fed to the rewriter in chunks of this size.
const CHUNK_SIZE: usize = 16 * 1024;

/// Upper bound on lol_html's internal buffers (a single tag split across chunks is buffered).
const MAX_PARSER_MEMORY: usize = 64 * 1024 * 1024;

/// Raw hrefs longer than this (after dropping the fragment) are counted invalid without parsing.
const MAX_RAW_HREF: usize = MAX_URL_LEN * 2;

/// Raw title text kept (before collapsing whitespace); far more than [`MAX_TITLE_CHARS`] needs.
const MAX_RAW_TITLE: usize = 64 * 1024;

/// How many times `<noscript>` text is read again as markup (a noscript inside one is read on the next pass).
const NOSCRIPT_PASSES: usize = 2;

const LINK_SELECTOR: &str =
    "a[href], area[href], frame[src], iframe[src], link[href], base[href], meta, title";

const EMBED_SELECTOR: &str = "img, source, video, audio, track[src], script[src], embed[src], \
     object[data], input[src], [style]";

/// `<link rel>` values that name another document: followed as pages.
const DOCUMENT_RELS: &[&str] = &[
    "next",
    "prev",
    "previous",
    "index",
    "contents",
    "toc",
    "search",
    "help",
    "first",
    "last",
    "up",
    "start",
    "chapter",
    "section",
    "subsection",
    "appendix",
    "glossary",
];

/// `<link rel>` values that name something a page needs to render: requisites, never pages.
const REQUISITE_RELS: &[&str] = &["stylesheet", "preload", "modulepreload", "manifest"];

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
    pub url: Url,
    pub kind: LinkKind,
    /// The element's `rel` contains `nofollow`.
    pub nofollow: bool,
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
    /// Page requisites (with [`ExtractOptions::embeds`]), unique, in document order.
    pub embeds: Vec<Url>,
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
    let collector = RefCell::new(Collector::new(opts));
    run_pass(&collector, html, opts, true)?;
    for _ in 0..NOSCRIPT_PASSES {
        let noscript = std::mem::take(&mut collector.borrow_mut().noscript);
        if noscript.is_empty() {
            break;
        }
        run_pass(&collector, noscript.as_bytes(), opts, false)?;
    }
    Ok(collector.into_inner().finish(page_url))
}

fn selector(s: &str) -> Result<Selector, ExtractError> {
    s.parse()
        .map_err(|e: lol_html::errors::SelectorError| ExtractError::Html(e.to_string()))
}

/// One read of `html` (the document, or the text of its `<noscript>` elements read as markup).
fn run_pass(
    collector: &RefCell<Collector>,
    html: &[u8],
    opts: &ExtractOptions<'_>,
    charset_from_meta: bool,
) -> Result<(), ExtractError> {
    let on_element = |el: &mut Element<'_, '_>| {
        collector.borrow_mut().element(el, opts);
        Ok(())
    };
    let on_embed = |el: &mut Element<'_, '_>| {
        collector.borrow_mut().embed_element(el);
        Ok(())
    };
    let on_foreign_title = |_: &mut Element<'_, '_>| {
        collector.borrow_mut().title.foreign = true;
        Ok(())
    };
    let on_title = |t: &mut TextChunk<'_>| {
        collector
            .borrow_mut()
            .title_text(t.as_str(), t.last_in_text_node());
        Ok(())
    };
    let on_noscript = |t: &mut TextChunk<'_>| {
        let mut c = collector.borrow_mut();
        c.noscript.push_str(t.as_str());
        if t.last_in_text_node() {
            c.noscript.push('\n');
        }
        Ok(())
    };
    let on_style = |t: &mut TextChunk<'_>| {
        let mut c = collector.borrow_mut();
        c.style.push_str(t.as_str());
        if t.last_in_text_node() {
            c.style_block();
        }
        Ok(())
    };
    let mut settings = Settings::new()
        .with_strict(false)
        .with_adjust_charset_on_meta_tag(charset_from_meta)
        .with_memory_settings(
            MemorySettings::new().with_max_allowed_memory_usage(MAX_PARSER_MEMORY),
        )
        // Before the main handler, which then knows that this title is not the document's.
        .append_element_content_handler((
            Cow::Owned(selector("svg title, math title")?),
            ElementContentHandlers::default().element(on_foreign_title),
        ))
        .append_element_content_handler((
            Cow::Owned(selector(LINK_SELECTOR)?),
            ElementContentHandlers::default().element(on_element),
        ))
        .append_element_content_handler((
            Cow::Owned(selector("title")?),
            ElementContentHandlers::default().text(on_title),
        ))
        .append_element_content_handler((
            Cow::Owned(selector("noscript")?),
            ElementContentHandlers::default().text(on_noscript),
        ));
    if opts.embeds {
        settings = settings
            .append_element_content_handler((
                Cow::Owned(selector(EMBED_SELECTOR)?),
                ElementContentHandlers::default().element(on_embed),
            ))
            .append_element_content_handler((
                Cow::Owned(selector("style")?),
                ElementContentHandlers::default().text(on_style),
            ));
    }
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    for chunk in html.chunks(CHUNK_SIZE) {
        rewriter
            .write(chunk)
            .map_err(|e| ExtractError::Html(e.to_string()))?;
    }
    rewriter
        .end()
        .map_err(|e| ExtractError::Html(e.to_string()))
}

/// A unique raw href awaiting resolution.
struct RawLink {
    order: usize,
    kind: LinkKind,
    nofollow: bool,
    occurrences: usize,
}

/// Unique raw hrefs up to a cap; references past the cap are only counted.
struct RawSet {
    map: HashMap<String, RawLink>,
    cap: usize,
    dropped: usize,
}

impl RawSet {
    fn new(cap: usize) -> RawSet {
        RawSet {
            map: HashMap::new(),
            cap,
            dropped: 0,
        }
    }

    fn add(&mut self, href: String, kind: LinkKind, nofollow: impl FnOnce() -> bool) {
        if let Some(existing) = self.map.get_mut(&href) {
            existing.occurrences += 1;
            return;
        }
        if self.map.len() >= self.cap {
            self.dropped += 1;
            return;
        }
        let order = self.map.len();
        let nofollow = nofollow();
        self.map.insert(
            href,
            RawLink {
                order,
                kind,
                nofollow,
                occurrences: 1,
            },
        );
    }

    fn in_order(self) -> Vec<(String, RawLink)> {
        let mut raw: Vec<(String, RawLink)> = self.map.into_iter().collect();
        raw.sort_unstable_by_key(|(_, r)| r.order);
        raw
    }
}

/// The `<title>` being read.
#[derive(Default)]
struct Title {
    /// Inside the first `<title>` that is not an SVG or MathML one.
    open: bool,
    /// The title element being handled is an SVG or MathML one.
    foreign: bool,
    done: bool,
    raw: String,
}

struct Collector {
    links: RawSet,
    embeds: RawSet,
    links_found: usize,
    invalid: usize,
    base_href: Option<String>,
    canonical_href: Option<String>,
    meta_nofollow: bool,
    meta_noindex: bool,
    title: Title,
    /// Text of the `<noscript>` elements of this pass, read as markup on the next one.
    noscript: String,
    /// Text of the current `<style>` block.
    style: String,
    embeds_on: bool,
}

impl Collector {
    fn new(opts: &ExtractOptions<'_>) -> Collector {
        Collector {
            links: RawSet::new(opts.max_links),
            embeds: RawSet::new(opts.max_links),
            links_found: 0,
            invalid: 0,
            base_href: None,
            canonical_href: None,
            meta_nofollow: false,
            meta_noindex: false,
            title: Title::default(),
            noscript: String::new(),
            style: String::new(),
            embeds_on: opts.embeds,
        }
    }

    fn element(&mut self, el: &Element<'_, '_>, opts: &ExtractOptions<'_>) {
        let tag = el.tag_name();
        if self.title.open && tag != "title" {
            // The title's text ended with it (title text holds no elements).
            self.title.open = false;
            self.title.done = true;
        }
        match tag.as_str() {
            "a" => self.link(el, "href", LinkKind::Anchor),
            "area" => self.link(el, "href", LinkKind::Area),
            "frame" => self.link(el, "src", LinkKind::Frame),
            "iframe" => self.link(el, "src", LinkKind::Iframe),
            "link" => self.link_element(el),
            "base" if self.base_href.is_none() => {
                self.base_href = el.get_attribute("href").map(|h| decode_entities(&h).into());
            }
            "meta" => self.meta(el, opts.agent_token),
            "title" => {
                let foreign = std::mem::take(&mut self.title.foreign);
                if !foreign && !self.title.done {
                    self.title.open = true;
                }
            }
            _ => {}
        }
    }

    /// `<link href>`: canonical, a document (followed as a page), or a requisite (never a page).
    fn link_element(&mut self, el: &Element<'_, '_>) {
        let rel = el.get_attribute("rel").unwrap_or_default();
        if rel_has(&rel, "canonical") {
            if self.canonical_href.is_none() {
                self.canonical_href = el.get_attribute("href").map(|h| clean_href(&h));
            }
            self.link(el, "href", LinkKind::Canonical);
            return;
        }
        let icon = rel
            .split_ascii_whitespace()
            .any(|t| t.to_ascii_lowercase().contains("icon"))
            || el.get_attribute("type").is_some_and(|t| {
                let t = t.trim().to_ascii_lowercase();
                t.starts_with("image/") || t.contains("icon")
            });
        if icon || REQUISITE_RELS.iter().any(|r| rel_has(&rel, r)) {
            if self.embeds_on {
                self.embed_attr(el, "href");
            }
            return;
        }
        if rel_has(&rel, "alternate") {
            self.link(el, "href", LinkKind::Alternate);
        } else if DOCUMENT_RELS.iter().any(|r| rel_has(&rel, r)) {
            self.link(el, "href", LinkKind::Related);
        }
    }

    fn link(&mut self, el: &Element<'_, '_>, attr: &str, kind: LinkKind) {
        let Some(value) = el.get_attribute(attr) else {
            return;
        };
        self.add_link(&value, kind, || {
            el.get_attribute("rel")
                .is_some_and(|rel| rel_has(&rel, "nofollow"))
        });
    }

    fn add_link(&mut self, value: &str, kind: LinkKind, nofollow: impl FnOnce() -> bool) {
        self.links_found += 1;
        let href = clean_href(value);
        if href.len() > MAX_RAW_HREF {
            self.invalid += 1;
            return;
        }
        self.links.add(href, kind, nofollow);
    }

    fn meta(&mut self, el: &Element<'_, '_>, agent_token: &str) {
        if el
            .get_attribute("http-equiv")
            .is_some_and(|h| h.trim().eq_ignore_ascii_case("refresh"))
        {
            let content = el.get_attribute("content").unwrap_or_default();
            if let Some(target) = refresh_url(&content) {
                self.add_link(target, LinkKind::Refresh, || false);
            }
            return;
        }
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

    /// An element that may reference requisites (only registered with embeds on).
    fn embed_element(&mut self, el: &Element<'_, '_>) {
        match el.tag_name().as_str() {
            "img" | "source" => {
                self.embed_attr(el, "src");
                if let Some(srcset) = el.get_attribute("srcset") {
                    let srcset = decode_entities(&srcset);
                    for url in srcset_urls(&srcset) {
                        self.add_embed(url);
                    }
                }
            }
            "video" => {
                self.embed_attr(el, "src");
                self.embed_attr(el, "poster");
            }
            "audio" | "track" | "script" | "embed" => self.embed_attr(el, "src"),
            "object" => self.embed_attr(el, "data"),
            "input" => {
                let image = el
                    .get_attribute("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("image"));
                if image {
                    self.embed_attr(el, "src");
                }
            }
            _ => {}
        }
        if let Some(style) = el.get_attribute("style") {
            let style = decode_entities(&style).into_owned();
            self.css(&style);
        }
    }

    fn embed_attr(&mut self, el: &Element<'_, '_>, attr: &str) {
        if let Some(value) = el.get_attribute(attr) {
            let value = decode_entities(&value).into_owned();
            self.add_embed(&value);
        }
    }

    /// A requisite reference whose character references are decoded already.
    fn add_embed(&mut self, decoded: &str) {
        let href = decoded.split('#').next().unwrap_or_default().trim();
        if href.is_empty() || href.len() > MAX_RAW_HREF {
            return;
        }
        self.embeds.add(href.to_owned(), LinkKind::Anchor, || false);
    }

    /// The requisites of a style sheet, block or attribute. The scan reads at most twice the cap of references
    /// (the cap counts what it cuts among those).
    fn css(&mut self, css: &str) {
        for url in css_urls(css, self.embeds.cap.saturating_mul(2)) {
            self.add_embed(&url);
        }
    }

    fn style_block(&mut self) {
        let css = std::mem::take(&mut self.style);
        self.css(&css);
    }

    fn title_text(&mut self, text: &str, last: bool) {
        if !self.title.open || self.title.done {
            return;
        }
        if self.title.raw.len() < MAX_RAW_TITLE {
            self.title.raw.push_str(text);
        }
        if last {
            self.title.open = false;
            self.title.done = true;
        }
    }

    fn finish(self, page_url: &Url) -> ExtractedPage {
        let base = self
            .base_href
            .as_deref()
            .and_then(|href| resolve_base(page_url, href));
        let effective = base.as_ref().unwrap_or(page_url);
        let mut page = ExtractedPage {
            links_found: self.links_found,
            links_dropped: self.links.dropped,
            embeds_dropped: self.embeds.dropped,
            invalid: self.invalid,
            meta_nofollow: self.meta_nofollow,
            meta_noindex: self.meta_noindex,
            canonical: self
                .canonical_href
                .as_deref()
                .and_then(|h| canonicalize_relative(effective, h).ok()),
            title: collapse_title(&self.title.raw),
            ..ExtractedPage::default()
        };
        let mut seen: HashSet<Url> = HashSet::with_capacity(self.links.map.len());
        for (href, r) in self.links.in_order() {
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
        let mut seen: HashSet<Url> = HashSet::with_capacity(self.embeds.map.len());
        for (href, _) in self.embeds.in_order() {
            if let Ok(url) = canonicalize_relative(effective, &href)
                && seen.insert(url.clone())
            {
                page.embeds.push(url);
            }
        }
        page.base = base;
        page
    }
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

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "extract_rules_tests.rs"]
mod rules_tests;
