//! Link admission: the scope a discovered URL is judged by, and the crawler-trap rules (`[traps]`) the scope's
//! verdict leaves to the scheduler: a discovered URL loses its session and tracking parameters (judged again if it
//! changed), and an in-scope link over its host's URL budget or its URL pattern's budget is excluded with that
//! reason instead of queued. The per-URL rules (long URLs, repeated segments, calendars) are part of the scope's
//! verdict. A config reload may change the scope: queued URLs are then judged again when they come up.

use crate::protocol::FoundLink;
use crawl_core::canon;
use crawl_core::frontier::{Entry, JobKind};
use crawl_core::record::Reason;
use crawl_core::scope::{ScopePolicy, ScopeVerdict};
use crawl_core::traps::Budgets;
use std::sync::Arc;

/// The scope and the URL budgets.
pub(super) struct Admission {
    scope: Arc<ScopePolicy>,
    /// URLs admitted per host and per URL pattern (`traps.max_urls_per_host`, `traps.max_urls_per_pattern`).
    budgets: Budgets,
    /// The scope changed in a reload: queued URLs are judged again when they come up.
    rescope: bool,
}

impl Admission {
    /// Admission by `scope`, with the budgets of its trap rules.
    pub(super) fn new(scope: Arc<ScopePolicy>) -> Admission {
        Admission {
            budgets: Budgets::new(scope.traps().config()),
            scope,
            rescope: false,
        }
    }

    /// A host's URLs pending from an earlier run count against its budget.
    pub(super) fn resume(&mut self, host: &str, pending: u64) {
        self.budgets.resume(host, pending);
    }

    /// A URL given at `depth` (an operator's), as a link found there.
    pub(super) fn link(&self, url: &url::Url, depth: u32) -> FoundLink {
        FoundLink {
            url: url.as_str().to_owned(),
            host: canon::host_key(url).to_owned(),
            verdict: self.scope.check(url, depth),
        }
    }

    /// A seed, as a link at depth 0.
    pub(super) fn seed(&self, url: &url::Url) -> FoundLink {
        FoundLink {
            url: url.as_str().to_owned(),
            host: canon::host_key(url).to_owned(),
            verdict: self.scope.check(url, 0),
        }
    }

    /// Applies the trap rules the scope's verdict leaves to the scheduler: parameter stripping and the budgets
    /// (links only: a seed at depth 0 is never cut). Returns the kind of job the link becomes.
    pub(super) fn screen(&mut self, link: &mut FoundLink, depth: u32) -> JobKind {
        self.screen_traps(link, depth);
        JobKind::from_verdict(link.verdict)
    }

    fn screen_traps(&mut self, link: &mut FoundLink, depth: u32) {
        let strip =
            !self.scope.traps().config().strip_params.is_empty() && link.url.contains(['?', ';']);
        let budget = depth > 0 && link.verdict == ScopeVerdict::InScope && self.budgets.is_on();
        if !strip && !budget {
            return;
        }
        let Ok(mut url) = url::Url::parse(&link.url) else {
            return;
        };
        if strip && self.scope.traps().strip(&mut url) {
            link.url = url.as_str().to_owned();
            link.verdict = self.scope.check(&url, depth);
        }
        if depth > 0
            && link.verdict == ScopeVerdict::InScope
            && let Some(reason) = self.budgets.admit(&link.host, &url)
        {
            link.verdict = ScopeVerdict::Trap(reason);
        }
    }

    /// True when a sitemap's host is in scope (sitemaps elsewhere are not fetched).
    pub(super) fn host_in_scope(&self, url: &url::Url) -> bool {
        self.scope.host_in_scope(url)
    }

    /// A config reload's scope. An unchanged scope (the same policy) does not judge the queued URLs again.
    pub(super) fn reconfigure(&mut self, scope: Arc<ScopePolicy>) {
        if !Arc::ptr_eq(&self.scope, &scope) {
            self.scope = scope;
            self.rescope = true;
        }
    }

    /// After a scope reload: why a queued page URL coming up is out of scope now (None: it may go).
    pub(super) fn left_scope(&self, entry: &Entry) -> Option<Reason> {
        if !self.rescope || entry.kind != JobKind::Page {
            return None;
        }
        let url = url::Url::parse(&entry.url).ok()?;
        self.scope.check(&url, entry.depth).reason()
    }

    /// The scope in force.
    #[cfg(test)]
    pub(super) fn scope(&self) -> &Arc<ScopePolicy> {
        &self.scope
    }

    /// True once a reload changed the scope.
    #[cfg(test)]
    pub(super) fn rescoping(&self) -> bool {
        self.rescope
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::config::TrapsConfig;
    use crawl_core::scope::ScopeMode;
    use crawl_core::traps::TrapRules;

    fn host_scope(traps: &TrapsConfig) -> Arc<ScopePolicy> {
        let seed = url::Url::parse("http://a.test/").unwrap();
        Arc::new(
            ScopePolicy::new(ScopeMode::Host, &[seed], Vec::new(), Vec::new(), 10)
                .with_traps(TrapRules::new(traps, 2026)),
        )
    }

    fn found(url: &str) -> FoundLink {
        let u = url::Url::parse(url).unwrap();
        FoundLink {
            url: u.as_str().to_owned(),
            host: canon::host_key(&u).to_owned(),
            verdict: ScopeVerdict::InScope,
        }
    }

    #[test]
    fn session_parameters_are_stripped_and_the_host_budget_cuts_links_not_seeds() {
        let traps = TrapsConfig {
            strip_params: vec!["sid".into()],
            max_urls_per_host: 2,
            ..TrapsConfig::default()
        };
        let mut a = Admission::new(host_scope(&traps));
        a.resume("a.test", 1);
        let mut l = found("http://a.test/x?sid=42&q=1");
        assert_eq!(a.screen(&mut l, 1), JobKind::Page);
        assert_eq!(l.url, "http://a.test/x?q=1");
        let mut over = found("http://a.test/y");
        assert_eq!(a.screen(&mut over, 1), JobKind::from_verdict(over.verdict));
        assert!(
            matches!(over.verdict, ScopeVerdict::Trap(_)),
            "one resumed and one admitted fill the budget: {:?}",
            over.verdict
        );
        let mut seed = found("http://a.test/z");
        assert_eq!(a.screen(&mut seed, 0), JobKind::Page, "a seed is never cut");
        let mut elsewhere = found("http://b.test/");
        elsewhere.verdict = a.seed(&url::Url::parse("http://b.test/").unwrap()).verdict;
        assert_ne!(elsewhere.verdict, ScopeVerdict::InScope);
        assert_ne!(a.screen(&mut elsewhere, 1), JobKind::Page);
    }

    #[test]
    fn a_new_scope_judges_queued_pages_again_and_the_same_scope_does_not() {
        let traps = TrapsConfig::default();
        let first = host_scope(&traps);
        let mut a = Admission::new(first.clone());
        let other = Entry::page("http://b.test/p", 1, None);
        assert_eq!(a.left_scope(&other), None, "no reload yet");
        a.reconfigure(first.clone());
        assert!(!a.rescoping(), "the same policy");
        assert!(Arc::ptr_eq(a.scope(), &first));
        let narrower = Arc::new(ScopePolicy::new(
            ScopeMode::Host,
            &[url::Url::parse("http://c.test/").unwrap()],
            Vec::new(),
            Vec::new(),
            10,
        ));
        a.reconfigure(narrower);
        assert!(a.rescoping());
        assert!(
            a.left_scope(&Entry::page("http://a.test/p", 1, None))
                .is_some()
        );
        assert_eq!(a.left_scope(&Entry::page("http://c.test/p", 1, None)), None);
        let mut robots = Entry::page("http://a.test/robots.txt", 0, None);
        robots.kind = JobKind::Robots;
        assert_eq!(a.left_scope(&robots), None, "only pages are judged again");
        assert!(a.host_in_scope(&url::Url::parse("http://c.test/s.xml").unwrap()));
        assert!(!a.host_in_scope(&url::Url::parse("http://a.test/s.xml").unwrap()));
    }
}
