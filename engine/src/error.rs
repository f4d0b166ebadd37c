//! Errors of the engine, split by exit status: usage/config errors (2) and runtime errors (1).

use crawl_actors::tree::TreeError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Bad usage or configuration: exit status 2.
    #[error("{0}")]
    Usage(String),
    /// The crawl could not start or stopped on a fatal error: exit status 1.
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("{0}")]
    Fatal(String),
    #[error("telemetry: {0}")]
    Telemetry(#[from] crawl_observability::TelemetryError),
}

impl EngineError {
    pub fn exit_code(&self) -> i32 {
        match self {
            EngineError::Usage(_) => 2,
            _ => 1,
        }
    }
}
