//! `crawl-engine ctl`: the control API's client. It finds the API (`--api`, else the `[api]` section of `--config`,
//! else `http://127.0.0.1:9465`), sends one request with the bearer token, and prints the answer as a table (or
//! the server's JSON as it is with `--json`). Exit status as the main command's: 0 done, 2 bad usage or a refusal
//! (a 4xx answer), 1 when the API cannot be reached or fails (a 5xx answer); a one-line message on stderr.

mod client;
mod render;

use crate::api::dto::{AddUrlsDto, ErrorDto, PolitenessDto, ReloadDto, TargetDto};
use crate::api::listener::read_token;
use crate::cli::{CtlAction, CtlArgs};
use crate::error::EngineError;
use client::ApiClient;
use crawl_core::config::{Config, DEFAULT_API_URL};
use http::{Method, StatusCode};
use std::path::Path;

/// One request to the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    pub method: Method,
    /// The path and query, percent-encoded.
    pub path: String,
    /// The JSON body.
    pub body: Option<String>,
}

/// Runs `crawl-engine ctl` with `config` (`--config`) and its arguments.
pub fn run(config: Option<&Path>, args: &CtlArgs) -> Result<(), EngineError> {
    let config = config
        .map(|p| Config::from_file(p).map_err(|e| EngineError::Usage(e.to_string())))
        .transpose()?;
    let base = args
        .api
        .clone()
        .or_else(|| config.as_ref().and_then(|c| c.api.url()))
        .unwrap_or_else(|| DEFAULT_API_URL.to_owned());
    let token_file = args
        .token_file
        .as_deref()
        .or_else(|| config.as_ref().and_then(|c| c.api.token_file.as_deref()));
    let token = token_file.map(read_token).transpose()?;
    let request = request_of(&args.action)?;
    let client = ApiClient::new(&base, token, args.ca_file.as_deref())?;
    let (status, body) = client.send(&request).map_err(|e| {
        EngineError::Fatal(format!(
            "ctl: cannot reach the API at {}: {e}",
            client.base()
        ))
    })?;
    if args.json {
        let text = String::from_utf8_lossy(&body);
        println!("{}", text.trim_end());
    }
    if status.is_success() {
        if !args.json {
            print!("{}", render::answer(&args.action, &body));
        }
        return Ok(());
    }
    let message = failure(&request, status, &body);
    if status.is_client_error() {
        Err(EngineError::Usage(message))
    } else {
        Err(EngineError::Fatal(message))
    }
}

/// The request an action sends.
pub fn request_of(action: &CtlAction) -> Result<ApiRequest, EngineError> {
    let (method, path, body) = match action {
        CtlAction::Status => (Method::GET, "/v1/status".to_owned(), None),
        CtlAction::Hosts { sort, limit } => (
            Method::GET,
            format!(
                "/v1/hosts?{}",
                url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("sort", sort)
                    .append_pair("limit", &limit.to_string())
                    .finish()
            ),
            None,
        ),
        CtlAction::Host { host } => (Method::GET, format!("/v1/hosts/{}", encode(host)), None),
        CtlAction::Add { urls, depth, force } => (
            Method::POST,
            "/v1/urls".to_owned(),
            Some(json(&AddUrlsDto {
                urls: urls.clone(),
                depth: *depth,
                force: *force,
            })),
        ),
        CtlAction::Pause { host } | CtlAction::Resume { host } => {
            let path = if matches!(action, CtlAction::Pause { .. }) {
                "/v1/pause"
            } else {
                "/v1/resume"
            };
            (
                Method::POST,
                path.to_owned(),
                Some(json(&TargetDto { host: host.clone() })),
            )
        }
        CtlAction::Politeness {
            host,
            delay_ms,
            concurrency,
            expires_s,
            clear,
        } => {
            let path = format!("/v1/hosts/{}/politeness", encode(host));
            if *clear {
                (Method::DELETE, path, None)
            } else {
                if delay_ms.is_none() && concurrency.is_none() {
                    return Err(EngineError::Usage(
                        "ctl politeness: give --delay-ms, --concurrency or both (or --clear)"
                            .to_owned(),
                    ));
                }
                let p = PolitenessDto {
                    delay_ms: *delay_ms,
                    concurrency: *concurrency,
                    expires_s: *expires_s,
                };
                (Method::PUT, path, Some(json(&p)))
            }
        }
        CtlAction::Drop { host } => (
            Method::DELETE,
            format!("/v1/hosts/{}/queue", encode(host)),
            None,
        ),
        CtlAction::Reload => (Method::POST, "/v1/reload".to_owned(), None),
    };
    Ok(ApiRequest { method, path, body })
}

/// A request body's JSON (the DTOs always serialise).
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// A host for a path segment: everything but unreserved characters and `:` percent-encoded.
fn encode(host: &str) -> String {
    let mut out = String::with_capacity(host.len());
    for b in host.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The one-line message of a refused or failed request.
fn failure(req: &ApiRequest, status: StatusCode, body: &[u8]) -> String {
    let what = format!(
        "ctl: {} {}",
        req.method,
        req.path.split('?').next().unwrap_or("")
    );
    if status == StatusCode::UNAUTHORIZED {
        return format!(
            "{what}: unauthorized (401): the API wants its bearer token; pass --token-file FILE, or --config with \
             [api] token_file"
        );
    }
    if let Ok(r) = serde_json::from_slice::<ReloadDto>(body)
        && let Some(errors) = r.errors
    {
        return format!(
            "{what}: reload {} ({}): {}",
            r.outcome,
            status.as_u16(),
            errors.join("; ")
        );
    }
    match serde_json::from_slice::<ErrorDto>(body) {
        Ok(e) => {
            let field = e.error.field.map(|f| format!(" [{f}]")).unwrap_or_default();
            format!(
                "{what}: {} ({}){field}: {}",
                e.error.code,
                status.as_u16(),
                e.error.message
            )
        }
        Err(_) => format!("{what}: HTTP {}", status.as_u16()),
    }
}

#[cfg(test)]
mod tests;
