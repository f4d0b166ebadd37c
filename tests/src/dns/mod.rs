//! Fake DNS servers for the resolver tests (see docs/RESOLVER.md).
//!
//! - [`FakeDns`]: plain DNS over UDP and TCP (2-byte length prefix) on one loopback port.
//! - [`FakeDoh`]: RFC 8484 DNS over HTTPS (h2 and http/1.1 by ALPN) with its own test CA, for the name
//!   [`DOH_HOST`] and the address 127.0.0.1.
//!
//! Both answer from a [`Zone`]: a per-name [`Behaviour`] (names case-insensitive, trailing dot ignored) and a
//! [`CatchAll`] for unknown names. Behaviours can be changed while the server runs, `set_down(true)` simulates
//! a total outage, and every query is counted and logged ([`QueryLog`]). Both servers stop all their tasks on
//! `shutdown().await` or on drop.
//!
//! # Module tree
//! - `zone`: behaviours, the name map, counters and the answer logic shared by both servers.
//! - `tasks`: the task group that lets a server stop everything it spawned.
//! - `server`: [`FakeDns`].
//! - `tls`: the test CA, the server certificate and rustls configs.
//! - `doh`: [`FakeDoh`].

mod doh;
mod server;
mod tasks;
mod tls;
mod zone;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_doh;

pub use doh::{DOH_HOST, FakeDoh, base64url_decode, base64url_encode};
pub use server::FakeDns;
pub use zone::{Behaviour, CatchAll, DEFAULT_TTL, QueryLog, Transport, Zone, normalize_name};

/// Errors starting a fake DNS or DoH server.
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("could not bind udp and tcp on one port after {0} tries")]
    NoCommonPort(usize),
    #[error("certificate generation: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("tls config: {0}")]
    Tls(#[from] rustls::Error),
}
