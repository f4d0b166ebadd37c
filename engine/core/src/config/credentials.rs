//! Request credentials scoped to one origin: `[[fetch.credentials]]` tables and the user name and password of a
//! seed URL.
//!
//! A [`Credential`] holds an `Authorization` and/or a `Cookie` header value for exactly one origin (scheme, host,
//! port; a default port counts as written). The HTTP client sends them with a request only when the request's own
//! URL has that origin, so a redirect to another origin, another port of the same host or another scheme (an https
//! credential is never sent over http) goes out without them. The values are kept in [`Secret`]s: `Debug` shows
//! `***`, and nothing here ever formats them.

use std::fmt;

use super::proxy::Secret;
use super::validate::hide_userinfo;
use super::value_error::{UrlProblem, UrlRole, ValueError};

/// The headers sent to one origin. `Debug` shows the origin and `***` for each value given.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    origin: url::Origin,
    /// The whole `Authorization` value (e.g. `Basic dXNlcjpwYXNz`, `Bearer ...`).
    pub authorization: Option<Secret>,
    /// The whole `Cookie` value (`name=value; other=value`).
    pub cookie: Option<Secret>,
}

impl Credential {
    /// Headers for the origin of `url` (an http or https URL with a host; `None` otherwise).
    pub fn new(
        url: &url::Url,
        authorization: Option<Secret>,
        cookie: Option<Secret>,
    ) -> Option<Self> {
        let origin = origin_of(url)?;
        Some(Self {
            origin,
            authorization,
            cookie,
        })
    }

    /// `Authorization: Basic` from the URL's user name and password (percent-decoded), for the URL's origin; `None`
    /// when the URL has neither or is not http(s).
    pub fn from_userinfo(url: &url::Url) -> Option<Self> {
        if url.username().is_empty() && url.password().is_none() {
            return None;
        }
        let decode = |s: &str| percent_decode(s);
        let pair = format!(
            "{}:{}",
            decode(url.username()),
            decode(url.password().unwrap_or(""))
        );
        let value = format!("Basic {}", data_encoding::BASE64.encode(pair.as_bytes()));
        Self::new(url, Some(Secret::new(value)), None)
    }

    /// The origin these headers belong to.
    pub fn origin(&self) -> &url::Origin {
        &self.origin
    }

    /// The origin as `scheme://host:port` (the port omitted when it is the scheme's default).
    pub fn origin_text(&self) -> String {
        self.origin.ascii_serialization()
    }

    /// Whether a request to `url` may carry these headers: same scheme, host and port.
    pub fn applies_to(&self, url: &url::Url) -> bool {
        origin_of(url).is_some_and(|o| o == self.origin)
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("origin", &self.origin_text())
            .field("authorization", &self.authorization)
            .field("cookie", &self.cookie)
            .finish()
    }
}

/// The origin of an http(s) URL with a host.
fn origin_of(url: &url::Url) -> Option<url::Origin> {
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    Some(url.origin())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            // Both digits are below 16.
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every credential of a crawl, at most one per origin.
#[derive(Clone, PartialEq, Eq, Default, Debug)]
pub struct Credentials(Vec<Credential>);

impl Credentials {
    /// The credential whose origin is the origin of `url`.
    pub fn for_url(&self, url: &url::Url) -> Option<&Credential> {
        if self.0.is_empty() {
            return None;
        }
        let origin = origin_of(url)?;
        self.0.iter().find(|c| c.origin == origin)
    }

    /// The credential given for `origin`.
    pub fn for_origin(&self, origin: &url::Origin) -> Option<&Credential> {
        self.0.iter().find(|c| &c.origin == origin)
    }

    /// Adds `c`; `Err` (with `c`) when its origin already has one.
    pub fn add(&mut self, c: Credential) -> Result<(), Credential> {
        if self.for_origin(&c.origin).is_some() {
            return Err(c);
        }
        self.0.push(c);
        Ok(())
    }

    /// `Authorization: Basic` from a seed's user name and password, for the seed's origin (nothing for a seed
    /// without them). The origin may already have a cookie or the very same authorization; another authorization
    /// for it is an error, which shows the seed without its user name and password.
    pub fn add_seed(&mut self, seed: &url::Url) -> Result<(), ValueError> {
        let Some(new) = Credential::from_userinfo(seed) else {
            return Ok(());
        };
        let Some(have) = self.0.iter_mut().find(|c| c.origin == new.origin) else {
            self.0.push(new);
            return Ok(());
        };
        match &have.authorization {
            None => {
                have.authorization = new.authorization;
                Ok(())
            }
            Some(a) if Some(a) == new.authorization.as_ref() => Ok(()),
            Some(_) => Err(ValueError::SeedCredentialConflict {
                seed: hide_userinfo(seed.as_str()).into_owned(),
                origin: new.origin_text(),
            }),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Credential> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl FromIterator<Credential> for Credentials {
    fn from_iter<I: IntoIterator<Item = Credential>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// A `fetch.credentials[].origin`: `http(s)://host[:port]`, nothing else (no user name or password, path, query or
/// fragment). Errors show the text with any user name and password hidden.
pub(super) fn origin(s: &str) -> Result<url::Url, ValueError> {
    let (url, shown) = super::validate::http_url(s, UrlRole::Origin)?;
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(ValueError::Url {
            role: UrlRole::Origin,
            shown,
            problem: UrlProblem::NotOrigin,
        });
    }
    Ok(url)
}

/// An `authorization` or `cookie` value: not empty, visible ASCII, spaces and tabs only (no line breaks or other
/// control characters). The value itself never appears in the error.
pub(super) fn header_secret(s: &str) -> Result<Secret, ValueError> {
    if s.trim().is_empty() {
        return Err(ValueError::Empty);
    }
    if let Some(pos) = s
        .bytes()
        .position(|b| !(b == b'\t' || (0x20..0x7f).contains(&b)))
    {
        return Err(ValueError::SecretCharacter { at: pos + 1 });
    }
    Ok(Secret::new(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn a_credential_applies_to_its_own_origin_only() {
        let c = Credential::new(
            &url("https://Intranet.Example:8443/"),
            Some(Secret::new("Bearer t")),
            None,
        )
        .unwrap();
        assert!(c.applies_to(&url("https://intranet.example:8443/a/b?q=1")));
        for other in [
            "http://intranet.example:8443/",
            "https://intranet.example/",
            "https://intranet.example:8444/",
            "https://other.example:8443/",
            "https://sub.intranet.example:8443/",
            "ftp://intranet.example:8443/",
        ] {
            assert!(!c.applies_to(&url(other)), "{other}");
        }
        assert_eq!(c.origin_text(), "https://intranet.example:8443");
    }

    #[test]
    fn a_default_port_is_the_same_origin_written_or_not() {
        let c = Credential::new(
            &url("https://a.example:443"),
            None,
            Some(Secret::new("k=v")),
        )
        .unwrap();
        assert!(c.applies_to(&url("https://a.example/x")));
        assert!(!c.applies_to(&url("http://a.example/x")));
        assert!(!c.applies_to(&url("http://a.example:443/x")));
    }

    #[test]
    fn userinfo_becomes_basic_for_that_origin() {
        let c =
            Credential::from_userinfo(&url("http://al%20ice:p%40ss%3Aw@127.0.0.1:8080/x")).unwrap();
        // "al ice:p@ss:w"
        assert_eq!(
            c.authorization.as_ref().map(Secret::expose),
            Some("Basic YWwgaWNlOnBAc3M6dw==")
        );
        assert!(c.applies_to(&url("http://127.0.0.1:8080/other")));
        assert!(!c.applies_to(&url("http://127.0.0.1:8081/")));
        assert!(Credential::from_userinfo(&url("http://127.0.0.1:8080/")).is_none());
        let user_only = Credential::from_userinfo(&url("http://bob@h.example/")).unwrap();
        assert_eq!(
            user_only.authorization.as_ref().map(Secret::expose),
            Some("Basic Ym9iOg==")
        );
    }

    #[test]
    fn debug_never_shows_the_values() {
        let c = Credential::new(
            &url("https://a.example"),
            Some(Secret::new("Bearer topsecret")),
            Some(Secret::new("sid=alsosecret")),
        )
        .unwrap();
        let shown = format!("{c:?} {:?}", Credentials::from_iter([c.clone()]));
        assert!(shown.contains("https://a.example"), "{shown}");
        assert!(
            !shown.contains("topsecret") && !shown.contains("alsosecret"),
            "{shown}"
        );
    }

    #[test]
    fn one_credential_per_origin() {
        let mut all = Credentials::default();
        let a = Credential::new(&url("http://a.example"), Some(Secret::new("x")), None).unwrap();
        all.add(a.clone()).unwrap();
        assert!(all.add(a).is_err());
        let b = Credential::new(&url("http://a.example:81"), Some(Secret::new("y")), None).unwrap();
        all.add(b).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all.for_url(&url("http://a.example:81/p"))
                .and_then(|c| c.authorization.as_ref())
                .map(Secret::expose),
            Some("y")
        );
        assert!(all.for_url(&url("https://a.example/")).is_none());
    }

    #[test]
    fn seeds_add_basic_auth_to_their_origin() {
        let mut all: Credentials =
            [Credential::new(&url("http://a.example"), None, Some(Secret::new("k=v"))).unwrap()]
                .into_iter()
                .collect();
        all.add_seed(&url("http://u:p@a.example/x")).unwrap();
        all.add_seed(&url("http://u:p@a.example/y")).unwrap();
        all.add_seed(&url("http://b.example/")).unwrap();
        let e = all
            .add_seed(&url("http://u:hunter2@a.example/z"))
            .unwrap_err();
        assert_eq!(
            e,
            ValueError::SeedCredentialConflict {
                seed: "http://***@a.example/z".to_owned(),
                origin: "http://a.example".to_owned()
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("seed `http://***@a.example/z`")
                && text.contains("`http://a.example`")
                && !text.contains("hunter2")
                && !format!("{e:?}").contains("hunter2"),
            "{text}"
        );
        assert_eq!(all.len(), 1);
        let a = all.for_url(&url("http://a.example/")).unwrap();
        assert_eq!(
            a.authorization.as_ref().map(Secret::expose),
            Some("Basic dTpw")
        );
        assert_eq!(a.cookie.as_ref().map(Secret::expose), Some("k=v"));
    }

    #[test]
    fn origins_and_values_are_validated_without_echoing_secrets() {
        assert!(origin("https://intranet.example:8443").is_ok());
        assert!(origin("http://127.0.0.1").is_ok());
        let scheme = UrlProblem::Scheme {
            found: "ftp".to_owned(),
        };
        for (bad, problem, why) in [
            (
                "intranet.example",
                UrlProblem::Syntax(url::ParseError::RelativeUrlWithoutBase),
                "invalid origin",
            ),
            ("ftp://a.example", scheme, "http or https"),
            (
                "https://a.example/path",
                UrlProblem::NotOrigin,
                "only scheme, host and port",
            ),
            (
                "https://a.example/?q",
                UrlProblem::NotOrigin,
                "only scheme, host and port",
            ),
        ] {
            let e = origin(bad).unwrap_err();
            assert_eq!(
                e,
                ValueError::Url {
                    role: UrlRole::Origin,
                    shown: bad.to_owned(),
                    problem
                }
            );
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
        let e = origin("https://user:hunter2@a.example").unwrap_err();
        assert!(
            matches!(
                &e,
                ValueError::Url { role: UrlRole::Origin, shown, problem: UrlProblem::Credentials }
                    if shown == "https://***@a.example"
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("user name or password") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(header_secret("Basic abc").is_ok());
        assert_eq!(header_secret(" ").err(), Some(ValueError::Empty));
        let e = header_secret("Bearer hunter2\r\nX-Evil: 1").err().unwrap();
        assert_eq!(e, ValueError::SecretCharacter { at: 15 });
        let text = e.to_string();
        assert!(
            text.contains("character 15") && !text.contains("hunter2"),
            "{text}"
        );
    }
}
