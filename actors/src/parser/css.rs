//! The URLs a piece of CSS loads: `url(...)` tokens (quoted or not) and `@import "..."`, in order, with comments
//! skipped and CSS escapes decoded. Used for stylesheets fetched as page requisites, `<style>` blocks and `style`
//! attributes. Not a CSS parser: anything that does not look like one of those forms is passed over.

/// The URLs referenced by `css`, at most `limit` of them (empty ones and `data:` URLs left out).
pub fn css_urls(css: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = css.as_bytes();
    let mut i = 0;
    while i < bytes.len() && out.len() < limit {
        let b = bytes[i];
        if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i = css[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            continue;
        }
        if (b == b'u' || b == b'U') && starts_with_ci(&css[i..], "url(") && !ident_before(bytes, i)
        {
            let (url, next) = read_url(css, i + 4);
            push(&mut out, url);
            i = next;
            continue;
        }
        if b == b'@' && starts_with_ci(&css[i..], "@import") {
            let rest = &css[i + 7..];
            let skipped = rest.len() - rest.trim_start().len();
            let at = i + 7 + skipped;
            if let Some(q @ (b'"' | b'\'')) = bytes.get(at).copied() {
                let (url, next) = read_string(css, at + 1, q);
                push(&mut out, url);
                i = next;
                continue;
            }
            i = at;
            continue;
        }
        if b == b'"' || b == b'\'' {
            // A string outside url(): skip it whole, so that "url(" inside it is not taken.
            i = read_string(css, i + 1, b).1;
            continue;
        }
        i += 1;
    }
    out
}

fn push(out: &mut Vec<String>, url: String) {
    let url = url.trim().to_owned();
    if url.is_empty() || starts_with_ci(&url, "data:") {
        return;
    }
    out.push(url);
}

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Whether the byte before `i` continues an identifier (`myurl(` is a function of another name).
fn ident_before(bytes: &[u8], i: usize) -> bool {
    i > 0
        && bytes
            .get(i - 1)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_' || *b >= 0x80)
}

/// Reads the argument of `url(` starting at `start`: a quoted string or a bare URL up to `)`. Returns the URL and
/// the position after the closing parenthesis (or the end of the input).
fn read_url(css: &str, start: usize) -> (String, usize) {
    let bytes = css.as_bytes();
    let mut i = start;
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    if let Some(q @ (b'"' | b'\'')) = bytes.get(i).copied() {
        let (url, next) = read_string(css, i + 1, q);
        let close = css[next..].find(')').map_or(bytes.len(), |e| next + e + 1);
        return (url, close);
    }
    let mut url = String::new();
    let mut chars = css[i..].char_indices();
    while let Some((off, c)) = chars.next() {
        match c {
            ')' => return (url, i + off + 1),
            '\\' => {
                if let Some((_, e)) = chars.next() {
                    url.push(e);
                }
            }
            _ => url.push(c),
        }
    }
    (url, bytes.len())
}

/// Reads a string whose opening quote `q` is just before `start`, decoding `\` escapes (a hex escape becomes its
/// character). Returns its value and the position after the closing quote.
fn read_string(css: &str, start: usize, q: u8) -> (String, usize) {
    let mut out = String::new();
    let rest = &css[start..];
    let mut chars = rest.char_indices().peekable();
    while let Some((off, c)) = chars.next() {
        if c as u32 == u32::from(q) {
            return (out, start + off + 1);
        }
        match c {
            '\n' => return (out, start + off),
            '\\' => {
                let mut hex = String::new();
                while hex.len() < 6
                    && let Some((_, h)) = chars.peek().copied()
                    && h.is_ascii_hexdigit()
                {
                    hex.push(h);
                    chars.next();
                }
                if hex.is_empty() {
                    if let Some((_, e)) = chars.next()
                        && e != '\n'
                    {
                        out.push(e);
                    }
                } else {
                    if chars.peek().is_some_and(|(_, w)| w.is_ascii_whitespace()) {
                        chars.next();
                    }
                    let ch = u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .unwrap_or('\u{fffd}');
                    out.push(ch);
                }
            }
            _ => out.push(c),
        }
    }
    (out, css.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_tokens_quoted_bare_and_imports() {
        let css = r#"@import "base.css";
            @import url('print.css') print;
            body { background: URL( "/img/bg.png" ) no-repeat; }
            .a { background-image: url(../i/a.png), url(  b.svg  ); }
            @font-face { src: url(/f.woff2) format("woff2"), url('/f.woff') }
            .d { background: url(data:image/png;base64,AAAA) }"#;
        assert_eq!(
            css_urls(css, 100),
            [
                "base.css",
                "print.css",
                "/img/bg.png",
                "../i/a.png",
                "b.svg",
                "/f.woff2",
                "/f.woff"
            ]
        );
    }

    #[test]
    fn comments_strings_escapes_and_other_functions() {
        let css = r#"/* url(/commented.png) */ .x::before { content: "url(/in-string.png)" }
            .y { background: myurl(/not.png) url(/sp\ ace.png) url("/q\22 uote.png") }
            .z { background: url(/unterminated.png"#;
        assert_eq!(
            css_urls(css, 100),
            ["/sp ace.png", "/q\"uote.png", "/unterminated.png"]
        );
    }

    #[test]
    fn limit_and_hostile_input() {
        let css = "a{background:url(/1)} b{background:url(/2)} c{background:url(/3)}";
        assert_eq!(css_urls(css, 2), ["/1", "/2"]);
        for junk in [
            "url(",
            "@import",
            "'",
            "/*",
            "url('",
            "\\",
            "@import '",
            "é url(é) ü",
        ] {
            let _ = css_urls(junk, 10);
        }
        assert_eq!(css_urls("url(é)", 10), ["é"]);
    }
}
