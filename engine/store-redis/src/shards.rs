//! Shard ownership: which process works on which shard, with leases and fencing tokens.
//!
//! Every process heartbeats in the crawl's members set. The live members decide each shard's owner by rendezvous
//! hashing (the member with the highest hash of (member, shard)), so every process computes the same split without
//! talking to the others, and a change of members moves only the shards of the process that came or went.
//!
//! A shard is held with a lease in its meta hash: owner, fencing token and expiry (Redis server time). Taking a
//! free or expired lease raises the shard's token; every change an owner applies is checked against owner and
//! token in the same script, so a process whose lease was taken over (paused, partitioned, suspended) can no longer
//! change the shard: its writes are *fenced*.
//!
//! The ownership loop (`run`) runs on a thread of the store with a connection of its own: every `lease_ms / 3` it
//! heartbeats, renews the leases it holds, takes the free or expired shards it should own, and gives up the shards
//! a live peer should own once the caller said they are quiet ([`LeaseTable::quiet`]). Local lease deadlines are
//! measured on the boot clock ([`super::clock`]) from the moment *before* the request was sent, minus a margin, so
//! the local deadline always falls before the server's expiry.

use super::clock;
use super::conn::{Call, Conn, reply};
use super::keys::Keys;
use super::scripts::SCRIPTS;
use crawl_core::frontier::{Fp, FrontierError};
use crawl_core::outage::{Outage, Report};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

#[derive(Debug, Default)]
struct Slot {
    /// Fencing token of the lease this process holds; 0: not held.
    token: AtomicU64,
    /// Local deadline of the lease on the boot clock (ms).
    deadline: AtomicU64,
    /// A live peer should own the shard: no new work starts here.
    handoff: AtomicBool,
    /// The caller has no work in flight in the shard: it may be given up.
    quiet: AtomicBool,
}

/// Which shards this process may work on now: cheap and thread-safe, shared with the scheduler.
#[derive(Debug)]
pub struct LeaseTable {
    shards: u32,
    slots: Box<[Slot]>,
    /// Set once when the ownership loop found the crawl's data gone.
    fatal: OnceLock<String>,
    /// Leases renewed, and leases found taken over (a renewal refused), since the table was made.
    renewed: AtomicU64,
    lost: AtomicU64,
}

impl LeaseTable {
    pub(crate) fn new(shards: u32) -> LeaseTable {
        LeaseTable {
            shards,
            slots: (0..shards).map(|_| Slot::default()).collect(),
            fatal: OnceLock::new(),
            renewed: AtomicU64::new(0),
            lost: AtomicU64::new(0),
        }
    }

    /// The number of shards of the crawl.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The shard of a host (`host_fp % shards`).
    pub fn shard_of(&self, host_fp: Fp) -> u32 {
        (host_fp % u64::from(self.shards.max(1))) as u32
    }

    /// The shard of a stored entry from its queue sequence number (every shard numbers its entries `n·shards + s`;
    /// this also places the records queue's entries, which live in every shard).
    pub fn shard_of_seq(&self, seq: u64) -> u32 {
        (seq % u64::from(self.shards.max(1))) as u32
    }

    /// True when work on `host_fp`'s URLs may start: its shard is held, its local lease deadline has not passed,
    /// and it is not being handed to a peer.
    pub fn may_start(&self, host_fp: Fp) -> bool {
        self.may_start_shard(self.shard_of(host_fp))
    }

    /// True while `host_fp`'s shard is held and its local lease deadline has not passed, whether or not it is being
    /// handed over: what a connection to the host checks before each write.
    pub fn may_send(&self, host_fp: Fp) -> bool {
        self.lease_live(self.shard_of(host_fp))
    }

    /// The shard is held and its local lease deadline has not passed.
    fn lease_live(&self, shard: u32) -> bool {
        self.slots.get(shard as usize).is_some_and(|slot| {
            slot.token.load(Ordering::Acquire) != 0
                && clock::now_ms() < slot.deadline.load(Ordering::Acquire)
        })
    }

    /// [`Self::may_start`] for a stored entry (records-queue entries included: they live in every shard).
    pub fn may_start_entry(&self, e: &crawl_core::frontier::Entry) -> bool {
        self.may_start_shard(self.shard_of_seq(e.seq))
    }

    /// [`Self::may_start`] for a shard.
    pub fn may_start_shard(&self, shard: u32) -> bool {
        self.lease_live(shard)
            && self
                .slots
                .get(shard as usize)
                .is_some_and(|slot| !slot.handoff.load(Ordering::Acquire))
    }

    /// Shards held now (whatever their deadline).
    pub fn owned(&self) -> Vec<u32> {
        (0..self.shards)
            .filter(|&s| self.token(s).is_some())
            .collect()
    }

    /// Held shards that a live peer should own: once the caller has no work in flight in one, it calls
    /// [`Self::quiet`] and the shard is given up at the next round.
    pub fn handoffs(&self) -> Vec<u32> {
        (0..self.shards)
            .filter(|&s| {
                self.slots[s as usize].handoff.load(Ordering::Acquire) && self.token(s).is_some()
            })
            .collect()
    }

    /// The caller has no work in flight in `shard`. Counts only while the shard is being handed over: a mark
    /// given for a hand-over that was called off meanwhile is not kept.
    pub fn quiet(&self, shard: u32) {
        if let Some(slot) = self.slots.get(shard as usize)
            && slot.handoff.load(Ordering::Acquire)
        {
            slot.quiet.store(true, Ordering::Release);
        }
    }

    /// Records whether a live peer should own held `shard` now; true when it is to be given up now (a peer should
    /// own it and the caller said it is quiet since the hand-over began). A hand-over called off (the peer left)
    /// forgets the quiet mark: work may start in the shard again, so a later hand-over waits for a new one.
    fn hand_over(&self, shard: u32, to_peer: bool) -> bool {
        let Some(slot) = self.slots.get(shard as usize) else {
            return false;
        };
        let was = slot.handoff.swap(to_peer, Ordering::AcqRel);
        if !to_peer {
            if was {
                slot.quiet.store(false, Ordering::Release);
            }
            return false;
        }
        slot.quiet.load(Ordering::Acquire)
    }

    /// The fencing token of a held shard.
    pub(crate) fn token(&self, shard: u32) -> Option<u64> {
        let t = self
            .slots
            .get(shard as usize)?
            .token
            .load(Ordering::Acquire);
        (t != 0).then_some(t)
    }

    pub(crate) fn fatal(&self) -> Option<&str> {
        self.fatal.get().map(String::as_str)
    }

    fn set_fatal(&self, msg: String) {
        let _ = self.fatal.set(msg);
    }

    fn hold(&self, shard: u32, token: u64, deadline: u64) {
        let slot = &self.slots[shard as usize];
        slot.deadline.store(deadline, Ordering::Release);
        slot.quiet.store(false, Ordering::Release);
        slot.token.store(token, Ordering::Release);
    }

    /// Leases renewed and leases lost (a renewal refused: another process took the shard) so far.
    pub fn lease_counts(&self) -> (u64, u64) {
        (
            self.renewed.load(Ordering::Relaxed),
            self.lost.load(Ordering::Relaxed),
        )
    }

    /// Forgets a shard if it is still held with `token` (a newer lease stays).
    pub(crate) fn drop_shard(&self, shard: u32, token: u64) {
        if let Some(slot) = self.slots.get(shard as usize) {
            let _ = slot
                .token
                .compare_exchange(token, 0, Ordering::AcqRel, Ordering::Acquire);
            slot.handoff.store(false, Ordering::Release);
        }
    }
}

/// The rendezvous hash of (member, shard).
fn weight(member: &str, shard: u32) -> u64 {
    let mut buf = Vec::with_capacity(member.len() + 5);
    buf.extend_from_slice(member.as_bytes());
    buf.push(0);
    buf.extend_from_slice(&shard.to_le_bytes());
    twox_hash::XxHash3_64::oneshot(&buf)
}

/// The live member that should own `shard` (highest weight, ties to the smaller id).
pub fn rendezvous(members: &[String], shard: u32) -> Option<&str> {
    members
        .iter()
        .max_by(|a, b| {
            weight(a, shard)
                .cmp(&weight(b, shard))
                .then_with(|| b.cmp(a))
        })
        .map(String::as_str)
}

/// What a round asked for a shard.
enum Ask {
    Renew(u32, u64),
    Acquire(u32),
    Release(u32, u64),
}

/// The ownership loop's state: its own connection and what it needs to call the lease scripts.
pub(crate) struct Ownership {
    pub conn: Conn,
    pub keys: Keys,
    pub inst: String,
    pub pid: String,
    pub lease_ms: u64,
    pub gate: Arc<LeaseTable>,
    /// The master switches seen when the last round ran, and until when (lease clock) no new lease is taken.
    pub switches_seen: u64,
    pub hold_back_until: u64,
    /// Since when (lease clock) lease rounds have not been acknowledged by enough replicas; None while they are.
    pub unreplicated_since: Option<u64>,
}

impl Ownership {
    /// The local deadline of a lease requested at `sent`.
    fn deadline(&self, sent: u64) -> u64 {
        let margin = (self.lease_ms / 5).max(50);
        sent + self.lease_ms.saturating_sub(margin)
    }

    fn shard_call(&self, script: &'static redis::Script, shard: u32) -> Call {
        Call::new(script, self.keys.meta(shard))
            .arg(&self.inst)
            .arg(shard)
            .arg(&self.pid)
    }

    /// Logs once when lease rounds stop being acknowledged by enough replicas for a lease length (no lease is
    /// taken or renewed meanwhile, so the process works on nothing), and once when they are again.
    fn note_replicated(&mut self, replicated: bool, now: u64) {
        match (replicated, self.unreplicated_since) {
            (false, None) => self.unreplicated_since = Some(now),
            (false, Some(since)) if now.saturating_sub(since) >= self.lease_ms => {
                tracing::warn!(
                    process = %self.pid,
                    replicas_ack = self.conn.replicas_ack(),
                    "lease rounds not acknowledged by enough replicas; no shard is taken or renewed until they are"
                );
                // Logged once per streak: the streak's start moves out of reach.
                self.unreplicated_since = Some(u64::MAX);
            }
            (true, Some(since)) => {
                if since == u64::MAX {
                    tracing::info!(process = %self.pid, "lease rounds acknowledged by replicas again");
                }
                self.unreplicated_since = None;
            }
            _ => {}
        }
    }

    /// After a master switch no new lease is taken for one lease length: a lease granted by the old master (or
    /// renewed there) whose write the new master never got may still be in use by its holder until its local
    /// deadline, which falls within one lease length of the switch. Returns true while holding back.
    fn holding_back(&mut self, now: u64) -> bool {
        let seen = self.conn.switches().epoch();
        if seen != self.switches_seen {
            self.switches_seen = seen;
            self.hold_back_until = now + self.lease_ms;
            tracing::info!(
                process = %self.pid,
                hold_back_ms = self.lease_ms,
                "new shard leases held back after a master switch"
            );
        }
        now < self.hold_back_until
    }

    /// One round: heartbeat, then renew / acquire / release as the live members decide. With replicas asked for,
    /// a renewal or a new lease counts only once they hold it (a failover cannot hand out a lease in use).
    pub fn round(&mut self) -> Result<(), FrontierError> {
        self.conn.follow_master();
        let sent = clock::now_ms();
        let holding_back = self.holding_back(sent);
        let live = self.conn.call(
            &Call::new(&SCRIPTS.heartbeat, self.keys.members())
                .arg(&self.pid)
                .arg(self.lease_ms)
                .arg("beat"),
        )?;
        let mut members = Vec::new();
        for v in reply::array(live, "members")? {
            members.push(reply::string(v, "member")?);
        }
        if !members.contains(&self.pid) {
            members.push(self.pid.clone());
        }
        let mut asks = Vec::new();
        let mut calls = Vec::new();
        for s in 0..self.gate.shards {
            let mine = rendezvous(&members, s) == Some(self.pid.as_str());
            match self.gate.token(s) {
                Some(token) => {
                    if self.gate.hand_over(s, !mine) {
                        calls.push(self.shard_call(&SCRIPTS.release, s).arg(token));
                        asks.push(Ask::Release(s, token));
                    } else {
                        calls.push(
                            self.shard_call(&SCRIPTS.renew, s)
                                .arg(token)
                                .arg(self.lease_ms),
                        );
                        asks.push(Ask::Renew(s, token));
                    }
                }
                None if mine && !holding_back => {
                    calls.push(self.shard_call(&SCRIPTS.acquire, s).arg(self.lease_ms));
                    asks.push(Ask::Acquire(s));
                }
                None => {}
            }
        }
        let replies = self.conn.run(&calls)?;
        // Not on enough replicas: the renewals do not extend the local deadlines and new leases are not used (they
        // are asked for again at the next round; the same process may take its own lease again).
        let replicated = match self.conn.replicated() {
            // On a cluster the WAIT goes to the masters the client knows now: when one switched during the round,
            // the acknowledgement may come from a master that never had the round's writes.
            Ok(()) if self.conn.is_cluster() && self.conn.replicas_ack() > 0 => {
                let before = self.conn.switches().epoch();
                self.conn.follow_master();
                self.conn.switches().epoch() == before
            }
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(process = %self.pid, error = %e, "lease round not replicated");
                false
            }
        };
        self.note_replicated(replicated, sent);
        let deadline = self.deadline(sent);
        let (mut gained, mut lost, mut released) = (0u32, 0u32, 0u32);
        for (ask, r) in asks.into_iter().zip(replies) {
            let v = match r {
                Ok(v) => v,
                Err(e) => {
                    let err = self.conn.error(&e);
                    if let FrontierError::Lost(msg) = &err {
                        self.gate.set_fatal(msg.clone());
                    }
                    return Err(err);
                }
            };
            match ask {
                Ask::Renew(_, _) if !replicated => {}
                Ask::Acquire(_) if !replicated => {}
                Ask::Renew(s, token) => {
                    if reply::int(&v, "renew")? == 1 {
                        self.gate.slots[s as usize]
                            .deadline
                            .store(deadline, Ordering::Release);
                        self.gate.renewed.fetch_add(1, Ordering::Relaxed);
                    } else {
                        self.gate.drop_shard(s, token);
                        self.gate.lost.fetch_add(1, Ordering::Relaxed);
                        lost += 1;
                    }
                }
                Ask::Acquire(s) => {
                    let a = reply::array(v, "acquire")?;
                    let token = a.first().map(|t| reply::uint(t, "token")).transpose()?;
                    if let Some(token) = token.filter(|&t| t > 0) {
                        self.gate.hold(s, token, deadline);
                        self.gate.slots[s as usize]
                            .handoff
                            .store(false, Ordering::Release);
                        gained += 1;
                    }
                }
                Ask::Release(s, token) => {
                    self.gate.drop_shard(s, token);
                    released += 1;
                }
            }
        }
        if gained + lost + released > 0 {
            tracing::info!(
                process = %self.pid,
                members = members.len(),
                gained,
                lost,
                released,
                owned = self.gate.owned().len(),
                "shard ownership changed"
            );
        }
        Ok(())
    }

    /// Gives up every held shard and leaves the members set (a clean stop: peers take over at once).
    pub fn leave(&mut self) -> Result<(), FrontierError> {
        let mut calls = Vec::new();
        let mut held = Vec::new();
        for s in self.gate.owned() {
            if let Some(token) = self.gate.token(s) {
                calls.push(self.shard_call(&SCRIPTS.release, s).arg(token));
                held.push((s, token));
            }
        }
        calls.push(
            Call::new(&SCRIPTS.heartbeat, self.keys.members())
                .arg(&self.pid)
                .arg(self.lease_ms)
                .arg("leave"),
        );
        let replies = self.conn.run(&calls)?;
        for ((s, token), r) in held.into_iter().zip(replies) {
            if r.is_ok() {
                self.gate.drop_shard(s, token);
            }
        }
        Ok(())
    }
}

/// Controls of the ownership thread.
#[derive(Debug, Default)]
pub(crate) struct Control {
    pub stop: AtomicBool,
    /// Stop without giving anything up (as if the process died).
    pub abandon: AtomicBool,
    /// Skip rounds (tests: a process that stopped renewing).
    pub paused: AtomicBool,
}

/// Runs the ownership loop until told to stop.
pub(crate) fn run(mut own: Ownership, control: Arc<Control>) {
    let period = std::time::Duration::from_millis((own.lease_ms / 3).max(10));
    let mut outage = Outage::default();
    loop {
        if control.stop.load(Ordering::Acquire) {
            break;
        }
        if !control.paused.load(Ordering::Acquire) {
            match own.round() {
                Ok(()) => {
                    if let Some(r) = outage.succeeded(std::time::Instant::now()) {
                        tracing::info!(
                            process = %own.pid,
                            failed_ms = r.lasted.as_millis() as u64,
                            failures = r.failures,
                            "shard leases renewed again"
                        );
                    }
                }
                Err(e) => {
                    match outage.failed(std::time::Instant::now()) {
                        Some(Report::First) => {
                            tracing::warn!(process = %own.pid, error = %e, "shard lease round failed")
                        }
                        Some(Report::Still {
                            for_how_long,
                            failures,
                        }) => tracing::warn!(
                            process = %own.pid,
                            error = %e,
                            failing_s = for_how_long.as_secs(),
                            failures,
                            "shard lease rounds still failing"
                        ),
                        None => {}
                    }
                    if own.gate.fatal().is_some() {
                        break;
                    }
                    // The connection may be broken: open a fresh one for the next round.
                    if let Ok(c) = own.conn.reopen() {
                        own.conn = c;
                    }
                }
            }
        }
        std::thread::park_timeout(period);
    }
    if !control.abandon.load(Ordering::Acquire)
        && let Err(e) = own.leave()
    {
        tracing::warn!(process = %own.pid, error = %e, "giving up shard leases failed");
    }
}

impl crawl_core::frontier::ShardGate for LeaseTable {
    fn shard_of(&self, host: Fp) -> u32 {
        LeaseTable::shard_of(self, host)
    }
    fn may_start(&self, host: Fp) -> bool {
        LeaseTable::may_start(self, host)
    }
    fn may_send(&self, host: Fp) -> bool {
        LeaseTable::may_send(self, host)
    }
    fn owns(&self, shard: u32) -> bool {
        self.token(shard).is_some()
    }
    fn owned_count(&self) -> usize {
        self.owned().len()
    }
    fn handoffs(&self) -> Vec<u32> {
        LeaseTable::handoffs(self)
    }
    fn quiet(&self, shard: u32) {
        LeaseTable::quiet(self, shard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_splits_shards_and_moves_only_the_leavers() {
        let two = vec!["a".to_owned(), "b".to_owned()];
        let three = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let mut a = 0;
        for s in 0..256 {
            let o2 = rendezvous(&two, s).unwrap();
            if o2 == "a" {
                a += 1;
            }
            let o3 = rendezvous(&three, s).unwrap();
            assert!(o3 == "c" || o3 == o2, "shard {s} moved between a and b");
        }
        assert!((80..=176).contains(&a), "a got {a} of 256");
        assert_eq!(rendezvous(&[], 1), None);
    }

    #[test]
    fn the_gate_needs_a_token_a_deadline_and_no_handoff() {
        let g = LeaseTable::new(4);
        assert!(!g.may_start(5));
        assert!(!g.may_send(5), "not held");
        g.hold(1, 7, clock::now_ms() + 10_000);
        assert!(g.may_start(5));
        assert!(g.may_send(5));
        assert_eq!(g.shard_of(5), 1);
        assert_eq!(g.shard_of_seq(9), 1);
        let mut e = crawl_core::frontier::Entry::page("http://r/", 0, None);
        e.seq = 9;
        assert!(g.may_start_entry(&e));
        g.slots[1].handoff.store(true, Ordering::Release);
        assert!(!g.may_start(5));
        assert!(
            g.may_send(5),
            "a request started before the hand-over may still be sent"
        );
        assert_eq!(g.handoffs(), vec![1]);
        g.slots[1].handoff.store(false, Ordering::Release);
        g.hold(1, 7, clock::now_ms().saturating_sub(1));
        assert!(!g.may_start(5), "deadline passed");
        assert!(!g.may_send(5), "deadline passed");
        g.drop_shard(1, 6);
        assert_eq!(
            g.token(1),
            Some(7),
            "an older token does not drop a newer lease"
        );
        g.drop_shard(1, 7);
        assert_eq!(g.owned(), Vec::<u32>::new());
    }

    #[test]
    fn a_hand_over_called_off_forgets_the_quiet_mark() {
        let g = LeaseTable::new(2);
        g.hold(0, 3, clock::now_ms() + 10_000);
        g.quiet(0);
        assert!(
            !g.hand_over(0, true),
            "a mark from before the hand-over does not count"
        );
        assert!(!g.hand_over(0, true), "not quiet yet");
        g.quiet(0);
        assert!(g.hand_over(0, true), "quiet during the hand-over: given up");
        // The peer left before the shard was given up: the hand-over is called off, work starts again.
        assert!(!g.hand_over(0, false));
        assert!(g.may_start_shard(0));
        // Another peer arrives: the shard waits for a new quiet mark.
        assert!(!g.hand_over(0, true), "the old mark is forgotten");
        assert!(!g.may_start_shard(0));
        g.quiet(0);
        assert!(g.hand_over(0, true));
        assert!(!g.hand_over(7, true), "no such shard");
    }
}
