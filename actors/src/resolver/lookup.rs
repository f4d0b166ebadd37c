//! One uncached lookup, as the configured mode prescribes: plain DNS judged by the detection rules, DoH for
//! cross-checks and fallbacks, or DoH only. Both address families are asked for at once (A and AAAA queries, each
//! judged on its own) and merged by [`super::family::merge`].

use super::doh::DohClient;
use super::logic::{self, Answer, DetectCtx, Outcome, PlainVerdict, Rcode, Source};
use super::plain;
use super::wire::{QType, Response};
use crawl_core::config::ResolverMode;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// What a lookup needs, fixed for the life of the resolver.
#[derive(Debug, Clone)]
pub struct Settings {
    pub mode: ResolverMode,
    pub nameservers: Vec<SocketAddr>,
    pub hosts: HashMap<String, Vec<IpAddr>>,
    pub hold_on: Duration,
    pub timeout: Duration,
    pub attempts: u32,
    pub min_ttl: Duration,
    pub max_ttl: Duration,
    pub negative_ttl: Duration,
    pub hijack_probe: bool,
}

/// Queries a lookup sent, for the counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sent {
    pub plain: u64,
    pub doh: u64,
}

/// Converts a wire response into the detection logic's view of it.
pub fn answer_of(r: &Response) -> Answer {
    Answer {
        rcode: Rcode::from_u8(r.rcode),
        ips: r.ips.clone(),
        ttl: Duration::from_secs(u64::from(r.min_ttl)),
        truncated: r.truncated,
    }
}

async fn plain_answers(
    s: &Settings,
    name: &str,
    qtype: QType,
    hold_on: Duration,
    sent: &mut Sent,
) -> Vec<Answer> {
    sent.plain += 1;
    match plain::query_with_attempts(&s.nameservers, name, qtype, s.timeout, hold_on, s.attempts)
        .await
    {
        Ok(responses) => responses.iter().map(answer_of).collect(),
        Err(e) => {
            tracing::debug!(name, qtype = qtype.as_str(), error = %e, "plain dns query failed");
            Vec::new()
        }
    }
}

async fn doh_answer(
    doh: Option<&DohClient>,
    name: &str,
    qtype: QType,
    sent: &mut Sent,
) -> Option<Answer> {
    let doh = doh?;
    sent.doh += 1;
    match doh.query(name, qtype).await {
        Ok(r) => Some(answer_of(&r)),
        Err(e) => {
            tracing::debug!(name, qtype = qtype.as_str(), error = %e, "doh query failed");
            None
        }
    }
}

/// An answer taken as it is (no detection): DoH answers, and plain ones in `plain` mode.
fn direct(answer: Option<Answer>, source: Source) -> Outcome {
    match answer {
        Some(a) => logic::answer_outcome(&a, source),
        None => Outcome::Unresolved {
            polluted: false,
            rules: Vec::new(),
            detail: format!("no {} answer", source.as_str()),
        },
    }
}

/// Plain DNS judged by the rules, cross-checked over DoH when suspicious (if DoH is there).
async fn detect(
    s: &Settings,
    ctx: &DetectCtx,
    doh: Option<&DohClient>,
    name: &str,
    qtype: QType,
    sent: &mut Sent,
) -> Outcome {
    let answers = plain_answers(s, name, qtype, s.hold_on, sent).await;
    let verdict = logic::judge_plain(name, &answers, ctx);
    match &verdict {
        PlainVerdict::Clean { .. } => logic::cross_check(&verdict, None),
        _ => {
            let d = doh_answer(doh, name, qtype, sent).await;
            logic::cross_check(&verdict, d.as_ref())
        }
    }
}

/// The lookup of one address family, as the mode prescribes.
async fn lookup_family(
    s: &Settings,
    ctx: &DetectCtx,
    doh: Option<&DohClient>,
    name: &str,
    qtype: QType,
) -> (Outcome, Sent) {
    let mut sent = Sent::default();
    let outcome = match s.mode {
        ResolverMode::Plain => {
            let answers = plain_answers(s, name, qtype, Duration::ZERO, &mut sent).await;
            direct(answers.into_iter().next(), Source::Plain)
        }
        ResolverMode::Detect => detect(s, ctx, doh, name, qtype, &mut sent).await,
        ResolverMode::Doh => direct(doh_answer(doh, name, qtype, &mut sent).await, Source::Doh),
        ResolverMode::DohFirst => match doh_answer(doh, name, qtype, &mut sent).await {
            Some(a) if matches!(a.rcode, Rcode::NoError | Rcode::NxDomain) => {
                direct(Some(a), Source::Doh)
            }
            _ => {
                tracing::debug!(name, qtype = qtype.as_str(), "doh failed; trying plain dns");
                let answers = plain_answers(s, name, qtype, s.hold_on, &mut sent).await;
                let verdict = logic::judge_plain(name, &answers, ctx);
                logic::cross_check(&verdict, None)
            }
        },
    };
    (outcome, sent)
}

/// Resolves `name` (lowercase, no trailing dot) without the cache: A and AAAA at once, merged.
pub async fn lookup(
    s: &Settings,
    ctx: &DetectCtx,
    doh: Option<&DohClient>,
    name: &str,
) -> (Outcome, Sent) {
    let ((v4, sent4), (v6, sent6)) = futures_util::future::join(
        lookup_family(s, ctx, doh, name, QType::A),
        lookup_family(s, ctx, doh, name, QType::Aaaa),
    )
    .await;
    let sent = Sent {
        plain: sent4.plain + sent6.plain,
        doh: sent4.doh + sent6.doh,
    };
    (super::family::merge(v4, v6), sent)
}

/// Learns the NXDOMAIN-hijack addresses: resolves a random never-registered name over plain DNS (A and AAAA).
pub async fn probe_hijack(s: &Settings, seed: u64) -> Vec<IpAddr> {
    if !s.hijack_probe || matches!(s.mode, ResolverMode::Doh | ResolverMode::Plain) {
        return Vec::new();
    }
    let name = logic::probe_name(seed);
    let (mut sent4, mut sent6) = (Sent::default(), Sent::default());
    let (v4, v6) = futures_util::future::join(
        plain_answers(s, &name, QType::A, Duration::ZERO, &mut sent4),
        plain_answers(s, &name, QType::Aaaa, Duration::ZERO, &mut sent6),
    )
    .await;
    let mut found: Vec<IpAddr> = Vec::new();
    for ip in v4.iter().chain(&v6).flat_map(logic::hijack_addresses) {
        if !found.contains(&ip) {
            found.push(ip);
        }
    }
    if !found.is_empty() {
        tracing::warn!(probe = %name, addresses = ?found, "nxdomain hijack detected: these answers will be treated as nxdomain");
    }
    found
}
