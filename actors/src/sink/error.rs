//! Errors of the sink.

use crawl_output::jsonl::OutputError;

#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("record {seq} arrived but the file has {lines} lines: a gap would corrupt the output")]
    Gap { seq: u64, lines: u64 },
}

impl SinkError {
    /// Output failures are not retried: the crawl stops and resumes safely later.
    pub fn is_retryable(&self) -> bool {
        false
    }
}
