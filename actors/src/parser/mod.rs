//! The parser: decoding, link extraction, robots.txt and sitemap reading.

pub mod actor;
pub mod archive;
pub mod css;
pub mod decode;
mod entities;
pub mod extract;
pub mod logic;

pub mod pool;
pub mod sitemap;
pub mod values;

pub use actor::Parser;
