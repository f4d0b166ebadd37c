//! A sink's durable checkpoint: how much of the JSONL it has shipped, in lines and bytes, in
//! `data_dir/sinks/<name>.checkpoint`. It is replaced whole (written beside, fsynced, renamed, the folder fsynced),
//! so a `kill -9` leaves the old checkpoint or the new one, never a torn one.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SinkError;

/// Lines and bytes of the JSONL shipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkCheckpoint {
    pub lines: u64,
    pub bytes: u64,
}

/// The checkpoint file of one sink.
#[derive(Debug)]
pub struct CheckpointFile {
    sink: String,
    path: PathBuf,
}

impl CheckpointFile {
    /// The checkpoint of `sink` in `dir` (created if missing), and what it holds (zero when there is none yet).
    pub fn open(dir: &Path, sink: &str) -> Result<(CheckpointFile, SinkCheckpoint), SinkError> {
        fs::create_dir_all(dir).map_err(|e| SinkError::io(sink, dir, e))?;
        let path = dir.join(format!("{sink}.checkpoint"));
        let at = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                SinkError::io(
                    sink,
                    &path,
                    std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => SinkCheckpoint::default(),
            Err(e) => return Err(SinkError::io(sink, &path, e)),
        };
        Ok((
            CheckpointFile {
                sink: sink.to_owned(),
                path,
            },
            at,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes `cp` the durable checkpoint.
    pub fn store(&self, cp: SinkCheckpoint) -> Result<(), SinkError> {
        write_durably(
            &self.sink,
            &self.path,
            &serde_json::to_vec(&cp).unwrap_or_default(),
        )
    }
}

/// Replaces `path` with `bytes`: written to a file beside it, fsynced, renamed over it, the folder fsynced.
pub fn write_durably(sink: &str, path: &Path, bytes: &[u8]) -> Result<(), SinkError> {
    let io = |e| SinkError::io(sink, path, e);
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_data().map_err(io)?;
    drop(f);
    fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent() {
        File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_survives_reopening_and_starts_at_zero() {
        let dir = tempfile::tempdir().unwrap();
        let sinks = dir.path().join("sinks");
        let (f, at) = CheckpointFile::open(&sinks, "pg").unwrap();
        assert_eq!(at, SinkCheckpoint::default());
        f.store(SinkCheckpoint {
            lines: 3,
            bytes: 90,
        })
        .unwrap();
        f.store(SinkCheckpoint {
            lines: 5,
            bytes: 150,
        })
        .unwrap();
        let (_, at) = CheckpointFile::open(&sinks, "pg").unwrap();
        assert_eq!(
            at,
            SinkCheckpoint {
                lines: 5,
                bytes: 150
            }
        );
        let (_, other) = CheckpointFile::open(&sinks, "kafka").unwrap();
        assert_eq!(other, SinkCheckpoint::default());
        assert!(!sinks.join("pg.tmp").exists());
    }

    #[test]
    fn a_damaged_checkpoint_is_an_error_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.checkpoint"), b"{\"lines\":").unwrap();
        let e = CheckpointFile::open(dir.path(), "k").unwrap_err();
        assert!(e.to_string().contains("k.checkpoint"), "{e}");
    }
}
