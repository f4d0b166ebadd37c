//! crawl-test-kit: the tools crawl-engine's tests start and read, with no crate of the project under it, so the
//! tests of every crate (the stores and the output writers included) can use it.
//!
//! # Layout
//! - [`tool`]: the rule for a test that needs an optional tool: it skips with a note, except under `CI=true`, where
//!   the missing tool fails it.
//! - [`cut`]: a loopback TCP forwarder between a client and a server, cut off, stalled and healed at will.
//! - [`kafka`]: a Kafka-compatible broker (tansu) a test starts on a loopback port, stopped and started again at will,
//!   and (feature `kafka`) a reader of every message of a topic.
//! - [`netns`]: network namespaces joined to the test's own by bridged veth pairs, each one cut off and healed at
//!   will (root and iproute2).
//! - [`postgres`]: PostgreSQL clusters a test starts (`initdb` in a temporary directory, a loopback port the system
//!   handed out), stopped and started again at will, shut down on drop.
//! - [`redis`]: `redis-server`s (and clusters) a test starts, on a unix socket or on ports the system handed out,
//!   killed on drop.
//! - [`s3`]: moto's S3-compatible server a test starts on a free loopback port, with plain-HTTP helpers to make a
//!   bucket and read back keys, objects and multipart uploads in progress; killed on drop.
//! - [`sentinel`]: a master with replicas and the Redis Sentinels watching them, for failover tests.
//! - [`ToolError`]: why a tool failed a test's request.
//! - [`warcio`]: warcio, the Python WARC library, as the independent reader of the archives the crawler writes.

pub mod cut;
mod error;
pub mod kafka;
pub mod netns;
pub mod postgres;
pub mod redis;
pub mod s3;
pub mod sentinel;
pub mod tool;
pub mod warcio;

pub use error::ToolError;
