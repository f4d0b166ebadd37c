//! A crawl shared by many processes: which hosts this process may crawl (its shards), what changes when shards
//! are gained, lost or handed over, and the host pauses that move with a shard.

use super::*;

impl Crawl {
    /// A crawl shared by many processes: only hosts whose shard `gate` says this process owns are crawled, and
    /// records carry a crawl-wide id.
    pub fn with_shards(mut self, gate: Arc<dyn ShardGate>) -> Crawl {
        self.shards = Some(gate);
        self.record_ids = true;
        self
    }

    /// URLs may be crawled again (recrawl): each record's id names the URL and the queueing it answers, so that
    /// the merge keeps one record per fetch of a URL, not one per URL.
    pub fn with_recrawl(mut self) -> Crawl {
        self.recrawl = true;
        self
    }

    /// Shard ownership news from the store: hosts of gained shards are read from the store (each waits its
    /// politeness delay first, as a request of the previous owner may have just started); hosts of lost shards
    /// start nothing more (their requests in flight finish, and their commits are refused by the store).
    /// What to give [`shards_changed`](Self::shards_changed) with the answer of a shard poll sent now.
    pub fn poll_token(&self) -> u64 {
        self.commits_done
    }

    /// Returns how many shards this process owns now. `token` is [`poll_token`](Self::poll_token) as of when the
    /// poll was sent.
    pub fn shards_changed(&mut self, changes: ShardChanges, token: u64, now: Instant) -> u64 {
        let Some(gate) = self.shards.clone() else {
            return 0;
        };
        if !changes.lost.is_empty() {
            let lost: HashSet<u32> = changes.lost.iter().copied().collect();
            for h in self
                .queues
                .hosts_where(|fp| lost.contains(&gate.shard_of(fp)))
            {
                self.detach(h);
            }
            if lost.contains(&gate.shard_of(RECORDS_HOST)) {
                self.excluded.release_memory();
                self.excluded = Window::complete();
            }
            tracing::info!(shards = changes.lost.len(), "shards lost");
        }
        for (shard, hosts) in changes.gained {
            for info in hosts {
                if info.fp == RECORDS_HOST {
                    if !self.excluded.has_more() {
                        self.excluded = Window::unloaded();
                    }
                    continue;
                }
                let h = self.queues.resume_host(&info.name, now);
                let delay = self.queues.delay_for(h);
                // A pause the previous owner recorded (429/503, Retry-After) holds here too.
                let recorded = std::time::UNIX_EPOCH + Duration::from_millis(info.paused_until_ms);
                let left = recorded
                    .duration_since(std::time::SystemTime::now())
                    .unwrap_or_default();
                self.queues.pause_until(h, now + delay.max(left));
                self.queues.set_backoff_level(h, info.backoff_level);
                self.queues.unblock(h, now);
                self.shard_blocked.remove(&h);
            }
            tracing::debug!(shard, "shard gained");
        }
        self.take_robots(changes.robots, now);
        self.hand_off(gate.as_ref());
        // Hosts held back by a late renewal go again once the lease is renewed.
        let ready: Vec<HostId> = self
            .shard_blocked
            .iter()
            .copied()
            .filter(|h| gate.may_start(self.queues.host_fp(*h)))
            .collect();
        for h in ready {
            self.shard_blocked.remove(&h);
            self.queues.unblock(h, now);
        }
        for info in changes.hosts {
            if info.fp == RECORDS_HOST {
                if !self.excluded.has_more() {
                    self.excluded = Window::unloaded();
                }
            } else if gate.owns(gate.shard_of(info.fp))
                && !self.handing.contains(&gate.shard_of(info.fp))
            {
                let h = self.queues.resume_host(&info.name, now);
                if !self.shard_blocked.contains(&h) {
                    self.queues.unblock(h, now);
                }
            }
        }
        if changes.claimed > 0 {
            self.claims_waiting = true;
        }
        if let Some(c) = changes.counters {
            self.counters = c;
            self.stats.known = c.known;
            self.unacked = Some(changes.unacked);
            self.counters_after = Some(token);
            self.watch_idle(changes.pending_held, now);
        }
        gate.owned_count() as u64
    }

    /// Whether the next shard poll should report every held shard again (see [`IdleWatch`]).
    pub fn take_reread(&mut self) -> bool {
        std::mem::take(&mut self.idle.reread)
    }

    /// After each poll with counters: while this process has nothing to do and the crawl is not over, says every
    /// [`WAITING_LOG_EVERY`] what it waits for; and when its own shards hold pending URLs that no window accounts
    /// for ([`REREAD_AFTER_POLLS`] polls in a row), has them read again.
    fn watch_idle(&mut self, pending_held: u64, now: Instant) {
        let idle = self.idle()
            && self.handing.is_empty()
            && self.counters_after == Some(self.commits_done);
        if !idle || self.finished().is_some() {
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
                pending = self.counters.pending,
                pending_held,
                unacknowledged = self.unacked.unwrap_or(0),
                "nothing to do here; waiting for the rest of the crawl"
            );
        }
    }

    /// Shards a peer should own: their hosts start nothing more, and each is declared quiet (so the store hands it
    /// over) once none of its URLs is leased, staged or being committed here.
    pub(super) fn hand_off(&mut self, gate: &dyn ShardGate) {
        let handoffs = gate.handoffs();
        self.handing.retain(|s| handoffs.contains(s));
        for s in handoffs {
            if self.handing.insert(s) {
                for h in self.queues.hosts_where(|fp| gate.shard_of(fp) == s) {
                    self.detach(h);
                }
                if gate.shard_of(RECORDS_HOST) == s {
                    self.excluded = Window::complete();
                }
            }
            let in_shard = |f: &Finished| gate.shard_of(f.host) == s;
            // Busy while a URL of the shard is out or a change to it (a record, robots.txt rules) is not stored yet.
            let busy = self.leases.any_host(|fp| gate.shard_of(fp) == s)
                || self.staged.finished.iter().any(in_shard)
                || self
                    .staged
                    .robots
                    .iter()
                    .any(|r| gate.shard_of(host_fp(&r.host)) == s)
                || self.in_flight.as_ref().is_some_and(|c| {
                    c.finished.iter().any(in_shard)
                        || c.robots.iter().any(|fp| gate.shard_of(*fp) == s)
                });
            if !busy {
                gate.quiet(s);
            }
        }
    }

    /// A host whose shard this process gives up: nothing of it starts here any more. Its robots.txt and sitemap
    /// jobs are dropped: whoever crawls the host next reads its robots.txt (and the sitemaps named there) itself.
    fn detach(&mut self, h: HostId) {
        for job in self.queues.detach(h) {
            self.forget_urgent(&job);
        }
    }

    fn forget_urgent(&mut self, job: &Entry) {
        if job.kind == JobKind::Robots
            && let Ok(u) = url::Url::parse(&job.url)
        {
            self.robots.forget_pending(&canon::authority_key(&u));
        }
        tracing::debug!(url = %job.url, kind = ?job.kind, "job of a host given up");
    }

    /// True while this process holds a host's shard and is not handing it over (its lease may be about to be
    /// renewed).
    fn holds_host(&self, host: HostId) -> bool {
        self.shards.as_ref().is_some_and(|g| {
            let s = g.shard_of(self.queues.host_fp(host));
            g.owns(s) && !self.handing.contains(&s)
        })
    }

    /// A job the fetcher did not start because its host's shard lease ran out while it waited (in a mailbox,
    /// behind DNS, or in a paused process). Nothing changed in the store. While the shard is still held the job
    /// waits here for the lease to be renewed; once it is not, the URL stays pending in the store for whoever holds
    /// the shard.
    pub(super) fn not_started(&mut self, job: Job, now: Instant) {
        self.queues.release(job.host, now, Feedback::NotStarted);
        self.stats.not_started += 1;
        let held = self.holds_host(job.host);
        tracing::debug!(url = %job.entry.url, held, "request not started: shard lease ran out");
        match job.entry.kind {
            JobKind::Page | JobKind::Embed if held => self.queues.push(job.host, job.entry, now),
            JobKind::Page | JobKind::Embed => self.queues.settle(job.host, job.entry.id),
            JobKind::Robots | JobKind::Sitemap if held => {
                self.hold_urgent(job.host, job.entry, now)
            }
            _ => self.forget_urgent(&job.entry),
        }
    }

    /// An urgent job (robots.txt, sitemap) that may not start now because its host's shard lease ran out: the
    /// host is held, urgent jobs included, until the lease is renewed.
    pub(super) fn hold_urgent(&mut self, host: HostId, entry: Entry, now: Instant) {
        self.queues.hold(host);
        self.queues.push_urgent(host, entry, now);
        self.shard_blocked.insert(host);
    }

    /// True when a job of this host may start now (always, without shards).
    pub(super) fn may_start(&self, host: HostId) -> bool {
        self.shards
            .as_ref()
            .is_none_or(|g| g.may_start(self.queues.host_fp(host)))
    }

    /// Counts a request sent to the store.
    pub fn store_request(&mut self) {
        self.stats.store_requests += 1;
    }

    /// A host was throttled: in a crawl shared by many processes its pause goes to the store with the next commit,
    /// so that whoever crawls its shard next honours it.
    pub(super) fn share_pause(&mut self, host: HostId, now: Instant) {
        if self.shards.is_none() {
            return;
        }
        if let Some(until) = self.queues.paused_until(host).filter(|u| *u > now) {
            let ms = unix_ms(wall(until));
            let name = self.queues.host_name(host).to_owned();
            let level = self.queues.backoff_level(host);
            self.staged.pauses.retain(|(h, _, _)| *h != name);
            self.staged.pauses.push((name, ms, level));
        }
    }

    /// robots.txt rules were obtained here: in a crawl shared by many processes they go to the store with the next
    /// commit, kept with the host's shard until they expire.
    pub(super) fn share_robots(
        &mut self,
        host: HostId,
        authority: &str,
        rules: &crawl_core::robots::Robots,
        now: Instant,
    ) {
        if self.shards.is_none() {
            return;
        }
        let expires_ms = unix_ms(wall(now + self.settings.robots_cache));
        self.staged.robots.retain(|r| r.authority != authority);
        self.staged.robots.push(SharedRobots {
            host: self.queues.host_name(host).to_owned(),
            authority: authority.to_owned(),
            expires_ms,
            snapshot: rules.snapshot(),
        });
    }

    /// robots.txt rules kept with gained shards: obeyed until they expire, as if fetched here (no second fetch of
    /// robots.txt). Their sitemaps are read here too (the previous owner may have gone before it could).
    pub(super) fn take_robots(&mut self, shared: Vec<SharedRobots>, now: Instant) {
        let wall_now = unix_ms(std::time::SystemTime::now());
        for r in shared {
            if r.expires_ms <= wall_now || self.robots.has_rules(&r.authority, now) {
                continue;
            }
            let Some(rules) = crawl_core::robots::Robots::from_snapshot(&r.snapshot) else {
                tracing::warn!(authority = %r.authority, "unreadable robots.txt rules from the store ignored");
                continue;
            };
            let h = self.queues.host_id(&r.host);
            self.queues.set_crawl_delay(h, rules.crawl_delay());
            if self.settings.follow_sitemaps {
                for sm in rules.sitemaps() {
                    self.request_sitemap(sm, 0, now);
                }
            }
            let expires = now + Duration::from_millis(r.expires_ms - wall_now);
            self.robots.set(
                &r.authority,
                RobotsState::Ready {
                    rules: Arc::new(rules),
                    expires,
                },
            );
            self.queues.unblock(h, now);
            tracing::debug!(authority = %r.authority, "robots.txt rules taken over with a shard");
        }
    }

    /// True in a crawl shared by many processes.
    pub fn is_sharded(&self) -> bool {
        self.shards.is_some()
    }

    /// True when this process may keep a URL of this host in a window (always, without shards).
    pub(super) fn owns_host(&self, host: Fp) -> bool {
        self.shards
            .as_ref()
            .is_none_or(|g| g.owns(g.shard_of(host)))
    }
}

/// Polls in a row (one each 200 ms) that find this process idle while its own shards hold pending URLs before it
/// reads those shards again. URLs out in other processes' hands are not in these shards; a moment's gap between a
/// commit and a window refill does not last this long.
const REREAD_AFTER_POLLS: u32 = 10;

/// How often an idle process of a shared crawl says what it waits for.
const WAITING_LOG_EVERY: Duration = Duration::from_secs(10);

/// What [`Crawl::watch_idle`] keeps between polls.
#[derive(Debug, Default)]
pub(super) struct IdleWatch {
    /// Polls in a row that found this process idle with pending URLs in its shards.
    polls: u32,
    /// Read the held shards again at the next poll.
    reread: bool,
    /// Idle since (None: busy at the last poll).
    since: Option<Instant>,
    /// When the waiting line was last logged.
    logged: Option<Instant>,
}

/// Milliseconds since the Unix epoch (0 before it).
fn unix_ms(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
