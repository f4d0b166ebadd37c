//! The dates of continuous crawling: HTTP dates (RFC 9110: IMF-fixdate and the obsolete RFC 850 and asctime
//! forms), sitemap `<lastmod>` W3C datetimes, and the RFC 3339 times of records.

use std::time::{Duration, UNIX_EPOCH};

/// An HTTP date as Unix seconds; None when unparseable or before 1970.
pub fn parse_http_date_s(value: &str) -> Option<u64> {
    let t = httpdate::parse_http_date(value.trim()).ok()?;
    t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// Unix seconds as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date(secs: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Unix milliseconds as RFC 3339 with milliseconds, UTC (as records write `fetched_at`).
pub fn rfc3339_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A W3C datetime (the sitemap protocol's `<lastmod>`: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, or a date with
/// `Thh:mm`, `Thh:mm:ss` or `Thh:mm:ss.s…` and a zone `Z` or `±hh:mm`) as Unix milliseconds. A date without a
/// time is the start of that day (UTC). None when malformed or before 1970.
pub fn parse_w3c_datetime_ms(value: &str) -> Option<u64> {
    let s = value.trim();
    let (date, time) = match s.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let year = digits(parts.next()?, 4)?;
    let month = parts.next().map_or(Some(1), |m| digits(m, 2))?;
    let day = parts.next().map_or(Some(1), |d| digits(d, 2))?;
    if parts.next().is_some() || !(1..=12).contains(&month) || day < 1 || day > days_in(year, month)
    {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    let mut ms = i64::try_from(days).ok()?.checked_mul(86_400_000)?;
    if let Some(t) = time {
        ms = ms.checked_add(time_of_day_ms(t)?)?;
    }
    u64::try_from(ms).ok()
}

/// `hh:mm[:ss[.fraction]]` and a zone, as milliseconds since midnight UTC (may be negative or past a day).
fn time_of_day_ms(t: &str) -> Option<i64> {
    let (clock, offset_min) = if let Some(c) = t.strip_suffix('Z') {
        (c, 0)
    } else {
        let i = t.rfind(['+', '-'])?;
        let (c, zone) = t.split_at(i);
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let (h, m) = zone.get(1..)?.split_once(':')?;
        let (h, m) = (digits(h, 2)?, digits(m, 2)?);
        if h > 23 || m > 59 {
            return None;
        }
        (c, sign * i64::from(h * 60 + m))
    };
    let mut fields = clock.split(':');
    let h = digits(fields.next()?, 2)?;
    let m = digits(fields.next()?, 2)?;
    let (sec, millis) = match fields.next() {
        None => (0, 0),
        Some(sec) => {
            let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
            if sec.contains('.') && (frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit())) {
                return None;
            }
            let millis = frac.bytes().chain(std::iter::repeat(b'0')).take(3);
            let millis = millis.fold(0u32, |n, b| n * 10 + u32::from(b - b'0'));
            (digits(whole, 2)?, millis)
        }
    };
    if fields.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let local = i64::from(((h * 60 + m) * 60 + sec) * 1000 + millis);
    Some(local - offset_min * 60_000)
}

/// Exactly `n` ASCII digits.
fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn days_in(year: u32, month: u32) -> u32 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`); None before 1970.
fn days_from_civil(year: u32, month: u32, day: u32) -> Option<u64> {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    u64::try_from(era * 146_097 + doe - 719_468).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_in_all_three_forms() {
        let t = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_http_date_s("Sun, 06 Nov 1994 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date_s("Sunday, 06-Nov-94 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date_s("Sun Nov  6 08:49:37 1994"), Some(t));
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        for bad in [
            "",
            "yesterday",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "1994-11-06",
        ] {
            assert_eq!(parse_http_date_s(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn w3c_datetimes_in_every_precision() {
        let day = 1_796_515_200_000; // 2026-12-06T00:00:00Z
        assert_eq!(rfc3339_ms(day), "2026-12-06T00:00:00.000Z");
        assert_eq!(parse_w3c_datetime_ms("2026-12-06"), Some(day));
        assert_eq!(parse_w3c_datetime_ms(" 2026-12-06\n"), Some(day));
        assert_eq!(parse_w3c_datetime_ms("2026-12"), Some(day - 5 * 86_400_000));
        assert_eq!(
            parse_w3c_datetime_ms("2026"),
            parse_w3c_datetime_ms("2026-01-01")
        );
        let h = 3_600_000;
        assert_eq!(
            parse_w3c_datetime_ms("2026-12-06T13:20Z"),
            Some(day + 13 * h + 20 * 60_000)
        );
        assert_eq!(
            parse_w3c_datetime_ms("2026-12-06T13:20:05+01:00"),
            Some(day + 12 * h + 20 * 60_000 + 5_000)
        );
        assert_eq!(
            parse_w3c_datetime_ms("2026-12-06T00:00:00.25-02:30"),
            Some(day + 2 * h + 30 * 60_000 + 250)
        );
        assert_eq!(parse_w3c_datetime_ms("2024-02-29"), Some(1_709_164_800_000));
        for bad in [
            "",
            "26-12-06",
            "2026-13-01",
            "2023-02-29",
            "2026-12-06T25:00Z",
            "2026-12-06T13:20",
            "2026-12-06T13:20:05.Z",
            "2026-12-06T13:20+1:00",
            "1969-12-31",
            "2026-12-06T13:20:05+24:00",
            "soon",
        ] {
            assert_eq!(parse_w3c_datetime_ms(bad), None, "{bad:?}");
        }
    }
}
