//! Tests of [`ValueError`]: each main validator's kinds of problem, matched as values, and the
//! reason carried from the validator into the loader's [`ConfigError`].

use std::net::IpAddr;

use super::tests::errors;
use super::validate;
use super::*;
use crate::netguard::CidrError;

fn url_problem(e: &ValueError) -> Option<(UrlRole, &str, &UrlProblem)> {
    match e {
        ValueError::Url {
            role,
            shown,
            problem,
        } => Some((*role, shown.as_str(), problem)),
        _ => None,
    }
}

fn hop_problem(s: &str) -> HopProblem {
    match validate::proxy_hop(s) {
        Err(ValueError::ProxyHop { problem, .. }) => problem,
        other => panic!("{s}: {other:?}"),
    }
}

#[test]
fn seed_urls_say_which_part_is_wrong_without_the_password() {
    let e = validate::seed_url("ftp://u:hunter2@a.example/").unwrap_err();
    let scheme = UrlProblem::Scheme {
        found: "ftp".to_owned(),
    };
    assert_eq!(
        url_problem(&e),
        Some((UrlRole::Seed, "ftp://***@a.example/", &scheme))
    );
    assert_eq!(
        e.to_string(),
        "URL `ftp://***@a.example/` must use http or https, found `ftp`"
    );
    let e = validate::seed_url("not a url").unwrap_err();
    assert!(
        matches!(
            url_problem(&e),
            Some((UrlRole::Seed, _, UrlProblem::Syntax(_)))
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with("invalid URL `not a url`: "),
        "{e}"
    );
    assert!(validate::seed_url("https://a.example/").is_ok());
}

#[test]
fn otlp_endpoints_and_doh_urls_have_their_own_rules() {
    let cases = [
        ("http://127.0.0.1", UrlProblem::NoPort),
        ("http://127.0.0.1:0", UrlProblem::PortZero),
        ("http://u:pw@127.0.0.1:4317", UrlProblem::Credentials),
        ("http://127.0.0.1:4317/?q", UrlProblem::QueryOrFragment),
        (
            "http://127.0.0.1:4317/v1/traces",
            UrlProblem::Path {
                path: "/v1/traces".to_owned(),
            },
        ),
    ];
    for (s, want) in cases {
        let e = validate::otlp_endpoint(s).unwrap_err();
        let (role, shown, problem) = url_problem(&e).unwrap_or_else(|| panic!("{s}: {e:?}"));
        assert_eq!((role, problem), (UrlRole::OtlpEndpoint, &want), "{s}");
        assert!(!shown.contains("pw@"), "{shown}");
        assert!(!e.to_string().contains("pw@"), "{e}");
    }
    assert_eq!(validate::otlp_endpoint(""), Ok(None));

    let e = validate::doh_url("http://dns.example/dns-query").unwrap_err();
    assert_eq!(
        e.to_string(),
        "DoH URL `http://dns.example/dns-query` must use https, found `http`"
    );
    assert!(matches!(
        url_problem(&e),
        Some((UrlRole::Doh, _, UrlProblem::Scheme { .. }))
    ));
}

#[test]
fn proxy_hops_name_the_problem_and_hide_credentials() {
    assert_eq!(hop_problem("127.0.0.1:1080"), HopProblem::Form);
    assert_eq!(
        hop_problem("socks5h://h:1080"),
        HopProblem::Scheme {
            found: "socks5h".to_owned()
        }
    );
    assert_eq!(hop_problem("socks5://h"), HopProblem::MissingPort);
    assert_eq!(hop_problem("socks5://h:0"), HopProblem::PortZero);
    assert_eq!(
        hop_problem("socks5://h:99999"),
        HopProblem::Port {
            text: "99999".to_owned()
        }
    );
    assert_eq!(hop_problem("socks5://::1:1080"), HopProblem::Ipv6Brackets);
    assert_eq!(
        hop_problem("socks5://[::1:1080"),
        HopProblem::UnclosedBracket
    );
    assert_eq!(
        hop_problem("socks5://h:1080/x"),
        HopProblem::PathQueryOrFragment
    );
    assert_eq!(
        hop_problem("socks5://user@h:1080"),
        HopProblem::CredentialsForm
    );
    assert_eq!(
        hop_problem("socks5://u:%zz@h:1080"),
        HopProblem::PercentEncoding
    );
    assert_eq!(
        hop_problem("socks5://:pw@h:1080"),
        HopProblem::CredentialLength { what: "user name" }
    );

    let e = validate::proxy_hop("socks5h://u:hunter2@h:1080").unwrap_err();
    let text = e.to_string();
    assert_eq!(
        text,
        "proxy hop `socks5h://***@h:1080` must use socks5, found `socks5h` \
         (write `socks5` and set `resolve = \"remote\"`)"
    );
    assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    let e = validate::proxy_hop("socks5://u:hunter2@h:0").unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid proxy hop `socks5://***@h:0`: port must not be 0"
    );
}

#[test]
fn log_directives_and_names_are_told_apart() {
    assert_eq!(validate::log_level(" , "), Err(ValueError::NoLogDirective));
    assert_eq!(
        validate::log_level("warm"),
        Err(ValueError::LogLevelTypo {
            word: "warm".to_owned(),
            suggestion: "warn"
        })
    );
    assert_eq!(
        validate::log_level("crawl_core=loud"),
        Err(ValueError::LogLevel {
            level: "loud".to_owned(),
            directive: "crawl_core=loud".to_owned()
        })
    );
    assert_eq!(
        validate::log_level("=debug"),
        Err(ValueError::LogDirectiveTarget {
            directive: "=debug".to_owned()
        })
    );
    assert!(validate::log_level("warn,crawl_core=debug").is_ok());

    let e = validate::scope("hosts").unwrap_err();
    assert_eq!(
        e,
        ValueError::UnknownName {
            text: "hosts".to_owned(),
            expected: vec!["host", "domain", "any"]
        }
    );
    assert_eq!(
        e.to_string(),
        "unknown value `hosts`, expected one of `host`, `domain`, `any`"
    );
}

#[test]
fn text_values_report_the_offending_character() {
    assert_eq!(validate::user_agent("  "), Err(ValueError::Empty));
    assert_eq!(
        validate::user_agent("bot\u{e9}"),
        Err(ValueError::NotPrintableAscii {
            found: '\u{e9}',
            at: 4
        })
    );
    assert_eq!(
        validate::service_name("a\tb"),
        Err(ValueError::ControlCharacter { found: '\t', at: 2 })
    );
    assert_eq!(validate::path("a\0b"), Err(ValueError::NulCharacter));
    assert_eq!(validate::warc_prefix(""), Err(ValueError::WarcPrefixLength));
    assert_eq!(
        validate::warc_prefix("a b"),
        Err(ValueError::WarcPrefixCharacter)
    );
    assert_eq!(
        validate::strip_param("*"),
        Err(ValueError::NoParameterName {
            text: "*".to_owned()
        })
    );
    assert_eq!(
        validate::strip_param("a=b"),
        Err(ValueError::ParameterCharacter {
            text: "a=b".to_owned(),
            found: '='
        })
    );
    let e = validate::regex("(").unwrap_err();
    assert!(
        matches!(&e, ValueError::Regex { pattern, reason } if pattern == "(" && !reason.is_empty()),
        "{e:?}"
    );
}

#[test]
fn addresses_and_host_names() {
    assert_eq!(
        validate::nameserver("192.0.2.1:0"),
        Err(ValueError::NameserverPortZero {
            text: "192.0.2.1:0".to_owned()
        })
    );
    assert!(matches!(
        validate::nameserver("dns.example"),
        Err(ValueError::Nameserver { .. })
    ));
    assert_eq!(
        validate::ip_or_cidr("10.0.0.0/33"),
        Err(ValueError::CidrPrefix {
            text: "10.0.0.0/33".to_owned(),
            max: 32
        })
    );
    let v6: IpAddr = "::1".parse().unwrap();
    let e = validate::listen_addr("::1").unwrap_err();
    assert_eq!(
        e,
        ValueError::ListenAddress {
            text: "::1".to_owned(),
            ip: Some(v6)
        }
    );
    assert!(
        e.to_string()
            .contains("missing port (IPv6 addresses go in brackets)"),
        "{e}"
    );
    assert_eq!(
        validate::host_name("."),
        Err(ValueError::EmptyName(NameRole::HostName))
    );
    assert_eq!(
        validate::host_name("192.0.2.1"),
        Err(ValueError::IpNotHostName {
            text: "192.0.2.1".to_owned()
        })
    );
    assert_eq!(
        validate::host_pattern("a..b"),
        Err(ValueError::HostPatternEmptyLabel {
            text: "a..b".to_owned()
        })
    );
    assert_eq!(
        validate::host_pattern("*.b\u{fc}cher*"),
        Err(ValueError::HostPatternWildcardLabel {
            text: "*.b\u{fc}cher*".to_owned()
        })
    );
}

#[test]
fn chain_names_and_references() {
    assert_eq!(
        validate::chain_name("direct"),
        Err(ValueError::ReservedChainName)
    );
    assert_eq!(
        validate::chain_name("a b"),
        Err(ValueError::ChainNameCharacter {
            shown: "a b".to_owned()
        })
    );
    let declared = ["tor".to_owned()];
    assert_eq!(
        validate::chain_ref("tr", &declared),
        Err(ValueError::UnknownChain {
            shown: "tr".to_owned(),
            suggestion: Some("tor".to_owned())
        })
    );
    let e = validate::chain_ref("socks5://u:hunter2@h:1", &declared).unwrap_err();
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
fn the_loader_keeps_the_reason_next_to_the_position() {
    let text = "[crawl]\nseeds = [\"https://a.example/\", \"ftp://u:hunter2@b.example/\"]\n\
                max_depth = -1\n[security]\nallow_cidrs = [\"10.1.2.3/16\"]\n\
                [fetch]\nhttp2 = 1\n";
    let all = errors(text);
    let found: Vec<(usize, usize, ErrorKind, Option<ValueError>)> = all
        .iter()
        .map(|e| (e.line, e.column, e.kind, e.reason.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (
                2,
                32,
                ErrorKind::InvalidValue,
                Some(ValueError::Url {
                    role: UrlRole::Seed,
                    shown: "ftp://***@b.example/".to_owned(),
                    problem: UrlProblem::Scheme {
                        found: "ftp".to_owned()
                    }
                })
            ),
            (
                3,
                1,
                ErrorKind::InvalidValue,
                Some(ValueError::BelowMinimum { min: 0, found: -1 })
            ),
            (
                5,
                16,
                ErrorKind::InvalidValue,
                Some(ValueError::AddressBlock(CidrError::HostBits {
                    text: "10.1.2.3/16".to_owned(),
                    network: "10.1.0.0".parse().unwrap(),
                    prefix: 16
                }))
            ),
            (7, 1, ErrorKind::WrongType, None),
        ]
    );
    let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown[..3],
        [
            "test.toml:2:32: `crawl.seeds[1]`: URL `ftp://***@b.example/` must use http or https, \
             found `ftp`",
            "test.toml:3:1: `crawl.max_depth`: must not be negative, found -1",
            "test.toml:5:16: `security.allow_cidrs[0]`: invalid address block `10.1.2.3/16`: host \
             bits are set (did you mean `10.1.0.0/16`?)",
        ]
    );
    for e in &all {
        assert!(!format!("{e} {e:?}").contains("hunter2"), "{e:?}");
    }
}
