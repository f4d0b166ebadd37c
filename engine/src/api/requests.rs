//! Request bodies, path parameters and queries turned into validated inputs; every refusal is a 400 naming the
//! field (or query parameter) at fault.

use super::answer::ErrorAnswer;
use super::dto::{AddUrlsDto, PolitenessDto};
use super::fields::Fields;
use super::ops::HostSort;
use crawl_core::control::HostMatch;
use crawl_core::control::alerts::{Notification, NotificationError};

/// Most URLs one `POST /v1/urls` may carry.
pub const MAX_URLS: usize = 10_000;
/// `GET /v1/hosts`' default `limit`.
pub const DEFAULT_HOSTS_LIMIT: usize = 50;
/// `GET /v1/hosts`' largest `limit`.
pub const MAX_HOSTS_LIMIT: usize = 10_000;
/// The longest delay an operator may set: an hour.
pub const MAX_DELAY_MS: u64 = 3_600_000;
/// The longest expiry an operator may set: a year.
pub const MAX_EXPIRES_S: u64 = 366 * 86_400;

/// The body of `POST /v1/urls`.
pub fn add_urls(body: &[u8]) -> Result<AddUrlsDto, ErrorAnswer> {
    let mut f = Fields::parse(body, &["urls", "depth", "force"])?;
    let urls = f.take_list::<String>("urls")?.ok_or_else(|| {
        ErrorAnswer::field(
            "missing_field",
            "urls",
            "`urls` is required: the URLs to add",
        )
    })?;
    if urls.is_empty() {
        return Err(ErrorAnswer::field(
            "invalid",
            "urls",
            "`urls` is empty: give at least one URL",
        ));
    }
    if urls.len() > MAX_URLS {
        return Err(ErrorAnswer::field(
            "invalid",
            "urls",
            format!("at most {MAX_URLS} URLs per request, found {}", urls.len()),
        ));
    }
    Ok(AddUrlsDto {
        urls,
        depth: f.take("depth")?.unwrap_or(0),
        force: f.take("force")?.unwrap_or(false),
    })
}

/// The body of `POST /v1/pause` and `POST /v1/resume`: None = the crawl.
pub fn target(body: &[u8]) -> Result<Option<HostMatch>, ErrorAnswer> {
    let mut f = Fields::parse(body, &["host"])?;
    match f.take::<String>("host")? {
        Some(h) => host(&h, "host").map(Some),
        None => Ok(None),
    }
}

/// The body of `POST /v1/alerts`: an Alertmanager webhook notification, version 4.
pub fn notification(body: &[u8]) -> Result<Notification, ErrorAnswer> {
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(body) {
        return Err(ErrorAnswer::bad_request(
            "malformed_json",
            format!("the body is not valid JSON: {e}"),
        ));
    }
    Notification::parse(body).map_err(|e| match e {
        NotificationError::Malformed(_) => ErrorAnswer::bad_request("invalid_body", e.to_string()),
        NotificationError::Version(_) => {
            ErrorAnswer::field("unsupported_version", "version", e.to_string())
        }
    })
}

/// The `{host}` of a path, percent-decoded.
pub fn host_param(raw: &str) -> Result<HostMatch, ErrorAnswer> {
    let decoded = percent_decode(raw).ok_or_else(|| {
        ErrorAnswer::field(
            "invalid",
            "host",
            "the host in the path is not valid percent-encoded UTF-8",
        )
    })?;
    host(&decoded, "host")
}

fn host(text: &str, field: &str) -> Result<HostMatch, ErrorAnswer> {
    HostMatch::parse(text).map_err(|e| {
        ErrorAnswer::field(
            "invalid",
            field,
            format!("{e} (e.g. `example.org`, or `example.org:8080` for one port)"),
        )
    })
}

/// The body of `PUT /v1/hosts/{host}/politeness`.
pub fn politeness(body: &[u8]) -> Result<PolitenessDto, ErrorAnswer> {
    let mut f = Fields::parse(body, &["delay_ms", "concurrency", "expires_s"])?;
    let p = PolitenessDto {
        delay_ms: f.take("delay_ms")?,
        concurrency: f.take("concurrency")?,
        expires_s: f.take("expires_s")?,
    };
    if p.is_clear() {
        return Err(ErrorAnswer::field(
            "invalid",
            "delay_ms",
            "give `delay_ms`, `concurrency` or both (DELETE goes back to the configured politeness)",
        ));
    }
    if p.concurrency == Some(0) {
        return Err(ErrorAnswer::field(
            "invalid",
            "concurrency",
            "`concurrency` must be at least 1",
        ));
    }
    if let Some(d) = p.delay_ms.filter(|d| *d > MAX_DELAY_MS) {
        return Err(ErrorAnswer::field(
            "invalid",
            "delay_ms",
            format!("`delay_ms` must be at most {MAX_DELAY_MS} (an hour), found {d}"),
        ));
    }
    if let Some(e) = p.expires_s.filter(|e| *e == 0 || *e > MAX_EXPIRES_S) {
        return Err(ErrorAnswer::field(
            "invalid",
            "expires_s",
            format!("`expires_s` must be from 1 to {MAX_EXPIRES_S} (a year), found {e}"),
        ));
    }
    Ok(p)
}

/// The query of `GET /v1/hosts`: `sort` (default queued) and `limit` (default 50, at most 10,000).
pub fn hosts_query(query: Option<&str>) -> Result<(HostSort, usize), ErrorAnswer> {
    let (mut sort, mut limit) = (HostSort::default(), DEFAULT_HOSTS_LIMIT);
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "sort" => {
                sort = HostSort::parse(&v).ok_or_else(|| {
                    let names: Vec<&str> = HostSort::ALL.iter().map(|s| s.as_str()).collect();
                    ErrorAnswer::field(
                        "invalid",
                        "sort",
                        format!("unknown sort `{v}`; expected one of {}", names.join(", ")),
                    )
                })?;
            }
            "limit" => {
                limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_HOSTS_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ErrorAnswer::field(
                            "invalid",
                            "limit",
                            format!(
                                "`limit` must be a number from 1 to {MAX_HOSTS_LIMIT}, found `{v}`"
                            ),
                        )
                    })?;
            }
            other => {
                return Err(ErrorAnswer::field(
                    "unknown_parameter",
                    other.to_owned(),
                    format!("unknown query parameter `{other}`; expected `sort`, `limit`"),
                ));
            }
        }
    }
    Ok((sort, limit))
}

/// `%XX` sequences decoded; None when one is malformed or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(e: ErrorAnswer) -> (u16, String) {
        (e.status.as_u16(), e.field.unwrap_or_default())
    }

    #[test]
    fn urls_are_one_to_ten_thousand() {
        let a = add_urls(br#"{"urls": ["http://a.example/"], "depth": 1, "force": true}"#).unwrap();
        assert_eq!((a.urls.len(), a.depth, a.force), (1, 1, true));
        assert_eq!(field_of(add_urls(b"{}").unwrap_err()), (400, "urls".into()));
        assert_eq!(
            field_of(add_urls(br#"{"urls": []}"#).unwrap_err()),
            (400, "urls".into())
        );
        let many = serde_json::json!({ "urls": vec!["http://a.example/"; MAX_URLS + 1] });
        let e = add_urls(&serde_json::to_vec(&many).unwrap()).unwrap_err();
        assert!(e.message.starts_with("at most 10000 URLs"), "{}", e.message);
        let e = add_urls(br#"{"urls": ["a"], "depth": -1}"#).unwrap_err();
        assert_eq!(field_of(e), (400, "depth".into()));
    }

    #[test]
    fn targets_are_the_crawl_or_a_host() {
        assert_eq!(target(b"").unwrap(), None);
        assert_eq!(target(b"{}").unwrap(), None);
        assert_eq!(
            target(br#"{"host": "Example.org:8080"}"#)
                .unwrap()
                .map(|h| h.to_string()),
            Some("example.org:8080".to_owned())
        );
        assert_eq!(
            field_of(target(br#"{"host": "a/b"}"#).unwrap_err()),
            (400, "host".into())
        );
        assert_eq!(
            field_of(target(br#"{"host": 5}"#).unwrap_err()),
            (400, "host".into())
        );
        assert_eq!(
            host_param("%5B%3A%3A1%5D:81").unwrap().to_string(),
            "[::1]:81"
        );
        assert_eq!(
            host_param("example.org").unwrap().to_string(),
            "example.org"
        );
        assert!(host_param("%zz").is_err());
        assert!(host_param("%FF").is_err());
    }

    #[test]
    fn politeness_needs_a_delay_or_a_concurrency_within_bounds() {
        let p = politeness(br#"{"delay_ms": 500, "expires_s": 60}"#).unwrap();
        assert_eq!(
            (p.delay_ms, p.concurrency, p.expires_s),
            (Some(500), None, Some(60))
        );
        assert_eq!(
            field_of(politeness(b"{}").unwrap_err()),
            (400, "delay_ms".into())
        );
        assert_eq!(
            field_of(politeness(br#"{"expires_s": 5}"#).unwrap_err()),
            (400, "delay_ms".into())
        );
        assert_eq!(
            field_of(politeness(br#"{"concurrency": 0}"#).unwrap_err()),
            (400, "concurrency".into())
        );
        assert_eq!(
            field_of(politeness(br#"{"delay_ms": 3600001}"#).unwrap_err()),
            (400, "delay_ms".into())
        );
        assert!(politeness(br#"{"delay_ms": 3600000}"#).is_ok());
        assert_eq!(
            field_of(politeness(br#"{"delay_ms": 1, "expires_s": 0}"#).unwrap_err()),
            (400, "expires_s".into())
        );
        assert_eq!(
            field_of(politeness(br#"{"delay_ms": 1, "concurency": 2}"#).unwrap_err()),
            (400, "concurency".into())
        );
    }

    #[test]
    fn a_notification_is_alertmanagers_webhook_version_4() {
        let n = notification(
            br#"{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"A"},"fingerprint":"f"}]}"#,
        )
        .unwrap();
        assert_eq!((n.alerts.len(), n.alerts[0].name()), (1, "A"));
        let e = notification(b"{\"version\": ").unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (400, "malformed_json"));
        assert!(e.message.contains("line 1"), "{}", e.message);
        let e = notification(br#"{"version":"4"}"#).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), ("invalid_body", None));
        assert!(
            e.message.contains("missing field `alerts`"),
            "{}",
            e.message
        );
        let e = notification(br#"{"version":"4","alerts":[{"labels":{}}]}"#).unwrap_err();
        assert!(
            e.message.contains("missing field `status`"),
            "{}",
            e.message
        );
        let e = notification(br#"{"version":"3","alerts":[]}"#).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref(), e.message.as_str()),
            (
                "unsupported_version",
                Some("version"),
                "webhook version 3 is not supported (version 4 is)"
            )
        );
    }

    #[test]
    fn the_hosts_query_has_a_sort_and_a_limit() {
        assert_eq!(hosts_query(None).unwrap(), (HostSort::Queued, 50));
        assert_eq!(
            hosts_query(Some("sort=in_flight&limit=10000")).unwrap(),
            (HostSort::InFlight, 10_000)
        );
        assert_eq!(
            field_of(hosts_query(Some("sort=size")).unwrap_err()),
            (400, "sort".into())
        );
        for bad in ["limit=0", "limit=10001", "limit=x"] {
            assert_eq!(
                field_of(hosts_query(Some(bad)).unwrap_err()),
                (400, "limit".into())
            );
        }
        assert_eq!(
            field_of(hosts_query(Some("page=2")).unwrap_err()),
            (400, "page".into())
        );
    }
}
