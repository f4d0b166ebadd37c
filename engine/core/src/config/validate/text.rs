//! Free text values: the User-Agent, the service name, filesystem paths and regular expressions,
//! checked for the characters each cannot hold.

use std::path::PathBuf;

use regex::Regex;

use crate::config::errors::one_line;
use crate::config::value_error::ValueError;

/// A regular expression; the error carries the regex crate's own description.
pub(in crate::config) fn regex(s: &str) -> Result<Regex, ValueError> {
    Regex::new(s).map_err(|e| ValueError::Regex {
        pattern: s.to_owned(),
        reason: regex_reason(&e),
    })
}

/// The essential line of a regex error ("error: unclosed group" becomes "unclosed group").
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| one_line(&text), str::to_owned)
}

/// A User-Agent header value: non-empty printable ASCII.
pub(in crate::config) fn user_agent(s: &str) -> Result<String, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if let Some((i, c)) = s
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii() || c.is_ascii_control())
    {
        return Err(ValueError::NotPrintableAscii {
            found: c,
            at: i + 1,
        });
    }
    Ok(s.to_owned())
}

/// A `service.name`: non-empty, without control characters.
pub(in crate::config) fn service_name(s: &str) -> Result<String, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if let Some((i, c)) = s.chars().enumerate().find(|(_, c)| c.is_control()) {
        return Err(ValueError::ControlCharacter {
            found: c,
            at: i + 1,
        });
    }
    Ok(s.to_owned())
}

/// A non-empty filesystem path (kept as written; `from_file` resolves relative ones).
pub(in crate::config) fn path(s: &str) -> Result<PathBuf, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if s.contains('\0') {
        return Err(ValueError::NulCharacter);
    }
    Ok(PathBuf::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_values_report_the_offending_character() {
        assert_eq!(user_agent("  "), Err(ValueError::Empty));
        assert_eq!(
            user_agent("bot\u{e9}"),
            Err(ValueError::NotPrintableAscii {
                found: '\u{e9}',
                at: 4
            })
        );
        assert_eq!(
            service_name("a\tb"),
            Err(ValueError::ControlCharacter { found: '\t', at: 2 })
        );
        assert_eq!(
            service_name("crawl \u{e9}t\u{e9}"),
            Ok("crawl \u{e9}t\u{e9}".to_owned())
        );
        assert_eq!(path("a\0b"), Err(ValueError::NulCharacter));
        assert_eq!(path(" "), Err(ValueError::Empty));
        assert_eq!(
            path("out/crawl.jsonl"),
            Ok(PathBuf::from("out/crawl.jsonl"))
        );
    }

    #[test]
    fn a_regex_error_keeps_the_essential_line() {
        let e = regex("(").unwrap_err();
        let ValueError::Regex { pattern, reason } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(pattern, "(");
        assert!(!reason.is_empty() && !reason.contains('\n'), "{reason:?}");
        assert!(!reason.starts_with("error:"), "{reason:?}");
        assert!(regex("^https://a\\.example/").is_ok());
    }
}
