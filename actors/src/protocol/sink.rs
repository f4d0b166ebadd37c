//! What the sink answers a write with when it fails.

use crawl_output::jsonl::OutputError;

/// Why the sink could not append committed records. Never retried: the crawl stops, and the same command resumes it
/// safely later.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("record {seq} arrived but the file has {lines} lines: a gap would corrupt the output")]
    Gap { seq: u64, lines: u64 },
}
