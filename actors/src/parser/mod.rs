//! The parser: decoding, link extraction, robots.txt and sitemap reading.

pub mod actor;
pub mod archive;
pub mod decode;
pub mod extract;
pub mod logic;

pub mod pool;
pub mod sitemap;

pub use actor::Parser;
