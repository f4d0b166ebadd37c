//! The JSONL output file: opened with torn-line repair, counted, appended to in whole lines.
//!
//! A record's sequence number is its line number, so [`JsonlWriter::open`] tells the caller how many records the
//! file holds and the frontier re-emits the committed ones beyond that (see [`crawl_core::frontier`]). A caller that
//! stored a [`JsonlCheckpoint`] with its frontier reopens with [`JsonlWriter::open_at`], which reads only the bytes
//! written after that checkpoint instead of the whole file.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub use crawl_core::output::JsonlCheckpoint;

/// Errors of the JSONL output.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("output {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("output {path}: {detail}; was it truncated or replaced?")]
    CheckpointMismatch { path: String, detail: String },
}

/// Appends whole lines to the JSONL file.
#[derive(Debug)]
pub struct JsonlWriter {
    out: BufWriter<File>,
    path: PathBuf,
    /// Lines and bytes including those still buffered.
    lines: u64,
    bytes: u64,
    /// Lines and bytes as of the last flush.
    flushed: JsonlCheckpoint,
    repaired_bytes: u64,
}

impl JsonlWriter {
    /// Opens (creating if needed) the file, cuts a torn last line (bytes after the last newline, left by a crash
    /// in the middle of a write) and counts the complete lines. Reads the whole file: `open_at(path, None)`.
    pub fn open(path: &Path) -> Result<JsonlWriter, OutputError> {
        JsonlWriter::open_at(path, None)
    }

    /// Opens trusting the first `cp.bytes` bytes to hold `cp.lines` complete lines; reads only the tail beyond it
    /// (counts its complete lines, cuts a torn last line). `None` scans the whole file (a fresh frontier).
    /// A file shorter than the checkpoint, or whose byte at `cp.bytes - 1` is not `'\n'`, is an error that names
    /// the file (it was truncated or replaced).
    pub fn open_at(path: &Path, cp: Option<JsonlCheckpoint>) -> Result<JsonlWriter, OutputError> {
        let io = |source| OutputError::Io {
            path: path.display().to_string(),
            source,
        };
        let mismatch = |detail: String| OutputError::CheckpointMismatch {
            path: path.display().to_string(),
            detail,
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
        if (cp.lines == 0) != (cp.bytes == 0) {
            return Err(mismatch(format!(
                "checkpoint of {} lines in {} bytes is inconsistent",
                cp.lines, cp.bytes
            )));
        }
        let len = file.metadata().map_err(io)?.len();
        if len < cp.bytes {
            return Err(mismatch(format!(
                "the file has {len} bytes but {} lines in {} bytes were written",
                cp.lines, cp.bytes
            )));
        }
        if cp.bytes > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(cp.bytes - 1)).map_err(io)?;
            file.read_exact(&mut last).map_err(io)?;
            if last[0] != b'\n' {
                return Err(mismatch(format!(
                    "byte {} should end line {} but is not a newline",
                    cp.bytes - 1,
                    cp.lines
                )));
            }
        }
        let mut lines = cp.lines;
        let mut good_len = cp.bytes;
        let mut offset = cp.bytes;
        let mut buf = vec![0u8; 1 << 20];
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
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
        let flushed = JsonlCheckpoint {
            lines,
            bytes: good_len,
        };
        Ok(JsonlWriter {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_path_buf(),
            lines,
            bytes: good_len,
            flushed,
            repaired_bytes,
        })
    }

    /// Complete lines in the file (after repair) plus the lines appended since.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Lines and bytes in the file after the last flush.
    pub fn checkpoint(&self) -> JsonlCheckpoint {
        self.flushed
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
        debug_assert!(line.ends_with(b"\n"), "a JSONL line ends with a newline");
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
        })?;
        self.flushed = JsonlCheckpoint {
            lines: self.lines,
            bytes: self.bytes,
        };
        Ok(())
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
    fn new_file_is_created_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        let w = JsonlWriter::open(&p).unwrap();
        assert_eq!(w.lines(), 0);
        assert!(p.exists());
    }

    fn cp(lines: u64, bytes: u64) -> Option<JsonlCheckpoint> {
        Some(JsonlCheckpoint { lines, bytes })
    }

    #[test]
    fn torn_tail_beyond_a_checkpoint_is_cut_and_lines_counted_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        // The checkpoint covers "a\nb\n"; "c\nd\n" were flushed after it, "e" was torn.
        std::fs::write(&p, b"a\nb\nc\nd\ne").unwrap();
        let w = JsonlWriter::open_at(&p, cp(2, 4)).unwrap();
        assert_eq!(w.lines(), 4);
        assert_eq!(w.repaired_bytes(), 1);
        assert_eq!(w.checkpoint(), JsonlCheckpoint { lines: 4, bytes: 8 });
        assert_eq!(std::fs::read(&p).unwrap(), b"a\nb\nc\nd\n");
    }

    #[test]
    fn the_prefix_before_a_checkpoint_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        // Long lines in the trusted prefix: only the checkpoint's count is used for them.
        std::fs::write(&p, b"xxxxxxxxx\nyyy\nz\n").unwrap();
        let w = JsonlWriter::open_at(&p, cp(7, 14)).unwrap();
        assert_eq!(w.lines(), 8);
        assert_eq!(
            w.checkpoint(),
            JsonlCheckpoint {
                lines: 8,
                bytes: 16
            }
        );
    }

    #[test]
    fn a_file_shorter_than_the_checkpoint_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("short.jsonl");
        std::fs::write(&p, b"a\nb\n").unwrap();
        let err = JsonlWriter::open_at(&p, cp(3, 6)).unwrap_err();
        assert!(matches!(err, OutputError::CheckpointMismatch { .. }));
        assert!(err.to_string().contains("short.jsonl"), "{err}");
        // Nothing was cut.
        assert_eq!(std::fs::read(&p).unwrap(), b"a\nb\n");
    }

    #[test]
    fn a_checkpoint_not_ending_a_line_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("replaced.jsonl");
        std::fs::write(&p, b"aaaa\nb\n").unwrap();
        let err = JsonlWriter::open_at(&p, cp(1, 2)).unwrap_err();
        assert!(err.to_string().contains("replaced.jsonl"), "{err}");
        assert!(JsonlWriter::open_at(&p, cp(1, 0)).is_err());
        assert!(JsonlWriter::open_at(&p, cp(0, 5)).is_err());
    }

    #[test]
    fn checkpoint_after_appends_equals_a_full_scan() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut w = JsonlWriter::open(&p).unwrap();
        assert_eq!(w.checkpoint(), JsonlCheckpoint::default());
        w.append(b"{\"u\":\"a\"}\n").unwrap();
        w.append(b"{\"u\":\"bb\"}\n").unwrap();
        // Buffered lines are not in the checkpoint until flushed.
        assert_eq!(w.checkpoint(), JsonlCheckpoint::default());
        w.flush().unwrap();
        let first = w.checkpoint();
        drop(w);
        let mut w = JsonlWriter::open_at(&p, Some(first)).unwrap();
        assert_eq!(w.checkpoint(), first);
        w.append(b"{\"u\":\"ccc\"}\n").unwrap();
        w.sync().unwrap();
        let after = w.checkpoint();
        drop(w);
        let scanned = JsonlWriter::open(&p).unwrap();
        assert_eq!(scanned.checkpoint(), after);
        assert_eq!(after.lines, 3);
        assert_eq!(after.bytes, std::fs::metadata(&p).unwrap().len());
        assert_eq!(
            JsonlWriter::open_at(&p, Some(first)).unwrap().checkpoint(),
            after
        );
    }
}
