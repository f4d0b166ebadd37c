//! Changing mode ([`SiteSpec::changing`]): every HTML page gets a change schedule drawn from the seed, its body
//! carries a version marker, and it is served with validators (`ETag`, `Last-Modified`) that conditional requests
//! are checked against, unless its host misbehaves on purpose ([`Misbehavior`]).
//!
//! Schedules are pure functions of (seed, page): a page's version at site time `t` is the number of its change
//! instants in `(start, t]` (`start` = [`ChangingSpec::epoch_s`], or the birth of a `/new/{k}` page), and version
//! `v` was current from change `v` (the start for `v = 0`) to change `v + 1`. All instants are whole Unix seconds in
//! site time, at least 1 s apart, so `Last-Modified` tells every version apart.

use std::collections::BTreeMap;

use super::SiteSpec;
use super::graph::{mix, rnd, unit};

/// How a page changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeClass {
    /// Every `period_s`, first at `start + phase_s` (`1 <= phase_s <= period_s`).
    Periodic { period_s: u64, phase_s: u64 },
    /// Never: version 0 forever.
    Never,
    /// `changes` changes `spacing_s` apart, at the start of each `cycle_s`, the first at `start + phase_s`.
    Bursty {
        cycle_s: u64,
        changes: u64,
        spacing_s: u64,
        phase_s: u64,
    },
    /// A Poisson process: gaps drawn from an exponential distribution of mean `mean_s` (at least 1 s each).
    Poisson { mean_s: u64 },
}

impl ChangeClass {
    /// The sitemap `<changefreq>` hint of the class.
    pub fn changefreq(&self) -> &'static str {
        let every = match *self {
            Self::Never => return "never",
            Self::Periodic { period_s, .. } => period_s,
            Self::Bursty {
                cycle_s, changes, ..
            } => cycle_s / changes.max(1),
            Self::Poisson { mean_s } => mean_s,
        };
        match every {
            0..=3_599 => "always",
            3_600..=86_399 => "hourly",
            86_400..=604_799 => "daily",
            604_800..=2_591_999 => "weekly",
            2_592_000..=31_535_999 => "monthly",
            _ => "yearly",
        }
    }
}

/// Relative weights of the change classes when a page's class is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassWeights {
    pub periodic: u32,
    pub never: u32,
    pub bursty: u32,
    pub poisson: u32,
}

/// A host that gets validators or sitemaps wrong on purpose (changing mode only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehavior {
    /// A new `ETag` on every response while the body stays the same; conditional requests never match it.
    EtagChurn,
    /// Sends validators but ignores `If-None-Match` and `If-Modified-Since`: always 200.
    IgnoreConditional,
    /// `Last-Modified` one day after the site's current time.
    FutureLastModified,
    /// `Last-Modified: not a date`.
    BadLastModified,
    /// 304 to every request for a page, with or without validators (the body is never sent).
    AlwaysNotModified,
    /// Neither `ETag` nor `Last-Modified`; conditional headers are ignored.
    NoValidators,
    /// Correct validators, but the page sitemap gives every URL a `<lastmod>` one second before now.
    LyingSitemap,
}

impl Misbehavior {
    /// Parses the names the `testsite` binary takes: `etag-churn`, `ignore-conditional`, `future-last-modified`,
    /// `bad-last-modified`, `always-304`, `no-validators`, `lying-sitemap`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "etag-churn" => Self::EtagChurn,
            "ignore-conditional" => Self::IgnoreConditional,
            "future-last-modified" => Self::FutureLastModified,
            "bad-last-modified" => Self::BadLastModified,
            "always-304" => Self::AlwaysNotModified,
            "no-validators" => Self::NoValidators,
            "lying-sitemap" => Self::LyingSitemap,
            _ => return None,
        })
    }
}

/// Changing mode's parameters. Class, period and phase of each page are drawn from the seed and the page.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangingSpec {
    /// Site time (Unix seconds) at which every linked page has version 0; its first `Last-Modified`.
    pub epoch_s: u64,
    /// Periods a periodic page draws from (each at least 1 s).
    pub periods_s: Vec<u64>,
    pub weights: ClassWeights,
    /// Bursty pages: a burst every `burst_cycle_s`, of `burst_changes` changes `burst_spacing_s` apart.
    pub burst_cycle_s: u64,
    pub burst_changes: u64,
    pub burst_spacing_s: u64,
    /// Mean gap of Poisson pages (at least 1 s).
    pub poisson_mean_s: u64,
    /// Pages `/new/{k}` (`k < new_pages`) per host, born at `epoch_s + (k + 1) * new_every_s`: 404 before, then
    /// listed in the page sitemap and changing like the others. Linked from nowhere.
    pub new_pages: usize,
    pub new_every_s: u64,
    /// Host index -> how it misbehaves; the other hosts behave.
    pub misbehaving: BTreeMap<usize, Misbehavior>,
}

impl Default for ChangingSpec {
    /// Epoch 2023-11-14T22:13:20Z; periods of 1 min, 10 min and 1 h; bursts of 5 changes 10 s apart every hour;
    /// Poisson with a mean of 15 min; weights 4 periodic : 3 never : 2 bursty : 1 Poisson; no new pages.
    fn default() -> Self {
        Self {
            epoch_s: 1_700_000_000,
            periods_s: vec![60, 600, 3_600],
            weights: ClassWeights {
                periodic: 4,
                never: 3,
                bursty: 2,
                poisson: 1,
            },
            burst_cycle_s: 3_600,
            burst_changes: 5,
            burst_spacing_s: 10,
            poisson_mean_s: 900,
            new_pages: 0,
            new_every_s: 300,
            misbehaving: BTreeMap::new(),
        }
    }
}

impl ChangingSpec {
    pub(crate) fn validate(&self, hosts: usize) -> Result<(), String> {
        if self.periods_s.is_empty() || self.periods_s.contains(&0) {
            return Err("changing.periods_s must be non-empty and positive".into());
        }
        let w = &self.weights;
        if u64::from(w.periodic) + u64::from(w.never) + u64::from(w.bursty) + u64::from(w.poisson)
            == 0
        {
            return Err("changing.weights must not all be 0".into());
        }
        if self.burst_changes == 0
            || self.burst_spacing_s == 0
            || self.burst_changes.saturating_mul(self.burst_spacing_s) >= self.burst_cycle_s
        {
            return Err("changing bursts must fit their cycle with positive counts".into());
        }
        if self.poisson_mean_s == 0 || self.new_every_s == 0 {
            return Err("changing.poisson_mean_s and new_every_s must be positive".into());
        }
        if self.misbehaving.keys().any(|h| *h >= hosts) {
            return Err("changing.misbehaving names a host that does not exist".into());
        }
        Ok(())
    }

    pub(crate) fn misbehavior(&self, host: usize) -> Option<Misbehavior> {
        self.misbehaving.get(&host).copied()
    }
}

/// Which URL family a changing page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Family {
    Page,
    Private,
    Nofollow,
    Orphan,
    New,
}

/// A page with a change schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct PageKey {
    pub host: usize,
    pub family: Family,
    pub n: usize,
}

impl PageKey {
    /// The page a path names on `host` (without checking that it is served).
    pub fn parse(host: usize, path: &str) -> Option<Self> {
        if path == "/" {
            return Some(Self {
                host,
                family: Family::Page,
                n: 0,
            });
        }
        let (dir, rest) = path.get(1..)?.split_once('/')?;
        let ok = !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
            && (rest == "0" || !rest.starts_with('0'));
        let n: usize = if ok { rest.parse().ok()? } else { return None };
        let family = match dir {
            "page" if n > 0 => Family::Page,
            "private" => Family::Private,
            "nofollow" => Family::Nofollow,
            "orphan" => Family::Orphan,
            "new" => Family::New,
            _ => return None,
        };
        Some(Self { host, family, n })
    }

    pub fn path(&self) -> String {
        match self.family {
            Family::Page if self.n == 0 => "/".to_owned(),
            Family::Page => format!("/page/{}", self.n),
            Family::Private => format!("/private/{}", self.n),
            Family::Nofollow => format!("/nofollow/{}", self.n),
            Family::Orphan => format!("/orphan/{}", self.n),
            Family::New => format!("/new/{}", self.n),
        }
    }

    fn salt(&self) -> usize {
        match self.family {
            Family::Page => 0,
            Family::Private => 1,
            Family::Nofollow => 2,
            Family::Orphan => 3,
            Family::New => 4,
        }
    }
}

/// Random-number salt of changing mode (distinct from the graph's).
const SALT: u64 = 0xC4A9;

/// A page's schedule: its class from `start` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    pub class: ChangeClass,
    /// Unix seconds at which version 0 appears (epoch, or the birth of a new page)
    pub start: u64,
    key: u64,
}

/// Upper bound on the changes of a Poisson page that are enumerated (about 30 years at a 15-minute mean).
const POISSON_MAX: u64 = 1_000_000;

impl Schedule {
    pub fn of(spec: &SiteSpec, ch: &ChangingSpec, page: &PageKey) -> Self {
        let r = |slot: usize| rnd(spec, page.host, page.n, page.salt() * 8 + slot, SALT);
        let w = &ch.weights;
        let total =
            u64::from(w.periodic) + u64::from(w.never) + u64::from(w.bursty) + u64::from(w.poisson);
        let pick = r(0) % total.max(1);
        let period = ch.periods_s[(r(1) % ch.periods_s.len().max(1) as u64) as usize].max(1);
        let class = if pick < u64::from(w.periodic) {
            ChangeClass::Periodic {
                period_s: period,
                phase_s: 1 + r(2) % period,
            }
        } else if pick < u64::from(w.periodic) + u64::from(w.never) {
            ChangeClass::Never
        } else if pick < total - u64::from(w.poisson) {
            ChangeClass::Bursty {
                cycle_s: ch.burst_cycle_s,
                changes: ch.burst_changes,
                spacing_s: ch.burst_spacing_s,
                phase_s: 1 + r(3) % ch.burst_cycle_s.max(1),
            }
        } else {
            ChangeClass::Poisson {
                mean_s: ch.poisson_mean_s.max(1),
            }
        };
        let start = match page.family {
            Family::New => ch
                .epoch_s
                .saturating_add((page.n as u64 + 1).saturating_mul(ch.new_every_s)),
            _ => ch.epoch_s,
        };
        Self {
            class,
            start,
            key: r(4),
        }
    }

    /// Instant of change `i` (0-based) for the closed-form classes.
    fn instant(&self, i: u64) -> u64 {
        match self.class {
            ChangeClass::Periodic { period_s, phase_s } => self.start + phase_s + i * period_s,
            ChangeClass::Bursty {
                cycle_s,
                changes,
                spacing_s,
                phase_s,
            } => self.start + phase_s + (i / changes) * cycle_s + (i % changes) * spacing_s,
            _ => u64::MAX,
        }
    }

    /// Number of changes at or before `t`, for the closed-form classes.
    fn count_le(&self, t: u64) -> u64 {
        match self.class {
            ChangeClass::Periodic { period_s, phase_s } => {
                let first = self.start + phase_s;
                if t < first {
                    0
                } else {
                    (t - first) / period_s + 1
                }
            }
            ChangeClass::Bursty {
                cycle_s,
                changes,
                spacing_s,
                phase_s,
            } => {
                let first = self.start + phase_s;
                if t < first {
                    return 0;
                }
                let x = t - first;
                (x / cycle_s) * changes + ((x % cycle_s) / spacing_s + 1).min(changes)
            }
            _ => 0,
        }
    }

    /// Poisson change instants in order, up to and including `t`.
    fn poisson_upto(&self, mean_s: u64, t: u64, mut f: impl FnMut(u64)) {
        let mut at = self.start;
        for k in 0..POISSON_MAX {
            let u = unit(mix(self.key ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
            let gap = (-(mean_s as f64) * (1.0 - u).ln()).round().max(1.0) as u64;
            at = at.saturating_add(gap);
            if at > t {
                return;
            }
            f(at);
        }
    }

    /// Change instants in `(from, to]`.
    pub fn changes_between(&self, from: u64, to: u64) -> Vec<u64> {
        let mut out = Vec::new();
        if to <= from {
            return out;
        }
        match self.class {
            ChangeClass::Never => {}
            ChangeClass::Poisson { mean_s } => self.poisson_upto(mean_s, to, |c| {
                if c > from {
                    out.push(c);
                }
            }),
            _ => {
                for i in self.count_le(from)..self.count_le(to) {
                    out.push(self.instant(i));
                }
            }
        }
        out
    }

    /// (version, instant it became current) at `t`; `None` before the page exists (`t < start`).
    pub fn version_at(&self, t: u64) -> Option<(u64, u64)> {
        if t < self.start {
            return None;
        }
        Some(match self.class {
            ChangeClass::Never => (0, self.start),
            ChangeClass::Poisson { mean_s } => {
                let mut v = (0, self.start);
                self.poisson_upto(mean_s, t, |c| v = (v.0 + 1, c));
                v
            }
            _ => match self.count_le(t) {
                0 => (0, self.start),
                n => (n, self.instant(n - 1)),
            },
        })
    }

    /// The strong entity-tag of `version` (`-gz` for the gzip-coded representation).
    pub fn etag(&self, version: u64, gzipped: bool) -> String {
        let h = mix(self.key ^ version.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        format!("\"{h:016x}-{version}{}\"", if gzipped { "-gz" } else { "" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(class: ChangeClass) -> Schedule {
        Schedule {
            class,
            start: 1_000,
            key: 7,
        }
    }

    #[test]
    fn periodic_and_bursty_instants_match_their_counts() {
        let p = sched(ChangeClass::Periodic {
            period_s: 60,
            phase_s: 10,
        });
        assert_eq!(
            p.changes_between(1_000, 1_200),
            vec![1_010, 1_070, 1_130, 1_190]
        );
        assert_eq!(p.changes_between(1_010, 1_070), vec![1_070]);
        assert_eq!(p.version_at(999), None);
        assert_eq!(p.version_at(1_009), Some((0, 1_000)));
        assert_eq!(p.version_at(1_010), Some((1, 1_010)));
        assert_eq!(p.version_at(1_100), Some((2, 1_070)));
        let b = sched(ChangeClass::Bursty {
            cycle_s: 100,
            changes: 3,
            spacing_s: 5,
            phase_s: 20,
        });
        assert_eq!(
            b.changes_between(1_000, 1_130),
            vec![1_020, 1_025, 1_030, 1_120, 1_125, 1_130]
        );
        assert_eq!(b.version_at(1_027), Some((2, 1_025)));
        assert_eq!(b.version_at(1_119), Some((3, 1_030)));
        assert_eq!(
            sched(ChangeClass::Never).version_at(1_000_000),
            Some((0, 1_000))
        );
    }

    #[test]
    fn poisson_gaps_average_the_mean_and_agree_with_versions() {
        let p = sched(ChangeClass::Poisson { mean_s: 100 });
        let c = p.changes_between(1_000, 1_000 + 1_000_000);
        let mean = 1_000_000.0 / c.len() as f64;
        assert!((90.0..110.0).contains(&mean), "{mean}");
        assert!(c.windows(2).all(|w| w[1] > w[0]));
        let (v, at) = p.version_at(c[41]).unwrap();
        assert_eq!((v, at), (42, c[41]));
        assert_eq!(p.changes_between(c[9], c[19]), c[10..20].to_vec());
    }

    #[test]
    fn classes_are_drawn_from_the_seed_in_every_kind() {
        let spec = SiteSpec::small();
        let ch = ChangingSpec::default();
        let mut seen = std::collections::HashSet::new();
        for n in 0..200 {
            let k = PageKey {
                host: 0,
                family: Family::Page,
                n,
            };
            let a = Schedule::of(&spec, &ch, &k);
            assert_eq!(a, Schedule::of(&spec, &ch, &k));
            seen.insert(std::mem::discriminant(&a.class));
        }
        assert_eq!(seen.len(), 4);
        assert_eq!(ChangeClass::Never.changefreq(), "never");
        assert_eq!(
            ChangeClass::Periodic {
                period_s: 3_600,
                phase_s: 1
            }
            .changefreq(),
            "hourly"
        );
    }
}
