//! The SSRF guard in the proxy-chain actor: a hop given by IP, an IP-literal target and a target resolved here
//! (`resolve = "local"`) are checked before anything is dialed; a refusal is `ProxyFailure::Refused`. With
//! `allow_cidrs = ["127.0.1.0/24"]`, 127.0.1.x is allowed and 127.0.2.x is not. A minimal SOCKS5 server (no auth,
//! IPv4 CONNECT, success without relaying) records the targets it was asked for.

use super::*;
use crate::resolver::Resolver;
use crawl_core::config::Config;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Connections accepted and CONNECT targets asked for.
#[derive(Clone, Default)]
struct Seen {
    conns: Arc<Mutex<usize>>,
    targets: Arc<Mutex<Vec<SocketAddr>>>,
}

async fn session(mut c: TcpStream, seen: Seen) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    c.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    c.read_exact(&mut methods).await?;
    c.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    c.read_exact(&mut req).await?;
    let mut addr = [0u8; 6];
    c.read_exact(&mut addr).await?;
    let ip = Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]);
    let port = u16::from_be_bytes([addr[4], addr[5]]);
    seen.targets
        .lock()
        .unwrap()
        .push(SocketAddr::new(ip.into(), port));
    c.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).await?;
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest).await;
    Ok(())
}

async fn socks_on(ip: &str) -> (SocketAddr, Seen) {
    let listener = TcpListener::bind((ip, 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Seen::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((c, _)) = listener.accept().await {
            *s.conns.lock().unwrap() += 1;
            tokio::spawn(session(c, s.clone()));
        }
    });
    (addr, seen)
}

fn chains(hop: SocketAddr, local: bool, resolver_hosts: &str) -> (ProxyConfig, Config) {
    let resolve = if local { "resolve = \"local\"\n" } else { "" };
    let text = format!(
        "[security]\nallow_cidrs = [\"127.0.1.0/24\"]\n[resolver]\nhijack_probe = false\nmode = \"plain\"\n\
         nameservers = [\"127.0.0.1:9\"]\n{resolver_hosts}\n[proxy]\ndefault = \"a\"\nconnect_timeout_ms = 2000\n\
         [proxy.chains.a]\nhops = [\"socks5://{hop}\"]\n{resolve}"
    );
    let config = Config::from_str(&text, "t.toml").expect("valid config");
    (config.proxy.clone(), config)
}

fn open(host: &str, port: u16) -> OpenChain {
    OpenChain {
        host: host.to_owned(),
        port,
        tried: Vec::new(),
        trace: TraceCtx::default(),
    }
}

fn refused(r: &Result<Opened, ProxyFailure>) -> Option<(String, IpAddr)> {
    match r {
        Err(ProxyFailure::Refused { host, addr }) => Some((host.clone(), *addr)),
        _ => None,
    }
}

#[actix_rt::test]
async fn a_configured_hop_on_a_private_address_is_used_as_configured() {
    // A local SOCKS daemon (loopback, not in allow_cidrs) is the operator's choice: the guard judges targets only.
    let (hop, seen) = socks_on("127.0.2.9").await;
    let (proxy, config) = chains(hop, false, "");
    let actor = ProxyChains::new(&proxy, None)
        .with_guard(config.security.guard())
        .start();
    let r = actor.send(open("93.184.216.34", 80)).await.expect("answer");
    assert!(matches!(r, Ok(Opened::Chain { .. })), "{r:?}");
    assert_eq!(*seen.conns.lock().unwrap(), 1);
    // A private target through the same hop is still refused, and the hop is not dialed for it.
    let r = actor.send(open("127.0.2.10", 80)).await.expect("answer");
    assert!(refused(&r).is_some(), "{r:?}");
    assert_eq!(*seen.conns.lock().unwrap(), 1);
}

#[actix_rt::test]
async fn an_ip_literal_target_is_checked_before_the_chain_opens() {
    let (hop, seen) = socks_on("127.0.1.9").await;
    let (proxy, config) = chains(hop, false, "");
    let actor = ProxyChains::new(&proxy, None)
        .with_guard(config.security.guard())
        .start();
    for target in [
        "127.0.2.10",
        "169.254.169.254",
        "[::ffff:10.0.0.1]",
        "0.0.0.0",
    ] {
        let r = actor.send(open(target, 80)).await.expect("answer");
        assert!(refused(&r).is_some(), "{target}: {r:?}");
    }
    assert_eq!(*seen.conns.lock().unwrap(), 0);
    let r = actor.send(open("127.0.1.77", 80)).await.expect("answer");
    assert!(matches!(r, Ok(Opened::Chain { .. })), "{r:?}");
    assert_eq!(
        *seen.targets.lock().unwrap(),
        ["127.0.1.77:80".parse::<SocketAddr>().unwrap()]
    );
}

#[actix_rt::test]
async fn a_target_resolved_here_is_sent_as_an_allowed_address_only() {
    let (hop, seen) = socks_on("127.0.1.11").await;
    let hosts = "hosts = { \"mixed.test\" = [\"127.0.2.12\", \"127.0.1.12\"], \"inside.test\" = [\"127.0.2.13\", \"10.0.0.1\"] }";
    let (proxy, config) = chains(hop, true, hosts);
    let parts = crate::resolver::setup::build(&config).expect("resolver parts");
    let resolver = Resolver::new(parts.settings, parts.ctx, parts.doh).start();
    let actor = ProxyChains::new(&proxy, Some(resolver.recipient()))
        .with_guard(config.security.guard())
        .start();
    let r = actor.send(open("mixed.test", 8080)).await.expect("answer");
    assert!(matches!(r, Ok(Opened::Chain { .. })), "{r:?}");
    assert_eq!(
        *seen.targets.lock().unwrap(),
        ["127.0.1.12:8080".parse::<SocketAddr>().unwrap()],
        "the private address of the mixed set was skipped"
    );
    let r = actor.send(open("inside.test", 8080)).await.expect("answer");
    assert_eq!(
        refused(&r),
        Some(("inside.test".to_owned(), "127.0.2.13".parse().unwrap())),
        "{r:?}"
    );
    assert_eq!(
        *seen.conns.lock().unwrap(),
        1,
        "nothing dialed for the refused target"
    );
}
