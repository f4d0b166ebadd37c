//! A crawl shared by many processes: which hosts this process may crawl (its shards), what changes when shards
//! are gained, lost or handed over, the hosts held while a shard's lease runs late, and what the shard polls say
//! of the whole crawl (its counters, records not yet written anywhere, records taken over from a stopped process).

use super::windows::Windows;
use crate::protocol::StartGate;
use crawl_core::frontier::{Counters, Entry, Finished, Fp, HostInfo, RECORDS_HOST, ShardGate};
use crawl_core::politeness::HostId;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Polls in a row (one each 200 ms) that find this process idle while its own shards hold pending URLs before it
/// reads those shards again. URLs out in other processes' hands are not in these shards; a moment's gap between a
/// commit and a window refill does not last this long.
const REREAD_AFTER_POLLS: u32 = 10;

/// How often an idle process of a shared crawl says what it waits for.
const WAITING_LOG_EVERY: Duration = Duration::from_secs(10);

/// What [`Shards::watch_idle`] keeps between polls.
#[derive(Debug, Default)]
struct IdleWatch {
    /// Polls in a row that found this process idle with pending URLs in its shards.
    polls: u32,
    /// Read the held shards again at the next poll.
    reread: bool,
    /// Idle since (None: busy at the last poll).
    since: Option<Instant>,
    /// When the waiting line was last logged.
    logged: Option<Instant>,
}

/// The crawl's counters as a shard poll read them.
#[derive(Debug, Clone, Copy)]
pub(super) struct PolledCounters {
    pub counters: Counters,
    /// Records of the whole crawl committed and not yet written anywhere.
    pub unacked: u64,
    /// The poll token of the poll ([`Shards::poll_token`] when it was sent).
    pub token: u64,
}

/// This process's share of a crawl (nothing without a gate: every host is its own).
#[derive(Default)]
pub(super) struct Shards {
    /// With a store shared by many processes: which hosts this one may crawl (None: every host).
    gate: Option<Arc<dyn ShardGate>>,
    /// Hosts blocked because their shard's lease ran out on the local clock (unblocked when it is renewed).
    blocked: HashSet<HostId>,
    /// Shards being handed over to a peer (their hosts detached).
    handing: HashSet<u32>,
    /// Records of the whole crawl committed and not yet written anywhere, as of the last shard poll (None before
    /// the first): a shared crawl is not over while one may still have to be written.
    unacked: Option<u64>,
    /// The store took over records of a stopped process: they come out with the next commit, due even when
    /// nothing else is staged.
    claims_waiting: bool,
    idle: IdleWatch,
    /// Commits completed so far, and how many had completed when the shard poll whose counters the crawl holds
    /// was sent: a shared crawl is declared over only on counters read after its own last commit.
    commits_done: u64,
    counters_after: Option<u64>,
}

impl Shards {
    /// Shards owned as `gate` says.
    pub(super) fn new(gate: Arc<dyn ShardGate>) -> Shards {
        Shards {
            gate: Some(gate),
            ..Shards::default()
        }
    }

    /// True in a crawl shared by many processes.
    pub(super) fn is_sharded(&self) -> bool {
        self.gate.is_some()
    }

    /// The page gate while leasing: false when the host's shard lease ran out on the local clock (no request starts
    /// until it is renewed; the host is held till then).
    pub(super) fn lets_start(&mut self, host: HostId, fp: Fp) -> bool {
        match &self.gate {
            Some(g) if !g.may_start(fp) => {
                self.blocked.insert(host);
                false
            }
            _ => true,
        }
    }

    /// True when a job of this host may start now (always, without shards).
    pub(super) fn may_start(&self, fp: Fp) -> bool {
        self.gate.as_ref().is_none_or(|g| g.may_start(fp))
    }

    /// What a leased job checks just before its request goes out.
    pub(super) fn start_gate(&self, fp: Fp) -> Option<StartGate> {
        self.gate.as_ref().map(|g| StartGate::new(g.clone(), fp))
    }

    /// True while this process holds a host's shard and is not handing it over (its lease may be about to be
    /// renewed).
    pub(super) fn holds(&self, fp: Fp) -> bool {
        self.gate.as_ref().is_some_and(|g| {
            let s = g.shard_of(fp);
            g.owns(s) && !self.handing.contains(&s)
        })
    }

    /// True when this process may keep a URL of this host in a window (always, without shards).
    pub(super) fn owns_host(&self, fp: Fp) -> bool {
        self.gate.as_ref().is_none_or(|g| g.owns(g.shard_of(fp)))
    }

    /// The shard of a host (None without shards).
    pub(super) fn shard_of(&self, fp: Fp) -> Option<u32> {
        self.gate.as_ref().map(|g| g.shard_of(fp))
    }

    /// A host held until its shard's lease is renewed.
    pub(super) fn block(&mut self, host: HostId) {
        self.blocked.insert(host);
    }

    /// A commit completed.
    pub(super) fn committed(&mut self) {
        self.commits_done += 1;
    }

    /// What to give [`counted`](Self::counted) with the answer of a shard poll sent now.
    pub(super) fn poll_token(&self) -> u64 {
        self.commits_done
    }

    /// True when records taken over from a stopped process wait for a commit.
    pub(super) fn claims_waiting(&self) -> bool {
        self.claims_waiting
    }

    /// A commit takes the records taken over.
    pub(super) fn claims_taken(&mut self) {
        self.claims_waiting = false;
    }

    /// The store took over records of a stopped process (`claimed` of them).
    pub(super) fn claimed(&mut self, claimed: u64) {
        if claimed > 0 {
            self.claims_waiting = true;
        }
    }

    /// A poll's counters. Returns them, the crawl's own (this process's commits count only its view).
    pub(super) fn counted(&mut self, polled: PolledCounters) -> Counters {
        self.unacked = Some(polled.unacked);
        self.counters_after = Some(polled.token);
        polled.counters
    }

    /// True when no record of the crawl waits to be written anywhere, on counters read after this process's last
    /// commit (always without shards).
    pub(super) fn written_everywhere(&self) -> bool {
        self.gate.is_none()
            || (self.unacked == Some(0) && self.counters_after == Some(self.commits_done))
    }

    /// True when no shard is being handed over and the counters held were read after the last commit.
    pub(super) fn settled(&self) -> bool {
        self.handing.is_empty() && self.counters_after == Some(self.commits_done)
    }

    /// Shards lost: their hosts start nothing more here (their requests in flight finish, and their commits are
    /// refused by the store). Returns the robots.txt and sitemap jobs dropped with them.
    pub(super) fn lose(&mut self, lost: &[u32], windows: &mut Windows) -> Vec<Entry> {
        let Some(gate) = self.gate.clone() else {
            return Vec::new();
        };
        let lost: HashSet<u32> = lost.iter().copied().collect();
        let mut dropped = Vec::new();
        for h in windows
            .hosts()
            .hosts_where(|fp| lost.contains(&gate.shard_of(fp)))
        {
            dropped.extend(windows.hosts_mut().detach(h));
        }
        if lost.contains(&gate.shard_of(RECORDS_HOST)) {
            windows.give_up_records(true);
        }
        tracing::info!(shards = lost.len(), "shards lost");
        dropped
    }

    /// URLs a commit finished that the store refused (their shard's lease had moved on): they stay pending there.
    /// The hosts of those in shards this process holds (taken back under a new lease) read their queues again from
    /// the start, since the refused URLs may be behind their windows' cursors (the shard poll that tells the new
    /// lease may have come first); the others are done by whoever holds their shard, and detached hosts are read
    /// again when their shard is gained.
    pub(super) fn refused(&mut self, refused: &[Finished], windows: &mut Windows, now: Instant) {
        let mut again = HashSet::new();
        for f in refused {
            if f.host == RECORDS_HOST {
                windows.reread_records();
            } else if self.holds(f.host)
                && let Some(h) = windows.hosts().host_by_fp(f.host)
                && !windows.hosts().is_detached(h)
            {
                again.insert(h);
            }
        }
        for h in again {
            windows.read_again(h, now);
        }
    }

    /// Shards gained: their hosts are read from the store, each after its politeness delay (a request of the
    /// previous owner may have just started). Their hosts known here with nothing pending in the store are taken
    /// over too, so that what this process adds to them is queued here.
    pub(super) fn gain(
        &mut self,
        gained: Vec<(u32, Vec<HostInfo>)>,
        windows: &mut Windows,
        now: Instant,
    ) {
        let Some(gate) = self.gate.clone() else {
            return;
        };
        for (shard, hosts) in gained {
            for info in hosts {
                if info.fp == RECORDS_HOST {
                    windows.reread_records();
                    continue;
                }
                let h = windows.take_over(&info, now);
                self.blocked.remove(&h);
            }
            for h in windows.hosts().hosts_where(|fp| gate.shard_of(fp) == shard) {
                if windows.hosts().is_detached(h) {
                    let q = windows.hosts();
                    let info = HostInfo {
                        fp: q.host_fp(h),
                        name: q.host_name(h).to_owned(),
                        pending: 0,
                        paused_until_ms: 0,
                        backoff_level: q.backoff_level(h),
                    };
                    windows.take_over(&info, now);
                    self.blocked.remove(&h);
                }
            }
            tracing::debug!(shard, "shard gained");
        }
    }

    /// Shards a peer should own: their hosts start nothing more, and each is declared quiet (so the store hands it
    /// over) once `busy` says none of its URLs is leased, staged or being committed here (`busy` is asked with the
    /// test of a host's membership). A hand-over called off (the shard is this process's again, say the peer
    /// left) brings the shard's hosts back: their queues are read again from the store. Returns the robots.txt and
    /// sitemap jobs dropped with their hosts.
    pub(super) fn hand_off(
        &mut self,
        windows: &mut Windows,
        busy: impl Fn(&dyn Fn(Fp) -> bool) -> bool,
        now: Instant,
    ) -> Vec<Entry> {
        let Some(gate) = self.gate.clone() else {
            return Vec::new();
        };
        let handoffs = gate.handoffs();
        let kept: Vec<u32> = self
            .handing
            .iter()
            .copied()
            .filter(|s| !handoffs.contains(s) && gate.owns(*s))
            .collect();
        self.handing.retain(|s| handoffs.contains(s));
        for s in kept {
            for h in windows.hosts().hosts_where(|fp| gate.shard_of(fp) == s) {
                windows.read_again(h, now);
                if !self.blocked.contains(&h) {
                    windows.hosts_mut().unblock(h, now);
                }
            }
            if gate.shard_of(RECORDS_HOST) == s {
                windows.reread_records();
            }
        }
        let mut dropped = Vec::new();
        for s in handoffs {
            if self.handing.insert(s) {
                for h in windows.hosts().hosts_where(|fp| gate.shard_of(fp) == s) {
                    dropped.extend(windows.hosts_mut().detach(h));
                }
                if gate.shard_of(RECORDS_HOST) == s {
                    windows.give_up_records(false);
                }
            }
            if !busy(&|fp| gate.shard_of(fp) == s) {
                gate.quiet(s);
            }
        }
        dropped
    }

    /// Hosts held back by a late renewal go again once the lease is renewed.
    pub(super) fn renewed(&mut self, windows: &mut Windows, now: Instant) {
        let Some(gate) = &self.gate else {
            return;
        };
        let ready: Vec<HostId> = self
            .blocked
            .iter()
            .copied()
            .filter(|h| gate.may_start(windows.hosts().host_fp(*h)))
            .collect();
        for h in ready {
            self.blocked.remove(&h);
            windows.hosts_mut().unblock(h, now);
        }
    }

    /// Hosts of held shards that have pending URLs in the store: read again (the records queue too).
    pub(super) fn hosts_pending(
        &mut self,
        hosts: Vec<HostInfo>,
        windows: &mut Windows,
        now: Instant,
    ) {
        let Some(gate) = &self.gate else {
            return;
        };
        for info in hosts {
            if info.fp == RECORDS_HOST {
                windows.reread_records();
            } else if gate.owns(gate.shard_of(info.fp))
                && !self.handing.contains(&gate.shard_of(info.fp))
            {
                let h = windows.hosts_mut().resume_host(&info.name, now);
                if !self.blocked.contains(&h) {
                    windows.hosts_mut().unblock(h, now);
                }
            }
        }
    }

    /// Owned shards.
    pub(super) fn owned(&self) -> u64 {
        self.gate.as_ref().map_or(0, |g| g.owned_count() as u64)
    }

    /// Whether the next shard poll should report every held shard again (see [`watch_idle`](Self::watch_idle)).
    pub(super) fn take_reread(&mut self) -> bool {
        std::mem::take(&mut self.idle.reread)
    }

    /// After each poll with counters: while this process has nothing to do (`idle`) and the crawl is not over,
    /// says every [`WAITING_LOG_EVERY`] what it waits for; and when its own shards hold pending URLs that no window
    /// accounts for ([`REREAD_AFTER_POLLS`] polls in a row), has them read again. `pending` is the crawl's.
    pub(super) fn watch_idle(&mut self, idle: bool, pending_held: u64, pending: u64, now: Instant) {
        if !idle {
            self.idle = IdleWatch::default();
            return;
        }
        let w = &mut self.idle;
        if pending_held > 0 {
            w.polls += 1;
            if w.polls >= REREAD_AFTER_POLLS {
                tracing::warn!(
                    pending_held,
                    "pending urls in held shards outside every window; reading the shards again"
                );
                w.reread = true;
                w.polls = 0;
            }
        } else {
            w.polls = 0;
        }
        let since = *w.since.get_or_insert(now);
        let due = w.logged.unwrap_or(since) + WAITING_LOG_EVERY;
        if now >= due {
            w.logged = Some(now);
            tracing::info!(
                waited_s = now.duration_since(since).as_secs(),
                pending,
                pending_held,
                unacknowledged = self.unacked.unwrap_or(0),
                "nothing to do here; waiting for the rest of the crawl"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::crawl::WindowId;
    use crate::scheduler::crawl::tests::shards::Table;
    use crawl_core::frontier::host_fp;
    use crawl_core::politeness::{Feedback, HostQueues, PolitenessPolicy, Pop};

    fn windows() -> Windows {
        let policy = PolitenessPolicy {
            min_delay: Duration::ZERO,
            ..PolitenessPolicy::default()
        };
        Windows::new(HostQueues::new(policy), 4)
    }

    /// A host name whose shard (fingerprint parity) is `shard`.
    fn host_in(shard: u32) -> String {
        (0..)
            .map(|i| format!("h{i}.test"))
            .find(|h| (host_fp(h) % 2) as u32 == shard)
            .unwrap()
    }

    #[test]
    fn without_a_gate_every_host_is_this_process_s() {
        let mut s = Shards::default();
        let fp = host_fp("a.test");
        assert!(!s.is_sharded());
        assert!(s.lets_start(0, fp) && s.may_start(fp) && s.owns_host(fp));
        assert!(!s.holds(fp), "no shard to hold");
        assert!(s.start_gate(fp).is_none());
        assert!(s.written_everywhere());
        assert_eq!(s.owned(), 0);
    }

    #[test]
    fn a_late_lease_blocks_its_hosts_until_it_is_renewed() {
        let t0 = Instant::now();
        let table = Arc::new(Table::default());
        table.owned.lock().unwrap().insert(0);
        table.expired.lock().unwrap().insert(0);
        let mut s = Shards::new(table.clone());
        let mut w = windows();
        let name = host_in(0);
        let h = w.hosts_mut().host_id(&name);
        let fp = host_fp(&name);
        assert!(s.holds(fp) && s.owns_host(fp));
        assert!(!s.lets_start(h, fp), "the lease ran out on the local clock");
        let mut robots = Entry::page(format!("http://{name}/robots.txt"), 0, None);
        robots.kind = crawl_core::frontier::JobKind::Robots;
        w.hosts_mut().hold(h);
        assert!(w.hosts_mut().push_urgent(h, robots, t0).is_none());
        let go = |_: HostId, _: &Entry| crawl_core::politeness::Gate::Go;
        assert!(!matches!(w.pop_ready(t0, go), Pop::Ready(..)), "held");
        s.renewed(&mut w, t0);
        assert!(
            !matches!(w.pop_ready(t0, go), Pop::Ready(..)),
            "not renewed yet"
        );
        table.expired.lock().unwrap().clear();
        s.renewed(&mut w, t0);
        assert!(
            matches!(w.pop_ready(t0, go), Pop::Ready(..)),
            "renewed: the host goes again"
        );
        assert!(s.lets_start(h, fp));
        assert!(!s.owns_host(host_fp(&host_in(1))));
        assert_eq!(s.owned(), 1);
    }

    #[test]
    fn a_shard_handed_off_is_quiet_once_nothing_of_it_is_busy() {
        let t0 = Instant::now();
        let table = Arc::new(Table::default());
        table.owned.lock().unwrap().extend([0, 1]);
        table.handoff.lock().unwrap().insert(1);
        let mut s = Shards::new(table.clone());
        let mut w = windows();
        let (kept, given) = (host_in(0), host_in(1));
        let hk = w.hosts_mut().host_id(&kept);
        let hg = w.hosts_mut().host_id(&given);
        let mut robots = Entry::page(format!("http://{given}/robots.txt"), 0, None);
        robots.kind = crawl_core::frontier::JobKind::Robots;
        assert!(w.hosts_mut().push_urgent(hg, robots, t0).is_none());
        let page = Entry::page(format!("http://{kept}/"), 0, None);
        assert!(w.hosts_mut().push_urgent(hk, page, t0).is_none());
        let given_fp = host_fp(&given);
        let dropped = s.hand_off(&mut w, |in_shard| in_shard(given_fp), t0);
        assert_eq!(dropped.len(), 1, "the given host's robots.txt job");
        assert!(!s.holds(given_fp) && s.holds(host_fp(&kept)));
        assert!(!s.settled(), "handing over");
        assert!(table.quiet.lock().unwrap().is_empty(), "busy");
        assert!(
            s.hand_off(&mut w, |_| false, t0).is_empty(),
            "detached once"
        );
        assert!(table.quiet.lock().unwrap().contains(&1));

        // The hand-over is called off (the peer left before the shard went): the shard is this process's again,
        // and the given host's queue is read again from the store.
        table.handoff.lock().unwrap().clear();
        s.hand_off(&mut w, |_| false, t0);
        assert!(s.holds(given_fp), "kept after all: held again");
        let go = |_: HostId, _: &Entry| crawl_core::politeness::Gate::Go;
        while let Pop::Ready(h, _) = w.pop_ready(t0, go) {
            w.hosts_mut().release(h, t0, Feedback::Ok);
        }
        let refills = w.take_refills();
        assert!(
            refills
                .iter()
                .any(|r| r.window == WindowId::Host(hg) && r.refill.after.is_none()),
            "{refills:?}"
        );

        // Handed over after all: nothing of it is held, and its host reads nothing.
        table.handoff.lock().unwrap().insert(1);
        s.hand_off(&mut w, |_| false, t0);
        table.owned.lock().unwrap().remove(&1);
        table.handoff.lock().unwrap().clear();
        s.hand_off(&mut w, |_| false, t0);
        assert!(!s.holds(given_fp) && !s.owns_host(given_fp));
        while let Pop::Ready(h, _) = w.pop_ready(t0, go) {
            w.hosts_mut().release(h, t0, Feedback::Ok);
        }
        assert!(w.take_refills().is_empty());
        assert!(!w.hosts().store_has_more(), "nothing of it is read here");
    }

    #[test]
    fn a_crawl_is_written_everywhere_only_on_counters_read_after_the_last_commit() {
        let table = Arc::new(Table::default());
        let mut s = Shards::new(table);
        assert!(!s.written_everywhere(), "no poll yet");
        let token = s.poll_token();
        s.committed();
        let polled = |unacked, token| PolledCounters {
            counters: Counters::default(),
            unacked,
            token,
        };
        s.counted(polled(0, token));
        assert!(
            !s.written_everywhere(),
            "the poll was sent before the commit"
        );
        s.counted(polled(2, s.poll_token()));
        assert!(!s.written_everywhere(), "two records to write somewhere");
        s.counted(polled(0, s.poll_token()));
        assert!(s.written_everywhere() && s.settled());
        s.claimed(0);
        assert!(!s.claims_waiting());
        s.claimed(3);
        assert!(s.claims_waiting());
        s.claims_taken();
        assert!(!s.claims_waiting());
    }

    #[test]
    fn an_idle_process_rereads_its_shards_after_ten_polls_with_pending_urls() {
        let t0 = Instant::now();
        let mut s = Shards::new(Arc::new(Table::default()));
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        for k in 0..9 {
            s.watch_idle(true, 5, 5, at(k * 200));
            assert!(!s.take_reread());
        }
        s.watch_idle(false, 5, 5, at(1800));
        s.watch_idle(true, 5, 5, at(2000));
        assert!(!s.take_reread(), "busy in between: counted again");
        for k in 0..9 {
            s.watch_idle(true, 5, 5, at(2200 + k * 200));
        }
        assert!(s.take_reread());
        assert!(!s.take_reread(), "asked once");
        for k in 0..12 {
            s.watch_idle(true, 0, 5, at(4000 + k * 200));
        }
        assert!(!s.take_reread(), "nothing pending in its own shards");
    }
}
