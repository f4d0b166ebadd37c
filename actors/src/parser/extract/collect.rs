//! What extraction keeps from the elements and text handed to it (by the tokenizer or by lol_html): raw link and
//! requisite references, unique up to the caps, `<base>`, the canonical link, robots directives, the title and the
//! `<noscript>` text; and the resolution of it all into an [`ExtractedPage`] once the document has been read.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use super::super::resolve_cache::PageResolver;
use super::{ExtractOptions, ExtractedPage, Link, LinkKind};
use super::{MAX_RAW_HREF, MAX_RAW_TITLE, clean_href, collapse_title, rel_has, resolve_base};
use crate::parser::css::css_urls;
use crate::parser::entities::decode_entities;
use crate::parser::values::{refresh_url, srcset_urls};
use crawl_core::canon::canonicalize_relative;
use url::Url;

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

/// The elements extraction distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    A,
    Area,
    Frame,
    Iframe,
    Link,
    Base,
    Meta,
    Title,
    Img,
    Source,
    Video,
    Audio,
    Track,
    Script,
    Embed,
    Object,
    Input,
    Other,
}

impl Kind {
    pub(super) fn of(tag: &str) -> Kind {
        match tag {
            "a" => Kind::A,
            "area" => Kind::Area,
            "frame" => Kind::Frame,
            "iframe" => Kind::Iframe,
            "link" => Kind::Link,
            "base" => Kind::Base,
            "meta" => Kind::Meta,
            "title" => Kind::Title,
            "img" => Kind::Img,
            "source" => Kind::Source,
            "video" => Kind::Video,
            "audio" => Kind::Audio,
            "track" => Kind::Track,
            "script" => Kind::Script,
            "embed" => Kind::Embed,
            "object" => Kind::Object,
            "input" => Kind::Input,
            _ => Kind::Other,
        }
    }
}

/// An element's attributes as written (character references not decoded), by ASCII-lowercase name; the first
/// of duplicates wins.
pub(super) trait Attrs {
    fn get(&self, name: &str) -> Option<Cow<'_, str>>;
}

/// Hashes that are already keyed hashes: used as they are.
#[derive(Default)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

const NONE: u32 = u32::MAX;

/// Unique references a page is expected to have at most, without growing its tables.
const RAW_CAPACITY: usize = 128;

/// Finds strings stored elsewhere (entry `i` is whatever the caller's lookup returns for `i`) by a keyed 64-bit
/// hash (foldhash with a per-process random seed: a page cannot choose colliding links, and a short link hashes in
/// a fraction of SipHash's time); entries with equal hashes are chained and compared in full, so lookups are exact.
pub(super) struct StrIndex {
    hasher: foldhash::quality::RandomState,
    first: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    next: Vec<u32>,
}

impl StrIndex {
    pub(super) fn with_capacity(n: usize) -> StrIndex {
        StrIndex {
            hasher: foldhash::quality::RandomState::default(),
            first: HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
            next: Vec::with_capacity(n),
        }
    }

    pub(super) fn hash(&self, s: &str) -> u64 {
        self.hasher.hash_one(s.as_bytes())
    }

    /// The entry equal to `s` (whose hash is `h`).
    pub(super) fn find<'a>(
        &self,
        h: u64,
        s: &str,
        get: impl Fn(usize) -> &'a str,
    ) -> Option<usize> {
        let mut i = *self.first.get(&h)?;
        while i != NONE {
            if get(i as usize) == s {
                return Some(i as usize);
            }
            i = self.next[i as usize];
        }
        None
    }

    /// Records the next entry, whose hash is `h`.
    pub(super) fn insert(&mut self, h: u64) {
        let idx = u32::try_from(self.next.len()).unwrap_or(NONE - 1);
        let prev = self.first.insert(h, idx).unwrap_or(NONE);
        self.next.push(prev);
    }
}

/// A unique raw reference awaiting resolution.
struct RawEntry {
    start: usize,
    end: usize,
    kind: LinkKind,
    nofollow: bool,
    occurrences: usize,
}

/// Unique raw references (in one buffer) up to a cap, in document order; references past the cap are only
/// counted.
struct RawSet {
    text: String,
    entries: Vec<RawEntry>,
    index: StrIndex,
    cap: usize,
    dropped: usize,
}

impl RawSet {
    fn new(cap: usize, expected: usize) -> RawSet {
        RawSet {
            text: String::with_capacity(expected * 32),
            entries: Vec::with_capacity(expected),
            index: StrIndex::with_capacity(expected.min(cap)),
            cap,
            dropped: 0,
        }
    }

    fn add(&mut self, href: &str, kind: LinkKind, nofollow: impl FnOnce() -> bool) {
        let h = self.index.hash(href);
        let (text, entries) = (&self.text, &self.entries);
        let found = self
            .index
            .find(h, href, |i| &text[entries[i].start..entries[i].end]);
        if let Some(i) = found {
            self.entries[i].occurrences += 1;
            return;
        }
        if self.entries.len() >= self.cap {
            self.dropped += 1;
            return;
        }
        let start = self.text.len();
        self.text.push_str(href);
        self.entries.push(RawEntry {
            start,
            end: self.text.len(),
            kind,
            nofollow: nofollow(),
            occurrences: 1,
        });
        self.index.insert(h);
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &RawEntry)> {
        self.entries.iter().map(|e| (&self.text[e.start..e.end], e))
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
    /// [`MAX_RAW_TITLE`] bytes were kept.
    full: bool,
    raw: String,
}

pub(super) struct Collector {
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
    pub(super) fn new(opts: &ExtractOptions<'_>) -> Collector {
        Collector {
            links: RawSet::new(opts.max_links, RAW_CAPACITY),
            embeds: RawSet::new(opts.max_links, if opts.embeds { RAW_CAPACITY } else { 0 }),
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

    /// The `<noscript>` text collected so far (to be read as markup).
    pub(super) fn take_noscript(&mut self) -> String {
        std::mem::take(&mut self.noscript)
    }

    /// A `<title>` inside SVG or MathML (reported before [`Collector::element`] for the same element).
    pub(super) fn foreign_title(&mut self) {
        self.title.foreign = true;
    }

    /// A link element: `a`/`area` with `href`, `frame`/`iframe` with `src`, `link`/`base` with `href`, `meta`,
    /// `title`.
    pub(super) fn element(&mut self, kind: Kind, el: &impl Attrs, agent_token: &str) {
        if self.title.open && kind != Kind::Title {
            // The title's text ended with it (title text holds no elements).
            self.title.open = false;
            self.title.done = true;
        }
        match kind {
            Kind::A => self.link(el, "href", LinkKind::Anchor),
            Kind::Area => self.link(el, "href", LinkKind::Area),
            Kind::Frame => self.link(el, "src", LinkKind::Frame),
            Kind::Iframe => self.link(el, "src", LinkKind::Iframe),
            Kind::Link => self.link_element(el),
            Kind::Base if self.base_href.is_none() => {
                self.base_href = el.get("href").map(|h| decode_entities(&h).into_owned());
            }
            Kind::Meta => self.meta(el, agent_token),
            Kind::Title => {
                let foreign = std::mem::take(&mut self.title.foreign);
                if !foreign && !self.title.done {
                    self.title.open = true;
                }
            }
            _ => {}
        }
    }

    /// `<link href>`: canonical, a document (followed as a page), or a requisite (never a page).
    fn link_element(&mut self, el: &impl Attrs) {
        let rel = el.get("rel").unwrap_or_default();
        if rel_has(&rel, "canonical") {
            if self.canonical_href.is_none() {
                self.canonical_href = el.get("href").map(|h| clean_href(&h).into_owned());
            }
            self.link(el, "href", LinkKind::Canonical);
            return;
        }
        let icon = rel
            .split_ascii_whitespace()
            .any(|t| t.to_ascii_lowercase().contains("icon"))
            || el.get("type").is_some_and(|t| {
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

    fn link(&mut self, el: &impl Attrs, attr: &str, kind: LinkKind) {
        let Some(value) = el.get(attr) else {
            return;
        };
        self.add_link(&value, kind, || {
            el.get("rel").is_some_and(|rel| rel_has(&rel, "nofollow"))
        });
    }

    fn add_link(&mut self, value: &str, kind: LinkKind, nofollow: impl FnOnce() -> bool) {
        self.links_found += 1;
        let href = clean_href(value);
        if href.len() > MAX_RAW_HREF {
            self.invalid += 1;
            return;
        }
        self.links.add(&href, kind, nofollow);
    }

    fn meta(&mut self, el: &impl Attrs, agent_token: &str) {
        if el
            .get("http-equiv")
            .is_some_and(|h| h.trim().eq_ignore_ascii_case("refresh"))
        {
            let content = el.get("content").unwrap_or_default();
            if let Some(target) = refresh_url(&content) {
                self.add_link(target, LinkKind::Refresh, || false);
            }
            return;
        }
        let Some(name) = el.get("name") else {
            return;
        };
        let name = name.trim();
        let applies = name.eq_ignore_ascii_case("robots")
            || (!agent_token.is_empty() && name.eq_ignore_ascii_case(agent_token));
        if !applies {
            return;
        }
        let content = el.get("content").unwrap_or_default();
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

    /// An element that may reference requisites: `img`, `source`, `video`, `audio`, `track[src]`, `script[src]`,
    /// `embed[src]`, `object[data]`, `input[src]`, or any element with a `style` (only with embeds on).
    pub(super) fn embed_element(&mut self, kind: Kind, el: &impl Attrs) {
        match kind {
            Kind::Img | Kind::Source => {
                self.embed_attr(el, "src");
                if let Some(srcset) = el.get("srcset") {
                    let srcset = decode_entities(&srcset);
                    for url in srcset_urls(&srcset) {
                        self.add_embed(url);
                    }
                }
            }
            Kind::Video => {
                self.embed_attr(el, "src");
                self.embed_attr(el, "poster");
            }
            Kind::Audio | Kind::Track | Kind::Script | Kind::Embed => self.embed_attr(el, "src"),
            Kind::Object => self.embed_attr(el, "data"),
            Kind::Input => {
                let image = el
                    .get("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("image"));
                if image {
                    self.embed_attr(el, "src");
                }
            }
            _ => {}
        }
        if let Some(style) = el.get("style") {
            let style = decode_entities(&style).into_owned();
            self.css(&style);
        }
    }

    fn embed_attr(&mut self, el: &impl Attrs, attr: &str) {
        if let Some(value) = el.get(attr) {
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
        self.embeds.add(href, LinkKind::Anchor, || false);
    }

    /// The requisites of a style sheet, block or attribute. The scan reads at most twice the cap of references
    /// (the cap counts what it cuts among those).
    fn css(&mut self, css: &str) {
        for url in css_urls(css, self.embeds.cap.saturating_mul(2)) {
            self.add_embed(&url);
        }
    }

    /// Text inside a `<style>` (with embeds on); `last` ends the block.
    pub(super) fn style_text(&mut self, text: &str, last: bool) {
        self.style.push_str(text);
        if last {
            let css = std::mem::take(&mut self.style);
            self.css(&css);
        }
    }

    /// Text inside a `<noscript>`; `last` ends its text node.
    pub(super) fn noscript_text(&mut self, text: &str, last: bool) {
        self.noscript.push_str(text);
        if last {
            self.noscript.push('\n');
        }
    }

    /// Text inside a `<title>`; `last` ends its text node. At most [`MAX_RAW_TITLE`] bytes are kept, however the
    /// text is cut into chunks.
    pub(super) fn title_text(&mut self, text: &str, last: bool) {
        if !self.title.open || self.title.done {
            return;
        }
        if !self.title.full {
            let room = MAX_RAW_TITLE - self.title.raw.len();
            if text.len() <= room {
                self.title.raw.push_str(text);
            } else {
                let mut cut = room;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                self.title.raw.push_str(&text[..cut]);
                self.title.full = true;
            }
        }
        if last {
            self.title.open = false;
            self.title.done = true;
        }
    }

    pub(super) fn finish(self, page_url: &Url) -> ExtractedPage {
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
        let mut resolver = PageResolver::new(effective);
        let mut seen = StrIndex::with_capacity(self.links.entries.len());
        page.links.reserve(self.links.entries.len());
        for (href, raw) in self.links.iter() {
            match resolver.resolve_at(href) {
                Ok((url, at)) => {
                    let h = seen.hash(url.as_str());
                    let links = &page.links;
                    if seen
                        .find(h, url.as_str(), |i| links[i].url.as_str())
                        .is_none()
                    {
                        seen.insert(h);
                        page.links.push(Link {
                            url,
                            kind: raw.kind,
                            nofollow: raw.nofollow,
                            at,
                        });
                    }
                }
                Err(_) => page.invalid += raw.occurrences,
            }
        }
        let mut seen = StrIndex::with_capacity(self.embeds.entries.len());
        for (href, _) in self.embeds.iter() {
            if let Ok(url) = resolver.resolve(href) {
                let h = seen.hash(url.as_str());
                let embeds = &page.embeds;
                if seen.find(h, url.as_str(), |i| embeds[i].as_str()).is_none() {
                    seen.insert(h);
                    page.embeds.push(url);
                }
            }
        }
        drop(resolver);
        page.base = base;
        page
    }
}
