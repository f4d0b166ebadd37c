//! URLs: seeds, origins, the DoH endpoint and the OTLP collector, each with its own rules, and
//! the text a URL is shown by (its user name and password hidden).

use crate::config::proxy::redact_credentials;
use crate::config::value_error::{UrlProblem, UrlRole, ValueError};

/// `s` as written, with the user name and password of a `scheme://user:pass@host` authority replaced by `***`.
pub fn hide_userinfo(s: &str) -> std::borrow::Cow<'_, str> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return s.into();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]).into(),
        None => s.into(),
    }
}

/// A seed: an absolute `http`/`https` URL with a host. A seed written without its scheme (`www.example.org`,
/// `localhost:8080/`) is refused with the URL it most likely stands for ([`UrlProblem::NoScheme`]).
pub fn seed_url(s: &str) -> Result<url::Url, ValueError> {
    // A seed may carry a user name and password: never shown.
    let bad = |problem| ValueError::Url {
        role: UrlRole::Seed,
        shown: hide_seed_userinfo(s).into_owned(),
        problem,
    };
    let url = match url::Url::parse(s) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) if without_scheme(s).is_some() => {
            return Err(bad(UrlProblem::NoScheme {
                suggestion: without_scheme(s).unwrap_or_default(),
            }));
        }
        Err(e) => return Err(bad(UrlProblem::Syntax(e))),
    };
    if !matches!(url.scheme(), "http" | "https") {
        // `localhost:8080/` parses as the scheme `localhost` with the path `8080/`.
        if let Some(suggestion) = host_and_port(s).then(|| without_scheme(s)).flatten() {
            return Err(bad(UrlProblem::NoScheme { suggestion }));
        }
        return Err(bad(UrlProblem::Scheme {
            found: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    Ok(url)
}

/// The URL that `s`, written without a scheme, stands for (its user name and password hidden): `http` for
/// `localhost`, an IP address or a port other than 443, `https` otherwise. None when `s` with a scheme is not a URL
/// with a host either (`not a url`, `/path`).
fn without_scheme(s: &str) -> Option<String> {
    if s.contains("://") || (s.starts_with('/') && !s.starts_with("//")) {
        return None;
    }
    let rest = s.strip_prefix("//").unwrap_or(s);
    let url = url::Url::parse(&format!("https://{rest}")).ok()?;
    let host = url.host()?;
    let plain = match host {
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            name == "localhost" || name.ends_with(".localhost")
        }
        url::Host::Ipv4(_) | url::Host::Ipv6(_) => true,
    } || url.port().is_some();
    let url = if plain {
        url::Url::parse(&format!("http://{rest}")).ok()?
    } else {
        url
    };
    Some(hide_userinfo(url.as_str()).into_owned())
}

/// True when `s` starts with `name:port` (digits) followed by nothing or a path, query or fragment: a host and
/// port that the URL parser takes for a scheme and a path.
fn host_and_port(s: &str) -> bool {
    let end = s.find(['/', '?', '#']).unwrap_or(s.len());
    s[..end].split_once(':').is_some_and(|(name, port)| {
        !name.is_empty() && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
    })
}

/// [`hide_userinfo`] for a seed, which may also be written scheme-relative (`//user:pass@host/`).
fn hide_seed_userinfo(s: &str) -> std::borrow::Cow<'_, str> {
    match s.strip_prefix("//") {
        Some(rest) if !s.contains("://") => match hide_userinfo(&format!("x://{rest}")) {
            std::borrow::Cow::Owned(hidden) => format!("//{}", &hidden[4..]).into(),
            std::borrow::Cow::Borrowed(_) => s.into(),
        },
        _ => hide_userinfo(s),
    }
}

/// A DoH endpoint: an absolute `https` URL with a host.
pub(in crate::config) fn doh_url(s: &str) -> Result<url::Url, ValueError> {
    let bad = |problem| ValueError::Url {
        role: UrlRole::Doh,
        shown: redact_credentials(s),
        problem,
    };
    let url = url::Url::parse(s).map_err(|e| bad(UrlProblem::Syntax(e)))?;
    if url.scheme() != "https" {
        return Err(bad(UrlProblem::Scheme {
            found: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    Ok(url)
}

/// An http or https URL with a host and without a user name or password, and the text to show it by (any user
/// name and password hidden); `role` names it in the errors.
pub(in crate::config) fn http_url(
    s: &str,
    role: UrlRole,
) -> Result<(url::Url, String), ValueError> {
    let shown = redact_credentials(s);
    let bad = |problem| ValueError::Url {
        role,
        shown: shown.clone(),
        problem,
    };
    let url = url::Url::parse(s).map_err(|e| bad(UrlProblem::Syntax(e)))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(UrlProblem::Scheme {
            found: url.scheme().to_owned(),
        }));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(UrlProblem::Credentials));
    }
    Ok((url, shown))
}

/// An OTLP/gRPC collector `http(s)://host:port`: explicit port (not 0), no credentials, no
/// path other than `/`, no query or fragment. `""` = none.
pub(in crate::config) fn otlp_endpoint(s: &str) -> Result<Option<url::Url>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    let (url, shown) = http_url(s, UrlRole::OtlpEndpoint)?;
    let bad = |problem| {
        Err(ValueError::Url {
            role: UrlRole::OtlpEndpoint,
            shown: shown.clone(),
            problem,
        })
    };
    // `Url::port` hides a port equal to the scheme's default, so look at the text as written.
    if url.port().is_none() && !has_explicit_port(s) {
        return bad(UrlProblem::NoPort);
    }
    if url.port() == Some(0) {
        return bad(UrlProblem::PortZero);
    }
    if url.path() != "/" {
        return bad(UrlProblem::Path {
            path: url.path().to_owned(),
        });
    }
    if url.query().is_some() || url.fragment().is_some() {
        return bad(UrlProblem::QueryOrFragment);
    }
    Ok(Some(url))
}

/// True when the authority of `scheme://authority/...` ends in `:port` with a non-empty port.
fn has_explicit_port(s: &str) -> bool {
    let rest = s.split_once("://").map_or(s, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // For `[v6]:port` only what follows the bracket can be the port.
    let after_host = host_port.rsplit_once(']').map_or(host_port, |(_, p)| p);
    after_host
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn hide_userinfo_touches_only_an_authority() {
        assert_eq!(
            hide_userinfo("https://u:p@h.example:8/a@b"),
            "https://***@h.example:8/a@b"
        );
        assert_eq!(
            hide_userinfo("http://h.example/a@b"),
            "http://h.example/a@b"
        );
        assert_eq!(
            hide_userinfo("mailto:x@example.com"),
            "mailto:x@example.com"
        );
        assert_eq!(hide_userinfo("http://u@h?q=@"), "http://***@h?q=@");
    }

    #[test]
    fn seed_urls_say_which_part_is_wrong_without_the_password() {
        let e = seed_url("ftp://u:hunter2@a.example/").unwrap_err();
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
        let e = seed_url("not a url").unwrap_err();
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
        assert!(seed_url("https://a.example/").is_ok());
    }

    #[test]
    fn a_seed_without_a_scheme_is_refused_with_the_url_it_stands_for() {
        let cases = [
            ("www.example.org", "https://www.example.org/"),
            ("example.org/docs/?q=1", "https://example.org/docs/?q=1"),
            ("//cdn.example.org/a", "https://cdn.example.org/a"),
            ("localhost:8080/", "http://localhost:8080/"),
            ("localhost:8080", "http://localhost:8080/"),
            ("localhost", "http://localhost/"),
            ("127.0.0.1:3000/x", "http://127.0.0.1:3000/x"),
            ("10.0.0.8", "http://10.0.0.8/"),
            ("www.example.org:8443/", "http://www.example.org:8443/"),
            ("www.example.org:443/", "https://www.example.org/"),
            (
                "//alice:hunter2@intranet.example/",
                "https://***@intranet.example/",
            ),
        ];
        for (seed, want) in cases {
            let e = seed_url(seed).unwrap_err();
            let problem = UrlProblem::NoScheme {
                suggestion: want.to_owned(),
            };
            let (role, _, found) = url_problem(&e).unwrap_or_else(|| panic!("{seed}: {e:?}"));
            assert_eq!((role, found), (UrlRole::Seed, &problem), "{seed}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
            assert!(!e.to_string().contains("alice"), "{e}");
        }
        assert_eq!(
            seed_url("www.example.org").unwrap_err().to_string(),
            "URL `www.example.org` has no scheme; did you mean `https://www.example.org/`?"
        );
        assert_eq!(
            seed_url("localhost:8080/").unwrap_err().to_string(),
            "URL `localhost:8080/` has no scheme; did you mean `http://localhost:8080/`?"
        );
        // Other schemes, and text that is no URL with a scheme either, keep their own reasons.
        for seed in [
            "mailto:a@example.org",
            "ftp://example.org/",
            "javascript:void(0)",
        ] {
            let e = seed_url(seed).unwrap_err();
            assert!(
                matches!(url_problem(&e), Some((_, _, UrlProblem::Scheme { .. }))),
                "{seed}: {e:?}"
            );
        }
        for seed in ["not a url", "/only/a/path", ""] {
            let e = seed_url(seed).unwrap_err();
            assert!(
                matches!(url_problem(&e), Some((_, _, UrlProblem::Syntax(_)))),
                "{seed}: {e:?}"
            );
        }
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
            let e = otlp_endpoint(s).unwrap_err();
            let (role, shown, problem) = url_problem(&e).unwrap_or_else(|| panic!("{s}: {e:?}"));
            assert_eq!((role, problem), (UrlRole::OtlpEndpoint, &want), "{s}");
            assert!(!shown.contains("pw@"), "{shown}");
            assert!(!e.to_string().contains("pw@"), "{e}");
        }
        assert_eq!(otlp_endpoint(""), Ok(None));

        let e = doh_url("http://dns.example/dns-query").unwrap_err();
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
    fn a_port_written_out_counts_even_when_it_is_the_default() {
        for s in [
            "http://collector:80",
            "https://collector:443/",
            "http://[::1]:80",
            "http://u@collector:80/",
        ] {
            assert!(has_explicit_port(s), "{s}");
        }
        for s in [
            "http://collector",
            "http://collector:",
            "http://[::1]",
            "http://collector/a:1",
            "http://u:pw@collector",
        ] {
            assert!(!has_explicit_port(s), "{s}");
        }
        assert!(otlp_endpoint("http://collector:80").is_ok_and(|u| u.is_some()));
    }
}
