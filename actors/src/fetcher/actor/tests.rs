//! The fetcher actor on a loopback site: its fetches run at once, each end goes to the scheduler (a small page
//! parsed on the fetcher's thread); a fetcher that stops after a caught panic takes the fetches it still held with
//! it (their requests are dropped, the site sees the connections close, and none of them ends later); a name it
//! was given an answer for is not asked for again while the answer lasts.

use super::*;
use crate::fetcher::http::HttpSettings;
use crate::fetcher::test_lease::TestLease;
use crate::parser::actor::PoolRestarts;
use crate::parser::logic::tests::{job, settings};
use crate::parser::pool::{Busy, ParserFactory};
use crate::recorder::{Recorder, Seen, until};
use crate::resolver::logic::{Resolution, Source};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the site saw: the connections it accepted, the paths it answered, and the requests for `/slow` it held and
/// that closed on it.
#[derive(Default)]
struct Site {
    accepted: usize,
    answered: Vec<String>,
    /// Requests for `/p/...` waiting for their answer.
    pages_open: usize,
    slow_held: usize,
    slow_closed: usize,
}

/// A site on 127.0.0.1 (keep-alive): `/slow` is never answered (the connection is held until the client closes
/// it); `/p/...` is answered with a small page with no links once `together` such requests are open at once (or
/// after five seconds), so that fetches made one at a time are seen to be; any other path at once.
async fn site(together: usize) -> (std::net::SocketAddr, Arc<Mutex<Site>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Site::default()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            s.lock().unwrap().accepted += 1;
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                loop {
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&got).to_string();
                    let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                    if path == "/slow" {
                        s.lock().unwrap().slow_held += 1;
                        // Held: the read ends when the client drops the connection.
                        while let Ok(n) = conn.read(&mut buf).await {
                            if n == 0 {
                                break;
                            }
                        }
                        s.lock().unwrap().slow_closed += 1;
                        return;
                    }
                    if path.starts_with("/p/") {
                        s.lock().unwrap().pages_open += 1;
                        for _ in 0..500 {
                            if s.lock().unwrap().pages_open >= together {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                    let body = "<html><body><p>small</p></body></html>";
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    s.lock().unwrap().answered.push(path);
                    if conn.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// A resolver that answers every name with 127.0.0.1 (TTL one minute) and counts the names it is asked.
struct FakeResolver(Arc<AtomicUsize>);

impl Actor for FakeResolver {
    type Context = Context<Self>;
}

impl Handler<Resolve> for FakeResolver {
    type Result = actix::MessageResult<Resolve>;
    fn handle(&mut self, _msg: Resolve, _ctx: &mut Context<Self>) -> Self::Result {
        self.0.fetch_add(1, Ordering::SeqCst);
        actix::MessageResult(Outcome::Resolved(Resolution {
            addrs: vec![std::net::IpAddr::from([127, 0, 0, 1])],
            source: Source::Plain,
            polluted: false,
            rules: Vec::new(),
            ttl: Duration::from_secs(60),
        }))
    }
}

/// A started fetcher with `faults` and `resolver`, its stand-ins recording into the returned `Seen`.
fn fetcher(
    faults: &str,
    resolver: Option<Recipient<Resolve>>,
) -> (actix::Addr<Fetcher>, Arc<Mutex<Seen>>) {
    let (rec, seen) = Recorder::start_new();
    let (sched, sup) = (
        rec.clone().recipient::<JobDone>(),
        rec.recipient::<ChildFailed>(),
    );
    let (s2, u2) = (sched.clone(), sup.clone());
    let factory: ParserFactory = Arc::new(move |busy: Arc<Busy>| {
        let mut s = settings(None, 100);
        s.inline_max_bytes = 65_536;
        crate::parser::Parser::new(
            crate::live::Live::new(s),
            s2.clone(),
            u2.clone(),
            Faults::default(),
            Arc::new(PoolRestarts::new(
                Duration::from_millis(1),
                Duration::from_millis(2),
            )),
            busy,
        )
    });
    let client = HttpClient::new(HttpSettings {
        allow_private_networks: true,
        ..HttpSettings::default()
    })
    .unwrap();
    let f = Fetcher::new(
        0,
        client,
        ParserPool::start(1, factory),
        sched,
        sup,
        Faults::parse(faults).unwrap(),
        resolver.map(|r| (r, crate::resolver::local::Shared::new())),
    )
    .start();
    (f, seen)
}

fn fetch(base: std::net::SocketAddr, path: &str, id: JobId) -> Fetch {
    fetch_url(&format!("http://{base}{path}"), id)
}

fn fetch_url(url: &str, id: JobId) -> Fetch {
    let mut j = job(url, JobKind::Page, 0);
    j.id = id;
    Fetch { job: j }
}

#[actix_rt::test]
async fn fetches_run_at_once_and_each_end_reaches_the_scheduler() {
    // The site answers none of the 20 until all 20 are open.
    let (base, site) = site(20).await;
    let (f, seen) = fetcher("", None);
    for id in 1..=20 {
        f.do_send(fetch(base, &format!("/p/{id}"), id));
    }
    let all = until(|| seen.lock().unwrap().done.len() == 20).await;
    let s = seen.lock().unwrap();
    assert!(all, "{} of 20 job ends", s.done.len());
    let mut jobs: Vec<JobId> = s.done.iter().map(|d| d.job).collect();
    jobs.sort_unstable();
    assert_eq!(jobs, (1..=20).collect::<Vec<_>>());
    assert!(s.failed.is_empty());
    assert_eq!(site.lock().unwrap().answered.len(), 20);
}

#[actix_rt::test]
async fn a_fetcher_that_panics_stops_and_drops_the_fetches_it_held() {
    let (base, site) = site(1).await;
    let (f, seen) = fetcher("fetcher:/poison", None);
    f.do_send(fetch(base, "/slow", 1));
    f.do_send(fetch(base, "/slow", 2));
    // Both requests are out (held by the site) before the poisoned job panics.
    assert!(until(|| site.lock().unwrap().slow_held == 2).await);
    f.do_send(fetch(base, "/poison/1", 3));
    assert!(
        until(|| site.lock().unwrap().slow_closed == 2).await,
        "the held requests were not dropped: {} closed",
        site.lock().unwrap().slow_closed
    );
    {
        let s = seen.lock().unwrap();
        assert_eq!(s.failed.len(), 1, "one failure told to the supervisor");
        assert_eq!(s.failed[0].job, Some(3));
        assert!(matches!(s.failed[0].child, ChildId::Fetcher(0)));
        assert!(
            s.done.is_empty(),
            "no job of the stopped fetcher ends: {:?}",
            s.done.iter().map(|d| d.job).collect::<Vec<_>>()
        );
    }
    assert!(until(|| !f.connected()).await, "the fetcher stopped");
}

#[actix_rt::test]
async fn a_name_answered_once_is_not_asked_again_while_the_answer_lasts() {
    let (base, site) = site(1).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let resolver = FakeResolver(asked.clone()).start();
    let (f, seen) = fetcher("", Some(resolver.recipient()));
    let url = |n: u32| format!("http://localhost:{}/p/{n}", base.port());
    f.do_send(fetch_url(&url(1), 1));
    assert!(until(|| seen.lock().unwrap().done.len() == 1).await);
    for id in 2..=4 {
        f.do_send(fetch_url(&url(id as u32), id));
    }
    assert!(until(|| seen.lock().unwrap().done.len() == 4).await);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the resolver was asked again"
    );
    assert_eq!(site.lock().unwrap().answered.len(), 4);
    let s = seen.lock().unwrap();
    let source = |job: JobId| {
        let d = s.done.iter().find(|d| d.job == job).expect("the job's end");
        d.dns.as_ref().map(|i| i.source.clone())
    };
    assert_eq!(source(1).as_deref(), Some("plain"));
    for id in 2..=4 {
        assert_eq!(source(id).as_deref(), Some("cache"), "job {id}");
    }
}

/// A fetch of `path` on `base` under `lease` (the host 127.0.0.1's).
fn gated(base: std::net::SocketAddr, path: &str, id: JobId, lease: &Arc<TestLease>) -> Fetch {
    let mut f = fetch(base, path, id);
    let host = crawl_core::frontier::host_fp("127.0.0.1");
    f.job.gate = Some(crate::protocol::StartGate::new(lease.clone(), host));
    f
}

#[actix_rt::test]
async fn a_request_whose_lease_ran_out_after_its_start_check_does_not_go_out() {
    let (base, site_seen) = site(1).await;
    let (other, other_seen) = site(1).await;
    let lease = Arc::new(TestLease::all());
    let (f, seen) = fetcher("", None);
    f.do_send(gated(base, "/p/1", 1, &lease));
    assert!(until(|| seen.lock().unwrap().done.len() == 1).await);
    assert_eq!(site_seen.lock().unwrap().answered, ["/p/1"]);
    // The lease runs out after the start check: the kept-alive connection refuses the write, and a new one is not
    // opened. Neither request goes out, and both jobs end not started (no attempt, nothing recorded).
    lease.send.store(false, Ordering::SeqCst);
    f.do_send(gated(base, "/p/2", 2, &lease));
    f.do_send(gated(other, "/p/3", 3, &lease));
    assert!(until(|| seen.lock().unwrap().done.len() == 3).await);
    let s = seen.lock().unwrap();
    for d in &s.done[1..] {
        assert!(
            matches!(d.result, JobResult::NotStarted),
            "job {}: {:?}",
            d.job,
            d.result
        );
    }
    assert!(matches!(s.done[0].result, JobResult::Page(_)));
    assert_eq!(site_seen.lock().unwrap().answered, ["/p/1"]);
    // Not even a connection to the other site: its connect was refused before it was dialled.
    let other = other_seen.lock().unwrap();
    assert_eq!((other.accepted, other.answered.len()), (0, 0));
    assert!(s.failed.is_empty());
}
