//! The HTML tokenizer behind link extraction: finds tags, their attributes and the text between them, following
//! the HTML tokenizer states that decide where a tag, a comment or an element's raw text ends (the states lol_html
//! implements, whose results the extraction reproduces).
//!
//! It works on the whole document in memory: text is scanned with `memchr` for `<` (or the end of a raw text
//! element), quoted attribute values for their closing quote. Character references are left alone (they are
//! decoded where a value is used). The tree-level decisions (which text state follows a start tag, whether CDATA
//! sections are allowed) come from the [`Sink`].

use std::ops::Range;

use memchr::{memchr, memmem};

mod script;

/// How the text after a tag is tokenized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextMode {
    Data,
    /// `<title>`, `<textarea>`: text up to the matching end tag.
    RcData,
    /// `<style>`, `<iframe>`, `<noscript>`, `<xmp>`, `<noembed>`, `<noframes>`: text up to the matching end tag.
    RawText,
    /// `<script>`: like raw text, with the `<!--` escapes of the script data states.
    ScriptData,
    /// `<plaintext>`: the rest of the document is text.
    PlainText,
}

/// The hash of a tag name as lol_html computes it: up to 12 characters from `[a-z1-6]` (case-insensitive) packed
/// in 5 bits each; any other character (or a longer name) gives the empty hash, and such names compare as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct NameHash(pub(super) u64);

impl NameHash {
    pub(super) const EMPTY: NameHash = NameHash(!0);

    pub(super) const fn of(name: &str) -> NameHash {
        let bytes = name.as_bytes();
        let mut h = NameHash(0);
        let mut i = 0;
        while i < bytes.len() {
            h = h.update(bytes[i]);
            i += 1;
        }
        h
    }

    #[inline]
    pub(super) const fn update(self, ch: u8) -> NameHash {
        let h = self.0;
        if h >> (64 - 5) != 0 {
            return NameHash::EMPTY;
        }
        match ch {
            b'a'..=b'z' | b'A'..=b'Z' => NameHash((h << 5) | ((ch as u64 & 0x1f) + 5)),
            b'1'..=b'6' => NameHash((h << 5) | ((ch as u64 & 0x0f) - 1)),
            _ => NameHash::EMPTY,
        }
    }

    pub(super) const fn is_empty(self) -> bool {
        self.0 == NameHash::EMPTY.0
    }
}

/// One attribute of a start tag: byte ranges of its name and value (`None` for a bare attribute).
#[derive(Debug, Clone)]
pub(super) struct Attr {
    pub(super) name: Range<usize>,
    pub(super) value: Option<Range<usize>>,
}

/// A start or end tag as read.
pub(super) struct Tag<'t> {
    pub(super) name: Range<usize>,
    pub(super) hash: NameHash,
    /// Start tags only (end tag attributes are read past but not kept).
    pub(super) attrs: &'t [Attr],
    pub(super) self_closing: bool,
    /// The tag ended as `name=>` (an attribute with `=` and no value), after which lol_html reads data whatever
    /// the element (see the sink).
    pub(super) eq_gt: bool,
}

/// The document was not read (the sink asked to stop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Abort;

/// What the tokenizer reports to.
pub(super) trait Sink {
    /// A start tag; returns how the text after it is read.
    fn start_tag(&mut self, input: &[u8], tag: &Tag<'_>) -> Result<TextMode, Abort>;
    /// An end tag (always followed by data).
    fn end_tag(&mut self, input: &[u8], tag: &Tag<'_>);
    /// Whether `<![CDATA[` opens a CDATA section here (inside SVG or MathML).
    fn cdata_allowed(&self) -> bool;
    /// A whole text node: the bytes between two other tokens (tags, comments, doctypes, CDATA markers, the end).
    fn text(&mut self, text: &[u8]);
}

/// How a tag ended.
enum TagEnd {
    /// Just past its `>`.
    Closed {
        end: usize,
        self_closing: bool,
        eq_gt: bool,
    },
    /// The input ended inside the tag: it is dropped.
    Eof,
}

/// Where the tag parser starts after the tag name.
#[derive(Clone, Copy)]
enum After {
    BeforeAttrName,
    SelfClosing,
    Close,
}

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t' | b'\x0c')
}

/// Byte classes: whitespace, `/`, `>`, `=`.
const WS: u8 = 1;
const SLASH: u8 = 2;
const GT: u8 = 4;
const EQ: u8 = 8;

const CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b' ' as usize] = WS;
    t[b'\n' as usize] = WS;
    t[b'\r' as usize] = WS;
    t[b'\t' as usize] = WS;
    t[0x0c] = WS;
    t[b'/' as usize] = SLASH;
    t[b'>' as usize] = GT;
    t[b'=' as usize] = EQ;
    t
};

/// The first position from `at` of a byte in one of the `classes` (or the input's end).
#[inline]
fn find_class(input: &[u8], at: usize, classes: u8) -> usize {
    input[at..]
        .iter()
        .position(|&b| CLASSES[usize::from(b)] & classes != 0)
        .map_or(input.len(), |p| at + p)
}

fn starts_with_ci(input: &[u8], at: usize, upper: &[u8]) -> bool {
    input
        .get(at..at + upper.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(upper))
}

/// Tokenizes `input`, reporting to `sink`.
pub(super) fn scan<S: Sink>(input: &[u8], sink: &mut S) -> Result<(), Abort> {
    let mut scanner = Scanner {
        input,
        pos: 0,
        text_start: 0,
        attrs: Vec::new(),
        last_start: NameHash(0),
    };
    let mut mode = TextMode::Data;
    loop {
        let next = match mode {
            TextMode::Data => scanner.data(sink)?,
            TextMode::RcData | TextMode::RawText => scanner.raw(sink),
            TextMode::ScriptData => scanner.script(sink),
            TextMode::PlainText => {
                scanner.text_until(sink, input.len());
                None
            }
        };
        match next {
            Some(m) => mode = m,
            None => return Ok(()),
        }
    }
}

struct Scanner<'a> {
    input: &'a [u8],
    /// Where scanning resumes.
    pos: usize,
    /// Where the current text node began.
    text_start: usize,
    attrs: Vec<Attr>,
    /// The name of the last start tag: the end tag that closes raw text.
    last_start: NameHash,
}

impl Scanner<'_> {
    /// Ends the current text node at `end` (reporting it if not empty).
    #[inline]
    fn text_until<S: Sink>(&mut self, sink: &mut S, end: usize) {
        if end > self.text_start {
            sink.text(&self.input[self.text_start..end]);
        }
        self.text_start = end;
    }

    /// A token that is not text spans `lt..end`: the text before it ends, the next begins after it.
    #[inline]
    fn token<S: Sink>(&mut self, sink: &mut S, lt: usize, end: usize) {
        self.text_until(sink, lt);
        self.text_start = end;
        self.pos = end;
    }

    /// The text state: `Some(mode)` after a tag, `None` at the end of the input.
    fn data<S: Sink>(&mut self, sink: &mut S) -> Result<Option<TextMode>, Abort> {
        let input = self.input;
        loop {
            let Some(off) = memchr(b'<', &input[self.pos..]) else {
                self.text_until(sink, input.len());
                return Ok(None);
            };
            let lt = self.pos + off;
            match input.get(lt + 1).copied() {
                None => {
                    self.text_until(sink, input.len());
                    return Ok(None);
                }
                Some(c) if c.is_ascii_alphabetic() => {
                    return self.start_tag(sink, lt);
                }
                Some(b'/') => match input.get(lt + 2).copied() {
                    None => {
                        self.text_until(sink, input.len());
                        return Ok(None);
                    }
                    Some(c) if c.is_ascii_alphabetic() => {
                        let (hash, name_end) = self.tag_name(lt + 2);
                        return Ok(self.end_tag(sink, lt, lt + 2..name_end, hash));
                    }
                    Some(b'>') => self.token(sink, lt, lt + 3),
                    Some(_) => self.bogus_comment(sink, lt, lt + 2),
                },
                Some(b'!') => self.markup_declaration(sink, lt),
                Some(b'?') => self.bogus_comment(sink, lt, lt + 2),
                Some(_) => self.pos = lt + 1,
            }
        }
    }

    /// The name of a tag starting at `at` (its first character is a letter): its hash and end.
    #[inline]
    fn tag_name(&self, at: usize) -> (NameHash, usize) {
        let end = find_class(self.input, at, WS | SLASH | GT);
        let hash = self.input[at..end]
            .iter()
            .fold(NameHash(0), |h, &c| h.update(c));
        (hash, end)
    }

    fn start_tag<S: Sink>(&mut self, sink: &mut S, lt: usize) -> Result<Option<TextMode>, Abort> {
        let (hash, name_end) = self.tag_name(lt + 1);
        self.text_until(sink, lt);
        let mut attrs = std::mem::take(&mut self.attrs);
        attrs.clear();
        let end = self.tag_rest(name_end, Some(&mut attrs));
        let result = match end {
            TagEnd::Eof => {
                self.text_start = self.input.len();
                Ok(None)
            }
            TagEnd::Closed {
                end,
                self_closing,
                eq_gt,
            } => {
                self.last_start = hash;
                self.text_start = end;
                self.pos = end;
                let tag = Tag {
                    name: lt + 1..name_end,
                    hash,
                    attrs: &attrs,
                    self_closing,
                    eq_gt,
                };
                sink.start_tag(self.input, &tag).map(Some)
            }
        };
        self.attrs = attrs;
        result
    }

    /// An end tag whose `<` is at `lt` and name spans `name`; `None` when the input ends inside it.
    fn end_tag<S: Sink>(
        &mut self,
        sink: &mut S,
        lt: usize,
        name: Range<usize>,
        hash: NameHash,
    ) -> Option<TextMode> {
        self.text_until(sink, lt);
        match self.tag_rest(name.end, None) {
            TagEnd::Eof => {
                self.text_start = self.input.len();
                None
            }
            TagEnd::Closed { end, .. } => {
                self.text_start = end;
                self.pos = end;
                let tag = Tag {
                    name,
                    hash,
                    attrs: &[],
                    self_closing: false,
                    eq_gt: false,
                };
                sink.end_tag(self.input, &tag);
                Some(TextMode::Data)
            }
        }
    }

    /// Reads the rest of a tag from just after its name (at `at`: whitespace, `/`, `>` or the end).
    fn tag_rest(&self, at: usize, attrs: Option<&mut Vec<Attr>>) -> TagEnd {
        let after = match self.input.get(at) {
            None => return TagEnd::Eof,
            Some(b'>') => After::Close,
            Some(b'/') => After::SelfClosing,
            Some(_) => After::BeforeAttrName,
        };
        self.attributes(at + 1, after, attrs)
    }

    /// The attribute states, from `i` in the state `after`.
    fn attributes(&self, mut i: usize, after: After, mut attrs: Option<&mut Vec<Attr>>) -> TagEnd {
        let input = self.input;
        let closed = |end, self_closing, eq_gt| TagEnd::Closed {
            end,
            self_closing,
            eq_gt,
        };
        let push = |attrs: &mut Option<&mut Vec<Attr>>, name: Range<usize>, value| {
            if let Some(list) = attrs.as_deref_mut() {
                list.push(Attr { name, value });
            }
        };
        match after {
            After::Close => return closed(i, false, false),
            After::SelfClosing => match input.get(i) {
                None => return TagEnd::Eof,
                Some(b'>') => return closed(i + 1, true, false),
                Some(_) => {}
            },
            After::BeforeAttrName => {}
        }
        // Before an attribute name.
        'before_name: loop {
            let Some(&c) = input.get(i) else {
                return TagEnd::Eof;
            };
            match c {
                c if is_ws(c) => {
                    i += 1;
                    continue;
                }
                b'/' => {
                    match input.get(i + 1) {
                        None => return TagEnd::Eof,
                        Some(b'>') => return closed(i + 2, true, false),
                        Some(_) => i += 1,
                    }
                    continue;
                }
                b'>' => return closed(i + 1, false, false),
                _ => {}
            }
            // An attribute name: its first character is taken whatever it is.
            let mut name_start = i;
            i += 1;
            'name: loop {
                i = find_class(input, i, WS | EQ | SLASH | GT);
                let name = name_start..i;
                let Some(&c) = input.get(i) else {
                    return TagEnd::Eof;
                };
                let mut at_eq = c == b'=';
                if is_ws(c) {
                    // After the name: whitespace, then `=`, another attribute, `/` or `>`.
                    i += 1;
                    while input.get(i).is_some_and(|&c| is_ws(c)) {
                        i += 1;
                    }
                    match input.get(i) {
                        None => return TagEnd::Eof,
                        Some(b'=') => at_eq = true,
                        Some(b'/' | b'>') => {}
                        Some(_) => {
                            push(&mut attrs, name, None);
                            name_start = i;
                            i += 1;
                            continue 'name;
                        }
                    }
                }
                if !at_eq {
                    push(&mut attrs, name, None);
                    if input[i] == b'>' {
                        return closed(i + 1, false, false);
                    }
                    // `/`: the self-closing flag if `>` follows, else a new attribute.
                    match input.get(i + 1) {
                        None => return TagEnd::Eof,
                        Some(b'>') => return closed(i + 2, true, false),
                        Some(_) => {
                            i += 1;
                            continue 'before_name;
                        }
                    }
                }
                // Before the value.
                i += 1;
                while input.get(i).is_some_and(|&c| is_ws(c)) {
                    i += 1;
                }
                let Some(&q) = input.get(i) else {
                    return TagEnd::Eof;
                };
                match q {
                    b'"' | b'\'' => {
                        let Some(len) = memchr(q, &input[i + 1..]) else {
                            return TagEnd::Eof;
                        };
                        push(&mut attrs, name, Some(i + 1..i + 1 + len));
                        i += len + 2;
                    }
                    b'>' => {
                        push(&mut attrs, name, None);
                        return closed(i + 1, false, true);
                    }
                    _ => {
                        let start = i;
                        i = find_class(input, i, WS | GT);
                        let Some(&c) = input.get(i) else {
                            return TagEnd::Eof;
                        };
                        push(&mut attrs, name, Some(start..i));
                        if c == b'>' {
                            return closed(i + 1, false, false);
                        }
                        i += 1;
                    }
                }
                continue 'before_name;
            }
        }
    }

    /// `<!` at `lt`: a comment, a doctype, a CDATA section (in foreign content) or a bogus comment.
    fn markup_declaration<S: Sink>(&mut self, sink: &mut S, lt: usize) {
        let input = self.input;
        let at = lt + 2;
        if input[at..].starts_with(b"--") {
            let end = comment_end(input, at + 2);
            self.token(sink, lt, end);
        } else if starts_with_ci(input, at, b"DOCTYPE") {
            let end = memchr(b'>', &input[at + 7..]).map_or(input.len(), |p| at + 7 + p + 1);
            self.token(sink, lt, end);
        } else if input[at..].starts_with(b"[CDATA[") && sink.cdata_allowed() {
            self.token(sink, lt, at + 7);
            match memmem::find(&input[at + 7..], b"]]>") {
                Some(p) => {
                    let close = at + 7 + p;
                    self.token(sink, close, close + 3);
                }
                None => {
                    self.text_until(sink, input.len());
                    self.pos = input.len();
                }
            }
        } else {
            self.bogus_comment(sink, lt, at);
        }
    }

    /// A bogus comment (`<?`, `</1`, `<!x`) from `at` to the next `>`.
    fn bogus_comment<S: Sink>(&mut self, sink: &mut S, lt: usize, at: usize) {
        let end = memchr(b'>', &self.input[at..]).map_or(self.input.len(), |p| at + p + 1);
        self.token(sink, lt, end);
    }

    /// The end tag that closes raw text or RCDATA at `lt` (`</` + letters of the last start tag's name, then
    /// whitespace, `/` or `>`): its name's end, or where to resume scanning the text.
    fn closing_tag(&self, lt: usize) -> Result<usize, usize> {
        let input = self.input;
        let mut hash = NameHash(0);
        let mut i = lt + 2;
        loop {
            match input.get(i) {
                None => return Err(input.len()),
                Some(&c) if c.is_ascii_alphabetic() => {
                    hash = hash.update(c);
                    i += 1;
                }
                Some(&c) if is_ws(c) || c == b'/' || c == b'>' => break,
                Some(_) => return Err(i),
            }
        }
        if i == lt + 2 || hash != self.last_start {
            return Err(i);
        }
        Ok(i)
    }

    /// Raw text or RCDATA: text up to the end tag of the element (or the end of the input).
    fn raw<S: Sink>(&mut self, sink: &mut S) -> Option<TextMode> {
        let input = self.input;
        let mut p = self.pos;
        loop {
            let Some(off) = memchr(b'<', &input[p..]) else {
                self.text_until(sink, input.len());
                return None;
            };
            let lt = p + off;
            match input.get(lt + 1) {
                None => {
                    self.text_until(sink, input.len());
                    return None;
                }
                Some(b'/') => {}
                Some(_) => {
                    p = lt + 1;
                    continue;
                }
            }
            match self.closing_tag(lt) {
                Ok(name_end) => {
                    let hash = self.last_start;
                    return self.end_tag(sink, lt, lt + 2..name_end, hash);
                }
                Err(resume) if resume >= input.len() => {
                    self.text_until(sink, input.len());
                    return None;
                }
                Err(resume) => p = resume,
            }
        }
    }
}

/// The end (just past `>`) of a comment whose text starts at `at` (after `<!--`), or the input's end.
fn comment_end(input: &[u8], at: usize) -> usize {
    let len = input.len();
    // `<!-->` and `<!--->` end at once.
    match input.get(at) {
        Some(b'>') => return at + 1,
        Some(b'-') if input.get(at + 1) == Some(&b'>') => return at + 2,
        _ => {}
    }
    let mut p = at;
    loop {
        let Some(off) = memchr(b'-', &input[p..]) else {
            return len;
        };
        let dash = p + off;
        if input.get(dash + 1) != Some(&b'-') {
            p = dash + 1;
            continue;
        }
        // `--`: more dashes may follow, then `>` or `!>` end the comment.
        let mut q = dash + 2;
        while input.get(q) == Some(&b'-') {
            q += 1;
        }
        match input.get(q) {
            None => return len,
            Some(b'>') => return q + 1,
            Some(b'!') => match input.get(q + 1) {
                None => return len,
                Some(b'>') => return q + 2,
                // `--!-` is a dash after a dash.
                Some(b'-') => p = q + 1,
                Some(_) => p = q + 1,
            },
            Some(_) => p = q,
        }
    }
}
