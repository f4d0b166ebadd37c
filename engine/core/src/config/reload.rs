//! Reload planning (docs/OBSERVABILITY.md, "SIGHUP"): which keys differ between the running
//! config and a newly loaded one, and whether the running crawl may take them.
//!
//! Pure: [`plan`] compares two validated [`Config`]s field by field, naming each difference by
//! its dotted key (as written in the file and listed by [`Config::keys`]), and sorts it with
//! [`classify`]. Every section is destructured without `..`, so a field added to a config
//! struct does not compile until it is compared here; a test checks that [`classify`] knows
//! every key.
//!
//! [`ReloadPlan::parts`] groups the live keys that changed by the [`Part`] of the running crawl
//! they feed, so that a reload reapplies only those: a reload that changes the log level alone
//! leaves the resolver (its cache, its hijack probe) and the proxy breakers as they are.

use std::collections::BTreeSet;

use super::{
    ApiConfig, Config, CrawlConfig, FetchConfig, FrontierConfig, ObservabilityConfig, OutputConfig,
    ParserConfig, PolitenessConfig, ProxyConfig, RecrawlConfig, ResolverConfig, SecurityConfig,
    ShutdownConfig, SupervisorConfig, TrapsConfig,
};

/// Whether a running crawl can take a new value of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyClass {
    /// Applied at once by a reload.
    Live,
    /// A change rejects the whole reload; it takes effect after a restart.
    RestartOnly,
}

/// The pseudo-key under which adding the first proxy chain or removing the last one is
/// reported: restart-only, although changes between configured chains are live.
const PROXY_CHAINS: &str = "proxy.chains";

/// A part of the running crawl that a reload reconfigures. Every live key feeds exactly one part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// `crawl.include`, `crawl.exclude`: the scope of the scheduler and the parsers.
    Scope,
    /// `crawl.user_agent`: the HTTP clients and the parsers' robots.txt product token.
    UserAgent,
    /// `politeness.*` and `fetch.concurrency`: the scheduler's politeness policy and how many requests it keeps in
    /// flight.
    Politeness,
    /// `resolver.*`: the resolver actor (a new one clears the DNS cache and runs the hijack probe again).
    Resolver,
    /// `observability.log_level`: the log filter.
    LogLevel,
    /// `observability.sample_ratio`: the trace sampler.
    SampleRatio,
    /// `proxy.*`: the proxy-chain actor.
    Proxy,
    /// `recrawl.*` but `enabled`: the scheduler's revisit policy (intervals, rates, rules, host budget). URLs
    /// already scheduled keep their due time; the new policy applies from their next fetch on.
    Recrawl,
    /// `api.alert_actions`: what alerts posted to the control API may do. Each notification reads them from the
    /// running config, so nothing is rebuilt: the reloaded config in force is all it takes.
    AlertActions,
}

/// Which part each live key feeds, first match wins (patterns as in the classification rules).
const PARTS: &[(&str, Part)] = &[
    ("crawl.include", Part::Scope),
    ("crawl.exclude", Part::Scope),
    ("crawl.user_agent", Part::UserAgent),
    ("politeness.", Part::Politeness),
    ("fetch.concurrency", Part::Politeness),
    ("resolver.", Part::Resolver),
    ("observability.log_level", Part::LogLevel),
    ("observability.sample_ratio", Part::SampleRatio),
    ("proxy.", Part::Proxy),
    ("recrawl.", Part::Recrawl),
    ("api.alert_actions", Part::AlertActions),
];

impl Part {
    /// The part a live key feeds; `None` for a restart-only or unknown key.
    pub fn of(key: &str) -> Option<Part> {
        if classify(key) != Some(KeyClass::Live) {
            return None;
        }
        PARTS
            .iter()
            .find(|(pattern, _)| matches(pattern, key))
            .map(|(_, part)| *part)
    }
}

/// Whether `key` matches a rule pattern: the exact key, or any key of a section written `section.`.
fn matches(pattern: &str, key: &str) -> bool {
    if pattern.ends_with('.') {
        key.len() > pattern.len() && key.starts_with(pattern)
    } else {
        key == pattern
    }
}

/// Classification rules, first match wins: an exact key, or a whole section as `section.`.
const RULES: &[(&str, KeyClass)] = &[
    ("crawl.include", KeyClass::Live),
    ("crawl.exclude", KeyClass::Live),
    ("crawl.user_agent", KeyClass::Live),
    ("crawl.", KeyClass::RestartOnly),
    ("politeness.", KeyClass::Live),
    ("fetch.concurrency", KeyClass::Live),
    ("fetch.", KeyClass::RestartOnly),
    ("frontier.", KeyClass::RestartOnly),
    ("output.", KeyClass::RestartOnly),
    ("security.", KeyClass::RestartOnly),
    ("resolver.", KeyClass::Live),
    ("supervisor.", KeyClass::RestartOnly),
    ("parser.", KeyClass::RestartOnly),
    ("shutdown.", KeyClass::RestartOnly),
    ("observability.log_level", KeyClass::Live),
    ("observability.sample_ratio", KeyClass::Live),
    ("observability.", KeyClass::RestartOnly),
    ("proxy.", KeyClass::Live),
    ("traps.", KeyClass::RestartOnly),
    // Turning continuous crawling on or off changes how the crawl ends and what the stores keep.
    ("recrawl.enabled", KeyClass::RestartOnly),
    ("recrawl.", KeyClass::Live),
    // What alerts may do is read from the running config by each notification.
    ("api.alert_actions", KeyClass::Live),
    // The control API's listener, token and certificate are taken at start.
    ("api.", KeyClass::RestartOnly),
    // Sinks are connected, checkpointed and shipping from the start.
    ("sinks", KeyClass::RestartOnly),
];

/// The class of a dotted key such as `politeness.min_delay_ms`, or `None` outside the known
/// sections.
///
/// `proxy.chains` is [`KeyClass::Live`] here: changing configured chains is live, but [`plan`]
/// reports it as restart-only when the change adds the first chain or removes the last one
/// ([`ProxyConfig::enabled`] flips).
pub fn classify(key: &str) -> Option<KeyClass> {
    RULES
        .iter()
        .find(|(pattern, _)| matches(pattern, key))
        .map(|(_, class)| *class)
}

/// What a reload from one config to another would change.
///
/// Both lists hold dotted key names in [`Config::keys`] order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReloadPlan {
    /// Changed keys that need a restart; any of them rejects the reload.
    pub restart_only: Vec<&'static str>,
    /// Changed keys that the running crawl applies at once.
    pub live: Vec<&'static str>,
}

impl ReloadPlan {
    /// True when no key differs.
    pub fn is_noop(&self) -> bool {
        self.restart_only.is_empty() && self.live.is_empty()
    }

    /// True when a restart-only key changed, so that the reload must be rejected as a whole
    /// (the live changes are not applied either).
    pub fn rejected(&self) -> bool {
        !self.restart_only.is_empty()
    }

    /// The parts of the running crawl fed by the live keys that changed: all a reload has to reapply
    /// (empty when no live key changed).
    pub fn parts(&self) -> BTreeSet<Part> {
        self.live.iter().filter_map(|k| Part::of(k)).collect()
    }

    /// Adds a live key whose value changed outside the config file (the contents of a file it
    /// names), keeping the list in key order and without duplicates.
    pub fn note_live(&mut self, key: &'static str) {
        if self.live.contains(&key) || classify(key) != Some(KeyClass::Live) {
            return;
        }
        self.live.push(key);
        let keys = Config::keys();
        self.live
            .sort_by_key(|k| keys.iter().position(|x| x == k).unwrap_or(usize::MAX));
    }

    /// The changed live keys for the log, comma-separated, or `no change` ([`changed_keys`]).
    pub fn changed(&self) -> String {
        changed_keys(&self.live)
    }

    /// A one-line summary for the log, e.g. `reload rejected: frontier.data_dir,
    /// observability.metrics_listen cannot change while running (restart to apply)`,
    /// `reload applies politeness.min_delay_ms` or `reload: no changes`.
    pub fn message(&self) -> String {
        if self.rejected() {
            format!(
                "reload rejected: {} cannot change while running (restart to apply)",
                self.restart_only.join(", ")
            )
        } else if self.is_noop() {
            "reload: no changes".to_owned()
        } else {
            format!("reload applies {}", self.live.join(", "))
        }
    }
}

/// Changed keys as one log field: comma-separated, or `no change` when there are none.
pub fn changed_keys(keys: &[&str]) -> String {
    if keys.is_empty() {
        "no change".to_owned()
    } else {
        keys.join(",")
    }
}

/// Records `section.key` for every listed field whose values differ (`==`, or the function
/// given after `by`). The struct pattern names every field without `..`, so a field missing
/// from the list is a compile error.
macro_rules! compare {
    ($diff:ident, $section:literal, $ty:ident, $old:expr, $new:expr, {
        $($field:ident => $key:literal $(by $same:path)?),+ $(,)?
    }) => {{
        let (old, new): (&$ty, &$ty) = ($old, $new);
        let $ty { $($field: _),+ } = old;
        $(
            let same = compare!(@same old.$field, new.$field $(, $same)?);
            $diff.record(concat!($section, ".", $key), !same);
        )+
    }};
    (@same $a:expr, $b:expr) => {
        $a == $b
    };
    (@same $a:expr, $b:expr, $same:path) => {
        $same(&$a, &$b)
    };
}

/// Compares two configs key by key and sorts the differences into live and restart-only ones.
pub fn plan(old: &Config, new: &Config) -> ReloadPlan {
    let mut diff = Diff {
        plan: ReloadPlan::default(),
        chains_toggled: old.proxy.enabled() != new.proxy.enabled(),
    };
    // No `..` here or in `compare!`: a new section or field must be listed to compile.
    let Config {
        crawl,
        politeness,
        fetch,
        frontier,
        output,
        security,
        resolver,
        supervisor,
        parser,
        shutdown,
        observability,
        proxy,
        traps,
        recrawl,
        api,
        sinks,
    } = old;
    diff.record("sinks", *sinks != new.sinks);
    compare!(diff, "crawl", CrawlConfig, crawl, &new.crawl, {
        seeds => "seeds",
        max_pages => "max_pages",
        max_depth => "max_depth",
        scope => "scope",
        include => "include" by same_patterns,
        exclude => "exclude" by same_patterns,
        user_agent => "user_agent",
        respect_robots => "respect_robots",
        robots_cache => "robots_cache_s",
        robots_retry => "robots_retry_ms",
        robots_max_attempts => "robots_max_attempts",
        follow_sitemaps => "follow_sitemaps",
        sitemap_max_bytes => "sitemap_max_bytes",
        sitemap_max_depth => "sitemap_max_depth",
        sitemap_max_urls => "sitemap_max_urls",
        embeds => "embeds",
        embeds_scope => "embeds_scope",
    });
    compare!(diff, "traps", TrapsConfig, traps, &new.traps, {
        max_urls_per_host => "max_urls_per_host",
        max_urls_per_pattern => "max_urls_per_pattern",
        max_repeated_segments => "max_repeated_segments",
        max_path_bytes => "max_path_bytes",
        max_query_bytes => "max_query_bytes",
        max_query_params => "max_query_params",
        calendar => "calendar",
        calendar_past_years => "calendar_past_years",
        calendar_future_years => "calendar_future_years",
        strip_params => "strip_params",
    });
    compare!(diff, "recrawl", RecrawlConfig, recrawl, &new.recrawl, {
        enabled => "enabled",
        interval => "interval_s",
        min_interval => "min_interval_s",
        max_interval => "max_interval_s",
        adaptive => "adaptive",
        inc_rate => "inc_rate",
        dec_rate => "dec_rate",
        host_revisits_per_minute => "host_revisits_per_minute",
        rules => "rules",
    });
    compare!(diff, "politeness", PolitenessConfig, politeness, &new.politeness, {
        per_host_concurrency => "per_host_concurrency",
        min_delay => "min_delay_ms",
        honour_crawl_delay => "honour_crawl_delay",
        max_crawl_delay => "max_crawl_delay_ms",
        backoff_base => "backoff_base_ms",
        backoff_max => "backoff_max_ms",
    });
    compare!(diff, "fetch", FetchConfig, fetch, &new.fetch, {
        concurrency => "concurrency",
        fetchers => "fetchers",
        connect_timeout => "connect_timeout_ms",
        header_timeout => "header_timeout_ms",
        idle_timeout => "idle_timeout_ms",
        request_timeout => "request_timeout_ms",
        max_body_bytes => "max_body_bytes",
        max_redirects => "max_redirects",
        http2 => "http2",
        max_retries => "max_retries",
        retry_base => "retry_base_ms",
        pool_idle_timeout => "pool_idle_timeout_ms",
        pool_max_idle_per_host => "pool_max_idle_per_host",
        credentials => "credentials",
    });
    compare!(diff, "frontier", FrontierConfig, frontier, &new.frontier, {
        data_dir => "data_dir",
        commit_interval => "commit_interval_ms",
        commit_max_ops => "commit_max_ops",
        host_window => "host_window",
        backend => "backend",
        redis => "redis",
    });
    compare!(diff, "output", OutputConfig, output, &new.output, {
        jsonl => "jsonl",
        warc_dir => "warc_dir",
        warc_max_bytes => "warc_max_bytes",
        warc_prefix => "warc_prefix",
        warc_dedup => "warc_dedup",
        sink_max_lag => "sink_max_lag",
        sink_max_lag_bytes => "sink_max_lag_bytes",
        sink_finish => "sink_finish_s",
    });
    compare!(diff, "security", SecurityConfig, security, &new.security, {
        allow_private_networks => "allow_private_networks",
        allow_cidrs => "allow_cidrs",
    });
    compare!(diff, "resolver", ResolverConfig, resolver, &new.resolver, {
        nameservers => "nameservers",
        mode => "mode",
        hosts => "hosts",
        bogus_ips => "bogus_ips",
        // The path only: the resolver re-reads the file's contents on every reload.
        bogus_ips_file => "bogus_ips_file",
        hold_on => "hold_on_ms",
        timeout => "timeout_ms",
        attempts => "attempts",
        min_ttl => "min_ttl_s",
        max_ttl => "max_ttl_s",
        negative_ttl => "negative_ttl_s",
        hijack_probe => "hijack_probe",
        doh => "doh",
    });
    compare!(diff, "supervisor", SupervisorConfig, supervisor, &new.supervisor, {
        max_attempts => "max_attempts",
        backoff_base => "backoff_base_ms",
        backoff_max => "backoff_max_ms",
        max_restarts => "max_restarts",
        restart_window => "restart_window_s",
        parse_budget => "parse_budget_ms",
    });
    compare!(diff, "parser", ParserConfig, parser, &new.parser, {
        threads => "threads",
        max_links_per_page => "max_links_per_page",
        inline_max_bytes => "inline_max_bytes",
    });
    compare!(diff, "shutdown", ShutdownConfig, shutdown, &new.shutdown, {
        grace => "grace_ms",
    });
    compare!(diff, "observability", ObservabilityConfig, observability, &new.observability, {
        log_level => "log_level",
        log_format => "log_format",
        progress_interval => "progress_interval_s",
        otlp_endpoint => "otlp_endpoint",
        otlp_protocol => "otlp_protocol",
        otlp_compression => "otlp_compression",
        service_name => "service_name",
        sample_ratio => "sample_ratio",
        metrics_listen => "metrics_listen",
    });
    compare!(diff, "proxy", ProxyConfig, proxy, &new.proxy, {
        default => "default",
        select => "select",
        fallback_direct => "fallback_direct",
        connect_timeout => "connect_timeout_ms",
        greeting_timeout => "greeting_timeout_ms",
        auth_timeout => "auth_timeout_ms",
        connect_reply_timeout => "connect_reply_timeout_ms",
        chain_timeout => "chain_timeout_ms",
        breaker_failures => "breaker_failures",
        breaker_cooldown => "breaker_cooldown_ms",
        chains => "chains",
        rules => "rules",
    });
    compare!(diff, "api", ApiConfig, api, &new.api, {
        listen => "listen",
        token_file => "token_file",
        cert_file => "cert_file",
        key_file => "key_file",
        max_body_bytes => "max_body_bytes",
        alert_actions => "alert_actions",
    });
    diff.plan
}

/// Collects the changed keys of one comparison.
struct Diff {
    plan: ReloadPlan,
    /// The old and new configs differ in whether any proxy chain is configured.
    chains_toggled: bool,
}

impl Diff {
    fn record(&mut self, key: &'static str, changed: bool) {
        if !changed {
            return;
        }
        let class = if key == PROXY_CHAINS && self.chains_toggled {
            Some(KeyClass::RestartOnly)
        } else {
            classify(key)
        };
        match class {
            Some(KeyClass::Live) => self.plan.live.push(key),
            // An unclassified key errs on the safe side.
            Some(KeyClass::RestartOnly) | None => self.plan.restart_only.push(key),
        }
    }
}

/// Regex lists compare by pattern text (as [`CrawlConfig`]'s `PartialEq` does).
fn same_patterns(a: &[regex::Regex], b: &[regex::Regex]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.as_str() == y.as_str())
}
