//! An S3-compatible server a test starts: moto in server mode (`moto_server`), on a loopback port the system
//! handed out (tried again on another when it was taken meanwhile), ready once it answers HTTP, killed on drop.
//! Every server starts empty; its buckets live in its memory only.
//!
//! moto is found through `MOTO_SERVER` (a path), else `.tools/moto/bin/moto_server` under the workspace root, else
//! `moto_server` on `PATH`. Missing, [`MotoServer::find`] skips the test with a note, or fails it under `CI=true`
//! (see [`crate::tool`]). Install it with
//! `python3 -m venv .tools/moto && .tools/moto/bin/pip install "moto[server]"`.
//!
//! [`MotoServer::find_tls`] starts one that speaks https only, with a certificate for 127.0.0.1 made by `openssl`
//! ([`TestCert`]): a client trusts it through `SSL_CERT_FILE`.
//!
//! The helpers ([`MotoServer::create_bucket`], [`MotoServer::keys`], [`MotoServer::object`],
//! [`MotoServer::uploads`], ...) speak plain HTTP/1.1 over a `std` socket, so a test can look at the store without
//! the client under test. They carry an `Authorization` header with a made-up signature: moto does not check
//! signatures, but answers 403 to an anonymous read of an object. They work on plain-HTTP servers only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{ToolError, tool};

const PROGRAM: &str = "moto_server";
const HINT: &str = "set MOTO_SERVER, or: python3 -m venv .tools/moto && .tools/moto/bin/pip install \"moto[server]\"";
/// How long moto may take to answer its first request (it starts in about 2.5 s here).
const READY_WITHIN: Duration = Duration::from_secs(30);
/// How long one helper request may take.
const REQUEST_WITHIN: Duration = Duration::from_secs(20);
/// A signature moto takes (it checks none): without one, it refuses to read an object.
const AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=kit/20260101/us-east-1/s3/aws4_request, \
     SignedHeaders=host, Signature=0";
/// Ports handed out by the system may be taken again before moto binds them: tries before giving up.
const PORT_TRIES: usize = 10;

/// One `moto_server` process.
#[derive(Debug)]
pub struct MotoServer {
    child: Child,
    addr: SocketAddr,
    /// Speaks https only.
    tls: bool,
    /// Holds moto's log.
    dir: tempfile::TempDir,
}

/// A self-signed certificate for `127.0.0.1` (and `localhost`) with its key, PEM files in a temporary folder.
#[derive(Debug)]
pub struct TestCert {
    pub cert: PathBuf,
    pub key: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestCert {
    /// Makes one with `openssl req` (valid for a day).
    pub fn make() -> Result<TestCert, ToolError> {
        let dir = tempfile::Builder::new()
            .prefix("cert")
            .tempdir()
            .map_err(ToolError::io("tempdir for a certificate"))?;
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let out = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args(["-subj", "/CN=127.0.0.1"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
            .args(["-addext", "basicConstraints=critical,CA:FALSE"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdin(Stdio::null())
            .output()
            .map_err(ToolError::io("openssl req"))?;
        if !out.status.success() {
            return Err(ToolError::failed("openssl req", out.status, &out.stderr));
        }
        Ok(TestCert {
            cert,
            key,
            _dir: dir,
        })
    }
}

/// A multipart upload in progress, as `GET /bucket?uploads` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    pub key: String,
    pub upload_id: String,
}

/// moto's program: `MOTO_SERVER`, `.tools/moto/bin/moto_server` under the workspace root, or `PATH`.
pub fn program() -> Option<PathBuf> {
    std::env::var_os("MOTO_SERVER")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| {
            let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/moto/bin/moto_server");
            p.is_file().then_some(p)
        })
        .or_else(|| tool::on_path(PROGRAM))
}

impl MotoServer {
    /// A started server, or None with a note (for `test`) when moto is missing (a panic under `CI=true`). A
    /// server that is there but does not start is a panic.
    pub fn find(test: &str) -> Option<MotoServer> {
        let Some(exe) = program() else {
            tool::unavailable(test, PROGRAM, HINT);
            return None;
        };
        match MotoServer::start(&exe) {
            Ok(s) => Some(s),
            Err(e) => panic!("{test}: start {PROGRAM}: {e}"),
        }
    }

    /// A started https-only server and the certificate it shows, or None with a note when moto or `openssl` is
    /// missing (a panic under `CI=true`).
    pub fn find_tls(test: &str) -> Option<(MotoServer, TestCert)> {
        let Some(exe) = program() else {
            tool::unavailable(test, PROGRAM, HINT);
            return None;
        };
        if !tool::require(test, &["openssl"], "apt-get install openssl") {
            return None;
        }
        let cert = match TestCert::make() {
            Ok(c) => c,
            Err(e) => panic!("{test}: {e}"),
        };
        match MotoServer::start_with(&exe, Some(&cert)) {
            Ok(s) => Some((s, cert)),
            Err(e) => panic!("{test}: start {PROGRAM} with TLS: {e}"),
        }
    }

    /// Starts `exe` on a free loopback port.
    pub fn start(exe: &Path) -> Result<MotoServer, ToolError> {
        MotoServer::start_with(exe, None)
    }

    /// Starts `exe` on a free loopback port, speaking https with `cert` when given.
    pub fn start_with(exe: &Path, cert: Option<&TestCert>) -> Result<MotoServer, ToolError> {
        let mut last = None;
        for _ in 0..PORT_TRIES {
            let port = free_port()?;
            match MotoServer::spawn(exe, port, cert) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(ToolError::NotReady {
            what: format!("{PROGRAM} on a free port ({PORT_TRIES} tries)"),
            within: READY_WITHIN,
        }))
    }

    fn spawn(exe: &Path, port: u16, cert: Option<&TestCert>) -> Result<MotoServer, ToolError> {
        let dir = tempfile::Builder::new()
            .prefix("moto")
            .tempdir()
            .map_err(ToolError::io("tempdir for moto"))?;
        let log = std::fs::File::create(dir.path().join("moto.log"))
            .map_err(ToolError::io("moto.log"))?;
        let log2 = log.try_clone().map_err(ToolError::io("moto.log"))?;
        let mut cmd = Command::new(exe);
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
        if let Some(c) = cert {
            cmd.arg("-s").arg("-c").arg(&c.cert).arg("-k").arg(&c.key);
        }
        let child = cmd
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(ToolError::io(exe.display().to_string()))?;
        let mut s = MotoServer {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            tls: cert.is_some(),
            dir,
        };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Ok(Some(status)) = s.child.try_wait() {
                return Err(ToolError::failed(PROGRAM, status, s.log().as_bytes()));
            }
            if s.answers() {
                return Ok(s);
            }
            if Instant::now() >= deadline {
                return Err(ToolError::NotReady {
                    what: format!("{PROGRAM} on port {port} (HTTP)"),
                    within: READY_WITHIN,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// True when the server answers an HTTP request (its list of buckets) with 200; an https server, which these
    /// plain helpers cannot speak to, when it takes connections.
    fn answers(&self) -> bool {
        if self.tls {
            return TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok();
        }
        self.request("GET", "/", &[])
            .is_ok_and(|(status, _)| status == 200)
    }

    /// What moto wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("moto.log")).unwrap_or_default()
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (`https://` for a TLS server): the endpoint the client under test is given.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Makes `bucket`.
    pub fn create_bucket(&self, bucket: &str) -> Result<(), ToolError> {
        self.expect_ok("PUT", &format!("/{bucket}"), &[]).map(drop)
    }

    /// Stores `body` at `key`, as another writer would.
    pub fn put_object(&self, bucket: &str, key: &str, body: &[u8]) -> Result<(), ToolError> {
        self.expect_ok("PUT", &format!("/{bucket}/{}", escape_key(key)), body)
            .map(drop)
    }

    /// The keys in `bucket` under `prefix`, in order.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Result<Vec<String>, ToolError> {
        let mut keys: Vec<String> = Vec::new();
        loop {
            let mut q = format!("/{bucket}?list-type=2&prefix={}", escape_query(prefix));
            if let Some(last) = keys.last() {
                q.push_str(&format!("&start-after={}", escape_query(last)));
            }
            let body = self.expect_ok("GET", &q, &[])?;
            let text = String::from_utf8_lossy(&body);
            let page: Vec<String> = elements(&text, "Contents")
                .iter()
                .filter_map(|c| elements(c, "Key").first().map(|k| unescape_xml(k)))
                .collect();
            let more = elements(&text, "IsTruncated").first().map(String::as_str) == Some("true");
            keys.extend(page);
            if !more {
                return Ok(keys);
            }
        }
    }

    /// The object at `key`, or None when there is none.
    pub fn object(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>, ToolError> {
        let path = format!("/{bucket}/{}", escape_key(key));
        let (status, body) = self.request("GET", &path, &[])?;
        match status {
            200 => Ok(Some(body)),
            404 => Ok(None),
            _ => Err(report(&format!("GET {path}"), status, &body)),
        }
    }

    /// The multipart uploads in progress (started, neither completed nor aborted) in `bucket`.
    pub fn uploads(&self, bucket: &str) -> Result<Vec<Upload>, ToolError> {
        let body = self.expect_ok("GET", &format!("/{bucket}?uploads"), &[])?;
        let text = String::from_utf8_lossy(&body);
        Ok(elements(&text, "Upload")
            .iter()
            .filter_map(|u| {
                Some(Upload {
                    key: unescape_xml(elements(u, "Key").first()?),
                    upload_id: unescape_xml(elements(u, "UploadId").first()?),
                })
            })
            .collect())
    }

    /// Starts a multipart upload of `key` (and leaves it), as a writer killed half-way would; its upload id.
    pub fn start_upload(&self, bucket: &str, key: &str) -> Result<String, ToolError> {
        let path = format!("/{bucket}/{}?uploads", escape_key(key));
        let body = self.expect_ok("POST", &path, &[])?;
        let text = String::from_utf8_lossy(&body);
        elements(&text, "UploadId")
            .first()
            .map(|u| unescape_xml(u))
            .ok_or_else(|| ToolError::Report {
                what: format!("POST {path}"),
                report: text.into_owned(),
            })
    }

    /// Sends part `number` (from 1) of the upload `upload_id` of `key`.
    pub fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: usize,
        body: &[u8],
    ) -> Result<(), ToolError> {
        let path = format!(
            "/{bucket}/{}?partNumber={number}&uploadId={}",
            escape_key(key),
            escape_query(upload_id)
        );
        self.expect_ok("PUT", &path, body).map(drop)
    }

    fn expect_ok(&self, method: &str, path: &str, body: &[u8]) -> Result<Vec<u8>, ToolError> {
        let (status, out) = self.request(method, path, body)?;
        if (200..300).contains(&status) {
            Ok(out)
        } else {
            Err(report(&format!("{method} {path}"), status, &out))
        }
    }

    /// One HTTP/1.1 request on a connection of its own; the status and the body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), ToolError> {
        let what = format!("{method} {path}");
        let mut s = TcpStream::connect_timeout(&self.addr, REQUEST_WITHIN)
            .map_err(ToolError::io(what.clone()))?;
        s.set_read_timeout(Some(REQUEST_WITHIN))
            .and_then(|()| s.set_write_timeout(Some(REQUEST_WITHIN)))
            .map_err(ToolError::io(what.clone()))?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {AUTHORIZATION}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        s.write_all(head.as_bytes())
            .and_then(|()| s.write_all(body))
            .map_err(ToolError::io(what.clone()))?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)
            .map_err(ToolError::io(what.clone()))?;
        parse_response(&raw).ok_or_else(|| ToolError::Report {
            what,
            report: String::from_utf8_lossy(&raw).into_owned(),
        })
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, ToolError> {
    let l = TcpListener::bind(("127.0.0.1", 0)).map_err(ToolError::io("a free port"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(ToolError::io("a free port"))
}

fn report(what: &str, status: u16, body: &[u8]) -> ToolError {
    ToolError::Report {
        what: what.to_owned(),
        report: format!("HTTP {status}: {}", String::from_utf8_lossy(body)),
    }
}

/// The status and body of a whole HTTP/1.1 response (`Content-Length`, chunked, or up to the close).
fn parse_response(raw: &[u8]) -> Option<(u16, Vec<u8>)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        let (k, v) = l.split_once(':')?;
        let v = v.trim();
        if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k.eq_ignore_ascii_case("content-length") {
            length = v.parse::<usize>().ok();
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        rest.get(..n)?.to_vec()
    } else {
        rest.to_vec()
    };
    Some((status, body))
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// The texts of every `<tag>...</tag>` in `xml` (flat: enough for S3's list answers).
fn elements(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = xml[at..].find(&open) {
        let start = at + i + open.len();
        let Some(j) = xml[start..].find(&close) else {
            break;
        };
        out.push(xml[start..start + j].to_owned());
        at = start + j + close.len();
    }
    out
}

fn unescape_xml(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Percent-encodes a key for a request path (`/` kept).
fn escape_key(key: &str) -> String {
    escape(key, true)
}

fn escape_query(s: &str) -> String {
    escape(s, false)
}

fn escape(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_read_with_a_length_chunked_or_up_to_the_close() {
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef"),
            Some((200, b"abc".to_vec()))
        );
        assert_eq!(
            parse_response(
                b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
            ),
            Some((404, b"abcde".to_vec()))
        );
        assert_eq!(
            parse_response(b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nall"),
            Some((200, b"all".to_vec()))
        );
        assert_eq!(parse_response(b"HTTP/1.1 200 OK\r\n"), None);
    }

    #[test]
    fn xml_elements_and_escapes() {
        let x = "<a><Key>k&amp;1</Key></a><a><Key>k2</Key></a>";
        let keys: Vec<String> = elements(x, "Key").iter().map(|k| unescape_xml(k)).collect();
        assert_eq!(keys, ["k&1", "k2"]);
        assert_eq!(escape_key("p q/r+s"), "p%20q/r%2Bs");
        assert_eq!(escape_query("a/b"), "a%2Fb");
    }

    #[test]
    fn moto_stores_lists_and_shows_uploads_in_progress() {
        let Some(m) = MotoServer::find("moto kit") else {
            return;
        };
        m.create_bucket("kit").unwrap();
        m.put_object("kit", "p/one.txt", b"one").unwrap();
        m.put_object("kit", "p/two words.txt", b"two").unwrap();
        m.put_object("kit", "q/three.txt", b"3").unwrap();
        assert_eq!(
            m.keys("kit", "p/").unwrap(),
            ["p/one.txt", "p/two words.txt"]
        );
        assert_eq!(
            m.object("kit", "p/two words.txt").unwrap().as_deref(),
            Some(&b"two"[..])
        );
        assert_eq!(m.object("kit", "p/none").unwrap(), None);
        assert!(m.uploads("kit").unwrap().is_empty());
        let id = m.start_upload("kit", "p/big.bin").unwrap();
        m.upload_part("kit", "p/big.bin", &id, 1, &[1u8; 1024])
            .unwrap();
        assert_eq!(
            m.uploads("kit").unwrap(),
            [Upload {
                key: "p/big.bin".into(),
                upload_id: id
            }]
        );
        let addr = m.addr();
        drop(m);
        assert!(
            TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
            "moto outlived its handle"
        );
    }
}
