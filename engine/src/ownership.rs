//! Claiming a crawl's outputs before it writes a byte. [`survey`] reads what is at the data_dir, the JSONL and the
//! WARC folder, without creating or changing anything, and decides for each (crawl-core's
//! [`ownership`](crawl_core::ownership)); `--check` reports its refusals. [`claim`] refuses on the same grounds,
//! moves the old outputs aside for `--fresh`, then takes the data_dir's lock and the markers' locks and writes this
//! crawl's markers; the [`Owned`] outputs stay locked until it is dropped.

use crate::error::EngineError;
use crawl_core::config::Config;
use crawl_core::ownership::{
    Decision, DirFound, Found, Frontier, Holder, Identity, Marker, Ours, Output, OwnershipError,
    Refusal, StartOver, aside_path, decide, decide_data_dir,
};
use crawl_output::owner::{OwnerLock, Taken};
use crawl_store_embedded::{DirLock, identity};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Names tried for one output moved aside within the same second.
const ASIDE_ATTEMPTS: u32 = 100;

/// What the crawl of a config finds at its paths, and what it would do with each.
#[derive(Debug)]
pub struct Survey {
    frontier: Frontier,
    data_dir: Judged<DirFound>,
    jsonl: Judged<Found>,
    warc: Option<Judged<Found>>,
    ours: Ours,
}

/// One output: where it is, what is there, what to do with it.
#[derive(Debug)]
struct Judged<F> {
    output: Output,
    path: PathBuf,
    found: F,
    decision: Decision,
}

/// An output moved aside by `--fresh`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub output: Output,
    pub from: PathBuf,
    pub to: PathBuf,
}

/// The outputs this process holds for its crawl, locked until dropped.
#[derive(Debug)]
pub struct Owned {
    /// The data_dir's lock (handed to the frontier store).
    pub lock: DirLock,
    /// The crawl the data_dir holds.
    pub identity: Identity,
    /// The markers' locks (the JSONL's, the WARC folder's).
    markers: Vec<OwnerLock>,
}

impl Owned {
    /// Splits off the data_dir's lock; the markers' locks stay held by what is left.
    pub fn into_lock(self) -> (DirLock, Identity, HeldMarkers) {
        (
            self.lock,
            self.identity,
            HeldMarkers {
                _locks: self.markers,
            },
        )
    }
}

/// The markers' locks of a running crawl.
#[derive(Debug)]
pub struct HeldMarkers {
    _locks: Vec<OwnerLock>,
}

/// A path as messages and markers show it: absolute (relative to the working directory), not resolved further.
pub fn shown(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Reads what is at the config's data_dir, JSONL and WARC folder, writing nothing, and decides for each (`fresh`:
/// as `--fresh` would).
pub fn survey(config: &Config, fresh: bool) -> Result<Survey, EngineError> {
    let frontier = Frontier::of(&config.frontier);
    let dir = &config.frontier.data_dir;
    let found = identity::inspect(dir)?;
    let decision = decide_data_dir(&found, &frontier, fresh);
    let ours = Ours::of(&found, &decision);
    let data_dir = Judged {
        output: Output::DataDir,
        path: dir.clone(),
        found,
        decision,
    };
    let judge = |output: Output, path: &Path| -> Result<Judged<Found>, EngineError> {
        let found = crawl_output::owner::inspect(output, path)?;
        Ok(Judged {
            output,
            path: path.to_path_buf(),
            decision: decide(&ours, &found, fresh),
            found,
        })
    };
    let jsonl = judge(Output::Jsonl, &config.output.jsonl)?;
    let warc = match &config.output.warc_dir {
        Some(d) => Some(judge(Output::WarcDir, d)?),
        None => None,
    };
    Ok(Survey {
        frontier,
        data_dir,
        jsonl,
        warc,
        ours,
    })
}

impl Survey {
    /// The outputs that exist with something in them: what starting over deletes or moves aside.
    fn start_over(&self) -> StartOver {
        let mut paths = Vec::new();
        if self.data_dir.found.has_files {
            paths.push(shown(&self.data_dir.path));
        }
        for j in std::iter::once(&self.jsonl).chain(&self.warc) {
            if j.found.content {
                paths.push(shown(&j.path));
            }
        }
        StartOver { paths }
    }

    /// Every output this crawl may not write, worded for the operator.
    pub fn refusals(&self) -> Vec<OwnershipError> {
        let dir = shown(&self.data_dir.path);
        let mut out = Vec::new();
        let mut refuse = |output: Output, path: &Path, decision: &Decision| {
            if let Decision::Refuse(r) = decision {
                out.push(OwnershipError::new(
                    output,
                    &shown(path),
                    r.clone(),
                    &dir,
                    &self.frontier,
                    self.start_over(),
                ));
            }
        };
        refuse(
            self.data_dir.output,
            &self.data_dir.path,
            &self.data_dir.decision,
        );
        for j in std::iter::once(&self.jsonl).chain(&self.warc) {
            if !self.held_with_the_data_dir(&j.decision) {
                refuse(j.output, &j.path, &j.decision);
            }
        }
        out
    }

    /// An output held by the process that holds the data_dir (the same crawl run twice): the data_dir's refusal
    /// says it all.
    fn held_with_the_data_dir(&self, decision: &Decision) -> bool {
        let data_dir_busy = matches!(self.data_dir.decision, Decision::Refuse(Refusal::Busy(_)));
        match decision {
            Decision::Refuse(Refusal::Busy(h)) => {
                data_dir_busy && h.crawl.is_some() && h.crawl == self.ours.crawl
            }
            _ => false,
        }
    }

    /// The outputs `--fresh` moves aside.
    pub fn to_move(&self) -> Vec<(Output, PathBuf)> {
        let mut out = Vec::new();
        if self.data_dir.decision == Decision::MoveAside {
            out.push((Output::DataDir, self.data_dir.path.clone()));
        }
        for j in std::iter::once(&self.jsonl).chain(&self.warc) {
            if j.decision == Decision::MoveAside {
                out.push((j.output, j.path.clone()));
            }
        }
        out
    }

    /// Whether the data_dir holds a frontier from an earlier run that stays (outputs without a marker beside it
    /// are taken as its own).
    fn established(&self) -> bool {
        self.ours.established
    }
}

/// Claims the config's outputs for its crawl: refuses, writing nothing, whatever [`survey`] refuses; with `fresh`
/// moves the old outputs aside first (each told to `moved`); then takes the data_dir's lock and its identity
/// (made now for a new data_dir), takes the markers' locks and writes this crawl's markers.
pub fn claim(
    config: &Config,
    fresh: bool,
    mut moved: impl FnMut(&Moved),
) -> Result<Owned, EngineError> {
    let survey = survey(config, fresh)?;
    let refusals = survey.refusals();
    if !refusals.is_empty() {
        return Err(EngineError::Refused(refusals));
    }
    let now = SystemTime::now();
    for (output, path) in survey.to_move() {
        let m = move_aside(output, &path, now)?;
        moved(&m);
    }
    let refused = |output: Output, path: &Path, r: Refusal| {
        EngineError::Refused(vec![OwnershipError::new(
            output,
            &shown(path),
            r,
            &shown(&config.frontier.data_dir),
            &survey.frontier,
            survey.start_over(),
        )])
    };
    // Another process may have come between the survey and here: every step is judged again under its lock.
    let dir = &config.frontier.data_dir;
    let lock = match DirLock::acquire(dir) {
        Ok(l) => l,
        Err(crawl_core::frontier::LockError::InUse { holder, .. }) => {
            let holder = Holder {
                pid: holder.and_then(|p| p.parse().ok()),
                ..Holder::default()
            };
            return Err(refused(Output::DataDir, dir, Refusal::Busy(holder)));
        }
        Err(e) => return Err(e.into()),
    };
    let identity = match identity::claim(&lock, &survey.frontier)? {
        Ok(i) => i,
        Err(r) => return Err(refused(Output::DataDir, dir, r)),
    };
    let ours = Ours {
        crawl: Some(identity.crawl.clone()),
        established: survey.established(),
    };
    let marker = Marker {
        crawl: identity.crawl.clone(),
        data_dir: shown(dir),
        pid: std::process::id(),
    };
    let mut markers = Vec::new();
    let outputs = std::iter::once((Output::Jsonl, &config.output.jsonl))
        .chain(config.output.warc_dir.iter().map(|d| (Output::WarcDir, d)));
    for (output, path) in outputs {
        let mut held = match OwnerLock::take(output, path)? {
            Taken::Held(h) => h,
            Taken::Busy(m) => {
                let holder = m.holder().unwrap_or_default();
                return Err(refused(output, path, Refusal::Busy(holder)));
            }
        };
        match decide(&ours, &held.found()?, false) {
            Decision::Refuse(r) => return Err(refused(output, path, r)),
            Decision::Claim | Decision::Resume | Decision::Adopt | Decision::MoveAside => {
                held.write(&marker)?;
            }
        }
        markers.push(held);
    }
    Ok(Owned {
        lock,
        identity,
        markers,
    })
}

/// Renames an output (the JSONL with its marker) to a free name beside it with a timestamp suffix.
fn move_aside(output: Output, path: &Path, now: SystemTime) -> Result<Moved, EngineError> {
    let cannot = |detail: String| {
        EngineError::Fatal(format!(
            "--fresh: cannot move {} {} aside: {detail} (nothing was started; the same command tries again once \
             the cause is fixed)",
            output.key(),
            shown(path)
        ))
    };
    let to = (0..ASIDE_ATTEMPTS)
        .filter_map(|attempt| aside_path(path, now, attempt))
        .find(|p| !p.exists() && (output != Output::Jsonl || !Output::Jsonl.marker(p).exists()))
        .ok_or_else(|| cannot("no free name beside it".to_owned()))?;
    std::fs::rename(path, &to).map_err(|e| cannot(e.to_string()))?;
    if output == Output::Jsonl {
        let marker = Output::Jsonl.marker(path);
        if marker.exists() {
            std::fs::rename(&marker, Output::Jsonl.marker(&to))
                .map_err(|e| cannot(e.to_string()))?;
        }
    }
    Ok(Moved {
        output,
        from: path.to_path_buf(),
        to,
    })
}
