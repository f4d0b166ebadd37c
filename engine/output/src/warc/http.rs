//! The HTTP/1.1-style messages stored in `request`, `response` and `revisit` blocks.
//!
//! A [`ResponseHead`] is written as received with two exceptions: the `chunked` transfer-coding is removed from
//! `Transfer-Encoding` (the header is dropped when nothing remains), because the body is stored de-chunked; and an
//! HTTP/2 or HTTP/3 response gets an `HTTP/1.1` status line with the canonical reason phrase of its code. A
//! [`RequestHead`] is rebuilt from method, URL, version and the headers sent, without the URL's userinfo and without
//! credentials (`Authorization`, `Proxy-Authorization`, `Cookie`: the crawler's only cookies are configured
//! secrets).

use super::WarcError;
use super::record::strip_userinfo;

/// The protocol a message travelled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    Http09,
    Http10,
    Http11,
    Http2,
    Http3,
}

impl HttpVersion {
    /// The version written on the start line: `HTTP/1.0` for 0.9 and 1.0, `HTTP/1.1` for everything newer.
    pub fn archived(self) -> &'static str {
        match self {
            HttpVersion::Http09 | HttpVersion::Http10 => "HTTP/1.0",
            HttpVersion::Http11 | HttpVersion::Http2 | HttpVersion::Http3 => "HTTP/1.1",
        }
    }

    /// The `WARC-Protocol` value for a message whose start line does not name its real protocol (`h2`, `h3`).
    pub fn warc_protocol(self) -> Option<&'static str> {
        match self {
            HttpVersion::Http2 => Some("h2"),
            HttpVersion::Http3 => Some("h3"),
            _ => None,
        }
    }
}

/// Header fields in the order received, names as received (hyper lowercases HTTP/1 names unless told to keep
/// their case; HTTP/2 names are lowercase on the wire).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpHeaders(Vec<(Vec<u8>, Vec<u8>)>);

impl HttpHeaders {
    pub fn new() -> HttpHeaders {
        HttpHeaders(Vec::new())
    }

    pub fn push(&mut self, name: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) {
        self.0.push((name.into(), value.into()));
    }

    /// The first value of `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.0.iter().map(|(n, v)| (n.as_slice(), v.as_slice()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<N: Into<Vec<u8>>, V: Into<Vec<u8>>> FromIterator<(N, V)> for HttpHeaders {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        HttpHeaders(
            iter.into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
        )
    }
}

/// Status line and headers of a response, as the fetcher received them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub version: HttpVersion,
    pub status: u16,
    /// The reason phrase received on an HTTP/1.x status line when it differs from the canonical one (hyper keeps
    /// it as a `ReasonPhrase` extension); `None` writes the canonical phrase of `status`.
    pub reason: Option<Vec<u8>>,
    pub headers: HttpHeaders,
}

impl ResponseHead {
    pub fn new(version: HttpVersion, status: u16, headers: HttpHeaders) -> ResponseHead {
        ResponseHead {
            version,
            status,
            reason: None,
            headers,
        }
    }

    /// Status line, headers and the empty line, as stored in the WARC block (see the module docs for what changes).
    pub fn to_archived_bytes(&self) -> Result<Vec<u8>, WarcError> {
        if !(100..=999).contains(&self.status) {
            return Err(WarcError::InvalidMessage(format!(
                "status {} is not a three-digit code",
                self.status
            )));
        }
        let mut out = Vec::with_capacity(64 + 48 * self.headers.len());
        out.extend_from_slice(self.version.archived().as_bytes());
        out.extend_from_slice(format!(" {} ", self.status).as_bytes());
        let reason = match (&self.reason, self.version) {
            (Some(r), HttpVersion::Http09 | HttpVersion::Http10 | HttpVersion::Http11) => {
                r.as_slice()
            }
            _ => canonical_reason(self.status).unwrap_or("").as_bytes(),
        };
        push_clean(&mut out, reason);
        out.extend_from_slice(b"\r\n");
        for (name, value) in self.headers.iter() {
            if name.eq_ignore_ascii_case(b"transfer-encoding") {
                let kept = without_chunked(value);
                if !kept.is_empty() {
                    push_field(&mut out, name, &kept)?;
                }
                continue;
            }
            push_field(&mut out, name, value)?;
        }
        out.extend_from_slice(b"\r\n");
        Ok(out)
    }
}

/// Request line and headers, rebuilt from what the fetcher sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    method: String,
    target: String,
    version: HttpVersion,
    headers: HttpHeaders,
}

impl RequestHead {
    /// Builds the request of `method url` with the headers sent. The request target is the URL's path and query;
    /// a `Host` header (host and non-default port, never userinfo) is put first when the headers lack one (HTTP/2
    /// carries it as `:authority`); `Authorization`, `Proxy-Authorization` and `Cookie` are left out, and a
    /// `Referer` loses its userinfo.
    pub fn new(
        method: &str,
        url: &str,
        version: HttpVersion,
        headers: &HttpHeaders,
    ) -> Result<RequestHead, WarcError> {
        if method.is_empty() || !method.bytes().all(is_tchar) {
            return Err(WarcError::InvalidMessage(format!(
                "method {method:?} is not a token"
            )));
        }
        let parsed = url::Url::parse(url)
            .map_err(|e| WarcError::InvalidMessage(format!("request url: {e}")))?;
        let host = parsed
            .host_str()
            .ok_or_else(|| WarcError::InvalidMessage("request url has no host".to_string()))?;
        let authority = match parsed.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let mut target = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            target.push('?');
            target.push_str(q);
        }
        let mut out = HttpHeaders::new();
        if !headers.contains("host") {
            out.push("Host", authority);
        }
        for (name, value) in headers.iter() {
            if name.eq_ignore_ascii_case(b"authorization")
                || name.eq_ignore_ascii_case(b"proxy-authorization")
                || name.eq_ignore_ascii_case(b"cookie")
            {
                continue;
            }
            if name.eq_ignore_ascii_case(b"referer") {
                let v = String::from_utf8_lossy(value);
                out.push(name, strip_userinfo(&v).into_owned());
                continue;
            }
            out.push(name, value);
        }
        Ok(RequestHead {
            method: method.to_string(),
            target,
            version,
            headers: out,
        })
    }

    pub fn version(&self) -> HttpVersion {
        self.version
    }

    pub fn headers(&self) -> &HttpHeaders {
        &self.headers
    }

    /// Request line, headers and the empty line.
    pub fn to_bytes(&self) -> Result<Vec<u8>, WarcError> {
        let mut out = Vec::with_capacity(64 + 48 * self.headers.len());
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        push_clean(&mut out, self.target.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.version.archived().as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in self.headers.iter() {
            push_field(&mut out, name, value)?;
        }
        out.extend_from_slice(b"\r\n");
        Ok(out)
    }
}

/// The codings of a `Transfer-Encoding` value without `chunked`, joined by `, `.
fn without_chunked(value: &[u8]) -> Vec<u8> {
    let mut kept: Vec<&[u8]> = Vec::new();
    for coding in value.split(|&b| b == b',') {
        let coding = coding.trim_ascii();
        if coding.is_empty() || coding.eq_ignore_ascii_case(b"chunked") {
            continue;
        }
        kept.push(coding);
    }
    kept.join(&b", "[..])
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn push_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) -> Result<(), WarcError> {
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(WarcError::InvalidMessage(format!(
            "header name {:?} is not a token",
            String::from_utf8_lossy(name)
        )));
    }
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    push_clean(out, value);
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// Appends `bytes` with CR and LF replaced by spaces, so a value can never end the line early.
fn push_clean(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend(
        bytes
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
}

/// The reason phrase RFC 9110 gives a status code.
pub fn canonical_reason(status: u16) -> Option<&'static str> {
    Some(match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn chunked_is_removed_from_transfer_encoding() {
        let headers: HttpHeaders = [
            ("Content-Type", "text/html"),
            ("Transfer-Encoding", "chunked"),
            ("X-A", "1"),
        ]
        .into_iter()
        .collect();
        let head = ResponseHead::new(HttpVersion::Http11, 200, headers);
        assert_eq!(
            text(head.to_archived_bytes().unwrap()),
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-A: 1\r\n\r\n"
        );
        let headers: HttpHeaders = [("transfer-encoding", "gzip, Chunked")]
            .into_iter()
            .collect();
        let head = ResponseHead::new(HttpVersion::Http10, 404, headers);
        assert_eq!(
            text(head.to_archived_bytes().unwrap()),
            "HTTP/1.0 404 Not Found\r\ntransfer-encoding: gzip\r\n\r\n"
        );
    }

    #[test]
    fn http2_gets_an_http11_status_line_and_keeps_names() {
        let headers: HttpHeaders = [("content-type", "text/plain"), ("server", "x")]
            .into_iter()
            .collect();
        let mut head = ResponseHead::new(HttpVersion::Http2, 503, headers);
        head.reason = Some(b"ignored on h2".to_vec());
        assert_eq!(
            text(head.to_archived_bytes().unwrap()),
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nserver: x\r\n\r\n"
        );
        let head = ResponseHead {
            version: HttpVersion::Http11,
            status: 299,
            reason: Some(b"Odd\r\nX: y".to_vec()),
            headers: HttpHeaders::new(),
        };
        assert_eq!(
            text(head.to_archived_bytes().unwrap()),
            "HTTP/1.1 299 Odd  X: y\r\n\r\n"
        );
        assert!(
            ResponseHead::new(HttpVersion::Http11, 42, HttpHeaders::new())
                .to_archived_bytes()
                .is_err()
        );
    }

    #[test]
    fn request_builder_adds_host_and_drops_credentials() {
        let headers: HttpHeaders = [
            ("user-agent", "crawl-engine/0.1"),
            ("authorization", "Basic dXNlcjpzZWNyZXQ="),
            ("Cookie", "session=secret"),
            ("Proxy-Authorization", "Basic c2VjcmV0"),
            ("referer", "https://user:secret@example.org/from"),
        ]
        .into_iter()
        .collect();
        let req = RequestHead::new(
            "GET",
            "https://user:secret@Example.org:8443/a/b?q=1#frag",
            HttpVersion::Http2,
            &headers,
        )
        .unwrap();
        let s = text(req.to_bytes().unwrap());
        assert_eq!(
            s,
            "GET /a/b?q=1 HTTP/1.1\r\nHost: example.org:8443\r\nuser-agent: crawl-engine/0.1\r\n\
             referer: https://example.org/from\r\n\r\n"
        );
        assert!(RequestHead::new("G T", "https://a/", HttpVersion::Http11, &headers).is_err());
        let bad: HttpHeaders = [("bad name", "v")].into_iter().collect();
        let req = RequestHead::new("GET", "http://a/", HttpVersion::Http11, &bad).unwrap();
        assert!(req.to_bytes().is_err());
    }
}
