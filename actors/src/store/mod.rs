//! The store actor: the frontier store on a thread of its own, so that commits (with their fsync) and window
//! refills never block the scheduler. The scheduler sends [`messages::Commit`] and [`messages::NextUrls`] and
//! gets the answers back as futures; requests are served in the order they were sent. The tree's `Control` reads
//! the crawl's processes and hosts here too ([`messages::ReadProcesses`], [`messages::KnowsHost`]), a bounded
//! number at a time ([`read_slots`]).

pub mod actor;
pub mod archive;
pub mod messages;
pub mod read_slots;

pub use actor::StoreActor;
