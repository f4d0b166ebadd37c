//! `[recrawl]`: continuous crawling. A fetched URL comes due again after an interval that adapts to how often
//! the page changes (docs/ARCHITECTURE.md, "Continuous crawling"); `[[recrawl.rules]]` set the interval of the
//! URLs a pattern matches.

use std::time::Duration;

/// The default of `recrawl.interval_s`: a day.
pub const DEFAULT_RECRAWL_INTERVAL: Duration = Duration::from_secs(86_400);
/// The default of `recrawl.min_interval_s`: a minute.
pub const DEFAULT_RECRAWL_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// The default of `recrawl.max_interval_s`: thirty days.
pub const DEFAULT_RECRAWL_MAX_INTERVAL: Duration = Duration::from_secs(30 * 86_400);
/// The default growth of an unchanged page's interval (`recrawl.inc_rate`).
pub const DEFAULT_INC_RATE: f64 = 0.2;
/// The default shrink of a changed page's interval (`recrawl.dec_rate`): with growth by 0.2, an interval settles
/// where about a third of the visits find a change (0.2 and 0.2: nearly half).
pub const DEFAULT_DEC_RATE: f64 = 0.3;
/// The longest interval any setting may name: a URL's interval is kept in tenths of a second as a `u32` by the
/// stores (13 years), and a year is far beyond any useful revisit interval.
pub const MAX_RECRAWL_INTERVAL_S: u64 = 366 * 86_400;

/// `[recrawl]`.
#[derive(Debug, Clone)]
pub struct RecrawlConfig {
    /// Fetched URLs come due again; the crawl does not end when nothing is due but waits for the next due URL.
    /// Restart-only.
    pub enabled: bool,
    /// The interval before a URL's first revisit (`interval_s`), when no rule matches it.
    pub interval: Duration,
    /// The shortest interval the adaptive schedule and sitemap hints may reach (`min_interval_s`, >= 1 s). A
    /// rule's `interval_s` may be shorter: its URLs are then revisited that often (a hot page).
    pub min_interval: Duration,
    /// The longest interval (`max_interval_s`); also the upper bound of every rule's `interval_s`.
    pub max_interval: Duration,
    /// Adapt each URL's interval to what its fetches observe: unchanged → × (1 + `inc_rate`), changed →
    /// × (1 − `dec_rate`). False: every revisit waits `interval_s` (or its rule's interval).
    pub adaptive: bool,
    /// Growth of an unchanged page's interval (0 < x < 1).
    pub inc_rate: f64,
    /// Shrink of a changed page's interval (0 < x < 1).
    pub dec_rate: f64,
    /// Revisits started per host and minute, so that a huge site whose pages all come due at once does not
    /// starve the others (new URLs do not count); 0 = no limit beyond `[politeness]`.
    pub host_revisits_per_minute: u32,
    /// `[[recrawl.rules]]`, first match wins.
    pub rules: Vec<RecrawlRule>,
}

impl Default for RecrawlConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            interval: DEFAULT_RECRAWL_INTERVAL,
            min_interval: DEFAULT_RECRAWL_MIN_INTERVAL,
            max_interval: DEFAULT_RECRAWL_MAX_INTERVAL,
            adaptive: true,
            inc_rate: DEFAULT_INC_RATE,
            dec_rate: DEFAULT_DEC_RATE,
            host_revisits_per_minute: 0,
            rules: Vec::new(),
        }
    }
}

/// Regexes compare by pattern text.
impl PartialEq for RecrawlConfig {
    fn eq(&self, other: &Self) -> bool {
        self.enabled == other.enabled
            && self.interval == other.interval
            && self.min_interval == other.min_interval
            && self.max_interval == other.max_interval
            && self.adaptive == other.adaptive
            && self.inc_rate == other.inc_rate
            && self.dec_rate == other.dec_rate
            && self.host_revisits_per_minute == other.host_revisits_per_minute
            && self.rules == other.rules
    }
}

/// One `[[recrawl.rules]]` table: the interval of the URLs `pattern` matches.
#[derive(Debug, Clone)]
pub struct RecrawlRule {
    /// Matched against the canonical URL (as `crawl.include`).
    pub pattern: regex::Regex,
    /// The interval of the matching URLs' first revisit (1 s ..= `max_interval_s`; may be below `min_interval_s`).
    pub interval: Duration,
    /// Whether the interval adapts (None: as `recrawl.adaptive`); false pins it to `interval`.
    pub adaptive: Option<bool>,
}

impl PartialEq for RecrawlRule {
    fn eq(&self, other: &Self) -> bool {
        self.pattern.as_str() == other.pattern.as_str()
            && self.interval == other.interval
            && self.adaptive == other.adaptive
    }
}
