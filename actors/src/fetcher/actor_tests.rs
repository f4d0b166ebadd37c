//! The fetcher actor on a loopback site: each fetch is a task of its own, its end goes to the scheduler (a small
//! page parsed on the fetcher's thread), and a fetcher that stops after a caught panic takes the fetches it still
//! held with it: their requests are dropped (the site sees the connection close) and none of them ends later.

use super::*;
use crate::fetcher::http::HttpSettings;
use crate::parser::actor::PoolRestarts;
use crate::parser::logic::tests::{job, settings};
use crate::parser::pool::{Busy, ParserFactory};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the scheduler and the supervisor stand-ins received.
#[derive(Default)]
struct Seen {
    done: Vec<JobDone>,
    failed: Vec<ChildFailed>,
}

struct Recorder(Arc<Mutex<Seen>>);

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<JobDone> for Recorder {
    type Result = ();
    fn handle(&mut self, msg: JobDone, _ctx: &mut Context<Self>) {
        self.0.lock().unwrap().done.push(msg);
    }
}

impl Handler<ChildFailed> for Recorder {
    type Result = ();
    fn handle(&mut self, msg: ChildFailed, _ctx: &mut Context<Self>) {
        self.0.lock().unwrap().failed.push(msg);
    }
}

/// What the site saw: the paths it answered, and the connections of `/slow` that closed on it.
#[derive(Default)]
struct Site {
    answered: Vec<String>,
    slow_held: usize,
    slow_closed: usize,
}

/// A site on 127.0.0.1: `/slow` is never answered (the connection is held until the client closes it), any other
/// path gets a small page with no links.
async fn site() -> (std::net::SocketAddr, Arc<Mutex<Site>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Site::default()));
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let s = s.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
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
                let body = "<html><body><p>small</p></body></html>";
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                s.lock().unwrap().answered.push(path);
                let _ = conn.write_all(resp.as_bytes()).await;
                let _ = conn.read(&mut buf).await;
            });
        }
    });
    (addr, seen)
}

/// A started fetcher with `faults`, its stand-ins recording into the returned `Seen`.
fn fetcher(faults: &str) -> (actix::Addr<Fetcher>, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let rec = Recorder(seen.clone()).start();
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
        None,
    )
    .start();
    (f, seen)
}

fn fetch(base: std::net::SocketAddr, path: &str, id: JobId) -> Fetch {
    let mut j = job(&format!("http://{base}{path}"), JobKind::Page, 0);
    j.id = id;
    Fetch { job: j }
}

/// Waits until `done` holds, checking every 10 ms for at most five seconds.
async fn until(done: impl Fn() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

#[actix_rt::test]
async fn fetches_run_at_once_and_each_end_reaches_the_scheduler() {
    let (base, site) = site().await;
    let (f, seen) = fetcher("");
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
    let (base, site) = site().await;
    let (f, seen) = fetcher("fetcher:/poison");
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
