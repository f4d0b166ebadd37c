//! HTTP validators for changing mode: IMF-fixdate dates, entity-tags, and the evaluation of `If-None-Match` and
//! `If-Modified-Since` on a GET (RFC 9110 section 13.2.2: `If-None-Match` decides alone when present).

use std::time::{Duration, UNIX_EPOCH};

/// `secs` (Unix seconds) as an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(secs: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
}

/// An HTTP-date (IMF-fixdate, RFC 850 or asctime) as Unix seconds; `None` when it is not one.
pub fn parse_http_date(s: &str) -> Option<u64> {
    let t = httpdate::parse_http_date(s.trim()).ok()?;
    t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// A W3C datetime as sitemaps write `<lastmod>`: `2023-11-14T22:13:20+00:00`.
pub fn w3c_date(secs: u64) -> String {
    // IMF-fixdate carries the same fields: "Sun, 06 Nov 1994 08:49:37 GMT"
    let d = http_date(secs);
    let mut it = d.split(' ').skip(1);
    let (day, mon, year, time) = (
        it.next().unwrap_or("01"),
        it.next().unwrap_or("Jan"),
        it.next().unwrap_or("1970"),
        it.next().unwrap_or("00:00:00"),
    );
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = MONTHS.iter().position(|x| *x == mon).unwrap_or(0) + 1;
    format!("{year}-{m:02}-{day}T{time}+00:00")
}

/// The entity-tags of an `If-None-Match` value, as written (`W/` prefix and quotes kept); `None` for `*`. Malformed
/// members end the list (what was parsed before them counts).
pub fn etag_list(value: &str) -> Option<Vec<&str>> {
    if value.trim() == "*" {
        return None;
    }
    let mut out = Vec::new();
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let start = rest;
        let body = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(inner) = body.strip_prefix('"') else {
            break;
        };
        let Some(end) = inner.find('"') else {
            break;
        };
        let len = start.len() - inner.len() + end + 1;
        out.push(&start[..len]);
        rest = &start[len..];
    }
    Some(out)
}

/// The opaque tag of an entity-tag (without `W/`).
fn opaque(tag: &str) -> &str {
    tag.strip_prefix("W/").unwrap_or(tag)
}

/// Weak comparison (RFC 9110 section 8.8.3.2): the opaque tags are equal, weakness ignored.
pub fn weak_match(a: &str, b: &str) -> bool {
    opaque(a.trim()) == opaque(b.trim())
}

/// What the conditional headers of a GET ask of a resource whose current validators are `etag` and
/// `last_modified` (Unix seconds), at server time `now`. True: answer 304.
///
/// `If-None-Match` (a list or `*`) takes precedence: when present, `If-Modified-Since` is not looked at. An
/// `If-Modified-Since` that is not an HTTP-date, or is later than `now`, is ignored (RFC 9110 section 13.1.3).
pub fn not_modified(
    if_none_match: Option<&str>,
    if_modified_since: Option<&str>,
    etag: Option<&str>,
    last_modified: Option<u64>,
    now: u64,
) -> bool {
    if let Some(inm) = if_none_match {
        return match etag_list(inm) {
            None => true,
            Some(tags) => etag.is_some_and(|cur| tags.iter().any(|t| weak_match(t, cur))),
        };
    }
    match (if_modified_since.and_then(parse_http_date), last_modified) {
        (Some(ims), Some(lm)) if ims <= now => lm <= ims,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_and_parse_every_http_form() {
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(w3c_date(784_111_777), "1994-11-06T08:49:37+00:00");
        for s in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(s), Some(784_111_777), "{s}");
        }
        assert_eq!(parse_http_date("yesterday"), None);
        assert_eq!(parse_http_date(""), None);
    }

    #[test]
    fn etag_lists_keep_weak_prefixes_and_commas_inside_tags() {
        assert_eq!(
            etag_list(r#""a", W/"b,c" ,"d""#),
            Some(vec![r#""a""#, r#"W/"b,c""#, r#""d""#])
        );
        assert_eq!(etag_list(" * "), None);
        assert_eq!(etag_list(r#""a", junk"#), Some(vec![r#""a""#]));
        assert!(weak_match(r#"W/"x""#, r#""x""#));
        assert!(!weak_match(r#""x""#, r#""y""#));
    }

    #[test]
    fn if_none_match_decides_before_if_modified_since() {
        let lm = 1_000;
        let now = 2_000;
        let ims_after = http_date(1_500);
        let ims_before = http_date(500);
        let e = Some(r#""v1""#);
        // etag matches (also weakly and in a list) -> 304, whatever the date says
        assert!(not_modified(
            Some(r#""v1""#),
            Some(&ims_before),
            e,
            Some(lm),
            now
        ));
        assert!(not_modified(Some(r#""z", W/"v1""#), None, e, Some(lm), now));
        assert!(not_modified(Some("*"), None, e, Some(lm), now));
        // etag differs -> 200 even though the date alone would give 304
        assert!(!not_modified(
            Some(r#""v0""#),
            Some(&ims_after),
            e,
            Some(lm),
            now
        ));
        // date only
        assert!(not_modified(None, Some(&ims_after), e, Some(lm), now));
        assert!(not_modified(None, Some(&http_date(lm)), e, Some(lm), now));
        assert!(!not_modified(None, Some(&ims_before), e, Some(lm), now));
        // a date in the future or not a date is ignored
        assert!(!not_modified(
            None,
            Some(&http_date(3_000)),
            e,
            Some(lm),
            now
        ));
        assert!(!not_modified(None, Some("garbage"), e, Some(lm), now));
        // no validators on the resource
        assert!(!not_modified(Some(r#""v1""#), None, None, None, now));
        assert!(!not_modified(None, None, e, Some(lm), now));
    }
}
