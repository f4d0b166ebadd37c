//! Errors of building the actor tree and of preparing a config reload for it. None of them is retried in-process:
//! the operator fixes the cause and runs the same command again.

use crawl_core::frontier::FrontierError;
use crawl_output::jsonl::OutputError;

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Frontier(#[from] FrontierError),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("http client: {0}")]
    Http(#[from] crate::fetcher::error::SettingsError),
    #[error(transparent)]
    Resolver(#[from] crate::resolver::error::ResolverError),
    #[error("warc output: {0}")]
    Archive(#[from] crawl_output::warc::WarcError),
    /// A `[[sinks]]` entry that could not start (unreachable, or not usable as configured).
    #[error(transparent)]
    Sink(#[from] crawl_sinks::SinkError),
    /// The records the frontier committed do not follow the JSONL's last line.
    #[error(
        "{source}; the output file {jsonl} does not match the frontier in {data_dir} (was it truncated or replaced?)"
    )]
    Outbox {
        jsonl: String,
        data_dir: String,
        source: crate::protocol::SinkError,
    },
}
