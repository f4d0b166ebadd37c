//! Messages the fetcher handles.

use crate::job::Job;
use actix::Message;

/// Fetch a job's URL (command, from the scheduler).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Fetch {
    pub job: Job,
}

/// Answered at once (request, from the supervisor): a fetcher whose thread is blocked never answers.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Ping;
