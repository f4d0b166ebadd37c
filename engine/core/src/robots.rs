//! RFC 9309 robots.txt parsing and matching: pure logic, no I/O.
//!
//! [`Robots::parse`] reads a robots.txt body (at most [`MAX_ROBOTS_BYTES`]) for one crawler, keeps only the rules of
//! the group(s) that apply to it (the merged groups naming its product token, else the merged `*` groups, else none),
//! precomputes normalised patterns sorted by precedence, and answers [`Robots::is_allowed`] without regexes.
//! [`classify_status`] maps the HTTP status of the robots.txt fetch to what the caller must do (RFC 9309 2.3.1).
//!
//! Leniencies beyond the RFC (all conservative or common practice): key typos (`useragent`, `dissallow`, ...), a
//! missing colon (`Disallow /x`), patterns not starting with `/` or `*` get a leading `/`, and several crawl-delay
//! lines in the applicable group yield the largest one.
//!
//! Invalid UTF-8: pattern bytes are kept raw and non-ASCII bytes are percent-encoded byte-wise (so a Latin-1 file's
//! `/caf\xE9` matches `/caf%E9`); sitemap URLs are decoded lossily and dropped if not `http(s)`.

use std::borrow::Cow;
use std::time::Duration;

/// Parse at most this many bytes of a robots.txt body (RFC 9309 2.5 requires at least 500 KiB).
pub const MAX_ROBOTS_BYTES: usize = 512 * 1024;

/// Maximum number of redirect hops to follow when fetching robots.txt (RFC 9309 2.3.1.2).
pub const MAX_ROBOTS_REDIRECTS: u32 = 5;

/// Crawl-delay values above this are clamped (a day is already absurd; it avoids Duration overflow).
const MAX_CRAWL_DELAY_SECS: f64 = 86_400.0;

/// What the caller must do with a robots.txt response of a given HTTP status (RFC 9309 2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 2xx: parse the body.
    Parse,
    /// 3xx: follow the redirect (up to [`MAX_ROBOTS_REDIRECTS`] hops).
    Redirect,
    /// 4xx (including 401, 403, 404, 429): no usable robots.txt, everything is allowed.
    AllowAll,
    /// 5xx (and anything outside 200..=499): treat as complete disallow and retry later.
    Unavailable,
}

/// Classifies the status code of a robots.txt fetch. Codes outside 2xx..4xx are treated as unavailable.
pub fn classify_status(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Parse,
        300..=399 => StatusClass::Redirect,
        400..=499 => StatusClass::AllowAll,
        _ => StatusClass::Unavailable,
    }
}

/// The product token of a User-Agent value: its leading run of `[A-Za-z_-]` characters (RFC 9309 2.2.1),
/// e.g. `"crawl-engine/0.1 (+https://x)"` gives `"crawl-engine"`. Leading whitespace is skipped.
pub fn product_token(user_agent: &str) -> &str {
    let s = user_agent.trim_start();
    let end = s
        .bytes()
        .position(|b| !(b.is_ascii_alphabetic() || b == b'-' || b == b'_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// One allow/disallow rule with its pattern normalised at parse time.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    allow: bool,
    /// Normalised pattern, consecutive `*` collapsed, trailing `$` removed (see `anchored`).
    pattern: Box<[u8]>,
    /// The pattern ended in `$`: it must match the whole path.
    anchored: bool,
    /// Octets of the normalised pattern as written (including `*` and `$`): longer wins.
    priority: usize,
}

/// The robots.txt rules that apply to one crawler, plus the file's sitemaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Robots {
    /// Sorted by precedence: priority descending, allow before disallow on ties. First match decides.
    rules: Vec<Rule>,
    crawl_delay: Option<Duration>,
    sitemaps: Vec<String>,
}

/// Rules and crawl-delay collected for one side (specific agent or `*`).
#[derive(Default)]
struct GroupAcc {
    rules: Vec<Rule>,
    crawl_delay: Option<Duration>,
}

impl GroupAcc {
    fn add_delay(&mut self, d: Duration) {
        self.crawl_delay = Some(self.crawl_delay.map_or(d, |old| old.max(d)));
    }
}

/// A recognised line key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    UserAgent,
    Allow,
    Disallow,
    CrawlDelay,
    Sitemap,
}

impl Robots {
    /// Parses `body` for the crawler whose full User-Agent header value is `user_agent`. Never fails: garbage yields
    /// a result with no rules (allow all). Only the first [`MAX_ROBOTS_BYTES`] are read, ending on a line boundary.
    pub fn parse(body: &[u8], user_agent: &str) -> Robots {
        let token = product_token(user_agent).as_bytes();
        let body = truncate_body(body);
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);

        let mut specific = GroupAcc::default();
        let mut global = GroupAcc::default();
        let mut ever_specific = false;
        let mut sitemaps: Vec<String> = Vec::new();
        // Group state: whether a group has started, whether the last group line was a user-agent line, and whether
        // the current group applies to us specifically and/or via `*`.
        let mut in_group = false;
        let mut in_agent_run = false;
        let mut cur_specific = false;
        let mut cur_global = false;

        for line in body.split(|&b| b == b'\n' || b == b'\r') {
            let Some((key, value)) = split_line(line) else {
                continue;
            };
            match key {
                Key::UserAgent => {
                    if !in_agent_run {
                        cur_specific = false;
                        cur_global = false;
                    }
                    in_group = true;
                    in_agent_run = true;
                    match agent_of_line(value) {
                        LineAgent::Global => cur_global = true,
                        LineAgent::Named(name) => {
                            if !token.is_empty() && name.eq_ignore_ascii_case(token) {
                                cur_specific = true;
                                ever_specific = true;
                            }
                        }
                    }
                }
                Key::Allow | Key::Disallow | Key::CrawlDelay => {
                    if !in_group {
                        continue;
                    }
                    in_agent_run = false;
                    if !cur_specific && !cur_global {
                        continue;
                    }
                    if key == Key::CrawlDelay {
                        if let Some(d) = parse_crawl_delay(value) {
                            if cur_specific {
                                specific.add_delay(d);
                            }
                            if cur_global {
                                global.add_delay(d);
                            }
                        }
                    } else if let Some(rule) = Rule::new(key == Key::Allow, value) {
                        if cur_specific && cur_global {
                            specific.rules.push(rule.clone());
                            global.rules.push(rule);
                        } else if cur_specific {
                            specific.rules.push(rule);
                        } else {
                            global.rules.push(rule);
                        }
                    }
                }
                Key::Sitemap => {
                    if let Some(url) = sitemap_url(value)
                        && !sitemaps.iter().any(|s| s == &url)
                    {
                        sitemaps.push(url);
                    }
                }
            }
        }

        let (mut rules, crawl_delay) = if ever_specific {
            (specific.rules, specific.crawl_delay.or(global.crawl_delay))
        } else {
            (global.rules, global.crawl_delay)
        };
        sort_rules(&mut rules);
        Robots {
            rules,
            crawl_delay,
            sitemaps,
        }
    }

    /// No rules: everything is allowed.
    pub fn allow_all() -> Robots {
        Robots {
            rules: Vec::new(),
            crawl_delay: None,
            sitemaps: Vec::new(),
        }
    }

    /// Everything except `/robots.txt` is disallowed (used for 5xx / unreachable robots.txt).
    pub fn disallow_all() -> Robots {
        let rules = Rule::new(false, b"/").into_iter().collect();
        Robots {
            rules,
            crawl_delay: None,
            sitemaps: Vec::new(),
        }
    }

    /// Whether the URL with this path (plus `?query` if any, percent-encoded as in the URL) may be fetched.
    /// A fragment is ignored, an empty input means `/`, and `/robots.txt` itself is always allowed.
    pub fn is_allowed(&self, path_and_query: &str) -> bool {
        if self.rules.is_empty() {
            return true;
        }
        let raw = path_and_query.as_bytes();
        let raw = raw
            .iter()
            .position(|&b| b == b'#')
            .map_or(raw, |i| &raw[..i]);
        let path: Cow<'_, [u8]> = if raw.first() == Some(&b'/') {
            normalize_bytes(raw)
        } else {
            let mut v = Vec::with_capacity(raw.len() + 1);
            v.push(b'/');
            v.extend_from_slice(raw);
            Cow::Owned(normalize_bytes(&v).into_owned())
        };
        let only_path = path
            .iter()
            .position(|&b| b == b'?')
            .map_or(&path[..], |i| &path[..i]);
        if only_path == b"/robots.txt" {
            return true;
        }
        self.rules
            .iter()
            .find(|r| glob_match(&r.pattern, &path, r.anchored))
            .is_none_or(|r| r.allow)
    }

    /// Crawl-delay of the applicable group: the specific group's if it has one, else the `*` group's.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// All absolute `http(s)` Sitemap URLs in the file (not group-bound), in order, without duplicates.
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    /// Number of allow/disallow rules in the applicable (merged) group.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// A compact form of what applies to this crawler (its rules, crawl-delay and the file's sitemaps) that
    /// [`from_snapshot`](Self::from_snapshot) reads back unchanged. A crawl shared by many processes keeps it with
    /// the host's shard, so that whoever crawls the host next obeys the same rules without fetching them again.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = b"robots/1\n".to_vec();
        if let Some(d) = self.crawl_delay {
            out.extend_from_slice(format!("delay {}\n", d.as_millis()).as_bytes());
        }
        for s in &self.sitemaps {
            out.extend_from_slice(format!("sitemap {s}\n").as_bytes());
        }
        for r in &self.rules {
            let kind = if r.allow { 'a' } else { 'd' };
            let anchored = u8::from(r.anchored);
            out.extend_from_slice(format!("rule {kind} {} {anchored} ", r.priority).as_bytes());
            out.extend_from_slice(&r.pattern);
            out.push(b'\n');
        }
        out
    }

    /// Reads a [`snapshot`](Self::snapshot); None when it is not one.
    pub fn from_snapshot(bytes: &[u8]) -> Option<Robots> {
        let mut lines = bytes.split(|&b| b == b'\n');
        if lines.next()? != b"robots/1" {
            return None;
        }
        let mut robots = Robots::allow_all();
        for line in lines.filter(|l| !l.is_empty()) {
            let (key, rest) = split_word(line)?;
            match key {
                b"delay" => {
                    let ms: u64 = std::str::from_utf8(rest).ok()?.parse().ok()?;
                    robots.crawl_delay = Some(Duration::from_millis(ms));
                }
                b"sitemap" => robots.sitemaps.push(String::from_utf8(rest.to_vec()).ok()?),
                b"rule" => {
                    let (kind, rest) = split_word(rest)?;
                    let (priority, rest) = split_word(rest)?;
                    let (anchored, pattern) = split_word(rest)?;
                    robots.rules.push(Rule {
                        allow: match kind {
                            b"a" => true,
                            b"d" => false,
                            _ => return None,
                        },
                        pattern: pattern.into(),
                        anchored: anchored == b"1",
                        priority: std::str::from_utf8(priority).ok()?.parse().ok()?,
                    });
                }
                _ => return None,
            }
        }
        Some(robots)
    }
}

impl Rule {
    /// Builds a rule from a raw (comment-stripped, trimmed) value. Empty values give no rule.
    fn new(allow: bool, value: &[u8]) -> Option<Rule> {
        if value.is_empty() {
            return None;
        }
        let (body, anchored) = match value.strip_suffix(b"$") {
            Some(rest) => (rest, true),
            None => (value, false),
        };
        let mut raw = Vec::with_capacity(body.len() + 1);
        if !matches!(value.first(), Some(b'/' | b'*' | b'$')) {
            raw.push(b'/');
        }
        raw.extend_from_slice(body);
        let normalized = normalize_bytes(&raw);
        let priority = normalized.len() + usize::from(anchored);
        let mut pattern = Vec::with_capacity(normalized.len());
        for &b in normalized.iter() {
            if b == b'*' && pattern.last() == Some(&b'*') {
                continue;
            }
            pattern.push(b);
        }
        Some(Rule {
            allow,
            pattern: pattern.into_boxed_slice(),
            anchored,
            priority,
        })
    }
}

/// Orders rules so that the first matching one is the most specific, allow winning ties.
fn sort_rules(rules: &mut [Rule]) {
    rules.sort_by(|a, b| b.priority.cmp(&a.priority).then(b.allow.cmp(&a.allow)));
}

/// Cuts `body` to at most [`MAX_ROBOTS_BYTES`], dropping a trailing partial line if the cut fell inside one.
fn truncate_body(body: &[u8]) -> &[u8] {
    if body.len() <= MAX_ROBOTS_BYTES {
        return body;
    }
    let head = &body[..MAX_ROBOTS_BYTES];
    if matches!(body[MAX_ROBOTS_BYTES], b'\n' | b'\r') {
        return head;
    }
    match head.iter().rposition(|&b| b == b'\n' || b == b'\r') {
        Some(i) => &head[..i],
        None => &[],
    }
}

/// Splits a line into a recognised key and its comment-stripped, trimmed value. Unknown keys give `None`.
fn split_line(line: &[u8]) -> Option<(Key, &[u8])> {
    let line = line
        .iter()
        .position(|&b| b == b'#')
        .map_or(line, |i| &line[..i]);
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    let (key, value) = match line.iter().position(|&b| b == b':') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => {
            // A forgotten colon: accept whitespace as separator only for exactly two tokens.
            let i = line.iter().position(|b| b.is_ascii_whitespace())?;
            let value = line[i..].trim_ascii_start();
            if value.iter().any(|b| b.is_ascii_whitespace()) {
                return None;
            }
            (&line[..i], value)
        }
    };
    Some((parse_key(key.trim_ascii())?, value.trim_ascii()))
}

/// Recognises a key case-insensitively, ignoring `-`, `_` and whitespace, including common typos.
fn parse_key(key: &[u8]) -> Option<Key> {
    let mut buf = [0u8; 24];
    let mut n = 0;
    for &b in key {
        if b == b'-' || b == b'_' || b.is_ascii_whitespace() {
            continue;
        }
        *buf.get_mut(n)? = b.to_ascii_lowercase();
        n += 1;
    }
    match &buf[..n] {
        b"useragent" => Some(Key::UserAgent),
        b"allow" => Some(Key::Allow),
        b"disallow" | b"dissallow" | b"dissalow" | b"disalow" | b"diasllow" | b"disallaw"
        | b"disallows" => Some(Key::Disallow),
        b"crawldelay" => Some(Key::CrawlDelay),
        b"sitemap" | b"sitemaps" => Some(Key::Sitemap),
        _ => None,
    }
}

/// The agent named by a user-agent line value.
enum LineAgent<'a> {
    Global,
    Named(&'a [u8]),
}

/// `*` (alone or followed by whitespace) is the global agent; otherwise the product token of the value.
fn agent_of_line(value: &[u8]) -> LineAgent<'_> {
    if value.first() == Some(&b'*') && value.get(1).is_none_or(|b| b.is_ascii_whitespace()) {
        return LineAgent::Global;
    }
    let end = value
        .iter()
        .position(|&b| !(b.is_ascii_alphabetic() || b == b'-' || b == b'_'))
        .unwrap_or(value.len());
    LineAgent::Named(&value[..end])
}

/// Parses a crawl-delay of the form `digits[.digits]` or `.digits` (seconds); anything else is ignored. The delay is
/// rounded to whole milliseconds, the unit of politeness and of [`Robots::snapshot`] (which must read back unchanged).
fn parse_crawl_delay(value: &[u8]) -> Option<Duration> {
    let s = std::str::from_utf8(value).ok()?;
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    let secs: f64 = s.parse().ok()?;
    let exact = Duration::try_from_secs_f64(secs.min(MAX_CRAWL_DELAY_SECS)).ok()?;
    let millis = (exact.as_nanos() + 500_000) / 1_000_000;
    Some(Duration::from_millis(u64::try_from(millis).ok()?))
}

/// Accepts a sitemap value that is an absolute `http://` or `https://` URL with something after the scheme.
fn sitemap_url(value: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(value);
    let s = s.trim();
    let lower_starts =
        |p: &str| s.len() > p.len() && s.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    if (lower_starts("http://") || lower_starts("https://")) && !s.chars().any(char::is_whitespace)
    {
        Some(s.to_owned())
    } else {
        None
    }
}

/// RFC 3986 unreserved characters: these are decoded from `%XX` so both spellings compare equal.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Bytes that never appear raw in a URL and are percent-encoded: controls, space, non-ASCII and `"<>\^`{|}`.
fn needs_encoding(b: u8) -> bool {
    b <= b' '
        || b >= 0x7F
        || matches!(
            b,
            b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
        )
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Normalises percent-encoding the same way for patterns and paths: `%XX` of unreserved characters is decoded,
/// other `%xx` get uppercase hex digits, and bytes from [`needs_encoding`] are encoded. `*`, `$` and a bare `%` are
/// kept. Borrows when nothing changes.
fn normalize_bytes(input: &[u8]) -> Cow<'_, [u8]> {
    if !input.iter().any(|&b| b == b'%' || needs_encoding(b)) {
        return Cow::Borrowed(input);
    }
    let mut out = Vec::with_capacity(input.len() + 8);
    let mut i = 0;
    while i < input.len() {
        let b = input[i];
        if b == b'%' {
            if let (Some(h), Some(l)) = (
                input.get(i + 1).copied().and_then(hex_val),
                input.get(i + 2).copied().and_then(hex_val),
            ) {
                let v = (h << 4) | l;
                if is_unreserved(v) {
                    out.push(v);
                } else {
                    out.extend_from_slice(&[
                        b'%',
                        HEX_UPPER[usize::from(h)],
                        HEX_UPPER[usize::from(l)],
                    ]);
                }
                i += 3;
                continue;
            }
            out.push(b'%');
        } else if needs_encoding(b) {
            out.extend_from_slice(&[
                b'%',
                HEX_UPPER[usize::from(b >> 4)],
                HEX_UPPER[usize::from(b & 0x0F)],
            ]);
        } else {
            out.push(b);
        }
        i += 1;
    }
    Cow::Owned(out)
}

/// Matches `pattern` (with `*` wildcards) against the start of `text`; if `anchored`, it must cover all of `text`.
/// Greedy matching with backtracking to the last `*`: no allocation, worst case O(len(pattern) * len(text)).
fn glob_match(pattern: &[u8], text: &[u8], anchored: bool) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    // Position in the pattern after the last `*` seen, and the text position that `*` currently extends to.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p == pattern.len() {
            if !anchored || t == text.len() {
                return true;
            }
        } else if pattern[p] == b'*' {
            p += 1;
            star = Some((p, t));
            continue;
        } else if t < text.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
            continue;
        }
        match star {
            Some((sp, st)) if st < text.len() => {
                star = Some((sp, st + 1));
                p = sp;
                t = st + 1;
            }
            _ => return false,
        }
    }
}

/// The first space-separated word of a line and the rest after the space.
fn split_word(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = line.iter().position(|&b| b == b' ')?;
    Some((&line[..i], &line[i + 1..]))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_parse;
