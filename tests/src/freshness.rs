//! Freshness of a crawler's copies, from a test site's ground truth (its change instants) and the crawler's fetches.
//!
//! The crawler's stored copy of a page at time `t` is the content of its last fetch at or before `t`. It is *fresh*
//! when that fetch saw the page's current version and no change happened after the fetch up to `t` (a change at the
//! very instant of a fetch counts as seen by it). Its *age* is 0 while fresh, otherwise the time since the stored
//! copy became outdated: since the first change after the fetch, or, for a fetch that already saw an old version,
//! since the last change at or before that fetch (a lower bound: the copy it saw may have been outdated earlier).
//! Before the first fetch there is no copy: not fresh, and no age.
//!
//! Everything is pure; times are seconds on any common scale (the site's clock). [`report`] applies it to a test
//! site's ground truth and a client's requests (the `freshness` binary).

pub mod report;

/// One fetch of a page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fetch {
    pub at: f64,
    /// whether the body it got (or the 304 it got for the copy it had) was the version current at `at`
    pub saw_current: bool,
}

/// A page's freshness over an interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageFreshness {
    /// share (0..=1) of `[t0, t1]` during which the stored copy was current
    pub fresh_share: f64,
    /// mean age (s) over the part of `[t0, t1]` during which a copy existed; 0 when none did
    pub mean_age_s: f64,
    /// share of `[t0, t1]` during which a copy existed (after the first fetch)
    pub covered_share: f64,
}

/// The average over pages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub pages: usize,
    pub mean_fresh_share: f64,
    pub mean_age_s: f64,
    pub mean_covered_share: f64,
}

/// ∫ (t - base) dt over [a, b].
fn age_integral(a: f64, b: f64, base: f64) -> f64 {
    if b <= a {
        0.0
    } else {
        (b - a) * ((a + b) / 2.0 - base)
    }
}

/// Freshness of one page over `[t0, t1]` given its change instants and the crawler's fetches (both in any order).
/// An empty or reversed interval gives all zeros.
pub fn page_freshness(changes: &[f64], fetches: &[Fetch], t0: f64, t1: f64) -> PageFreshness {
    let zero = PageFreshness {
        fresh_share: 0.0,
        mean_age_s: 0.0,
        covered_share: 0.0,
    };
    let span = t1 - t0;
    if span.is_nan() || span <= 0.0 {
        return zero;
    }
    let mut changes: Vec<f64> = changes.iter().copied().filter(|c| !c.is_nan()).collect();
    changes.sort_by(f64::total_cmp);
    let mut fetches: Vec<Fetch> = fetches.iter().copied().filter(|f| !f.at.is_nan()).collect();
    fetches.sort_by(|a, b| a.at.total_cmp(&b.at));
    let (mut fresh, mut covered, mut age) = (0.0, 0.0, 0.0);
    for (i, f) in fetches.iter().enumerate() {
        let next = fetches.get(i + 1).map_or(f64::INFINITY, |n| n.at);
        let (a, b) = (f.at.max(t0), next.min(t1));
        if b <= a {
            continue;
        }
        covered += b - a;
        // changes up to and including the fetch are seen by it
        let after = changes.partition_point(|c| *c <= f.at);
        let (stale_from, base) = if f.saw_current {
            let c = changes.get(after).copied().unwrap_or(f64::INFINITY);
            (c, c)
        } else {
            let last = after
                .checked_sub(1)
                .and_then(|k| changes.get(k))
                .copied()
                .unwrap_or(f.at);
            (f.at, last)
        };
        let s = stale_from.clamp(a, b);
        fresh += s - a;
        age += age_integral(s, b, base);
    }
    PageFreshness {
        fresh_share: fresh / span,
        mean_age_s: if covered > 0.0 { age / covered } else { 0.0 },
        covered_share: covered / span,
    }
}

/// The mean of per-page results (each page counts once).
pub fn summarize(pages: &[PageFreshness]) -> Summary {
    let n = pages.len();
    let mean = |f: fn(&PageFreshness) -> f64| {
        if n == 0 {
            0.0
        } else {
            pages.iter().map(f).sum::<f64>() / n as f64
        }
    };
    Summary {
        pages: n,
        mean_fresh_share: mean(|p| p.fresh_share),
        mean_age_s: mean(|p| p.mean_age_s),
        mean_covered_share: mean(|p| p.covered_share),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(at: f64) -> Fetch {
        Fetch {
            at,
            saw_current: true,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn never_changing_page_is_fresh_from_its_first_fetch() {
        let p = page_freshness(&[], &[ok(25.0)], 0.0, 100.0);
        assert!(close(p.fresh_share, 0.75));
        assert!(close(p.covered_share, 0.75));
        assert!(close(p.mean_age_s, 0.0));
        let none = page_freshness(&[10.0], &[], 0.0, 100.0);
        assert_eq!((none.fresh_share, none.covered_share), (0.0, 0.0));
    }

    #[test]
    fn a_change_makes_the_copy_stale_until_the_next_fetch() {
        // fetch at 0, change at 40, fetch at 60, change at 90: fresh [0,40) + [60,90) = 70 of 100
        let p = page_freshness(&[40.0, 90.0], &[ok(60.0), ok(0.0)], 0.0, 100.0);
        assert!(close(p.fresh_share, 0.7), "{p:?}");
        // ages: [40,60) grows 0..20 (integral 200), [90,100) grows 0..10 (integral 50): 250 / 100
        assert!(close(p.mean_age_s, 2.5), "{p:?}");
        // a change at the instant of a fetch is seen by that fetch
        let same = page_freshness(&[50.0], &[ok(0.0), ok(50.0)], 0.0, 100.0);
        assert!(close(same.fresh_share, 1.0), "{same:?}");
    }

    #[test]
    fn a_fetch_that_saw_an_old_version_keeps_the_copy_stale() {
        // change at 10; the fetch at 20 got the old version (say from a cache): stale since 10
        let f = Fetch {
            at: 20.0,
            saw_current: false,
        };
        let p = page_freshness(&[10.0], &[ok(0.0), f, ok(50.0)], 0.0, 100.0);
        assert!(close(p.fresh_share, 0.6), "{p:?}");
        // age over [10,50) from base 10: integral 800
        assert!(close(p.mean_age_s, 8.0), "{p:?}");
    }

    #[test]
    fn only_the_interval_counts_and_pages_average() {
        // fetch before t0 still gives a copy at t0; changes before t0 were seen by it
        let p = page_freshness(&[-5.0, 30.0], &[ok(-1.0)], 0.0, 60.0);
        assert!(close(p.fresh_share, 0.5), "{p:?}");
        assert!(close(p.covered_share, 1.0));
        assert_eq!(page_freshness(&[], &[ok(0.0)], 5.0, 5.0).fresh_share, 0.0);
        let s = summarize(&[
            page_freshness(&[], &[ok(0.0)], 0.0, 10.0),
            page_freshness(&[0.5], &[ok(0.0)], 0.0, 10.0),
        ]);
        assert_eq!(s.pages, 2);
        assert!(close(s.mean_fresh_share, (1.0 + 0.05) / 2.0), "{s:?}");
        assert_eq!(summarize(&[]).mean_fresh_share, 0.0);
    }
}
