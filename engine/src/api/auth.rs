//! The bearer token of the control API: `Authorization: Bearer <token>` on every request when `[api] token_file`
//! is set, compared in constant time. The token is never logged, shown or echoed.

use crawl_core::config::Secret;
use http::HeaderValue;
use subtle::ConstantTimeEq as _;

/// How two byte strings are compared.
type Compare = fn(&[u8], &[u8]) -> bool;

/// Who may call the API.
#[derive(Clone)]
pub struct Auth {
    /// None: anyone who can connect (loopback only, as the config enforces).
    token: Option<Secret>,
    compare: Compare,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Auth {
    /// No token: every request is let in.
    pub fn open() -> Auth {
        Auth {
            token: None,
            compare: constant_time_eq,
        }
    }

    /// Every request must carry `token`.
    pub fn bearer(token: Secret) -> Auth {
        Auth {
            token: Some(token),
            compare: constant_time_eq,
        }
    }

    /// [`Auth::bearer`] with another comparison (tests count the calls).
    #[cfg(test)]
    pub(crate) fn bearer_with(token: Secret, compare: Compare) -> Auth {
        Auth {
            token: Some(token),
            compare,
        }
    }

    /// True when a token is required.
    pub fn is_on(&self) -> bool {
        self.token.is_some()
    }

    /// Whether a request with this `Authorization` header may go on.
    pub fn allows(&self, header: Option<&HeaderValue>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let Some(given) = header.and_then(|h| bearer_token(h.as_bytes())) else {
            return false;
        };
        (self.compare)(given, token.expose().as_bytes())
    }
}

/// The token of `Bearer <token>` (the scheme case-insensitive).
fn bearer_token(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Equal byte strings, in time that depends on the longer length only: both are walked to the end of the longer
/// (the shorter read as zeros past its end) and their lengths compared the same way, so neither where they differ
/// nor whether their lengths do shows in the time taken.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut same = (a.len() as u64).ct_eq(&(b.len() as u64));
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        same &= x.ct_eq(&y);
    }
    same.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comparison_says_equal_only_for_equal_strings() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        for (a, b) in [
            (&b"abc"[..], &b"abd"[..]),
            (b"abc", b"abc\0"),
            (b"abc", b"ab"),
            (b"", b"a"),
        ] {
            assert!(!constant_time_eq(a, b), "{a:?} {b:?}");
            assert!(!constant_time_eq(b, a), "{b:?} {a:?}");
        }
    }

    const TOKEN: &str = "0123456789abcdef0123";

    fn header(v: &str) -> HeaderValue {
        HeaderValue::from_str(v).unwrap()
    }

    #[test]
    fn only_the_right_bearer_token_passes() {
        let a = Auth::bearer(Secret::new(TOKEN));
        assert!(a.is_on());
        assert!(a.allows(Some(&header(&format!("Bearer {TOKEN}")))));
        assert!(a.allows(Some(&header(&format!("bearer  {TOKEN} ")))));
        for bad in [
            "Bearer 0123456789abcdef012".to_owned(),
            format!("Bearer {TOKEN}4"),
            format!("Basic {TOKEN}"),
            TOKEN.to_owned(),
            "Bearer ".to_owned(),
            "Bearer".to_owned(),
        ] {
            assert!(!a.allows(Some(&header(&bad))), "{bad:?}");
        }
        assert!(!a.allows(None));
        let open = Auth::open();
        assert!(!open.is_on() && open.allows(None));
    }

    #[test]
    fn the_comparison_is_constant_time_eq() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let text = format!("{:?}", Auth::bearer(Secret::new(TOKEN)));
        assert!(!text.contains(TOKEN), "{text}");
    }
}
