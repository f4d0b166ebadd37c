//! Live progress: a bar on a terminal, periodic structured log lines otherwise.

use crawl_actors::protocol::Stats;
use crawl_actors::tree::Control;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The span the shown rate averages over: long enough that a polite crawl's few pages per second do not read as
/// alternating zeros and bursts, short enough to follow a change.
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Pages per second over the last [`RATE_WINDOW`], from samples of the fetched count.
#[derive(Debug, Default)]
pub struct Rate {
    samples: VecDeque<(Instant, u64)>,
}

impl Rate {
    /// Adds a sample and returns the rate since the oldest sample still inside the window (0 with one sample).
    pub fn sample(&mut self, now: Instant, fetched: u64) -> f64 {
        self.samples.push_back((now, fetched));
        // Keep one sample at or beyond the window's start, so the span covered is the whole window.
        while self.samples.len() > 2
            && self
                .samples
                .get(1)
                .is_some_and(|(t, _)| now.duration_since(*t) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        match (self.samples.front(), self.samples.back()) {
            (Some((t0, n0)), Some((t1, n1))) if t1 > t0 => {
                n1.saturating_sub(*n0) as f64 / t1.duration_since(*t0).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Bar,
    Log { every: Duration },
}

fn line(s: &Stats, rate: f64) -> String {
    let mut l = format!(
        "{rate:>7.1} pages/s | fetched {} | failed {} | excluded {} | queued {} | in flight {}",
        s.fetched, s.failed, s.excluded, s.queued, s.in_flight
    );
    if let Some(r) = &s.revisits {
        l.push_str(&format!(
            " | scheduled {} | next due {} | due within 1h {}",
            r.scheduled,
            next_due(r.next_due_ms, now_ms()),
            r.due_within_hour
        ));
    }
    l
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// When the next revisit is due, from `now_ms`: "now", "in 3m12s", or "-" when nothing is scheduled.
pub fn next_due(next_due_ms: Option<u64>, now_ms: u64) -> String {
    let Some(due) = next_due_ms else {
        return "-".to_owned();
    };
    let s = due.saturating_sub(now_ms).div_ceil(1000);
    match s {
        0 => "now".to_owned(),
        1..60 => format!("in {s}s"),
        60..3600 => format!("in {}m{:02}s", s / 60, s % 60),
        _ => format!("in {}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// Polls the crawl's counters until the task is dropped (aborted when the crawl ends).
pub async fn run(crawl: Control, mode: Mode) {
    let start = Instant::now();
    let bar = match mode {
        Mode::Bar => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            // Log lines are written with the bar cleared, then the bar is drawn again below them.
            let hook = b.clone();
            crawl_observability::console::set_pause(Some(std::sync::Arc::new(
                move |write: &mut dyn FnMut()| hook.suspend(write),
            )));
            Some(b)
        }
        Mode::Log { .. } => None,
    };
    let tick = match mode {
        Mode::Bar => Duration::from_millis(250),
        Mode::Log { every } => every,
    };
    let mut rate_window = Rate::default();
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        let Some(stats) = crawl.stats().await else {
            break;
        };
        let rate = rate_window.sample(Instant::now(), stats.fetched);
        match &bar {
            Some(b) => {
                b.set_message(line(&stats, rate));
                b.tick();
            }
            None if stats.revisits.is_some() => {
                let r = stats.revisits.unwrap_or_default();
                tracing::info!(
                    elapsed_s = start.elapsed().as_secs(),
                    pages_per_s = (rate * 10.0).round() / 10.0,
                    fetched = stats.fetched,
                    failed = stats.failed,
                    excluded = stats.excluded,
                    queued = stats.queued,
                    in_flight = stats.in_flight,
                    scheduled = r.scheduled,
                    next_due = %next_due(r.next_due_ms, now_ms()),
                    due_within_hour = r.due_within_hour,
                    "progress"
                )
            }
            None => tracing::info!(
                elapsed_s = start.elapsed().as_secs(),
                pages_per_s = (rate * 10.0).round() / 10.0,
                fetched = stats.fetched,
                failed = stats.failed,
                excluded = stats.excluded,
                queued = stats.queued,
                in_flight = stats.in_flight,
                "progress"
            ),
        }
    }
    if let Some(b) = bar {
        crawl_observability::console::set_pause(None);
        b.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_due_time_reads_as_a_wait() {
        let now = 1_796_083_200_000;
        assert_eq!(next_due(None, now), "-");
        assert_eq!(next_due(Some(now - 5_000), now), "now");
        assert_eq!(next_due(Some(now + 1), now), "in 1s");
        assert_eq!(next_due(Some(now + 192_000), now), "in 3m12s");
        assert_eq!(
            next_due(Some(now + 2 * 3_600_000 + 60_000), now),
            "in 2h01m"
        );
    }

    #[test]
    fn the_rate_is_averaged_over_the_window_not_the_last_tick() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut r = Rate::default();
        assert_eq!(r.sample(ms(0), 0), 0.0);
        // 3.5 pages/s arriving in bursts of 0 or 1 or 2 per 250 ms tick.
        let mut fetched = 0;
        let mut shown = Vec::new();
        for tick in 1..=80u64 {
            if tick % 2 == 0 {
                fetched += if tick % 4 == 0 { 2 } else { 1 };
            }
            shown.push(r.sample(ms(tick * 250), fetched));
        }
        // Once the window is full, the rate stays near 3 pages/s (12 pages per 4 s) at every tick.
        for v in &shown[20..] {
            assert!((2.5..=3.5).contains(v), "{shown:?}");
        }
        // Only the window is kept.
        assert!(r.samples.len() <= 22, "{}", r.samples.len());
    }

    #[test]
    fn the_rate_follows_a_stop_within_the_window() {
        let t0 = Instant::now();
        let mut r = Rate::default();
        for s in 0..10u64 {
            r.sample(t0 + Duration::from_secs(s), s * 100);
        }
        assert!((r.sample(t0 + Duration::from_secs(10), 1000) - 100.0).abs() < 1e-9);
        // No page for a whole window: the rate reads 0.
        let v = r.sample(t0 + Duration::from_secs(16), 1000);
        assert_eq!(v, 0.0);
    }
}
