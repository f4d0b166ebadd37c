//! crawl-tests: test support for crawl-engine.
//!
//! # Layout
//! - [`site`]: the one generator of test sites (pages, links, robots.txt, redirects, 404s, sitemaps, custom routes),
//!   used by the integration tests, `make demo` and `make bench`.
//! - [`freshness`]: how fresh a crawler kept its copies of a changing site, from the site's ground truth.
//! - [`certs`]: a test CA and a server certificate as PEM, for the engine's own TLS listeners.
//! - [`engine`]: runs the real `crawl-engine` binary in a temporary directory and reads its JSONL.
//! - [`socks`]: in-test SOCKS5 servers that behave and misbehave, for the proxy-chain tests.
//! - [`otlp`]: an in-process OTLP trace receiver (gRPC and OTLP/HTTP) that keeps the spans it is sent.
//! - [`prom`]: a Prometheus text-format parser, a blocking `/metrics` scraper and `promtool check metrics`.
//!
//! The Redis servers and the warcio runner the tests share with the other crates' tests are in `crawl-test-kit`.
//!
//! The integration tests that run the binary live in the `crawl-engine` package (`engine/tests/it/`, one test binary
//! made of modules), which has this crate as a dev-dependency and hands [`engine::TestCrawl`] its binary path.

pub mod certs;
pub mod dns;
pub mod engine;
pub mod freshness;
pub mod otlp;
pub mod prom;
pub mod site;
pub mod socks;
pub mod wait;
