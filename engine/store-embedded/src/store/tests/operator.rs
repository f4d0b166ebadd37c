//! Operator changes and forced re-fetches hold once they return: a process killed with SIGKILL right after loses
//! none of them. The test runs its own test binary as the child that is killed (`kill_9_child`, ignored in a plain
//! run).

use crate::EmbeddedFrontier;
use crawl_core::control::{Change, HostMatch, Requester};
use crawl_core::frontier::contract::disc;
use crawl_core::frontier::{Batch, Finished, FrontierStore, host_fp};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const DIR_VAR: &str = "CRAWL_STORE_KILL9_DIR";
const READY: &str = "kill-9 child: changes returned";

fn changes() -> Vec<Change> {
    vec![
        Change::Pause {
            host: None,
            at_ms: 1,
            by: Requester::Process,
        },
        Change::Politeness {
            host: HostMatch::parse("a:8080").unwrap(),
            delay_ms: Some(5_000),
            concurrency: None,
            until_ms: None,
            at_ms: 2,
            by: Requester::Process,
        },
    ]
}

/// The child: applies the changes and re-fetches `http://a/0`, says so, and waits to be killed.
#[test]
#[ignore = "the child process of operator_changes_and_refetches_survive_kill_9"]
fn kill_9_child() {
    let dir = std::env::var_os(DIR_VAR).expect("run by the kill -9 test");
    let mut f = EmbeddedFrontier::open(std::path::Path::new(&dir)).unwrap();
    f.recover().unwrap();
    for c in changes() {
        assert!(f.apply_operator(&c).unwrap());
    }
    assert_eq!(f.refetch(&[disc("http://a/0", "a", 0)]).unwrap().len(), 1);
    println!("{READY}");
    std::thread::sleep(Duration::from_secs(60));
    panic!("never killed");
}

#[test]
fn operator_changes_and_refetches_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        f.commit(Batch {
            discovered: vec![disc("http://a/0", "a", 0)],
            ..Batch::default()
        })
        .unwrap();
        let e = f.next_urls(host_fp("a"), None, 1).unwrap().remove(0);
        f.commit(Batch {
            finished: vec![Finished {
                id: e.id,
                host: e.host,
                key: e.key(),
                fetched_page: true,
            }],
            ..Batch::default()
        })
        .unwrap();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "store::tests::operator::kill_9_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_VAR, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let ready = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains(READY));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(ready, "the child never got there");

    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    let r = f.recover().unwrap();
    assert_eq!((r.counters.pending, r.counters.done), (1, 0));
    let (version, state) = f.operator_state().unwrap();
    assert_eq!(version, 2);
    assert!(state.crawl.is_some());
    assert_eq!(
        state.politeness_of("a", 8080, 3).and_then(|p| p.delay_ms),
        Some(5_000)
    );
    let q = f.next_urls(host_fp("a"), None, 10).unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].url, "http://a/0");
    assert!(
        f.refetch(&[disc("http://a/0", "a", 0)]).unwrap().is_empty(),
        "pending"
    );
}
