//! What a sink can fail with. Every message names the sink; none carries a password.

/// Why a sink could not connect, set up or ship.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The target did not answer, refused the connection or the credentials. `key` names the setting that points
    /// at it (`brokers`, `url`, `endpoint`).
    #[error("sink `{sink}` ({kind}): cannot reach `{key}` {target}: {detail}")]
    Unreachable {
        sink: String,
        kind: &'static str,
        key: &'static str,
        /// The target as shown (no password).
        target: String,
        detail: String,
    },
    /// The target is reachable but not usable as configured: a table of another schema, a topic that does not
    /// exist, a bucket that is missing. Needs the operator; nothing was written.
    #[error("sink `{sink}` ({kind}): `{key}`: {detail}")]
    Setup {
        sink: String,
        kind: &'static str,
        key: &'static str,
        detail: String,
    },
    /// A record above the target's message limit, with `oversize = "fail"`.
    #[error(
        "sink `{sink}`: record {record_id} is {bytes} bytes, above `message_max_bytes` = {max}"
    )]
    Oversize {
        sink: String,
        record_id: String,
        bytes: usize,
        max: usize,
    },
    /// A failure worth retrying: a broken connection, a timeout, a serialization failure or deadlock.
    #[error("sink `{sink}`: {detail}")]
    Transient { sink: String, detail: String },
    /// A local file (the JSONL, a checkpoint, a WARC file, the manifest) could not be read or written.
    #[error("sink `{sink}`: {path}: {source}")]
    Io {
        sink: String,
        path: String,
        source: std::io::Error,
    },
    /// A JSONL line that is not a record (the file was edited or replaced).
    #[error("sink `{sink}`: JSONL line {seq} is not a record: {detail}")]
    BadRecord {
        sink: String,
        seq: u64,
        detail: String,
    },
}

impl SinkError {
    /// The label of `crawl_sink_errors_total{kind}`.
    pub fn kind(&self) -> &'static str {
        match self {
            SinkError::Unreachable { .. } => "unreachable",
            SinkError::Setup { .. } => "setup",
            SinkError::Oversize { .. } => "oversize",
            SinkError::Transient { .. } => "transient",
            SinkError::Io { .. } => "io",
            SinkError::BadRecord { .. } => "bad_record",
        }
    }

    /// An I/O error on `path` of the sink `sink`.
    pub fn io(sink: &str, path: &std::path::Path, source: std::io::Error) -> SinkError {
        SinkError::Io {
            sink: sink.to_owned(),
            path: path.display().to_string(),
            source,
        }
    }
}
