//! `promtool check metrics` on a scrape.

use std::io::Write;
use std::process::{Command, Stdio};

/// Pipes `text` to `promtool check metrics`: `Ok(its output)` when it exits 0, else `Err(its output)` (lint problems
/// such as a missing HELP or a counter without `_total` count as failures, as in CI);
/// `Err("promtool not found: apt-get install prometheus")` when it is not installed.
pub fn promtool_check_metrics(text: &str) -> Result<String, String> {
    check_metrics_with("promtool", text)
}

fn check_metrics_with(program: &str, text: &str) -> Result<String, String> {
    let mut child = match Command::new(program)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("promtool not found: apt-get install prometheus".into());
        }
        Err(e) => return Err(format!("run {program}: {e}")),
    };
    // Write from a thread so that a large input can't deadlock against a full output pipe.
    let mut stdin = child.stdin.take().ok_or("promtool: no stdin pipe")?;
    let input = text.as_bytes().to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("wait for {program}: {e}"))?;
    // promtool may exit before reading everything (a syntax error): a broken pipe then is not our failure.
    let _ = writer.join();
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(output)
    } else {
        Err(format!("promtool check metrics: {}: {output}", out.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promtool_accepts_good_and_rejects_bad_metrics() {
        let good = "# HELP crawl_records_total JSONL records.\n\
            # TYPE crawl_records_total counter\n\
            crawl_records_total{outcome=\"fetched\",reason=\"\"} 3\n\
            # HELP crawl_fetch_duration_seconds Page fetch latency.\n\
            # TYPE crawl_fetch_duration_seconds histogram\n\
            crawl_fetch_duration_seconds_bucket{le=\"0.1\"} 1\n\
            crawl_fetch_duration_seconds_bucket{le=\"+Inf\"} 2\n\
            crawl_fetch_duration_seconds_sum 0.3\n\
            crawl_fetch_duration_seconds_count 2\n";
        promtool_check_metrics(good).expect("promtool accepts the good sample");
        let syntax = promtool_check_metrics("x_total{a=\"b\" 1\n").expect_err("syntax error");
        assert!(syntax.contains("parsing error"), "{syntax}");
        let lint = promtool_check_metrics("# HELP x X.\n# TYPE x counter\nx 1\n")
            .expect_err("lint problem");
        assert!(lint.contains("_total"), "{lint}");
        assert_eq!(
            check_metrics_with("promtool-that-is-not-installed", good),
            Err("promtool not found: apt-get install prometheus".to_string())
        );
    }
}
