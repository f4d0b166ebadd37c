//! Messages the parser handles.

use crate::fetcher::http::RawResponse;
use crate::job::Job;
use actix::Message;

/// Parse a fetched body (command, from a fetcher). The result goes to the scheduler as `JobDone`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Parse {
    pub job: Job,
    pub response: RawResponse,
    /// How the host was resolved (passed through to the record).
    pub dns: Option<crawl_core::record::DnsInfo>,
}
