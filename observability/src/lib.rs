//! crawl-observability: logging setup for crawl-engine (OTLP tracing and Prometheus metrics come later).
//!
//! # Layout
//! - [`init`]: installs the global `tracing` subscriber (text on a terminal, JSON otherwise, or as configured)
//!   and returns a [`Guard`] to keep for the life of the process.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::MakeWriterExt;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text on a terminal, JSON otherwise.
    Auto,
    Text,
    Json,
}

/// Logging settings.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// An `EnvFilter` directive ("info", "crawl_actors=debug,info"); `RUST_LOG` overrides it when set.
    pub log_level: String,
    pub format: Format,
}

/// Errors of telemetry setup.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid log filter {filter:?}: {detail}")]
    Filter { filter: String, detail: String },
    #[error("a global tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// Keeps telemetry alive; dropping it flushes what needs flushing.
#[derive(Debug)]
pub struct Guard {
    pub json: bool,
}

/// Installs the global subscriber. Logs go to stderr so stdout stays free for the summary.
pub fn init(cfg: &TelemetryConfig) -> Result<Guard, TelemetryError> {
    let directive = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(cfg.log_level.clone());
    let filter = EnvFilter::try_new(&directive).map_err(|e| TelemetryError::Filter {
        filter: directive.clone(),
        detail: e.to_string(),
    })?;
    let json = match cfg.format {
        Format::Json => true,
        Format::Text => false,
        Format::Auto => !std::io::stderr().is_terminal(),
    };
    let writer = std::io::stderr.with_max_level(tracing::Level::TRACE);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_target(true);
    let res = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init()
    } else {
        builder.compact().try_init()
    };
    res.map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(Guard { json })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_filter_is_an_error_not_a_panic() {
        // SAFETY-free: RUST_LOG is not read when unset; the directive below is invalid on purpose.
        let cfg = TelemetryConfig {
            log_level: "info,[bad".into(),
            format: Format::Text,
        };
        if std::env::var("RUST_LOG").is_err() {
            assert!(matches!(init(&cfg), Err(TelemetryError::Filter { .. })));
        }
    }
}
