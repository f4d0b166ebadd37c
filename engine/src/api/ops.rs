//! What the control API asks of the crawl: the [`CrawlOps`] trait. The server holds one behind an `Arc` and calls it
//! from its own thread; [`crate::api::tree_ops::TreeOps`] implements it over the actor tree.

use super::dto::{ActionDto, AddUrlsDto, DropDto, HostDto, PolitenessDto, StatusDto, UrlAnswerDto};
use crawl_core::control::alerts::AlertAction;
use crawl_core::control::{Change, HostMatch, OperatorState, Requester};
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// A boxed future that may move between threads (no async-trait crate).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// How `GET /v1/hosts` orders the hosts (`?sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostSort {
    /// Most URLs queued first.
    #[default]
    Queued,
    /// Most requests in flight first.
    InFlight,
    /// Most errors first.
    Errors,
    /// By name.
    Name,
}

impl HostSort {
    /// Every order, as the query names them.
    pub const ALL: [HostSort; 4] = [
        HostSort::Queued,
        HostSort::InFlight,
        HostSort::Errors,
        HostSort::Name,
    ];

    /// The name in `?sort=`.
    pub fn as_str(self) -> &'static str {
        match self {
            HostSort::Queued => "queued",
            HostSort::InFlight => "in_flight",
            HostSort::Errors => "errors",
            HostSort::Name => "name",
        }
    }

    /// The order named `text`.
    pub fn parse(text: &str) -> Option<HostSort> {
        HostSort::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for HostSort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the crawl did not do what was asked; each has its HTTP status ([`OpsError::status`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpsError {
    /// The crawl did not answer in time (503).
    #[error("the crawl is busy and did not answer in time; try again")]
    Busy,
    /// The crawl has ended or is ending (503).
    #[error("the crawl has ended")]
    Ended,
    /// The request names something the crawl refuses (400).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// What the request names does not exist (404).
    #[error("not found")]
    NotFound,
    /// This crawl cannot do that yet (501).
    #[error("this crawl does not support that operation yet")]
    Unsupported,
    /// Something broke inside the crawl (500); the text says what, never a secret.
    #[error("internal error: {0}")]
    Internal(String),
}

impl OpsError {
    /// The HTTP status of the answer.
    pub fn status(&self) -> http::StatusCode {
        use http::StatusCode as S;
        match self {
            OpsError::Busy | OpsError::Ended => S::SERVICE_UNAVAILABLE,
            OpsError::Invalid { .. } => S::BAD_REQUEST,
            OpsError::NotFound => S::NOT_FOUND,
            OpsError::Unsupported => S::NOT_IMPLEMENTED,
            OpsError::Internal(_) => S::INTERNAL_SERVER_ERROR,
        }
    }

    /// The `code` of the JSON error.
    pub fn code(&self) -> &'static str {
        match self {
            OpsError::Busy => "busy",
            OpsError::Ended => "ended",
            OpsError::Invalid { .. } => "invalid",
            OpsError::NotFound => "not_found",
            OpsError::Unsupported => "not_implemented",
            OpsError::Internal(_) => "internal",
        }
    }
}

/// The crawl as the control API sees it. Each call returns a boxed future that the server awaits on its own thread
/// (under a deadline: a crawl that does not answer in time is [`OpsError::Busy`]).
pub trait CrawlOps: Send + Sync + 'static {
    /// The crawl's state and counters, the operator's settings, the processes, the running config.
    fn status(&self) -> BoxFuture<Result<StatusDto, OpsError>>;
    /// At most `limit` hosts, in `sort` order.
    fn hosts(&self, sort: HostSort, limit: usize) -> BoxFuture<Result<Vec<HostDto>, OpsError>>;
    /// One host (normalised as URLs carry it, with `:port` for one authority); None when the crawl does not know it.
    fn host(&self, host: String) -> BoxFuture<Result<Option<HostDto>, OpsError>>;
    /// Adds URLs to the frontier; one answer per URL, in the order given.
    fn add_urls(
        &self,
        req: AddUrlsDto,
        by: Requester,
    ) -> BoxFuture<Result<Vec<UrlAnswerDto>, OpsError>>;
    /// Pauses the crawl (`host` None) or a host.
    fn pause(
        &self,
        host: Option<HostMatch>,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>>;
    /// Resumes the crawl (`host` None) or a host.
    fn resume(
        &self,
        host: Option<HostMatch>,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>>;
    /// Sets a host's politeness; `delay_ms` and `concurrency` both None = back to the configured politeness.
    fn politeness(
        &self,
        host: HostMatch,
        p: PolitenessDto,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>>;
    /// Drops the URLs queued for a host (they are recorded as dropped, not fetched).
    fn drop_queue(&self, host: HostMatch, by: Requester) -> BoxFuture<Result<DropDto, OpsError>>;
    /// What operators (and alerts) set on the crawl, as in force now.
    fn operator(&self) -> BoxFuture<Result<OperatorState, OpsError>>;
    /// Applies an operator change (made durable first); answers whether the state changed.
    fn operate(&self, change: Change) -> BoxFuture<Result<bool, OpsError>>;
    /// `[[api.alert_actions]]` of the running config (a reload changes them at once).
    fn alert_actions(&self) -> Vec<AlertAction>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_names_round_trip() {
        for s in HostSort::ALL {
            assert_eq!(HostSort::parse(s.as_str()), Some(s));
        }
        assert_eq!(HostSort::parse("Queued"), None);
        assert_eq!(HostSort::default(), HostSort::Queued);
    }

    #[test]
    fn every_error_has_its_status_and_code() {
        let cases = [
            (OpsError::Busy, 503, "busy"),
            (OpsError::Ended, 503, "ended"),
            (
                OpsError::Invalid {
                    field: "urls[0]".into(),
                    message: "bad".into(),
                },
                400,
                "invalid",
            ),
            (OpsError::NotFound, 404, "not_found"),
            (OpsError::Unsupported, 501, "not_implemented"),
            (OpsError::Internal("x".into()), 500, "internal"),
        ];
        for (e, status, code) in cases {
            assert_eq!((e.status().as_u16(), e.code()), (status, code), "{e}");
        }
    }
}
