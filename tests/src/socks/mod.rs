//! In-test SOCKS5 servers (RFC 1928, RFC 1929 user/pass) that behave and that misbehave, for the proxy-chain tests
//! (docs/PROXY.md).
//!
//! [`FakeSocks`] listens on a loopback address (127.0.0.1:0 by default, or any 127.x.y.z / ::1 given in
//! [`SocksOptions`]) and acts out one [`Behaviour`]: `Good` relays CONNECT tunnels to IPv4, IPv6 and domain targets
//! (domains resolve only through the map the test gives, never real DNS; the outgoing socket is bound to the
//! server's own IP so a target can tell which hop it came from); the others hang, refuse, reply with an error code,
//! drop or trickle. It counts connections, CONNECT targets, relayed bytes and open tunnels, and `kill()` /
//! `shutdown().await` (or drop) stops every task and closes every tunnel.
//!
//! # Module tree
//! - `proto`: the server side of the SOCKS5 wire format.
//! - `relay`: the byte pumps (plain, trickle, cut after N bytes).
//! - `server`: [`FakeSocks`], its options, behaviours and counters.

mod proto;
mod relay;
mod server;

#[cfg(test)]
mod tests;

pub use proto::SeenTarget;
pub use server::{Behaviour, Counters, FakeSocks, SocksOptions};

/// Errors starting a fake SOCKS5 server.
#[derive(Debug, thiserror::Error)]
pub enum SocksError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}
