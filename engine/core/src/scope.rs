//! Crawl scope: decides whether a discovered URL belongs to the crawl.
//!
//! A [`ScopePolicy`] combines a scope mode (same host, same registrable domain, or anything),
//! include/exclude regular expressions matched against the full URL string, and a maximum link
//! depth, and the per-URL [trap rules](crate::traps::TrapRules). Registrable domains (eTLD+1) come from the public
//! suffix list via `psl`.

use foldhash::quality::RandomState;
use std::collections::HashSet;
use std::net::IpAddr;

use regex::Regex;
use url::Url;

use crate::record::Reason;
use crate::traps::TrapRules;

/// Which hosts count as in scope, relative to the seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeMode {
    /// Only the exact hosts of the seeds.
    Host,
    /// Any host under the registrable domain (eTLD+1) of a seed.
    Domain,
    /// Every host.
    Any,
}

/// The result of [`ScopePolicy::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeVerdict {
    /// Crawl it.
    InScope,
    /// The host is outside the seeds' hosts or domains.
    OutOfScope,
    /// Rejected by an exclude pattern, or no include pattern matched.
    Filtered,
    /// Deeper than the maximum depth.
    TooDeep,
    /// Cut by a trap rule, with its reason (`long_url`, `repeated_path`, `calendar`).
    Trap(Reason),
}

impl ScopeVerdict {
    /// The exclusion reason of a verdict other than [`ScopeVerdict::InScope`].
    pub fn reason(self) -> Option<Reason> {
        match self {
            ScopeVerdict::InScope => None,
            ScopeVerdict::OutOfScope => Some(Reason::Scope),
            ScopeVerdict::Filtered => Some(Reason::Filter),
            ScopeVerdict::TooDeep => Some(Reason::Depth),
            ScopeVerdict::Trap(r) => Some(r),
        }
    }
}

/// Scope rules for one crawl.
#[derive(Debug, Clone)]
pub struct ScopePolicy {
    mode: ScopeMode,
    hosts: HashSet<String, RandomState>,
    domains: HashSet<String, RandomState>,
    include: Vec<Regex>,
    exclude: Vec<Regex>,
    max_depth: u32,
    traps: TrapRules,
}

impl ScopePolicy {
    /// Builds a policy from the seeds and filters.
    pub fn new(
        mode: ScopeMode,
        seeds: &[Url],
        include: Vec<Regex>,
        exclude: Vec<Regex>,
        max_depth: u32,
    ) -> Self {
        let mut policy = ScopePolicy {
            mode,
            hosts: HashSet::default(),
            domains: HashSet::default(),
            include,
            exclude,
            max_depth,
            traps: TrapRules::off(),
        };
        for seed in seeds {
            policy.add_seed(seed);
        }
        policy
    }

    /// The same policy, with `traps` cutting links (seeds are never cut).
    pub fn with_traps(mut self, traps: TrapRules) -> Self {
        self.traps = traps;
        self
    }

    /// The trap rules (also the session parameters to strip).
    pub fn traps(&self) -> &TrapRules {
        &self.traps
    }

    /// Adds a seed's host and registrable domain to the scope.
    pub fn add_seed(&mut self, seed: &Url) {
        let Some(host) = seed.host_str().map(normalize_host) else {
            return;
        };
        if host.is_empty() {
            return;
        }
        self.domains.insert(domain_or_host(&host));
        self.hosts.insert(host);
    }

    /// Checks `url` found at link depth `depth` (seeds are depth 0).
    ///
    /// Order: depth, then host/domain scope, then exclude/include patterns, then the trap rules (links only: a
    /// seed at depth 0 is never cut by them).
    pub fn check(&self, url: &Url, depth: u32) -> ScopeVerdict {
        let path_and_query = &url[url::Position::BeforePath..url::Position::AfterQuery];
        self.check_parts(url.as_str(), url.host_str(), path_and_query, depth)
    }

    /// [`check`](Self::check) of a URL string and its parts, as [`crate::urlparts::split`] gave them (links arrive as
    /// canonical strings: no parse for them).
    pub fn check_split(
        &self,
        url: &str,
        parts: &crate::urlparts::UrlParts<'_>,
        depth: u32,
    ) -> ScopeVerdict {
        self.check_parts(url, Some(parts.host), parts.path_and_query, depth)
    }

    fn check_parts(
        &self,
        url: &str,
        host: Option<&str>,
        path_and_query: &str,
        depth: u32,
    ) -> ScopeVerdict {
        if depth > self.max_depth {
            return ScopeVerdict::TooDeep;
        }
        if !self.host_allowed(host) {
            return ScopeVerdict::OutOfScope;
        }
        if self.exclude.iter().any(|re| re.is_match(url)) {
            return ScopeVerdict::Filtered;
        }
        if !self.include.is_empty() && !self.include.iter().any(|re| re.is_match(url)) {
            return ScopeVerdict::Filtered;
        }
        if depth > 0
            && let Some(reason) = self.traps.check_parts(path_and_query)
        {
            return ScopeVerdict::Trap(reason);
        }
        ScopeVerdict::InScope
    }

    /// Whether `url`'s host is within the scope mode (patterns and depth aside), e.g. for a sitemap robots.txt
    /// names.
    pub fn host_in_scope(&self, url: &Url) -> bool {
        self.host_allowed(url.host_str())
    }

    fn host_allowed(&self, host: Option<&str>) -> bool {
        match self.mode {
            ScopeMode::Any => true,
            ScopeMode::Host | ScopeMode::Domain => {
                let Some(host) = host else {
                    return false;
                };
                // A parsed URL's host is already lowercase without a trailing dot nearly always: no copy then.
                let host = if host.ends_with('.') || host.bytes().any(|b| b.is_ascii_uppercase()) {
                    std::borrow::Cow::Owned(normalize_host(host))
                } else {
                    std::borrow::Cow::Borrowed(host)
                };
                if self.mode == ScopeMode::Host {
                    self.hosts.contains(host.as_ref())
                } else {
                    self.domains.contains(&domain_or_host(&host))
                }
            }
        }
    }
}

/// The registrable domain (eTLD+1) of `host`, via the public suffix list.
///
/// IP literals (with or without IPv6 brackets) and single-label hosts return the host itself.
/// A host that is itself a public suffix (`co.uk`) returns `None`.
pub fn registrable_domain(host: &str) -> Option<String> {
    let host = normalize_host(host);
    if host.is_empty() {
        return None;
    }
    let unbracketed = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(&host);
    if unbracketed.parse::<IpAddr>().is_ok() || !host.contains('.') {
        return Some(host);
    }
    psl::domain_str(&host).map(str::to_string)
}

/// The registrable domain, or the host itself when it has none (public suffix hosts).
fn domain_or_host(host: &str) -> String {
    registrable_domain(host).unwrap_or_else(|| host.to_string())
}

fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize as _;
    use serde::de::IntoDeserializer;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn policy(mode: ScopeMode, seeds: &[&str]) -> ScopePolicy {
        let seeds: Vec<Url> = seeds.iter().map(|s| u(s)).collect();
        ScopePolicy::new(mode, &seeds, vec![], vec![], 5)
    }

    #[test]
    fn registrable_domains() {
        assert_eq!(
            registrable_domain("www.example.com").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            registrable_domain("a.b.example.co.uk").as_deref(),
            Some("example.co.uk")
        );
        assert_eq!(
            registrable_domain("example.co.uk").as_deref(),
            Some("example.co.uk")
        );
        assert_eq!(registrable_domain("co.uk"), None);
        assert_eq!(registrable_domain("uk"), Some("uk".to_string()));
        assert_eq!(
            registrable_domain("localhost").as_deref(),
            Some("localhost")
        );
        assert_eq!(
            registrable_domain("127.0.0.1").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(registrable_domain("[::1]").as_deref(), Some("[::1]"));
        assert_eq!(registrable_domain("::1").as_deref(), Some("::1"));
        assert_eq!(
            registrable_domain("WWW.Example.COM.").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            registrable_domain("xn--bcher-kva.de").as_deref(),
            Some("xn--bcher-kva.de")
        );
        assert_eq!(registrable_domain(""), None);
    }

    #[test]
    fn host_mode_exact_hosts_only() {
        let p = policy(
            ScopeMode::Host,
            &["http://www.a.com/start", "https://b.org/"],
        );
        assert_eq!(p.check(&u("https://www.a.com/x"), 1), ScopeVerdict::InScope);
        assert_eq!(p.check(&u("http://b.org:8080/"), 1), ScopeVerdict::InScope);
        assert_eq!(p.check(&u("http://a.com/"), 1), ScopeVerdict::OutOfScope);
        assert_eq!(
            p.check(&u("http://blog.a.com/"), 1),
            ScopeVerdict::OutOfScope
        );
        assert_eq!(p.check(&u("http://c.net/"), 0), ScopeVerdict::OutOfScope);
        // A host written with the root's trailing dot is the same host.
        assert_eq!(
            p.check(&u("https://www.a.com./x"), 1),
            ScopeVerdict::InScope
        );
        assert_eq!(p.check(&u("http://a.com./"), 1), ScopeVerdict::OutOfScope);
    }

    #[test]
    fn domain_mode_includes_subdomains() {
        let p = policy(
            ScopeMode::Domain,
            &["http://www.a.com/", "http://shop.example.co.uk/"],
        );
        assert_eq!(p.check(&u("http://a.com/"), 1), ScopeVerdict::InScope);
        assert_eq!(
            p.check(&u("http://deep.blog.a.com/"), 1),
            ScopeVerdict::InScope
        );
        assert_eq!(
            p.check(&u("http://example.co.uk/"), 1),
            ScopeVerdict::InScope
        );
        assert_eq!(
            p.check(&u("http://other.co.uk/"), 1),
            ScopeVerdict::OutOfScope
        );
        assert_eq!(
            p.check(&u("http://a.com.evil.net/"), 1),
            ScopeVerdict::OutOfScope
        );
        assert_eq!(p.check(&u("http://nota.com/"), 1), ScopeVerdict::OutOfScope);
    }

    #[test]
    fn domain_mode_public_suffix_and_ip_seeds() {
        let p = policy(
            ScopeMode::Domain,
            &["http://github.io/", "http://10.0.0.1:8080/"],
        );
        assert_eq!(p.check(&u("http://github.io/x"), 0), ScopeVerdict::InScope);
        assert_eq!(
            p.check(&u("http://someone.github.io/"), 1),
            ScopeVerdict::OutOfScope
        );
        assert_eq!(p.check(&u("http://10.0.0.1/"), 1), ScopeVerdict::InScope);
        assert_eq!(p.check(&u("http://10.0.0.2/"), 1), ScopeVerdict::OutOfScope);
        let p6 = policy(ScopeMode::Domain, &["http://[::1]/"]);
        assert_eq!(p6.check(&u("http://[::1]:81/"), 1), ScopeVerdict::InScope);
        assert_eq!(p6.check(&u("http://[::2]/"), 1), ScopeVerdict::OutOfScope);
    }

    #[test]
    fn any_mode_and_add_seed() {
        let p = policy(ScopeMode::Any, &[]);
        assert_eq!(
            p.check(&u("http://whatever.example/"), 3),
            ScopeVerdict::InScope
        );
        let mut p = policy(ScopeMode::Host, &[]);
        assert_eq!(p.check(&u("http://a.com/"), 0), ScopeVerdict::OutOfScope);
        p.add_seed(&u("http://a.com/"));
        assert_eq!(p.check(&u("http://a.com/x"), 0), ScopeVerdict::InScope);
    }

    #[test]
    fn depth_then_scope_then_filters() {
        let seeds = [u("http://a.com/")];
        let p = ScopePolicy::new(
            ScopeMode::Host,
            &seeds,
            vec![Regex::new(r"^https?://a\.com/(docs|blog)/").unwrap()],
            vec![
                Regex::new(r"\.pdf$").unwrap(),
                Regex::new(r"[?&]sessionid=").unwrap(),
            ],
            2,
        );
        assert_eq!(p.check(&u("http://a.com/docs/x"), 2), ScopeVerdict::InScope);
        assert_eq!(p.check(&u("http://a.com/docs/x"), 3), ScopeVerdict::TooDeep);
        assert_eq!(p.check(&u("http://b.com/docs/x"), 3), ScopeVerdict::TooDeep);
        assert_eq!(
            p.check(&u("http://b.com/docs/x"), 1),
            ScopeVerdict::OutOfScope
        );
        assert_eq!(
            p.check(&u("http://a.com/docs/x.pdf"), 1),
            ScopeVerdict::Filtered
        );
        assert_eq!(
            p.check(&u("http://a.com/blog/?sessionid=1"), 1),
            ScopeVerdict::Filtered
        );
        assert_eq!(p.check(&u("http://a.com/shop/"), 1), ScopeVerdict::Filtered);
    }

    #[test]
    fn exclude_only_filters() {
        let seeds = [u("http://a.com/")];
        let p = ScopePolicy::new(
            ScopeMode::Domain,
            &seeds,
            vec![],
            vec![Regex::new("/private/").unwrap()],
            10,
        );
        assert_eq!(
            p.check(&u("http://x.a.com/public/"), 0),
            ScopeVerdict::InScope
        );
        assert_eq!(
            p.check(&u("http://x.a.com/private/"), 0),
            ScopeVerdict::Filtered
        );
    }

    #[test]
    fn traps_after_filters_and_never_for_seeds() {
        let seeds = [u("http://a.com/")];
        let p = ScopePolicy::new(
            ScopeMode::Host,
            &seeds,
            vec![],
            vec![Regex::new("/private/").unwrap()],
            10,
        )
        .with_traps(TrapRules::new(&crate::traps::TrapsConfig::default(), 2026));
        let loop_url = u("http://a.com/x/x/x/x");
        assert_eq!(
            p.check(&loop_url, 1),
            ScopeVerdict::Trap(Reason::RepeatedPath)
        );
        assert_eq!(p.check(&loop_url, 0), ScopeVerdict::InScope);
        assert_eq!(
            p.check(&u("http://b.com/x/x/x/x"), 1),
            ScopeVerdict::OutOfScope
        );
        assert_eq!(
            p.check(&u("http://a.com/private/x/x/x/x"), 1),
            ScopeVerdict::Filtered
        );
        assert_eq!(p.check(&loop_url, 11), ScopeVerdict::TooDeep);
        assert_eq!(
            p.check(&u("http://a.com/cal/2099/1/"), 2),
            ScopeVerdict::Trap(Reason::Calendar)
        );
        assert_eq!(p.check(&loop_url, 1).reason(), Some(Reason::RepeatedPath));
        assert_eq!(ScopeVerdict::TooDeep.reason(), Some(Reason::Depth));
        assert_eq!(ScopeVerdict::InScope.reason(), None);
        // Without trap rules nothing is cut.
        let plain = policy(ScopeMode::Host, &["http://a.com/"]);
        assert_eq!(plain.check(&loop_url, 1), ScopeVerdict::InScope);
    }

    #[test]
    fn a_split_url_string_gets_the_verdict_of_its_parsed_url() {
        let seeds = [u("http://a.com/"), u("http://127.0.0.30:8080/")];
        let config = crate::config::TrapsConfig {
            max_query_params: 2,
            ..Default::default()
        };
        let traps = TrapRules::new(&config, 2026);
        let policies = [ScopeMode::Host, ScopeMode::Domain, ScopeMode::Any].map(|mode| {
            ScopePolicy::new(
                mode,
                &seeds,
                vec![],
                vec![Regex::new("/private/").unwrap()],
                3,
            )
            .with_traps(traps.clone())
        });
        // Every one of these is in the form `split` takes (the others are parsed by the caller).
        for url in [
            "http://a.com/",
            "http://a.com/x/x/x/x",
            "http://a.com/cal/2099/1/",
            "http://a.com/p?date=2099-01-01",
            "http://a.com/p?a=1&b=2&c=3",
            "http://a.com/p?",
            "http://a.com/private/p",
            "http://www.a.com/p",
            "http://b.com/p",
            "http://127.0.0.30:8080/p/1",
            "http://127.0.0.30/p",
            "http://a.com/p#x/x/x/x",
            "http://a.com/%41/x",
        ] {
            let parts = crate::urlparts::split(url).expect("a plain canonical url");
            for p in &policies {
                for depth in [0, 1, 4] {
                    assert_eq!(
                        p.check_split(url, &parts, depth),
                        p.check(&u(url), depth),
                        "{url} at depth {depth}"
                    );
                }
            }
        }
    }

    #[test]
    fn scope_mode_deserializes_lowercase() {
        let de = |s: &'static str| {
            ScopeMode::deserialize(
                IntoDeserializer::<serde::de::value::Error>::into_deserializer(s),
            )
        };
        assert_eq!(de("host").unwrap(), ScopeMode::Host);
        assert_eq!(de("domain").unwrap(), ScopeMode::Domain);
        assert_eq!(de("any").unwrap(), ScopeMode::Any);
        assert!(de("Host").is_err());
        assert!(de("subdomain").is_err());
    }
}
