//! A blocking HTTP/1.1 `GET` for scraping `/metrics` (Content-Length and chunked bodies, one deadline).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The scrape timeout of [`scrape`] and [`get`] (connect, send, receive altogether).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why [`get`] or [`scrape`] failed; `url` is `http://addr/path`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScrapeError {
    /// [`SCRAPE_TIMEOUT`] passed; `read` is what had come by then, when the request went out.
    #[error("GET {url}: timed out after {SCRAPE_TIMEOUT:?}{}", .read.map(|n| format!(" ({n} bytes read)")).unwrap_or_default())]
    Timeout { url: String, read: Option<usize> },
    /// The connection, the request or the response failed (`step`: connect, send, receive, or a socket option).
    #[error("GET {url}: {step}: {source}")]
    Io {
        url: String,
        step: &'static str,
        source: io::Error,
    },
    /// The connection closed before the end of the response head.
    #[error("GET {url}: no complete response head in {read} bytes")]
    NoHead { url: String, read: usize },
    /// The response head is not UTF-8.
    #[error("response head is not UTF-8")]
    HeadNotUtf8,
    /// The status line is not `HTTP/1.x <code> ...`.
    #[error("bad status line {0:?}")]
    StatusLine(String),
    /// A header line without `:`.
    #[error("bad header line {0:?}")]
    HeaderLine(String),
    /// A `Content-Length` that is not a number.
    #[error("bad content-length {0:?}")]
    ContentLength(String),
    /// Fewer body bytes than `Content-Length` says.
    #[error("body truncated: {got} of {want} bytes")]
    Truncated { got: usize, want: usize },
    /// A malformed chunked body.
    #[error("chunked body: {0}")]
    Chunked(ChunkError),
    /// The `/metrics` body is not UTF-8.
    #[error("the /metrics body is not UTF-8")]
    BodyNotUtf8,
    /// `/metrics` answered with another status than 200.
    #[error("GET {url}: status {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
}

/// What is wrong with a chunked body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkError {
    #[error("truncated chunk size line")]
    SizeLine,
    #[error("chunk size is not text")]
    SizeNotText,
    #[error("bad chunk size {0:?}")]
    Size(String),
    #[error("truncated chunk ({got} of {size} bytes)")]
    Truncated { got: usize, size: usize },
    #[error("chunk not followed by CRLF")]
    NoCrlf,
}

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
fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, ChunkError> {
    let mut out = Vec::new();
    loop {
        let eol = find(data, b"\r\n").ok_or(ChunkError::SizeLine)?;
        let line = std::str::from_utf8(&data[..eol]).map_err(|_| ChunkError::SizeNotText)?;
        let size_hex = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size_hex, 16).map_err(|_| ChunkError::Size(line.to_owned()))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size + 2 {
            return Err(ChunkError::Truncated {
                got: data.len(),
                size,
            });
        }
        out.extend_from_slice(&data[..size]);
        if &data[size..size + 2] != b"\r\n" {
            return Err(ChunkError::NoCrlf);
        }
        data = &data[size + 2..];
    }
}

/// A blocking HTTP/1.1 `GET path` to `addr` (`Connection: close`, `Accept` when given), with a 5 s timeout
/// ([`SCRAPE_TIMEOUT`]); handles `Transfer-Encoding: chunked`, `Content-Length` and bodies that end at EOF.
pub fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> Result<Response, ScrapeError> {
    let url = format!("http://{addr}{path}");
    let deadline = Instant::now() + SCRAPE_TIMEOUT;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| ScrapeError::Timeout {
                url: url.clone(),
                read: None,
            })
    };
    let failed = |step: &'static str| {
        let url = url.clone();
        move |source: io::Error| ScrapeError::Io { url, step, source }
    };
    let mut stream = TcpStream::connect_timeout(&addr, left()?).map_err(failed("connect"))?;
    stream
        .set_write_timeout(Some(left()?))
        .map_err(failed("set_write_timeout"))?;
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: crawl-tests\r\nConnection: close\r\n"
    );
    if let Some(accept) = accept {
        req.push_str(&format!("Accept: {accept}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).map_err(failed("send"))?;

    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        stream
            .set_read_timeout(Some(left()?))
            .map_err(failed("set_read_timeout"))?;
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
                return Err(ScrapeError::Timeout {
                    url: url.clone(),
                    read: Some(raw.len()),
                });
            }
            // A reset after a complete response (some servers close hard) still leaves a usable answer.
            Err(e) if !raw.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(failed("receive")(e)),
        }
    }

    let head_end = find(&raw, b"\r\n\r\n").ok_or_else(|| ScrapeError::NoHead {
        url: url.clone(),
        read: raw.len(),
    })?;
    let head = std::str::from_utf8(&raw[..head_end]).map_err(|_| ScrapeError::HeadNotUtf8)?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| ScrapeError::StatusLine(status_line.to_owned()))?;
    let mut headers = Vec::new();
    for line in lines {
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| ScrapeError::HeaderLine(line.to_owned()))?;
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
        dechunk(rest).map_err(ScrapeError::Chunked)?
    } else if let Some(len) = resp.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| ScrapeError::ContentLength(len.to_owned()))?;
        if rest.len() < len {
            return Err(ScrapeError::Truncated {
                got: rest.len(),
                want: len,
            });
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(resp)
}

/// `GET /metrics` from `addr` (see [`get`]): `(content-type, body)` of a 200 answer, else an error with the status
/// and the body.
pub fn scrape(addr: SocketAddr, accept: Option<&str>) -> Result<(String, String), ScrapeError> {
    let resp = get(addr, "/metrics", accept)?;
    let body = String::from_utf8(resp.body.clone()).map_err(|_| ScrapeError::BodyNotUtf8)?;
    if resp.status != 200 {
        return Err(ScrapeError::Status {
            url: format!("http://{addr}/metrics"),
            status: resp.status,
            body,
        });
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
        assert!(
            matches!(&e, ScrapeError::Status { status: 404, body, .. } if body == "not found"),
            "{e:?}"
        );
        assert!(e.to_string().contains("status 404: not found"), "{e}");

        let (addr, t) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort".to_vec());
        let e = scrape(addr, None).expect_err("truncated");
        t.join().expect("server");
        assert!(
            matches!(e, ScrapeError::Truncated { got: 5, want: 50 }),
            "{e:?}"
        );

        let (addr, t) = serve_once(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".to_vec(),
        );
        let e = scrape(addr, None).expect_err("bad chunk size");
        t.join().expect("server");
        assert!(
            matches!(&e, ScrapeError::Chunked(ChunkError::Size(line)) if line == "zz"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "chunked body: bad chunk size \"zz\"");
    }

    #[test]
    fn scrape_times_out_and_reports_refused_connections() {
        // A server that accepts and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let t0 = Instant::now();
        let e = scrape(addr, None).expect_err("timeout");
        let took = t0.elapsed();
        assert!(
            matches!(e, ScrapeError::Timeout { read: Some(0), .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("timed out"), "{e}");
        assert!(
            took >= Duration::from_secs(4) && took < Duration::from_secs(8),
            "{took:?}"
        );
        drop(listener);
        let e = scrape(addr, None).expect_err("refused");
        assert!(
            matches!(
                &e,
                ScrapeError::Io {
                    step: "connect",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("connect"), "{e}");
    }
}
