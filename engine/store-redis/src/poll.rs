//! What a process learns from Redis at each shard poll: the crawl's counters, the hosts (and robots.txt rules) of
//! the shards it gained or that gained hosts, and the records of processes that stopped.

use super::conn::{Call, reply};
use super::scripts::SCRIPTS;
use super::{RedisFrontier, commit};
use crawl_core::frontier::{
    Counters, FrontierError, HostInfo, RECORDS_HOST, ShardChanges, SharedRobots, host_fp,
};
use std::collections::HashMap;
use std::time::Instant;

/// Shards, each with its hosts that have pending URLs.
pub(super) type ShardHosts = Vec<(u32, Vec<HostInfo>)>;

impl RedisFrontier {
    /// Sums every shard's counters and unacknowledged records.
    pub(super) fn refresh_counters(&mut self) -> Result<(), FrontierError> {
        let calls: Vec<Call> = (0..self.shards())
            .map(|s| self.shard_call(&SCRIPTS.stats, s))
            .collect();
        let mut c = Counters::default();
        let mut unacked = 0;
        let mut pending_held = 0;
        for (s, r) in self.conn.run(&calls)?.into_iter().enumerate() {
            let v = r.map_err(|e| self.conn.error(&e))?;
            let a = reply::array(v, "stats")?;
            let n = |i: usize| a.get(i).map_or(Ok(0), |v| reply::uint(v, "stats"));
            let pending = n(1)?;
            c.known += n(0)?;
            c.pending += pending;
            if self.gate.token(s as u32).is_some() {
                pending_held += pending;
            }
            c.done += n(2)?;
            c.pages_fetched += n(3)?;
            unacked += n(4)?;
            self.host_versions[s] = n(5)?;
        }
        self.counters = c;
        self.unacked = unacked;
        self.pending_held = pending_held;
        Ok(())
    }

    /// The hosts with pending URLs of some shards (each shard with its hosts), and (`gained`) the robots.txt rules kept with them.
    pub(super) fn hosts_of(
        &mut self,
        shards: &[u32],
        gained: bool,
    ) -> Result<(ShardHosts, Vec<SharedRobots>), FrontierError> {
        let calls: Vec<Call> = shards
            .iter()
            .map(|&s| {
                self.shard_call(&SCRIPTS.hosts, s)
                    .arg(if gained { "1" } else { "0" })
            })
            .collect();
        let mut out = Vec::with_capacity(shards.len());
        let mut robots = Vec::new();
        for (&s, r) in shards.iter().zip(self.conn.run(&calls)?) {
            let v = r.map_err(|e| self.conn.error(&e))?;
            let mut parts = reply::array(v, "hosts")?.into_iter();
            let (Some(counts), Some(pauses)) = (parts.next(), parts.next()) else {
                return Err(FrontierError::Store("hosts: short reply".into()));
            };
            if let Some(rules) = parts.next() {
                let mut it = reply::array(rules, "robots")?.into_iter();
                while let (Some(authority), Some(value)) = (it.next(), it.next()) {
                    let authority = reply::string(authority, "authority")?;
                    let value = reply::bytes(value, "robots")?;
                    match commit::parse_robots(authority, &value) {
                        Some(r) => robots.push(r),
                        None => tracing::warn!(
                            shard = s,
                            "unreadable robots.txt rules in the store ignored"
                        ),
                    }
                }
            }
            let mut paused = HashMap::new();
            let mut it = reply::array(pauses, "pauses")?.into_iter();
            while let (Some(name), Some(value)) = (it.next(), it.next()) {
                // `until` (Unix ms) or `until:level`.
                let value = reply::string(value, "pause")?;
                let (until, level) = value.split_once(':').unwrap_or((value.as_str(), "0"));
                let parse = |s: &str| {
                    s.parse::<u64>().map_err(|e| FrontierError::Corrupt {
                        what: "host pause".into(),
                        detail: format!("{value:?}: {e}"),
                    })
                };
                let level = u32::try_from(parse(level)?).unwrap_or(u32::MAX);
                paused.insert(reply::string(name, "host")?, (parse(until)?, level));
            }
            let mut it = reply::array(counts, "hosts")?.into_iter();
            let mut hosts = Vec::new();
            while let (Some(name), Some(count)) = (it.next(), it.next()) {
                let name = reply::string(name, "host")?;
                let pending = reply::uint(&count, "host count")?;
                if pending == 0 {
                    continue;
                }
                let fp = if name.is_empty() {
                    RECORDS_HOST
                } else {
                    host_fp(&name)
                };
                let (paused_until_ms, backoff_level) = paused.get(&name).copied().unwrap_or((0, 0));
                hosts.push(HostInfo {
                    fp,
                    name,
                    pending,
                    paused_until_ms,
                    backoff_level,
                });
            }
            out.push((s, hosts));
        }
        Ok((out, robots))
    }

    /// Shard news since the last poll: shards gained (with their hosts and robots.txt rules) and lost, hosts that
    /// appeared in held shards, the crawl's counters, and records taken over from processes that stopped.
    ///
    /// What the caller has been told (`reported`, `hosts_known`) changes only once every request of the poll went
    /// through: a poll that fails on the way (Redis down or loading) tells nothing, and the next one tells it all,
    /// the losses included.
    pub(super) fn poll(&mut self) -> Result<ShardChanges, FrontierError> {
        self.check_fatal()?;
        let mut ch = ShardChanges::default();
        let mut gained = Vec::new();
        for s in 0..self.shards() {
            let held = self.gate.token(s).is_some();
            let told = self.reported[s as usize];
            if held && !told {
                gained.push(s);
            } else if told && !held {
                ch.lost.push(s);
            }
        }
        self.refresh_counters()?;
        ch.counters = Some(self.counters);
        ch.unacked = self.unacked;
        ch.pending_held = self.pending_held;
        (ch.leases_renewed, ch.leases_lost) = self.gate.lease_counts();
        ch.spooled = self
            .conn
            .spool()
            .and_then(|s| s.pending().ok())
            .map_or(0, |p| p.len() as u64);
        let (gained_hosts, robots) = self.hosts_of(&gained, true)?;
        let changed: Vec<u32> = (0..self.shards())
            .filter(|&s| {
                let i = s as usize;
                self.reported[i]
                    && !gained.contains(&s)
                    && !ch.lost.contains(&s)
                    && self.host_versions[i] != self.hosts_known[i]
            })
            .collect();
        let changed_hosts = self.hosts_of(&changed, false)?.0;
        let every = std::time::Duration::from_millis(self.settings.lease_ms / 2);
        if self.last_claim.is_none_or(|t| t.elapsed() >= every) {
            self.last_claim = Some(Instant::now());
            // Handed to the caller with the next commit, numbered after that commit's own records.
            let taken = self.take_over()?;
            self.claimed.extend(taken);
        }
        // Nothing below fails: the caller is told all of it.
        for &s in &ch.lost {
            self.reported[s as usize] = false;
        }
        ch.robots = robots;
        for (s, hosts) in gained_hosts {
            self.reported[s as usize] = true;
            self.hosts_known[s as usize] = self.host_versions[s as usize];
            ch.gained.push((s, hosts));
        }
        for (s, hosts) in changed_hosts {
            self.hosts_known[s as usize] = self.host_versions[s as usize];
            ch.hosts.extend(hosts);
        }
        ch.claimed = self.claimed.len() as u64;
        Ok(ch)
    }
}
