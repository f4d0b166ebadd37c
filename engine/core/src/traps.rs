//! Crawler traps (`[traps]`): the rules that cut URL spaces without end, each with its own record reason.
//!
//! [`TrapRules`] judges one URL alone: too long (`long_url`), a path segment repeated too often
//! (`repeated_path`), a calendar-like URL outside a window of years around the current year (`calendar`), and
//! strips session and tracking parameters ([`canon::strip_params`]). [`Budgets`] counts the URLs admitted per
//! host (`host_budget`) and per host and [URL pattern](url_pattern) (`pattern_budget`).
//!
//! Budgets are kept by the scheduler in memory as 8-byte URL fingerprints, only for the caps that are on, and
//! never past a cap. After a restart a host starts again from its pending URLs (the URLs it had fetched before
//! are not counted again), and pattern counts start from zero.

use std::collections::{HashMap, HashSet};

use url::Url;

use crate::canon;
use crate::record::Reason;

/// `[traps]`: crawler-trap limits; each URL they cut is recorded excluded with its own reason.
/// A limit of 0 is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrapsConfig {
    /// URLs admitted per host (reason `host_budget`); 0 = unlimited.
    pub max_urls_per_host: u64,
    /// URLs admitted per host and URL pattern (digit runs and query values aside; reason `pattern_budget`).
    pub max_urls_per_pattern: u64,
    /// Times one path segment may occur in a path (reason `repeated_path`).
    pub max_repeated_segments: u32,
    /// Path bytes, query bytes and query parameters (reason `long_url`).
    pub max_path_bytes: usize,
    pub max_query_bytes: usize,
    pub max_query_params: usize,
    /// Cut calendar-like URLs whose year is outside the window below (reason `calendar`).
    pub calendar: bool,
    /// Years before and after the current year a calendar-like URL may name.
    pub calendar_past_years: u32,
    pub calendar_future_years: u32,
    /// Query and `;` path parameters removed from seeds, links and redirect targets: lowercase names, a trailing `*`
    /// matches any suffix.
    pub strip_params: Vec<String>,
}

impl Default for TrapsConfig {
    fn default() -> Self {
        Self {
            max_urls_per_host: 0,
            max_urls_per_pattern: 0,
            max_repeated_segments: 3,
            max_path_bytes: 1_024,
            max_query_bytes: 1_024,
            max_query_params: 32,
            calendar: true,
            calendar_past_years: 30,
            calendar_future_years: 3,
            strip_params: ["jsessionid", "phpsessid", "sid", "utm_*"]
                .map(str::to_owned)
                .to_vec(),
        }
    }
}

/// The per-URL trap rules of a crawl.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrapRules {
    config: TrapsConfig,
    /// The year calendar windows are centred on.
    year: i32,
    /// No rule at all (scopes that take no trap rules, e.g. the page requisites').
    off: bool,
}

impl TrapRules {
    /// The rules of `config`, with calendar windows around `year` ([`current_year`] in a crawl).
    pub fn new(config: &TrapsConfig, year: i32) -> TrapRules {
        TrapRules {
            config: config.clone(),
            year,
            off: false,
        }
    }

    /// No rule.
    pub fn off() -> TrapRules {
        TrapRules {
            off: true,
            ..TrapRules::default()
        }
    }

    /// The reason `url` is a trap, or `None`. Checked in this order: length, repeated segments, calendar.
    pub fn check(&self, url: &Url) -> Option<Reason> {
        self.check_parts(&url[url::Position::BeforePath..url::Position::AfterQuery])
    }

    /// [`check`](Self::check) of a URL's path and query (`/p?q`, as [`crate::urlparts::split`] gives them).
    pub fn check_parts(&self, path_and_query: &str) -> Option<Reason> {
        if self.off {
            return None;
        }
        let c = &self.config;
        let (path, query) = match path_and_query.bytes().position(|b| b == b'?') {
            Some(i) => (&path_and_query[..i], Some(&path_and_query[i + 1..])),
            None => (path_and_query, None),
        };
        let too_long = |limit: usize, n: usize| limit > 0 && n > limit;
        if too_long(c.max_path_bytes, path.len())
            || too_long(c.max_query_bytes, query.map_or(0, str::len))
            || too_long(
                c.max_query_params,
                query
                    .into_iter()
                    .flat_map(|q| q.split('&'))
                    .filter(|p| !p.is_empty())
                    .count(),
            )
        {
            return Some(Reason::LongUrl);
        }
        if c.max_repeated_segments > 0 && segment_repeats_over(path, c.max_repeated_segments) {
            return Some(Reason::RepeatedPath);
        }
        if c.calendar && has_year_digits(path_and_query) {
            let low = i64::from(self.year) - i64::from(c.calendar_past_years);
            let high = i64::from(self.year) + i64::from(c.calendar_future_years);
            if calendar_out_of_window(path, query, low, high) {
                return Some(Reason::Calendar);
            }
        }
        None
    }

    /// The `[traps]` settings the rules come from.
    pub fn config(&self) -> &TrapsConfig {
        &self.config
    }

    /// Removes the configured session and tracking parameters; returns whether `url` changed.
    pub fn strip(&self, url: &mut Url) -> bool {
        !self.off && canon::strip_params(url, &self.config.strip_params)
    }
}

/// The current UTC year.
pub fn current_year() -> i32 {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    now.get(..4).and_then(|y| y.parse().ok()).unwrap_or(1970)
}

/// Whether some non-empty path segment occurs more than `max` times. Without allocating: paths are short, and
/// one with at most `max` segments is skipped at once.
fn segment_repeats_over(path: &str, max: u32) -> bool {
    // A path has at most one segment more than it has slashes: most are decided by counting bytes.
    if path.bytes().filter(|&b| b == b'/').count() < max as usize {
        return false;
    }
    let segments = || path.split('/').filter(|s| !s.is_empty());
    if segments().count() <= max as usize {
        return false;
    }
    segments()
        .enumerate()
        .any(|(i, s)| segments().skip(i).filter(|t| *t == s).count() > max as usize)
}

/// Whether a URL names a year outside `low..=high` the way calendars do: a year segment followed by a month segment
/// (`/2031/12/`), a date segment (`/2031-12-01`), a date value (`?date=2031-12-01`, or `?startDate=20311201` in a
/// parameter named for a date) or a year parameter (`?year=2031`). One pass over the path's segments and one over
/// the query's parameters, without allocating: most URLs with four digits in a row (page numbers, ids) hold no
/// date at all.
fn calendar_out_of_window(path: &str, query: Option<&str>, low: i64, high: i64) -> bool {
    let out = |year: i32| i64::from(year) < low || i64::from(year) > high;
    let mut previous_year = None;
    for segment in path.split('/') {
        if let Some(year) = previous_year {
            let month = (segment.len() <= 2)
                .then(|| segment.parse::<u32>().ok())
                .flatten();
            if month.is_some_and(|m| (1..=12).contains(&m)) && out(year) {
                return true;
            }
        }
        if date_year(segment).is_some_and(out) {
            return true;
        }
        previous_year = year_of(segment);
    }
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|p| {
            let (name, value) = p.split_once('=')?;
            if ["year", "yr", "y"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
            {
                return year_of(value);
            }
            date_year(value).or_else(|| {
                let compact = value.len() == 8
                    && name
                        .as_bytes()
                        .windows(4)
                        .any(|w| w.eq_ignore_ascii_case(b"date"));
                compact
                    .then(|| {
                        year_of(&value[..4]).filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .flatten()
            })
        })
        .any(out)
}

/// Whether the path or query holds a run of at least four digits (no calendar year without one).
fn has_year_digits(path_and_query: &str) -> bool {
    let mut run = 0;
    path_and_query.bytes().any(|b| {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        run >= 4
    })
}

/// A four-digit year.
fn year_of(s: &str) -> Option<i32> {
    (s.len() == 4 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// The year of `YYYY-MM` or `YYYY-MM-DD` (month 1-12, day 1-31).
fn date_year(s: &str) -> Option<i32> {
    let mut parts = s.split('-');
    let year = year_of(parts.next()?)?;
    let in_range = |p: Option<&str>, max: u32| {
        p.filter(|p| (1..=2).contains(&p.len()))
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|n| (1..=max).contains(&n))
    };
    if !in_range(parts.next(), 12) {
        return None;
    }
    match parts.next() {
        None => Some(year),
        Some(day) if in_range(Some(day), 31) && parts.next().is_none() => Some(year),
        Some(_) => None,
    }
}

/// The pattern of a URL within its host: the path with every run of digits replaced by `{n}`, then the query's
/// parameter names without their values (`/item/{n}/page?id&sort`). URLs a template produces without end
/// (`/item/1`, `/item/2`, ... or `?page=1`, `?page=2`, ...) share one pattern.
pub fn url_pattern(url: &Url) -> String {
    let mut out = String::with_capacity(url.path().len() + 16);
    let mut in_digits = false;
    for c in url.path().chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str("{n}");
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    if let Some(q) = url.query() {
        out.push('?');
        let names: Vec<&str> = q
            .split('&')
            .map(|p| p.split('=').next().unwrap_or(""))
            .collect();
        out.push_str(&names.join("&"));
    }
    out
}

/// What one host has admitted: fingerprints of its URLs (while the host cap is on) and of its URLs per pattern
/// (while the pattern cap is on).
#[derive(Debug, Default)]
struct HostCount {
    /// URLs counted without their fingerprints (pending at a restart).
    base: u64,
    urls: HashSet<u64>,
    patterns: HashMap<u64, HashSet<u64>>,
}

/// Per-host URL budgets: `max_urls_per_host` and `max_urls_per_pattern` (0 = off).
#[derive(Debug, Default)]
pub struct Budgets {
    per_host: u64,
    per_pattern: u64,
    hosts: HashMap<String, HostCount>,
}

impl Budgets {
    pub fn new(config: &TrapsConfig) -> Budgets {
        Budgets {
            per_host: config.max_urls_per_host,
            per_pattern: config.max_urls_per_pattern,
            hosts: HashMap::new(),
        }
    }

    /// Whether any budget is on.
    pub fn is_on(&self) -> bool {
        self.per_host > 0 || self.per_pattern > 0
    }

    /// A restart: `host` has `pending` URLs queued already, counted against its budget.
    pub fn resume(&mut self, host: &str, pending: u64) {
        if self.per_host > 0 {
            self.hosts.entry(host.to_owned()).or_default().base += pending;
        }
    }

    /// Admits `url` of `host` (counted once however often it is seen), or names the budget it is over.
    pub fn admit(&mut self, host: &str, url: &Url) -> Option<Reason> {
        if !self.is_on() {
            return None;
        }
        let fp = crate::frontier::url_fp(url.as_str());
        let count = self.hosts.entry(host.to_owned()).or_default();
        let host_known = count.urls.contains(&fp);
        if self.per_host > 0 && !host_known && count.base + count.urls.len() as u64 >= self.per_host
        {
            return Some(Reason::HostBudget);
        }
        if self.per_pattern > 0 {
            let pattern = crate::frontier::url_fp(&url_pattern(url));
            let seen = count.patterns.entry(pattern).or_default();
            if !seen.contains(&fp) {
                if seen.len() as u64 >= self.per_pattern {
                    return Some(Reason::PatternBudget);
                }
                seen.insert(fp);
            }
        }
        if self.per_host > 0 {
            count.urls.insert(fp);
        }
        None
    }
}

#[cfg(test)]
mod tests;
