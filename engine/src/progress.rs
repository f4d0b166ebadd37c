//! Live progress: a bar on a terminal, periodic structured log lines otherwise.

use actix::Addr;
use crawl_actors::scheduler::Scheduler;
use crawl_actors::scheduler::messages::GetStats;
use crawl_actors::scheduler::stats::Stats;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Bar,
    Log { every: Duration },
}

fn line(s: &Stats, rate: f64) -> String {
    format!(
        "{rate:>7.1} pages/s | fetched {} | failed {} | excluded {} | queued {} | in flight {}",
        s.fetched, s.failed, s.excluded, s.queued, s.in_flight
    )
}

/// Polls the scheduler until the task is dropped (aborted when the crawl ends).
pub async fn run(scheduler: Addr<Scheduler>, mode: Mode) {
    let start = Instant::now();
    let bar = match mode {
        Mode::Bar => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            Some(b)
        }
        Mode::Log { .. } => None,
    };
    let tick = match mode {
        Mode::Bar => Duration::from_millis(250),
        Mode::Log { every } => every,
    };
    let mut last = (Instant::now(), 0u64);
    let mut interval = tokio::time::interval(tick);
    interval.tick().await;
    loop {
        interval.tick().await;
        let Ok(stats) = scheduler.send(GetStats).await else {
            break;
        };
        let now = Instant::now();
        let dt = now.duration_since(last.0).as_secs_f64();
        let rate = if dt > 0.0 {
            (stats.fetched.saturating_sub(last.1)) as f64 / dt
        } else {
            0.0
        };
        last = (now, stats.fetched);
        match &bar {
            Some(b) => {
                b.set_message(line(&stats, rate));
                b.tick();
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
        b.finish_and_clear();
    }
}
