//! SIGHUP: re-read the config file, validate it whole, and apply what may change while running — or nothing.
//!
//! An invalid file keeps the running config (every error is logged); a change to a restart-only key rejects the
//! whole reload, naming the keys (nginx semantics: never half-applied); otherwise every live change is applied at
//! once. Only the parts whose keys changed are reapplied ([`crawl_core::config::reload::Part`]): a reload that
//! changes the log level alone leaves the DNS cache, the hijack probe's findings and the proxy breakers as they
//! are. The outcome is logged at warn or above, so that it shows whatever the new log level, naming the keys that
//! changed (or `no change`). Signals that arrive while a reload runs coalesce into one more reload.
//!
//! SIGHUP and the control API's `POST /v1/reload` ask the same task ([`channel`]), which runs one reload at a time.
//!
//! Alerts that act (`POST /v1/alerts`) change settings through the same task: a setting an alert sets is laid over
//! the running config ([`SettingOverrides`]) and applied as a reload applies a live key; the alert's resolution
//! puts the old value back unless the key was changed since. A reload keeps the overrides of the keys it leaves
//! alone and ends those of the keys it sets (the file's new value stands). Overrides are held in memory only: a
//! restart starts from the config file.

mod channel;

pub use channel::{
    ReloadCause, ReloadHandle, ReloadRequest, SettingChange, forward_hangups, serve_reloads,
};

use crate::load::load_config;
use crawl_actors::tree::Reconfigurer;
use crawl_core::config::Config;
use crawl_core::config::reload::{Part, changed_keys, plan};
use crawl_core::control::{OverrideOutcome, OverrideResult, SettingOverrides};
use crawl_observability::LogControl;
use crawl_observability::metrics::metrics;
use crawl_observability::trace::ExportQueue;
use std::path::PathBuf;

/// Where the config came from, to read it again.
#[derive(Debug, Clone, Default)]
pub struct ReloadSource {
    /// The `--config` file; None = built-in defaults (nothing to re-read).
    pub path: Option<PathBuf>,
    /// `--seed` URLs, added to the file's seeds as at start.
    pub seeds: Vec<String>,
    /// Changes the log filter.
    pub log: Option<LogControl>,
    /// The trace exporter's queue (None: no export).
    pub export_queue: Option<ExportQueue>,
}

/// How a reload ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// Applied; the live keys that changed.
    Applied(Vec<&'static str>),
    /// The file could not be used; the running config stays.
    Invalid(String),
    /// A restart-only key changed; nothing was applied.
    Rejected(String),
    /// No config file to re-read.
    NoFile,
}

impl ReloadOutcome {
    /// The `outcome` label of `crawl_config_reloads_total`.
    pub fn label(&self) -> &'static str {
        match self {
            ReloadOutcome::Applied(_) => "success",
            ReloadOutcome::Invalid(_) | ReloadOutcome::NoFile => "invalid",
            ReloadOutcome::Rejected(_) => "rejected",
        }
    }
}

/// The running config and the means to change it.
pub struct Reloader {
    source: ReloadSource,
    /// The config as the file gave it (at start, or the last reload applied).
    file: Config,
    /// The running config: `file` with the settings alerts hold laid over it.
    current: Config,
    /// The settings alerts hold.
    overrides: SettingOverrides,
    tree: Reconfigurer,
    generation: u64,
}

impl Reloader {
    /// `current` is the config the crawl started with.
    pub fn new(source: ReloadSource, current: Config, tree: Reconfigurer) -> Reloader {
        Reloader {
            source,
            file: current.clone(),
            current,
            overrides: SettingOverrides::default(),
            tree,
            generation: 0,
        }
    }

    /// The running config (the last one applied, with the settings alerts hold).
    pub fn current(&self) -> &Config {
        &self.current
    }

    /// Sets or unsets a setting for an alert, applied to the running crawl as a reload applies the key. Nothing
    /// changes when it cannot be applied (the outcome says why).
    pub fn setting(&mut self, change: SettingChange) -> OverrideOutcome {
        let mut new = self.current.clone();
        let mut overrides = self.overrides.clone();
        let outcome = match &change {
            SettingChange::Set { setting, by } => overrides.set(*setting, by, &mut new),
            SettingChange::Unset { setting, by } => overrides.unset(*setting, by, &mut new),
        };
        if new != self.current {
            // Only live keys change here: their parts, as a reload would.
            let parts = plan(&self.current, &new).parts();
            let prepared = match self.tree.prepare(&new, &parts) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(key = outcome.key, error = %e, "setting not changed");
                    return OverrideOutcome {
                        result: OverrideResult::Skipped,
                        key: outcome.key,
                        detail: format!("{} cannot be changed: {e}", outcome.key),
                    };
                }
            };
            self.tree.apply(prepared);
            self.current = new;
        }
        self.overrides = overrides;
        outcome
    }

    /// Reads the file again and applies it (or not); logs and counts the outcome.
    pub fn reload(&mut self) -> ReloadOutcome {
        let outcome = self.try_reload();
        metrics().config_reload(outcome.label());
        match &outcome {
            ReloadOutcome::Applied(keys) => {
                self.generation += 1;
                // At warn: a reload that lowers the log level to warn must still say that it worked.
                tracing::warn!(
                    generation = self.generation,
                    changed = %changed_keys(keys),
                    user_agent = %self.current.crawl.user_agent,
                    min_delay_ms = self.current.politeness.min_delay.as_millis() as u64,
                    "config reloaded"
                );
            }
            ReloadOutcome::Invalid(errors) => {
                for line in errors.lines() {
                    tracing::error!(error = %line, "config reload failed; keeping the running config");
                }
            }
            ReloadOutcome::Rejected(msg) => {
                tracing::error!(error = %msg, "config reload rejected; keeping the running config");
            }
            ReloadOutcome::NoFile => {
                tracing::warn!(
                    "reload ignored: the crawl runs on built-in defaults, no config file to re-read"
                );
            }
        }
        outcome
    }

    fn try_reload(&mut self) -> ReloadOutcome {
        let Some(path) = self.source.path.as_deref() else {
            return ReloadOutcome::NoFile;
        };
        let file = match load_config(Some(path), &self.source.seeds) {
            Ok(c) => c,
            Err(e) => return ReloadOutcome::Invalid(e.to_string()),
        };
        // The settings alerts hold stay over the keys the reload leaves alone.
        let mut overrides = self.overrides.clone();
        let mut new = file.clone();
        let ended = overrides.rebase(&self.file, &mut new);
        let mut plan = plan(&self.current, &new);
        if plan.rejected() {
            return ReloadOutcome::Rejected(plan.message());
        }
        let mut parts = plan.parts();
        if self.source.log.is_some()
            && let Err(e) = crawl_observability::parse_filter(&new.observability.log_level)
        {
            return ReloadOutcome::Invalid(format!("observability.log_level: {e}"));
        }
        // Everything that can fail happens before anything is applied (the bogus IP file is read again here even
        // when its path did not change: new contents reconfigure the resolver).
        let prepared = match self.tree.prepare(&new, &parts) {
            Ok(p) => p,
            Err(e) => return ReloadOutcome::Invalid(e.to_string()),
        };
        if prepared.bogus_file_changed() {
            plan.note_live("resolver.bogus_ips_file");
            parts.insert(Part::Resolver);
        }
        self.tree.apply(prepared);
        if parts.contains(&Part::LogLevel)
            && let Some(log) = &self.source.log
            && let Err(e) = log.set(&new.observability.log_level)
        {
            // Checked above; a failure here only means the subscriber is gone.
            tracing::warn!(error = %e, "log level not changed");
        }
        if parts.contains(&Part::SampleRatio) {
            let ratio = new.observability.sample_ratio;
            crawl_observability::trace::set_sample_ratio(ratio);
            if let Some(q) = self.source.export_queue
                && !q.fits(ratio)
            {
                tracing::warn!(
                    sample_ratio = ratio,
                    queue_spans = q.spans,
                    sized_for = q.sized_for.unwrap_or(ratio),
                    "the trace export queue was sized for the sample ratio at start: a fast crawl may now drop \
                     spans (counted in crawl_trace_spans_dropped_total); a restart sizes it anew, as does \
                     OTEL_BSP_MAX_QUEUE_SIZE"
                );
            }
        }
        self.current = new;
        self.file = file;
        self.overrides = overrides;
        for line in ended {
            tracing::warn!(detail = %line, "the reload set a key an alert had set: the reload's value stands");
        }
        ReloadOutcome::Applied(plan.live)
    }
}
