//! Messages the sink handles.

use super::error::SinkError;
use actix::Message;
use crawl_core::output::JsonlCheckpoint;

/// Append committed records, in sequence order (command, from the scheduler). Replies with where the file stands
/// after the flush: its line count (the highest sequence number in it) and byte length.
#[derive(Message)]
#[rtype(result = "Result<JsonlCheckpoint, SinkError>")]
pub struct WriteRecords {
    pub lines: Vec<(u64, Vec<u8>)>,
}
