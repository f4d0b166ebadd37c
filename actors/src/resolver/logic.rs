//! The resolver's pure detection logic (docs/RESOLVER.md): the result types, the judgement of
//! the plain-DNS answers to one query (rules 1-4: bogus address, non-public address, injection
//! race, NXDOMAIN hijack), the DoH cross-check and strong/weak policy (rule 5) that turn a
//! judgement into the final [`Outcome`], and the NXDOMAIN-hijack probe helpers.
//!
//! Nothing here does I/O: the actor feeds in the answers its transports collected.

use crawl_core::record::DnsInfo;
use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use super::ipset::IpSet;

/// A detection rule that fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// An address inside the configured bogus_ips (strong).
    BogusIp,
    /// A non-public address for a name under a known public suffix (weak).
    NonPublic,
    /// Two different answers to one query within the hold-on window (strong).
    InjectionRace,
    /// An address learned by the NXDOMAIN-hijack probe (strong).
    NxdomainHijack,
    /// The DoH answer disagreed with the plain answer.
    CrossCheck,
}

impl Rule {
    /// A short, stable, lowercase name for logs, metrics and records.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::BogusIp => "bogus_ip",
            Rule::NonPublic => "non_public",
            Rule::InjectionRace => "injection_race",
            Rule::NxdomainHijack => "nxdomain_hijack",
            Rule::CrossCheck => "cross_check",
        }
    }

    /// Strong rules mean polluted even without a DoH cross-check.
    pub fn is_strong(self) -> bool {
        matches!(
            self,
            Rule::BogusIp | Rule::InjectionRace | Rule::NxdomainHijack
        )
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A DNS response code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rcode {
    NoError,
    NxDomain,
    ServFail,
    Refused,
    Other(u8),
}

impl Rcode {
    /// From the numeric code of the DNS header (RFC 1035 / 6895).
    pub fn from_u8(code: u8) -> Rcode {
        match code {
            0 => Rcode::NoError,
            2 => Rcode::ServFail,
            3 => Rcode::NxDomain,
            5 => Rcode::Refused,
            other => Rcode::Other(other),
        }
    }

    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Rcode::NoError => 0,
            Rcode::ServFail => 2,
            Rcode::NxDomain => 3,
            Rcode::Refused => 5,
            Rcode::Other(c) => c,
        }
    }
}

impl fmt::Display for Rcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rcode::NoError => f.write_str("noerror"),
            Rcode::NxDomain => f.write_str("nxdomain"),
            Rcode::ServFail => f.write_str("servfail"),
            Rcode::Refused => f.write_str("refused"),
            Rcode::Other(c) => write!(f, "rcode {c}"),
        }
    }
}

/// One DNS response (plain or DoH): its code, the A/AAAA addresses, the smallest TTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub rcode: Rcode,
    pub ips: Vec<IpAddr>,
    pub ttl: Duration,
    /// The TC bit was set (UDP answer cut short).
    pub truncated: bool,
}

impl Answer {
    /// A NOERROR answer with these addresses.
    pub fn addresses(ips: Vec<IpAddr>, ttl: Duration) -> Answer {
        Answer {
            rcode: Rcode::NoError,
            ips,
            ttl,
            truncated: false,
        }
    }

    /// An answer without addresses carrying `rcode`.
    pub fn empty(rcode: Rcode, ttl: Duration) -> Answer {
        Answer {
            rcode,
            ips: Vec::new(),
            ttl,
            truncated: false,
        }
    }

    /// NOERROR with at least one address.
    fn has_data(&self) -> bool {
        self.rcode == Rcode::NoError && !self.ips.is_empty()
    }

    /// NXDOMAIN, or NOERROR without addresses ("no data").
    fn is_negative(&self) -> bool {
        self.rcode == Rcode::NxDomain || (self.rcode == Rcode::NoError && self.ips.is_empty())
    }

    /// What two answers are compared by in the race rule: negative, or the address set.
    fn content(&self) -> Option<Vec<IpAddr>> {
        if self.is_negative() {
            Some(Vec::new())
        } else if self.has_data() {
            let mut ips = self.ips.clone();
            ips.sort_unstable();
            ips.dedup();
            Some(ips)
        } else {
            None
        }
    }
}

/// Where a resolution came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    Hosts,
    Cache,
    Plain,
    Doh,
}

impl Source {
    /// A short, stable, lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Hosts => "hosts",
            Source::Cache => "cache",
            Source::Plain => "plain",
            Source::Doh => "doh",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Addresses the engine may connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub addrs: Vec<IpAddr>,
    pub source: Source,
    /// The plain answer was judged forged (the addresses here are the ones that passed, or DoH's).
    pub polluted: bool,
    /// Every rule that fired, in [`Rule`] order.
    pub rules: Vec<Rule>,
    pub ttl: Duration,
}

/// The final result of resolving one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Resolved(Resolution),
    NxDomain {
        rules: Vec<Rule>,
    },
    Unresolved {
        polluted: bool,
        rules: Vec<Rule>,
        detail: String,
    },
}

impl Outcome {
    /// The record's view of this outcome.
    pub fn dns_info(&self) -> DnsInfo {
        let rules = |r: &[Rule]| r.iter().map(|x| x.as_str().to_owned()).collect::<Vec<_>>();
        match self {
            Outcome::Resolved(r) => DnsInfo {
                source: r.source.as_str().to_owned(),
                addresses: r.addrs.iter().map(|a| a.to_string()).collect(),
                polluted: r.polluted,
                rules: rules(&r.rules),
            },
            Outcome::NxDomain { rules: r } => DnsInfo {
                source: "lookup".into(),
                addresses: Vec::new(),
                polluted: !r.is_empty(),
                rules: rules(r),
            },
            Outcome::Unresolved {
                polluted, rules: r, ..
            } => DnsInfo {
                source: "lookup".into(),
                addresses: Vec::new(),
                polluted: *polluted,
                rules: rules(r),
            },
        }
    }

    /// The addresses to connect to (empty unless resolved).
    pub fn addrs(&self) -> &[IpAddr] {
        match self {
            Outcome::Resolved(r) => &r.addrs,
            _ => &[],
        }
    }

    /// The rules that fired.
    pub fn rules(&self) -> &[Rule] {
        match self {
            Outcome::Resolved(r) => &r.rules,
            Outcome::NxDomain { rules } | Outcome::Unresolved { rules, .. } => rules,
        }
    }

    /// True when the answer was judged polluted.
    pub fn polluted(&self) -> bool {
        match self {
            Outcome::Resolved(r) => r.polluted,
            Outcome::NxDomain { .. } => false,
            Outcome::Unresolved { polluted, .. } => *polluted,
        }
    }
}

/// What the detection rules need besides the answers.
#[derive(Debug, Clone, Default)]
pub struct DetectCtx {
    /// Known forged addresses (rule 1).
    pub bogus: IpSet,
    /// Addresses learned by the NXDOMAIN-hijack probe (rule 4).
    pub hijack: HashSet<IpAddr>,
    /// Rule 2 is active (security.allow_private_networks = false).
    pub non_public_suspicious: bool,
    /// Non-public blocks the crawl may reach (security.allow_cidrs): an address in one is not suspicious.
    pub allow_cidrs: Vec<crawl_core::netguard::Cidr>,
}

/// The judgement of the plain answers to one query, before any cross-check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlainVerdict {
    /// No rule fired.
    Clean { ips: Vec<IpAddr>, ttl: Duration },
    /// At least one rule fired.
    Suspicious {
        /// Addresses that passed (non-public ones stay: that rule is weak). May be empty.
        usable: Vec<IpAddr>,
        /// Addresses judged forged: bogus, hijack, or from an answer dropped by the race rule.
        forged: Vec<IpAddr>,
        rules: Vec<Rule>,
        /// A strong rule fired.
        strong: bool,
        ttl: Duration,
    },
    /// NXDOMAIN or no data (a hijack address counts as NXDOMAIN).
    NxDomain { rules: Vec<Rule> },
    /// No usable answer at all (timeout, SERVFAIL, REFUSED, ...) and no rule fired.
    Failed { detail: String },
}

impl PlainVerdict {
    /// The rules that fired.
    pub fn rules(&self) -> &[Rule] {
        match self {
            PlainVerdict::Suspicious { rules, .. } | PlainVerdict::NxDomain { rules } => rules,
            PlainVerdict::Clean { .. } | PlainVerdict::Failed { .. } => &[],
        }
    }

    /// True when [`cross_check`] would use a DoH answer: a rule fired, or plain DNS failed.
    pub fn wants_doh(&self) -> bool {
        matches!(self, PlainVerdict::Failed { .. }) || !self.rules().is_empty()
    }
}

/// Adds `rule` keeping the list sorted and without duplicates.
fn add_rule(rules: &mut Vec<Rule>, rule: Rule) {
    if let Err(i) = rules.binary_search(&rule) {
        rules.insert(i, rule);
    }
}

fn push_unique(v: &mut Vec<IpAddr>, ip: IpAddr) {
    if !v.contains(&ip) {
        v.push(ip);
    }
}

/// Judges every plain answer to one query (arrival order) with rules 1-4.
///
/// Truncated answers are ignored when a complete one exists. Failure answers (SERVFAIL, ...)
/// never take part in the race rule. When answers with different content arrive (different
/// address sets, or addresses versus NXDOMAIN), the content seen first is taken as forged and
/// the last new content is judged; the rules fired on the dropped answers are reported too.
pub fn judge_plain(name: &str, answers: &[Answer], ctx: &DetectCtx) -> PlainVerdict {
    if answers.is_empty() {
        return PlainVerdict::Failed {
            detail: "no answer".to_owned(),
        };
    }
    let complete: Vec<&Answer> = answers.iter().filter(|a| !a.truncated).collect();
    let considered: Vec<&Answer> = if complete.is_empty() {
        answers.iter().collect()
    } else {
        complete
    };
    // Distinct contents in order of first appearance, each with its first answer.
    let mut distinct: Vec<(Vec<IpAddr>, &Answer)> = Vec::new();
    for a in &considered {
        if let Some(content) = a.content()
            && !distinct.iter().any(|(c, _)| *c == content)
        {
            distinct.push((content, a));
        }
    }
    let Some((_, chosen)) = distinct.last() else {
        // Only failure answers: report the last one.
        let detail = considered
            .last()
            .map_or_else(|| "no answer".to_owned(), |a| a.rcode.to_string());
        return PlainVerdict::Failed { detail };
    };
    let chosen: &Answer = chosen;
    let mut rules = Vec::new();
    let mut forged = Vec::new();
    if distinct.len() > 1 {
        add_rule(&mut rules, Rule::InjectionRace);
    }
    let check_non_public = ctx.non_public_suspicious && public_name(name);
    // Rules 1, 2 and 4 on one address: Some(rule) when it fired, and whether it is forged.
    let judge = |ip: IpAddr| -> Option<(Rule, bool)> {
        if ctx.bogus.contains(ip) {
            Some((Rule::BogusIp, true))
        } else if ctx.hijack.contains(&ip) {
            Some((Rule::NxdomainHijack, true))
        } else if check_non_public
            && !crawl_core::netaddr::is_public_ip(ip)
            && !ctx.allow_cidrs.iter().any(|c| c.contains(ip))
        {
            Some((Rule::NonPublic, false))
        } else {
            None
        }
    };
    // Dropped answers: everything in them is forged; their rules are reported.
    for (_, dropped) in distinct.iter().take(distinct.len().saturating_sub(1)) {
        for &ip in &dropped.ips {
            if let Some((rule, _)) = judge(ip) {
                add_rule(&mut rules, rule);
            }
            if !chosen.ips.contains(&ip) {
                push_unique(&mut forged, ip);
            }
        }
    }
    let mut usable = Vec::new();
    let mut hijacked_only = chosen.has_data();
    for &ip in &chosen.ips {
        match judge(ip) {
            Some((rule, true)) => {
                add_rule(&mut rules, rule);
                hijacked_only &= rule == Rule::NxdomainHijack;
                push_unique(&mut forged, ip);
            }
            Some((rule, false)) => {
                add_rule(&mut rules, rule);
                push_unique(&mut usable, ip);
            }
            None => push_unique(&mut usable, ip),
        }
    }
    forged.retain(|ip| !usable.contains(ip));
    let ttl = chosen.ttl;
    if chosen.is_negative() || (hijacked_only && usable.is_empty()) {
        return PlainVerdict::NxDomain { rules };
    }
    if rules.is_empty() {
        return PlainVerdict::Clean { ips: usable, ttl };
    }
    let strong = rules.iter().any(|r| r.is_strong());
    PlainVerdict::Suspicious {
        usable,
        forged,
        rules,
        strong,
        ttl,
    }
}

/// Applies rule 5 and the strong/weak policy to a plain verdict, giving the final outcome.
///
/// `doh` is the DoH answer for the same name, when one was obtained (the caller asks DoH when
/// [`PlainVerdict::wants_doh`]). A suspicious verdict and a DoH answer with no address in
/// common mean polluted and the DoH answer is used (rule `cross_check` added); agreement keeps
/// the plain addresses and clears a weak rule. Without a usable DoH answer strong rules mean
/// polluted and a weak rule alone is ignored. A failed plain lookup falls back to DoH.
pub fn cross_check(verdict: &PlainVerdict, doh: Option<&Answer>) -> Outcome {
    let doh = doh.filter(|a| a.has_data() || a.is_negative());
    match verdict {
        PlainVerdict::Clean { ips, ttl } => {
            resolved(ips.clone(), Source::Plain, false, vec![], *ttl)
        }
        PlainVerdict::Failed { detail } => match doh {
            Some(a) => answer_outcome(a, Source::Doh),
            None => Outcome::Unresolved {
                polluted: false,
                rules: Vec::new(),
                detail: detail.clone(),
            },
        },
        PlainVerdict::NxDomain { rules } => match doh {
            Some(a) if a.has_data() && !rules.is_empty() => {
                let mut rules = rules.clone();
                add_rule(&mut rules, Rule::CrossCheck);
                resolved(a.ips.clone(), Source::Doh, true, rules, a.ttl)
            }
            _ => Outcome::NxDomain {
                rules: rules.clone(),
            },
        },
        PlainVerdict::Suspicious {
            usable,
            rules,
            strong,
            ttl,
            ..
        } => {
            let agrees = doh.map(|a| a.ips.iter().any(|ip| usable.contains(ip)));
            match (doh, agrees) {
                (Some(a), Some(false)) => {
                    let mut rules = rules.clone();
                    add_rule(&mut rules, Rule::CrossCheck);
                    if a.has_data() {
                        resolved(a.ips.clone(), Source::Doh, true, rules, a.ttl)
                    } else {
                        Outcome::NxDomain { rules }
                    }
                }
                (Some(_), _) => {
                    resolved(usable.clone(), Source::Plain, *strong, rules.clone(), *ttl)
                }
                (None, _) if usable.is_empty() => Outcome::Unresolved {
                    polluted: *strong,
                    rules: rules.clone(),
                    detail: "no usable address in the plain answer".to_owned(),
                },
                (None, _) => resolved(usable.clone(), Source::Plain, *strong, rules.clone(), *ttl),
            }
        }
    }
}

fn resolved(
    addrs: Vec<IpAddr>,
    source: Source,
    polluted: bool,
    rules: Vec<Rule>,
    ttl: Duration,
) -> Outcome {
    Outcome::Resolved(Resolution {
        addrs,
        source,
        polluted,
        rules,
        ttl,
    })
}

/// The outcome of a single trusted answer without detection (DoH, or plain in `plain` mode):
/// addresses, NXDOMAIN / no data, or a failure.
pub fn answer_outcome(answer: &Answer, source: Source) -> Outcome {
    if answer.has_data() {
        let mut addrs = Vec::new();
        for &ip in &answer.ips {
            push_unique(&mut addrs, ip);
        }
        resolved(addrs, source, false, Vec::new(), answer.ttl)
    } else if answer.is_negative() {
        Outcome::NxDomain { rules: Vec::new() }
    } else {
        Outcome::Unresolved {
            polluted: false,
            rules: Vec::new(),
            detail: format!("{source} answer: {}", answer.rcode),
        }
    }
}

/// Names under special-use domains that never have a known public suffix.
const SPECIAL_USE: [&str; 5] = ["localhost", "test", "invalid", "example", "local"];

/// True when `name` is a DNS name under a known public suffix (so a non-public address for it
/// is suspicious): not an IP literal, not under a special-use domain (`localhost`, `.test`,
/// `.invalid`, `.example`, `.local`), and with a registrable domain under a suffix listed in
/// the public suffix list.
pub fn public_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() || name.starts_with('.') || name.contains("..") {
        return false;
    }
    let unbracketed = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(&name);
    if unbracketed.parse::<IpAddr>().is_ok() {
        return false;
    }
    let tld = name.rsplit('.').next().unwrap_or(&name);
    if SPECIAL_USE.contains(&tld) {
        return false;
    }
    psl::suffix(name.as_bytes()).is_some_and(|s| s.is_known())
        && psl::domain(name.as_bytes()).is_some()
}

/// TLDs used for probe names (all of them hijacked alike by NXDOMAIN-rewriting resolvers).
const PROBE_TLDS: [&str; 3] = ["com", "net", "org"];

/// splitmix64: spreads a seed over 64 bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random, never-registered name under a real public suffix for the NXDOMAIN-hijack probe,
/// e.g. `x3f9c0a1b2c3d4e5f60718293a4b5c6d7.com` (a 33-character label). The caller supplies a
/// fresh seed (time, process id, ...); the same seed gives the same name.
pub fn probe_name(seed: u64) -> String {
    let a = mix(seed);
    let b = mix(a ^ seed.rotate_left(17));
    let tld = PROBE_TLDS
        .get(usize::try_from(b % 3).unwrap_or(0))
        .copied()
        .unwrap_or("com");
    format!("x{a:016x}{b:016x}.{tld}")
}

/// The addresses a probe answer reveals as NXDOMAIN-hijack addresses: every address of a
/// NOERROR answer for a name that cannot exist; nothing for NXDOMAIN or a failure.
pub fn hijack_addresses(answer: &Answer) -> Vec<IpAddr> {
    let mut out = Vec::new();
    if answer.rcode == Rcode::NoError {
        for &ip in &answer.ips {
            push_unique(&mut out, ip);
        }
    }
    out
}

#[cfg(test)]
mod tests;
