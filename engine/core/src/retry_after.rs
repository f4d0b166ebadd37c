//! Parsing of the HTTP `Retry-After` header (RFC 9110 §10.2.3).
//!
//! The value is either a number of seconds (`delta-seconds`) or an HTTP-date in any of the three
//! formats HTTP allows (IMF-fixdate, obsolete RFC 850 and asctime). The result is a delay from
//! `now`; callers should clamp it to their own maximum before adding it to an `Instant`.

use std::time::{Duration, SystemTime};

/// Parses a `Retry-After` value into a delay from `now`.
///
/// * `"120"` gives 120 s; digit strings too large for `u64` saturate to `u64::MAX` seconds.
/// * An HTTP-date gives the time left until that date, or `Some(0)` when it is already past.
/// * Anything else (empty, negative, fractional, garbage) gives `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sun, 06 Nov 1994 08:49:37 GMT
    fn epoch_1994() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    #[test]
    fn delta_seconds() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("  30 ", now),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn huge_delta_saturates() {
        let now = SystemTime::now();
        assert_eq!(
            parse_retry_after("99999999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn imf_fixdate() {
        let now = epoch_1994() - Duration::from_secs(60);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn rfc850_date() {
        let now = epoch_1994() - Duration::from_secs(5);
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn asctime_date() {
        let now = epoch_1994() - Duration::from_secs(3600);
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:37 1994", now),
            Some(Duration::from_secs(3600))
        );
    }

    #[test]
    fn past_date_is_zero() {
        let now = epoch_1994() + Duration::from_secs(1000);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn junk_is_none() {
        let now = SystemTime::now();
        for v in [
            "",
            "   ",
            "-5",
            "1.5",
            "soon",
            "12abc",
            "+10",
            "Sun, 32 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_retry_after(v, now), None, "{v:?}");
        }
    }
}
