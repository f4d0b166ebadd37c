//! A loopback HTTP/1.1 server for the secrets tests: fixed answers per path, and the request head of every request
//! kept (so a test can see which requests carried `Authorization` or `Cookie`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a path answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Status, extra headers and a body, then the connection closes.
    Reply(u16, Vec<(String, String)>, Vec<u8>),
    /// Reads the request and never answers (until the client goes).
    Stall,
}

impl Answer {
    pub fn html(body: impl Into<String>) -> Answer {
        let h = vec![("Content-Type".into(), "text/html".into())];
        Answer::Reply(200, h, body.into().into_bytes())
    }

    pub fn text(status: u16, body: &str) -> Answer {
        let h = vec![("Content-Type".into(), "text/plain".into())];
        Answer::Reply(status, h, body.as_bytes().to_vec())
    }

    pub fn redirect(location: &str) -> Answer {
        Answer::Reply(302, vec![("Location".into(), location.into())], Vec::new())
    }
}

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    /// Header names lowercase, values as sent.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A server on `ip:0` answering from a path map (404 for anything else).
pub struct Server {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    routes: Arc<Mutex<HashMap<String, Answer>>>,
}

impl Server {
    pub async fn start(ip: IpAddr) -> Server {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let routes: Arc<Mutex<HashMap<String, Answer>>> = Arc::default();
        let (s, r) = (seen.clone(), routes.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve(tcp, s.clone(), r.clone()));
            }
        });
        Server { addr, seen, routes }
    }

    pub fn route(&self, path: &str, answer: Answer) {
        self.routes
            .lock()
            .expect("routes")
            .insert(path.to_owned(), answer);
    }

    /// `http://ip:port{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }
}

async fn serve(
    mut tcp: TcpStream,
    seen: Arc<Mutex<Vec<Seen>>>,
    routes: Arc<Mutex<HashMap<String, Answer>>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 64 * 1024 {
            return;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or("/")
        .to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    seen.lock().expect("seen").push(Seen {
        path: path.clone(),
        headers,
    });
    let answer = routes.lock().expect("routes").get(&path).cloned();
    let (status, extra, body) = match answer {
        Some(Answer::Reply(s, h, b)) => (s, h, b),
        Some(Answer::Stall) => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return;
        }
        None => (404, Vec::new(), b"not found".to_vec()),
    };
    let mut out = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (n, v) in extra {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    let _ = tcp.write_all(&bytes).await;
    let _ = tcp.shutdown().await;
}

/// A server that answers every connection with bytes that are not TLS, then closes (an https URL to it fails the
/// handshake).
pub async fn not_tls(ip: IpAddr) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut b = [0u8; 512];
                let _ = tcp.read(&mut b).await;
                let _ = tcp.write_all(b"HTTP/1.1 400 Not TLS\r\n\r\n").await;
            });
        }
    });
    addr
}
