//! Tests of the proxy-chain actor's `Reconfigure`: routes change at once, breakers of unchanged chains survive,
//! removed chains go, open tunnels keep working. Real sockets on 127.0.0.1: a minimal SOCKS5 server (no auth,
//! IPv4 CONNECT) and an echo server. Every `OpenChain` carries an empty trace (the span paths are no-ops).

use super::*;
use crawl_core::config::Config;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Echoes every byte back.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = c.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// One SOCKS5 session: no-auth greeting, CONNECT to an IPv4 address, then relay.
async fn socks_session(mut c: TcpStream) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    c.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    c.read_exact(&mut methods).await?;
    c.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    c.read_exact(&mut req).await?;
    if req[3] != 1 {
        c.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        return Ok(());
    }
    let mut addr = [0u8; 6];
    c.read_exact(&mut addr).await?;
    let ip = std::net::Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]);
    let port = u16::from_be_bytes([addr[4], addr[5]]);
    let Ok(mut upstream) = TcpStream::connect((ip, port)).await else {
        c.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
        return Ok(());
    };
    c.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).await?;
    tokio::io::copy_bidirectional(&mut c, &mut upstream).await?;
    Ok(())
}

async fn socks_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((c, _)) = listener.accept().await {
            tokio::spawn(socks_session(c));
        }
    });
    addr
}

/// A port on 127.0.0.1 nothing listens on (connections are refused).
async fn refused_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("addr")
}

fn config(body: &str) -> ProxyConfig {
    let text = format!(
        "[proxy]\nbreaker_failures = 1\nbreaker_cooldown_ms = 600000\nconnect_timeout_ms = 2000\n{body}"
    );
    Config::from_str(&text, "t.toml")
        .expect("valid config")
        .proxy
}

fn open(host: &str, port: u16) -> OpenChain {
    OpenChain {
        host: host.to_owned(),
        port,
        tried: Vec::new(),
        trace: TraceCtx::default(),
    }
}

#[actix_rt::test]
async fn a_rule_changed_to_direct_applies_to_the_next_connection() {
    let dead = refused_port().await;
    let chain_a = format!("[proxy.chains.a]\nhops = [\"socks5://{dead}\"]\n");
    let before = config(&format!(
        "default = \"direct\"\n{chain_a}[[proxy.rules]]\nhosts = [\"*.x.test\"]\nuse = \"a\"\n"
    ));
    let addr = ProxyChains::new(&before, None).start();
    let first = addr.send(open("www.x.test", 80)).await.expect("answer");
    assert!(
        matches!(&first, Err(ProxyFailure::Fault { chain, .. }) if chain == "a"),
        "{first:?}"
    );

    let after = config(&format!(
        "default = \"direct\"\n{chain_a}[[proxy.rules]]\nhosts = [\"*.x.test\"]\nuse = \"direct\"\n"
    ));
    addr.send(Reconfigure { config: after })
        .await
        .expect("reconfigured");
    let second = addr.send(open("www.x.test", 80)).await.expect("answer");
    assert!(
        matches!(second, Ok(Opened::Direct { fallback: false })),
        "{second:?}"
    );
    let stats = addr.send(GetProxyStats).await.expect("stats");
    assert_eq!(stats.direct_connects, 1);
}

#[actix_rt::test]
async fn breakers_of_unchanged_chains_survive_and_changed_ones_start_closed() {
    let dead = refused_port().await;
    let dead2 = refused_port().await;
    let chains = format!(
        "[proxy.chains.a]\nhops = [\"socks5://{dead}\"]\n[proxy.chains.b]\nhops = [\"socks5://{dead2}\"]\n\
         [[proxy.rules]]\nhosts = [\"a.test\"]\nuse = \"a\"\n[[proxy.rules]]\nhosts = [\"b.test\"]\nuse = \"b\"\n"
    );
    let addr = ProxyChains::new(&config(&format!("default = \"direct\"\n{chains}")), None).start();
    for host in ["a.test", "b.test"] {
        let r = addr.send(open(host, 80)).await.expect("answer");
        assert!(matches!(r, Err(ProxyFailure::Fault { .. })), "{r:?}");
    }
    let stats = addr.send(GetProxyStats).await.expect("stats");
    for name in ["a", "b"] {
        assert_eq!(
            stats.chain(name).map(|c| c.counters.breaker.as_str()),
            Some("open")
        );
    }

    // Same `a`; `b` moves to another port (a changed chain); a new chain `c`; a new select policy.
    let b_moved = refused_port().await;
    let next = config(&format!(
        "default = \"direct\"\nselect = \"least-failures\"\n\
         [proxy.chains.a]\nhops = [\"socks5://{dead}\"]\n[proxy.chains.b]\nhops = [\"socks5://{b_moved}\"]\n\
         [proxy.chains.c]\nhops = [\"socks5://{dead}\"]\n\
         [[proxy.rules]]\nhosts = [\"a.test\"]\nuse = \"a\"\n[[proxy.rules]]\nhosts = [\"b.test\"]\nuse = \"b\"\n"
    ));
    addr.send(Reconfigure { config: next })
        .await
        .expect("reconfigured");
    let stats = addr.send(GetProxyStats).await.expect("stats");
    let a = stats.chain("a").expect("a kept");
    assert_eq!(
        (a.counters.breaker.as_str(), a.counters.total_faults()),
        ("open", 1)
    );
    let b = stats.chain("b").expect("b rebuilt");
    assert_eq!(
        (b.counters.breaker.as_str(), b.counters.total_faults()),
        ("closed", 0)
    );
    assert!(stats.chain("c").is_some());

    // `a` is still open: no chain for a.test (fallback_direct is off); `b` is tried again.
    let r = addr.send(open("a.test", 80)).await.expect("answer");
    assert!(matches!(r, Err(ProxyFailure::NoChain { .. })), "{r:?}");
    let r = addr.send(open("b.test", 80)).await.expect("answer");
    assert!(
        matches!(&r, Err(ProxyFailure::Fault { chain, .. }) if chain == "b"),
        "{r:?}"
    );
    let text = metrics().prometheus_text();
    assert!(
        text.lines()
            .any(|l| l.starts_with("crawl_proxy_faults_total") && l.contains("chain=\"b\"")),
        "{text}"
    );
}

#[actix_rt::test]
async fn an_open_tunnel_keeps_working_after_its_chain_is_removed() {
    let echo = echo_server().await;
    let hop = socks_server().await;
    let before = config(&format!(
        "default = \"one\"\n[proxy.chains.one]\nhops = [\"socks5://{hop}\"]\n"
    ));
    let addr = ProxyChains::new(&before, None).start();
    let opened = addr
        .send(open(&echo.ip().to_string(), echo.port()))
        .await
        .expect("answer");
    let Ok(Opened::Chain { chain, mut stream }) = opened else {
        panic!("a tunnel: {opened:?}");
    };
    assert_eq!(chain, "one");

    let after = config(&format!(
        "default = \"two\"\n[proxy.chains.two]\nhops = [\"socks5://{hop}\"]\n"
    ));
    addr.send(Reconfigure { config: after })
        .await
        .expect("reconfigured");
    stream.write_all(b"ping").await.expect("write");
    let mut buf = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut buf))
        .await
        .expect("in time")
        .expect("read");
    assert_eq!(&buf, b"ping");

    let stats = addr.send(GetProxyStats).await.expect("stats");
    assert!(stats.chain("one").is_none(), "removed chains are dropped");
    assert_eq!(stats.chain("two").map(|c| c.counters.connects), Some(0));
    let next = addr
        .send(open(&echo.ip().to_string(), echo.port()))
        .await
        .expect("answer");
    assert!(
        matches!(&next, Ok(Opened::Chain { chain, .. }) if chain == "two"),
        "{next:?}"
    );
}
