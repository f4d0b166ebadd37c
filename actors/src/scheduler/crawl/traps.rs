//! The scheduler's part of crawler traps (`[traps]`): a discovered URL loses its session and tracking parameters
//! (judged again if it changed), and an in-scope link over its host's URL budget or its URL pattern's budget is
//! recorded excluded with that reason instead of queued. The per-URL rules (long URLs, repeated segments,
//! calendars) are part of the scope's verdict.

use super::*;

impl Crawl {
    /// Applies the trap rules the scope's verdict leaves to the scheduler: parameter stripping and the budgets
    /// (links only: a seed at depth 0 is never cut).
    pub(super) fn screen_traps(&mut self, link: &mut FoundLink, depth: u32) {
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
}
