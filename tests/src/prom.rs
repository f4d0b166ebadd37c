//! Prometheus metrics for tests: a parser of the text exposition format 0.0.4 ([`parse`]), a blocking scraper of
//! `GET /metrics` ([`scrape`]) and a bridge to `promtool check metrics` ([`promtool_check_metrics`]).
//!
//! The parser is strict about the 0.0.4 syntax (names, label escapes, values, duplicate `# TYPE`/labels) and also
//! reads OpenMetrics text: a `# {labels} value [timestamp]` exemplar after a sample goes to [`Sample::exemplar`]
//! (0.0.4 has none, so a test can assert that), and `# EOF`, `# UNIT` are accepted.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The scrape timeout of [`scrape`] and [`get`] (connect, send, receive altogether).
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The full sample name (`x_total`, `x_bucket`, `x_sum`, ...).
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    /// The optional timestamp (milliseconds since the epoch in 0.0.4).
    pub timestamp: Option<f64>,
    /// An OpenMetrics exemplar (`# {trace_id="..."} 0.12`), never present in 0.0.4.
    pub exemplar: Option<Exemplar>,
}

/// An OpenMetrics exemplar.
#[derive(Debug, Clone, PartialEq)]
pub struct Exemplar {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    pub timestamp: Option<f64>,
}

/// A parsed exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
    /// `# TYPE` lines: metric family name → type (`counter`, `gauge`, `histogram`, `summary`, `untyped`, ...).
    pub types: BTreeMap<String, String>,
    /// `# HELP` lines: metric family name → unescaped help text.
    pub help: BTreeMap<String, String>,
}

impl Scrape {
    /// The samples named `name` whose labels include every `(key, value)` pair of `labels`.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).is_some_and(|have| have == v))
        })
    }

    /// The sum of the values of the samples named `name` whose labels include the given pairs (a subset match:
    /// `&[]` matches every series of `name`); `None` when no sample matches.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut found = false;
        let mut sum = 0.0;
        for s in self.matching(name, labels) {
            found = true;
            sum += s.value;
        }
        found.then_some(sum)
    }

    /// The sum of every sample named `name` (0 when there is none).
    pub fn sum(&self, name: &str) -> f64 {
        self.value(name, &[]).unwrap_or(0.0)
    }

    /// The `# TYPE` of the family `name`.
    pub fn type_of(&self, name: &str) -> Option<&str> {
        self.types.get(name).map(String::as_str)
    }

    /// Whether any sample is named `name`.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }

    /// The cumulative buckets of histogram `family` (`family_bucket` samples) over the series that include
    /// `labels`, summed per `le` and sorted by it (`+Inf` last).
    pub fn buckets(&self, family: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
        let name = format!("{family}_bucket");
        let mut out: Vec<(f64, f64)> = Vec::new();
        for s in self.matching(&name, labels) {
            let Some(le) = s.labels.get("le").and_then(|le| parse_value(le).ok()) else {
                continue;
            };
            match out.iter_mut().find(|(l, _)| *l == le) {
                Some((_, c)) => *c += s.value,
                None => out.push((le, s.value)),
            }
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

fn is_name_start(c: char, colon: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || (colon && c == ':')
}

fn is_name_char(c: char, colon: bool) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':')
}

fn valid_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| is_name_start(c, colon)) && chars.all(|c| is_name_char(c, colon))
}

/// A sample value: a Go float, `+Inf`, `-Inf`, `Inf`, `NaN`.
fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => {
            let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c));
            if !ok {
                return Err(format!("invalid value {s:?}"));
            }
            s.parse::<f64>()
                .map_err(|e| format!("invalid value {s:?}: {e}"))
        }
    }
}

/// A cursor over one line.
struct Line<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Line<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_blanks(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.bump();
        }
        &self.s[start..self.pos]
    }

    /// A token up to the next blank.
    fn token(&mut self) -> &'a str {
        self.take_while(|c| c != ' ' && c != '\t')
    }

    /// `{name="value",...}` (the `{` not yet read); a trailing comma is allowed.
    fn labels(&mut self) -> Result<BTreeMap<String, String>, String> {
        let mut labels = BTreeMap::new();
        if self.bump() != Some('{') {
            return Err("expected '{'".into());
        }
        loop {
            self.skip_blanks();
            if self.peek() == Some('}') {
                self.bump();
                return Ok(labels);
            }
            let name = self.take_while(|c| is_name_char(c, false));
            if !valid_name(name, false) {
                return Err(format!("invalid label name at {:?}", self.rest()));
            }
            self.skip_blanks();
            if self.bump() != Some('=') {
                return Err(format!("expected '=' after label name {name:?}"));
            }
            self.skip_blanks();
            if self.bump() != Some('"') {
                return Err(format!("expected '\"' to open the value of label {name:?}"));
            }
            let mut value = String::new();
            loop {
                match self.bump() {
                    None => return Err(format!("unterminated value of label {name:?}")),
                    Some('"') => break,
                    Some('\\') => match self.bump() {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        other => {
                            return Err(format!(
                                "invalid escape \\{other:?} in the value of label {name:?}"
                            ));
                        }
                    },
                    Some(c) => value.push(c),
                }
            }
            if labels.insert(name.to_string(), value).is_some() {
                return Err(format!("duplicate label {name:?}"));
            }
            self.skip_blanks();
            match self.bump() {
                Some(',') => {}
                Some('}') => return Ok(labels),
                other => {
                    return Err(format!(
                        "expected ',' or '}}' after label {name:?}, found {other:?}"
                    ));
                }
            }
        }
    }

    /// ` value [timestamp]` after the labels.
    fn value_and_timestamp(&mut self) -> Result<(f64, Option<f64>), String> {
        self.skip_blanks();
        let value = parse_value(self.token())?;
        self.skip_blanks();
        let timestamp = match self.peek() {
            None | Some('#') => None,
            Some(_) => {
                let t = self.token();
                Some(
                    t.parse::<f64>()
                        .map_err(|e| format!("invalid timestamp {t:?}: {e}"))?,
                )
            }
        };
        self.skip_blanks();
        Ok((value, timestamp))
    }
}

fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

const TYPES: &[&str] = &[
    "counter",
    "gauge",
    "histogram",
    "summary",
    "untyped",
    // OpenMetrics
    "unknown",
    "info",
    "stateset",
    "gaugehistogram",
];

fn parse_sample(line: &str) -> Result<Sample, String> {
    let mut l = Line { s: line, pos: 0 };
    let name = l.take_while(|c| is_name_char(c, true));
    if !valid_name(name, true) {
        return Err("invalid metric name".into());
    }
    l.skip_blanks();
    let labels = if l.peek() == Some('{') {
        l.labels()?
    } else {
        BTreeMap::new()
    };
    let (value, timestamp) = l.value_and_timestamp()?;
    let exemplar = if l.peek() == Some('#') {
        l.bump();
        l.skip_blanks();
        if l.peek() != Some('{') {
            return Err("expected '{' to open the exemplar's labels".into());
        }
        let labels = l.labels()?;
        let (value, timestamp) = l.value_and_timestamp()?;
        Some(Exemplar {
            labels,
            value,
            timestamp,
        })
    } else {
        None
    };
    if !l.rest().is_empty() {
        return Err(format!("unexpected text {:?}", l.rest()));
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp,
        exemplar,
    })
}

/// Parses a text exposition (0.0.4, or OpenMetrics text). Errors name the line (1-based).
pub fn parse(text: &str) -> Result<Scrape, String> {
    let mut scrape = Scrape::default();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let err = |e: String| format!("line {n}: {e}: {raw:?}");
        let line = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim_start_matches([' ', '\t']);
            let mut words = comment.splitn(3, [' ', '\t']);
            let keyword = words.next().unwrap_or("");
            match keyword {
                "HELP" | "TYPE" | "UNIT" => {
                    let name = words.next().unwrap_or("");
                    if !valid_name(name, true) {
                        return Err(err(format!("invalid metric name {name:?} in # {keyword}")));
                    }
                    let rest = words.next().unwrap_or("");
                    if keyword == "HELP" {
                        let help = unescape_help(rest);
                        if scrape.help.insert(name.to_string(), help).is_some() {
                            return Err(err(format!("second # HELP for {name}")));
                        }
                    } else if keyword == "TYPE" {
                        let ty = rest.trim();
                        if !TYPES.contains(&ty) {
                            return Err(err(format!("unknown type {ty:?}")));
                        }
                        if scrape
                            .types
                            .insert(name.to_string(), ty.to_string())
                            .is_some()
                        {
                            return Err(err(format!("second # TYPE for {name}")));
                        }
                    }
                }
                // Any other comment, and OpenMetrics' `# EOF`.
                _ => {}
            }
            continue;
        }
        scrape.samples.push(parse_sample(line).map_err(err)?);
    }
    Ok(scrape)
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

/// Pipes `text` to `promtool check metrics`: `Ok(its output)` when it exits 0, else `Err(its output)` (lint problems
/// such as a missing HELP or a counter without `_total` count as failures, as in CI);
/// `Err("promtool not found: apt-get install prometheus")` when it is not installed.
pub fn promtool_check_metrics(text: &str) -> Result<String, String> {
    check_metrics_with("promtool", text)
}

fn check_metrics_with(program: &str, text: &str) -> Result<String, String> {
    let mut child = match Command::new(program)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("promtool not found: apt-get install prometheus".into());
        }
        Err(e) => return Err(format!("run {program}: {e}")),
    };
    // Write from a thread so that a large input can't deadlock against a full output pipe.
    let mut stdin = child.stdin.take().ok_or("promtool: no stdin pipe")?;
    let input = text.as_bytes().to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("wait for {program}: {e}"))?;
    // promtool may exit before reading everything (a syntax error): a broken pipe then is not our failure.
    let _ = writer.join();
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(output)
    } else {
        Err(format!("promtool check metrics: {}: {output}", out.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const SAMPLE: &str = r#"# HELP crawl_records_total JSONL records by outcome.\nSecond \\ line.
# TYPE crawl_records_total counter
crawl_records_total{outcome="fetched",reason=""} 7
crawl_records_total{outcome="failed",reason="timeout"} 2
crawl_records_total{outcome="failed",reason="dns"} 1 1700000000000
# a free comment
   
# HELP crawl_build_info Build information.
# TYPE crawl_build_info gauge
crawl_build_info{version="0.1.0",note="a \"quoted\" \\ value\nnext"} 1
# TYPE crawl_fetch_duration_seconds histogram
crawl_fetch_duration_seconds_bucket{outcome="fetched",le="0.1"} 3
crawl_fetch_duration_seconds_bucket{outcome="fetched",le="1.0"} 5
crawl_fetch_duration_seconds_bucket{outcome="fetched",le="+Inf"} 6
crawl_fetch_duration_seconds_bucket{outcome="failed",le="0.1"} 0
crawl_fetch_duration_seconds_bucket{outcome="failed",le="1.0"} 1
crawl_fetch_duration_seconds_bucket{outcome="failed",le="+Inf"} 2
crawl_fetch_duration_seconds_sum{outcome="fetched"} 2.5e0
crawl_fetch_duration_seconds_count{outcome="fetched"} 6
crawl_fetch_duration_seconds_sum{outcome="failed"} 3.25
crawl_fetch_duration_seconds_count{outcome="failed"} 2
# TYPE odd gauge
odd{a="x",} NaN
odd{a="y"} -Inf
odd{a="z"} +Inf
no_labels 42
"#;

    #[test]
    fn parses_the_text_format() {
        let s = parse(SAMPLE).expect("parse");
        assert_eq!(s.type_of("crawl_records_total"), Some("counter"));
        assert_eq!(s.type_of("crawl_fetch_duration_seconds"), Some("histogram"));
        assert_eq!(s.type_of("crawl_fetch_duration_seconds_bucket"), None);
        assert_eq!(
            s.help["crawl_records_total"],
            "JSONL records by outcome.\nSecond \\ line."
        );
        assert_eq!(s.sum("crawl_records_total"), 10.0);
        assert_eq!(
            s.value("crawl_records_total", &[("outcome", "failed")]),
            Some(3.0)
        );
        assert_eq!(
            s.value(
                "crawl_records_total",
                &[("outcome", "failed"), ("reason", "dns")]
            ),
            Some(1.0)
        );
        assert_eq!(s.value("crawl_records_total", &[("reason", "")]), Some(7.0));
        assert_eq!(
            s.value("crawl_records_total", &[("outcome", "excluded")]),
            None
        );
        assert_eq!(
            s.value("crawl_records_total", &[("nope", "")]),
            None,
            "a missing label is not \"\""
        );
        assert_eq!(s.value("missing_total", &[]), None);
        assert_eq!(s.sum("missing_total"), 0.0);
        let dns = s
            .matching("crawl_records_total", &[("reason", "dns")])
            .next()
            .expect("dns sample");
        assert_eq!(dns.timestamp, Some(1_700_000_000_000.0));
        assert!(dns.exemplar.is_none());

        let info = &s
            .matching("crawl_build_info", &[])
            .next()
            .expect("build info");
        assert_eq!(info.labels["version"], "0.1.0");
        assert_eq!(info.labels["note"], "a \"quoted\" \\ value\nnext");
        assert_eq!(info.value, 1.0);

        assert_eq!(
            s.buckets("crawl_fetch_duration_seconds", &[("outcome", "fetched")]),
            vec![(0.1, 3.0), (1.0, 5.0), (f64::INFINITY, 6.0)]
        );
        assert_eq!(
            s.buckets("crawl_fetch_duration_seconds", &[]),
            vec![(0.1, 3.0), (1.0, 6.0), (f64::INFINITY, 8.0)]
        );
        assert_eq!(
            s.value("crawl_fetch_duration_seconds_bucket", &[("le", "+Inf")]),
            Some(8.0)
        );
        assert_eq!(s.sum("crawl_fetch_duration_seconds_count"), 8.0);
        assert_eq!(s.sum("crawl_fetch_duration_seconds_sum"), 5.75);

        assert!(s.value("odd", &[("a", "x")]).expect("NaN sample").is_nan());
        assert_eq!(s.value("odd", &[("a", "y")]), Some(f64::NEG_INFINITY));
        assert_eq!(s.value("odd", &[("a", "z")]), Some(f64::INFINITY));
        assert_eq!(s.value("no_labels", &[]), Some(42.0));
        assert!(s.has("no_labels"));
        assert_eq!(s.samples.len(), 18);
    }

    #[test]
    fn reads_openmetrics_exemplars_and_eof() {
        let text = "# TYPE crawl_fetch_duration_seconds histogram\n\
            # UNIT crawl_fetch_duration_seconds seconds\n\
            crawl_fetch_duration_seconds_bucket{outcome=\"fetched\",le=\"0.5\"} 1 # {trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 0.25 1700000000.5\n\
            crawl_fetch_duration_seconds_bucket{outcome=\"fetched\",le=\"+Inf\"} 1\n\
            # EOF\n";
        let s = parse(text).expect("parse");
        let b = &s.samples[0];
        let ex = b.exemplar.as_ref().expect("exemplar");
        assert_eq!(ex.labels["trace_id"], "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(ex.value, 0.25);
        assert_eq!(ex.timestamp, Some(1_700_000_000.5));
        assert!(s.samples[1].exemplar.is_none());
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in [
            "x{a=\"b\" 1",
            "x{a=\"b} 1",
            "x{a=\"\\t\"} 1",
            "x{a=b} 1",
            "x{a=\"1\",a=\"2\"} 1",
            "x{1a=\"b\"} 1",
            "1x 1",
            "x",
            "x one",
            "x 1 2 3",
            "x 1 abc",
            "# TYPE x countr\nx 1",
            "# TYPE x counter\n# TYPE x gauge\nx 1",
            "# TYPE 9x counter",
        ] {
            let r = parse(bad);
            assert!(r.is_err(), "{bad:?} parsed as {r:?}");
        }
        let e = parse("ok 1\nx{a=\"b\" 1").expect_err("bad second line");
        assert!(e.starts_with("line 2:"), "{e}");
    }

    #[test]
    fn promtool_accepts_good_and_rejects_bad_metrics() {
        let good = "# HELP crawl_records_total JSONL records.\n\
            # TYPE crawl_records_total counter\n\
            crawl_records_total{outcome=\"fetched\",reason=\"\"} 3\n\
            # HELP crawl_fetch_duration_seconds Page fetch latency.\n\
            # TYPE crawl_fetch_duration_seconds histogram\n\
            crawl_fetch_duration_seconds_bucket{le=\"0.1\"} 1\n\
            crawl_fetch_duration_seconds_bucket{le=\"+Inf\"} 2\n\
            crawl_fetch_duration_seconds_sum 0.3\n\
            crawl_fetch_duration_seconds_count 2\n";
        promtool_check_metrics(good).expect("promtool accepts the good sample");
        let syntax = promtool_check_metrics("x_total{a=\"b\" 1\n").expect_err("syntax error");
        assert!(syntax.contains("parsing error"), "{syntax}");
        let lint = promtool_check_metrics("# HELP x X.\n# TYPE x counter\nx 1\n")
            .expect_err("lint problem");
        assert!(lint.contains("_total"), "{lint}");
        assert_eq!(
            check_metrics_with("promtool-that-is-not-installed", good),
            Err("promtool not found: apt-get install prometheus".to_string())
        );
    }

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
        assert_eq!(parse(&got).expect("parse").value("up", &[]), Some(1.0));

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
