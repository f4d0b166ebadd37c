//! Sampling: a URL's root span is sampled by its trace id with the ratio in force when it starts (the SDK's
//! `TraceIdRatioBased` rule), and its children follow it (parent-based), so a trace is exported whole or not at
//! all. The ratio is a process-wide value a config reload changes; new roots see it at once.
//!
//! A root is decided before the SDK builds a span ([`decide_root`]): a trace that is not sampled then costs no SDK
//! span at all (most of them, at the ratios real crawls use), and a sampled one hands its trace id to the SDK
//! through the provider's id generator ([`DecidedIds`]), so the SDK's own decision, on the same id, agrees.

use opentelemetry::trace::{Link, SpanId, SpanKind, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{
    IdGenerator, RandomIdGenerator, Sampler, SamplingDecision, SamplingResult, ShouldSample,
};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The share of new traces that are recorded and exported (bits of an `f64`).
static RATIO_BITS: AtomicU64 = AtomicU64::new(0);

/// Sets the sampling ratio of new traces (clamped to 0..=1; NaN is 0).
pub fn set_sample_ratio(ratio: f64) {
    let r = if ratio.is_nan() {
        0.0
    } else {
        ratio.clamp(0.0, 1.0)
    };
    RATIO_BITS.store(r.to_bits(), Ordering::Relaxed);
}

/// The current sampling ratio.
pub fn sample_ratio() -> f64 {
    f64::from_bits(RATIO_BITS.load(Ordering::Relaxed))
}

/// The SDK's `TraceIdRatioBased` with the ratio in force at each decision ([`set_sample_ratio`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveRatio;

impl ShouldSample for LiveRatio {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        Sampler::TraceIdRatioBased(sample_ratio()).should_sample(
            parent_context,
            trace_id,
            name,
            span_kind,
            attributes,
            links,
        )
    }
}

/// The sampler of the tracer provider: children follow their root, roots go by [`LiveRatio`].
pub(crate) fn sampler() -> Sampler {
    Sampler::ParentBased(Box::new(LiveRatio))
}

thread_local! {
    /// The trace id a root was decided on, until the SDK asks for it.
    static DECIDED: Cell<Option<TraceId>> = const { Cell::new(None) };
}

/// A new root's trace id and whether `sampler` samples it (as the SDK would decide for a span `name` without a
/// parent). When it does, the SDK span built next on this thread gets that id ([`DecidedIds`]).
pub(crate) fn decide_root(sampler: &Sampler, name: &str) -> (TraceId, bool) {
    let id = RandomIdGenerator::default().new_trace_id();
    let sampled = sampler
        .should_sample(None, id, name, &SpanKind::Internal, &[], &[])
        .decision
        != SamplingDecision::Drop;
    if sampled {
        // On a thread being torn down there is nowhere to keep it: the SDK then makes an id of its own.
        let _ = DECIDED.try_with(|d| d.set(Some(id)));
    }
    (id, sampled)
}

/// Forgets a decided id the SDK did not take (a provider shut down builds no span).
pub(crate) fn forget_decided() {
    let _ = DECIDED.try_with(|d| d.take());
}

/// The provider's id generator: a root's trace id is the one [`decide_root`] decided on, where there is one;
/// every other id is the SDK's random one.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DecidedIds;

impl IdGenerator for DecidedIds {
    fn new_trace_id(&self) -> TraceId {
        DECIDED
            .try_with(Cell::take)
            .ok()
            .flatten()
            .unwrap_or_else(|| RandomIdGenerator::default().new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        RandomIdGenerator::default().new_span_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampled(trace_id: TraceId) -> bool {
        let r = LiveRatio.should_sample(None, trace_id, "t", &SpanKind::Internal, &[], &[]);
        r.decision == SamplingDecision::RecordAndSample
    }

    /// One test sets the process-wide ratio, in steps, so that no other test sees it move.
    #[test]
    fn the_ratio_in_force_decides_and_a_change_applies_at_once() {
        let ids: Vec<TraceId> = (1..=10_000u128)
            .map(|i| TraceId::from(i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)))
            .collect();
        let share = |ratio: f64| {
            set_sample_ratio(ratio);
            ids.iter().filter(|id| sampled(**id)).count()
        };
        assert_eq!(share(0.0), 0);
        assert_eq!(share(1.0), ids.len());
        let tenth = share(0.1);
        assert!((800..=1200).contains(&tenth), "{tenth} of 10000 at 0.1");
        assert_eq!(share(2.0), ids.len(), "clamped to 1");
        assert_eq!(share(f64::NAN), 0);
        set_sample_ratio(-1.0);
        assert_eq!(sample_ratio(), 0.0);
    }

    /// A sampled root's id is the next root id the generator gives, once; a root not sampled leaves none.
    #[test]
    fn a_sampled_decision_hands_its_id_to_the_next_root_only() {
        let (id, sampled) = decide_root(&Sampler::AlwaysOn, "t");
        assert!(sampled);
        assert_eq!(DecidedIds.new_trace_id(), id);
        assert_ne!(DecidedIds.new_trace_id(), id, "taken once");
        let (dropped, sampled) = decide_root(&Sampler::AlwaysOff, "t");
        assert!(!sampled);
        assert_ne!(DecidedIds.new_trace_id(), dropped);
        let (id, _) = decide_root(&Sampler::AlwaysOn, "t");
        forget_decided();
        assert_ne!(DecidedIds.new_trace_id(), id, "forgotten");
        assert_ne!(DecidedIds.new_span_id(), SpanId::INVALID);
    }

    /// The decision is the ratio rule's on the id it returns.
    #[test]
    fn the_decision_follows_the_ratio_rule_on_its_id() {
        let half = Sampler::TraceIdRatioBased(0.5);
        let mut seen = [0u32; 2];
        for _ in 0..2_000 {
            let (id, sampled) = decide_root(&half, "t");
            forget_decided();
            let rule = half.should_sample(None, id, "t", &SpanKind::Internal, &[], &[]);
            assert_eq!(sampled, rule.decision == SamplingDecision::RecordAndSample);
            seen[usize::from(sampled)] += 1;
        }
        assert!(seen[0] > 800 && seen[1] > 800, "{seen:?}");
    }
}
