//! What the tokenizer's tags mean for extraction: the open elements, the namespace (HTML, SVG, MathML) that decides
//! how an element's text is read, and which extraction handler an element or a text node goes to.
//!
//! It follows the model lol_html uses (which the extraction reproduces): a stack of open elements where an end tag
//! closes everything up to the last open element of its name and void elements are never open; a namespace stack
//! entered at `<svg>`/`<math>`, left at their end tags and at the HTML elements that break out of foreign content,
//! with the HTML and MathML text integration points. The handlers are the selectors of the lol_html version, in
//! its order: the `<meta charset>` check, `svg title, math title`, the link elements, the `<title>` and
//! `<noscript>` text, the requisite elements and the `<style>` text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::ops::Range;

use super::collect::{Attrs, Collector, Kind};
use super::scan::{Abort, Attr, NameHash, Sink, Tag, TextMode};

/// Tag names the model needs (lol_html's hashes of them).
mod names {
    use super::NameHash;

    macro_rules! tags {
        ($($id:ident = $s:literal),+ $(,)?) => {
            $(pub(crate) const $id: NameHash = NameHash::of($s);)+
        };
    }

    tags! {
        A = "a", AREA = "area", AUDIO = "audio", B = "b", BASE = "base", BASEFONT = "basefont",
        BGSOUND = "bgsound", BIG = "big", BLOCKQUOTE = "blockquote", BODY = "body", BR = "br",
        CENTER = "center", CODE = "code", COL = "col", DD = "dd", DESC = "desc", DIV = "div", DL = "dl",
        DT = "dt", EM = "em", EMBED = "embed", FONT = "font", FOREIGN_OBJECT = "foreignObject",
        FRAME = "frame", H1 = "h1", H2 = "h2", H3 = "h3", H4 = "h4", H5 = "h5", H6 = "h6", HEAD = "head",
        HR = "hr", I = "i", IFRAME = "iframe", IMG = "img", INPUT = "input", KEYGEN = "keygen", LI = "li",
        LINK = "link", LISTING = "listing", MATH = "math", MENU = "menu", META = "meta", MI = "mi",
        MN = "mn", MO = "mo", MS = "ms", MTEXT = "mtext", NOBR = "nobr", NOEMBED = "noembed",
        NOFRAMES = "noframes", NOSCRIPT = "noscript", OBJECT = "object", OL = "ol", P = "p",
        PARAM = "param", PLAINTEXT = "plaintext", PRE = "pre", RUBY = "ruby", S = "s", SCRIPT = "script",
        SMALL = "small", SOURCE = "source", SPAN = "span", STRIKE = "strike", STRONG = "strong",
        STYLE = "style", SUB = "sub", SUP = "sup", SVG = "svg", TABLE = "table", TEXTAREA = "textarea",
        TITLE = "title", TRACK = "track", TT = "tt", U = "u", UL = "ul", VAR = "var", VIDEO = "video",
        WBR = "wbr", XMP = "xmp",
    }
}

use names::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Html,
    Svg,
    MathMl,
}

/// Open elements with a handler or a selector that depends on them.
#[derive(Default)]
struct Open {
    title: u32,
    noscript: u32,
    style: u32,
    svg: u32,
    math: u32,
}

impl Open {
    fn text_handlers(&self) -> bool {
        self.title + self.noscript + self.style > 0
    }

    fn apply(&mut self, flags: u8, add: bool) {
        if flags == 0 {
            return;
        }
        for (bit, count) in [
            (F_TITLE, &mut self.title),
            (F_NOSCRIPT, &mut self.noscript),
            (F_STYLE, &mut self.style),
            (F_SVG, &mut self.svg),
            (F_MATH, &mut self.math),
        ] {
            if flags & bit != 0 {
                *count = if add {
                    *count + 1
                } else {
                    count.saturating_sub(1)
                };
            }
        }
    }
}

const F_TITLE: u8 = 1;
const F_NOSCRIPT: u8 = 2;
const F_STYLE: u8 = 4;
const F_SVG: u8 = 8;
const F_MATH: u8 = 16;

/// An open element.
struct Item {
    hash: NameHash,
    /// The name in the input (compared when the hash is empty).
    name: Range<usize>,
    flags: u8,
}

/// Above this depth, end tags are checked against per-name counts first, so that a stray end tag costs O(1)
/// however many elements are open.
const DEEP: usize = 256;

/// The `<meta charset>` check of the document pass (lol_html switches the decoding at such a tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Charset {
    /// Not checked (text of `<noscript>` read again).
    Off,
    /// No charset declared yet.
    Open,
    /// `http-equiv=content-type` declared UTF-8: later declarations still matter if it was not taken.
    Soft,
    /// `<meta charset>` declared UTF-8: later declarations are ignored.
    Found,
}

/// The extraction side of the tokenizer for one pass.
pub(super) struct Tree<'c> {
    collector: &'c mut Collector,
    agent_token: &'c str,
    embeds: bool,
    charset: Charset,
    ns_stack: Vec<Ns>,
    stack: Vec<Item>,
    open: Open,
    /// Open elements per name key, kept once the stack is deep.
    name_counts: Option<HashMap<u64, u32>>,
    hasher: RandomState,
}

impl<'c> Tree<'c> {
    pub(super) fn new(
        collector: &'c mut Collector,
        agent_token: &'c str,
        embeds: bool,
        charset: Charset,
    ) -> Tree<'c> {
        Tree {
            collector,
            agent_token,
            embeds,
            charset,
            ns_stack: vec![Ns::Html],
            stack: Vec::with_capacity(64),
            open: Open::default(),
            name_counts: None,
            hasher: RandomState::new(),
        }
    }

    fn ns(&self) -> Ns {
        self.ns_stack.last().copied().unwrap_or(Ns::Html)
    }

    fn enter(&mut self, ns: Ns) {
        self.ns_stack.push(ns);
    }

    fn leave(&mut self) {
        if self.ns_stack.len() > 1 {
            self.ns_stack.pop();
        }
    }

    /// The namespace change a start tag causes and the text mode it switches to.
    fn start_feedback(&mut self, input: &[u8], tag: &Tag<'_>) -> Option<TextMode> {
        let h = tag.hash;
        if h == SVG {
            self.enter(Ns::Svg);
            return None;
        }
        if h == MATH {
            self.enter(Ns::MathMl);
            return None;
        }
        let ns = self.ns();
        if ns == Ns::Html {
            return text_mode(h);
        }
        if exits_foreign_content(h) {
            self.leave();
            return None;
        }
        let integration = match ns {
            Ns::Svg => h == DESC || h == TITLE || h == FOREIGN_OBJECT,
            _ => h == MI || h == MO || h == MN || h == MS || h == MTEXT,
        };
        if integration {
            if !tag.self_closing {
                self.enter(Ns::Html);
            }
            return None;
        }
        if h == FONT {
            let exits = tag.attrs.iter().any(|a| {
                let name = &input[a.name.clone()];
                [&b"color"[..], b"size", b"face"]
                    .iter()
                    .any(|n| name.eq_ignore_ascii_case(n))
            });
            if exits {
                self.leave();
            }
            return None;
        }
        if h.is_empty() && ns == Ns::MathMl {
            if !tag.self_closing
                && input[tag.name.clone()].eq_ignore_ascii_case(b"annotation-xml")
                && tag.attrs.iter().any(|a| {
                    a.value.as_ref().is_some_and(|v| {
                        let v = &input[v.clone()];
                        input[a.name.clone()].eq_ignore_ascii_case(b"encoding")
                            && (v.eq_ignore_ascii_case(b"text/html")
                                || v.eq_ignore_ascii_case(b"application/xhtml+xml"))
                    })
                })
            {
                self.enter(Ns::Html);
            }
            return None;
        }
        None
    }

    /// The namespace change an end tag causes.
    fn end_feedback(&mut self, input: &[u8], tag: &Tag<'_>) {
        let h = tag.hash;
        let ns = self.ns();
        if ns == Ns::Html {
            let n = self.ns_stack.len();
            if n < 2 {
                return;
            }
            let prev = self.ns_stack[n - 2];
            let exit = match prev {
                Ns::MathMl => h == MI || h == MO || h == MN || h == MS || h == MTEXT,
                Ns::Svg => h == DESC || h == TITLE || h == FOREIGN_OBJECT,
                Ns::Html => false,
            };
            if exit
                || (h.is_empty()
                    && prev == Ns::MathMl
                    && input[tag.name.clone()].eq_ignore_ascii_case(b"annotation-xml"))
            {
                self.leave();
            }
            return;
        }
        if (ns == Ns::Svg && h == SVG) || (ns == Ns::MathMl && h == MATH) || h == P || h == BR {
            self.leave();
        }
    }

    fn name_key(&self, input: &[u8], hash: NameHash, name: &Range<usize>) -> u64 {
        name_key(&self.hasher, input, hash, name)
    }

    fn push(&mut self, input: &[u8], item: Item) {
        self.open.apply(item.flags, true);
        if self.name_counts.is_some() {
            let key = self.name_key(input, item.hash, &item.name);
            if let Some(counts) = self.name_counts.as_mut() {
                *counts.entry(key).or_insert(0) += 1;
            }
        }
        self.stack.push(item);
        if self.name_counts.is_none() && self.stack.len() > DEEP {
            let mut counts = HashMap::new();
            for it in &self.stack {
                *counts
                    .entry(self.name_key(input, it.hash, &it.name))
                    .or_insert(0u32) += 1;
            }
            self.name_counts = Some(counts);
        }
    }

    /// Closes the last open element named like `tag` and everything opened after it.
    fn pop_up_to(&mut self, input: &[u8], tag: &Tag<'_>) {
        if let Some(counts) = &self.name_counts
            && !counts.contains_key(&self.name_key(input, tag.hash, &tag.name))
        {
            return;
        }
        let same = |it: &Item| {
            if tag.hash.is_empty() {
                it.hash.is_empty()
                    && input[it.name.clone()].eq_ignore_ascii_case(&input[tag.name.clone()])
            } else {
                it.hash == tag.hash
            }
        };
        let Some(at) = self.stack.iter().rposition(same) else {
            return;
        };
        for it in &self.stack[at..] {
            self.open.apply(it.flags, false);
            if let Some(counts) = self.name_counts.as_mut() {
                let key = name_key(&self.hasher, input, it.hash, &it.name);
                if let Some(n) = counts.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        counts.remove(&key);
                    }
                }
            }
        }
        self.stack.truncate(at);
    }

    /// The `<meta>` charset check: stop (and leave the document to lol_html) when it may declare anything but
    /// UTF-8.
    fn charset_meta(&mut self, el: &View<'_>) -> Result<(), Abort> {
        if matches!(self.charset, Charset::Off | Charset::Found) {
            return Ok(());
        }
        if let Some(label) = el.get("charset") {
            if is_utf8_label(&label) {
                self.charset = Charset::Found;
                return Ok(());
            }
            return Err(Abort);
        }
        if !el
            .get("http-equiv")
            .is_some_and(|h| h.eq_ignore_ascii_case("content-type"))
        {
            return Ok(());
        }
        let Some(content) = el.get("content") else {
            return Ok(());
        };
        if !content.to_ascii_lowercase().contains("charset") {
            return Ok(());
        }
        if content_type_is_utf8(&content) {
            self.charset = Charset::Soft;
            return Ok(());
        }
        Err(Abort)
    }
}

impl Sink for Tree<'_> {
    fn start_tag(&mut self, input: &[u8], tag: &Tag<'_>) -> Result<TextMode, Abort> {
        let switch = self.start_feedback(input, tag);
        let ns = self.ns();
        let h = tag.hash;
        let el = View {
            input,
            attrs: tag.attrs,
        };
        let kind = kind_of(h);
        if h == META && self.charset != Charset::Off {
            self.charset_meta(&el)?;
        }
        if h == TITLE && self.open.svg + self.open.math > 0 {
            self.collector.foreign_title();
        }
        let link = match kind {
            Kind::A | Kind::Area | Kind::Link | Kind::Base => el.has("href"),
            Kind::Frame | Kind::Iframe => el.has("src"),
            Kind::Meta | Kind::Title => true,
            _ => false,
        };
        if link {
            self.collector.element(kind, &el, self.agent_token);
        }
        if self.embeds {
            let embed = match kind {
                Kind::Img | Kind::Source | Kind::Video | Kind::Audio => true,
                Kind::Track | Kind::Script | Kind::Embed | Kind::Input => el.has("src"),
                Kind::Object => el.has("data"),
                _ => false,
            } || el.has("style");
            if embed {
                self.collector.embed_element(kind, &el);
            }
        }
        let has_content = if ns == Ns::Html {
            !is_void(h)
        } else {
            !tag.self_closing
        };
        if has_content {
            let mut flags = 0;
            if h == TITLE {
                flags |= F_TITLE;
            } else if h == NOSCRIPT {
                flags |= F_NOSCRIPT;
            } else if h == STYLE && self.embeds {
                flags |= F_STYLE;
            } else if h == SVG {
                flags |= F_SVG;
            } else if h == MATH {
                flags |= F_MATH;
            }
            let item = Item {
                hash: h,
                name: tag.name.clone(),
                flags,
            };
            self.push(input, item);
        }
        match switch {
            // lol_html goes back to data after `name=>` but keeps the element's text state for when it next
            // switches between scanning for tags and lexing, and what follows depends on that: it reads the
            // document itself.
            Some(_) if tag.eq_gt => Err(Abort),
            Some(mode) => Ok(mode),
            None => Ok(TextMode::Data),
        }
    }

    fn end_tag(&mut self, input: &[u8], tag: &Tag<'_>) {
        self.end_feedback(input, tag);
        self.pop_up_to(input, tag);
    }

    fn cdata_allowed(&self) -> bool {
        self.ns() != Ns::Html
    }

    #[inline]
    fn text(&mut self, text: &[u8]) {
        if self.open.text_handlers() {
            self.handle_text(text);
        }
    }
}

impl Tree<'_> {
    /// Text inside a title, noscript or style element.
    fn handle_text(&mut self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        if self.open.title > 0 {
            self.collector.title_text(&text, true);
        }
        if self.open.noscript > 0 {
            self.collector.noscript_text(&text, true);
        }
        if self.open.style > 0 {
            self.collector.style_text(&text, true);
        }
    }
}

/// The key of a tag name in the per-name counts: its hash, or a keyed hash of its lowercase bytes (a collision
/// only costs a search of the stack).
fn name_key(hasher: &RandomState, input: &[u8], hash: NameHash, name: &Range<usize>) -> u64 {
    if hash.is_empty() {
        hasher.hash_one(input[name.clone()].to_ascii_lowercase())
    } else {
        hash.0
    }
}

/// The attributes of a start tag.
struct View<'a> {
    input: &'a [u8],
    attrs: &'a [Attr],
}

impl View<'_> {
    fn find(&self, name: &str) -> Option<&Attr> {
        self.attrs
            .iter()
            .find(|a| self.input[a.name.clone()].eq_ignore_ascii_case(name.as_bytes()))
    }

    fn has(&self, name: &str) -> bool {
        self.find(name).is_some()
    }
}

impl Attrs for View<'_> {
    fn get(&self, name: &str) -> Option<Cow<'_, str>> {
        let attr = self.find(name)?;
        Some(match &attr.value {
            Some(v) => {
                let bytes = &self.input[v.clone()];
                match std::str::from_utf8(bytes) {
                    Ok(s) => Cow::Borrowed(s),
                    Err(_) => String::from_utf8_lossy(bytes),
                }
            }
            None => Cow::Borrowed(""),
        })
    }
}

fn kind_of(h: NameHash) -> Kind {
    match h {
        A => Kind::A,
        AREA => Kind::Area,
        FRAME => Kind::Frame,
        IFRAME => Kind::Iframe,
        LINK => Kind::Link,
        BASE => Kind::Base,
        META => Kind::Meta,
        TITLE => Kind::Title,
        IMG => Kind::Img,
        SOURCE => Kind::Source,
        VIDEO => Kind::Video,
        AUDIO => Kind::Audio,
        TRACK => Kind::Track,
        SCRIPT => Kind::Script,
        EMBED => Kind::Embed,
        OBJECT => Kind::Object,
        INPUT => Kind::Input,
        _ => Kind::Other,
    }
}

/// The text state an HTML start tag switches to.
fn text_mode(h: NameHash) -> Option<TextMode> {
    match h {
        TITLE | TEXTAREA => Some(TextMode::RcData),
        PLAINTEXT => Some(TextMode::PlainText),
        SCRIPT => Some(TextMode::ScriptData),
        STYLE | IFRAME | XMP | NOEMBED | NOFRAMES | NOSCRIPT => Some(TextMode::RawText),
        _ => None,
    }
}

fn is_void(h: NameHash) -> bool {
    matches!(
        h,
        AREA | BASE
            | BASEFONT
            | BGSOUND
            | BR
            | COL
            | EMBED
            | HR
            | IMG
            | INPUT
            | KEYGEN
            | LINK
            | META
            | PARAM
            | SOURCE
            | TRACK
            | WBR
    )
}

fn exits_foreign_content(h: NameHash) -> bool {
    matches!(
        h,
        B | BIG
            | BLOCKQUOTE
            | BODY
            | BR
            | CENTER
            | CODE
            | DD
            | DIV
            | DL
            | DT
            | EM
            | EMBED
            | H1
            | H2
            | H3
            | H4
            | H5
            | H6
            | HEAD
            | HR
            | I
            | IMG
            | LI
            | LISTING
            | MENU
            | META
            | NOBR
            | OL
            | P
            | PRE
            | RUBY
            | S
            | SMALL
            | SPAN
            | STRONG
            | STRIKE
            | SUB
            | SUP
            | TABLE
            | TT
            | U
            | UL
            | VAR
    )
}

/// The WHATWG labels of UTF-8 (surrounding ASCII whitespace ignored, any case).
fn is_utf8_label(label: &str) -> bool {
    let label = label.trim_matches(|c| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' '));
    [
        "utf-8",
        "utf8",
        "unicode-1-1-utf-8",
        "unicode11utf8",
        "unicode20utf8",
        "x-unicode20utf8",
    ]
    .iter()
    .any(|l| label.eq_ignore_ascii_case(l))
}

/// Whether a `content` of the form `type/subtype; charset=<utf-8 label>` (quoted or not, one parameter) declares
/// UTF-8. Any other form answers `false`, which leaves the document to lol_html.
fn content_type_is_utf8(content: &str) -> bool {
    let Some((mime, param)) = content.split_once(';') else {
        return false;
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    let Some((top, sub)) = mime.split_once('/') else {
        return false;
    };
    if !token(top) || !token(sub) {
        return false;
    }
    let param = param.trim_start_matches(' ');
    let Some(value) = param
        .get(..8)
        .filter(|p| p.eq_ignore_ascii_case("charset="))
        .map(|_| &param[8..])
    else {
        return false;
    };
    let value = match value.strip_prefix('"') {
        Some(quoted) => match quoted.strip_suffix('"') {
            Some(v) => v,
            None => return false,
        },
        None => value,
    };
    token(value) && is_utf8_label(value)
}
