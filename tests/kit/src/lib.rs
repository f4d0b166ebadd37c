//! crawl-test-kit: the tools crawl-engine's tests start and read, with no crate of the project under it, so the
//! tests of every crate (the stores and the output writers included) can use it.
//!
//! # Layout
//! - [`tool`]: the rule for a test that needs an optional tool: it skips with a note, except under `CI=true`, where
//!   the missing tool fails it.
//! - [`cut`]: a loopback TCP forwarder between a client and a server, cut off, stalled and healed at will.
//! - [`netns`]: network namespaces joined to the test's own by bridged veth pairs, each one cut off and healed at
//!   will (root and iproute2).
//! - [`redis`]: `redis-server`s (and clusters) a test starts, on a unix socket or on ports the system handed out,
//!   killed on drop.
//! - [`s3`]: moto's S3-compatible server a test starts on a free loopback port, with plain-HTTP helpers to make a
//!   bucket and read back keys, objects and multipart uploads in progress; killed on drop.
//! - [`sentinel`]: a master with replicas and the Redis Sentinels watching them, for failover tests.
//! - [`ToolError`]: why a tool failed a test's request.
//! - [`warcio`]: warcio, the Python WARC library, as the independent reader of the archives the crawler writes.

pub mod cut;
mod error;
pub mod netns;
pub mod redis;
pub mod s3;
pub mod sentinel;
pub mod tool;
pub mod warcio;

pub use error::ToolError;
