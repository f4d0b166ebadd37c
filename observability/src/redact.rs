//! URLs as they may appear in spans, logs and metrics: credentials and signature-like query values removed.

use std::borrow::Cow;

/// Query keys whose values are secrets (compared case-insensitively).
const SECRET_KEYS: &[&str] = &[
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "token",
    "access_token",
    "id_token",
    "auth",
    "key",
    "api_key",
    "apikey",
    "password",
    "passwd",
    "secret",
    "session",
    "sessionid",
    "code",
];

/// The replacement of a secret query value.
pub const REDACTED: &str = "REDACTED";

/// Whether a query key names a secret.
pub fn is_secret_key(key: &str) -> bool {
    SECRET_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key))
}

/// `url` with its userinfo replaced by `***` and the values of secret query keys by `REDACTED`. Text that is not
/// a URL is returned with everything after `?` dropped (it cannot be judged). Borrowed when nothing changed.
pub fn redact_url(url: &str) -> Cow<'_, str> {
    // Userinfo ends at an `@` and a query starts at a `?`: without either there is nothing to redact, and the
    // parse (a few thousand instructions a URL, on every exported trace) is skipped.
    if memchr::memchr2(b'@', b'?', url.as_bytes()).is_none() {
        return Cow::Borrowed(url);
    }
    let Ok(mut u) = url::Url::parse(url) else {
        return Cow::Borrowed(url.split('?').next().unwrap_or(""));
    };
    if !u.username().is_empty() {
        let _ = u.set_username("***");
    }
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    if let Some(q) = u.query()
        && !q.is_empty()
    {
        let mut changed = false;
        let parts: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_key(&percent_decoded(k)) => {
                    changed = true;
                    format!("{k}={REDACTED}")
                }
                _ => pair.to_owned(),
            })
            .collect();
        if changed {
            u.set_query(Some(&parts.join("&")));
        }
    }
    Cow::Owned(u.to_string())
}

fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if b == b'+' { b' ' } else { b });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_replaced() {
        assert_eq!(
            redact_url("http://user:pw@example.com/a?b=1"),
            "http://***:***@example.com/a?b=1"
        );
        assert_eq!(
            redact_url("https://tok@example.com/"),
            "https://***@example.com/"
        );
    }

    #[test]
    fn secret_query_values_are_replaced_and_others_kept() {
        let r = redact_url(
            "https://b.s3.amazonaws.com/o?X-Amz-Signature=abc&X-Amz-Date=20260101&page=2&Token=zz&%6Bey=k",
        );
        assert_eq!(
            r,
            "https://b.s3.amazonaws.com/o?X-Amz-Signature=REDACTED&X-Amz-Date=20260101&page=2&Token=REDACTED&%6Bey=REDACTED"
        );
        assert_eq!(redact_url("http://a/?q=1&p"), "http://a/?q=1&p");
    }

    #[test]
    fn a_url_without_userinfo_or_query_is_kept() {
        assert_eq!(
            redact_url("http://127.0.0.30:8080/page/12#top"),
            "http://127.0.0.30:8080/page/12#top"
        );
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn not_a_url_loses_its_query() {
        assert_eq!(redact_url("not a url?sig=1"), "not a url");
    }
}
