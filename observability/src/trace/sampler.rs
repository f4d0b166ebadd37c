//! Sampling: a URL's root span is sampled by its trace id with the ratio in force when it starts (the SDK's
//! `TraceIdRatioBased` rule), and its children follow it (parent-based), so a trace is exported whole or not at
//! all. The ratio is a process-wide value a config reload changes; new roots see it at once.

use opentelemetry::trace::{Link, SpanKind, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Sampler, SamplingResult, ShouldSample};
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

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::trace::SamplingDecision;

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
}
