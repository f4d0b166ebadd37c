//! The proxy-chain layer (docs/PROXY.md): every proxied connection goes through a SOCKS5 chain
//! picked by host rules and a selection policy, with per-phase deadlines, fault classification
//! and circuit breakers per hop and per chain.
//!
//! - [`select`]: host globs, the rule router and the selection policies (pure).
//! - [`breaker`]: the circuit breaker (pure, explicit instants).
//! - [`hop`]: per-chain and per-hop counters for the metrics.
//! - [`socks`]: opening a chain hop by hop with tokio-socks, classifying faults.

pub mod actor;
pub mod breaker;
pub mod hop;
pub mod messages;
pub mod select;
pub mod socks;
