//! What the parser does with a fetched body, as plain functions: decode it within the size limit, extract and judge
//! links of HTML pages, read robots.txt and sitemaps, resolve redirect targets.

use super::css::css_urls;
use super::decode::{DecodeError, decode_body};
use super::extract::{ExtractOptions, extract_links};
use super::sitemap::{SitemapKind, parse_sitemap};
use crate::protocol::RawResponse;
use crate::protocol::{
    FoundLink, Job, JobResult, PageOutcome, RedirectError, RobotsOutcome, SitemapOutcome,
};
use crawl_core::canon;
use crawl_core::frontier::JobKind;
use crawl_core::record::Reason;
use crawl_core::robots::{MAX_ROBOTS_BYTES, Robots, StatusClass, classify_status, product_token};
use crawl_core::scope::ScopePolicy;
use crawl_core::urlparts::PartsAt;
use crawl_output::warc::Sha1;
use std::sync::Arc;
use std::time::SystemTime;

/// `304 Not Modified`.
const NOT_MODIFIED: u16 = 304;
/// The error of a 304 answering a request that sent no validators (RFC 9110 allows it only for conditional ones).
pub const UNEXPECTED_304: &str = "unexpected 304 without a conditional request";

/// What the parser needs to know.
#[derive(Debug, Clone)]
pub struct ParseSettings {
    pub scope: Arc<ScopePolicy>,
    pub user_agent: String,
    pub max_body_bytes: u64,
    pub sitemap_max_bytes: u64,
    pub sitemap_max_urls: usize,
    /// WARC output is on: each fetch is prepared for the archive at this gzip level.
    pub archive_level: Option<u32>,
    /// Links (and, separately, requisites) kept per page.
    pub max_links_per_page: usize,
    /// With `crawl.embeds`: the scope page requisites are judged against (`crawl.embeds_scope`); `None` when
    /// requisites are not fetched.
    pub embeds: Option<Arc<ScopePolicy>>,
    /// Pages whose decoded body is at most this many bytes are parsed on the fetcher's thread ([`process_inline`]);
    /// 0: every response goes to the parser threads.
    pub inline_max_bytes: usize,
}

/// Turns a fetched response into the job's result.
pub fn process(settings: &ParseSettings, job: &Job, resp: RawResponse) -> JobResult {
    process_at(settings, job, resp, None)
}

/// [`process`] given the job's URL already parsed (`None`: it is parsed here).
pub fn process_at(
    settings: &ParseSettings,
    job: &Job,
    resp: RawResponse,
    page_url: Option<url::Url>,
) -> JobResult {
    if resp.truncated {
        // Read only up to max_body_bytes (archived as truncated): a failure, as the fetcher reports it.
        return JobResult::FetchFailed {
            reason: Reason::TooLarge,
            detail: format!("body exceeds {} bytes", settings.max_body_bytes),
            retryable: false,
        };
    }
    match job.entry.kind {
        JobKind::Robots => JobResult::Robots(process_robots(settings, resp)),
        JobKind::Sitemap => JobResult::Sitemap(process_sitemap(settings, resp)),
        // Excluded kinds are never leased; a page or a page requisite is the only other thing fetched.
        _ => JobResult::Page(Box::new(process_page_at(settings, job, resp, page_url))),
    }
}

fn header(resp: &RawResponse, name: http::header::HeaderName) -> Option<&str> {
    resp.headers.get(name).and_then(|v| v.to_str().ok())
}

/// An HTTP version's name, as records and spans give it, with its `network.protocol.version` span attribute
/// (encoded when compiling, from the same name).
macro_rules! version {
    ($v:ident, $name:literal) => {
        (
            http::Version::$v,
            $name,
            crawl_observability::preset_str!("network.protocol.version", $name),
        )
    };
}

/// The versions HTTP has, and the name of any other.
const VERSIONS: [(http::Version, &str, crawl_observability::Attr<'static>); 5] = [
    version!(HTTP_09, "HTTP/0.9"),
    version!(HTTP_10, "HTTP/1.0"),
    version!(HTTP_11, "HTTP/1.1"),
    version!(HTTP_2, "HTTP/2"),
    version!(HTTP_3, "HTTP/3"),
];
const OTHER_VERSION: (&str, crawl_observability::Attr<'static>) = (
    "HTTP/?",
    crawl_observability::preset_str!("network.protocol.version", "HTTP/?"),
);

fn version_entry(v: http::Version) -> (&'static str, crawl_observability::Attr<'static>) {
    VERSIONS
        .iter()
        .find(|(known, _, _)| *known == v)
        .map_or(OTHER_VERSION, |(_, name, attr)| (*name, *attr))
}

/// The `network.protocol.version` attribute of a response's version.
pub(crate) fn version_attr(v: http::Version) -> crawl_observability::Attr<'static> {
    version_entry(v).1
}

pub(crate) fn version_str(v: http::Version) -> &'static str {
    version_entry(v).0
}

fn is_html(content_type: Option<&str>) -> bool {
    match content_type {
        None => true, // sniffing is out of scope; treat untyped bodies as HTML, as browsers mostly do
        Some(ct) => {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "text/html" || mime == "application/xhtml+xml"
        }
    }
}

fn is_css(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("text/css")
    })
}

/// [`judge_in`] of a canonical URL string (links and requisites arrive as strings): no parse where its parts are
/// known (`at`, from joining it) or [`crawl_core::urlparts::split`] takes it.
fn judge_str(scope: &ScopePolicy, url: String, at: Option<PartsAt>, depth: u32) -> FoundLink {
    let parts = at
        .and_then(|at| at.parts(&url))
        .or_else(|| crawl_core::urlparts::split(&url));
    let (verdict, host) = match parts {
        Some(p) => (scope.check_split(&url, &p, depth), p.host.to_owned()),
        None => match url::Url::parse(&url) {
            Ok(u) => (scope.check(&u, depth), canon::host_key(&u).to_owned()),
            Err(_) => (crawl_core::scope::ScopeVerdict::OutOfScope, String::new()),
        },
    };
    FoundLink { url, host, verdict }
}

/// The link's verdict; the URL's own string becomes the link's (no copy).
fn judge_in(scope: &ScopePolicy, url: url::Url, depth: u32) -> FoundLink {
    let verdict = scope.check(&url, depth);
    let host = canon::host_key(&url).to_owned();
    FoundLink {
        url: url.into(),
        host,
        verdict,
    }
}

fn count(n: usize) -> u32 {
    n.min(u32::MAX as usize) as u32
}

fn decode(
    resp: &RawResponse,
    raw: bytes::Bytes,
    limit: u64,
) -> Result<bytes::Bytes, (Reason, String)> {
    decode_body(header(resp, http::header::CONTENT_ENCODING), raw, limit).map_err(|e| match e {
        DecodeError::TooLarge { .. } => (Reason::TooLarge, e.to_string()),
        other => (Reason::Decode, other.to_string()),
    })
}

/// A page or a page requisite: status, headers, decoded size and digest, title, links and requisites (for 2xx
/// HTML; a requisite only for the requisites of a 2xx stylesheet) or the redirect target (for 3xx).
pub fn process_page(settings: &ParseSettings, job: &Job, resp: RawResponse) -> PageOutcome {
    process_page_at(settings, job, resp, None)
}

/// [`process_page`] given the job's URL already parsed (`None`: it is parsed here).
fn process_page_at(
    settings: &ParseSettings,
    job: &Job,
    resp: RawResponse,
    page_url: Option<url::Url>,
) -> PageOutcome {
    let body = decode(&resp, resp.body.clone(), settings.max_body_bytes);
    page_with_body(settings, job, resp, page_url, body)
}

/// What [`process_inline`] gives back: the job's result, or the response it declined, untouched.
#[derive(Debug)]
pub enum Inline {
    Done(JobResult),
    Declined(Box<(RawResponse, Option<url::Url>)>),
}

/// Processes a response on the calling thread (the fetcher's) when it is a page or requisite whose decoded body is at
/// most `inline_max_bytes` and nothing is archived; declines it otherwise, before any work but a decode cut off at
/// that size. A small page then costs no hand-over to a parser thread and back; what could take long (a large
/// body, a sitemap) still goes to the parser threads, whose stuck threads are found and replaced.
pub fn process_inline(
    settings: &ParseSettings,
    job: &Job,
    resp: RawResponse,
    page_url: Option<url::Url>,
) -> Inline {
    let cap = settings.inline_max_bytes as u64;
    let eligible = cap > 0
        && settings.archive_level.is_none()
        && !resp.truncated
        && matches!(job.entry.kind, JobKind::Page | JobKind::Embed)
        && resp.body.len() as u64 <= cap;
    if !eligible {
        return Inline::Declined(Box::new((resp, page_url)));
    }
    let body = decode(&resp, resp.body.clone(), settings.max_body_bytes.min(cap));
    if matches!(body, Err((Reason::TooLarge, _))) && cap < settings.max_body_bytes {
        return Inline::Declined(Box::new((resp, page_url)));
    }
    Inline::Done(JobResult::Page(Box::new(page_with_body(
        settings, job, resp, page_url, body,
    ))))
}

/// [`process_page_at`] with the body decoded.
fn page_with_body(
    settings: &ParseSettings,
    job: &Job,
    resp: RawResponse,
    page_url: Option<url::Url>,
    body: Result<bytes::Bytes, (Reason, String)>,
) -> PageOutcome {
    let page_url = page_url.or_else(|| url::Url::parse(&job.entry.url).ok());
    let content_type = header(&resp, http::header::CONTENT_TYPE).map(str::to_owned);
    let mut out = PageOutcome {
        status: resp.status,
        content_type: content_type.clone(),
        http_version: version_str(resp.version).to_owned(),
        elapsed_ms: resp.timings.total.as_millis() as u64,
        elapsed: resp.timings.total,
        proxy: resp.proxy.clone(),
        requested_at_ms: resp
            .sent_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        ..PageOutcome::default()
    };
    if (200..300).contains(&resp.status) || resp.status == NOT_MODIFIED {
        out.etag = header(&resp, http::header::ETAG).map(str::to_owned);
        out.last_modified = header(&resp, http::header::LAST_MODIFIED).map(str::to_owned);
        out.date = header(&resp, http::header::DATE).map(str::to_owned);
    }
    if resp.status == NOT_MODIFIED {
        // No body (RFC 9110 15.4.5): nothing to decode, digest or parse. Valid only as the answer to a
        // conditional request.
        if !resp.conditional {
            out.body_error = Some((Reason::Protocol, UNEXPECTED_304.to_owned()));
        }
        return out;
    }
    if resp.status == 429 || resp.status == 503 {
        out.retry_after = header(&resp, http::header::RETRY_AFTER)
            .and_then(|v| crawl_core::retry_after::parse_retry_after(v, SystemTime::now()));
    }
    if (300..400).contains(&resp.status)
        && let Some(base) = &page_url
    {
        // A requisite that redirects stays a requisite: its target is judged against the requisites' scope.
        let scope = match (&settings.embeds, job.entry.kind) {
            (Some(embeds), JobKind::Embed) => embeds.as_ref(),
            _ => settings.scope.as_ref(),
        };
        out.redirect_to = header(&resp, http::header::LOCATION).map(|loc| {
            canon::canonicalize_relative(base, loc)
                .map(|u| judge_in(scope, u, job.entry.depth))
                .map_err(|e| RedirectError::unusable(loc, e))
        });
    }
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            out.body_error = Some(e);
            return out;
        }
    };
    out.content_length = body.len() as u64;
    out.digest = Some(Sha1::of(&body).label());
    let Some(page_url) = page_url else { return out };
    if !(200..300).contains(&resp.status) {
        return out;
    }
    if job.entry.kind == JobKind::Embed {
        if let Some(scope) = &settings.embeds
            && is_css(content_type.as_deref())
        {
            stylesheet_embeds(settings, scope, job, &page_url, &body, &mut out);
        }
        return out;
    }
    if is_html(content_type.as_deref()) {
        let opts = ExtractOptions {
            agent_token: product_token(&settings.user_agent),
            max_links: settings.max_links_per_page,
            embeds: settings.embeds.is_some(),
        };
        match extract_links(&body, &page_url, &opts) {
            Ok(page) => {
                out.links_found = count(page.links_found);
                out.links_dropped = count(page.links_dropped);
                out.embeds_dropped = count(page.embeds_dropped);
                out.noindex = page.meta_noindex;
                out.title = page.title;
                if let Some(scope) = &settings.embeds {
                    out.embeds = page
                        .embeds
                        .into_iter()
                        .map(|u| judge_str(scope, u, None, job.entry.depth))
                        .collect();
                }
                if !page.meta_nofollow {
                    let depth = job.entry.depth + 1;
                    out.links = page
                        .links
                        .into_iter()
                        .filter(|l| !l.nofollow)
                        .map(|l| judge_str(&settings.scope, l.url, l.at, depth))
                        .collect();
                }
            }
            Err(e) => {
                tracing::debug!(url = %page_url, error = %e, "html not parsed");
            }
        }
    }
    out
}

/// The requisites a stylesheet fetched as a requisite loads (`url()`, `@import`), relative to it, at its depth.
fn stylesheet_embeds(
    settings: &ParseSettings,
    scope: &ScopePolicy,
    job: &Job,
    sheet: &url::Url,
    body: &[u8],
    out: &mut PageOutcome,
) {
    let cap = settings.max_links_per_page;
    let css = String::from_utf8_lossy(body);
    let mut seen = std::collections::HashSet::new();
    for raw in css_urls(&css, cap.saturating_mul(2)) {
        let Ok(url) = canon::canonicalize_relative(sheet, &raw) else {
            continue;
        };
        if !seen.insert(url.as_str().to_owned()) {
            continue;
        }
        if out.embeds.len() >= cap {
            out.embeds_dropped += 1;
            continue;
        }
        out.embeds.push(judge_in(scope, url, job.entry.depth));
    }
}

/// robots.txt, by RFC 9309 status rules (redirects were followed by the fetcher).
pub fn process_robots(settings: &ParseSettings, resp: RawResponse) -> RobotsOutcome {
    match classify_status(resp.status) {
        StatusClass::Parse => {
            // Robots::parse reads at most MAX_ROBOTS_BYTES of whatever it is given.
            let limit = (MAX_ROBOTS_BYTES as u64).max(settings.max_body_bytes);
            match decode(&resp, resp.body.clone(), limit) {
                Ok(body) => {
                    RobotsOutcome::Rules(Arc::new(Robots::parse(&body, &settings.user_agent)))
                }
                Err((_, detail)) => RobotsOutcome::Unavailable { detail },
            }
        }
        StatusClass::AllowAll => RobotsOutcome::AllowAll {
            status: resp.status,
        },
        StatusClass::Redirect => RobotsOutcome::Unavailable {
            detail: format!("robots.txt redirect not followed (status {})", resp.status),
        },
        StatusClass::Unavailable => RobotsOutcome::Unavailable {
            detail: format!("robots.txt status {}", resp.status),
        },
    }
}

/// A sitemap or sitemap index.
pub fn process_sitemap(settings: &ParseSettings, resp: RawResponse) -> SitemapOutcome {
    let mut out = SitemapOutcome::default();
    if resp.status == NOT_MODIFIED && resp.conditional {
        // Unchanged since the last fetch: nothing new to queue.
        return out;
    }
    if resp.status == NOT_MODIFIED {
        out.error = Some(UNEXPECTED_304.to_owned());
        return out;
    }
    if !(200..300).contains(&resp.status) {
        out.error = Some(format!("status {}", resp.status));
        return out;
    }
    let body = match decode(&resp, resp.body.clone(), settings.sitemap_max_bytes) {
        Ok(b) => b,
        Err((_, detail)) => {
            out.error = Some(detail);
            return out;
        }
    };
    match parse_sitemap(&body, settings.sitemap_max_urls) {
        Ok(parsed) => {
            if parsed.truncated {
                out.error = Some(format!(
                    "more than {} urls; the rest ignored",
                    settings.sitemap_max_urls
                ));
            }
            let mut hints = parsed.hints.into_iter().peekable();
            for (i, loc) in parsed.locs.into_iter().enumerate() {
                let Ok(u) = canon::canonicalize(&loc) else {
                    continue;
                };
                // The entry's hints, when it has some (they come in loc order).
                let mut hint = None;
                while let Some(h) = hints.next_if(|h| h.loc <= i) {
                    if h.loc == i {
                        hint = Some(h);
                    }
                }
                match parsed.kind {
                    SitemapKind::Index => out.sitemaps.push(u.as_str().to_owned()),
                    SitemapKind::UrlSet | SitemapKind::Text => {
                        if let Some(h) = hint {
                            out.hints.push(crawl_core::frontier::SitemapHint {
                                url: u.as_str().to_owned(),
                                lastmod: h.lastmod,
                                changefreq: h.changefreq,
                            });
                        }
                        out.pages.push(judge_in(&settings.scope, u, 1))
                    }
                }
            }
        }
        Err(e) => out.error = Some(e.to_string()),
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
