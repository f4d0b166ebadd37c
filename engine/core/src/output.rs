//! Where the JSONL output stands, as the frontier stores checkpoint it with each commit (the file itself is written
//! by `crawl-output`).

/// Where the JSONL stood after a write: complete lines and the byte length they take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonlCheckpoint {
    pub lines: u64,
    pub bytes: u64,
}
