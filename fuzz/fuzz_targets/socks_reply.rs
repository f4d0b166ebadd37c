//! SOCKS5 replies: a chain of one or two hops (with or without RFC 1929 credentials) is opened against a loopback
//! server that sends the fuzz input as everything it says, then closes. The chain opens exactly when a plain
//! reference reader accepts the input as method-selection, auth and CONNECT replies; once open, the stream reads
//! exactly the bytes after those replies (the handshake read neither less nor more); errors name a hop of the
//! chain and never show the password.
#![no_main]

use crawl_actors::proxy::socks::{Deadlines, HopSpec, Target, open_chain, parse_hop};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

const PASSWORD: &str = "pw-Zq8xK3";

struct Server {
    rt: Runtime,
    listener: TcpListener,
    port: u16,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("loopback listener");
        let port = listener.local_addr().expect("bound address").port();
        Server { rt, listener, port }
    })
}

/// The bytes a correct client reads for one hop's replies, or `None` when the handshake must fail.
fn hop_replies(data: &[u8], creds: bool) -> Option<usize> {
    let mut at = 0;
    let greeting = data.get(at..at + 2)?;
    if greeting[0] != 5 {
        return None;
    }
    match greeting[1] {
        0 => {}
        2 if creds => {
            if data.get(at + 2..at + 4)? != [1, 0] {
                return None;
            }
            at += 2;
        }
        _ => return None,
    }
    at += 2;
    let reply = data.get(at..at + 4)?;
    if reply[..3] != [5, 0, 0] {
        return None;
    }
    let addr = match reply[3] {
        1 => 4,
        4 => 16,
        3 => {
            let n = usize::from(*data.get(at + 4)?);
            std::str::from_utf8(data.get(at + 5..at + 5 + n)?).ok()?;
            1 + n
        }
        _ => return None,
    };
    at += 4 + addr + 2;
    (data.len() >= at).then_some(at)
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, replies)) = data.split_first() else {
        return;
    };
    if replies.len() > 4096 {
        return;
    }
    let s = server();
    let creds = [flags & 1 == 1, flags & 2 == 2];
    let hop = |port: u16, creds: bool| -> HopSpec {
        let auth = if creds {
            format!("user:{PASSWORD}@")
        } else {
            String::new()
        };
        parse_hop(&format!("socks5://{auth}127.0.0.1:{port}")).expect("hop parses")
    };
    let mut hops = vec![hop(s.port, creds[0])];
    if flags & 4 == 4 {
        hops.push(hop(1080, creds[1]));
    }
    let target = if flags & 8 == 8 {
        Target::Name("example.com".into(), 443)
    } else {
        Target::Addr("192.0.2.7:80".parse().expect("address"))
    };

    let mut expected = Some(0);
    for (i, _) in hops.iter().enumerate() {
        expected = expected.and_then(|at: usize| Some(at + hop_replies(&replies[at..], creds[i])?));
    }

    let (read, ()) = s.rt.block_on(async {
        let serve = async {
            let Ok((mut conn, _)) = s.listener.accept().await else {
                return;
            };
            let _ = conn.write_all(replies).await;
            let _ = conn.shutdown().await;
            let mut sink = Vec::new();
            let _ = conn.read_to_end(&mut sink).await;
        };
        let client = async {
            match open_chain(&hops, &target, &Deadlines::default()).await {
                Ok(mut stream) => {
                    let mut tail = Vec::new();
                    stream
                        .read_to_end(&mut tail)
                        .await
                        .map(|_| tail)
                        .map_err(|e| e.to_string())
                }
                Err(e) => {
                    assert!(e.hop <= hops.len(), "hop {} of {}", e.hop, hops.len());
                    Err(format!("{e:?} / {e}"))
                }
            }
        };
        tokio::join!(client, serve)
    });
    match (read, expected) {
        (Ok(tail), Some(at)) => assert_eq!(
            tail,
            &replies[at..],
            "the handshake read a wrong number of bytes"
        ),
        (Ok(_), None) => panic!("the chain opened on replies a correct client rejects"),
        (Err(e), Some(_)) => panic!("the chain failed on valid replies: {e}"),
        (Err(e), None) => assert!(!e.contains(PASSWORD), "the password shows in {e}"),
    }
});
