//! The shard view: what the caller was told about the shards (which it holds and under which lease, the hosts it
//! knows of each) and the crawl's counters, and the polls that bring both up to date: counters, the hosts (and
//! robots.txt rules) of the shards gained or that gained hosts, the shards lost.

use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::robots;
use super::scripts::SCRIPTS;
use super::shards::LeaseTable;
use crawl_core::frontier::{
    Counters, FrontierError, HostInfo, RECORDS_HOST, ShardChanges, SharedRobots, host_fp,
};
use std::collections::HashMap;

/// Shards, each with its hosts that have pending URLs.
pub(super) type ShardHosts = Vec<(u32, Vec<HostInfo>)>;

/// A shard's stats as its script answers them: known, pending, done, pages fetched, unacknowledged records, hosts
/// version, epoch, scheduled.
type ShardStats = [u64; 8];

/// The shards and counters as the caller knows them.
pub(super) struct ShardView {
    /// Per shard: the fencing token of the lease the caller was told it holds the shard with (None: not told).
    told: Vec<Option<u64>>,
    /// Per shard: the hosts version read last, and the one the caller's hosts are as of.
    host_versions: Vec<u64>,
    hosts_known: Vec<u64>,
    counters: Counters,
    /// Records committed and not acknowledged, in every shard.
    unacked: u64,
    /// Pending URLs of the shards held, as of the last counters read.
    pending_held: u64,
    /// Every shard's epoch as of the last read.
    epochs: Vec<u64>,
}

/// What a poll read, told to the caller by [`ShardView::tell`] once every read went through.
pub(super) struct Poll {
    changes: ShardChanges,
    gained: ShardHosts,
    /// The lease each gained shard is held with (in the order of `gained`).
    tokens: Vec<u64>,
    changed: ShardHosts,
}

impl ShardView {
    pub fn new(shards: u32) -> ShardView {
        ShardView {
            told: vec![None; shards as usize],
            host_versions: vec![0; shards as usize],
            hosts_known: vec![0; shards as usize],
            counters: Counters::default(),
            unacked: 0,
            pending_held: 0,
            epochs: vec![0; shards as usize],
        }
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Every shard's epoch as of the last read.
    pub fn epochs(&self) -> &[u64] {
        &self.epochs
    }

    /// The caller forgot its shards: the next poll tells every held shard as gained.
    pub fn reread(&mut self) {
        self.told.iter_mut().for_each(|t| *t = None);
    }

    /// The caller was told it holds shard `s` with the lease of fencing token `token`, with its hosts as of the
    /// last read.
    pub fn told(&mut self, s: u32, token: u64) {
        self.told[s as usize] = Some(token);
        self.hosts_known[s as usize] = self.host_versions[s as usize];
    }

    /// A commit added a URL.
    pub fn added(&mut self) {
        self.counters.known += 1;
        self.counters.pending += 1;
    }

    /// A commit finished `done` URLs, `pages` of them fetched pages.
    pub fn finished(&mut self, done: u64, pages: u64) {
        self.counters.done += done;
        self.counters.pending = self.counters.pending.saturating_sub(done);
        self.counters.pages_fetched += pages;
    }

    /// A commit scheduled `n` URLs that were not scheduled.
    pub fn scheduled(&mut self, n: u64) {
        self.counters.scheduled += n;
    }

    /// `n` scheduled URLs came due and are pending again.
    pub fn promoted(&mut self, n: u64) {
        self.counters.scheduled = self.counters.scheduled.saturating_sub(n);
        self.counters.pending += n;
    }

    /// A forced re-fetch queued `done` done URLs and `scheduled` scheduled ones again.
    pub fn refetched(&mut self, done: u64, scheduled: u64) {
        self.counters.done = self.counters.done.saturating_sub(done);
        self.counters.scheduled = self.counters.scheduled.saturating_sub(scheduled);
        self.counters.pending += done + scheduled;
    }

    /// Sums every shard's counters and unacknowledged records.
    pub fn refresh(
        &mut self,
        conn: &mut Conn,
        crawl: &Crawl,
        gate: &LeaseTable,
    ) -> Result<(), FrontierError> {
        let calls: Vec<Call> = (0..crawl.shards())
            .map(|s| crawl.shard_call(&SCRIPTS.stats, s))
            .collect();
        let mut rows = Vec::with_capacity(calls.len());
        for r in conn.run(&calls)? {
            let v = r.map_err(|e| conn.error(&e))?;
            let a = reply::array(v, "stats")?;
            let mut row = ShardStats::default();
            for (i, n) in row.iter_mut().enumerate() {
                *n = a.get(i).map_or(Ok(0), |v| reply::uint(v, "stats"))?;
            }
            rows.push(row);
        }
        self.count(&rows, |s| gate.token(s).is_some());
        Ok(())
    }

    /// Takes every shard's stats (in shard order) as the counters; `held` tells the shards this process holds.
    fn count(&mut self, rows: &[ShardStats], held: impl Fn(u32) -> bool) {
        let mut c = Counters::default();
        let mut unacked = 0;
        let mut pending_held = 0;
        for (s, &[known, pending, done, pages, un, version, epoch, scheduled]) in
            rows.iter().enumerate()
        {
            self.epochs[s] = epoch;
            c.known += known;
            c.scheduled += scheduled;
            c.pending += pending;
            if held(s as u32) {
                pending_held += pending;
            }
            c.done += done;
            c.pages_fetched += pages;
            unacked += un;
            self.host_versions[s] = version;
        }
        self.counters = c;
        self.unacked = unacked;
        self.pending_held = pending_held;
    }

    /// Shards held and not told (gained, with the token of their lease), and told and no longer held (lost).
    /// `held` gives the token of the lease a shard is held with. A shard held with another lease than the one told
    /// was lost and taken again since (its lease ran out or was taken over, say while Redis was down, and this
    /// process took it back before the poll): it is both, so that the caller drops what it held of the shard
    /// (whatever it committed under the old lease was refused) and reads the shard again.
    fn news(&self, held: impl Fn(u32) -> Option<u64>) -> (Vec<(u32, u64)>, Vec<u32>) {
        let mut gained = Vec::new();
        let mut lost = Vec::new();
        for (s, &told) in self.told.iter().enumerate() {
            let s = s as u32;
            let held = held(s);
            if told.is_some() && held != told {
                lost.push(s);
            }
            if let Some(token) = held
                && held != told
            {
                gained.push((s, token));
            }
        }
        (gained, lost)
    }

    /// Shards told and kept whose hosts changed since the caller read them.
    fn changed(&self, gained: &[u32], lost: &[u32]) -> Vec<u32> {
        (0..self.told.len() as u32)
            .filter(|&s| {
                let i = s as usize;
                self.told[i].is_some()
                    && !gained.contains(&s)
                    && !lost.contains(&s)
                    && self.host_versions[i] != self.hosts_known[i]
            })
            .collect()
    }

    /// Reads the shard news since the last poll: shards gained (with their hosts and robots.txt rules) and lost,
    /// hosts that appeared in held shards, the crawl's counters. What the caller has been told changes only with
    /// [`ShardView::tell`]: a poll that fails on the way (Redis down or loading) tells nothing, and the next one
    /// tells it all, the losses included.
    pub fn gather(
        &mut self,
        conn: &mut Conn,
        crawl: &Crawl,
        gate: &LeaseTable,
    ) -> Result<Poll, FrontierError> {
        let mut ch = ShardChanges::default();
        let (gained, lost) = self.news(|s| gate.token(s));
        let (gained, tokens): (Vec<u32>, Vec<u64>) = gained.into_iter().unzip();
        ch.lost = lost;
        self.refresh(conn, crawl, gate)?;
        ch.counters = Some(self.counters);
        ch.unacked = self.unacked;
        ch.pending_held = self.pending_held;
        (ch.leases_renewed, ch.leases_lost) = gate.lease_counts();
        ch.spooled = conn
            .spool()
            .and_then(|s| s.pending().ok())
            .map_or(0, |p| p.len() as u64);
        let (gained_hosts, robots) = hosts_of(conn, crawl, &gained, true)?;
        ch.robots = robots;
        let changed = self.changed(&gained, &ch.lost);
        let changed_hosts = hosts_of(conn, crawl, &changed, false)?.0;
        Ok(Poll {
            changes: ch,
            gained: gained_hosts,
            tokens,
            changed: changed_hosts,
        })
    }

    /// Tells the caller what a poll read; nothing here fails.
    pub fn tell(&mut self, poll: Poll) -> ShardChanges {
        let Poll {
            changes: mut ch,
            gained,
            tokens,
            changed,
        } = poll;
        for &s in &ch.lost {
            self.told[s as usize] = None;
        }
        for ((s, hosts), token) in gained.into_iter().zip(tokens) {
            self.told(s, token);
            ch.gained.push((s, hosts));
        }
        for (s, hosts) in changed {
            self.hosts_known[s as usize] = self.host_versions[s as usize];
            ch.hosts.extend(hosts);
        }
        ch
    }
}

/// The hosts with pending URLs of some shards (each shard with its hosts), and (`gained`) the robots.txt rules kept with them.
pub(super) fn hosts_of(
    conn: &mut Conn,
    crawl: &Crawl,
    shards: &[u32],
    gained: bool,
) -> Result<(ShardHosts, Vec<SharedRobots>), FrontierError> {
    let calls: Vec<Call> = shards
        .iter()
        .map(|&s| {
            crawl
                .shard_call(&SCRIPTS.hosts, s)
                .arg(if gained { "1" } else { "0" })
        })
        .collect();
    let mut out = Vec::with_capacity(shards.len());
    let mut robots = Vec::new();
    for (&s, r) in shards.iter().zip(conn.run(&calls)?) {
        let v = r.map_err(|e| conn.error(&e))?;
        let mut parts = reply::array(v, "hosts")?.into_iter();
        let (Some(counts), Some(pauses)) = (parts.next(), parts.next()) else {
            return Err(FrontierError::Store("hosts: short reply".into()));
        };
        if let Some(rules) = parts.next() {
            let mut it = reply::array(rules, "robots")?.into_iter();
            while let (Some(authority), Some(value)) = (it.next(), it.next()) {
                let authority = reply::string(authority, "authority")?;
                let value = reply::bytes(value, "robots")?;
                match robots::parse_robots(authority, &value) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> HostInfo {
        HostInfo {
            fp: host_fp(name),
            name: name.into(),
            pending: 1,
            paused_until_ms: 0,
            backoff_level: 0,
        }
    }

    /// A poll that read only the given news, every shard of `held` held with the lease of token 1.
    fn read(view: &ShardView, held: &[u32], hosts: &[(u32, &str)]) -> Poll {
        let leases: Vec<(u32, u64)> = held.iter().map(|&s| (s, 1)).collect();
        read_leases(view, &leases, hosts)
    }

    /// A poll that read only the given news, the shards held with the leases of the given tokens.
    fn read_leases(view: &ShardView, held: &[(u32, u64)], hosts: &[(u32, &str)]) -> Poll {
        let (gained, lost) = view.news(|s| held.iter().find(|(h, _)| *h == s).map(|(_, t)| *t));
        let (gained, tokens): (Vec<u32>, Vec<u64>) = gained.into_iter().unzip();
        let changed = view.changed(&gained, &lost);
        let of = |shards: &[u32]| -> ShardHosts {
            shards
                .iter()
                .map(|&s| {
                    let list = hosts.iter().filter(|h| h.0 == s);
                    (s, list.map(|h| host(h.1)).collect())
                })
                .collect()
        };
        Poll {
            changes: ShardChanges {
                lost,
                ..ShardChanges::default()
            },
            gained: of(&gained),
            tokens,
            changed: of(&changed),
        }
    }

    fn stats(version: u64) -> ShardStats {
        [0, 0, 0, 0, 0, version, 0, 0]
    }

    #[test]
    fn held_shards_are_told_once_and_lost_ones_once() {
        let mut v = ShardView::new(4);
        let ch = v.tell(read(&v, &[1, 2], &[(1, "a"), (2, "b")]));
        let gained: Vec<u32> = ch.gained.iter().map(|g| g.0).collect();
        assert_eq!(gained, [1, 2]);
        assert_eq!(ch.gained[0].1[0].name, "a");
        assert!(ch.lost.is_empty());

        let ch = v.tell(read(&v, &[1, 2], &[]));
        assert!(ch.gained.is_empty() && ch.lost.is_empty(), "nothing new");

        let ch = v.tell(read(&v, &[2, 3], &[]));
        assert_eq!(ch.gained.iter().map(|g| g.0).collect::<Vec<_>>(), [3]);
        assert_eq!(ch.lost, [1]);
        let ch = v.tell(read(&v, &[2, 3], &[]));
        assert!(ch.gained.is_empty() && ch.lost.is_empty(), "told once");
    }

    #[test]
    fn rereading_tells_every_held_shard_again() {
        let mut v = ShardView::new(3);
        v.tell(read(&v, &[0, 2], &[]));
        v.reread();
        let ch = v.tell(read(&v, &[0, 2], &[]));
        assert_eq!(ch.gained.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 2]);
        assert!(ch.lost.is_empty());
    }

    #[test]
    fn hosts_of_kept_shards_are_read_again_when_their_version_moves() {
        let mut v = ShardView::new(3);
        v.count(&[stats(1), stats(1), stats(1)], |_| true);
        v.tell(read(&v, &[0, 1, 2], &[]));
        v.count(&[stats(1), stats(2), stats(1)], |_| true);
        let ch = v.tell(read(&v, &[0, 1, 2], &[(1, "new"), (0, "not read")]));
        assert!(ch.gained.is_empty());
        assert_eq!(ch.hosts.len(), 1);
        assert_eq!(ch.hosts[0].name, "new");
        let ch = v.tell(read(&v, &[0, 1, 2], &[(1, "new")]));
        assert!(ch.hosts.is_empty(), "the caller has them as of version 2");

        // A shard lost and gained back is told with its hosts as gained, not as changed.
        v.count(&[stats(1), stats(3), stats(1)], |_| true);
        let lost = v.tell(read(&v, &[0, 2], &[(1, "x")]));
        assert_eq!(lost.lost, [1]);
        assert!(lost.hosts.is_empty());
        let back = v.tell(read(&v, &[0, 1, 2], &[(1, "x")]));
        assert_eq!(back.gained.len(), 1);
        assert!(back.hosts.is_empty());
    }

    #[test]
    fn a_shard_lost_and_taken_back_between_two_polls_is_told_lost_and_gained() {
        let mut v = ShardView::new(3);
        v.tell(read_leases(&v, &[(0, 4), (1, 7)], &[(0, "a"), (1, "b")]));
        // Redis was down past the leases: a peer took shard 1 over, then handed it back, and this process took
        // it again (token 9) before its next poll. A commit sent under token 7 was refused meanwhile.
        let ch = v.tell(read_leases(&v, &[(0, 4), (1, 9)], &[(1, "b")]));
        assert_eq!(ch.lost, [1], "what the caller held of it goes");
        assert_eq!(ch.gained.len(), 1, "and it is read again");
        assert_eq!(ch.gained[0].0, 1);
        assert_eq!(ch.gained[0].1[0].name, "b");
        let ch = v.tell(read_leases(&v, &[(0, 4), (1, 9)], &[]));
        assert!(ch.gained.is_empty() && ch.lost.is_empty(), "told once");
        // Told under a lease gone meanwhile (token 0 after a recovery): lost at the next poll.
        v.told(2, 0);
        let ch = v.tell(read_leases(&v, &[(0, 4), (1, 9)], &[]));
        assert_eq!(ch.lost, [2]);
        assert!(ch.gained.is_empty());
    }

    #[test]
    fn counters_sum_every_shard_and_pending_held_only_the_held_ones() {
        let mut v = ShardView::new(3);
        v.count(
            &[
                [10, 4, 6, 5, 1, 0, 3, 2],
                [20, 7, 13, 9, 2, 0, 4, 5],
                [1, 1, 0, 0, 0, 0, 0, 0],
            ],
            |s| s != 1,
        );
        let c = v.counters();
        assert_eq!(
            (c.known, c.pending, c.done, c.pages_fetched, c.scheduled),
            (31, 12, 19, 14, 7)
        );
        assert_eq!(v.unacked, 3);
        assert_eq!(v.pending_held, 5);
        assert_eq!(v.epochs(), [3, 4, 0]);
    }

    #[test]
    fn commits_move_the_counters_between_reads() {
        let mut v = ShardView::new(1);
        v.added();
        v.added();
        v.finished(1, 1);
        let c = v.counters();
        assert_eq!((c.known, c.pending, c.done, c.pages_fetched), (2, 1, 1, 1));
        v.finished(5, 0);
        assert_eq!(v.counters().pending, 0, "never below zero");
        v.scheduled(3);
        v.promoted(2);
        let c = v.counters();
        assert_eq!(
            (c.pending, c.scheduled),
            (2, 1),
            "due ones are pending again"
        );
        v.refetched(1, 1);
        let c = v.counters();
        assert_eq!(
            (c.pending, c.done, c.scheduled),
            (4, 5, 0),
            "re-fetched ones are pending again"
        );
        v.count(&[[7, 3, 4, 2, 0, 0, 0, 0]], |_| false);
        assert_eq!(
            v.counters().known,
            7,
            "a read replaces what commits counted"
        );
    }
}
