//! Errors of building and supervising the actor tree.

use crawl_core::frontier::FrontierError;
use crawl_output::jsonl::OutputError;

#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error(transparent)]
    Frontier(#[from] FrontierError),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("http client: {0}")]
    Http(String),
    #[error(transparent)]
    Resolver(#[from] crate::resolver::error::ResolverError),
    #[error("warc output: {0}")]
    Archive(#[from] crawl_output::warc::WarcError),
}

impl TreeError {
    /// None of these are retried in-process; the operator fixes the cause and runs the same command again.
    pub fn is_retryable(&self) -> bool {
        false
    }
}
