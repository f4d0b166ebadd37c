//! One uncached lookup, as the configured mode prescribes: plain DNS judged by the detection rules, DoH for
//! cross-checks and fallbacks, or DoH only. Both address families are asked for at once (A and AAAA queries, each
//! judged on its own) and merged by [`super::family::merge`]; once one family has addresses the other gets
//! [`FAMILY_WAIT`] more.

use super::doh::DohClient;
use super::logic::{self, Answer, DetectCtx, Outcome, PlainVerdict, Rcode, Source};
use super::plain;
use super::wire::{QType, Response};
use crawl_core::config::ResolverMode;
use futures_util::future::{Either, select};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Queries a lookup sent, for the counters: counted as they are sent, by both families of the lookup (so that the
/// queries of a family not waited for are counted too).
#[derive(Debug, Default)]
pub struct Sent {
    plain: AtomicU64,
    doh: AtomicU64,
}

impl Sent {
    pub fn plain(&self) -> u64 {
        self.plain.load(Ordering::Relaxed)
    }

    pub fn doh(&self) -> u64 {
        self.doh.load(Ordering::Relaxed)
    }

    fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
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
    sent: &Sent,
) -> Vec<Answer> {
    Sent::add(&sent.plain);
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
    sent: &Sent,
) -> Option<Answer> {
    let doh = doh?;
    Sent::add(&sent.doh);
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
    sent: &Sent,
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
    sent: &Sent,
) -> Outcome {
    match s.mode {
        ResolverMode::Plain => {
            let answers = plain_answers(s, name, qtype, Duration::ZERO, sent).await;
            direct(answers.into_iter().next(), Source::Plain)
        }
        ResolverMode::Detect => detect(s, ctx, doh, name, qtype, sent).await,
        ResolverMode::Doh => direct(doh_answer(doh, name, qtype, sent).await, Source::Doh),
        ResolverMode::DohFirst => match doh_answer(doh, name, qtype, sent).await {
            Some(a) if matches!(a.rcode, Rcode::NoError | Rcode::NxDomain) => {
                direct(Some(a), Source::Doh)
            }
            _ => {
                tracing::debug!(name, qtype = qtype.as_str(), "doh failed; trying plain dns");
                let answers = plain_answers(s, name, qtype, s.hold_on, sent).await;
                let verdict = logic::judge_plain(name, &answers, ctx);
                logic::cross_check(&verdict, None)
            }
        },
    }
}

/// How long a lookup waits for the other address family once one has resolved to addresses. RFC 8305 (Happy
/// Eyeballs v2) waits 50 ms, for a person waiting on a connection; a crawler gives the late family ten times that,
/// enough for its DoH cross-check, so that its pollution verdict is rarely lost, while a name whose AAAA queries go
/// unanswered (resolvers and middleboxes that drop them) is still reached over its A records in half a second, not
/// after the query timeout of every attempt. The lookup goes on with the family it has (cached for that family's
/// TTL); the late family's queries are counted, its answer not awaited.
pub const FAMILY_WAIT: Duration = Duration::from_millis(500);

/// Resolves `name` (lowercase, no trailing dot) without the cache: A and AAAA at once, merged.
pub async fn lookup(
    s: &Settings,
    ctx: &DetectCtx,
    doh: Option<&DohClient>,
    name: &str,
) -> (Outcome, Sent) {
    let sent = Sent::default();
    let (v4, v6, late) = families(
        lookup_family(s, ctx, doh, name, QType::A, &sent),
        lookup_family(s, ctx, doh, name, QType::Aaaa, &sent),
        FAMILY_WAIT,
    )
    .await;
    if let Some(late) = late {
        tracing::debug!(
            name,
            family = late.as_str(),
            "no answer within the family wait; going on without it"
        );
    }
    (super::family::merge(v4, v6), sent)
}

/// The outcome that stands for a family not waited for.
fn not_waited(qtype: QType, wait: Duration) -> Outcome {
    Outcome::Unresolved {
        polluted: false,
        rules: Vec::new(),
        detail: format!(
            "no {} answer within {} ms",
            qtype.as_str(),
            wait.as_millis()
        ),
    }
}

/// The outcomes of both families (A, then AAAA), each future run to its end, except that once one has resolved to
/// addresses the other gets `wait` more; a family still out then is [`not_waited`], and named third. A first family
/// without addresses (no data, NXDOMAIN, a failure) waits for the other whole: it may hold the only addresses.
async fn families(
    v4: impl Future<Output = Outcome>,
    v6: impl Future<Output = Outcome>,
    wait: Duration,
) -> (Outcome, Outcome, Option<QType>) {
    let has_addresses = |o: &Outcome| !o.addrs().is_empty();
    let (v4, v6) = both_within(v4, v6, wait, has_addresses).await;
    let late = match (&v4, &v6) {
        (None, _) => Some(QType::A),
        (_, None) => Some(QType::Aaaa),
        _ => None,
    };
    (
        v4.unwrap_or_else(|| not_waited(QType::A, wait)),
        v6.unwrap_or_else(|| not_waited(QType::Aaaa, wait)),
        late,
    )
}

/// Both futures' outputs, each run to its end, except that once one has ended with an output `enough` accepts, the
/// other gets `wait` more and is None if it has not ended by then (the first to end is always there).
async fn both_within<T>(
    a: impl Future<Output = T>,
    b: impl Future<Output = T>,
    wait: Duration,
    enough: impl Fn(&T) -> bool,
) -> (Option<T>, Option<T>) {
    let (a, b) = (std::pin::pin!(a), std::pin::pin!(b));
    match select(a, b).await {
        Either::Left((a, b)) => {
            let b = rest(enough(&a), b, wait).await;
            (Some(a), b)
        }
        Either::Right((b, a)) => {
            let a = rest(enough(&b), a, wait).await;
            (a, Some(b))
        }
    }
}

/// The output of `other`, waited for `wait` at most when `bounded`.
async fn rest<T>(bounded: bool, other: impl Future<Output = T>, wait: Duration) -> Option<T> {
    if bounded {
        tokio::time::timeout(wait, other).await.ok()
    } else {
        Some(other.await)
    }
}

/// Learns the NXDOMAIN-hijack addresses: resolves a random never-registered name over plain DNS (A and AAAA).
pub async fn probe_hijack(s: &Settings, seed: u64) -> Vec<IpAddr> {
    if !s.hijack_probe || matches!(s.mode, ResolverMode::Doh | ResolverMode::Plain) {
        return Vec::new();
    }
    let name = logic::probe_name(seed);
    let sent = Sent::default();
    // A family with any answer is enough to go on with (FAMILY_WAIT for the other): lookups wait for the probe, and
    // a nameserver that drops AAAA queries would otherwise hold them all for the query timeout at every start and
    // reload.
    let (v4, v6) = both_within(
        plain_answers(s, &name, QType::A, Duration::ZERO, &sent),
        plain_answers(s, &name, QType::Aaaa, Duration::ZERO, &sent),
        FAMILY_WAIT,
        |answers| !answers.is_empty(),
    )
    .await;
    let (v4, v6) = (v4.unwrap_or_default(), v6.unwrap_or_default());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::family::merge;
    use crate::resolver::logic::Resolution;
    use tokio::time::{Instant, sleep};

    fn resolved(ip: &str) -> Outcome {
        Outcome::Resolved(Resolution {
            addrs: vec![ip.parse().expect("ip")],
            source: Source::Plain,
            polluted: false,
            rules: Vec::new(),
            ttl: Duration::from_secs(300),
        })
    }

    fn nodata() -> Outcome {
        Outcome::NxDomain { rules: Vec::new() }
    }

    fn failed() -> Outcome {
        Outcome::Unresolved {
            polluted: false,
            rules: Vec::new(),
            detail: "timeout".into(),
        }
    }

    /// `o`, `ms` milliseconds from now.
    async fn after(ms: u64, o: Outcome) -> Outcome {
        sleep(Duration::from_millis(ms)).await;
        o
    }

    /// Either family first: the other, 30 s late, is not waited for past the wait, and the merge keeps the first's
    /// addresses alone.
    #[tokio::test(start_paused = true)]
    async fn a_family_that_answers_late_is_not_waited_for() {
        let (a, aaaa) = ("192.0.2.1", "2001:db8::1");
        for (v4_ms, v6_ms, late_family, kept) in
            [(10, 30_000, QType::Aaaa, a), (30_000, 20, QType::A, aaaa)]
        {
            let start = Instant::now();
            let (v4, v6, late) = families(
                after(v4_ms, resolved(a)),
                after(v6_ms, resolved(aaaa)),
                FAMILY_WAIT,
            )
            .await;
            let first = Duration::from_millis(v4_ms.min(v6_ms));
            assert_eq!(start.elapsed(), first + FAMILY_WAIT);
            assert_eq!(late, Some(late_family));
            let not = if late_family == QType::A { &v4 } else { &v6 };
            assert_eq!(not, &not_waited(late_family, FAMILY_WAIT));
            assert_eq!(merge(v4, v6), resolved(kept));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_family_within_the_wait_is_kept() {
        let start = Instant::now();
        let (v4, v6, late) = families(
            after(10, resolved("192.0.2.1")),
            after(40, resolved("2001:db8::1")),
            FAMILY_WAIT,
        )
        .await;
        assert_eq!(start.elapsed(), Duration::from_millis(40));
        assert_eq!(late, None);
        assert_eq!(merge(v4, v6).addrs().len(), 2, "both families");
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_family_without_addresses_waits_for_the_other_whole() {
        for first in [nodata(), failed()] {
            let start = Instant::now();
            let (v4, v6, late) = families(
                after(10, first.clone()),
                after(3_000, resolved("2001:db8::1")),
                FAMILY_WAIT,
            )
            .await;
            assert_eq!(start.elapsed(), Duration::from_millis(3_000), "{first:?}");
            assert_eq!((v4, late), (first, None));
            assert_eq!(v6, resolved("2001:db8::1"));
        }
    }
}
