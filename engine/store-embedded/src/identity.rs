//! The data_dir's identity: the crawl it holds (`crawl-id`, made once when a crawl first claims the data_dir),
//! and what a data_dir holds as seen before anything is written there ([`inspect`]).

use crate::lock::{DirLock, random_u64};
use crawl_core::frontier::LockError;
use crawl_core::ownership::{
    CrawlId, Decision, DirFound, DirState, Frontier, Holder, Identity, Output, Refusal,
    decide_data_dir,
};
use std::io::{Read, Write};
use std::path::Path;

/// The lock file of a data_dir (see [`DirLock`]).
const LOCK: &str = "LOCK";

/// A new crawl id: 128 random bits, hex.
pub fn new_crawl_id() -> CrawlId {
    CrawlId::from_bits(random_u64(), random_u64())
}

/// What `dir` holds and whether a live process holds its lock, read without creating or changing anything.
pub fn inspect(dir: &Path) -> Result<DirFound, LockError> {
    let (state, has_files) = state(dir)?;
    let busy = match std::fs::File::open(dir.join(LOCK)) {
        Ok(mut f) => match f.try_lock() {
            Ok(()) => None,
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = f.read_to_string(&mut text);
                Some(Holder {
                    crawl: match &state {
                        DirState::Identified(i) => Some(i.crawl.clone()),
                        _ => None,
                    },
                    data_dir: None,
                    pid: text.trim().parse().ok(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(dir, e)),
        },
        Err(e) if absent(&e) => None,
        Err(e) => return Err(io(dir, e)),
    };
    Ok(DirFound {
        state,
        busy,
        has_files,
    })
}

/// What `dir` holds (its identity, or the files of a frontier from before crawl ids), and whether it holds any
/// file besides its lock.
fn state(dir: &Path) -> Result<(DirState, bool), LockError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if absent(&e) => return Ok((DirState::New, false)),
        Err(e) => return Err(io(dir, e)),
    };
    let mut has_files = false;
    for e in entries {
        if e.map_err(|e| io(dir, e))?.file_name() != LOCK {
            has_files = true;
            break;
        }
    }
    let path = Output::DataDir.marker(dir);
    let state = match std::fs::read(&path) {
        Ok(bytes) => match Identity::read(&bytes) {
            Some(i) => DirState::Identified(i),
            None => DirState::Unreadable,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.join("frontier.redb").exists() {
                DirState::Legacy(crawl_core::config::FrontierBackend::Embedded)
            } else if dir.join("process-id").exists() {
                DirState::Legacy(crawl_core::config::FrontierBackend::Redis)
            } else {
                DirState::New
            }
        }
        Err(e) => return Err(io(&path, e)),
    };
    Ok((state, has_files))
}

/// The crawl the data_dir holds, for a crawl of `frontier`, under the data_dir's lock: its identity, or a new
/// one written now (atomically) when the data_dir is new or from before crawl ids; the refusal when what is in
/// it belongs to another frontier or cannot be read.
pub fn claim(lock: &DirLock, frontier: &Frontier) -> Result<Result<Identity, Refusal>, LockError> {
    let dir = lock.dir();
    let (state, has_files) = state(dir)?;
    let found = DirFound {
        state,
        busy: None,
        has_files,
    };
    match (decide_data_dir(&found, frontier, false), found.state) {
        (Decision::Resume, DirState::Identified(i)) => Ok(Ok(i)),
        (Decision::Refuse(r), _) => Ok(Err(r)),
        _ => {
            let identity = Identity {
                crawl: new_crawl_id(),
                frontier: frontier.clone(),
            };
            write_atomically(&Output::DataDir.marker(dir), &identity.to_bytes())?;
            Ok(Ok(identity))
        }
    }
}

/// Writes `bytes` to a temporary file beside `path`, fsyncs it, renames it into place and fsyncs the folder.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), LockError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| io(&tmp, e))?;
    f.sync_all().map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, e))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io(dir, e))?;
    }
    Ok(())
}

/// Nothing is there: the path does not exist, or a file stands where the folder should be (a run cannot make it;
/// `--check` and the run say so, as a problem of the path).
fn absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

fn io(path: &Path, source: std::io::Error) -> LockError {
    LockError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests;
