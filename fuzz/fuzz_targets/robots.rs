//! robots.txt: parsing arbitrary bytes and matching arbitrary paths never panics, the crawl-delay stays within a day,
//! a snapshot reads back unchanged; and on generated files (groups, agents, allow/disallow rules with `*` and `$`)
//! the verdict equals a plain reference: the rules of the groups naming the crawler (else of the `*` groups), the
//! longest matching pattern decides, allow wins ties, no match allows.
#![no_main]

use crawl_core::robots::Robots;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

const UA: &str = "crawlbot/2.1 (+https://example.com/bot)";
const AGENTS: &[&str] = &[
    "*",
    "crawlbot",
    "CrawlBot",
    "otherbot",
    "crawl",
    "crawlbot/1.0",
    "* ",
];
/// Bytes that percent-normalisation leaves alone, so that patterns and paths compare as written.
const PATTERN_BYTES: &[u8] = b"ab/*$?=.-";
const PATH_BYTES: &[u8] = b"ab/?=.-$";

/// One rule as written: allow or disallow, and its value.
struct Rule {
    allow: bool,
    value: Vec<u8>,
}

struct Group {
    agents: Vec<&'static str>,
    rules: Vec<Rule>,
}

fn bytes_from(u: &mut Unstructured<'_>, alphabet: &[u8], max: usize) -> Result<Vec<u8>> {
    let n = u.int_in_range(0..=max)?;
    (0..n).map(|_| u.choose(alphabet).copied()).collect()
}

fn groups(u: &mut Unstructured<'_>) -> Result<Vec<Group>> {
    let n = u.int_in_range(0..=4)?;
    let mut out = Vec::new();
    for _ in 0..n {
        let agents = (0..u.int_in_range(1..=3)?)
            .map(|_| u.choose(AGENTS).copied())
            .collect::<Result<Vec<_>>>()?;
        let mut rules = Vec::new();
        for _ in 0..u.int_in_range(0..=6)? {
            let mut value = bytes_from(u, PATTERN_BYTES, 8)?;
            if u.ratio(3, 4)? {
                value.insert(0, b'/');
            }
            rules.push(Rule {
                allow: u.arbitrary()?,
                value,
            });
        }
        out.push(Group { agents, rules });
    }
    Ok(out)
}

fn render(groups: &[Group]) -> Vec<u8> {
    let mut out = Vec::new();
    for g in groups {
        for a in &g.agents {
            out.extend_from_slice(format!("User-agent: {a}\n").as_bytes());
        }
        for r in &g.rules {
            out.extend_from_slice(if r.allow { b"Allow: " } else { b"Disallow: " });
            out.extend_from_slice(&r.value);
            out.push(b'\n');
        }
        out.push(b'\n');
    }
    out
}

/// `*` matches any run of bytes, a final `$` anchors at the end, otherwise the pattern matches a prefix.
fn reference_match(pattern: &[u8], path: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix(b"$") {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    // can[j]: the pattern read so far can end at path[..j].
    let mut can = vec![false; path.len() + 1];
    can[0] = true;
    for &c in pattern {
        let mut next = vec![false; path.len() + 1];
        for j in 0..=path.len() {
            if c == b'*' {
                next[j] = can[..=j].iter().any(|&b| b);
            } else if j > 0 && can[j - 1] && path[j - 1] == c {
                next[j] = true;
            }
        }
        can = next;
    }
    if anchored {
        can[path.len()]
    } else {
        can.iter().any(|&b| b)
    }
}

/// The groups as RFC 9309 reads them: user-agent lines with no rule between them (blank lines do not count) start
/// one group.
fn merged(groups: &[Group]) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    let mut open = false;
    for g in groups {
        match out.last_mut() {
            Some(last) if open => {
                last.agents.extend_from_slice(&g.agents);
                last.rules = g
                    .rules
                    .iter()
                    .map(|r| Rule {
                        allow: r.allow,
                        value: r.value.clone(),
                    })
                    .collect();
            }
            _ => out.push(Group {
                agents: g.agents.clone(),
                rules: g
                    .rules
                    .iter()
                    .map(|r| Rule {
                        allow: r.allow,
                        value: r.value.clone(),
                    })
                    .collect(),
            }),
        }
        open = g.rules.is_empty();
    }
    out
}

fn reference_verdict(groups: &[Group], path: &[u8]) -> bool {
    if path == b"/robots.txt" {
        return true;
    }
    let groups = &merged(groups)[..];
    let names_us = |g: &Group| {
        g.agents.iter().any(|a| {
            a.split('/')
                .next()
                .is_some_and(|t| t.eq_ignore_ascii_case("crawlbot"))
        })
    };
    let global = |g: &Group| g.agents.iter().any(|a| a.trim() == "*");
    let specific = groups.iter().any(names_us);
    let mut best: Option<(usize, bool)> = None;
    for g in groups
        .iter()
        .filter(|g| if specific { names_us(g) } else { global(g) })
    {
        for r in g.rules.iter().filter(|r| !r.value.is_empty()) {
            let mut pattern = r.value.clone();
            if !matches!(pattern.first(), Some(b'/' | b'*' | b'$')) {
                pattern.insert(0, b'/');
            }
            if reference_match(&pattern, path) {
                let candidate = (pattern.len(), r.allow);
                best = Some(best.map_or(candidate, |b| b.max(candidate)));
            }
        }
    }
    best.is_none_or(|(_, allow)| allow)
}

fn structured(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let groups = groups(&mut u)?;
    let body = render(&groups);
    let robots = Robots::parse(&body, UA);
    for _ in 0..u.int_in_range(1..=4)? {
        let mut path = bytes_from(&mut u, PATH_BYTES, 10)?;
        path.insert(0, b'/');
        let text = std::str::from_utf8(&path).expect("ascii path");
        assert_eq!(
            robots.is_allowed(text),
            reference_verdict(&groups, &path),
            "path {text:?} against\n{}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(())
}

fn raw(body: &[u8]) {
    let robots = Robots::parse(body, UA);
    if let Some(d) = robots.crawl_delay() {
        assert!(d <= Duration::from_secs(86_400), "crawl-delay {d:?}");
    }
    for s in robots.sitemaps() {
        let lower = s.to_ascii_lowercase();
        assert!(
            lower.starts_with("http://") || lower.starts_with("https://"),
            "sitemap {s:?}"
        );
    }
    assert_eq!(
        Robots::from_snapshot(&robots.snapshot()).as_ref(),
        Some(&robots),
        "snapshot"
    );
    let _ = Robots::from_snapshot(body);
    for line in body.split(|&b| b == b'\n').take(16) {
        let text = String::from_utf8_lossy(line);
        let _ = robots.is_allowed(&text);
        if let Some((_, value)) = text.split_once(':') {
            let _ = robots.is_allowed(value.trim());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else {
        let _ = structured(rest);
    }
});
