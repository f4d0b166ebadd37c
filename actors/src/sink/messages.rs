//! Messages the sink handles.

use super::error::SinkError;
use actix::Message;

/// Append committed records, in sequence order (command, from the scheduler). Replies with the highest sequence
/// number now in the file.
#[derive(Message)]
#[rtype(result = "Result<crawl_core::output::JsonlCheckpoint, SinkError>")]
pub struct WriteRecords {
    pub lines: Vec<(u64, Vec<u8>)>,
}
