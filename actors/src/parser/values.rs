//! The small grammars inside attribute values that name URLs: `srcset` candidate lists and the `content` of
//! `<meta http-equiv="refresh">`, read as the HTML standard reads them.

/// The URLs of a `srcset` value (`img.png 1x, img-2x.png 2x`), in order. A URL may contain commas (only a
/// trailing one ends it); descriptors are skipped up to the next comma outside parentheses.
pub fn srcset_urls(srcset: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = srcset;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ',');
        if rest.is_empty() {
            return out;
        }
        let end = rest
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let (candidate, after) = rest.split_at(end);
        let url = candidate.trim_end_matches(',');
        if !url.is_empty() {
            out.push(url);
        }
        if url.len() < candidate.len() {
            // The URL ended with a comma: no descriptors follow.
            rest = after;
            continue;
        }
        // Skip the descriptors: up to a comma that is not inside parentheses.
        let mut depth = 0usize;
        let mut cut = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    cut = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &after[cut..];
    }
}

/// The target of a `<meta http-equiv="refresh" content="5; url=/next">`, or `None` when the content names no URL
/// (a plain reload) or does not start with a time.
pub fn refresh_url(content: &str) -> Option<&str> {
    let s = content.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let time_len = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    if time_len == 0 {
        return None;
    }
    let mut s = s[time_len..].trim_start_matches(|c: char| c.is_ascii_whitespace());
    match s.chars().next() {
        Some(';' | ',') => s = s[1..].trim_start_matches(|c: char| c.is_ascii_whitespace()),
        Some(_) => return None,
        None => return None,
    }
    if s.len() >= 3 && s.is_char_boundary(3) && s[..3].eq_ignore_ascii_case("url") {
        let after = s[3..].trim_start_matches(|c: char| c.is_ascii_whitespace());
        if let Some(value) = after.strip_prefix('=') {
            s = value.trim_start_matches(|c: char| c.is_ascii_whitespace());
        }
    }
    let url = match s.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let inner = &s[1..];
            &inner[..inner.find(q).unwrap_or(inner.len())]
        }
        _ => s,
    };
    let url = url.trim_end_matches(|c: char| c.is_ascii_whitespace());
    (!url.is_empty()).then_some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srcset_candidates_with_descriptors_commas_and_parentheses() {
        assert_eq!(
            srcset_urls("a.png 1x, /b.png 2x,c.png"),
            ["a.png", "/b.png", "c.png"]
        );
        assert_eq!(
            srcset_urls("  x.jpg 100w (foo, bar), y.jpg 200w"),
            ["x.jpg", "y.jpg"]
        );
        assert_eq!(
            srcset_urls("img,1.png, img,2.png 2x"),
            ["img,1.png", "img,2.png"]
        );
        assert_eq!(srcset_urls(" , ,"), Vec::<&str>::new());
        assert_eq!(srcset_urls("only.webp"), ["only.webp"]);
    }

    #[test]
    fn refresh_targets() {
        assert_eq!(refresh_url("0; url=/next"), Some("/next"));
        assert_eq!(
            refresh_url("5;URL='http://a.test/x y'"),
            Some("http://a.test/x y")
        );
        assert_eq!(refresh_url(" 3 , url = \"/q\" "), Some("/q"));
        assert_eq!(refresh_url("1.5; /bare"), Some("/bare"));
        assert_eq!(refresh_url("0;url=/a;b"), Some("/a;b"));
        assert_eq!(refresh_url("10"), None);
        assert_eq!(refresh_url("10;"), None);
        assert_eq!(refresh_url("url=/x"), None);
        assert_eq!(refresh_url("5 url=/x"), None);
        assert_eq!(refresh_url(""), None);
    }
}
