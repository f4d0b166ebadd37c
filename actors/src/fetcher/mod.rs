//! The fetcher: HTTP(S) requests with deadlines and limits, one actor per fetcher thread.

pub mod actor;
pub mod connector;
pub mod dial;
pub mod error;
pub mod http;

pub use actor::Fetcher;
#[cfg(test)]
mod credentials_tests;
#[cfg(test)]
mod proxy_tls_tests;
#[cfg(test)]
mod test_lease;
