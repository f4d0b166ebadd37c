//! The end-of-crawl summary: counts by outcome and reason, bytes, elapsed, pages/s, CPU and memory.

use crawl_actors::protocol::{CrawlSummary, FinishReason, SinkView};
use crawl_actors::tree::{ProxyStats, ResolverStats};
use crawl_observability::usage;
use std::fmt::Write as _;
use std::time::Duration;

/// Everything the summary shows, also written as JSON with --summary-json.
#[derive(Debug, Clone)]
pub struct Summary {
    pub reason: FinishReason,
    pub elapsed: Duration,
    pub crawl: CrawlSummary,
    pub cpu_seconds: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    /// Resident memory when the crawl ended (the queue drained or the crawl stopped).
    pub end_rss_bytes: Option<u64>,
    pub output: String,
    /// The frontier's directory (named in the advice of a crawl found already complete).
    pub data_dir: String,
    /// Resolver counters (lookups by source/outcome, pollution verdicts by rule).
    pub dns: ResolverStats,
    /// Proxy-chain counters (connects, faults, breaker per chain), when chains are configured.
    pub proxy: Option<ProxyStats>,
    /// The `[[sinks]]` at the end.
    pub sinks: Vec<SinkView>,
    /// Sinks still behind once `output.sink_finish_s` ran out (their checkpoints keep the rest).
    pub sinks_behind: Vec<SinkView>,
    /// How long the sinks took to deliver the rest once the crawl had ended (part of `elapsed`).
    pub sinks_finish: Duration,
}

impl Summary {
    pub fn new(crawl: CrawlSummary, elapsed: Duration, output: String) -> Summary {
        Summary {
            reason: crawl.reason.clone(),
            elapsed,
            crawl,
            cpu_seconds: usage::cpu_seconds(),
            peak_rss_bytes: usage::peak_rss_bytes(),
            end_rss_bytes: usage::rss_bytes(),
            output,
            data_dir: String::new(),
            dns: Default::default(),
            proxy: None,
            sinks: Vec::new(),
            sinks_behind: Vec::new(),
            sinks_finish: Duration::ZERO,
        }
    }

    /// Page requests answered per second of wall time.
    pub fn pages_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.crawl.stats.fetched as f64 / secs
        } else {
            0.0
        }
    }

    fn reason_text(&self) -> String {
        match &self.reason {
            FinishReason::Completed => "completed (frontier empty)".into(),
            FinishReason::LimitReached => "max_pages reached".into(),
            FinishReason::Shutdown => "stopped by signal".into(),
            FinishReason::Fatal(e) => format!("fatal: {e}"),
        }
    }

    /// The human-readable summary.
    pub fn render(&self) -> String {
        let s = &self.crawl.stats;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "crawl {} in {:.1}s",
            self.reason_text(),
            self.elapsed.as_secs_f64()
        );
        let by_status = s
            .by_status
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(out, "{}", count_line("fetched", s.fetched, &by_status));
        let reasons = |outcome: crawl_core::record::Outcome| {
            s.by_reason
                .iter()
                .filter(|(k, _)| reason_outcome(k) == Some(outcome))
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let failed = reasons(crawl_core::record::Outcome::Failed);
        let _ = writeln!(out, "{}", count_line("failed", s.failed, &failed));
        let excluded = reasons(crawl_core::record::Outcome::Excluded);
        let _ = writeln!(out, "{}", count_line("excluded", s.excluded, &excluded));
        let _ = writeln!(out, "  queued    {:>8}  (left for a later run)", s.queued);
        let _ = writeln!(
            out,
            "  all runs  {:>8}  done of {} known ({} pages fetched)",
            s.total_done, s.known, s.total_fetched
        );
        let _ = writeln!(
            out,
            "  bytes     {:>8.1} MiB",
            s.bytes as f64 / (1024.0 * 1024.0)
        );
        let _ = writeln!(out, "  pages/s   {:>8.1}", self.pages_per_sec());
        let _ = writeln!(
            out,
            "  retries {}, panics {}, restarts {}, robots.txt {}, sitemaps {}, resumed {}",
            s.retries, s.panics, s.restarts, s.robots_fetches, s.sitemap_fetches, s.resumed
        );
        if let (Some(cpu), Some(rss)) = (self.cpu_seconds, self.peak_rss_bytes) {
            let per_k = if s.fetched > 0 {
                cpu * 1000.0 / s.fetched as f64
            } else {
                0.0
            };
            let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
            let end = self
                .end_rss_bytes
                .map(|b| format!(", {:.1} MiB at the end", mib(b)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  cpu       {cpu:>8.2} s  ({per_k:.3} s per 1000 pages), peak rss {:.1} MiB{end}",
                mib(rss)
            );
        }
        if !self.dns.lookups.is_empty() {
            let join = |m: &std::collections::BTreeMap<String, u64>| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let verdicts = join(&self.dns.verdicts);
            let _ = writeln!(
                out,
                "  dns       {}; polluted: {}",
                join(&self.dns.lookups),
                if verdicts.is_empty() {
                    "none"
                } else {
                    verdicts.as_str()
                }
            );
        }
        if let Some(p) = &self.proxy {
            for (name, c) in p.chains() {
                let faults = c
                    .counters
                    .faults
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let _ = writeln!(
                    out,
                    "  proxy     {name}: {} connects, breaker {}, faults: {}",
                    c.counters.connects,
                    c.counters.breaker,
                    if faults.is_empty() {
                        "none"
                    } else {
                        faults.as_str()
                    }
                );
            }
        }
        for v in &self.sinks {
            let _ = writeln!(
                out,
                "  sink      {} ({}): {} delivered, {} bytes, {} skipped, {} behind{}",
                v.name,
                v.kind,
                v.delivered,
                v.bytes,
                v.skipped,
                v.lag_records,
                v.last_error
                    .as_deref()
                    .map(|e| format!("; last error: {e}"))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out, "  output    {}", self.output);
        for line in self.advice() {
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// The error a run ends with when sinks are still behind at its end (exit status 1): what each lacks.
    pub fn sinks_error(&self) -> Option<String> {
        if self.sinks_behind.is_empty() {
            return None;
        }
        let behind: Vec<String> = self
            .sinks_behind
            .iter()
            .map(|v| {
                let unit = if v.kind == "object_store" {
                    "files"
                } else {
                    "records"
                };
                format!(
                    "sink `{}` has {} {unit} ({} bytes) not delivered{}",
                    v.name,
                    v.lag_records,
                    v.lag_bytes,
                    v.last_error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                )
            })
            .collect();
        Some(format!(
            "{}; they are kept, and the same command delivers them",
            behind.join("; ")
        ))
    }

    /// Words for a run that did nothing useful: a crawl that was complete before it started, or one whose every
    /// URL was excluded.
    pub fn advice(&self) -> Vec<String> {
        let s = &self.crawl.stats;
        let mut out = Vec::new();
        let this_run = s.fetched + s.failed + s.excluded;
        if self.reason == FinishReason::Completed && this_run == 0 && s.total_done > 0 {
            out.push(format!(
                "the crawl was already complete: all {} URLs known in {} are done and recorded in {}. To start \
                 over, run with --fresh (it moves the data_dir, the JSONL and the WARC folder aside), or point \
                 frontier.data_dir, output.jsonl and output.warc_dir at new paths; to add URLs, run with new \
                 --seed URLs.",
                s.known, self.data_dir, self.output
            ));
        } else if s.fetched == 0 && s.failed == 0 && s.excluded > 0 {
            let private = s.by_reason.get("private_network").copied().unwrap_or(0);
            if private > 0 {
                out.push(format!(
                    "nothing was fetched: {private} URLs are on private or loopback addresses, which \
                     security.allow_private_networks = false excludes; list their blocks in security.allow_cidrs \
                     or set it to true to crawl them."
                ));
            } else {
                out.push(
                    "nothing was fetched: every URL was excluded (see the reasons above: crawl.include, \
                     crawl.exclude, max_depth and robots.txt decide what is crawled)."
                        .to_owned(),
                );
            }
        }
        out
    }

    /// The summary as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let s = &self.crawl.stats;
        serde_json::json!({
            "reason": match &self.reason { FinishReason::Completed => "completed", FinishReason::LimitReached => "limit", FinishReason::Shutdown => "shutdown", FinishReason::Fatal(_) => "fatal" },
            "elapsed_s": self.elapsed.as_secs_f64(),
            "fetched": s.fetched, "failed": s.failed, "excluded": s.excluded, "queued": s.queued,
            "known": s.known, "total_done": s.total_done, "total_fetched": s.total_fetched,
            "advice": self.advice(),
            "bytes": s.bytes, "by_reason": s.by_reason, "by_status": s.by_status,
            "retries": s.retries, "panics": s.panics, "restarts": s.restarts, "resumed": s.resumed,
            "robots_fetches": s.robots_fetches, "sitemap_fetches": s.sitemap_fetches, "commits": s.commits, "store_requests": s.store_requests,
            "pages_per_sec": self.pages_per_sec(),
            "cpu_seconds": self.cpu_seconds, "peak_rss_bytes": self.peak_rss_bytes,
            "end_rss_bytes": self.end_rss_bytes,
            "output": self.output,
            "dns": {
                "lookups": self.dns.lookups, "verdicts": self.dns.verdicts,
                "plain_queries": self.dns.plain_queries, "doh_queries": self.dns.doh_queries,
                "hijack_addresses": self.dns.hijack_addresses,
            },
            "sinks": self.sinks.iter().map(|v| serde_json::json!({
                "name": v.name, "kind": v.kind, "delivered": v.delivered, "bytes": v.bytes,
                "skipped": v.skipped, "lag_records": v.lag_records, "lag_bytes": v.lag_bytes,
                "last_error": v.last_error,
            })).collect::<Vec<_>>(),
            "sinks_finish_s": self.sinks_finish.as_secs_f64(),
        })
    }
}

fn reason_outcome(name: &str) -> Option<crawl_core::record::Outcome> {
    crawl_core::record::Reason::from_name(name).map(crawl_core::record::Reason::outcome)
}

/// One count of the summary, with its breakdown in parentheses when there is one (`failed 0`, not `failed 0 ()`).
fn count_line(label: &str, n: u64, detail: &str) -> String {
    let head = format!("  {label:<9} {n:>8}");
    if detail.is_empty() {
        head
    } else {
        format!("{head}  ({detail})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_actors::protocol::Stats;

    fn summary(reason: FinishReason, stats: Stats) -> Summary {
        let crawl = CrawlSummary {
            reason,
            stats,
            supervisor: Default::default(),
        };
        let mut s = Summary::new(crawl, Duration::from_secs(1), "out.jsonl".into());
        s.data_dir = "data".into();
        s
    }

    #[test]
    fn a_crawl_complete_before_the_run_says_so_and_how_to_start_over() {
        let stats = Stats {
            known: 120,
            total_done: 120,
            total_fetched: 100,
            ..Stats::default()
        };
        let text = summary(FinishReason::Completed, stats.clone()).render();
        assert!(
            text.contains("all runs       120  done of 120 known (100 pages fetched)"),
            "{text}"
        );
        assert!(
            text.contains("the crawl was already complete: all 120 URLs known in data are done"),
            "{text}"
        );
        assert!(text.contains("run with --fresh"), "{text}");
        // Stopped by a signal before anything happened: not complete.
        assert!(summary(FinishReason::Shutdown, stats).advice().is_empty());
    }

    #[test]
    fn a_run_whose_every_url_was_excluded_names_the_key() {
        let mut stats = Stats {
            excluded: 3,
            known: 3,
            total_done: 3,
            ..Stats::default()
        };
        stats.by_reason.insert("private_network", 3);
        let advice = summary(FinishReason::Completed, stats.clone()).advice();
        assert_eq!(advice.len(), 1);
        assert!(
            advice[0].contains("security.allow_private_networks = false"),
            "{advice:?}"
        );
        stats.by_reason.clear();
        stats.by_reason.insert("robots", 3);
        let advice = summary(FinishReason::Completed, stats.clone()).advice();
        assert!(
            advice[0].starts_with("nothing was fetched: every URL was excluded"),
            "{advice:?}"
        );
        stats.fetched = 1;
        assert!(summary(FinishReason::Completed, stats).advice().is_empty());
    }

    #[test]
    fn a_count_shows_its_breakdown_only_when_it_has_one() {
        assert_eq!(count_line("failed", 0, ""), "  failed           0");
        assert_eq!(
            count_line("excluded", 6000, "robots 6000"),
            "  excluded      6000  (robots 6000)"
        );
        assert_eq!(
            count_line("fetched", 12, "2xx 12"),
            "  fetched         12  (2xx 12)"
        );
    }
}
