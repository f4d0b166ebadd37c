//! `promtool check metrics` on a scrape.

use std::io::{self, Write};
use std::process::{Command, ExitStatus, Stdio};

/// Why [`promtool_check_metrics`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromtoolError {
    /// `promtool` is not installed.
    #[error("promtool not found: apt-get install prometheus")]
    NotFound,
    /// It could not be started, or waited for.
    #[error("{step} {program}: {source}")]
    Run {
        step: &'static str,
        program: String,
        source: io::Error,
    },
    /// Its stdin was not piped.
    #[error("promtool: no stdin pipe")]
    NoStdin,
    /// It found problems (syntax or lint) and said so in `output` (stdout and stderr).
    #[error("promtool check metrics: {status}: {output}")]
    Rejected { status: ExitStatus, output: String },
}

/// Pipes `text` to `promtool check metrics`: `Ok(its output)` when it exits 0, else
/// [`PromtoolError::Rejected`] with its output (lint problems such as a missing HELP or a counter without `_total`
/// count as failures, as in CI); [`PromtoolError::NotFound`] when it is not installed.
pub fn promtool_check_metrics(text: &str) -> Result<String, PromtoolError> {
    check_metrics_with("promtool", text)
}

fn check_metrics_with(program: &str, text: &str) -> Result<String, PromtoolError> {
    let failed = |step: &'static str| {
        move |source: io::Error| PromtoolError::Run {
            step,
            program: program.to_owned(),
            source,
        }
    };
    let mut child = match Command::new(program)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(PromtoolError::NotFound),
        Err(e) => return Err(failed("run")(e)),
    };
    // Write from a thread so that a large input can't deadlock against a full output pipe.
    let mut stdin = child.stdin.take().ok_or(PromtoolError::NoStdin)?;
    let input = text.as_bytes().to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().map_err(failed("wait for"))?;
    // promtool may exit before reading everything (a syntax error): a broken pipe then is not our failure.
    let _ = writer.join();
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(output)
    } else {
        Err(PromtoolError::Rejected {
            status: out.status,
            output,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promtool_accepts_good_and_rejects_bad_metrics() {
        if !crawl_test_kit::tool::require(
            "promtool check metrics",
            &["promtool"],
            "apt-get install prometheus",
        ) {
            return;
        }
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
        let output = |e: PromtoolError| match e {
            PromtoolError::Rejected { status, output } if !status.success() => output,
            other => panic!("not a rejection: {other:?}"),
        };
        let syntax = promtool_check_metrics("x_total{a=\"b\" 1\n").expect_err("syntax error");
        let syntax = output(syntax);
        assert!(syntax.contains("parsing error"), "{syntax}");
        let lint = promtool_check_metrics("# HELP x X.\n# TYPE x counter\nx 1\n")
            .expect_err("lint problem");
        let lint = output(lint);
        assert!(lint.contains("_total"), "{lint}");
        let missing = check_metrics_with("promtool-that-is-not-installed", good);
        assert!(
            matches!(missing, Err(PromtoolError::NotFound)),
            "{missing:?}"
        );
        assert_eq!(
            PromtoolError::NotFound.to_string(),
            "promtool not found: apt-get install prometheus"
        );
    }
}
