//! A blocking HTTP/1.1 `GET` for scraping `/metrics` (Content-Length and chunked bodies, one deadline).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The scrape timeout of [`scrape`] and [`get`] (connect, send, receive altogether).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// An HTTP response read by [`get`].
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Decodes a chunked body (extensions and trailers ignored).
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let eol = find(data, b"\r\n").ok_or("chunked body: truncated chunk size line")?;
        let line = std::str::from_utf8(&data[..eol])
            .map_err(|_| "chunked body: chunk size is not text")?;
        let size_hex = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| format!("chunked body: bad chunk size {line:?}"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size + 2 {
            return Err(format!(
                "chunked body: truncated chunk ({} of {size} bytes)",
                data.len()
            ));
        }
        out.extend_from_slice(&data[..size]);
        if &data[size..size + 2] != b"\r\n" {
            return Err("chunked body: chunk not followed by CRLF".into());
        }
        data = &data[size + 2..];
    }
}

/// A blocking HTTP/1.1 `GET path` to `addr` (`Connection: close`, `Accept` when given), with a 5 s timeout
/// ([`SCRAPE_TIMEOUT`]); handles `Transfer-Encoding: chunked`, `Content-Length` and bodies that end at EOF.
pub fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Result<Response, String> {
    let deadline = Instant::now() + SCRAPE_TIMEOUT;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("GET http://{addr}{path}: timed out after {SCRAPE_TIMEOUT:?}"))
    };
    let mut stream = TcpStream::connect_timeout(&addr, left()?)
        .map_err(|e| format!("GET http://{addr}{path}: connect: {e}"))?;
    stream
        .set_write_timeout(Some(left()?))
        .map_err(|e| format!("set_write_timeout: {e}"))?;
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: crawl-tests\r\nConnection: close\r\n"
    );
    if let Some(accept) = accept {
        req.push_str(&format!("Accept: {accept}\r\n"));
    }
    req.push_str("\r\n");
    stream
        .write_all(req.as_bytes())
        .map_err(|e| format!("GET http://{addr}{path}: send: {e}"))?;

    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        stream
            .set_read_timeout(Some(left()?))
            .map_err(|e| format!("set_read_timeout: {e}"))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!(
                    "GET http://{addr}{path}: timed out after {SCRAPE_TIMEOUT:?} ({} bytes read)",
                    raw.len()
                ));
            }
            // A reset after a complete response (some servers close hard) still leaves a usable answer.
            Err(e) if !raw.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(format!("GET http://{addr}{path}: receive: {e}")),
        }
    }

    let head_end = find(&raw, b"\r\n\r\n").ok_or_else(|| {
        format!(
            "GET http://{addr}{path}: no complete response head in {} bytes",
            raw.len()
        )
    })?;
    let head = std::str::from_utf8(&raw[..head_end])
        .map_err(|_| "response head is not UTF-8".to_string())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let mut headers = Vec::new();
    for line in lines {
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| format!("bad header line {line:?}"))?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut resp = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = &raw[head_end + 4..];
    let chunked = resp.header("transfer-encoding").is_some_and(|te| {
        te.to_ascii_lowercase()
            .split(',')
            .any(|t| t.trim() == "chunked")
    });
    resp.body = if chunked {
        dechunk(rest)?
    } else if let Some(len) = resp.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| format!("bad content-length {len:?}"))?;
        if rest.len() < len {
            return Err(format!("body truncated: {} of {len} bytes", rest.len()));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(resp)
}

/// `GET /metrics` from `addr` (see [`get`]): `(content-type, body)` of a 200 answer, else an error with the status
/// and the body.
pub fn scrape(addr: SocketAddr, accept: Option<&str>) -> Result<(String, String), String> {
    let resp = get(addr, "/metrics", accept)?;
    let body = String::from_utf8(resp.body.clone())
        .map_err(|_| "the /metrics body is not UTF-8".to_string())?;
    if resp.status != 200 {
        return Err(format!(
            "GET http://{addr}/metrics: status {}: {body}",
            resp.status
        ));
    }
    Ok((resp.header("content-type").unwrap_or("").to_string(), body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A one-shot HTTP server that answers the first request with `response` and returns the request it read.
    fn serve_once(response: Vec<u8>) -> (SocketAddr, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let t = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().expect("accept");
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while find(&req, b"\r\n\r\n").is_none() {
                let n = conn.read(&mut buf).expect("read request");
                assert!(n > 0, "client closed early");
                req.extend_from_slice(&buf[..n]);
            }
            // Write in pieces to exercise the read loop.
            for piece in response.chunks(7) {
                conn.write_all(piece).expect("write");
                conn.flush().expect("flush");
            }
            String::from_utf8(req).expect("request text")
        });
        (addr, t)
    }

    #[test]
    fn scrapes_chunked_and_content_length_bodies() {
        let body = "# TYPE up gauge\nup 1\n";
        let chunked = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n\
             5;ext=1\r\n{}\r\n{:x}\r\n{}\r\n0\r\nX-Trailer: t\r\n\r\n",
            &body[..5],
            body.len() - 5,
            &body[5..]
        );
        let (addr, t) = serve_once(chunked.into_bytes());
        let (ct, got) = scrape(addr, Some("application/openmetrics-text; version=1.0.0"))
            .expect("scrape chunked");
        let req = t.join().expect("server");
        assert!(req.starts_with("GET /metrics HTTP/1.1\r\n"), "{req}");
        assert!(
            req.contains("\r\nAccept: application/openmetrics-text; version=1.0.0\r\n"),
            "{req}"
        );
        assert!(req.contains("\r\nConnection: close\r\n"), "{req}");
        assert_eq!(ct, "text/plain; version=0.0.4; charset=utf-8");
        assert_eq!(got, body);
        assert_eq!(
            super::super::parse(&got).expect("parse").value("up", &[]),
            Some(1.0)
        );

        let fixed = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: text/plain\r\n\r\n{body}",
            body.len()
        );
        let (addr, t) = serve_once(fixed.into_bytes());
        let (ct, got) = scrape(addr, None).expect("scrape content-length");
        let req = t.join().expect("server");
        assert!(!req.to_ascii_lowercase().contains("accept:"), "{req}");
        assert_eq!(ct, "text/plain");
        assert_eq!(got, body);

        let (addr, t) =
            serve_once(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".to_vec());
        let e = scrape(addr, None).expect_err("404");
        t.join().expect("server");
        assert!(e.contains("status 404") && e.contains("not found"), "{e}");

        let (addr, t) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort".to_vec());
        let e = scrape(addr, None).expect_err("truncated");
        t.join().expect("server");
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn scrape_times_out_and_reports_refused_connections() {
        // A server that accepts and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let t0 = Instant::now();
        let e = scrape(addr, None).expect_err("timeout");
        let took = t0.elapsed();
        assert!(e.contains("timed out"), "{e}");
        assert!(
            took >= Duration::from_secs(4) && took < Duration::from_secs(8),
            "{took:?}"
        );
        drop(listener);
        let e = scrape(addr, None).expect_err("refused");
        assert!(e.contains("connect"), "{e}");
    }
}
