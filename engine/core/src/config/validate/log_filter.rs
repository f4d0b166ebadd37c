//! The log filter: a list of tracing directives (`info`, `warn,crawl_core=debug`), checked
//! loosely for their shape and their level names, a near-miss of a level taken for a typo.

use std::sync::LazyLock;

use regex::Regex;

use super::suggest::closest;
use crate::config::value_error::{LOG_LEVELS, ValueError};

/// One EnvFilter-like directive: `level`, `target`, `target[span]=level`, `target=level`.
static DIRECTIVE: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<target>[A-Za-z_][A-Za-z0-9_\-]*(?:::[A-Za-z0-9_\-]+)*)?(?P<span>\[[^\]]*\])?(?:=(?P<level>[A-Za-z]+|[0-5]))?$",
    )
});

fn is_level(s: &str) -> bool {
    LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(s))
        || matches!(s, "0" | "1" | "2" | "3" | "4" | "5")
}

/// A tracing filter directive list such as `info` or `warn,crawl_core=debug`, checked loosely.
pub(in crate::config) fn log_level(s: &str) -> Result<String, ValueError> {
    let re = DIRECTIVE
        .as_ref()
        .map_err(|e| ValueError::DirectivePattern {
            reason: e.to_string(),
        })?;
    let directives: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        return Err(ValueError::NoLogDirective);
    }
    for d in directives {
        if is_level(d) {
            continue;
        }
        let Some(caps) = re.captures(d) else {
            return Err(ValueError::LogDirective {
                directive: d.to_owned(),
            });
        };
        let target = caps.name("target").map(|m| m.as_str());
        let span = caps.name("span");
        match caps.name("level").map(|m| m.as_str()) {
            Some(level) => {
                if target.is_none() && span.is_none() {
                    return Err(ValueError::LogDirectiveTarget {
                        directive: d.to_owned(),
                    });
                }
                if !is_level(level) {
                    return Err(ValueError::LogLevel {
                        level: level.to_owned(),
                        directive: d.to_owned(),
                    });
                }
            }
            None => {
                // A bare word is a target for EnvFilter, but a near-miss of a level is a typo.
                if let Some(word) = target.filter(|t| span.is_none() && !t.contains("::"))
                    && !is_level(word)
                    && let Some(level) = closest(word, LOG_LEVELS.iter().copied())
                {
                    return Err(ValueError::LogLevelTypo {
                        word: word.to_owned(),
                        suggestion: level,
                    });
                }
            }
        }
    }
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_directives_and_level_typos_are_told_apart() {
        assert_eq!(log_level(" , "), Err(ValueError::NoLogDirective));
        assert_eq!(
            log_level("warm"),
            Err(ValueError::LogLevelTypo {
                word: "warm".to_owned(),
                suggestion: "warn"
            })
        );
        assert_eq!(
            log_level("crawl_core=loud"),
            Err(ValueError::LogLevel {
                level: "loud".to_owned(),
                directive: "crawl_core=loud".to_owned()
            })
        );
        assert_eq!(
            log_level("=debug"),
            Err(ValueError::LogDirectiveTarget {
                directive: "=debug".to_owned()
            })
        );
        assert_eq!(
            log_level("a b"),
            Err(ValueError::LogDirective {
                directive: "a b".to_owned()
            })
        );
        for ok in [
            "warn,crawl_core=debug",
            "INFO",
            "3",
            "crawl_actors",
            "crawl_actors::fetcher[job]=trace",
            "[job]=debug",
        ] {
            assert_eq!(log_level(ok), Ok(ok.to_owned()), "{ok}");
        }
    }
}
