//! What the parser does with a fetched body, as plain functions: decode it within the size limit, extract and judge
//! links of HTML pages, read robots.txt and sitemaps, resolve redirect targets.

use super::decode::{DecodeError, decode_body};
use super::extract::extract_links;
use super::sitemap::{SitemapKind, parse_sitemap};
use crate::fetcher::http::RawResponse;
use crate::protocol::{FoundLink, Job, JobResult, PageOutcome, RobotsOutcome, SitemapOutcome};
use crawl_core::canon;
use crawl_core::frontier::JobKind;
use crawl_core::record::Reason;
use crawl_core::robots::{MAX_ROBOTS_BYTES, Robots, StatusClass, classify_status, product_token};
use crawl_core::scope::ScopePolicy;
use std::sync::Arc;
use std::time::SystemTime;

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
}

/// Turns a fetched response into the job's result.
pub fn process(settings: &ParseSettings, job: &Job, resp: RawResponse) -> JobResult {
    match job.entry.kind {
        JobKind::Robots => JobResult::Robots(process_robots(settings, resp)),
        JobKind::Sitemap => JobResult::Sitemap(process_sitemap(settings, resp)),
        // Excluded kinds are never leased; a page is the only other thing fetched.
        _ => JobResult::Page(Box::new(process_page(settings, job, resp))),
    }
}

fn header(resp: &RawResponse, name: http::header::HeaderName) -> Option<&str> {
    resp.headers.get(name).and_then(|v| v.to_str().ok())
}

pub(crate) fn version_str(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_11 => "HTTP/1.1",
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/?",
    }
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

fn judge(settings: &ParseSettings, url: &url::Url, depth: u32) -> FoundLink {
    FoundLink {
        url: url.as_str().to_owned(),
        host: canon::host_key(url).to_owned(),
        verdict: settings.scope.check(url, depth),
    }
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

/// A page: status, headers, decoded size, links (for 2xx HTML) or the redirect target (for 3xx).
pub fn process_page(settings: &ParseSettings, job: &Job, resp: RawResponse) -> PageOutcome {
    let page_url = url::Url::parse(&job.entry.url).ok();
    let content_type = header(&resp, http::header::CONTENT_TYPE).map(str::to_owned);
    let mut out = PageOutcome {
        status: resp.status,
        content_type: content_type.clone(),
        http_version: version_str(resp.version).to_owned(),
        elapsed_ms: resp.timings.total.as_millis() as u64,
        proxy: resp.proxy.clone(),
        ..PageOutcome::default()
    };
    if resp.status == 429 || resp.status == 503 {
        out.retry_after = header(&resp, http::header::RETRY_AFTER)
            .and_then(|v| crawl_core::retry_after::parse_retry_after(v, SystemTime::now()));
    }
    if (300..400).contains(&resp.status)
        && let Some(base) = &page_url
    {
        out.redirect_to = header(&resp, http::header::LOCATION).map(|loc| {
            canon::canonicalize_relative(base, loc)
                .map(|u| judge(settings, &u, job.entry.depth))
                .map_err(|e| format!("unusable Location {loc:?}: {e}"))
        });
    }
    let body = match decode(&resp, resp.body.clone(), settings.max_body_bytes) {
        Ok(b) => b,
        Err(e) => {
            out.body_error = Some(e);
            return out;
        }
    };
    out.content_length = body.len() as u64;
    let Some(page_url) = page_url else { return out };
    if (200..300).contains(&resp.status) && is_html(content_type.as_deref()) {
        match extract_links(&body, &page_url, product_token(&settings.user_agent)) {
            Ok(page) => {
                out.links_found = page.links_found.min(u32::MAX as usize) as u32;
                out.noindex = page.meta_noindex;
                if !page.meta_nofollow {
                    let depth = job.entry.depth + 1;
                    out.links = page
                        .links
                        .iter()
                        .filter(|l| !l.nofollow)
                        .map(|l| judge(settings, &l.url, depth))
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
            for loc in parsed.locs {
                let Ok(u) = canon::canonicalize(&loc) else {
                    continue;
                };
                match parsed.kind {
                    SitemapKind::Index => out.sitemaps.push(u.as_str().to_owned()),
                    SitemapKind::UrlSet | SitemapKind::Text => {
                        out.pages.push(judge(settings, &u, 1))
                    }
                }
            }
        }
        Err(e) => out.error = Some(e.to_string()),
    }
    out
}
