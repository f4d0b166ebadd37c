//! The sinks' metrics (`crawl_sink_*`): what each `[[sinks]]` entry shipped, how far behind it is, its errors by
//! kind, when it last succeeded, and whether it holds fetching back.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use super::Labels;

/// `kind` of `crawl_sink_errors_total`: the kinds of a sink's error.
pub const SINK_ERROR_KINDS: [&str; 6] = [
    "unreachable",
    "setup",
    "oversize",
    "transient",
    "io",
    "bad_record",
];

type CounterFamily = Family<Labels, Counter>;
type GaugeFamily = Family<Labels, Gauge>;

/// Every `crawl_sink_*` family.
pub struct SinkMetrics {
    records: CounterFamily,
    bytes: CounterFamily,
    skipped: CounterFamily,
    errors: CounterFamily,
    lag_records: GaugeFamily,
    lag_bytes: GaugeFamily,
    last_success: Family<Labels, Gauge<f64, AtomicU64>>,
    holding: GaugeFamily,
}

fn sink(name: &str) -> Labels {
    vec![("sink", name.to_owned())]
}

fn sink_and(name: &str, k: &'static str, v: &str) -> Labels {
    vec![("sink", name.to_owned()), (k, v.to_owned())]
}

impl SinkMetrics {
    pub(super) fn register(r: &mut Registry) -> SinkMetrics {
        let m = SinkMetrics {
            records: CounterFamily::default(),
            bytes: CounterFamily::default(),
            skipped: CounterFamily::default(),
            errors: CounterFamily::default(),
            lag_records: GaugeFamily::default(),
            lag_bytes: GaugeFamily::default(),
            last_success: Family::default(),
            holding: GaugeFamily::default(),
        };
        r.register(
            "crawl_sink_records",
            "Records (or files, for an object store) a sink delivered and the target acknowledged",
            m.records.clone(),
        );
        r.register(
            "crawl_sink_bytes",
            "Bytes a sink delivered (JSONL lines, or file bytes for an object store)",
            m.bytes.clone(),
        );
        r.register(
            "crawl_sink_records_skipped",
            "Records a sink left out by a configured rule (reason: oversize)",
            m.skipped.clone(),
        );
        r.register(
            "crawl_sink_errors",
            "Failed sink operations by kind (unreachable, setup, oversize, transient, io, bad_record)",
            m.errors.clone(),
        );
        r.register(
            "crawl_sink_lag_records",
            "Committed records (or closed files) a sink has not delivered yet",
            m.lag_records.clone(),
        );
        r.register(
            "crawl_sink_lag_bytes",
            "Bytes of committed records (or closed files) a sink has not delivered yet",
            m.lag_bytes.clone(),
        );
        r.register(
            "crawl_sink_last_success_timestamp_seconds",
            "Unix time of a sink's last delivery (or of its start, when it had nothing to deliver)",
            m.last_success.clone(),
        );
        r.register(
            "crawl_sink_backpressure",
            "1 while a sink is so far behind (output.sink_max_lag) that fetching waits for it",
            m.holding.clone(),
        );
        m
    }

    /// Creates a sink's series at zero, so the first scrape has them.
    pub fn register_sink(&self, name: &str, now_s: f64) {
        let _ = self.records.get_or_create(&sink(name));
        let _ = self.bytes.get_or_create(&sink(name));
        let _ = self
            .skipped
            .get_or_create(&sink_and(name, "reason", "oversize"));
        for kind in SINK_ERROR_KINDS {
            let _ = self.errors.get_or_create(&sink_and(name, "kind", kind));
        }
        let _ = self.lag_records.get_or_create(&sink(name));
        let _ = self.lag_bytes.get_or_create(&sink(name));
        self.last_success.get_or_create(&sink(name)).set(now_s);
        let _ = self.holding.get_or_create(&sink(name));
    }

    /// A delivery: `records` and `bytes` acknowledged, `skipped` left out as oversize, at Unix time `now_s`.
    pub fn delivered(&self, name: &str, records: u64, bytes: u64, skipped: u64, now_s: f64) {
        self.records.get_or_create(&sink(name)).inc_by(records);
        self.bytes.get_or_create(&sink(name)).inc_by(bytes);
        if skipped > 0 {
            self.skipped
                .get_or_create(&sink_and(name, "reason", "oversize"))
                .inc_by(skipped);
        }
        self.last_success.get_or_create(&sink(name)).set(now_s);
    }

    /// A failed operation of kind `kind`.
    pub fn error(&self, name: &str, kind: &str) {
        self.errors
            .get_or_create(&sink_and(name, "kind", kind))
            .inc();
    }

    /// How far behind the sink is, and whether that holds fetching back.
    pub fn lag(&self, name: &str, records: u64, bytes: u64, holding: bool) {
        let g = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.lag_records.get_or_create(&sink(name)).set(g(records));
        self.lag_bytes.get_or_create(&sink(name)).set(g(bytes));
        self.holding
            .get_or_create(&sink(name))
            .set(i64::from(holding));
    }
}
