//! The frontier as the scheduler holds it in memory: a window over each host's queue in the store (with its
//! politeness: delays, pauses, holds, kept by [`HostQueues`]), the records queue's window (links recorded without a
//! fetch), and the refills asked of the store. A window reads its queue a part at a time; what a commit settles or
//! adds goes into the windows here.

use crawl_core::frontier::window::{Refill, Window};
use crawl_core::frontier::{Added, Entry, Finished, Fp, FrontierError, HostInfo, RECORDS_HOST};
use crawl_core::politeness::{Gate, HostId, HostQueues, Pop};
use std::time::{Duration, Instant};

/// Which window a refill is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowId {
    Host(HostId),
    /// The records queue (links recorded without a fetch).
    Records,
}

/// A refill to send to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefillRequest {
    pub window: WindowId,
    pub host: Fp,
    pub refill: Refill,
}

/// The host queues' windows and the records queue's window.
pub(super) struct Windows {
    queues: HostQueues,
    /// The records queue: links recorded without a fetch, read from the store a window at a time.
    excluded: Window,
    /// Entries the records window holds.
    cap: usize,
    /// Refills sent and not answered yet.
    refills_out: usize,
    /// Pages the robots gate dropped while leasing (recorded right after).
    dropped: Vec<Entry>,
}

impl Windows {
    /// Windows over `queues`, the records window holding up to `cap` entries (read once the store says its queue
    /// holds some).
    pub(super) fn new(queues: HostQueues, cap: usize) -> Windows {
        Windows {
            queues,
            excluded: Window::complete(),
            cap,
            refills_out: 0,
            dropped: Vec::new(),
        }
    }

    /// A queue the store recovered. Returns true for a host's queue (false for the records queue).
    pub(super) fn resume(&mut self, host: &HostInfo, now: Instant) -> bool {
        if host.fp == RECORDS_HOST {
            self.excluded = Window::unloaded();
            false
        } else {
            self.queues.resume_host(&host.name, now);
            true
        }
    }

    /// The host queues, for their politeness (delays, pauses, holds, host names).
    pub(super) fn hosts(&self) -> &HostQueues {
        &self.queues
    }

    pub(super) fn hosts_mut(&mut self) -> &mut HostQueues {
        &mut self.queues
    }

    /// The next job that may start now; `gate` is asked about each page at the head of an eligible queue, and the
    /// pages it drops wait in [`take_dropped`](Self::take_dropped).
    pub(super) fn pop_ready(
        &mut self,
        now: Instant,
        gate: impl FnMut(HostId, &Entry) -> Gate,
    ) -> Pop {
        self.queues.pop_ready(now, gate, &mut self.dropped)
    }

    /// The pages the robots gate dropped.
    pub(super) fn take_dropped(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.dropped)
    }

    /// The next link of the records queue in memory.
    pub(super) fn pop_excluded(&mut self) -> Option<Entry> {
        self.excluded.pop()
    }

    /// No lease starts any more: the windows' URLs stay in the store, their memory goes.
    pub(super) fn let_go(&mut self) {
        if self.queues.queued() > 0 {
            self.queues.release_windows();
        }
    }

    /// True when no refill is out, nothing is queued here and every window has read its whole queue.
    pub(super) fn all_read(&self) -> bool {
        self.refills_out == 0
            && self.queues.queued() == 0
            && !self.queues.store_has_more()
            && !self.excluded.has_more()
    }

    /// True when nothing is queued here and no refill is out (the store may hold more).
    pub(super) fn drained(&self) -> bool {
        self.queues.queued() == 0 && self.refills_out == 0
    }

    /// Reads every queue again from its start.
    pub(super) fn rescan(&mut self, now: Instant) {
        self.queues.rescan_all(now);
        self.excluded.rescan();
    }

    /// Refills the windows need; each answer comes back through [`filled`](Self::filled).
    pub(super) fn take_refills(&mut self) -> Vec<RefillRequest> {
        let mut out: Vec<RefillRequest> = self
            .queues
            .take_refills()
            .into_iter()
            .map(|(h, fp, refill)| RefillRequest {
                window: WindowId::Host(h),
                host: fp,
                refill,
            })
            .collect();
        if let Some(refill) = self.excluded.want_refill(self.cap) {
            out.push(RefillRequest {
                window: WindowId::Records,
                host: RECORDS_HOST,
                refill,
            });
        }
        self.refills_out += out.len();
        out
    }

    /// The store's answer to a refill.
    pub(super) fn filled(
        &mut self,
        req: RefillRequest,
        result: Result<Vec<Entry>, FrontierError>,
        now: Instant,
    ) -> Result<(), FrontierError> {
        self.refills_out = self.refills_out.saturating_sub(1);
        match (req.window, result) {
            (WindowId::Host(h), Ok(entries)) => self.queues.fill(h, entries, req.refill, now),
            (WindowId::Records, Ok(entries)) => {
                self.excluded.fill(entries, req.refill, self.cap);
            }
            (WindowId::Host(h), Err(e)) => {
                self.queues.refill_failed(h, now);
                return Err(e);
            }
            (WindowId::Records, Err(e)) => {
                self.excluded.refill_failed();
                return Err(e);
            }
        }
        Ok(())
    }

    /// A URL the store made done: its window forgets it.
    pub(super) fn settle(&mut self, f: &Finished) {
        if f.host == RECORDS_HOST {
            self.excluded.settle(f.id);
        } else if let Some(h) = self.queues.host_by_fp(f.host) {
            self.queues.settle(h, f.id);
        }
    }

    /// A URL new to the store: its window takes it when it has room.
    pub(super) fn offer(&mut self, added: Added, now: Instant) {
        if added.entry.host == RECORDS_HOST {
            self.excluded.offer(added.entry, self.cap);
        } else {
            let h = self.queues.host_id(&added.host);
            self.queues.offer(h, added.entry, now);
        }
    }

    /// The records queue went to another process (`forget`: drop what the window holds).
    pub(super) fn give_up_records(&mut self, forget: bool) {
        if forget {
            self.excluded.release_memory();
        }
        self.excluded = Window::complete();
    }

    /// The records queue may hold links for this process: read it (unless it is being read).
    pub(super) fn reread_records(&mut self) {
        if !self.excluded.has_more() {
            self.excluded = Window::unloaded();
        }
    }

    /// A host whose queue must be read again from its start (a hand-over called off, URLs of it refused by a
    /// commit): its window keeps what it holds, and it is no longer detached.
    pub(super) fn read_again(&mut self, host: HostId, now: Instant) {
        let name = self.queues.host_name(host).to_owned();
        self.queues.resume_host(&name, now);
    }

    /// A host taken over from another process: read from the store, and started only after its politeness delay
    /// (a request of the previous owner may have just started) or the pause the previous owner recorded
    /// (429/503, Retry-After), whichever is later.
    pub(super) fn take_over(&mut self, host: &HostInfo, now: Instant) -> HostId {
        let h = self.queues.resume_host(&host.name, now);
        let delay = self.queues.delay_for(h);
        let recorded = std::time::UNIX_EPOCH + Duration::from_millis(host.paused_until_ms);
        let left = recorded
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        self.queues.pause_until(h, now + delay.max(left));
        self.queues.set_backoff_level(h, host.backoff_level);
        self.queues.unblock(h, now);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::frontier::{Discovered, FrontierStore, JobKind};
    use crawl_core::politeness::PolitenessPolicy;
    use crawl_store_embedded::EmbeddedFrontier;

    fn policy() -> PolitenessPolicy {
        PolitenessPolicy {
            per_host_concurrency: 1,
            min_delay: Duration::from_secs(2),
            ..PolitenessPolicy::default()
        }
    }

    fn discovered(url: &str, host: &str, kind: JobKind) -> Discovered {
        Discovered {
            url: url.to_owned(),
            host: host.to_owned(),
            depth: 0,
            parent: None,
            redirect_chain: Vec::new(),
            kind,
        }
    }

    /// A store holding two pages of a.test and an excluded link, and windows over what it recovered.
    fn store_and_windows(now: Instant) -> (tempfile::TempDir, EmbeddedFrontier, Windows) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = EmbeddedFrontier::open(dir.path()).unwrap();
        store.recover().unwrap();
        let mut batch = crawl_core::frontier::Batch::default();
        batch
            .discovered
            .push(discovered("http://a.test/1", "a.test", JobKind::Page));
        batch
            .discovered
            .push(discovered("http://a.test/2", "a.test", JobKind::Page));
        batch
            .discovered
            .push(discovered("http://b.test/", "b.test", JobKind::OutOfScope));
        store.commit(batch).unwrap();
        drop(store);
        let mut store = EmbeddedFrontier::open(dir.path()).unwrap();
        let resume = store.recover().unwrap();
        let mut w = Windows::new(HostQueues::new(policy()).with_window(4), 4);
        let hosts: Vec<bool> = resume.hosts.iter().map(|h| w.resume(h, now)).collect();
        assert_eq!(hosts.iter().filter(|h| **h).count(), 1, "a.test");
        assert_eq!(hosts.len(), 2, "a.test and the records queue");
        (dir, store, w)
    }

    fn answer(store: &mut EmbeddedFrontier, w: &mut Windows, now: Instant) -> usize {
        let reqs = w.take_refills();
        let n = reqs.len();
        for req in reqs {
            let res = store.next_urls(req.host, req.refill.after, req.refill.max);
            w.filled(req, res, now).unwrap();
        }
        n
    }

    #[test]
    fn windows_read_their_queues_and_pages_go_one_delay_apart() {
        let t0 = Instant::now();
        let (_dir, mut store, mut w) = store_and_windows(t0);
        assert!(!w.all_read());
        assert_eq!(answer(&mut store, &mut w, t0), 1, "the records queue");
        let excluded = w.pop_excluded().expect("the excluded link");
        assert_eq!(excluded.url, "http://b.test/");
        assert!(w.pop_excluded().is_none());
        // The host's window asks for its queue when the host comes up.
        let mut ready = None;
        for _ in 0..3 {
            if let Pop::Ready(h, e) = w.pop_ready(t0, |_, _| Gate::Go) {
                ready = Some((h, e));
                break;
            }
            assert!(!w.all_read(), "the host's queue is not read yet");
            assert_eq!(answer(&mut store, &mut w, t0), 1, "the host's queue");
        }
        let (h, first) = ready.expect("a page is ready");
        assert_eq!(first.url, "http://a.test/1");
        assert_eq!(w.hosts().host_name(h), "a.test");
        w.hosts_mut()
            .release(h, t0, crawl_core::politeness::Feedback::Ok);
        assert_eq!(
            w.pop_ready(t0, |_, _| Gate::Go),
            Pop::WaitUntil(t0 + Duration::from_secs(2)),
            "the host's delay"
        );
        let later = t0 + Duration::from_secs(2);
        let Pop::Ready(_, second) = w.pop_ready(later, |_, _| Gate::Drop) else {
            // A dropped page is no job: nothing else is ready.
            assert_eq!(w.take_dropped().len(), 1);
            assert!(w.take_dropped().is_empty(), "taken once");
            return;
        };
        panic!("the gate dropped {second:?}");
    }

    #[test]
    fn a_failed_refill_is_an_error_and_the_window_asks_again() {
        let t0 = Instant::now();
        let (_dir, _store, mut w) = store_and_windows(t0);
        let reqs = w.take_refills();
        assert_eq!(reqs.len(), 1, "the records queue");
        assert!(w.take_refills().is_empty(), "one refill out per window");
        for req in reqs {
            let res = w.filled(req, Err(FrontierError::Gone("down".into())), t0);
            assert!(res.is_err());
        }
        assert_eq!(w.take_refills().len(), 1, "asked again");
    }

    #[test]
    fn a_host_taken_over_waits_for_the_pause_its_previous_owner_recorded() {
        let t0 = Instant::now();
        let mut w = Windows::new(HostQueues::new(policy()).with_window(4), 4);
        let in_10s = std::time::SystemTime::now() + Duration::from_secs(10);
        let ms = in_10s
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let info = HostInfo {
            fp: crawl_core::frontier::host_fp("c.test"),
            name: "c.test".into(),
            pending: 1,
            paused_until_ms: ms,
            backoff_level: 3,
        };
        let h = w.take_over(&info, t0);
        let until = w.hosts().paused_until(h).expect("paused");
        assert!(until > t0 + Duration::from_secs(9) && until <= t0 + Duration::from_secs(10));
        assert_eq!(w.hosts().backoff_level(h), 3);
        let fresh = HostInfo {
            name: "d.test".into(),
            fp: crawl_core::frontier::host_fp("d.test"),
            paused_until_ms: 0,
            backoff_level: 0,
            pending: 1,
        };
        let d = w.take_over(&fresh, t0);
        assert_eq!(
            w.hosts().paused_until(d),
            Some(t0 + Duration::from_secs(2)),
            "the politeness delay"
        );
    }
}
