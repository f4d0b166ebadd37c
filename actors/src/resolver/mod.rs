//! The resolver: every host name the engine connects to is resolved here. Plain DNS over UDP/TCP with a hold-on
//! window and pollution detection, DNS-over-HTTPS for cross-checks and fallback, a TTL cache, one supervised actor.
//!
//! - [`logic`]: the detection rules (pure); [`ipset`]: bogus IP/CIDR sets; [`cache`]: the TTL cache.
//! - [`wire`], [`plain`], [`doh`]: DNS messages and the two transports.
//! - [`lookup`]: one uncached lookup per mode, both families ([`family`]: merging A and AAAA); [`actor`]: the actor (hosts, cache, coalescing, probe).

pub mod actor;
pub mod cache;
pub mod doh;
pub mod error;
pub mod family;
pub mod ipset;
pub mod local;
pub mod logic;
pub mod lookup;
pub mod messages;
pub mod plain;
pub mod setup;
pub mod stats;
pub mod wire;
pub use actor::Resolver;
