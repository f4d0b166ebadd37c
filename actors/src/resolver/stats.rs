//! Counters of the resolver, kept for the summary and the metrics issue.

use std::collections::BTreeMap;

/// Lookups by source and outcome, pollution verdicts by rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolverStats {
    /// "source/outcome" -> count, with the labels of `crawl_dns_lookups_total`: source hosts/cache/plain/doh, or
    /// "lookup" for a fresh negative answer; outcome resolved/nxdomain/failed (e.g. "plain/resolved",
    /// "cache/resolved", "lookup/nxdomain", "cache/failed").
    pub lookups: BTreeMap<String, u64>,
    /// Rule name -> network answers judged polluted with that rule among the evidence (an answer served again
    /// from the cache is not counted again).
    pub verdicts: BTreeMap<String, u64>,
    /// Network answers judged polluted, each once whatever the number of rules that fired.
    pub polluted: u64,
    /// Queries sent over plain DNS and DoH.
    pub plain_queries: u64,
    pub doh_queries: u64,
    /// Addresses learned by the NXDOMAIN-hijack probe.
    pub hijack_addresses: u64,
}

impl ResolverStats {
    pub fn lookup(&mut self, source: &str, outcome: &str) {
        *self
            .lookups
            .entry(format!("{source}/{outcome}"))
            .or_insert(0) += 1;
    }
}
