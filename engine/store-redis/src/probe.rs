//! `--check`'s look at Redis: it connects as a run would (one server or a cluster, with the password and TLS the
//! URLs name) within a short deadline, and reads how the crawl stands there, changing nothing.

use super::RedisSettings;
use super::conn::{Conn, reply};
use super::instance::{made_with, validate};
use super::keys::Keys;
use crawl_core::frontier::FrontierError;
use redis::Value;
use std::time::Duration;

/// How the crawl stands in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrawlThere {
    /// Not made yet: the first process of the crawl makes it.
    Absent,
    /// Made, with this many shards (None: its instance key names no count).
    Made { shards: Option<u32> },
}

/// Connects to the crawl's Redis within `within` (for the connection and for each reply), asks it for PING and
/// reads the crawl's instance key. The error names the redacted URL(s), with every password scrubbed.
pub fn probe(settings: &RedisSettings, within: Duration) -> Result<CrawlThere, FrontierError> {
    validate(settings, "check")?;
    let mut conn = Conn::open_within(settings, within, within)?;
    conn.cmd(&redis::cmd("PING"))?;
    let keys = Keys::new(&settings.crawl);
    match conn.cmd(redis::cmd("GET").arg(keys.instance()))? {
        Value::Nil => Ok(CrawlThere::Absent),
        v => {
            let value = reply::string(v, "instance")?;
            let inst = value.split_once(':').map_or(value.as_str(), |(_, i)| i);
            Ok(CrawlThere::Made {
                shards: made_with(inst),
            })
        }
    }
}

#[cfg(test)]
mod tests;
