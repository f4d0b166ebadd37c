//! The scheduler's handling of robots.txt and sitemap jobs: rules, allow-all, unavailable with retries and giving up
//! (with the DNS or proxy reason when that is why), crawl-delay, and reading sitemaps and sitemap indexes.

use super::*;
use crawl_core::backoff::Backoff;

impl Crawl {
    pub(super) fn on_robots(
        &mut self,
        job: Job,
        result: JobResult,
        done: &mut JobCtx,
        now: Instant,
    ) {
        let host = job.host;
        self.queues.release(host, now, Feedback::Ok);
        let authority = match url::Url::parse(&job.entry.url) {
            Ok(u) => canon::authority_key(&u),
            Err(_) => return,
        };
        self.stats.robots_fetches += 1;
        // Why the host's pages fail if robots.txt never comes: a name that never resolved is a DNS failure, a host no
        // proxy chain could reach is a proxy failure.
        let dns = done.dns.take();
        let give_up_reason = match &result {
            JobResult::FetchFailed {
                reason: r @ (Reason::Dns | Reason::DnsPolluted | Reason::Proxy),
                ..
            } => *r,
            _ => Reason::RobotsUnavailable,
        };
        let outcome = match result {
            JobResult::Robots(o) => o,
            JobResult::FetchFailed {
                reason: Reason::PrivateNetwork,
                ..
            } => {
                // Pages on this host will each be recorded as private_network without any connection.
                RobotsOutcome::AllowAll { status: 0 }
            }
            JobResult::FetchFailed {
                reason: Reason::Dns,
                retryable: false,
                ..
            } => {
                // NXDOMAIN: no server, no rules to break. Each page is then recorded failed/dns (from the cache).
                RobotsOutcome::AllowAll { status: 0 }
            }
            JobResult::FetchFailed { detail, .. } => RobotsOutcome::Unavailable { detail },
            other => RobotsOutcome::Unavailable {
                detail: format!("unexpected robots result {other:?}"),
            },
        };
        let result = match &outcome {
            RobotsOutcome::Rules(_) => "rules",
            RobotsOutcome::AllowAll { .. } => "allow_all",
            RobotsOutcome::Unavailable { .. } => "unavailable",
        };
        metrics().robots_fetch(result);
        if let Some(t) = &mut done.trace {
            t.set_attributes(&[Attr::new("robots.result", result)]);
        }
        match outcome {
            RobotsOutcome::Rules(rules) => {
                tracing::debug!(authority, rules = rules.rule_count(), "robots.txt loaded");
                self.share_robots(host, &authority, &rules, now);
                self.queues.set_crawl_delay(host, rules.crawl_delay());
                if self.settings.follow_sitemaps {
                    for sm in rules.sitemaps() {
                        self.request_sitemap(sm, 0, now);
                    }
                }
                self.robots.set(
                    &authority,
                    RobotsState::Ready {
                        rules,
                        expires: now + self.settings.robots_cache,
                    },
                );
                self.queues.unblock(host, now);
            }
            RobotsOutcome::AllowAll { status } => {
                tracing::debug!(authority, status, "robots.txt absent: allow all");
                let rules = Arc::new(crawl_core::robots::Robots::allow_all());
                self.share_robots(host, &authority, &rules, now);
                self.robots.set(
                    &authority,
                    RobotsState::Ready {
                        rules,
                        expires: now + self.settings.robots_cache,
                    },
                );
                self.queues.unblock(host, now);
            }
            RobotsOutcome::Unavailable { detail } => {
                let attempts = self.robots.failed(&authority);
                if attempts >= self.settings.robots_max_attempts {
                    tracing::warn!(
                        authority,
                        attempts,
                        detail,
                        "robots.txt unavailable; giving up on its urls"
                    );
                    self.robots.set(
                        &authority,
                        RobotsState::GaveUp {
                            reason: give_up_reason,
                            dns,
                            detail: format!(
                                "robots.txt unavailable after {attempts} attempts: {detail}"
                            ),
                        },
                    );
                    self.queues.unblock(host, now);
                } else {
                    let wait = Backoff::uncapped(self.settings.robots_retry).delay(attempts - 1);
                    tracing::info!(
                        authority,
                        attempts,
                        detail,
                        wait_ms = wait.as_millis() as u64,
                        "robots.txt unavailable; urls wait"
                    );
                    self.queues.pause_until(host, now + wait);
                    let mut entry = job.entry;
                    entry.retries += 1;
                    self.queues.push_urgent(host, entry, now);
                }
            }
        }
    }

    pub(super) fn request_sitemap(&mut self, sitemap: &str, depth: u32, now: Instant) {
        let Ok(u) = canon::canonicalize(sitemap) else {
            return;
        };
        if !self.sitemaps_seen.insert(u.as_str().to_owned()) {
            return;
        }
        if !self.scope.host_in_scope(&u) {
            self.stats.sitemaps_out_of_scope += 1;
            tracing::info!(
                sitemap = %redact_url(u.as_str()),
                reason = "host out of scope",
                "sitemap not fetched"
            );
            return;
        }
        let mut entry = Entry::page(u.as_str(), depth, None);
        entry.kind = JobKind::Sitemap;
        let host = self.queues.host_id(canon::host_key(&u));
        self.queues.push_urgent(host, entry, now);
    }

    pub(super) fn on_sitemap(&mut self, job: Job, result: JobResult, now: Instant) {
        self.queues.release(job.host, now, Feedback::Ok);
        self.stats.sitemap_fetches += 1;
        match result {
            JobResult::Sitemap(SitemapOutcome {
                pages,
                sitemaps,
                error,
            }) => {
                if let Some(e) = error {
                    metrics().parse_failure("sitemap");
                    tracing::info!(sitemap = %job.entry.url, error = %e, "sitemap unusable");
                }
                for link in pages {
                    self.admit(link, 1, Some(&job.entry), Vec::new());
                }
                if job.entry.depth < self.settings.sitemap_max_depth {
                    for sm in &sitemaps {
                        self.request_sitemap(sm, job.entry.depth + 1, now);
                    }
                }
            }
            JobResult::FetchFailed { detail, .. } => {
                tracing::info!(sitemap = %job.entry.url, error = %detail, "sitemap fetch failed");
            }
            other => tracing::info!(sitemap = %job.entry.url, result = ?other, "sitemap not read"),
        }
    }
}
