//! The parser: decoding, link extraction, robots.txt and sitemap reading.

pub mod actor;
pub mod archive;
pub mod css;
pub mod decode;
mod entities;
pub mod extract;
pub mod logic;

pub mod pool;
mod resolve_cache;
pub mod sitemap;
pub mod values;

pub use actor::Parser;
