//! The label values of every counter whose label set is known before the first event. The registry creates their
//! series at zero when it is built, so the first scrape already has them and `rate()`/`increase()` see the first
//! event (a series that appears with value 1 counts as no increase). The lists follow the names the engine uses
//! (`Reason::as_str`, the resolver's answer labels and rules, the proxy's fault kinds); tests in crawl-actors check
//! them against those enums.

/// `(outcome, reason)` of `crawl_records_total`: a fetched page has no reason, every reason has one outcome.
pub const RECORDS: [(&str, &str); 26] = [
    ("fetched", ""),
    ("excluded", "robots"),
    ("failed", "robots_unavailable"),
    ("excluded", "scope"),
    ("excluded", "filter"),
    ("excluded", "depth"),
    ("excluded", "private_network"),
    ("failed", "too_large"),
    ("failed", "timeout"),
    ("failed", "dns"),
    ("failed", "dns_polluted"),
    ("failed", "proxy"),
    ("failed", "tls"),
    ("failed", "connect"),
    ("failed", "protocol"),
    ("failed", "redirect_loop"),
    ("failed", "too_many_redirects"),
    ("failed", "decode"),
    ("failed", "invalid_url"),
    ("failed", "poison"),
    ("excluded", "host_budget"),
    ("excluded", "repeated_path"),
    ("excluded", "long_url"),
    ("excluded", "calendar"),
    ("excluded", "pattern_budget"),
    ("excluded", "operator"),
];

/// `status_class` of `crawl_responses_total`.
pub const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// `reason` of `crawl_fetch_errors_total`: what a fetch without an HTTP answer can end with.
pub const FETCH_ERROR_REASONS: [&str; 10] = [
    "connect",
    "tls",
    "timeout",
    "dns",
    "dns_polluted",
    "proxy",
    "protocol",
    "too_large",
    "private_network",
    "invalid_url",
];

/// `result` of `crawl_robots_fetches_total`.
pub const ROBOTS_RESULTS: [&str; 3] = ["rules", "allow_all", "unavailable"];

/// `kind` of `crawl_parse_failures_total`.
pub const PARSE_FAILURE_KINDS: [&str; 3] = ["decode", "too_large", "sitemap"];

/// `kind` of `crawl_links_dropped_total`: what a page references.
pub const LINK_KINDS: [&str; 2] = ["link", "embed"];

/// `(source, outcome)` of `crawl_dns_lookups_total`: a resolved answer names where it came from; a negative one is
/// `lookup` when it was asked over the network now and `cache` when it was remembered.
pub const DNS_LOOKUPS: [(&str, &str); 8] = [
    ("hosts", "resolved"),
    ("cache", "resolved"),
    ("plain", "resolved"),
    ("doh", "resolved"),
    ("lookup", "nxdomain"),
    ("lookup", "failed"),
    ("cache", "nxdomain"),
    ("cache", "failed"),
];

/// `rule` of `crawl_dns_pollution_rules_total`.
pub const DNS_POLLUTION_RULES: [&str; 5] = [
    "bogus_ip",
    "non_public",
    "injection_race",
    "nxdomain_hijack",
    "cross_check",
];

/// `kind` of `crawl_proxy_faults_total` (for every configured chain).
pub const PROXY_FAULT_KINDS: [&str; 13] = [
    "refused",
    "timeout_connect",
    "timeout_greeting",
    "timeout_auth",
    "timeout_connect_reply",
    "auth_failed",
    "auth_required",
    "general_failure",
    "not_allowed",
    "command_not_supported",
    "addr_type_not_supported",
    "malformed",
    "closed",
];

/// `result` of `crawl_proxy_connects_total`.
pub const PROXY_CONNECT_RESULTS: [&str; 2] = ["ok", "fault"];

/// `actor` of `crawl_actor_restarts_total`: the supervised actors.
pub const ACTORS: [&str; 4] = ["fetcher", "parser", "resolver", "proxy"];

/// `outcome` of `crawl_config_reloads_total`.
pub const CONFIG_RELOAD_OUTCOMES: [&str; 3] = ["success", "invalid", "rejected"];

/// `outcome` of the `crawl_fetch_duration_seconds` histogram: the outcomes a fetch's record can have.
pub const LATENCY_OUTCOMES: [&str; 3] = ["fetched", "failed", "excluded"];

/// `state` of `crawl_frontier_urls`.
pub const FRONTIER_STATES: [&str; 3] = ["queued", "in_flight", "known"];

/// `op` of the store request histogram and `crawl_store_errors_total`.
pub const STORE_OPS: [&str; 3] = ["commit", "next_urls", "poll"];

/// `change` of `crawl_shard_changes_total`.
pub const SHARD_CHANGES: [&str; 2] = ["gained", "lost"];

/// `result` of `crawl_shard_leases_total`.
pub const LEASE_RESULTS: [&str; 2] = ["renewed", "lost"];

/// `changed` of `crawl_revisits_total`.
pub const REVISIT_RESULTS: [&str; 3] = ["true", "false", "unknown"];

/// `anomaly` of `crawl_recrawl_anomalies_total` (`crawl_core::recrawl::Anomaly::as_str`).
pub const RECRAWL_ANOMALIES: [&str; 9] = [
    "not_modified_without_prior",
    "last_modified_unparseable",
    "last_modified_in_future",
    "etag_unstable",
    "conditional_ignored",
    "etag_too_long",
    "lastmod_unparseable",
    "lastmod_in_future",
    "hint_bounded",
];
