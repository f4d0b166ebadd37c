//! Sitemap parsing (sitemaps.org): XML `<urlset>` / `<sitemapindex>` and plain-text sitemaps.
//!
//! A small, careful byte scanner instead of an XML crate: it understands the XML declaration,
//! processing instructions, comments, DOCTYPE, CDATA, the predefined and numeric entities,
//! namespace prefixes (`<sm:loc>`), and it only takes a `<loc>` that is a direct child of a
//! `<url>` / `<sitemap>` entry (so `<image:loc>` inside `<image:image>` is ignored). It is lenient
//! with truncated or slightly malformed documents: whatever was complete is returned. The body
//! is expected decompressed; gzip is the fetcher's job.

use std::borrow::Cow;

/// Locs longer than this are dropped (no crawlable URL is that long).
const MAX_LOC_LEN: usize = 8 * 1024;

/// Element nesting tracked exactly up to this depth; deeper elements are only counted.
const MAX_DEPTH: usize = 256;

/// `<lastmod>` and `<changefreq>` values longer than this are dropped (a W3C datetime is at most 35 bytes).
const MAX_HINT_LEN: usize = 64;

/// What kind of sitemap was parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitemapKind {
    /// `<urlset>`: locs are pages.
    UrlSet,
    /// `<sitemapindex>`: locs are further sitemaps.
    Index,
    /// Plain text, one URL per line: locs are pages.
    Text,
}

/// The result of [`parse_sitemap`].
#[derive(Debug, Clone)]
pub struct ParsedSitemap {
    pub kind: SitemapKind,
    /// The `<loc>` values (entity-decoded, trimmed), in document order. Not canonicalised.
    pub locs: Vec<String>,
    /// There were more than `max_urls` locs; the rest were not read.
    pub truncated: bool,
    /// The `<lastmod>` and `<changefreq>` of the entries that have one (XML sitemaps), by the index of their loc in
    /// `locs`, in document order.
    pub hints: Vec<LocHint>,
}

/// What a sitemap entry says of when its page changes (as written: parsing the dates is the schedule's job).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocHint {
    /// The index of the entry's loc in [`ParsedSitemap::locs`].
    pub loc: usize,
    pub lastmod: Option<String>,
    pub changefreq: Option<String>,
}

/// Why a body is not a usable sitemap.
#[derive(Debug, thiserror::Error)]
pub enum SitemapError {
    #[error("empty sitemap body")]
    Empty,
    #[error("not a sitemap: unexpected root element <{0}>")]
    UnexpectedRoot(String),
    #[error("not a sitemap: {0}")]
    NotASitemap(&'static str),
}

/// Parses a sitemap body, keeping at most `max_urls` locs.
pub fn parse_sitemap(body: &[u8], max_urls: usize) -> Result<ParsedSitemap, SitemapError> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let Some(start) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Err(SitemapError::Empty);
    };
    let body = &body[start..];
    if body.first() == Some(&b'<') {
        parse_xml(body, max_urls)
    } else {
        parse_text(body, max_urls)
    }
}

fn parse_text(body: &[u8], max_urls: usize) -> Result<ParsedSitemap, SitemapError> {
    let mut out = ParsedSitemap {
        kind: SitemapKind::Text,
        locs: Vec::new(),
        truncated: false,
        hints: Vec::new(),
    };
    let mut seen_url = false;
    for line in body.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.len() > MAX_LOC_LEN || !is_http_url(line) {
            continue;
        }
        seen_url = true;
        if out.locs.len() >= max_urls {
            out.truncated = true;
            break;
        }
        out.locs.push(String::from_utf8_lossy(line).into_owned());
    }
    if !seen_url {
        return Err(SitemapError::NotASitemap("no urls in plain-text body"));
    }
    Ok(out)
}

fn is_http_url(line: &[u8]) -> bool {
    let starts = |prefix: &[u8]| {
        line.len() > prefix.len() && line[..prefix.len()].eq_ignore_ascii_case(prefix)
    };
    starts(b"http://") || starts(b"https://")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Elem {
    Root,
    Entry,
    Loc,
    LastMod,
    ChangeFreq,
    Other,
}

/// Position of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let tail = hay.get(from..)?;
    match needle {
        [b] => memchr::memchr(*b, tail).map(|i| from + i),
        _ => memchr::memmem::find(tail, needle).map(|i| from + i),
    }
}

fn parse_xml(body: &[u8], max_urls: usize) -> Result<ParsedSitemap, SitemapError> {
    let mut kind: Option<SitemapKind> = None;
    let mut locs: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut stack: Vec<Elem> = Vec::new();
    let mut overflow = 0usize;
    let mut loc = LocBuf::default();
    // The entry being read: its loc's index once read, and its hints.
    let mut hint = LocHint::default();
    let mut entry_loc: Option<usize> = None;
    let mut hints: Vec<LocHint> = Vec::new();
    let mut pos = 0usize;

    while pos < body.len() {
        let top = if overflow == 0 {
            stack.last().copied()
        } else {
            None
        };
        let in_loc = matches!(top, Some(Elem::Loc | Elem::LastMod | Elem::ChangeFreq));
        let lt = find(body, pos, b"<").unwrap_or(body.len());
        if in_loc {
            loc.push_text(&body[pos..lt]);
        }
        pos = lt;
        let rest = &body[pos..];
        if rest.is_empty() {
            break;
        }
        if rest.starts_with(b"<!--") {
            let Some(end) = find(body, pos + 4, b"-->") else {
                break;
            };
            pos = end + 3;
        } else if rest.starts_with(b"<![CDATA[") {
            let Some(end) = find(body, pos + 9, b"]]>") else {
                break;
            };
            if in_loc {
                loc.push_raw(&body[pos + 9..end]);
            }
            pos = end + 3;
        } else if rest.starts_with(b"<?") {
            let Some(end) = find(body, pos + 2, b"?>") else {
                break;
            };
            pos = end + 2;
        } else if rest.starts_with(b"<!") {
            let Some(end) = doctype_end(body, pos + 2) else {
                break;
            };
            pos = end + 1;
        } else if rest.starts_with(b"</") {
            let Some(end) = find(body, pos + 2, b">") else {
                break;
            };
            pos = end + 1;
            if overflow > 0 {
                overflow -= 1;
                continue;
            }
            match stack.pop() {
                Some(Elem::Loc) => {
                    if let Some(value) = loc.take() {
                        if locs.len() >= max_urls {
                            truncated = true;
                            break;
                        }
                        entry_loc = Some(locs.len());
                        locs.push(value);
                    }
                }
                Some(Elem::LastMod) => {
                    hint.lastmod = loc.take().filter(|v| v.len() <= MAX_HINT_LEN);
                }
                Some(Elem::ChangeFreq) => {
                    hint.changefreq = loc.take().filter(|v| v.len() <= MAX_HINT_LEN);
                }
                Some(Elem::Entry) => {
                    keep_hint(&mut hints, &mut hint, entry_loc.take());
                }
                Some(Elem::Root) | None => break,
                Some(_) => {}
            }
        } else {
            let name_end = rest[1..]
                .iter()
                .position(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
                .map_or(rest.len(), |i| i + 1);
            let name = &rest[1..name_end];
            if name.is_empty() || !is_name_start(name[0]) {
                // A stray '<' in text: not markup.
                if in_loc {
                    loc.push_raw(b"<");
                }
                pos += 1;
                continue;
            }
            let Some(end) = tag_end(body, pos + name_end) else {
                break;
            };
            let self_closing = end > pos && body[end - 1] == b'/';
            pos = end + 1;
            let local = local_name(name);

            let Some(_) = kind else {
                kind = Some(if local.eq_ignore_ascii_case(b"urlset") {
                    SitemapKind::UrlSet
                } else if local.eq_ignore_ascii_case(b"sitemapindex") {
                    SitemapKind::Index
                } else {
                    let shown = &name[..name.len().min(64)];
                    return Err(SitemapError::UnexpectedRoot(
                        String::from_utf8_lossy(shown).into_owned(),
                    ));
                });
                if self_closing {
                    break;
                }
                stack.push(Elem::Root);
                continue;
            };
            if self_closing {
                continue;
            }
            if overflow > 0 || stack.len() >= MAX_DEPTH {
                overflow += 1;
                continue;
            }
            let parent = stack.last().copied();
            let elem = match parent {
                Some(Elem::Root)
                    if local.eq_ignore_ascii_case(b"url")
                        || local.eq_ignore_ascii_case(b"sitemap") =>
                {
                    Elem::Entry
                }
                Some(Elem::Entry) if local.eq_ignore_ascii_case(b"loc") => Elem::Loc,
                Some(Elem::Entry) if local.eq_ignore_ascii_case(b"lastmod") => Elem::LastMod,
                Some(Elem::Entry) if local.eq_ignore_ascii_case(b"changefreq") => Elem::ChangeFreq,
                _ => Elem::Other,
            };
            if matches!(elem, Elem::Loc | Elem::LastMod | Elem::ChangeFreq) {
                loc.start();
            }
            stack.push(elem);
        }
    }

    // A document cut inside an entry: what was complete of it counts.
    keep_hint(&mut hints, &mut hint, entry_loc);
    match kind {
        Some(kind) => Ok(ParsedSitemap {
            kind,
            locs,
            truncated,
            hints,
        }),
        None => Err(SitemapError::NotASitemap("no root element")),
    }
}

/// Ends an entry: its hints are kept when it has a loc and says something; the next entry starts empty.
fn keep_hint(hints: &mut Vec<LocHint>, hint: &mut LocHint, loc: Option<usize>) {
    let h = std::mem::take(hint);
    if let Some(loc) = loc
        && (h.lastmod.is_some() || h.changefreq.is_some())
    {
        hints.push(LocHint { loc, ..h });
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

/// The part of a qualified name after the prefix (`sm:loc` -> `loc`).
fn local_name(name: &[u8]) -> &[u8] {
    match memchr::memrchr(b':', name) {
        Some(i) => &name[i + 1..],
        None => name,
    }
}

/// Index of the `>` closing a start tag, skipping quoted attribute values.
fn tag_end(body: &[u8], from: usize) -> Option<usize> {
    let mut quote: Option<u8> = None;
    for (i, &b) in body.get(from..)?.iter().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => return Some(from + i),
            None => {}
        }
    }
    None
}

/// Index of the `>` closing `<!DOCTYPE ...>`, skipping an internal subset in brackets.
fn doctype_end(body: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    for (i, &b) in body.get(from..)?.iter().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'[' => depth += 1,
                b']' => depth = depth.saturating_sub(1),
                b'>' if depth == 0 => return Some(from + i),
                _ => {}
            },
        }
    }
    None
}

/// Accumulates the text of one `<loc>`, bounded by [`MAX_LOC_LEN`].
#[derive(Default)]
struct LocBuf {
    buf: Vec<u8>,
    too_long: bool,
}

impl LocBuf {
    fn start(&mut self) {
        self.buf.clear();
        self.too_long = false;
    }

    fn push_raw(&mut self, bytes: &[u8]) {
        if self.too_long || self.buf.len() + bytes.len() > MAX_LOC_LEN {
            self.too_long = true;
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    fn push_text(&mut self, text: &[u8]) {
        let decoded = decode_xml_entities(text);
        self.push_raw(&decoded);
    }

    /// The trimmed value, or `None` when empty or too long.
    fn take(&mut self) -> Option<String> {
        let value = if self.too_long {
            None
        } else {
            let trimmed = self.buf.trim_ascii();
            (!trimmed.is_empty()).then(|| String::from_utf8_lossy(trimmed).into_owned())
        };
        self.start();
        value
    }
}

/// Decodes `&amp; &lt; &gt; &quot; &apos; &#NN; &#xHH;`; anything else is kept literally.
fn decode_xml_entities(text: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memchr(b'&', text).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let Some(amp) = find(text, i, b"&") else {
            out.extend_from_slice(&text[i..]);
            break;
        };
        out.extend_from_slice(&text[i..amp]);
        match decode_entity(&text[amp + 1..]) {
            Some((ch, used)) => {
                let mut utf8 = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());
                i = amp + 1 + used;
            }
            None => {
                out.push(b'&');
                i = amp + 1;
            }
        }
    }
    Cow::Owned(out)
}

/// Decodes one entity at the start of `s` (after `&`), requiring the `;`.
fn decode_entity(s: &[u8]) -> Option<(char, usize)> {
    let semi = memchr::memchr(b';', &s[..s.len().min(12)])?;
    let name = &s[..semi];
    let ch = match name {
        b"amp" => '&',
        b"lt" => '<',
        b"gt" => '>',
        b"quot" => '"',
        b"apos" => '\'',
        [b'#', b'x' | b'X', hex @ ..] => numeric(hex, 16)?,
        [b'#', dec @ ..] => numeric(dec, 10)?,
        _ => return None,
    };
    Some((ch, semi + 1))
}

fn numeric(digits: &[u8], radix: u32) -> Option<char> {
    if digits.is_empty() {
        return None;
    }
    let mut value: u32 = 0;
    for &d in digits {
        let v = char::from(d).to_digit(radix)?;
        value = value.checked_mul(radix)?.checked_add(v)?;
    }
    char::from_u32(value).filter(|&c| c != '\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> ParsedSitemap {
        parse_sitemap(body.as_bytes(), 1000).unwrap()
    }

    fn hint(loc: usize, lastmod: Option<&str>, changefreq: Option<&str>) -> LocHint {
        LocHint {
            loc,
            lastmod: lastmod.map(str::to_owned),
            changefreq: changefreq.map(str::to_owned),
        }
    }

    #[test]
    fn entries_keep_their_lastmod_and_changefreq_by_loc() {
        let p = parse(
            "<?xml version=\"1.0\"?>\n<sm:urlset xmlns:sm=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
             <sm:url><sm:lastmod> 2026-12-01T10:00:00+00:00 </sm:lastmod><sm:loc>https://a.com/1</sm:loc></sm:url>\n\
             <url><loc>https://a.com/2</loc></url>\n\
             <url><loc>https://a.com/3</loc><changefreq>hourly</changefreq><lastmod><![CDATA[2026-11-30]]></lastmod>\
             <image:image><image:lastmod>1999</image:lastmod></image:image></url>\n\
             <url><lastmod>2026-01-01</lastmod></url>\n\
             <url><loc>https://a.com/4</loc><changefreq>daily</changefreq></url>\n\
             </sm:urlset>",
        );
        assert_eq!(p.locs.len(), 4);
        assert_eq!(
            p.hints,
            [
                hint(0, Some("2026-12-01T10:00:00+00:00"), None),
                hint(2, Some("2026-11-30"), Some("hourly")),
                hint(3, None, Some("daily")),
            ],
            "an entry without a loc, and a lastmod nested deeper, give nothing"
        );
        let idx = parse(
            "<sitemapindex><sitemap><loc>https://a.com/s1.xml</loc><lastmod>2026-12-02</lastmod></sitemap>\
             </sitemapindex>",
        );
        assert_eq!(idx.hints, [hint(0, Some("2026-12-02"), None)]);
    }

    #[test]
    fn hints_that_are_too_long_or_cut_off_are_handled() {
        let long = "9".repeat(MAX_HINT_LEN + 1);
        let p = parse(&format!(
            "<urlset><url><loc>https://a.com/1</loc><lastmod>{long}</lastmod><changefreq>weekly</changefreq></url>\
             <url><loc>https://a.com/2</loc><lastmod>2026-12-03"
        ));
        assert_eq!(p.locs, ["https://a.com/1", "https://a.com/2"]);
        assert_eq!(
            p.hints,
            [hint(0, None, Some("weekly"))],
            "an overlong lastmod is dropped; an unfinished one is not taken"
        );
        let cut = parse("<urlset><url><loc>https://a.com/1</loc><lastmod>2026-12-03</lastmod>");
        assert_eq!(
            cut.hints,
            [hint(0, Some("2026-12-03"), None)],
            "an entry cut off after its lastmod keeps it"
        );
        let text = parse_sitemap(b"https://a.com/1\nhttps://a.com/2\n", 10).unwrap();
        assert!(text.hints.is_empty());
        let capped = parse_sitemap(
            b"<urlset><url><loc>https://a.com/1</loc><lastmod>2026-12-03</lastmod></url>\
              <url><loc>https://a.com/2</loc><lastmod>2026-12-04</lastmod></url></urlset>",
            1,
        )
        .unwrap();
        assert!(capped.truncated);
        assert_eq!(capped.hints, [hint(0, Some("2026-12-03"), None)]);
    }

    #[test]
    fn urlset_with_declaration_and_whitespace() {
        let p = parse(
            "\u{feff}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
               <url>\n  <loc>\n   https://a.com/one\n  </loc>\n  <lastmod>2024-01-01</lastmod>\n</url>\n\
               <url><loc>https://a.com/two</loc><priority>0.5</priority></url>\n\
             </urlset>",
        );
        assert_eq!(p.kind, SitemapKind::UrlSet);
        assert_eq!(p.locs, ["https://a.com/one", "https://a.com/two"]);
        assert!(!p.truncated);
    }

    #[test]
    fn sitemap_index() {
        let p = parse(
            r#"<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <sitemap><loc>https://a.com/s1.xml.gz</loc><lastmod>2024</lastmod></sitemap>
            <sitemap><loc>https://a.com/s2.xml</loc></sitemap></sitemapindex>"#,
        );
        assert_eq!(p.kind, SitemapKind::Index);
        assert_eq!(p.locs, ["https://a.com/s1.xml.gz", "https://a.com/s2.xml"]);
    }

    #[test]
    fn prefixed_tags_and_extensions() {
        let p = parse(
            r#"<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
                 xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
            <sm:url><sm:loc>https://a.com/p</sm:loc>
              <image:image><image:loc>https://a.com/img.jpg</image:loc></image:image>
            </sm:url>
            <URL><LOC>https://a.com/upper</LOC></URL>
            </sm:urlset>"#,
        );
        assert_eq!(p.locs, ["https://a.com/p", "https://a.com/upper"]);
    }

    #[test]
    fn comments_cdata_and_entities() {
        let p = parse(
            r#"<!-- generated --><urlset>
            <!-- <url><loc>https://a.com/commented</loc></url> -->
            <url><loc><![CDATA[https://a.com/c?a=1&b=2]]></loc></url>
            <url><loc>https://a.com/e?a=1&amp;b=2&lt;&gt;&quot;&apos;&#65;&#x42;</loc></url>
            <url><loc>https://a.com/raw?a=1&b=2&unknown;&#xZZ;&#;</loc></url>
            <url><loc>https://a.com/<!-- inner -->split</loc></url>
            </urlset>"#,
        );
        assert_eq!(
            p.locs,
            [
                "https://a.com/c?a=1&b=2",
                "https://a.com/e?a=1&b=2<>\"'AB",
                "https://a.com/raw?a=1&b=2&unknown;&#xZZ;&#;",
                "https://a.com/split",
            ]
        );
    }

    #[test]
    fn doctype_and_attributes_with_gt() {
        let p = parse(
            r#"<!DOCTYPE urlset [ <!ENTITY x "y>"> ]><urlset a="1>2" b='>'>
            <url><loc attr="x>y">https://a.com/1</loc></url></urlset>"#,
        );
        assert_eq!(p.locs, ["https://a.com/1"]);
    }

    #[test]
    fn truncates_at_max_urls() {
        let mut xml = String::from("<urlset>");
        for i in 0..10 {
            xml.push_str(&format!("<url><loc>https://a.com/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        let p = parse_sitemap(xml.as_bytes(), 3).unwrap();
        assert_eq!(
            p.locs,
            ["https://a.com/0", "https://a.com/1", "https://a.com/2"]
        );
        assert!(p.truncated);
        let p = parse_sitemap(xml.as_bytes(), 10).unwrap();
        assert_eq!(p.locs.len(), 10);
        assert!(!p.truncated);
        let p = parse_sitemap(xml.as_bytes(), 0).unwrap();
        assert!(p.locs.is_empty() && p.truncated);
    }

    #[test]
    fn plain_text_sitemap() {
        let body = "https://a.com/1\r\n\n  http://a.com/2  \n# comment\nftp://a.com/x\nnot a url\nHTTPS://A.com/3\nhttps://\n";
        let p = parse(body);
        assert_eq!(p.kind, SitemapKind::Text);
        assert_eq!(
            p.locs,
            ["https://a.com/1", "http://a.com/2", "HTTPS://A.com/3"]
        );
        let p = parse_sitemap(body.as_bytes(), 2).unwrap();
        assert_eq!(p.locs.len(), 2);
        assert!(p.truncated);
    }

    #[test]
    fn not_a_sitemap() {
        assert!(matches!(parse_sitemap(b"", 10), Err(SitemapError::Empty)));
        assert!(matches!(
            parse_sitemap(b" \n\t ", 10),
            Err(SitemapError::Empty)
        ));
        assert!(matches!(
            parse_sitemap(b"<!DOCTYPE html><html><body>404</body></html>", 10),
            Err(SitemapError::UnexpectedRoot(r)) if r == "html"
        ));
        assert!(matches!(
            parse_sitemap(b"<?xml version=\"1.0\"?><rss><channel/></rss>", 10),
            Err(SitemapError::UnexpectedRoot(r)) if r == "rss"
        ));
        assert!(matches!(
            parse_sitemap(b"<?xml version=\"1.0\"?><!-- only a comment -->", 10),
            Err(SitemapError::NotASitemap(_))
        ));
        assert!(matches!(
            parse_sitemap(b"just some words\nand more", 10),
            Err(SitemapError::NotASitemap(_))
        ));
    }

    #[test]
    fn malformed_and_truncated_xml_is_lenient() {
        let p = parse("<urlset><url><loc>https://a.com/1</loc></url><url><loc>https://a.com/2");
        assert_eq!(p.locs, ["https://a.com/1"]);
        let p =
            parse("<urlset><url><loc>https://a.com/1</loc></url><url><loc>https://a.com/2</loc>");
        assert_eq!(p.locs, ["https://a.com/1", "https://a.com/2"]);
        let p = parse("<urlset><url><loc>https://a.com/1</loc></url><!-- unterminated");
        assert_eq!(p.locs, ["https://a.com/1"]);
        let p = parse(
            "<urlset><url><loc>a < b</loc></url><url><loc/><loc></loc><loc>  </loc></url></urlset>",
        );
        assert_eq!(p.locs, ["a < b"]);
        let p = parse("<urlset/><url><loc>https://a.com/after-root</loc></url>");
        assert!(p.locs.is_empty());
        let p = parse("<urlset></urlset><url><loc>https://a.com/after-root</loc></url>");
        assert!(p.locs.is_empty());
    }

    #[test]
    fn loc_length_and_depth_bounds() {
        let long = format!(
            "<urlset><url><loc>https://a.com/{}</loc></url><url><loc>https://a.com/ok</loc></url></urlset>",
            "x".repeat(MAX_LOC_LEN)
        );
        assert_eq!(parse(&long).locs, ["https://a.com/ok"]);
        let deep = format!(
            "<urlset>{}{}<url><loc>https://a.com/ok</loc></url></urlset>",
            "<a>".repeat(MAX_DEPTH * 2),
            "</a>".repeat(MAX_DEPTH * 2)
        );
        assert_eq!(parse(&deep).locs, ["https://a.com/ok"]);
    }

    #[test]
    fn garbage_does_not_panic() {
        let mut state: u32 = 0x1234_5678;
        let alphabet = b"<>/!?[]-&;#x:\"' urlsetloc";
        let mut bin = vec![b'<'];
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            bin.push(alphabet[state as usize % alphabet.len()]);
        }
        let inputs: Vec<&[u8]> = vec![
            b"<",
            b"<<<<",
            b"<!",
            b"<!--",
            b"<![CDATA[",
            b"<?",
            b"</",
            b"<urlset",
            b"<urlset a=\"",
            b"<urlset><url><loc>&",
            b"<urlset><url><loc>&#",
            b"<urlset><url><loc>&#x110000;</loc></url></urlset>",
            b"<urlset><url><loc>\xff\xfe</loc></url></urlset>",
            b"\xff\xfe\x00<\x00u",
            &bin,
        ];
        for input in inputs {
            if let Ok(p) = parse_sitemap(input, 100) {
                assert!(p.locs.len() <= 100);
            }
        }
        let p = parse_sitemap(b"<urlset><url><loc>&#x110000;</loc></url></urlset>", 10).unwrap();
        assert_eq!(p.locs, ["&#x110000;"]);
    }
}
