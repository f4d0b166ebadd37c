//! Tests of the resolver actor: `Reconfigure` (hosts, bogus IPs, the cache, lookups in flight, a Supervisor
//! restart afterwards), against a real DNS responder over UDP on 127.0.0.1 built with hickory-proto. Every
//! `Resolve` carries an empty trace, so these also run the span code paths as no-ops.

use super::*;
use crate::resolver::setup;
use crawl_core::config::Config;
use crawl_observability::trace::TraceCtx;
use hickory_proto::op::{Message, OpCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::UdpSocket;

/// The address the responder gives every name.
const ANSWER: [u8; 4] = [93, 184, 216, 34];

fn reply(query: &Message) -> Option<Vec<u8>> {
    let mut m = Message::response(query.metadata.id, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.metadata.recursion_available = true;
    m.add_queries(query.queries.iter().cloned());
    let q = query.queries.first()?;
    m.add_answer(Record::from_rdata(
        q.name().clone(),
        300,
        RData::A(A::from(Ipv4Addr::from(ANSWER))),
    ));
    m.to_vec().ok()
}

/// A UDP DNS responder answering every query with the A record [`ANSWER`] after `delay` (an AAAA query thus gets no
/// address of its type); counts the A queries, one per lookup.
async fn responder(delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    responder_with(delay, true).await
}

/// [`responder`], answering AAAA queries only when `answer_aaaa` (else dropping them, as some resolvers and
/// middleboxes do).
async fn responder_with(delay: Duration, answer_aaaa: bool) -> (SocketAddr, Arc<AtomicUsize>) {
    let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.expect("bind"));
    let addr = socket.local_addr().expect("local addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        while let Ok((len, peer)) = socket.recv_from(&mut buf).await {
            let Ok(query) = Message::from_vec(&buf[..len]) else {
                continue;
            };
            if query
                .queries
                .first()
                .is_some_and(|q| q.query_type() == hickory_proto::rr::RecordType::A)
            {
                seen.fetch_add(1, Ordering::SeqCst);
            } else if !answer_aaaa {
                continue;
            }
            let Some(answer) = reply(&query) else {
                continue;
            };
            let socket = socket.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = socket.send_to(&answer, peer).await;
            });
        }
    });
    (addr, count)
}

/// The resolver's parts from a config with `extra` lines under `[resolver]`, as the reload builds them.
fn parts(dns: SocketAddr, extra: &str) -> Parts {
    let text = format!(
        "[resolver]\nnameservers = [\"{dns}\"]\nmode = \"detect\"\nhijack_probe = false\nhold_on_ms = 0\n\
         timeout_ms = 2000\nattempts = 1\n{extra}\n"
    );
    let config = Config::from_str(&text, "t.toml").expect("valid config");
    setup::build(&config).expect("resolver parts")
}

fn resolver(p: Parts) -> Resolver {
    Resolver::new(p.settings, p.ctx, p.doh)
}

fn resolve(name: &str) -> Resolve {
    Resolve {
        name: name.to_owned(),
        trace: TraceCtx::default(),
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

fn resolved(o: &Outcome) -> Option<&Resolution> {
    match o {
        Outcome::Resolved(r) => Some(r),
        _ => None,
    }
}

/// Stops the actor, as a panicking lookup does, so that its `Supervisor` restarts it.
struct Crash;

impl actix::Message for Crash {
    type Result = ();
}

impl Handler<Crash> for Resolver {
    type Result = ();

    fn handle(&mut self, _msg: Crash, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

#[actix_rt::test]
async fn reconfigure_replaces_the_hosts() {
    let (dns, queries) = responder(Duration::ZERO).await;
    let addr = resolver(parts(dns, "hosts = { \"a.test\" = \"10.0.0.1\" }")).start();
    let first = addr.send(resolve("A.test.")).await.expect("answer");
    let r = resolved(&first).expect("resolved");
    assert_eq!(
        (r.addrs.as_slice(), r.source),
        (&[ip("10.0.0.1")][..], Source::Hosts)
    );

    addr.send(Reconfigure {
        parts: parts(dns, "hosts = { \"a.test\" = \"10.0.0.2\" }"),
    })
    .await
    .expect("reconfigured");
    let second = addr.send(resolve("a.test")).await.expect("answer");
    assert_eq!(second.addrs(), [ip("10.0.0.2")]);
    assert_eq!(queries.load(Ordering::SeqCst), 0, "hosts need no query");
    let stats = addr.send(GetResolverStats).await.expect("stats");
    assert_eq!(stats.lookups.get("hosts/resolved"), Some(&2));
}

#[actix_rt::test]
async fn a_bogus_ip_added_by_reconfigure_applies_to_the_next_lookup() {
    let (dns, queries) = responder(Duration::ZERO).await;
    let addr = resolver(parts(dns, "")).start();
    let clean = addr.send(resolve("www.example.com")).await.expect("answer");
    let r = resolved(&clean).expect("resolved");
    assert_eq!((r.source, r.polluted), (Source::Plain, false));
    assert_eq!(r.addrs, [IpAddr::from(ANSWER)]);
    let cached = addr.send(resolve("www.example.com")).await.expect("answer");
    assert_eq!(resolved(&cached).map(|r| r.source), Some(Source::Cache));
    assert_eq!(queries.load(Ordering::SeqCst), 1);

    addr.send(Reconfigure {
        parts: parts(dns, "bogus_ips = [\"93.184.216.0/24\"]"),
    })
    .await
    .expect("reconfigured");
    let polluted = addr.send(resolve("www.example.com")).await.expect("answer");
    assert!(polluted.polluted(), "the cache was cleared: {polluted:?}");
    assert_eq!(polluted.rules(), [Rule::BogusIp]);
    assert!(polluted.addrs().is_empty(), "no DoH, so no clean answer");
    assert_eq!(queries.load(Ordering::SeqCst), 2);

    let stats = addr.send(GetResolverStats).await.expect("stats");
    assert_eq!(stats.lookups.get("plain/resolved"), Some(&1));
    assert_eq!(stats.lookups.get("cache/resolved"), Some(&1));
    assert_eq!(stats.lookups.get("lookup/failed"), Some(&1));
    assert_eq!(stats.verdicts.get("bogus_ip"), Some(&1));
    // The metric counts at the same place (other tests add to the process-wide registry too).
    let text = metrics().prometheus_text();
    let value = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert!(
        value("crawl_dns_pollution_rules_total{rule=\"bogus_ip\"} ") >= 1.0,
        "{text}"
    );
    assert!(value("crawl_dns_polluted_total ") >= 1.0, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("crawl_dns_lookups_total")
                && l.contains("source=\"cache\"")
                && l.contains("outcome=\"resolved\"")),
        "{text}"
    );
}

#[actix_rt::test]
async fn a_polluted_answer_served_again_from_the_cache_is_counted_once() {
    let (dns, queries) = responder(Duration::ZERO).await;
    let addr = resolver(parts(
        dns,
        "bogus_ips = [\"93.184.216.0/24\"]\nnegative_ttl_s = 300",
    ))
    .start();
    for _ in 0..4 {
        let o = addr
            .send(resolve("forged.example.com"))
            .await
            .expect("answer");
        assert!(o.polluted(), "{o:?}");
    }
    assert_eq!(queries.load(Ordering::SeqCst), 1, "asked once, then cached");
    let stats = addr.send(GetResolverStats).await.expect("stats");
    assert_eq!(stats.lookups.get("lookup/failed"), Some(&1));
    assert_eq!(stats.lookups.get("cache/failed"), Some(&3));
    assert_eq!(stats.polluted, 1, "one network answer, one verdict");
    assert_eq!(stats.verdicts.get("bogus_ip"), Some(&1));
    let network: u64 = stats
        .lookups
        .iter()
        .filter(|(k, _)| !k.starts_with("hosts/") && !k.starts_with("cache/"))
        .map(|(_, v)| v)
        .sum();
    assert!(stats.polluted <= network, "{stats:?}");
}

#[test]
fn only_network_answers_carry_a_verdict_to_count() {
    let forged = |source| {
        Outcome::Resolved(Resolution {
            addrs: vec![ip("10.0.0.1")],
            source,
            polluted: true,
            rules: vec![Rule::BogusIp, Rule::CrossCheck],
            ttl: Duration::from_secs(1),
        })
    };
    assert_eq!(
        new_verdict(&forged(Source::Doh), false),
        Some(&[Rule::BogusIp, Rule::CrossCheck][..])
    );
    assert_eq!(new_verdict(&forged(Source::Cache), false), None);
    let hijack = Outcome::NxDomain {
        rules: vec![Rule::NxdomainHijack],
    };
    assert_eq!(
        new_verdict(&hijack, false),
        Some(&[Rule::NxdomainHijack][..])
    );
    assert_eq!(new_verdict(&hijack, true), None);
    assert_eq!(
        new_verdict(&Outcome::NxDomain { rules: Vec::new() }, false),
        None
    );
}

#[actix_rt::test]
async fn lookups_in_flight_finish_with_their_settings_and_are_not_cached() {
    let (dns, queries) = responder(Duration::from_millis(300)).await;
    let addr = resolver(parts(dns, "")).start();
    // Two requests for the same name share one lookup; the reload arrives while it runs.
    let one = addr.send(resolve("slow.example.com"));
    let two = addr.send(resolve("slow.example.com"));
    let reload = addr.send(Reconfigure {
        parts: parts(dns, "bogus_ips = [\"93.184.216.34\"]"),
    });
    reload.await.expect("reconfigured");
    let (one, two) = (one.await.expect("answer"), two.await.expect("answer"));
    for o in [&one, &two] {
        let r = resolved(o).expect("answered with the settings the lookup started with");
        assert_eq!(
            (r.addrs.as_slice(), r.polluted),
            (&[IpAddr::from(ANSWER)][..], false)
        );
    }
    assert_eq!(queries.load(Ordering::SeqCst), 1, "coalesced");
    let after = addr
        .send(resolve("slow.example.com"))
        .await
        .expect("answer");
    assert!(
        after.polluted(),
        "the old answer was not cached under the new settings: {after:?}"
    );
    assert_eq!(queries.load(Ordering::SeqCst), 2);
}

#[actix_rt::test]
async fn a_supervisor_restart_keeps_the_reconfigured_settings() {
    let (dns, _) = responder(Duration::ZERO).await;
    let p = parts(dns, "hosts = { \"a.test\" = \"10.0.0.1\" }");
    // As tree.rs starts it: the factory runs once, restarts reuse the actor value.
    let addr = actix::Supervisor::start(move |_| resolver(p));
    addr.send(Reconfigure {
        parts: parts(dns, "hosts = { \"a.test\" = \"10.0.0.2\" }"),
    })
    .await
    .expect("reconfigured");
    let restarts = || {
        metrics()
            .prometheus_text()
            .lines()
            .find_map(|l| l.strip_prefix("crawl_actor_restarts_total{actor=\"resolver\"} "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let before = restarts();
    addr.send(Crash).await.expect("crashed");
    let after = addr
        .send(resolve("a.test"))
        .await
        .expect("answer after the restart");
    assert_eq!(after.addrs(), [ip("10.0.0.2")]);
    assert!(restarts() >= before + 1.0, "restart counted");
}

#[test]
fn labels_of_answers() {
    let resolved = Outcome::Resolved(Resolution {
        addrs: vec![ip("10.0.0.1")],
        source: Source::Doh,
        polluted: false,
        rules: Vec::new(),
        ttl: Duration::from_secs(1),
    });
    assert_eq!(labels(&resolved, false), ("doh", "resolved"));
    let nx = Outcome::NxDomain {
        rules: vec![Rule::NxdomainHijack],
    };
    assert_eq!(labels(&nx, false), ("lookup", "nxdomain"));
    assert_eq!(labels(&nx, true), ("cache", "nxdomain"));
    assert_eq!(verdict(&nx), (true, &[Rule::NxdomainHijack][..]));
    let failed = Outcome::Unresolved {
        polluted: false,
        rules: Vec::new(),
        detail: "timeout".into(),
    };
    assert_eq!(labels(&failed, true), ("cache", "failed"));
    // The span of an empty trace records nothing and does not panic.
    end_span(ChildSpan::none(), &failed, false);
    assert_eq!(join(&[ip("10.0.0.1"), ip("::1")]), "10.0.0.1,::1");
}

/// The NXDOMAIN-hijack probe, which every lookup waits for, goes on with the A answer when the AAAA query is dropped
/// (the responder answers the probe's random name: a hijack, found from the A answer alone).
#[actix_rt::test]
async fn the_hijack_probe_does_not_wait_out_an_unanswered_aaaa_query() {
    let (dns, a_queries) = responder_with(Duration::ZERO, false).await;
    let text = format!(
        "[resolver]\nnameservers = [\"{dns}\"]\nmode = \"detect\"\nhijack_probe = true\n\
         timeout_ms = 30000\nattempts = 1\n"
    );
    let config = Config::from_str(&text, "t.toml").expect("valid config");
    let p = setup::build(&config).expect("resolver parts");
    let found = tokio::time::timeout(
        Duration::from_secs(10),
        crate::resolver::lookup::probe_hijack(&p.settings, 7),
    )
    .await
    .expect("the probe waited for the AAAA query's timeout");
    assert_eq!(found, [IpAddr::from(ANSWER)]);
    assert_eq!(a_queries.load(Ordering::SeqCst), 1);
}

/// A resolver that drops AAAA queries costs a lookup the family wait, not the query timeout: the name resolves to
/// its A record well within the 30 s timeout, and both queries are counted.
#[actix_rt::test]
async fn unanswered_aaaa_queries_do_not_hold_the_lookup() {
    let (dns, a_queries) = responder_with(Duration::ZERO, false).await;
    let text = format!(
        "[resolver]\nnameservers = [\"{dns}\"]\nmode = \"detect\"\nhijack_probe = false\nhold_on_ms = 0\n\
         timeout_ms = 30000\nattempts = 1\n"
    );
    let config = Config::from_str(&text, "t.toml").expect("valid config");
    let addr = resolver(setup::build(&config).expect("resolver parts")).start();
    let outcome = tokio::time::timeout(Duration::from_secs(10), addr.send(resolve("a.test")))
        .await
        .expect("the lookup waited for the AAAA query's timeout")
        .expect("answer");
    let r = resolved(&outcome).expect("resolved");
    assert_eq!(r.addrs, [IpAddr::from(ANSWER)]);
    assert_eq!(a_queries.load(Ordering::SeqCst), 1);
    let stats = addr.send(GetResolverStats).await.expect("stats");
    assert_eq!(
        stats.plain_queries, 2,
        "the A and the unanswered AAAA query"
    );
}
