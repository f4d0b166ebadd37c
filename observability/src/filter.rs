//! The log filter in force: the user's directives (`observability.log_level` or `RUST_LOG`) plus one directive per
//! target of the OTLP exporter's own machinery (its gRPC transport over HTTP/2 and the OpenTelemetry SDK), so that
//! a debug log level shows the engine's events and not every HTTP/2 frame of the span export. A target the user's
//! filter names itself (`h2=debug`) is left to the user's directive.
//!
//! EnvFilter matches a directive's target as a prefix of the event's, so `hyper` also holds `hyper_util`, and
//! `opentelemetry` holds `opentelemetry_sdk` and `opentelemetry_otlp`.

use std::str::FromStr;
use tracing_subscriber::filter::LevelFilter;

/// The exporter's transport and SDK targets, with the most verbose level they log at unless the user's filter
/// names them.
pub const TRANSPORT_DIRECTIVES: &[(&str, &str)] = &[
    ("h2", "off"),
    ("tonic", "warn"),
    ("hyper", "warn"),
    ("tower", "warn"),
    ("opentelemetry", "warn"),
];

/// The target a directive names (`target`, `target=level`, `target[span]=level`), or `None` for a bare level
/// (`debug`) or a span-only directive (`[span]=debug`).
fn target_of(directive: &str) -> Option<&str> {
    let d = directive.trim();
    let end = d.find(['[', '=']).unwrap_or(d.len());
    let target = d[..end].trim();
    if target.is_empty() {
        return None;
    }
    // A bare word that parses as a level is a level (EnvFilter reads it so too).
    if end == d.len() && LevelFilter::from_str(target).is_ok() {
        return None;
    }
    Some(target)
}

/// `user` with a directive added for every transport target it does not name, e.g. `debug` becomes
/// `debug,h2=off,tonic=warn,hyper=warn,tower=warn,opentelemetry=warn`.
pub fn with_transport_directives(user: &str) -> String {
    let named: Vec<&str> = user.split(',').filter_map(target_of).collect();
    let mut out: Vec<String> = user
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .collect();
    for (target, level) in TRANSPORT_DIRECTIVES {
        if !named.contains(target) {
            out.push(format!("{target}={level}"));
        }
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::{EnvFilter, Layer};

    /// Records the target of every event that gets through the filter.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> Layer<S> for Seen {
        fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
            if let Ok(mut v) = self.0.lock() {
                v.push(event.metadata().target().to_owned());
            }
        }
    }

    /// The targets of the events below that pass the filter the user's `directive` becomes.
    fn passing(directive: &str) -> Vec<String> {
        let filter = EnvFilter::try_new(with_transport_directives(directive)).expect("filter");
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(seen.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::debug!(target: "crawl_actors::fetcher", "engine debug");
            tracing::debug!(target: "h2::codec::framed_write", "send frame");
            tracing::error!(target: "h2::proto::connection", "connection error");
            tracing::debug!(target: "tonic::transport::channel", "channel debug");
            tracing::warn!(target: "tonic::transport::channel", "channel warn");
            tracing::debug!(target: "hyper_util::client::legacy::pool", "pooling idle connection");
            tracing::debug!(target: "tower::buffer::worker", "service ready");
            tracing::debug!(target: "opentelemetry_sdk", "batch span processor");
            tracing::info!(target: "opentelemetry_otlp", "exporter built");
        });
        seen.0.lock().expect("lock").clone()
    }

    #[test]
    fn transport_directives_are_added_to_a_level() {
        assert_eq!(
            with_transport_directives("debug"),
            "debug,h2=off,tonic=warn,hyper=warn,tower=warn,opentelemetry=warn"
        );
        assert_eq!(
            with_transport_directives(" info , crawl_actors=debug "),
            "info,crawl_actors=debug,h2=off,tonic=warn,hyper=warn,tower=warn,opentelemetry=warn"
        );
    }

    #[test]
    fn a_target_the_user_names_is_left_to_the_user() {
        assert_eq!(
            with_transport_directives("debug,h2=trace,hyper[conn]=debug"),
            "debug,h2=trace,hyper[conn]=debug,tonic=warn,tower=warn,opentelemetry=warn"
        );
        // A bare target enables it at every level: it is named.
        assert_eq!(
            with_transport_directives("warn,tonic"),
            "warn,tonic,h2=off,hyper=warn,tower=warn,opentelemetry=warn"
        );
        // A more specific target, a span or a level does not name the transport target (the more specific
        // directive wins for its own events anyway).
        assert_eq!(
            with_transport_directives("TRACE,h2::codec=debug,[span]=info,3"),
            "TRACE,h2::codec=debug,[span]=info,3,h2=off,tonic=warn,hyper=warn,tower=warn,opentelemetry=warn"
        );
    }

    #[test]
    fn target_of_directives() {
        assert_eq!(target_of("debug"), None);
        assert_eq!(target_of("OFF"), None);
        assert_eq!(target_of("5"), None);
        assert_eq!(target_of("[span{a=1}]=debug"), None);
        assert_eq!(target_of("h2"), Some("h2"));
        assert_eq!(target_of(" tonic = debug"), Some("tonic"));
        assert_eq!(target_of("hyper[conn]=trace"), Some("hyper"));
        assert_eq!(target_of("hyper_util=trace"), Some("hyper_util"));
    }

    #[test]
    fn at_debug_the_exporter_transport_stays_out_of_the_log() {
        // h2 not even at error; the rest from warn; the engine's own debug lines pass.
        assert_eq!(
            passing("debug"),
            ["crawl_actors::fetcher", "tonic::transport::channel"]
        );
        assert_eq!(passing("warn"), ["tonic::transport::channel"]);
    }

    #[test]
    fn a_named_transport_target_logs_as_the_user_asked() {
        assert_eq!(
            passing("info,h2=debug,opentelemetry_sdk=debug"),
            [
                "h2::codec::framed_write",
                "h2::proto::connection",
                "tonic::transport::channel",
                "opentelemetry_sdk",
            ]
        );
    }
}
