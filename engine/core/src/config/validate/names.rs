//! Names and patterns of a restricted alphabet: host names and host globs, proxy chain names and
//! references to them, the WARC file name prefix, the query parameter names to strip and the alert label
//! names of `[[api.alert_actions]]`.

use super::suggest::closest;
use crate::config::proxy::{DIRECT, redact_credentials};
use crate::config::value_error::{NameRole, ValueError};

/// A host name for `resolver.hosts`: IDNA-normalised, lowercase, without trailing dot.
pub(in crate::config) fn host_name(s: &str) -> Result<String, ValueError> {
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    if trimmed.is_empty() {
        return Err(ValueError::EmptyName(NameRole::HostName));
    }
    let invalid = |reason| ValueError::HostName {
        text: s.to_owned(),
        reason,
    };
    match url::Host::parse(trimmed) {
        Ok(url::Host::Domain(d)) if !d.contains("..") && !d.ends_with('.') => Ok(d),
        Ok(url::Host::Domain(_)) => Err(invalid(None)),
        Ok(_) => Err(ValueError::IpNotHostName { text: s.to_owned() }),
        Err(e) => Err(invalid(Some(e))),
    }
}

/// A host glob for `proxy.rules[].hosts`: labels of letters, digits, `-`, `_` and `*` (IP
/// literals too), lowercased, non-ASCII labels converted to their `xn--` form, trailing dot
/// removed.
pub(in crate::config) fn host_pattern(s: &str) -> Result<String, ValueError> {
    let text = || s.to_owned();
    let trimmed = s.strip_suffix('.').unwrap_or(s);
    if trimmed.is_empty() {
        return Err(ValueError::EmptyName(NameRole::HostPattern));
    }
    let mut labels = Vec::new();
    for label in trimmed.split('.') {
        if label.is_empty() {
            return Err(ValueError::HostPatternEmptyLabel { text: text() });
        }
        if label.is_ascii() {
            let ok = label.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'*' | b':' | b'[' | b']')
            });
            if !ok {
                return Err(ValueError::HostPatternCharacter { text: text() });
            }
            labels.push(label.to_ascii_lowercase());
        } else if label.contains('*') {
            return Err(ValueError::HostPatternWildcardLabel { text: text() });
        } else {
            match url::Host::parse(label) {
                Ok(url::Host::Domain(d)) if !d.contains('.') => labels.push(d),
                _ => return Err(ValueError::HostPatternLabel { text: text() }),
            }
        }
    }
    Ok(labels.join("."))
}

/// A chain name (the `<name>` of `[proxy.chains.<name>]`): letters, digits, `-` and `_`, not
/// the reserved `direct`.
pub(in crate::config) fn chain_name(s: &str) -> Result<String, ValueError> {
    if s.is_empty() {
        return Err(ValueError::EmptyName(NameRole::ChainName));
    }
    if s == DIRECT {
        return Err(ValueError::ReservedChainName);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ValueError::ChainNameCharacter {
            shown: redact_credentials(s),
        });
    }
    Ok(s.to_owned())
}

/// A reference to a chain in `proxy.default` or `proxy.rules[].use`: `direct` or a declared name.
pub(in crate::config) fn chain_ref(s: &str, declared: &[String]) -> Result<String, ValueError> {
    if s == DIRECT || declared.iter().any(|d| d == s) {
        return Ok(s.to_owned());
    }
    let names = declared
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(DIRECT));
    Err(ValueError::UnknownChain {
        shown: redact_credentials(s),
        suggestion: closest(s, names).map(str::to_owned),
    })
}

/// The first part of WARC file names: letters, digits, `.`, `_` and `-` (the parts are separated by `-`).
pub(in crate::config) fn warc_prefix(s: &str) -> Result<String, ValueError> {
    if s.is_empty() || s.len() > 64 {
        return Err(ValueError::WarcPrefixLength);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(ValueError::WarcPrefixCharacter);
    }
    Ok(s.to_owned())
}

/// A Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`), as alerts carry them.
pub(in crate::config) fn label_name(s: &str) -> Result<String, ValueError> {
    let mut bytes = s.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(s.to_owned())
    } else {
        Err(ValueError::LabelName { text: s.to_owned() })
    }
}

/// A `traps.strip_params` entry: a parameter name (no `=`, `&`, `;`, `#`, whitespace or control characters),
/// optionally ending in `*`; kept lowercase (names match case-insensitively).
pub(in crate::config) fn strip_param(s: &str) -> Result<String, ValueError> {
    let name = s.strip_suffix('*').unwrap_or(s);
    if name.is_empty() {
        return Err(ValueError::NoParameterName { text: s.to_owned() });
    }
    if let Some(c) = name.chars().find(|c| {
        matches!(c, '=' | '&' | ';' | '#' | '*' | '?' | '/') || c.is_whitespace() || c.is_control()
    }) {
        return Err(ValueError::ParameterCharacter {
            text: s.to_owned(),
            found: c,
        });
    }
    Ok(s.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_normalised_and_ips_refused() {
        assert_eq!(host_name("Example.COM."), Ok("example.com".to_owned()));
        assert_eq!(
            host_name("b\u{fc}cher.example"),
            Ok("xn--bcher-kva.example".to_owned())
        );
        assert_eq!(
            host_name("."),
            Err(ValueError::EmptyName(NameRole::HostName))
        );
        assert_eq!(
            host_name("192.0.2.1"),
            Err(ValueError::IpNotHostName {
                text: "192.0.2.1".to_owned()
            })
        );
        assert!(
            matches!(host_name("a..b"), Err(ValueError::HostName { .. })),
            "{:?}",
            host_name("a..b")
        );
    }

    #[test]
    fn host_patterns_keep_wildcards_in_ascii_labels_only() {
        assert_eq!(
            host_pattern("*.B\u{fc}cher.Example."),
            Ok("*.xn--bcher-kva.example".to_owned())
        );
        assert_eq!(
            host_pattern("a..b"),
            Err(ValueError::HostPatternEmptyLabel {
                text: "a..b".to_owned()
            })
        );
        assert_eq!(
            host_pattern("*.b\u{fc}cher*"),
            Err(ValueError::HostPatternWildcardLabel {
                text: "*.b\u{fc}cher*".to_owned()
            })
        );
        assert_eq!(
            host_pattern("a/b"),
            Err(ValueError::HostPatternCharacter {
                text: "a/b".to_owned()
            })
        );
    }

    #[test]
    fn chain_names_and_references() {
        assert_eq!(chain_name("direct"), Err(ValueError::ReservedChainName));
        assert_eq!(
            chain_name("a b"),
            Err(ValueError::ChainNameCharacter {
                shown: "a b".to_owned()
            })
        );
        let declared = ["tor".to_owned()];
        assert_eq!(chain_ref("tor", &declared), Ok("tor".to_owned()));
        assert_eq!(chain_ref(DIRECT, &declared), Ok(DIRECT.to_owned()));
        assert_eq!(
            chain_ref("tr", &declared),
            Err(ValueError::UnknownChain {
                shown: "tr".to_owned(),
                suggestion: Some("tor".to_owned())
            })
        );
        let e = chain_ref("socks5://u:hunter2@h:1", &declared).unwrap_err();
        assert!(
            matches!(
                &e,
                ValueError::UnknownChain {
                    suggestion: None,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }

    #[test]
    fn label_names_are_prometheus_label_names() {
        for ok in ["host", "host_group", "_x", "A9"] {
            assert_eq!(label_name(ok), Ok(ok.to_owned()));
        }
        for bad in ["", "9a", "host-group", "a.b", "é"] {
            assert_eq!(
                label_name(bad),
                Err(ValueError::LabelName {
                    text: bad.to_owned()
                })
            );
        }
    }

    #[test]
    fn warc_prefixes_and_parameter_names_report_the_offending_part() {
        assert_eq!(warc_prefix("crawl-1.a_b"), Ok("crawl-1.a_b".to_owned()));
        assert_eq!(warc_prefix(""), Err(ValueError::WarcPrefixLength));
        assert_eq!(
            warc_prefix(&"a".repeat(65)),
            Err(ValueError::WarcPrefixLength)
        );
        assert_eq!(warc_prefix("a b"), Err(ValueError::WarcPrefixCharacter));

        assert_eq!(strip_param("UTM_*"), Ok("utm_*".to_owned()));
        assert_eq!(
            strip_param("*"),
            Err(ValueError::NoParameterName {
                text: "*".to_owned()
            })
        );
        assert_eq!(
            strip_param("a=b"),
            Err(ValueError::ParameterCharacter {
                text: "a=b".to_owned(),
                found: '='
            })
        );
        assert_eq!(
            strip_param("a**"),
            Err(ValueError::ParameterCharacter {
                text: "a**".to_owned(),
                found: '*'
            })
        );
    }
}
