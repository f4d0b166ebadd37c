//! Reads committed records from the JSONL after a sink's position: whole lines only, never past the bytes the JSONL
//! writer has flushed (everything before that is committed), in bounded batches.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::SinkError;
use crate::checkpoint::SinkCheckpoint;
use crate::record::ShipRecord;

/// Bytes read from the JSONL per system call.
const CHUNK: usize = 1 << 20;

/// A reader of the JSONL from a position on.
#[derive(Debug)]
pub struct JsonlTail {
    sink: String,
    path: PathBuf,
    file: File,
    /// What has been read (and handed out) so far.
    at: SinkCheckpoint,
    /// Bytes read from the file and not handed out yet, starting at byte `chunk_start` of the file: records are
    /// slices of it (no copy), and a byte is read from the file once.
    chunk: Bytes,
    chunk_start: u64,
}

impl JsonlTail {
    /// Opens the JSONL at `path` to read after `from`. A checkpoint past the file's end is an error (the file was
    /// truncated or replaced).
    pub fn open(sink: &str, path: &Path, from: SinkCheckpoint) -> Result<JsonlTail, SinkError> {
        let io = |e| SinkError::io(sink, path, e);
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len < from.bytes {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the sink's checkpoint is at byte {} but the file has {len}: was it truncated or replaced?",
                    from.bytes
                ),
            )));
        }
        Ok(JsonlTail {
            sink: sink.to_owned(),
            path: path.to_path_buf(),
            file,
            at: from,
            chunk: Bytes::new(),
            chunk_start: from.bytes,
        })
    }

    /// Where reading stands: the lines and bytes handed out so far.
    pub fn position(&self) -> SinkCheckpoint {
        self.at
    }

    /// Moves the position to `at` (a record boundary another reader reached), dropping what was read ahead.
    pub fn seek(&mut self, at: SinkCheckpoint) {
        self.at = at;
        self.chunk = Bytes::new();
        self.chunk_start = at.bytes;
    }

    /// Up to `max` records after the position, reading no byte at or past `until` (the JSONL's flushed length).
    /// Empty when there is nothing new.
    pub fn read(&mut self, until: u64, max: usize) -> Result<Vec<ShipRecord>, SinkError> {
        let mut out = Vec::new();
        while out.len() < max && self.at.bytes < until {
            let (from, to) = self.window(until);
            let mut start = from;
            for end in memchr::memchr_iter(b'\n', &self.chunk[from..to]).map(|e| from + e) {
                let seq = self.at.lines + 1;
                let record = match ShipRecord::parse(&self.sink, seq, self.chunk.slice(start..end))
                {
                    Ok(r) => r,
                    // The records before a bad line are handed out first: the error comes on the next read.
                    Err(_) if !out.is_empty() => return Ok(out),
                    Err(e) => return Err(e),
                };
                self.at.lines = seq;
                self.at.bytes += (end + 1 - start) as u64;
                start = end + 1;
                out.push(record);
                if out.len() == max {
                    break;
                }
            }
            if start == from && !self.refill(until)? {
                // A line not whole before `until`: the writer has not flushed its end yet.
                break;
            }
        }
        Ok(out)
    }

    /// The part of the chunk from the position to `until`, as offsets into it (empty when the chunk does not
    /// reach the position).
    fn window(&self, until: u64) -> (usize, usize) {
        let end = self.chunk_start + self.chunk.len() as u64;
        if self.at.bytes < self.chunk_start || self.at.bytes >= end {
            return (0, 0);
        }
        let from = usize::try_from(self.at.bytes - self.chunk_start).unwrap_or(0);
        let to = usize::try_from(until.min(end) - self.chunk_start).unwrap_or(from);
        (from, to.max(from))
    }

    /// Reads the file from the position on (at most `until`) into a new chunk: false when that brings no byte the
    /// chunk did not have (nothing more is flushed).
    fn refill(&mut self, until: u64) -> Result<bool, SinkError> {
        let had = (self.chunk_start + self.chunk.len() as u64).max(self.at.bytes);
        if had >= until {
            return Ok(false);
        }
        // At least twice the part of a line already held, so a line longer than a chunk is read whole.
        let partial = had - self.at.bytes;
        let want = (until - self.at.bytes).min((CHUNK as u64).max(partial * 2));
        let mut buf = vec![0u8; usize::try_from(want).unwrap_or(CHUNK)];
        let mut filled = 0;
        while filled < buf.len() {
            let n = self
                .file
                .read_at(&mut buf[filled..], self.at.bytes + filled as u64)
                .map_err(|e| SinkError::io(&self.sink, &self.path, e))?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        buf.truncate(filled);
        let grew = self.at.bytes + filled as u64 > had;
        self.chunk = Bytes::from(buf);
        self.chunk_start = self.at.bytes;
        Ok(grew)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: u64) -> String {
        format!(
            "{{\"url\":\"http://a.test/{i}\",\"outcome\":\"fetched\",\"status\":200,\"record_id\":\"r{i}\"}}\n"
        )
    }

    #[test]
    fn reads_whole_lines_up_to_the_flushed_length_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let text: String = (1..=5).map(line).collect();
        // A torn sixth line the writer has not flushed as a whole.
        std::fs::write(&p, format!("{text}{{\"url\":")).unwrap();
        let mut t = JsonlTail::open("k", &p, SinkCheckpoint::default()).unwrap();
        let until = text.len() as u64;
        let first = t.read(until, 2).unwrap();
        assert_eq!(first.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(first[1].record_id(), "r2");
        let rest = t.read(until, 10).unwrap();
        assert_eq!(rest.iter().map(|r| r.seq).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(
            t.position(),
            SinkCheckpoint {
                lines: 5,
                bytes: until
            }
        );
        assert!(t.read(until, 10).unwrap().is_empty());
        // Reopened at a checkpoint: it goes on from there.
        let at = SinkCheckpoint {
            lines: 3,
            bytes: (1..=3).map(|i| line(i).len() as u64).sum(),
        };
        let mut again = JsonlTail::open("k", &p, at).unwrap();
        let recs = again.read(until, 10).unwrap();
        assert_eq!(
            recs.iter().map(|r| r.record_id()).collect::<Vec<_>>(),
            ["r4", "r5"]
        );
    }

    #[test]
    fn lines_longer_than_a_chunk_and_lines_flushed_later_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let long = format!(
            "{{\"url\":\"http://a.test/long\",\"outcome\":\"fetched\",\"title\":\"{}\",\"record_id\":\"big\"}}\n",
            "x".repeat(3 * CHUNK)
        );
        let text = format!("{}{long}{}", line(1), line(2));
        std::fs::write(&p, &text).unwrap();
        let mut t = JsonlTail::open("k", &p, SinkCheckpoint::default()).unwrap();
        // Only the first line and part of the long one are flushed.
        let part = (line(1).len() + CHUNK) as u64;
        let first = t.read(part, 10).unwrap();
        assert_eq!(
            first.iter().map(|r| r.record_id()).collect::<Vec<_>>(),
            ["r1"]
        );
        assert!(
            t.read(part, 10).unwrap().is_empty(),
            "the long line is not whole yet"
        );
        let rest = t.read(text.len() as u64, 10).unwrap();
        assert_eq!(
            rest.iter().map(|r| r.record_id()).collect::<Vec<_>>(),
            ["big", "r2"]
        );
        assert_eq!(rest[0].line.len() + 1, long.len());
        assert_eq!(
            t.position(),
            SinkCheckpoint {
                lines: 3,
                bytes: text.len() as u64
            }
        );
    }

    #[test]
    fn a_checkpoint_past_the_end_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(&p, line(1)).unwrap();
        let e = JsonlTail::open(
            "k",
            &p,
            SinkCheckpoint {
                lines: 9,
                bytes: 9999,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("truncated or replaced"), "{e}");
    }
}
