//! Rollback detection: every commit that applies to a shard raises the shard's epoch (`apply.lua`), and every
//! process remembers the highest epoch it saw of every shard (from its own commits and from the stats every poll
//! reads). A failover to a replica that lacked the last commits (`replicas_ack = 0`, or a replica that
//! acknowledged and lost them) shows as an epoch that went back. What went back cannot be read from the new master,
//! so each process names what it knows: how many commits of the shard were lost, and the pages of its own lost
//! commits (their records are in its JSONL already; the pages are pending again and will be fetched again).
//!
//! Why nothing discovered is lost for good on one master: Redis replicates a master's writes in the order it
//! applied them, so a replica holds a prefix of them. A commit sends the adds of its pages before the change that
//! finishes those pages, so a replica that has the finish has the adds; a replica that lacks the finish has the
//! page pending again, and fetching it again discovers the same links.

use super::shards::LeaseTable;
use std::collections::VecDeque;

/// Own commits remembered per shard (to name what a rollback took).
const REMEMBERED: usize = 64;

/// What a shard lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rollback {
    pub shard: u32,
    /// The highest epoch seen before, and the epoch found.
    pub from: u64,
    pub to: u64,
    /// The URLs of this process's records in the lost commits.
    pub own_pages: Vec<String>,
}

impl Rollback {
    /// Commits of every process lost on the shard.
    pub fn lost_commits(&self) -> u64 {
        self.from - self.to
    }

    pub fn log(&self, process: &str) {
        const SHOWN: usize = 10;
        tracing::warn!(
            process,
            shard = self.shard,
            epoch_before = self.from,
            epoch_now = self.to,
            lost_commits = self.lost_commits(),
            own_pages_lost = self.own_pages.len(),
            pages = ?self.own_pages.iter().take(SHOWN).collect::<Vec<_>>(),
            "redis state went back: commits lost in a failover; their pages are queued again"
        );
    }
}

/// Logs a rollback and repairs what this process can: a shard it holds is given up here (its lease stays in
/// Redis), so the next poll tells the caller it was lost, the lease thread takes it again, and the caller reads its
/// queues afresh: the pages of the lost commits are pending there again.
pub(crate) fn repair(r: &Rollback, gate: &LeaseTable, process: &str) {
    r.log(process);
    if let Some(token) = gate.token(r.shard) {
        gate.drop_shard(r.shard, token);
    }
}

/// The highest epoch seen of every shard, and this process's recent commits of each.
pub(crate) struct Epochs {
    highest: Vec<u64>,
    own: Vec<VecDeque<(u64, Vec<String>)>>,
}

impl Epochs {
    pub fn new(shards: u32) -> Epochs {
        Epochs {
            highest: vec![0; shards as usize],
            own: (0..shards).map(|_| VecDeque::new()).collect(),
        }
    }

    /// A commit of this process applied to `shard` with `epoch`, recording `pages`.
    pub fn committed(&mut self, shard: u32, epoch: u64, pages: Vec<String>) -> Option<Rollback> {
        // The commit itself raised the epoch: the one before it is what the shard had.
        let r = self.seen(shard, epoch.saturating_sub(1));
        self.highest[shard as usize] = epoch;
        let own = &mut self.own[shard as usize];
        own.push_back((epoch, pages));
        while own.len() > REMEMBERED {
            own.pop_front();
        }
        r
    }

    /// A read found `shard` at `epoch`.
    pub fn read(&mut self, shard: u32, epoch: u64) -> Option<Rollback> {
        let r = self.seen(shard, epoch);
        self.highest[shard as usize] = epoch.max(self.highest[shard as usize]);
        r
    }

    fn seen(&mut self, shard: u32, epoch: u64) -> Option<Rollback> {
        let i = shard as usize;
        let from = *self.highest.get(i)?;
        if epoch >= from {
            return None;
        }
        self.highest[i] = epoch;
        let own = &mut self.own[i];
        let mut own_pages = Vec::new();
        while own.back().is_some_and(|(e, _)| *e > epoch) {
            if let Some((_, pages)) = own.pop_back() {
                own_pages.extend(pages);
            }
        }
        Some(Rollback {
            shard,
            from,
            to: epoch,
            own_pages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_that_goes_back_names_the_own_commits_it_took() {
        let mut e = Epochs::new(2);
        assert_eq!(e.read(0, 3), None);
        assert_eq!(e.committed(0, 4, vec!["http://a/1".into()]), None);
        assert_eq!(e.read(0, 6), None, "two commits of peers");
        assert_eq!(e.committed(0, 7, vec!["http://a/2".into()]), None);
        assert_eq!(e.read(1, 9), None);
        // The new master has shard 0 as of epoch 5: the commit at 7 and the peers' at 6 are gone.
        let r = e.read(0, 5).expect("went back");
        assert_eq!((r.from, r.to, r.lost_commits()), (7, 5, 2));
        assert_eq!(r.own_pages, ["http://a/2"]);
        assert_eq!(e.read(0, 5), None, "told once");
        // A commit that finds the shard below what was seen tells it too.
        let r = e.committed(0, 3, vec![]).expect("went back again");
        assert_eq!((r.from, r.to), (5, 2));
        assert_eq!(r.own_pages, ["http://a/1"]);
        assert_eq!(e.read(1, 9), None, "other shards untouched");
    }
}
