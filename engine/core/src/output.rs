//! The JSONL output file: opened with torn-line repair, counted, appended to in whole lines.
//!
//! A record's sequence number is its line number, so [`JsonlWriter::open`] tells the caller how many records the
//! file holds and the frontier re-emits the committed ones beyond that (see [`crate::frontier`]).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Errors of the JSONL output.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("output {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("output {path} does not match the frontier: {detail} (was it truncated or replaced?)")]
    Mismatch { path: String, detail: String },
}

/// Where the JSONL stood after a write: complete lines and the byte length they take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JsonlCheckpoint {
    pub lines: u64,
    pub bytes: u64,
}

/// Appends whole lines to the JSONL file.
#[derive(Debug)]
pub struct JsonlWriter {
    out: BufWriter<File>,
    path: PathBuf,
    lines: u64,
    bytes: u64,
    repaired_bytes: u64,
}

impl JsonlWriter {
    /// Opens (creating if needed) the file, cuts a torn last line (bytes after the last newline, left by a crash
    /// in the middle of a write) and counts the complete lines, reading the whole file.
    pub fn open(path: &Path) -> Result<JsonlWriter, OutputError> {
        Self::open_at(path, None)
    }

    /// Opens trusting the first `cp.bytes` bytes to hold `cp.lines` complete lines; reads only the tail beyond
    /// (counts its complete lines, cuts a torn last line). `None` reads the whole file. A file shorter than the
    /// checkpoint, or one that does not end a line there, is refused: it was truncated or replaced.
    pub fn open_at(path: &Path, cp: Option<JsonlCheckpoint>) -> Result<JsonlWriter, OutputError> {
        let io = |source| OutputError::Io {
            path: path.display().to_string(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        let cp = cp.unwrap_or_default();
        let len = file.metadata().map_err(io)?.len();
        let mismatch = |detail: String| OutputError::Mismatch {
            path: path.display().to_string(),
            detail,
        };
        if len < cp.bytes {
            return Err(mismatch(format!(
                "it has {len} bytes, the frontier recorded {} lines in {} bytes",
                cp.lines, cp.bytes
            )));
        }
        if cp.bytes > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(cp.bytes - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                return Err(mismatch(format!(
                    "no line ends at byte {} where the frontier recorded line {}",
                    cp.bytes, cp.lines
                )));
            }
        }
        let mut lines = cp.lines;
        let mut good_len = cp.bytes;
        let mut offset = cp.bytes;
        let mut buf = vec![0u8; 1 << 20];
        file.seek(SeekFrom::Start(cp.bytes)).map_err(io)?;
        loop {
            let n = file.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            for pos in memchr::memchr_iter(b'\n', &buf[..n]) {
                lines += 1;
                good_len = offset + pos as u64 + 1;
            }
            offset += n as u64;
        }
        let repaired_bytes = offset - good_len;
        if repaired_bytes > 0 {
            file.set_len(good_len).map_err(io)?;
        }
        Ok(JsonlWriter {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_path_buf(),
            lines,
            bytes: good_len,
            repaired_bytes,
        })
    }

    /// Complete lines in the file (after repair) plus the lines appended since.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Lines and bytes in the file once the buffer is flushed.
    pub fn checkpoint(&self) -> JsonlCheckpoint {
        JsonlCheckpoint {
            lines: self.lines,
            bytes: self.bytes,
        }
    }

    /// Bytes of a torn last line cut at open.
    pub fn repaired_bytes(&self) -> u64 {
        self.repaired_bytes
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line (which must end with a newline). Call [`flush`](Self::flush) to hand it to the OS.
    pub fn append(&mut self, line: &[u8]) -> Result<(), OutputError> {
        self.out.write_all(line).map_err(|source| OutputError::Io {
            path: self.path.display().to_string(),
            source,
        })?;
        self.lines += 1;
        self.bytes += line.len() as u64;
        Ok(())
    }

    /// Writes buffered lines to the file (a `write(2)`, which survives `kill -9`).
    pub fn flush(&mut self) -> Result<(), OutputError> {
        self.out.flush().map_err(|source| OutputError::Io {
            path: self.path.display().to_string(),
            source,
        })
    }

    /// Flushes and fsyncs.
    pub fn sync(&mut self) -> Result<(), OutputError> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(|source| OutputError::Io {
                path: self.path.display().to_string(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_last_line_is_cut_and_lines_counted() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out/crawl.jsonl");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"{\"a\":1}\n{\"a\":2}\n{\"a\":").unwrap();
        let mut w = JsonlWriter::open(&p).unwrap();
        assert_eq!(w.lines(), 2);
        assert_eq!(w.repaired_bytes(), 5);
        w.append(b"{\"a\":3}\n").unwrap();
        w.flush().unwrap();
        assert_eq!(w.lines(), 3);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
        );
    }

    #[test]
    fn open_at_a_checkpoint_reads_only_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, b"{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\"").unwrap();
        let cp = JsonlCheckpoint {
            lines: 2,
            bytes: 16,
        };
        let w = JsonlWriter::open_at(&p, Some(cp)).unwrap();
        assert_eq!(
            w.checkpoint(),
            JsonlCheckpoint {
                lines: 3,
                bytes: 24
            }
        );
        assert_eq!(w.repaired_bytes(), 4);
        drop(w);
        let full = JsonlWriter::open(&p).unwrap();
        assert_eq!(
            full.checkpoint(),
            JsonlCheckpoint {
                lines: 3,
                bytes: 24
            }
        );
        let err = JsonlWriter::open_at(
            &p,
            Some(JsonlCheckpoint {
                lines: 9,
                bytes: 99,
            }),
        )
        .unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
        let err =
            JsonlWriter::open_at(&p, Some(JsonlCheckpoint { lines: 1, bytes: 5 })).unwrap_err();
        assert!(err.to_string().contains("no line ends"), "{err}");
    }

    #[test]
    fn new_file_is_created_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        let w = JsonlWriter::open(&p).unwrap();
        assert_eq!(w.lines(), 0);
        assert!(p.exists());
    }
}
