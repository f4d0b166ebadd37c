//! Where the master is: the one server of `urls`, or the master that Redis Sentinel names; and the switches of
//! master this process went through.
//!
//! With sentinels, every new connection asks them for the current master (the `redis` crate's
//! [`redis::sentinel::Sentinel`], which also checks that the server it names calls itself master). A process
//! learns of a switch-over or failover when its connection breaks or when the lease thread asks the sentinels
//! (every round) and they name another address: it connects to the new master and logs the switch once for the
//! whole process ([`Switches`]), with how long its writes were blocked. Each switch raises the process's switch
//! epoch, which the lease thread reads to hold back new leases for one lease length (see `shards.rs`).
//!
//! On a cluster the client follows a failover by itself (it reads the slots again when a node fails or answers
//! MOVED); the lease thread reads `CLUSTER NODES` every round, so a slot range whose master changed is logged once
//! and raises the switch epoch alike.

use super::RedisSettings;
use redis::sentinel::{Sentinel, SentinelNodeConnectionInfo};
use redis::{Client, RedisConnectionInfo, RedisError};
use std::collections::BTreeMap;
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
    /// On a cluster: the master of each slot range as last seen (range start → end, address).
    slots: BTreeMap<u16, (u16, String)>,
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

    /// On a cluster: the masters serving the slot ranges now. A range whose master changed is a switch (logged
    /// once, with how long requests had been failing); a range that nobody serves now keeps its last master.
    pub fn cluster_masters(&self, now: BTreeMap<u16, (u16, String)>) {
        let mut s = self.state();
        let blocked_ms = s.failing_since.map_or(0, |t| {
            u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
        });
        let mut switched = false;
        for (start, (end, addr)) in now {
            match s.slots.insert(start, (end, addr.clone())) {
                Some((_, old)) if old != addr => {
                    switched = true;
                    tracing::warn!(
                        from = %old,
                        to = %addr,
                        slots = %format!("{start}-{end}"),
                        blocked_ms,
                        "redis master switched"
                    );
                }
                _ => {}
            }
        }
        if switched {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
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

/// The fewest replicas any master of a cluster has, from `CLUSTER NODES` (None when it names no master).
pub fn cluster_min_replicas(nodes: &str) -> Option<u32> {
    let mut masters: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut replicas_of = Vec::new();
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(id), Some(flags), Some(master)) = (f.first(), f.get(2), f.get(3)) else {
            continue;
        };
        if flags.split(',').any(|x| x == "fail" || x == "noaddr") {
            continue;
        }
        // A master counts when it serves slots (they follow the eight fixed fields).
        if flags.split(',').any(|x| x == "master") && f.len() > 8 {
            masters.entry(id).or_insert(0);
        } else if flags.split(',').any(|x| x == "slave") {
            replicas_of.push(*master);
        }
    }
    for m in replicas_of {
        if let Some(n) = masters.get_mut(m) {
            *n += 1;
        }
    }
    masters.values().copied().min()
}

/// Which master serves each slot range of a cluster, from `CLUSTER NODES`: range start → (range end, `host:port`).
/// Masters flagged failing serve nothing here.
pub fn cluster_masters(nodes: &str) -> BTreeMap<u16, (u16, String)> {
    let mut out = BTreeMap::new();
    for line in nodes.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(addr), Some(flags)) = (f.get(1), f.get(2)) else {
            continue;
        };
        let flags: Vec<&str> = flags.split(',').collect();
        if !flags.contains(&"master") || flags.contains(&"fail") || flags.contains(&"noaddr") {
            continue;
        }
        let addr = addr.split(['@', ',']).next().unwrap_or(addr);
        for range in f.iter().skip(8).filter(|r| !r.starts_with('[')) {
            let (a, b) = range.split_once('-').unwrap_or((range, range));
            if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>()) {
                out.insert(a, (b, addr.to_owned()));
            }
        }
    }
    out
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
    fn cluster_replicas_are_counted_per_master_serving_slots() {
        let nodes = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922
a3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
b1 127.0.0.1:7003@17003 slave a1 0 0 1 connected
b2 127.0.0.1:7004@17004 slave a2 0 0 2 connected
b3 127.0.0.1:7005@17005 slave a3 0 0 3 connected
b4 127.0.0.1:7006@17006 slave a3 0 0 3 connected
e1 127.0.0.1:7007@17007 master - 0 0 0 connected
";
        assert_eq!(cluster_min_replicas(nodes), Some(1));
        let one_bare = nodes.replace(
            "b2 127.0.0.1:7004@17004 slave a2",
            "b2 127.0.0.1:7004@17004 slave,fail a2",
        );
        assert_eq!(cluster_min_replicas(&one_bare), Some(0));
        let masters_only: String = nodes.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert_eq!(cluster_min_replicas(&masters_only), Some(0));
        assert_eq!(cluster_min_replicas(""), None);
    }

    #[test]
    fn a_cluster_failover_is_one_switch_of_the_ranges_that_moved() {
        let before = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922 [10923->-a3]
a3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
b2 127.0.0.1:7004@17004 slave a2 0 0 2 connected
";
        let m = cluster_masters(before);
        assert_eq!(m.len(), 3);
        assert_eq!(m.get(&5461), Some(&(10922, "127.0.0.1:7001".to_owned())));
        let s = Switches::default();
        s.cluster_masters(m);
        assert_eq!(s.epoch(), 0, "the first view is no switch");
        // a2 failed; before the promotion nobody serves its range: no switch yet, the range keeps its master.
        let failing = before.replace("master - 0 0 2", "master,fail - 0 0 2");
        s.cluster_masters(cluster_masters(&failing));
        assert_eq!(s.epoch(), 0);
        let promoted = failing.replace(
            "b2 127.0.0.1:7004@17004 slave a2 0 0 2 connected",
            "b2 127.0.0.1:7004@17004 master - 0 0 4 connected 5461-10922",
        );
        s.cluster_masters(cluster_masters(&promoted));
        assert_eq!(s.epoch(), 1, "one switch");
        s.cluster_masters(cluster_masters(&promoted));
        assert_eq!(s.epoch(), 1, "logged once");
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
