//! Output records: one per URL that reached a terminal state, written as one JSONL line.
//!
//! Expected outcomes are values, not errors: a fetch ends in a [`Record`] with an [`Outcome`] and, for failed and
//! excluded URLs, a [`Reason`].

use serde::{Deserialize, Serialize};
use std::time::SystemTime;

mod line;

/// What happened to a URL in the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The server answered (any status, including 3xx, 4xx and 5xx).
    Fetched,
    /// No usable answer: network, TLS, limits, poison, ...
    Failed,
    /// Never requested: robots, scope, filters, depth, private network.
    Excluded,
}

impl Outcome {
    /// Lowercase name, as in the JSONL.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Fetched => "fetched",
            Outcome::Failed => "failed",
            Outcome::Excluded => "excluded",
        }
    }
}

/// Why a URL was failed or excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Disallowed by robots.txt.
    Robots,
    /// robots.txt stayed unavailable (5xx or unreachable) for every attempt.
    RobotsUnavailable,
    /// Outside the crawl scope (host, domain).
    Scope,
    /// Rejected by the include/exclude filters.
    Filter,
    /// Deeper than max_depth.
    Depth,
    /// Resolves to a loopback, private or otherwise non-public address.
    PrivateNetwork,
    /// Body larger than max_body_bytes (decoded).
    TooLarge,
    /// A deadline fired (connect, headers, idle read, total).
    Timeout,
    /// Name resolution failed (no answer, NXDOMAIN, servers down).
    Dns,
    /// Every path gave a polluted (forged) DNS answer.
    DnsPolluted,
    /// No proxy chain could carry the request and direct connections are not allowed.
    Proxy,
    /// TLS handshake or certificate failure.
    Tls,
    /// TCP connect failed.
    Connect,
    /// The server broke the HTTP protocol or reset the connection.
    Protocol,
    /// A redirect chain came back to a URL already in it.
    RedirectLoop,
    /// A redirect chain longer than max_redirects.
    TooManyRedirects,
    /// The body could not be decoded (corrupt or unsupported content-encoding).
    Decode,
    /// The URL could not be parsed or canonicalised.
    InvalidUrl,
    /// Handlers panicked on this URL max_attempts times.
    Poison,
    /// Its host already had `traps.max_urls_per_host` URLs admitted.
    HostBudget,
    /// A path segment repeats more than `traps.max_repeated_segments` times (`/a/b/a/b/a/b`).
    RepeatedPath,
    /// The path or query is longer than `traps.max_path_bytes` / `max_query_bytes`, or has more than
    /// `traps.max_query_params` parameters.
    LongUrl,
    /// A calendar-like URL (`/2031/12/`, `?date=2099-01-01`, `year=`) outside the configured window of years.
    Calendar,
    /// Its host already had `traps.max_urls_per_pattern` URLs of the same pattern (digits and query values aside).
    PatternBudget,
    /// An operator dropped its host's queue (control API).
    Operator,
}

impl Reason {
    /// Every reason, in declaration order (the metrics registry's label lists are checked against it).
    pub const ALL: [Reason; 25] = [
        Reason::Robots,
        Reason::RobotsUnavailable,
        Reason::Scope,
        Reason::Filter,
        Reason::Depth,
        Reason::PrivateNetwork,
        Reason::TooLarge,
        Reason::Timeout,
        Reason::Dns,
        Reason::DnsPolluted,
        Reason::Proxy,
        Reason::Tls,
        Reason::Connect,
        Reason::Protocol,
        Reason::RedirectLoop,
        Reason::TooManyRedirects,
        Reason::Decode,
        Reason::InvalidUrl,
        Reason::Poison,
        Reason::HostBudget,
        Reason::RepeatedPath,
        Reason::LongUrl,
        Reason::Calendar,
        Reason::PatternBudget,
        Reason::Operator,
    ];

    /// The reason named `name` (as in the JSONL), if any.
    pub fn from_name(name: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// Lowercase name, as in the JSONL.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Robots => "robots",
            Reason::RobotsUnavailable => "robots_unavailable",
            Reason::Scope => "scope",
            Reason::Filter => "filter",
            Reason::Depth => "depth",
            Reason::PrivateNetwork => "private_network",
            Reason::TooLarge => "too_large",
            Reason::Timeout => "timeout",
            Reason::Dns => "dns",
            Reason::DnsPolluted => "dns_polluted",
            Reason::Proxy => "proxy",
            Reason::Tls => "tls",
            Reason::Connect => "connect",
            Reason::Protocol => "protocol",
            Reason::RedirectLoop => "redirect_loop",
            Reason::TooManyRedirects => "too_many_redirects",
            Reason::Decode => "decode",
            Reason::InvalidUrl => "invalid_url",
            Reason::Poison => "poison",
            Reason::HostBudget => "host_budget",
            Reason::RepeatedPath => "repeated_path",
            Reason::LongUrl => "long_url",
            Reason::Calendar => "calendar",
            Reason::PatternBudget => "pattern_budget",
            Reason::Operator => "operator",
        }
    }

    /// The outcome a URL with this reason gets.
    pub fn outcome(self) -> Outcome {
        match self {
            Reason::Robots
            | Reason::Scope
            | Reason::Filter
            | Reason::Depth
            | Reason::PrivateNetwork
            | Reason::HostBudget
            | Reason::RepeatedPath
            | Reason::LongUrl
            | Reason::Calendar
            | Reason::PatternBudget
            | Reason::Operator => Outcome::Excluded,
            _ => Outcome::Failed,
        }
    }
}

/// One JSONL line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub url: String,
    pub outcome: Outcome,
    pub reason: Option<Reason>,
    /// HTTP status, or null when no answer came.
    pub status: Option<u16>,
    pub depth: u32,
    /// The page that linked (or redirected to) this URL; null for seeds.
    pub parent: Option<String>,
    /// Canonical redirect target, for 3xx answers with a Location.
    pub redirect_to: Option<String>,
    pub content_type: Option<String>,
    /// Decoded body bytes.
    pub content_length: Option<u64>,
    /// Links found in the page (before dedup and filtering).
    pub links: Option<u32>,
    /// RFC 3339, UTC.
    pub fetched_at: String,
    pub elapsed_ms: Option<u64>,
    /// How many times the URL was tried (fetch retries and restarts included).
    pub attempts: u32,
    /// HTTP version of the answer ("HTTP/1.1", "HTTP/2").
    pub http_version: Option<String>,
    /// The page asked not to be indexed (meta robots noindex).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noindex: bool,
    /// Human-readable detail for failures (never contains credentials).
    pub error: Option<String>,
    /// How the host name was resolved (null for IP-literal hosts and for URLs never requested).
    #[serde(default)]
    pub dns: Option<DnsInfo>,
    /// The proxy chain the request went through, or "direct" (null when no proxy is configured).
    #[serde(default)]
    pub proxy: Option<String>,
    /// The OpenTelemetry trace of this URL (32 hex digits; null when tracing is off).
    #[serde(default)]
    pub trace_id: Option<String>,
    /// The record's identity across the processes of a distributed crawl (16 hex digits of the URL's fingerprint:
    /// a URL gets one record per crawl; with recrawl (`[recrawl]` or `frontier.redis.recrawl_after_s`), followed by
    /// `-` and a hex number naming the fetch, so that each fetch keeps its own record). `crawl-engine merge` keeps one record per identity. Absent in a single-process crawl, whose file
    /// holds each URL once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
    /// The page's `<title>`, whitespace collapsed, at most [`MAX_TITLE_CHARS`] characters; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `sha1:` + base32 of the decoded payload (after Content-Encoding), as WARC payload digests are written;
    /// absent when no body could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Links (and page requisites) cut by `parser.max_links_per_page`; absent when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub links_dropped: u32,
    /// What the URL was fetched as: `embed` for a page requisite (`crawl.embeds`); absent for pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RecordKind>,
    /// With `[recrawl]`: which fetch of the URL this is and what it found (`visit`, `changed`,
    /// `previous_fetched_at`, `next_due_at`); absent, and the line as without recrawl, when it is off.
    #[serde(flatten)]
    pub revisit: Option<Revisit>,
    /// Where the fetch's `response` (or `revisit`) record is in the WARC files (`output.warc_dir`): file name,
    /// offset and length of its gzip member; absent when WARC output is off or nothing was fetched. Added to the
    /// line when the archive is written, just before the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warc: Option<RecordLocation>,
}

/// The continuous-crawling fields of a record (`[recrawl]`), written together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revisit {
    /// Which fetch of the URL this is: 1 for the first, 2 for the first revisit, ...
    pub visit: u32,
    /// Whether the payload changed since the previous fetch (a 304, or the same payload digest, is unchanged);
    /// null on the first visit and when the fetch read no body.
    pub changed: Option<bool>,
    /// The previous fetch's `fetched_at` (RFC 3339); null on the first visit.
    pub previous_fetched_at: Option<String>,
    /// When the URL comes due again (RFC 3339); null when it will not be revisited.
    pub next_due_at: Option<String>,
}

/// The longest `title` a record carries, in characters.
pub const MAX_TITLE_CHARS: usize = 512;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a fetched URL was to the crawl, when it was not a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A page requisite (image, stylesheet, script, font, icon...): fetched to archive it, never parsed for links.
    Embed,
}

/// Where a WARC record is: its file's name, and its gzip member's offset and compressed length.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordLocation {
    pub file: String,
    pub offset: u64,
    pub length: u64,
}

/// The resolver's evidence for one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsInfo {
    /// hosts | cache | plain | doh
    pub source: String,
    /// The addresses the connection could use (forged ones are never among them).
    pub addresses: Vec<String>,
    pub polluted: bool,
    /// Detection rules that fired: bogus_ip, non_public, injection_race, nxdomain_hijack, cross_check.
    pub rules: Vec<String>,
}

impl Record {
    /// A record for a URL that never got an answer (failed or excluded).
    pub fn terminal(
        url: &str,
        depth: u32,
        parent: Option<&str>,
        reason: Reason,
        error: Option<String>,
    ) -> Record {
        Record {
            url: url.to_owned(),
            outcome: reason.outcome(),
            reason: Some(reason),
            status: None,
            depth,
            parent: parent.map(str::to_owned),
            redirect_to: None,
            content_type: None,
            content_length: None,
            links: None,
            fetched_at: now_rfc3339(),
            elapsed_ms: None,
            attempts: 0,
            http_version: None,
            noindex: false,
            error,
            dns: None,
            proxy: None,
            trace_id: None,
            record_id: None,
            title: None,
            digest: None,
            links_dropped: 0,
            kind: None,
            revisit: None,
            warc: None,
        }
    }

    /// The JSONL line for this record, with its trailing newline.
    pub fn to_line(&self) -> Vec<u8> {
        // Sized for a typical record, so that the line is not grown (and copied) several times on the way.
        let mut line = Vec::with_capacity(self.url.len() * 2 + 448);
        line::write(&mut line, self);
        line.push(b'\n');
        line
    }
}

/// The current time as RFC 3339 with milliseconds, UTC.
pub fn now_rfc3339() -> String {
    rfc3339_millis(SystemTime::now())
}

thread_local! {
    /// The second last formatted on this thread (Unix seconds) and its `YYYY-MM-DDTHH:MM:SS`.
    static SECOND: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((u64::MAX, String::new())) };
}

/// `t` as `humantime::format_rfc3339_millis` writes it, with the date and time of day formatted once a second
/// on each thread (every record takes one).
fn rfc3339_millis(t: SystemTime) -> String {
    let Ok(since) = t.duration_since(SystemTime::UNIX_EPOCH) else {
        return humantime::format_rfc3339_millis(t).to_string();
    };
    let (secs, millis) = (since.as_secs(), since.subsec_millis());
    SECOND.with(|cell| {
        let mut second = cell.borrow_mut();
        if second.0 != secs {
            let whole = humantime::format_rfc3339_seconds(t).to_string();
            *second = (secs, whole.trim_end_matches('Z').to_owned());
        }
        let mut out = String::with_capacity(second.1.len() + 5);
        out.push_str(&second.1);
        out.push('.');
        for digit in [millis / 100, millis / 10 % 10, millis % 10] {
            out.push(char::from(b'0' + digit as u8));
        }
        out.push('Z');
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_humantime_writes_them() {
        let base = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_000_000);
        // Within one second, across seconds, minutes, days and years, forwards and backwards.
        let offsets_ms: [u64; 12] = [
            0,
            1,
            9,
            10,
            99,
            100,
            999,
            1_000,
            59_999,
            86_400_001,
            400 * 86_400_000 + 7,
            5,
        ];
        for ms in offsets_ms {
            let t = base + std::time::Duration::from_millis(ms);
            assert_eq!(
                rfc3339_millis(t),
                humantime::format_rfc3339_millis(t).to_string(),
                "{ms} ms"
            );
        }
        let nanos = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_796_000_000, 999_999_999);
        assert_eq!(
            rfc3339_millis(nanos),
            humantime::format_rfc3339_millis(nanos).to_string()
        );
        assert_eq!(now_rfc3339().len(), "2026-12-04T15:56:21.123Z".len());
    }

    #[test]
    fn all_lists_every_reason_once_and_names_round_trip() {
        for r in Reason::ALL {
            // Exhaustive: a new reason fails to compile here until it is added to this match and to `ALL`.
            match r {
                Reason::Robots
                | Reason::RobotsUnavailable
                | Reason::Scope
                | Reason::Filter
                | Reason::Depth
                | Reason::PrivateNetwork
                | Reason::TooLarge
                | Reason::Timeout
                | Reason::Dns
                | Reason::DnsPolluted
                | Reason::Proxy
                | Reason::Tls
                | Reason::Connect
                | Reason::Protocol
                | Reason::RedirectLoop
                | Reason::TooManyRedirects
                | Reason::Decode
                | Reason::InvalidUrl
                | Reason::Poison
                | Reason::HostBudget
                | Reason::RepeatedPath
                | Reason::LongUrl
                | Reason::Calendar
                | Reason::PatternBudget
                | Reason::Operator => {}
            }
            assert_eq!(Reason::from_name(r.as_str()), Some(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        let names: std::collections::BTreeSet<&str> =
            Reason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), Reason::ALL.len());
        assert_eq!(Reason::from_name("nope"), None);
    }

    #[test]
    fn reasons_map_to_outcomes_and_names() {
        assert_eq!(Reason::Robots.outcome(), Outcome::Excluded);
        assert_eq!(Reason::PrivateNetwork.outcome(), Outcome::Excluded);
        assert_eq!(Reason::Poison.outcome(), Outcome::Failed);
        for trap in [
            Reason::HostBudget,
            Reason::RepeatedPath,
            Reason::LongUrl,
            Reason::Calendar,
            Reason::PatternBudget,
        ] {
            assert_eq!(trap.outcome(), Outcome::Excluded);
            let json = serde_json::to_string(&trap).unwrap();
            assert_eq!(json, format!("\"{}\"", trap.as_str()));
        }
        assert_eq!(Reason::RedirectLoop.as_str(), "redirect_loop");
        let json = serde_json::to_string(&Reason::PrivateNetwork).unwrap();
        assert_eq!(json, "\"private_network\"");
    }

    #[test]
    fn record_line_is_one_json_object_with_newline() {
        let r = Record::terminal(
            "http://a.test/x",
            2,
            Some("http://a.test/"),
            Reason::Scope,
            None,
        );
        let line = r.to_line();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let back: Record = serde_json::from_slice(&line).unwrap();
        assert_eq!(back, r);
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["outcome"], "excluded");
        assert_eq!(v["reason"], "scope");
        assert!(v["status"].is_null());
        assert!(v["fetched_at"].as_str().unwrap().ends_with('Z'));
        for absent in ["title", "digest", "links_dropped", "kind"] {
            assert!(
                v.get(absent).is_none(),
                "{absent} written for a plain record"
            );
        }
    }

    #[test]
    fn content_fields_are_written_when_set_and_read_back() {
        let mut r = Record::terminal("http://a.test/i.png", 1, None, Reason::Scope, None);
        r.title = Some("A page".into());
        r.digest = Some("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ".into());
        r.links_dropped = 7;
        r.kind = Some(RecordKind::Embed);
        let line = r.to_line();
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["title"], "A page");
        assert_eq!(v["digest"], "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
        assert_eq!(v["links_dropped"], 7);
        assert_eq!(v["kind"], "embed");
        let back: Record = serde_json::from_slice(&line).unwrap();
        assert_eq!(back, r);
    }
}
