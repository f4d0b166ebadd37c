//! What can go wrong when a test starts or reads one of the kit's tools.

use std::process::ExitStatus;
use std::time::Duration;

/// Why a tool of the kit (redis-server, redis-cli, warcio) failed a test's request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A file, socket or process could not be made or started (`what`: the step).
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// The tool ran and failed, or exited early; `output`: what it said (its log, stderr or report).
    #[error("{what} failed ({status}): {output}")]
    Failed {
        what: String,
        status: ExitStatus,
        output: String,
    },
    /// The tool ran and exited 0, but its report shows a problem (a WARC record whose digest was not checked).
    #[error("{what}: {report}")]
    Report { what: String, report: String },
    /// The tool did not become ready in time.
    #[error("{what} not ready within {within:?}")]
    NotReady { what: String, within: Duration },
    /// The tool's output could not be read as JSON.
    #[error("{what}: {source}")]
    Json {
        what: String,
        source: serde_json::Error,
    },
}

impl ToolError {
    /// An [`ToolError::Io`] maker for `map_err`.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ToolError {
        let what = what.into();
        move |source| ToolError::Io { what, source }
    }

    /// A [`ToolError::Failed`] from a finished process's status and the bytes it wrote.
    pub(crate) fn failed(what: impl Into<String>, status: ExitStatus, output: &[u8]) -> ToolError {
        ToolError::Failed {
            what: what.into(),
            status,
            output: String::from_utf8_lossy(output).into_owned(),
        }
    }
}
