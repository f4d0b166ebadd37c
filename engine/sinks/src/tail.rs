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
    buf: Vec<u8>,
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
            buf: Vec::new(),
        })
    }

    /// Where reading stands: the lines and bytes handed out so far.
    pub fn position(&self) -> SinkCheckpoint {
        self.at
    }

    /// Up to `max` records after the position, reading no byte at or past `until` (the JSONL's flushed length).
    /// Empty when there is nothing new.
    pub fn read(&mut self, until: u64, max: usize) -> Result<Vec<ShipRecord>, SinkError> {
        let mut out = Vec::new();
        while out.len() < max && self.at.bytes < until {
            let want = usize::try_from((until - self.at.bytes).min(CHUNK as u64)).unwrap_or(CHUNK);
            self.buf.resize(want, 0);
            let n = self
                .file
                .read_at(&mut self.buf, self.at.bytes)
                .map_err(|e| SinkError::io(&self.sink, &self.path, e))?;
            if n == 0 {
                break;
            }
            let chunk = Bytes::copy_from_slice(&self.buf[..n]);
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', &chunk) {
                let seq = self.at.lines + 1;
                let record = ShipRecord::parse(&self.sink, seq, chunk.slice(start..end))?;
                self.at.lines = seq;
                self.at.bytes += (end + 1 - start) as u64;
                start = end + 1;
                out.push(record);
                if out.len() == max {
                    break;
                }
            }
            if start == 0 {
                // No whole line in the chunk: a line longer than the chunk, or a torn write not yet flushed.
                if n < want || want < CHUNK {
                    break;
                }
                return Err(SinkError::BadRecord {
                    sink: self.sink.clone(),
                    seq: self.at.lines + 1,
                    detail: format!("a line longer than {CHUNK} bytes"),
                });
            }
        }
        Ok(out)
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
        assert_eq!(first[1].record_id, "r2");
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
            recs.iter()
                .map(|r| r.record_id.as_str())
                .collect::<Vec<_>>(),
            ["r4", "r5"]
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
