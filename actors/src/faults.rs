//! Fault injection, a test hook: `CRAWL_ENGINE_FAULTS=STAGE[/MODE]:MARKER[,...]` makes a stage panic (the default
//! mode) or freeze its thread for good when the subject it works on contains MARKER. The subject is the URL for the
//! fetcher, the parser, the scheduler, the sink (any line of a batch) and the store, the host name for the resolver
//! and the target host for the proxy-chain actor. Off unless set.

use std::fmt;
use std::sync::Arc;

/// Where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    Fetcher,
    Parser,
    Scheduler,
    Sink,
    Store,
    Resolver,
    Proxy,
}

impl Stage {
    /// Every stage, in the order of the spec's documentation.
    pub const ALL: [Stage; 7] = [
        Stage::Fetcher,
        Stage::Parser,
        Stage::Scheduler,
        Stage::Sink,
        Stage::Store,
        Stage::Resolver,
        Stage::Proxy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Fetcher => "fetcher",
            Stage::Parser => "parser",
            Stage::Scheduler => "scheduler",
            Stage::Sink => "sink",
            Stage::Store => "store",
            Stage::Resolver => "resolver",
            Stage::Proxy => "proxy",
        }
    }

    fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an injected fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Panic in the handler.
    Panic,
    /// Block the calling thread forever.
    Freeze,
}

/// A spec the hook does not understand (reported at start as a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultsError {
    #[error("fault {part:?}: expected STAGE:MARKER or STAGE/MODE:MARKER")]
    Syntax { part: String },
    #[error(
        "fault {part:?}: unknown stage {stage:?} (fetcher, parser, scheduler, sink, store, resolver, proxy)"
    )]
    Stage { part: String, stage: String },
    #[error("fault {part:?}: unknown mode {mode:?} (panic, freeze)")]
    Mode { part: String, mode: String },
    #[error("fault {part:?}: empty marker")]
    Marker { part: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    stage: Stage,
    mode: Mode,
    marker: String,
}

/// The faults to inject. Cheap to clone; empty (the default) injects nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    rules: Arc<[Rule]>,
}

impl Faults {
    /// Parses `STAGE[/MODE]:MARKER` items separated by commas, as given in `CRAWL_ENGINE_FAULTS`. Blank items are
    /// skipped; an unknown stage or mode is an error.
    pub fn parse(spec: &str) -> Result<Faults, FaultsError> {
        let mut rules = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((head, marker)) = part.split_once(':') else {
                return Err(FaultsError::Syntax {
                    part: part.to_owned(),
                });
            };
            let (stage_name, mode_name) = match head.split_once('/') {
                Some((s, m)) => (s.trim(), Some(m.trim())),
                None => (head.trim(), None),
            };
            let stage = Stage::from_name(stage_name).ok_or_else(|| FaultsError::Stage {
                part: part.to_owned(),
                stage: stage_name.to_owned(),
            })?;
            let mode = match mode_name {
                None | Some("panic") => Mode::Panic,
                Some("freeze") => Mode::Freeze,
                Some(other) => {
                    return Err(FaultsError::Mode {
                        part: part.to_owned(),
                        mode: other.to_owned(),
                    });
                }
            };
            if marker.is_empty() {
                return Err(FaultsError::Marker {
                    part: part.to_owned(),
                });
            }
            rules.push(Rule {
                stage,
                mode,
                marker: marker.to_owned(),
            });
        }
        Ok(Faults {
            rules: rules.into(),
        })
    }

    /// True when nothing is injected.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// True when some fault is set for `stage` (lets a caller skip building subjects).
    pub fn has(&self, stage: Stage) -> bool {
        self.rules.iter().any(|r| r.stage == stage)
    }

    /// The mode of the first fault of `stage` whose marker `subject` contains.
    pub fn matches(&self, stage: Stage, subject: &str) -> Option<Mode> {
        self.rules
            .iter()
            .find(|r| r.stage == stage && subject.contains(r.marker.as_str()))
            .map(|r| r.mode)
    }

    /// Panics or freezes the calling thread (on purpose) when `subject` carries a marker of `stage`; returns
    /// otherwise.
    pub fn hit(&self, stage: Stage, subject: &str) {
        match self.matches(stage, subject) {
            None => {}
            Some(Mode::Panic) => panic!("injected fault for {subject}"),
            Some(Mode::Freeze) => {
                tracing::warn!(
                    stage = stage.as_str(),
                    subject,
                    "injected freeze; this thread blocks for good"
                );
                loop {
                    std::thread::park();
                }
            }
        }
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let mode = match r.mode {
                Mode::Panic => "panic",
                Mode::Freeze => "freeze",
            };
            write!(f, "{}/{mode}:{}", r.stage, r.marker)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::panic_text;

    #[test]
    fn parses_stages_modes_and_markers() {
        let f =
            Faults::parse("parser:/poison/, fetcher/freeze:boom ,,sink/panic:x,store:s").unwrap();
        assert_eq!(
            f.matches(Stage::Parser, "http://a/poison/1"),
            Some(Mode::Panic)
        );
        assert_eq!(
            f.matches(Stage::Fetcher, "http://a/boom"),
            Some(Mode::Freeze)
        );
        assert_eq!(f.matches(Stage::Sink, "x"), Some(Mode::Panic));
        assert_eq!(f.matches(Stage::Store, "s"), Some(Mode::Panic));
        assert_eq!(f.matches(Stage::Fetcher, "http://a/poison/1"), None);
        assert_eq!(f.matches(Stage::Resolver, "boom"), None);
        assert!(f.has(Stage::Sink) && !f.has(Stage::Proxy));
        assert_eq!(
            f.to_string(),
            "parser/panic:/poison/,fetcher/freeze:boom,sink/panic:x,store/panic:s"
        );
        for stage in Stage::ALL {
            let g = Faults::parse(&format!("{stage}/freeze:m")).unwrap();
            assert_eq!(g.matches(stage, "am"), Some(Mode::Freeze), "{stage}");
        }
    }

    #[test]
    fn empty_spec_is_off() {
        assert!(Faults::parse("").unwrap().is_empty());
        assert!(Faults::parse(" , ").unwrap().is_empty());
        assert_eq!(Faults::parse("").unwrap(), Faults::default());
        assert!(!Faults::parse("proxy:a").unwrap().is_empty());
    }

    #[test]
    fn bad_specs_are_errors() {
        assert!(matches!(
            Faults::parse("fetcher"),
            Err(FaultsError::Syntax { .. })
        ));
        assert!(matches!(
            Faults::parse("fetcher:a,cook:b"),
            Err(FaultsError::Stage { stage, .. }) if stage == "cook"
        ));
        assert!(matches!(
            Faults::parse("parser/sleep:b"),
            Err(FaultsError::Mode { mode, .. }) if mode == "sleep"
        ));
        assert!(matches!(
            Faults::parse("parser:"),
            Err(FaultsError::Marker { .. })
        ));
        let e = Faults::parse("nope:x").unwrap_err().to_string();
        assert!(e.contains("unknown stage \"nope\""), "{e}");
    }

    #[test]
    fn hit_panics_only_on_the_marker_of_its_stage() {
        let f = Faults::parse("parser:/poison/").unwrap();
        let caught = std::panic::catch_unwind(|| f.hit(Stage::Parser, "http://a/poison/1"));
        assert_eq!(
            panic_text(caught.unwrap_err().as_ref()),
            "injected fault for http://a/poison/1"
        );
        assert!(std::panic::catch_unwind(|| f.hit(Stage::Parser, "http://a/ok")).is_ok());
        assert!(std::panic::catch_unwind(|| f.hit(Stage::Fetcher, "http://a/poison/1")).is_ok());
    }

    #[test]
    fn freeze_blocks_the_thread() {
        let f = Faults::parse("sink/freeze:z").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            f.hit(Stage::Sink, "z");
            let _ = tx.send(());
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "the frozen thread never returns"
        );
    }
}
