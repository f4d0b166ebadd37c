//! `[api]`: the control API that steers a running crawl (`crawl-engine ctl` is its client). Off by default; on a
//! loopback address a bearer token is optional, on any other it is required. Every key is restart-only but
//! `alert_actions` (`[[api.alert_actions]]`: what an Alertmanager notification posted to `/v1/alerts` may do),
//! which each notification reads from the running config, so that a reload changes them at once.
//!
//! The token file is read by the binary when it starts the API; [`parse_token`] says what its text must be.

use super::proxy::Secret;
use crate::control::alerts::AlertAction;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The default of `api.max_body_bytes`: 1 MiB.
pub const DEFAULT_API_MAX_BODY_BYTES: u64 = 1 << 20;

/// The fewest characters a bearer token may have (after trimming the whitespace around it).
pub const MIN_TOKEN_CHARS: usize = 16;

/// The address `crawl-engine ctl` asks when neither `--api` nor a config names one.
pub const DEFAULT_API_URL: &str = "http://127.0.0.1:9465";

/// `[api]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiConfig {
    /// Where the API listens; None (`""` in the file, the default) = no API. Port 0 picks a free port.
    pub listen: Option<SocketAddr>,
    /// The file holding the bearer token every request must carry; required off loopback.
    pub token_file: Option<PathBuf>,
    /// PEM certificate chain; with `key_file`, the API is served over HTTPS only.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file`.
    pub key_file: Option<PathBuf>,
    /// Request bodies above this many bytes are refused (413).
    pub max_body_bytes: u64,
    /// `[[api.alert_actions]]`: what the alerts posted to `/v1/alerts` may do, in file order.
    pub alert_actions: Vec<AlertAction>,
}

/// Off, 1 MiB bodies.
impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            listen: None,
            token_file: None,
            cert_file: None,
            key_file: None,
            max_body_bytes: DEFAULT_API_MAX_BODY_BYTES,
            alert_actions: Vec::new(),
        }
    }
}

impl ApiConfig {
    /// True when the API is served over HTTPS.
    pub fn tls(&self) -> bool {
        self.cert_file.is_some() && self.key_file.is_some()
    }

    /// The base URL a client on this machine reaches the API at (`http(s)://ip:port`); None when the API is off.
    /// An unspecified address (`0.0.0.0`, `[::]`) is reached on loopback.
    pub fn url(&self) -> Option<String> {
        let addr = self.listen?;
        let ip = match addr.ip() {
            std::net::IpAddr::V4(v4) if v4.is_unspecified() => {
                std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
            }
            std::net::IpAddr::V6(v6) if v6.is_unspecified() => {
                std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
            }
            ip => ip,
        };
        let scheme = if self.tls() { "https" } else { "http" };
        Some(format!("{scheme}://{}", SocketAddr::new(ip, addr.port())))
    }
}

/// Why a token file's text is not a usable token. Never shows the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenProblem {
    #[error("the token file is empty")]
    Empty,
    #[error("the token is {found} characters long; at least {MIN_TOKEN_CHARS} are needed")]
    TooShort { found: usize },
    #[error(
        "the token may hold printable ASCII characters only (one word: no spaces, no line breaks inside)"
    )]
    BadCharacter,
}

/// The bearer token in a token file's text: the text with the whitespace around it trimmed, at least
/// [`MIN_TOKEN_CHARS`] characters, each printable ASCII (it travels in a header).
pub fn parse_token(text: &str) -> Result<Secret, TokenProblem> {
    let t = text.trim();
    if t.is_empty() {
        return Err(TokenProblem::Empty);
    }
    if !t.chars().all(|c| c.is_ascii_graphic()) {
        return Err(TokenProblem::BadCharacter);
    }
    let found = t.chars().count();
    if found < MIN_TOKEN_CHARS {
        return Err(TokenProblem::TooShort { found });
    }
    Ok(Secret::new(t))
}
