//! Errors of the HTTP fetching layer and their classification.
//!
//! [`FetchError`] is what [`crate::fetcher::http::HttpClient::get`] returns. Each variant has the reason its record
//! gets ([`FetchError::reason`]) and a retry verdict ([`FetchError::is_retryable`]); together they make the job's
//! result ([`FetchError::into_result`]). [`SettingsError`] is what building a client returns.
//! [`classify`] turns the nested error chains of hyper / hyper-util / hyper-rustls into a
//! `FetchError` by walking `source()` (and the payload of `io::Error`s, which `source()` skips). A TLS failure's
//! detail names its cause in a short stable string (`tls: certificate expired`, `tls: unknown issuer`, ...), see
//! [`tls_detail`].

use crate::protocol::{JobResult, RawResponse};
use crawl_core::record::Reason;
use std::error::Error as StdError;
use std::io;
use std::net::IpAddr;

/// The phase of a request whose deadline expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// TCP connect did not finish within `connect_timeout`.
    Connect,
    /// Response headers did not arrive within `header_timeout` (includes connect and TLS).
    Headers,
    /// No body frame arrived within `idle_timeout`.
    Idle,
    /// The whole request did not finish within `total_timeout`.
    Total,
}

impl TimeoutPhase {
    /// Lowercase label of the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutPhase::Connect => "connect",
            TimeoutPhase::Headers => "headers",
            TimeoutPhase::Idle => "idle",
            TimeoutPhase::Total => "total",
        }
    }
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The host is, or resolves only to, a non-public address and private networks are not allowed.
    #[error("{host} resolves to non-public address {addr} ({})", crawl_core::netaddr::classify_ip(*addr))]
    PrivateNetwork { host: String, addr: IpAddr },
    /// Name resolution failed.
    #[error("dns error: {0}")]
    Dns(String),
    /// The TCP connection could not be established.
    #[error("connect error: {0}")]
    Connect(String),
    /// The TLS handshake failed (certificate, protocol, alert, deadline); the text is the detail, `tls: <cause>`.
    #[error("{0}")]
    Tls(String),
    /// A deadline expired.
    #[error("timeout ({0})")]
    Timeout(TimeoutPhase),
    /// The body is larger than `max_body_bytes`. `partial` is the answer with the body read up to the limit (for
    /// the archive, marked truncated).
    #[error("body exceeds {limit} bytes")]
    TooLarge {
        limit: u64,
        partial: Option<Box<RawResponse>>,
    },
    /// The connection broke or the peer spoke invalid HTTP.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The URL cannot be fetched (scheme, host, syntax).
    #[error("invalid url: {0}")]
    InvalidUrl(String),
    /// No proxy chain could carry the connection (all failed or none healthy; no direct fallback).
    #[error("proxy error: {0}")]
    Proxy(String),
    /// Nothing was sent: the host's shard lease ran out (a crawl shared by many processes) between the job's start
    /// check and the request's write.
    #[error("{0}")]
    LeaseLost(LeaseLost),
}

/// A connection refused to send to a host whose shard lease this process no longer holds; travels through
/// hyper-util's error chain (from the connector, or inside the `io::Error` of a write) to `classify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the host's shard lease ran out before the request went out")]
pub struct LeaseLost;

/// Why an HTTP client could not be built, or given a new User-Agent: its settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("user agent: {0}")]
    UserAgent(#[from] http::header::InvalidHeaderValue),
    #[error("bad extra root certificate: {0}")]
    ExtraRoot(rustls::Error),
    #[error("tls setup: {0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    #[error("tls setup: {0}")]
    Tls(#[from] rustls::Error),
}

impl FetchError {
    /// The reason of the failed record a job that ended in this error gets; None when nothing was sent (the job did
    /// not start, it did not fail).
    pub fn reason(&self) -> Option<Reason> {
        match self {
            FetchError::PrivateNetwork { .. } => Some(Reason::PrivateNetwork),
            FetchError::Dns(_) => Some(Reason::Dns),
            FetchError::Connect(_) => Some(Reason::Connect),
            FetchError::Tls(_) => Some(Reason::Tls),
            FetchError::Timeout(_) => Some(Reason::Timeout),
            FetchError::TooLarge { .. } => Some(Reason::TooLarge),
            FetchError::Protocol(_) => Some(Reason::Protocol),
            FetchError::InvalidUrl(_) => Some(Reason::InvalidUrl),
            FetchError::Proxy(_) => Some(Reason::Proxy),
            FetchError::LeaseLost(_) => None,
        }
    }

    /// The result of a job that ended in this error: failed with its reason, retried when
    /// [`is_retryable`](Self::is_retryable), or not started.
    pub fn into_result(self) -> JobResult {
        match self.reason() {
            Some(reason) => JobResult::FetchFailed {
                reason,
                retryable: self.is_retryable(),
                detail: self.to_string(),
            },
            None => JobResult::NotStarted,
        }
    }

    /// Whether trying the same URL again later can succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            FetchError::Dns(_)
            | FetchError::Connect(_)
            | FetchError::Timeout(_)
            | FetchError::Protocol(_)
            | FetchError::Proxy(_)
            | FetchError::LeaseLost(_) => true,
            FetchError::PrivateNetwork { .. }
            | FetchError::Tls(_)
            | FetchError::TooLarge { .. }
            | FetchError::InvalidUrl(_) => false,
        }
    }
}

/// The error a proxied connect ends in; travels through hyper-util's error chain to `classify`.
#[derive(Debug, thiserror::Error)]
pub enum ProxyConnectError {
    /// Every chain tried failed with proxy faults, or none was healthy.
    #[error("{0}")]
    Proxy(String),
    /// The target could not be reached through the chain (SOCKS replies 03-06).
    #[error("{0}")]
    Target(String),
}

/// Error of the fetcher's DNS resolver; travels through hyper-util's error chain.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The guard refused every address the name resolved to (none was dialed).
    #[error("{host} resolves only to non-public addresses (first: {addr}, {})", crawl_core::netaddr::classify_ip(*addr))]
    PrivateOnly { host: String, addr: IpAddr },
    /// The lookup itself failed or returned nothing.
    #[error("lookup of {host} failed: {detail}")]
    Lookup { host: String, detail: LookupError },
}

/// Why a name lookup gave a connection no address.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The name does not exist.
    #[error("nxdomain")]
    NxDomain,
    /// No clean answer (servers down, every answer forged, ...); the resolver's detail.
    #[error("{0}")]
    Unresolved(String),
    /// The resolver actor did not take the question.
    #[error("resolver unavailable: {0}")]
    Unavailable(#[from] actix::MailboxError),
    /// The system resolver failed.
    #[error("{0}")]
    System(#[from] std::io::Error),
    /// The answer held no address.
    #[error("no addresses")]
    NoAddresses,
}

/// TLS failures the fetcher itself detects; travel through hyper-util's error chain (the certificate one inside
/// `rustls::CertificateError::Other`) to `classify`.
#[derive(Debug, thiserror::Error)]
pub enum TlsCause {
    /// The server accepted the connection but did not finish the handshake within `connect_timeout`.
    #[error("tls: handshake timed out")]
    HandshakeTimedOut,
    /// The untrusted certificate is its own issuer (a self-signed leaf, not a chain to an unknown CA).
    #[error("tls: self-signed certificate")]
    SelfSigned,
}

/// The stable short detail of a rustls error: `tls: <cause>`.
pub fn tls_detail(err: &rustls::Error) -> String {
    use rustls::{AlertDescription, CertificateError, Error, PeerIncompatible};
    match err {
        Error::InvalidCertificate(cert) => match cert {
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "tls: certificate expired".into()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "tls: certificate not yet valid".into()
            }
            CertificateError::NotValidForNameContext { expected, .. } => {
                format!("tls: certificate not valid for host {}", expected.to_str())
            }
            CertificateError::NotValidForName => "tls: certificate not valid for host".into(),
            CertificateError::UnknownIssuer => "tls: unknown issuer".into(),
            CertificateError::BadSignature => "tls: bad certificate signature".into(),
            CertificateError::Revoked => "tls: certificate revoked".into(),
            CertificateError::BadEncoding => "tls: malformed certificate".into(),
            CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
                "tls: certificate not valid for server authentication".into()
            }
            CertificateError::Other(other) => match other.0.downcast_ref::<TlsCause>() {
                Some(cause) => cause.to_string(),
                None => format!("tls: invalid certificate: {other}"),
            },
            other => format!("tls: invalid certificate: {other}"),
        },
        Error::AlertReceived(AlertDescription::ProtocolVersion)
        | Error::PeerIncompatible(
            PeerIncompatible::ServerDoesNotSupportTls12Or13
            | PeerIncompatible::ServerTlsVersionIsDisabledByOurConfig
            | PeerIncompatible::SupportedVersionsExtensionRequired
            | PeerIncompatible::Tls12NotOffered
            | PeerIncompatible::Tls12NotOfferedOrEnabled,
        ) => "tls: protocol version not supported".into(),
        Error::AlertReceived(AlertDescription::HandshakeFailure) => {
            "tls: handshake failure alert".into()
        }
        Error::AlertReceived(alert) => {
            format!(
                "tls: alert received: {}",
                format!("{alert:?}").to_lowercase()
            )
        }
        Error::PeerIncompatible(PeerIncompatible::NoCipherSuitesInCommon) => {
            "tls: no cipher suite in common".into()
        }
        Error::PeerIncompatible(other) => format!("tls: peer incompatible: {other:?}"),
        Error::InvalidMessage(_) => "tls: invalid message from server".into(),
        Error::NoCertificatesPresented => "tls: no certificate presented".into(),
        other => format!("tls: {other}"),
    }
}

pub use crawl_observability::error_chain::chain_message;
use crawl_observability::error_chain::{MAX_CHAIN, next_in_chain};

/// Classifies an error from hyper-util's legacy client (or anything wrapping hyper errors).
///
/// `during_connect` says whether the failure happened while establishing the connection
/// (hyper-util's `Error::is_connect`); I/O errors then count as `Connect`, otherwise the
/// connection broke mid-exchange, which is `Protocol`.
pub fn classify(err: &(dyn StdError + 'static), during_connect: bool) -> FetchError {
    let detail = chain_message(err);
    let mut first_io: Option<io::ErrorKind> = None;
    let mut cur = Some(err);
    let mut depth = 0;
    while let Some(e) = cur {
        // From the connector, or inside the error of a write the connection refused.
        let lost = e.downcast_ref::<io::Error>().and_then(io::Error::get_ref);
        if e.is::<LeaseLost>() || lost.is_some_and(|inner| inner.is::<LeaseLost>()) {
            return FetchError::LeaseLost(LeaseLost);
        }
        if let Some(p) = e.downcast_ref::<ProxyConnectError>() {
            return match p {
                ProxyConnectError::Proxy(d) => FetchError::Proxy(d.clone()),
                ProxyConnectError::Target(d) => FetchError::Connect(d.clone()),
            };
        }
        if let Some(r) = e.downcast_ref::<ResolveError>() {
            return match r {
                ResolveError::PrivateOnly { host, addr } => FetchError::PrivateNetwork {
                    host: host.clone(),
                    addr: *addr,
                },
                ResolveError::Lookup { .. } => FetchError::Dns(detail),
            };
        }
        if let Some(cause) = e.downcast_ref::<TlsCause>() {
            return FetchError::Tls(cause.to_string());
        }
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            tracing::debug!(chain = %detail, "tls failure");
            return FetchError::Tls(tls_detail(tls));
        }
        if let Some(io_err) = e.downcast_ref::<io::Error>()
            && first_io.is_none()
        {
            first_io = Some(io_err.kind());
        }
        depth += 1;
        if depth >= MAX_CHAIN {
            break;
        }
        cur = next_in_chain(e);
    }
    if !during_connect {
        FetchError::Protocol(detail)
    } else if first_io == Some(io::ErrorKind::TimedOut) {
        FetchError::Timeout(TimeoutPhase::Connect)
    } else {
        FetchError::Connect(detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_reason_and_retry_verdict() {
        let private = || FetchError::PrivateNetwork {
            host: "x".into(),
            addr: IpAddr::from([127, 0, 0, 1]),
        };
        let too_large = || FetchError::TooLarge {
            limit: 1,
            partial: None,
        };
        let cases: Vec<(FetchError, Option<Reason>, bool)> = vec![
            (private(), Some(Reason::PrivateNetwork), false),
            (FetchError::Dns("nx".into()), Some(Reason::Dns), true),
            (
                FetchError::Connect("refused".into()),
                Some(Reason::Connect),
                true,
            ),
            (FetchError::Tls("bad cert".into()), Some(Reason::Tls), false),
            (
                FetchError::Timeout(TimeoutPhase::Idle),
                Some(Reason::Timeout),
                true,
            ),
            (too_large(), Some(Reason::TooLarge), false),
            (
                FetchError::Protocol("reset".into()),
                Some(Reason::Protocol),
                true,
            ),
            (
                FetchError::InvalidUrl("ftp".into()),
                Some(Reason::InvalidUrl),
                false,
            ),
            (
                FetchError::Proxy("no chain".into()),
                Some(Reason::Proxy),
                true,
            ),
            (FetchError::LeaseLost(LeaseLost), None, true),
        ];
        // Every variant is among the cases: a new variant fails to compile here until it has its index, and then
        // this test until it has its case.
        let index = |e: &FetchError| match e {
            FetchError::PrivateNetwork { .. } => 0,
            FetchError::Dns(_) => 1,
            FetchError::Connect(_) => 2,
            FetchError::Tls(_) => 3,
            FetchError::Timeout(_) => 4,
            FetchError::TooLarge { .. } => 5,
            FetchError::Protocol(_) => 6,
            FetchError::InvalidUrl(_) => 7,
            FetchError::Proxy(_) => 8,
            FetchError::LeaseLost(_) => 9,
        };
        let seen: std::collections::BTreeSet<usize> =
            cases.iter().map(|(e, ..)| index(e)).collect();
        assert_eq!(seen, (0..10).collect());
        for (err, reason, retry) in cases {
            assert_eq!(err.reason(), reason, "{err:?}");
            assert_eq!(err.is_retryable(), retry, "{err:?}");
            let detail = err.to_string();
            match (err.into_result(), reason) {
                (
                    JobResult::FetchFailed {
                        reason: got,
                        detail: text,
                        retryable,
                    },
                    Some(want),
                ) => {
                    assert_eq!(got, want);
                    assert_eq!(text, detail);
                    assert_eq!(retryable, retry, "{want:?}");
                }
                // Nothing went out: the job did not start.
                (JobResult::NotStarted, None) => {}
                (other, want) => panic!("{detail}: {other:?} for {want:?}"),
            }
        }
    }

    #[test]
    fn display_texts() {
        assert_eq!(
            FetchError::Timeout(TimeoutPhase::Headers).to_string(),
            "timeout (headers)"
        );
        assert_eq!(
            FetchError::TooLarge {
                limit: 10,
                partial: None
            }
            .to_string(),
            "body exceeds 10 bytes"
        );
    }

    #[test]
    fn classify_walks_io_payloads() {
        // resolver error buried inside two io::Errors
        let inner = ResolveError::PrivateOnly {
            host: "localhost".into(),
            addr: IpAddr::from([127, 0, 0, 1]),
        };
        let wrapped = io::Error::other(io::Error::other(inner));
        match classify(&wrapped, true) {
            FetchError::PrivateNetwork { host, addr } => {
                assert_eq!(host, "localhost");
                assert_eq!(addr, IpAddr::from([127, 0, 0, 1]));
            }
            other => panic!("unexpected {other:?}"),
        }

        let tls = io::Error::other(io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        ));
        match classify(&tls, true) {
            FetchError::Tls(d) => assert_eq!(d, "tls: unknown issuer"),
            other => panic!("unexpected {other:?}"),
        }
        let timed_out = io::Error::other(TlsCause::HandshakeTimedOut);
        let err = classify(&timed_out, true);
        assert_eq!(err.reason(), Some(Reason::Tls));
        assert_eq!(err.to_string(), "tls: handshake timed out");

        let dns = io::Error::other(ResolveError::Lookup {
            host: "nx.invalid".into(),
            detail: LookupError::NxDomain,
        });
        match classify(&dns, true) {
            FetchError::Dns(msg) => assert!(msg.contains("nx.invalid"), "{msg}"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn classify_io_kinds() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert!(matches!(classify(&refused, true), FetchError::Connect(_)));
        let timed_out = io::Error::new(io::ErrorKind::TimedOut, "connect timeout");
        assert!(matches!(
            classify(&timed_out, true),
            FetchError::Timeout(TimeoutPhase::Connect)
        ));
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert!(matches!(classify(&reset, false), FetchError::Protocol(_)));
    }

    #[test]
    fn chain_message_joins_levels() {
        let e = io::Error::other(ResolveError::Lookup {
            host: "a.example".into(),
            detail: LookupError::Unresolved("boom".into()),
        });
        let msg = chain_message(&e);
        assert!(msg.contains("a.example") && msg.contains("boom"), "{msg}");
    }
}
