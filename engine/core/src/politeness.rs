//! Frontier ordering and per-host politeness, as pure logic driven by explicit instants.
//!
//! [`HostQueues`] keeps one queue per host (breadth-first: lowest depth first, then discovery order) as a bounded
//! [`Window`] of the store's queue for that host, refilled as it runs low (see [`HostQueues::take_refills`]), a queue of
//! urgent jobs per host (robots.txt, sitemaps) that go before pages, and a timer heap of hosts by the instant they
//! may next start a request. It enforces, across every fetcher at once, per-host concurrency and the minimum delay
//! between request starts (raised by robots.txt Crawl-delay), and pauses a host after 429/503 answers with
//! exponential backoff or the server's Retry-After.

use crate::frontier::window::{Refill, Window};
use crate::frontier::{Entry, Fp, UrlRef, host_fp};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Politeness settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PolitenessPolicy {
    pub per_host_concurrency: u32,
    pub min_delay: Duration,
    pub honour_crawl_delay: bool,
    pub max_crawl_delay: Duration,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
}

impl Default for PolitenessPolicy {
    fn default() -> Self {
        PolitenessPolicy {
            per_host_concurrency: 1,
            min_delay: Duration::from_millis(1000),
            honour_crawl_delay: true,
            max_crawl_delay: Duration::from_secs(30),
            backoff_base: Duration::from_secs(2),
            backoff_max: Duration::from_secs(600),
        }
    }
}

/// Index of a host in [`HostQueues`].
pub type HostId = u32;

/// What the caller decides about the page at the head of an eligible host's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Start it now.
    Go,
    /// Take it off the queue without starting a request (it is recorded elsewhere, e.g. disallowed by robots).
    Drop,
    /// Leave it and block the host until [`HostQueues::unblock`] (e.g. its robots.txt is not known yet).
    Block,
}

/// How a finished request went, as far as politeness cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feedback {
    /// An answer that is not a throttle signal.
    Ok,
    /// 429 or 503: pause the host for `retry_after` when given, else back off exponentially.
    Throttled { retry_after: Option<Duration> },
    /// No request was made after all (the slot is given back without delay).
    NotStarted,
}

/// The result of [`HostQueues::pop_ready`].
#[derive(Debug, PartialEq)]
pub enum Pop {
    /// Start this job on this host now.
    Ready(HostId, Entry),
    /// Nothing may start before this instant.
    WaitUntil(Instant),
    /// Nothing is queued on any unblocked host.
    Idle,
}

/// Entries a host window holds by default.
pub const DEFAULT_WINDOW: usize = 64;

/// What an operator set on a host, over the policy's politeness (see [`HostQueues::set_override`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostOverride {
    /// Nothing of the host starts, robots.txt and sitemap jobs included, until cleared; in-flight requests finish.
    pub paused: bool,
    /// The delay between two request starts, instead of `min_delay` and Crawl-delay.
    pub delay: Option<Duration>,
    /// Requests at a time, instead of `per_host_concurrency` (at least 1).
    pub concurrency: Option<u32>,
}

#[derive(Debug)]
struct Host {
    name: Box<str>,
    fp: Fp,
    pages: Window,
    urgent: VecDeque<Entry>,
    in_flight: u32,
    next_start: Option<Instant>,
    paused_until: Option<Instant>,
    backoff_level: u32,
    crawl_delay: Option<Duration>,
    /// What an operator set on it.
    operator: HostOverride,
    blocked: bool,
    /// Nothing starts, urgent jobs included (its shard's lease ran out here; see [`HostQueues::hold`]).
    held: bool,
    /// Its shard went to another process: nothing of it is queued or read here (see [`HostQueues::detach`]).
    detached: bool,
    scheduled: Option<Instant>,
}

/// A host as the politeness clock sees it (see [`HostQueues::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSnapshot<'a> {
    pub name: &'a str,
    pub fp: Fp,
    /// URLs in its window and robots.txt/sitemap jobs waiting (the store may hold more).
    pub in_window: usize,
    pub in_flight: u32,
    /// How long until its next request may start, when that is later than now.
    pub next_start_in: Option<Duration>,
    /// How long its 429/503 backoff (or Retry-After) still lasts.
    pub paused_for: Option<Duration>,
    pub backoff_level: u32,
    /// Its robots.txt Crawl-delay.
    pub crawl_delay: Option<Duration>,
    /// The delay between its request starts in force.
    pub delay: Duration,
    /// Requests at a time in force.
    pub concurrency: u32,
    pub operator: HostOverride,
    /// Not crawled here for now (its shard's lease ran out, or another process holds it).
    pub held: bool,
}

/// Per-host queues plus the politeness clock.
#[derive(Debug)]
pub struct HostQueues {
    policy: PolitenessPolicy,
    hosts: Vec<Host>,
    /// Keyed by host names from the web: a randomly seeded hash (a site cannot choose colliding names), cheaper
    /// than the default SipHash on every URL.
    index: HashMap<Box<str>, HostId, foldhash::quality::RandomState>,
    by_fp: crate::frontier::fphash::FpMap<Fp, HostId>,
    timers: BinaryHeap<Reverse<(Instant, HostId)>>,
    queued: usize,
    in_flight: usize,
    window: usize,
    refills: Vec<(HostId, Fp, Refill)>,
    /// Operators' overrides by host name, applied to hosts as they come and go.
    overrides: HashMap<Box<str>, HostOverride, foldhash::quality::RandomState>,
}

impl HostQueues {
    pub fn new(policy: PolitenessPolicy) -> HostQueues {
        HostQueues {
            policy,
            hosts: Vec::new(),
            index: HashMap::default(),
            by_fp: Default::default(),
            timers: BinaryHeap::new(),
            queued: 0,
            in_flight: 0,
            window: DEFAULT_WINDOW,
            refills: Vec::new(),
            overrides: HashMap::default(),
        }
    }

    /// Ready URLs a host window holds: the configured size, raised to four times the per-host concurrency so that a
    /// host running at full concurrency does not wait for a refill (asked for when half the window is left).
    fn window_cap(&self) -> usize {
        self.window
            .max(4 * self.policy.per_host_concurrency as usize)
    }

    /// Sets how many ready URLs each host window holds.
    pub fn with_window(mut self, window: usize) -> HostQueues {
        self.window = window.max(1);
        self
    }

    /// Replaces the politeness settings; they apply from the next request.
    pub fn set_policy(&mut self, policy: PolitenessPolicy) {
        self.policy = policy;
    }

    pub fn policy(&self) -> &PolitenessPolicy {
        &self.policy
    }

    /// The id of a host, creating it on first use (with nothing in the store).
    pub fn host_id(&mut self, host: &str) -> HostId {
        self.host_with(host, Window::complete())
    }

    /// Registers a host that has `pending` URLs in the store (on resume, or its shard taken over); they are read
    /// a window at a time, from the start of its queue.
    pub fn resume_host(&mut self, host: &str, now: Instant) -> HostId {
        let id = self.host_with(host, Window::unloaded());
        if let Some(h) = self.hosts.get_mut(id as usize) {
            h.detached = false;
            h.pages.rescan();
        }
        self.wake(id, now);
        id
    }

    /// The hosts whose name satisfies `pred`.
    pub fn hosts_named(&self, pred: impl Fn(&str) -> bool) -> Vec<HostId> {
        (0..self.hosts.len() as HostId)
            .filter(|&id| pred(&self.hosts[id as usize].name))
            .collect()
    }

    /// The id of a host by its name, if known.
    pub fn find(&self, host: &str) -> Option<HostId> {
        self.index.get(host).copied()
    }

    /// Takes every page in a host's window (its queue dropped by an operator): each stays "out", as a leased one
    /// does, until [`settle`](Self::settle)d, so that no refill hands it out again. Returns them, and whether the
    /// store may hold more of the queue (a refill is then asked for: [`take_refills`](Self::take_refills)).
    pub fn take_pages(&mut self, host: HostId) -> (Vec<Entry>, bool) {
        let Some(h) = self.hosts.get_mut(host as usize) else {
            return (Vec::new(), false);
        };
        let mut taken = Vec::with_capacity(h.pages.len());
        while let Some(e) = h.pages.pop() {
            taken.push(e);
        }
        self.queued = self.queued.saturating_sub(taken.len());
        self.want_refill(host);
        let h = &self.hosts[host as usize];
        (taken, h.pages.has_more() || h.pages.is_loading())
    }

    /// What the politeness clock knows of a host, for an operator's view.
    pub fn snapshot(&self, host: HostId, now: Instant) -> Option<HostSnapshot<'_>> {
        let h = self.hosts.get(host as usize)?;
        let wait = |t: Option<Instant>| t.filter(|t| *t > now).map(|t| t - now);
        Some(HostSnapshot {
            name: &h.name,
            fp: h.fp,
            in_window: h.pages.len() + h.urgent.len(),
            in_flight: h.in_flight,
            next_start_in: wait(h.next_start),
            paused_for: wait(h.paused_until),
            backoff_level: h.backoff_level,
            crawl_delay: h.crawl_delay,
            delay: self.delay_for(host),
            concurrency: self.concurrency(h),
            operator: h.operator,
            held: h.held || h.detached,
        })
    }

    /// The id of a host by its fingerprint, if known.
    pub fn host_by_fp(&self, fp: Fp) -> Option<HostId> {
        self.by_fp.get(&fp).copied()
    }

    fn host_with(&mut self, host: &str, window: Window) -> HostId {
        if let Some(id) = self.index.get(host) {
            return *id;
        }
        let id = self.hosts.len() as HostId;
        let fp = host_fp(host);
        self.by_fp.insert(fp, id);
        self.hosts.push(Host {
            name: host.into(),
            fp,
            pages: window,
            urgent: VecDeque::new(),
            in_flight: 0,
            next_start: None,
            paused_until: None,
            backoff_level: 0,
            crawl_delay: None,
            operator: self.overrides.get(host).copied().unwrap_or_default(),
            blocked: false,
            held: false,
            detached: false,
            scheduled: None,
        });
        self.index.insert(host.into(), id);
        id
    }

    pub fn host_name(&self, id: HostId) -> &str {
        self.hosts.get(id as usize).map(|h| &*h.name).unwrap_or("")
    }

    /// Jobs waiting (pages and urgent jobs) on all hosts.
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Requests started and not yet released.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Number of hosts seen.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Queues a page on its host (a page that is not in the store, or that goes back after a lease). A detached
    /// host keeps nothing: the page is no longer out here, and the store keeps it for the host's shard's owner.
    pub fn push(&mut self, host: HostId, mut entry: Entry, now: Instant) {
        entry.queued_at = Some(now);
        if let Some(h) = self.hosts.get_mut(host as usize) {
            if h.detached {
                h.pages.settle(entry.id);
                return;
            }
            let d = h.pages.put_back(entry);
            self.queued = self.queued.saturating_add_signed(d);
            self.wake(host, now);
        }
    }

    /// A page the store just added on this host: kept in the window when it belongs there (never on a detached
    /// host).
    pub fn offer(&mut self, host: HostId, mut entry: Entry, now: Instant) {
        entry.queued_at = Some(now);
        let cap = self.window_cap();
        if let Some(h) = self.hosts.get_mut(host as usize)
            && !h.detached
        {
            let d = h.pages.offer(entry, cap);
            self.queued = self.queued.saturating_add_signed(d);
            self.wake(host, now);
        }
    }

    /// The store answered a refill of a host's window. The answer of a refill sent before the host was detached
    /// is dropped (the store keeps those URLs for the host's shard's owner).
    pub fn fill(&mut self, host: HostId, mut entries: Vec<Entry>, asked: Refill, now: Instant) {
        for e in &mut entries {
            e.queued_at = Some(now);
        }
        let cap = self.window_cap();
        if let Some(h) = self.hosts.get_mut(host as usize) {
            if h.detached {
                h.pages.refill_failed();
                return;
            }
            let d = h.pages.fill(entries, asked, cap);
            self.queued = self.queued.saturating_add_signed(d);
            h.scheduled = None;
            self.wake(host, now);
        }
    }

    /// A refill could not be read: the host may ask again.
    pub fn refill_failed(&mut self, host: HostId, now: Instant) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.pages.refill_failed();
            h.scheduled = None;
            self.wake(host, now);
        }
    }

    /// Refills the hosts need: (host, its fingerprint, what to read). The caller asks the store and calls
    /// [`fill`](Self::fill) with each answer.
    pub fn take_refills(&mut self) -> Vec<(HostId, Fp, Refill)> {
        std::mem::take(&mut self.refills)
    }

    /// A page taken from a host's window is done and committed.
    pub fn settle(&mut self, host: HostId, id: UrlRef) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.pages.settle(id);
        }
    }

    /// Reads every host's queue again from its start (a safety net when the store holds pending URLs that no
    /// window accounts for).
    pub fn rescan_all(&mut self, now: Instant) {
        for id in 0..self.hosts.len() {
            self.hosts[id].pages.rescan();
            self.hosts[id].scheduled = None;
            self.wake(id as HostId, now);
        }
    }

    /// True while some host is waiting for a refill or may read more from the store (detached hosts read nothing).
    pub fn store_has_more(&self) -> bool {
        self.hosts.iter().any(|h| !h.detached && h.pages.has_more())
    }

    fn want_refill(&mut self, host: HostId) -> bool {
        let cap = self.window_cap();
        let h = &mut self.hosts[host as usize];
        match h.pages.want_refill(cap) {
            Some(r) => {
                self.refills.push((host, h.fp, r));
                true
            }
            None => false,
        }
    }

    /// Queues an urgent job (robots.txt, sitemap) that goes before the host's pages, even while it is blocked.
    /// Returns the job when it is not queued: its host is detached (whoever crawls the host asks for its jobs) or
    /// unknown.
    #[must_use = "a job that is not queued is given up by the caller"]
    pub fn push_urgent(&mut self, host: HostId, mut entry: Entry, now: Instant) -> Option<Entry> {
        entry.queued_at = Some(now);
        match self.hosts.get_mut(host as usize) {
            Some(h) if !h.detached => {
                h.urgent.push_back(entry);
                self.queued += 1;
                self.wake(host, now);
                None
            }
            _ => Some(entry),
        }
    }

    /// Lets a blocked or held host's jobs go again.
    pub fn unblock(&mut self, host: HostId, now: Instant) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.blocked = false;
            h.held = false;
            self.wake(host, now);
        }
    }

    /// Blocks a host's pages (urgent jobs still go).
    pub fn block(&mut self, host: HostId) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.blocked = true;
        }
    }

    /// Holds every job of a host, urgent ones included, until [`unblock`](Self::unblock) (a crawl shared by many
    /// processes: the host's shard may not start requests here for now).
    pub fn hold(&mut self, host: HostId) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.held = true;
        }
    }

    pub fn is_blocked(&self, host: HostId) -> bool {
        self.hosts.get(host as usize).is_some_and(|h| h.blocked)
    }

    /// True from [`detach`](Self::detach) to [`resume_host`](Self::resume_host).
    pub fn is_detached(&self, host: HostId) -> bool {
        self.hosts.get(host as usize).is_some_and(|h| h.detached)
    }

    /// Sets (or, with None, clears) what an operator set on the host named `host`, now and whenever it is
    /// registered again; it applies from the next request (in-flight ones finish).
    pub fn set_override(&mut self, host: &str, o: Option<HostOverride>, now: Instant) {
        let o = o.filter(|o| *o != HostOverride::default());
        match o {
            Some(o) => {
                self.overrides.insert(host.into(), o);
            }
            None => {
                self.overrides.remove(host);
            }
        }
        if let Some(&id) = self.index.get(host) {
            self.hosts[id as usize].operator = o.unwrap_or_default();
            self.wake(id, now);
        }
    }

    /// What an operator set on a host.
    pub fn override_of(&self, host: HostId) -> HostOverride {
        self.hosts
            .get(host as usize)
            .map(|h| h.operator)
            .unwrap_or_default()
    }

    /// The hosts an operator set something on, by name.
    pub fn overrides(&self) -> impl Iterator<Item = (&str, &HostOverride)> {
        self.overrides.iter().map(|(h, o)| (&**h, o))
    }

    /// Requests at a time on a host: an operator's, else the policy's.
    fn concurrency(&self, h: &Host) -> u32 {
        h.operator
            .concurrency
            .unwrap_or(self.policy.per_host_concurrency)
            .max(1)
    }

    /// Sets the robots.txt Crawl-delay of a host (honoured up to max_crawl_delay when enabled).
    pub fn set_crawl_delay(&mut self, host: HostId, delay: Option<Duration>) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.crawl_delay = delay;
        }
    }

    /// Pauses a host until `until` (e.g. robots.txt unavailable, retry later).
    pub fn pause_until(&mut self, host: HostId, until: Instant) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.paused_until = Some(h.paused_until.map_or(until, |p| p.max(until)));
        }
    }

    /// The delay between two request starts on a host.
    pub fn delay_for(&self, host: HostId) -> Duration {
        if let Some(d) = self.hosts.get(host as usize).and_then(|h| h.operator.delay) {
            return d;
        }
        let crawl_delay = self.hosts.get(host as usize).and_then(|h| h.crawl_delay);
        match crawl_delay {
            Some(d) if self.policy.honour_crawl_delay => self
                .policy
                .min_delay
                .max(d.min(self.policy.max_crawl_delay)),
            _ => self.policy.min_delay,
        }
    }

    fn earliest(&self, host: HostId, now: Instant) -> Instant {
        let h = &self.hosts[host as usize];
        let mut t = now;
        if let Some(n) = h.next_start {
            t = t.max(n);
        }
        if let Some(p) = h.paused_until {
            t = t.max(p);
        }
        t
    }

    fn has_work(h: &Host) -> bool {
        if h.held || h.detached || h.operator.paused {
            return false;
        }
        !h.urgent.is_empty()
            || (!h.blocked
                && (!h.pages.is_empty() || (h.pages.has_more() && !h.pages.is_loading())))
    }

    /// Puts a host on the timer heap if it has work and a free slot and is not scheduled yet.
    fn wake(&mut self, host: HostId, now: Instant) {
        let Some(h) = self.hosts.get(host as usize) else {
            return;
        };
        if h.scheduled.is_some() || h.in_flight >= self.concurrency(h) || !Self::has_work(h) {
            return;
        }
        let at = self.earliest(host, now);
        self.hosts[host as usize].scheduled = Some(at);
        self.timers.push(Reverse((at, host)));
    }

    /// The next job that may start now. `gate` is asked about each page at the head of an eligible host's queue;
    /// pages it drops are appended to `dropped`.
    pub fn pop_ready<F>(&mut self, now: Instant, mut gate: F, dropped: &mut Vec<Entry>) -> Pop
    where
        F: FnMut(HostId, &Entry) -> Gate,
    {
        while let Some(Reverse((at, host))) = self.timers.peek().copied() {
            if at > now {
                return Pop::WaitUntil(at);
            }
            self.timers.pop();
            let idx = host as usize;
            if self.hosts[idx].scheduled != Some(at) {
                continue; // stale timer
            }
            self.hosts[idx].scheduled = None;
            if self.hosts[idx].in_flight >= self.concurrency(&self.hosts[idx])
                || !Self::has_work(&self.hosts[idx])
            {
                continue; // woken again by release / push / unblock
            }
            let earliest = self.earliest(host, now);
            if earliest > now {
                self.hosts[idx].scheduled = Some(earliest);
                self.timers.push(Reverse((earliest, host)));
                continue;
            }
            if self.hosts[idx].urgent.is_empty() && self.hosts[idx].pages.is_empty() {
                // Its window is empty and the store has more: read the next window; fill() wakes the host.
                self.want_refill(host);
                continue;
            }
            let job = if let Some(job) = self.hosts[idx].urgent.pop_front() {
                Some(job)
            } else {
                let mut chosen = None;
                while let Some(head) = self.hosts[idx].pages.peek() {
                    match gate(host, head) {
                        Gate::Go => {
                            chosen = self.hosts[idx].pages.pop();
                            break;
                        }
                        Gate::Drop => {
                            if let Some(q) = self.hosts[idx].pages.pop() {
                                self.queued -= 1;
                                dropped.push(q);
                            }
                        }
                        Gate::Block => {
                            self.hosts[idx].blocked = true;
                            break;
                        }
                    }
                }
                chosen
            };
            match job {
                Some(job) => {
                    self.queued -= 1;
                    self.in_flight += 1;
                    let delay = self.delay_for(host);
                    let h = &mut self.hosts[idx];
                    h.in_flight += 1;
                    h.next_start = Some(now + delay);
                    self.want_refill(host);
                    self.wake(host, now);
                    return Pop::Ready(host, job);
                }
                None => {
                    // Everything was dropped, or the host got blocked: try it again when it changes.
                    self.wake(host, now);
                }
            }
        }
        Pop::Idle
    }

    /// Ends a request started by [`pop_ready`](Self::pop_ready).
    pub fn release(&mut self, host: HostId, now: Instant, feedback: Feedback) {
        let single = self
            .hosts
            .get(host as usize)
            .is_none_or(|h| self.concurrency(h) <= 1);
        let delay = self.delay_for(host);
        let (base, max) = (self.policy.backoff_base, self.policy.backoff_max);
        let Some(h) = self.hosts.get_mut(host as usize) else {
            return;
        };
        if h.in_flight == 0 {
            return;
        }
        h.in_flight -= 1;
        self.in_flight -= 1;
        match feedback {
            Feedback::Ok => {
                h.backoff_level = 0;
                if single {
                    // One request at a time: the next one starts a full delay after this one ended, so the server
                    // sees at least `delay` between arrivals whatever the latency.
                    h.next_start = Some(h.next_start.map_or(now + delay, |n| n.max(now + delay)));
                }
            }
            Feedback::Throttled { retry_after } => {
                let backoff = crate::backoff::Backoff::new(base, max).delay(h.backoff_level);
                h.backoff_level = h.backoff_level.saturating_add(1);
                let wait = retry_after.unwrap_or(backoff).min(max);
                h.paused_until = Some(h.paused_until.map_or(now + wait, |p| p.max(now + wait)));
            }
            Feedback::NotStarted => {
                h.next_start = None;
            }
        }
        self.wake(host, now);
    }

    /// How many throttled answers in a row the host gave (the step of its exponential backoff).
    pub fn backoff_level(&self, host: HostId) -> u32 {
        self.hosts.get(host as usize).map_or(0, |h| h.backoff_level)
    }

    /// Sets the step of a host's exponential backoff (a pause taken over with the host from another process).
    pub fn set_backoff_level(&mut self, host: HostId, level: u32) {
        if let Some(h) = self.hosts.get_mut(host as usize) {
            h.backoff_level = level;
        }
    }

    /// Until when a host's requests are paused (429/503 backoff or Retry-After), if they are.
    pub fn paused_until(&self, host: HostId) -> Option<Instant> {
        self.hosts.get(host as usize).and_then(|h| h.paused_until)
    }

    /// The hosts whose fingerprint satisfies `pred` (e.g. the hosts of one shard).
    pub fn hosts_where(&self, pred: impl Fn(Fp) -> bool) -> Vec<HostId> {
        (0..self.hosts.len() as HostId)
            .filter(|&id| pred(self.hosts[id as usize].fp))
            .collect()
    }

    /// A host's fingerprint (0 for an unknown id).
    pub fn host_fp(&self, host: HostId) -> Fp {
        self.hosts.get(host as usize).map_or(0, |h| h.fp)
    }

    /// Stops crawling a host for now (its shard went to another process): its window lets go of its URLs (the
    /// store keeps them; URLs out stay known as out), its urgent jobs are returned to the caller (whoever crawls
    /// the host next asks for its robots.txt itself) and the host is blocked until
    /// [`resume_host`](Self::resume_host) and [`unblock`](Self::unblock). Requests in flight finish normally.
    /// Until it is resumed, nothing of the host is kept here (late refill answers, offers, pages or urgent jobs
    /// going back) and its queue does not count as unread ([`store_has_more`](Self::store_has_more)): a process
    /// that lost a host neither waits for it nor holds its work.
    pub fn detach(&mut self, host: HostId) -> Vec<Entry> {
        let Some(h) = self.hosts.get_mut(host as usize) else {
            return Vec::new();
        };
        let n = h.pages.release_memory();
        let urgent: Vec<Entry> = h.urgent.drain(..).collect();
        self.queued = self.queued.saturating_sub(n + urgent.len());
        h.blocked = true;
        h.detached = true;
        urgent
    }

    /// Lets go of every host window (the store keeps the URLs): memory does not stay at its peak once the crawl
    /// stops leasing. Urgent jobs stay.
    pub fn release_windows(&mut self) {
        for h in &mut self.hosts {
            let n = h.pages.release_memory();
            self.queued = self.queued.saturating_sub(n);
        }
    }
}

#[cfg(test)]
mod tests;
