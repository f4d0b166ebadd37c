//! A crawl's shard leases as a test sets them, for the tests of the fetcher and its connector: which hosts are held,
//! whether a request may start (the job's start check) and whether bytes may still go out (the connection's check
//! at each write).

use crawl_core::frontier::{Fp, ShardGate, host_fp};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub(crate) struct TestLease {
    /// The hosts held; None: every host.
    held: Option<Vec<Fp>>,
    pub start: AtomicBool,
    pub send: AtomicBool,
}

impl TestLease {
    /// Every host held, requests may start and be sent.
    pub(crate) fn all() -> TestLease {
        TestLease {
            held: None,
            start: AtomicBool::new(true),
            send: AtomicBool::new(true),
        }
    }

    /// The named hosts held, requests to them may start and be sent.
    pub(crate) fn of(hosts: &[&str]) -> TestLease {
        TestLease {
            held: Some(hosts.iter().map(|h| host_fp(h)).collect()),
            ..TestLease::all()
        }
    }

    fn holds(&self, host: Fp) -> bool {
        self.held.as_ref().is_none_or(|held| held.contains(&host))
    }
}

impl ShardGate for TestLease {
    fn shard_of(&self, _: Fp) -> u32 {
        0
    }
    fn may_start(&self, host: Fp) -> bool {
        self.holds(host) && self.start.load(Ordering::SeqCst)
    }
    fn may_send(&self, host: Fp) -> bool {
        self.holds(host) && self.send.load(Ordering::SeqCst)
    }
    fn owns(&self, _: u32) -> bool {
        true
    }
    fn owned_count(&self) -> usize {
        1
    }
    fn handoffs(&self) -> Vec<u32> {
        Vec::new()
    }
    fn quiet(&self, _: u32) {}
}
