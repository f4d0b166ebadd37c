//! Errors of the engine and the exit status each gives: one table for a run and for `--check` alike
//! ([`EXIT_STATUS`]). 0 done; 1 a runtime failure, whose message says whether the same command resumes; 2 usage,
//! config or ownership (a busy or foreign output, a lock held), refused before anything is written.

use crawl_actors::tree::TreeError;
use crawl_core::frontier::{FrontierError, LockError};
use crawl_core::ownership::OwnershipError;
use crawl_output::jsonl::OutputError;
use crawl_output::warc::WarcError;
use std::fmt;

/// The exit statuses, as `--help` and the README show them.
pub const EXIT_STATUS: &str = "\
Exit status (a run and --check alike):
  0    done: the crawl ended (nothing left to crawl, max_pages reached, or drained after a signal);
       --check found nothing in the way
  1    runtime failure: the message says whether the same command resumes (a server out of reach,
       a crash, an output that no longer matches its checkpoint)
  2    usage, config or ownership, before anything is written: a bad flag or key, a busy port, an
       output (data_dir, JSONL, WARC folder) held by another process or owned by another crawl, a sink
       ([[sinks]]) that cannot be reached or used as configured
  130  a second signal stopped the crawl at once (as safe as kill -9; the same command resumes)";

/// An exit status of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Done = 0,
    Failed = 1,
    Refused = 2,
}

/// Whether the same command resumes after a runtime failure, as its message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumes {
    /// It does.
    Yes,
    /// Once the cause named is fixed.
    AfterFix,
    /// Once the server named can be reached.
    WhenReachable,
    /// It does not: an output no longer matches what the frontier checkpointed.
    No,
}

impl fmt::Display for Resumes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resumes::Yes => "the same command resumes the crawl",
            Resumes::AfterFix => "the same command resumes once the cause is fixed",
            Resumes::WhenReachable => "the same command resumes once it can be reached",
            Resumes::No => {
                "the same command does not resume: the output no longer matches the checkpoint in \
                 frontier.data_dir; put the file back as it was, or start over with --fresh, which moves the \
                 old data_dir, JSONL and WARC folder aside"
            }
        })
    }
}

/// `--check`'s findings that make it fail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckFailed {
    /// Config and ownership problems: a run would be refused (exit 2).
    pub refused: Vec<String>,
    /// What a run would fail on at runtime, such as a server out of reach (exit 1 when nothing is refused).
    pub failed: Vec<String>,
}

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<&str> = self
            .refused
            .iter()
            .chain(&self.failed)
            .map(String::as_str)
            .collect();
        f.write_str(&lines.join("\n"))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Bad usage or configuration: exit status 2.
    #[error("{0}")]
    Usage(String),
    /// Outputs this crawl may not write (exit status 2), one line each.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Refused(Vec<OwnershipError>),
    /// The crawl could not start: exit status 2 for a lock held, else 1 with whether the same command resumes.
    #[error("{0}{clause}", clause = resume_clause(.0))]
    Tree(#[from] TreeError),
    /// A runtime failure whose message says itself whether the same command resumes: exit status 1.
    #[error("{0}")]
    Fatal(String),
    #[error("telemetry: {0} ({r})", r = Resumes::AfterFix)]
    Telemetry(#[from] crawl_observability::TelemetryError),
    /// The data_dir could not be read or locked while claiming it: exit status 1.
    #[error("{0} ({r})", r = Resumes::AfterFix)]
    DataDir(#[from] LockError),
    /// A marker could not be read or written while claiming the outputs: exit status 1.
    #[error("{0} ({r})", r = Resumes::AfterFix)]
    Output(#[from] OutputError),
    /// `--check` found what a run would fail on.
    #[error("{0}")]
    Check(CheckFailed),
}

/// ` (whether the same command resumes)` for a tree that could not start; nothing for a refusal.
fn resume_clause(e: &TreeError) -> String {
    match tree_resumes(e) {
        Some(r) => format!(" ({r})"),
        None => String::new(),
    }
}

/// Whether the same command resumes after the tree failed to start; None when it was refused (exit status 2).
fn tree_resumes(e: &TreeError) -> Option<Resumes> {
    match e {
        TreeError::Frontier(FrontierError::Locked(LockError::InUse { .. }))
        | TreeError::Archive(WarcError::Busy { .. })
        | TreeError::Sink(_) => None,
        TreeError::Output(OutputError::CheckpointMismatch { .. })
        | TreeError::Archive(WarcError::CheckpointMismatch { .. })
        | TreeError::Outbox { .. }
        | TreeError::Frontier(FrontierError::Corrupt { .. }) => Some(Resumes::No),
        TreeError::Frontier(
            FrontierError::Redis { .. }
            | FrontierError::Replicas { .. }
            | FrontierError::Unreachable { .. },
        ) => Some(Resumes::WhenReachable),
        _ => Some(Resumes::AfterFix),
    }
}

impl EngineError {
    /// The exit status (see [`EXIT_STATUS`]).
    pub fn exit(&self) -> Exit {
        match self {
            EngineError::Usage(_) | EngineError::Refused(_) => Exit::Refused,
            EngineError::Tree(e) if tree_resumes(e).is_none() => Exit::Refused,
            EngineError::Check(c) if !c.refused.is_empty() => Exit::Refused,
            _ => Exit::Failed,
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit() as i32
    }
}

#[cfg(test)]
mod tests;
