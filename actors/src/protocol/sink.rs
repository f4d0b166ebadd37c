//! What the JSONL sink answers a write with when it fails, and what the sinks beyond it (Kafka, PostgreSQL, object
//! storage) share with the rest of the tree: where the committed outputs stand ([`OutputProgress`]) and whether
//! one of them is so far behind that fetching must wait ([`Backpressure`]).

use crawl_core::output::JsonlCheckpoint;
use crawl_output::jsonl::OutputError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why the sink could not append committed records. Never retried: the crawl stops, and the same command resumes it
/// safely later.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("record {seq} arrived but the file has {lines} lines: a gap would corrupt the output")]
    Gap { seq: u64, lines: u64 },
}

/// Where the committed outputs stand, for the shippers: the JSONL's flushed lines and bytes (every one of them a
/// committed record), and the WARC file the last commit's archive checkpoint names (files before it are closed).
#[derive(Debug, Clone)]
pub struct OutputProgress {
    pub jsonl: tokio::sync::watch::Sender<JsonlCheckpoint>,
    pub warc_file: tokio::sync::watch::Sender<Option<String>>,
}

impl OutputProgress {
    pub fn new(jsonl: JsonlCheckpoint) -> OutputProgress {
        OutputProgress {
            jsonl: tokio::sync::watch::Sender::new(jsonl),
            warc_file: tokio::sync::watch::Sender::new(None),
        }
    }
}

/// Whether the sinks let fetching go on. Each sink holds its own flag; fetching waits while any is held.
#[derive(Debug, Default)]
pub struct Backpressure {
    held: Vec<(String, AtomicBool)>,
}

impl Backpressure {
    /// One flag per sink, by name.
    pub fn new(sinks: impl IntoIterator<Item = String>) -> Arc<Backpressure> {
        Arc::new(Backpressure {
            held: sinks
                .into_iter()
                .map(|n| (n, AtomicBool::new(false)))
                .collect(),
        })
    }

    /// Sets the flag of sink number `i`.
    pub fn set(&self, i: usize, hold: bool) {
        if let Some((_, f)) = self.held.get(i) {
            f.store(hold, Ordering::Relaxed);
        }
    }

    /// The first sink that holds fetching back, if any.
    pub fn holding(&self) -> Option<&str> {
        self.held
            .iter()
            .find(|(_, f)| f.load(Ordering::Relaxed))
            .map(|(n, _)| n.as_str())
    }
}
