//! The markers of the JSONL (`crawl.jsonl.owner` beside it) and of the WARC folder (`OWNER` in it): which crawl
//! claimed the output ([`Marker`]), locked while that crawl's process runs. [`inspect`] reads what is at an
//! output's path without creating or changing anything; [`OwnerLock::take`] takes the marker's lock for a crawl
//! that may write there, and [`OwnerLock::write`] puts its marker in.

use crate::jsonl::OutputError;
use crawl_core::ownership::{Found, Marker, MarkerRead, Output};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock of an output's marker, held for as long as the crawl writes the output; dropping it releases it.
#[derive(Debug)]
pub struct OwnerLock {
    file: File,
    output: Output,
    /// The output (the JSONL or the WARC folder).
    path: PathBuf,
    /// The marker file.
    marker: PathBuf,
}

/// What taking a marker's lock came to.
#[derive(Debug)]
pub enum Taken {
    Held(OwnerLock),
    /// A live process holds it; its marker says who.
    Busy(MarkerRead),
}

/// What is at `path` (the JSONL or the WARC folder, as `output` says), read without creating or changing
/// anything: its marker, whether a live process holds the marker's lock, and whether it holds records or WARC
/// files.
pub fn inspect(output: Output, path: &Path) -> Result<Found, OutputError> {
    let marker = output.marker(path);
    let (marker_read, busy) = match File::open(&marker) {
        Ok(mut f) => {
            let busy = match f.try_lock() {
                Ok(()) => false,
                Err(std::fs::TryLockError::WouldBlock) => true,
                Err(std::fs::TryLockError::Error(e)) => return Err(io(&marker, e)),
            };
            (read_marker(&mut f, &marker)?, busy)
        }
        Err(e) if absent(&e) => (MarkerRead::Empty, false),
        Err(e) => return Err(io(&marker, e)),
    };
    Ok(Found {
        marker: marker_read,
        busy,
        content: has_content(output, path)?,
    })
}

/// Whether the output holds anything of a crawl: a JSONL with bytes in it, a WARC folder with WARC files.
fn has_content(output: Output, path: &Path) -> Result<bool, OutputError> {
    match output {
        Output::Jsonl => match std::fs::metadata(path) {
            Ok(m) => Ok(m.len() > 0),
            Err(e) if absent(&e) => Ok(false),
            Err(e) => Err(io(path, e)),
        },
        Output::WarcDir => match std::fs::read_dir(path) {
            Ok(rd) => {
                for e in rd {
                    let name = e.map_err(|e| io(path, e))?.file_name();
                    let name = name.to_string_lossy();
                    if name.ends_with(".warc.gz") || name.ends_with(".warc") {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Err(e) if absent(&e) => Ok(false),
            Err(e) => Err(io(path, e)),
        },
        // The data_dir's identity is the store's (crawl-store-embedded); nothing here is written to it.
        Output::DataDir => Ok(false),
    }
}

fn read_marker(f: &mut File, path: &Path) -> Result<MarkerRead, OutputError> {
    let mut bytes = Vec::new();
    f.seek(SeekFrom::Start(0)).map_err(|e| io(path, e))?;
    f.read_to_end(&mut bytes).map_err(|e| io(path, e))?;
    Ok(Marker::read(&bytes))
}

impl OwnerLock {
    /// Takes the lock of the marker of the output at `path`, creating the marker (and the folders it needs) when
    /// there is none; [`Taken::Busy`] when a live process holds it.
    pub fn take(output: Output, path: &Path) -> Result<Taken, OutputError> {
        let marker = output.marker(path);
        if let Some(parent) = marker.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&marker)
            .map_err(|e| io(&marker, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Taken::Held(OwnerLock {
                file,
                output,
                path: path.to_path_buf(),
                marker,
            })),
            Err(std::fs::TryLockError::WouldBlock) => {
                Ok(Taken::Busy(read_marker(&mut file, &marker)?))
            }
            Err(std::fs::TryLockError::Error(e)) => Err(io(&marker, e)),
        }
    }

    /// What is at the output now, judged with the lock held.
    pub fn found(&mut self) -> Result<Found, OutputError> {
        Ok(Found {
            marker: read_marker(&mut self.file, &self.marker)?,
            busy: false,
            content: has_content(self.output, &self.path)?,
        })
    }

    /// Writes this crawl's marker (replacing the one there) and syncs it.
    pub fn write(&mut self, m: &Marker) -> Result<(), OutputError> {
        let bytes = m.to_bytes();
        let marker = &self.marker;
        self.file.set_len(0).map_err(|e| io(marker, e))?;
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| io(marker, e))?;
        self.file.write_all(&bytes).map_err(|e| io(marker, e))?;
        self.file.sync_data().map_err(|e| io(marker, e))
    }

    /// The marker file.
    pub fn marker(&self) -> &Path {
        &self.marker
    }
}

/// Nothing is there: the path does not exist, or a file stands where a folder above it should be (a run cannot
/// make it; `--check` says so, as a problem of the path).
fn absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

fn io(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests;
