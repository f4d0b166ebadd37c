//! Character references in attribute values and element text, decoded as HTML does for attributes: named
//! references that matter in URLs and titles, numeric ones (with the Windows-1252 mapping of 0x80..=0x9F), and the
//! legacy names that need no semicolon.

use std::borrow::Cow;

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
pub(crate) fn decode_entities(s: &str) -> Cow<'_, str> {
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
