//! One request of the control API to its answer: the token first (401 with no detail), then the endpoint (404, 405
//! with `Allow`), the body under its cap (413), the input checked field by field (400), the crawl asked under a
//! deadline (503 when it does not answer), and the answer as JSON. Every action is logged at info with who asked
//! (an Alertmanager notification: each of its alerts' actions too, by the alert).

use super::alerts::{Responder, now_ms};
use super::answer::{self, Body, ErrorAnswer};
use super::auth::Auth;
use super::body::read_capped;
use super::dto::{HostsDto, PolitenessDto, ReloadDto, UrlsDto};
use super::openapi::OPENAPI;
use super::ops::{CrawlOps, OpsError};
use super::requests;
use super::routes::{self, Miss, RouteId};
use crate::reload::{ReloadCause, ReloadHandle, ReloadOutcome};
use bytes::Bytes;
use crawl_core::control::Requester;
use http::{Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How long the crawl may take to answer one call.
pub const OPS_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a whole request may take, from its headers to its answer (a body trickled in slowly included).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// The control API's request handler.
pub struct Api {
    ops: Arc<dyn CrawlOps>,
    reloads: Option<ReloadHandle>,
    auth: Auth,
    max_body: u64,
    ops_timeout: Duration,
    deadline: Duration,
}

impl Api {
    /// `reloads` None: `POST /v1/reload` answers 503.
    pub fn new(
        ops: Arc<dyn CrawlOps>,
        reloads: Option<ReloadHandle>,
        auth: Auth,
        max_body: u64,
    ) -> Api {
        Api {
            ops,
            reloads,
            auth,
            max_body,
            ops_timeout: OPS_TIMEOUT,
            deadline: REQUEST_DEADLINE,
        }
    }

    /// Other deadlines (tests).
    pub fn with_timeouts(mut self, ops_timeout: Duration, deadline: Duration) -> Api {
        self.ops_timeout = ops_timeout;
        self.deadline = deadline;
        self
    }

    /// The answer to `req` from `peer`.
    pub async fn handle<B>(&self, req: Request<B>, peer: SocketAddr) -> Response<Body>
    where
        B: http_body::Body,
        B::Error: std::fmt::Display,
    {
        let (method, path) = (req.method().clone(), req.uri().path().to_owned());
        let outcome = match tokio::time::timeout(self.deadline, self.answer(req, peer)).await {
            Ok(o) => o,
            Err(_) => {
                tracing::info!(peer = %peer, method = %method, path = %path, "api request timed out");
                Outcome::error(ErrorAnswer::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request_timeout",
                    format!("the request took longer than {} s", self.deadline.as_secs()),
                ))
            }
        };
        let status = outcome.response.status().as_u16();
        match &outcome.action {
            Some(a) => tracing::info!(
                peer = %peer,
                action = a.route.name(),
                target = %a.target,
                status,
                "api action"
            ),
            // Refused callers are worth a line: who knocked, at what (never the token they sent).
            None if status == 401 => {
                tracing::info!(peer = %peer, method = %method, path = %path, "api request unauthorized");
            }
            None => {
                tracing::debug!(peer = %peer, method = %method, path = %path, status, "api request")
            }
        }
        outcome.response
    }

    /// The answer and, for an action, what it was.
    async fn answer<B>(&self, req: Request<B>, peer: SocketAddr) -> Outcome
    where
        B: http_body::Body,
        B::Error: std::fmt::Display,
    {
        if !self
            .auth
            .allows(req.headers().get(http::header::AUTHORIZATION))
        {
            return Outcome::error(ErrorAnswer::unauthorized());
        }
        let (route, param) = match routes::resolve(req.method().as_str(), req.uri().path()) {
            Ok(found) => found,
            Err(Miss::NotFound) => {
                return Outcome::error(ErrorAnswer::new(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!("no endpoint {}; see /v1/openapi.json", req.uri().path()),
                ));
            }
            Err(Miss::MethodNotAllowed(allow)) => {
                let message = format!("{} takes {allow}", req.uri().path());
                return Outcome::error(ErrorAnswer {
                    allow: Some(allow),
                    ..ErrorAnswer::new(
                        StatusCode::METHOD_NOT_ALLOWED,
                        "method_not_allowed",
                        message,
                    )
                });
            }
        };
        let mut action = route.is_action().then(|| Action {
            route,
            target: param.clone().unwrap_or_else(|| "crawl".to_owned()),
        });
        let response = self
            .dispatch(route, param, req, peer, &mut action)
            .await
            .unwrap_or_else(|e| e.response());
        Outcome { response, action }
    }

    /// The endpoint's work: the body read, the input checked, the crawl asked. Fills in the action's target.
    async fn dispatch<B>(
        &self,
        route: RouteId,
        param: Option<String>,
        req: Request<B>,
        peer: SocketAddr,
        action: &mut Option<Action>,
    ) -> Result<Response<Body>, ErrorAnswer>
    where
        B: http_body::Body,
        B::Error: std::fmt::Display,
    {
        let query = req.uri().query().map(str::to_owned);
        let (parts, body) = req.into_parts();
        let body = read_capped(&parts.headers, body, self.max_body).await?;
        let by = Requester::Api {
            peer: peer.to_string(),
        };
        let host = param.as_deref().map(requests::host_param).transpose()?;
        let mut target = |t: String| {
            if let Some(a) = action.as_mut() {
                a.target = t;
            }
        };
        match (route, host) {
            (RouteId::Status, _) => Ok(ok(&self.ask(self.ops.status()).await?)),
            (RouteId::Hosts, _) => {
                let (sort, limit) = requests::hosts_query(query.as_deref())?;
                let hosts = self.ask(self.ops.hosts(sort, limit)).await?;
                Ok(ok(&HostsDto { hosts }))
            }
            (RouteId::Host, Some(h)) => match self.ask(self.ops.host(h.to_string())).await? {
                Some(dto) => Ok(ok(&dto)),
                None => Err(ErrorAnswer::new(
                    StatusCode::NOT_FOUND,
                    "unknown_host",
                    format!("the crawl knows no host {h}"),
                )),
            },
            (RouteId::AddUrls, _) => {
                let dto = requests::add_urls(&body)?;
                target(format!("{} urls", dto.urls.len()));
                let urls = self.ask(self.ops.add_urls(dto, by)).await?;
                Ok(ok(&UrlsDto { urls }))
            }
            (RouteId::Pause | RouteId::Resume, _) => {
                let host = requests::target(&body)?;
                if let Some(h) = &host {
                    target(h.to_string());
                }
                let call = if route == RouteId::Pause {
                    self.ops.pause(host, by)
                } else {
                    self.ops.resume(host, by)
                };
                Ok(ok(&self.ask(call).await?))
            }
            (RouteId::SetPoliteness, Some(h)) => {
                let p = requests::politeness(&body)?;
                target(format!("{h} {}", describe(&p)));
                Ok(ok(&self.ask(self.ops.politeness(h, p, by)).await?))
            }
            (RouteId::ClearPoliteness, Some(h)) => Ok(ok(&self
                .ask(self.ops.politeness(h, PolitenessDto::default(), by))
                .await?)),
            (RouteId::DropQueue, Some(h)) => Ok(ok(&self.ask(self.ops.drop_queue(h, by)).await?)),
            (RouteId::Reload, _) => self.reload(peer).await,
            (RouteId::Alerts, _) => {
                let n = requests::notification(&body)?;
                target(format!("{} alerts", n.alerts.len()));
                let responder = Responder::new(
                    Arc::clone(&self.ops),
                    self.reloads.clone(),
                    self.ops_timeout,
                );
                let done = responder
                    .carry_out(&n, now_ms())
                    .await
                    .map_err(ErrorAnswer::from)?;
                Ok(ok(&done))
            }
            (RouteId::OpenApi, _) => Ok(answer::raw_json(
                StatusCode::OK,
                Bytes::from_static(OPENAPI.as_bytes()),
            )),
            // A pattern with `{host}` always gives one.
            (
                RouteId::Host
                | RouteId::SetPoliteness
                | RouteId::ClearPoliteness
                | RouteId::DropQueue,
                None,
            ) => Err(ErrorAnswer::field("invalid", "host", "no host in the path")),
        }
    }

    /// Awaits a call of the crawl under the deadline.
    async fn ask<T>(
        &self,
        call: super::ops::BoxFuture<Result<T, OpsError>>,
    ) -> Result<T, ErrorAnswer> {
        match tokio::time::timeout(self.ops_timeout, call).await {
            Ok(r) => r.map_err(ErrorAnswer::from),
            Err(_) => Err(ErrorAnswer::from(OpsError::Busy)),
        }
    }

    /// `POST /v1/reload`: the SIGHUP path, answered with its outcome.
    async fn reload(&self, peer: SocketAddr) -> Result<Response<Body>, ErrorAnswer> {
        let ended = || ErrorAnswer::from(OpsError::Ended);
        let handle = self.reloads.as_ref().ok_or_else(ended)?;
        let outcome = handle
            .reload(ReloadCause::Api {
                peer: peer.to_string(),
            })
            .await
            .ok_or_else(ended)?;
        let dto =
            |outcome: &str, changed: Option<Vec<String>>, errors: Option<Vec<String>>| ReloadDto {
                outcome: outcome.to_owned(),
                changed,
                errors,
            };
        Ok(match outcome {
            ReloadOutcome::Applied(keys) => answer::json(
                StatusCode::OK,
                &dto(
                    "applied",
                    Some(keys.iter().map(|k| (*k).to_owned()).collect()),
                    None,
                ),
            ),
            ReloadOutcome::Invalid(errors) => answer::json(
                StatusCode::UNPROCESSABLE_ENTITY,
                &dto(
                    "invalid",
                    None,
                    Some(errors.lines().map(str::to_owned).collect()),
                ),
            ),
            ReloadOutcome::Rejected(msg) => answer::json(
                StatusCode::UNPROCESSABLE_ENTITY,
                &dto("rejected", None, Some(vec![msg])),
            ),
            ReloadOutcome::NoFile => {
                return Err(ErrorAnswer::new(
                    StatusCode::CONFLICT,
                    "no_file",
                    "the crawl runs on built-in defaults: there is no config file to re-read",
                ));
            }
        })
    }
}

/// `v` as a 200 JSON answer.
fn ok<T: serde::Serialize>(v: &T) -> Response<Body> {
    answer::json(StatusCode::OK, v)
}

/// A politeness change for the log.
fn describe(p: &PolitenessDto) -> String {
    let mut parts = Vec::new();
    if let Some(d) = p.delay_ms {
        parts.push(format!("delay_ms={d}"));
    }
    if let Some(c) = p.concurrency {
        parts.push(format!("concurrency={c}"));
    }
    if let Some(e) = p.expires_s {
        parts.push(format!("expires_s={e}"));
    }
    parts.join(" ")
}

/// An action for the log: which, on what.
#[derive(Debug, Clone)]
struct Action {
    route: RouteId,
    target: String,
}

/// An answer and the action it was, if one.
struct Outcome {
    response: Response<Body>,
    action: Option<Action>,
}

impl Outcome {
    fn error(e: ErrorAnswer) -> Outcome {
        Outcome {
            response: e.response(),
            action: None,
        }
    }
}

#[cfg(test)]
mod tests;
