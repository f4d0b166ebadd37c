//! Where the master is: the one server of `urls`, or the master that Redis Sentinel names; and the switches of
//! master this process went through.
//!
//! With sentinels, every new connection asks them for the current master (the `redis` crate's
//! [`redis::sentinel::Sentinel`], which also checks that the server it names calls itself master). A process
//! learns of a switch-over or failover when its connection breaks or when the lease thread asks the sentinels
//! (every round) and they name another address: it connects to the new master and logs the switch once for the
//! whole process ([`Switches`]), with how long its writes were blocked. Each switch raises the process's switch
//! epoch, which the lease thread reads to hold back new leases for one lease length (see `shards.rs`).

use super::RedisSettings;
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{Client, RedisConnectionInfo, RedisError};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The master switches seen by one process (shared by its connections).
#[derive(Debug, Default)]
pub struct Switches {
    state: Mutex<State>,
    epoch: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// The master's address as last connected.
    master: Option<String>,
    /// Since when requests fail (any connection of the process), until one goes through again.
    failing_since: Option<Instant>,
}

impl Switches {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A request failed (the connection broke, the server could not answer).
    pub fn failed(&self, now: Instant) {
        let mut s = self.state();
        if s.failing_since.is_none() {
            s.failing_since = Some(now);
        }
    }

    /// How long requests have been failing (None while they go through).
    pub fn failing_for(&self) -> Option<Duration> {
        self.state().failing_since.map(|t| t.elapsed())
    }

    /// A request went through.
    pub fn ok(&self) {
        self.state().failing_since = None;
    }

    /// A connection to the master at `addr` was made: a switch is logged once, with how long writes were blocked.
    pub fn connected(&self, addr: &str) {
        let mut s = self.state();
        match s.master.as_deref() {
            Some(old) if old != addr => {
                let blocked_ms = s.failing_since.map_or(0, |t| {
                    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
                });
                let epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
                tracing::warn!(
                    from = %old,
                    to = %addr,
                    blocked_ms,
                    switch = epoch,
                    "redis master switched"
                );
            }
            _ => {}
        }
        s.master = Some(addr.to_owned());
    }

    /// The number of switches seen so far.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The master's address as last connected.
    #[cfg(test)]
    pub fn master(&self) -> Option<String> {
        self.state().master.clone()
    }
}

/// The sentinel URLs with the sentinel password put in where they carry none.
fn sentinel_urls(settings: &RedisSettings) -> Vec<String> {
    settings
        .sentinels
        .iter()
        .map(
            |u| match (&settings.sentinel_password, url::Url::parse(u)) {
                (Some(p), Ok(mut parsed)) if parsed.password().is_none() => {
                    if parsed.set_password(Some(p)).is_ok() {
                        parsed.to_string()
                    } else {
                        u.clone()
                    }
                }
                _ => u.clone(),
            },
        )
        .collect()
}

/// Every secret of a sentinel topology (to scrub them from error texts).
pub fn secrets(settings: &RedisSettings) -> Vec<String> {
    [&settings.sentinel_password, &settings.password]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect()
}

/// A client for the master the sentinels name now, and its address.
pub fn master_client(settings: &RedisSettings) -> Result<(Client, String), RedisError> {
    let mut sentinel = Sentinel::build(sentinel_urls(settings))?;
    let mut redis = RedisConnectionInfo::default();
    if let Some(p) = &settings.password {
        redis = redis.set_password(p);
    }
    let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(redis);
    let client = sentinel.master_for(&settings.master, Some(&node))?;
    let addr = client.get_connection_info().addr().to_string();
    Ok((client, addr))
}

/// The master's address as the first sentinel that answers names it (`SENTINEL get-master-addr-by-name`), each
/// asked within `within`; None when none answers.
pub fn named_master(settings: &RedisSettings, within: Duration) -> Option<String> {
    for url in sentinel_urls(settings) {
        let Ok(client) = Client::open(url.as_str()) else {
            continue;
        };
        let Ok(mut conn) = client.get_connection_with_timeout(within) else {
            continue;
        };
        if conn.set_read_timeout(Some(within)).is_err() {
            continue;
        }
        let r: Result<Option<(String, u16)>, RedisError> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&settings.master)
            .query(&mut conn);
        if let Ok(Some((host, port))) = r {
            return Some(format!("{host}:{port}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_is_counted_once_and_the_first_master_is_none() {
        let s = Switches::default();
        s.connected("10.0.0.1:6379");
        s.connected("10.0.0.1:6379");
        assert_eq!(s.epoch(), 0, "the first master is no switch");
        s.failed(Instant::now());
        s.connected("10.0.0.2:6379");
        s.connected("10.0.0.2:6379");
        assert_eq!(s.epoch(), 1);
        assert_eq!(s.master().as_deref(), Some("10.0.0.2:6379"));
    }

    #[test]
    fn the_sentinel_password_goes_into_urls_without_one() {
        let settings = RedisSettings {
            sentinels: vec!["redis://s1:26379".into(), "redis://:own@s2:26379".into()],
            sentinel_password: Some("pw".into()),
            password: Some("mpw".into()),
            ..RedisSettings::default()
        };
        assert_eq!(
            sentinel_urls(&settings),
            ["redis://:pw@s1:26379", "redis://:own@s2:26379"]
        );
        assert_eq!(secrets(&settings), ["pw", "mpw"]);
    }
}
