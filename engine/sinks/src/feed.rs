//! The committed records read and parsed once for every record sink of a crawl.
//!
//! Each record sink reads the JSONL from its own checkpoint, but the sinks of a crawl mostly stand at the same
//! place: a [`RecordFeed`] keeps the records parsed last (a window of up to `window` records, which share the
//! chunks they were read from), and a [`FeedReader`] whose position is inside the window, or at its end (then it
//! reads on for all), takes its records from there: one read and one parse of a line for all the sinks. A reader
//! outside the window (a sink that was down and is far behind, or ahead after a restart) reads the file on its
//! own until it meets the window again; so does one whose shared read failed, so an error names the sink that met
//! it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::SinkError;
use crate::checkpoint::SinkCheckpoint;
use crate::record::ShipRecord;
use crate::tail::JsonlTail;

/// The records parsed last, shared by the record sinks.
#[derive(Debug)]
pub struct RecordFeed {
    path: PathBuf,
    window: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    /// Reads on from the window's end; opened at the first reader's position.
    tail: Option<JsonlTail>,
    /// Consecutive records, the first one right after `start`.
    records: VecDeque<ShipRecord>,
    start: SinkCheckpoint,
    /// The most records kept.
    cap: usize,
}

impl Window {
    /// The position after the window's last record.
    fn end(&self) -> SinkCheckpoint {
        self.tail.as_ref().map_or(self.start, JsonlTail::position)
    }

    /// Up to `max` records after `at` (read on from the file when `at` is the window's end), or None when `at`
    /// is outside the window or the shared read failed.
    fn read(
        &mut self,
        path: &Path,
        at: SinkCheckpoint,
        until: u64,
        max: usize,
    ) -> Option<Vec<ShipRecord>> {
        if self.tail.is_none() {
            self.tail = JsonlTail::open("", path, at).ok();
            self.start = at;
        }
        if at.lines < self.start.lines || at.lines > self.end().lines {
            return None;
        }
        let held = usize::try_from(self.end().lines - at.lines).unwrap_or(usize::MAX);
        if held < max {
            match self.tail.as_mut()?.read(until, max - held) {
                Ok(more) => self.records.extend(more),
                // The reader reads on its own, and meets the error under its own name.
                Err(_) if held == 0 => return None,
                Err(_) => {}
            }
            while self.records.len() > self.cap.max(max) {
                if let Some(r) = self.records.pop_front() {
                    self.start.lines += 1;
                    self.start.bytes += r.jsonl_bytes();
                }
            }
        }
        let skip = usize::try_from(at.lines - self.start.lines).unwrap_or(usize::MAX);
        Some(self.records.iter().skip(skip).take(max).cloned().collect())
    }
}

impl RecordFeed {
    /// A feed of the JSONL at `path` that keeps up to `window` records.
    pub fn new(path: &Path, window: usize) -> Arc<RecordFeed> {
        Arc::new(RecordFeed {
            path: path.to_path_buf(),
            window: Mutex::new(Window {
                tail: None,
                records: VecDeque::new(),
                start: SinkCheckpoint::default(),
                cap: window.max(1),
            }),
        })
    }

    /// A reader for `sink` from its checkpoint `at`. The file must hold `at` (see [`JsonlTail::open`]).
    pub fn reader(
        self: &Arc<Self>,
        sink: &str,
        at: SinkCheckpoint,
    ) -> Result<FeedReader, SinkError> {
        Ok(FeedReader {
            feed: self.clone(),
            own: JsonlTail::open(sink, &self.path, at)?,
            at,
            own_at: at,
        })
    }
}

/// One sink's reading of the feed.
#[derive(Debug)]
pub struct FeedReader {
    feed: Arc<RecordFeed>,
    /// Its own reader of the file, for when it is outside the window.
    own: JsonlTail,
    /// What it has read (and handed out) so far.
    at: SinkCheckpoint,
    /// Where `own` stands.
    own_at: SinkCheckpoint,
}

impl FeedReader {
    /// Where reading stands: the lines and bytes handed out so far.
    pub fn position(&self) -> SinkCheckpoint {
        self.at
    }

    /// Up to `max` records after the position, reading no byte at or past `until` (the JSONL's flushed length);
    /// empty when there is nothing new.
    pub fn read(&mut self, until: u64, max: usize) -> Result<Vec<ShipRecord>, SinkError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let shared = match self.feed.window.lock() {
            Ok(mut w) => w.read(&self.feed.path, self.at, until, max),
            Err(_) => None,
        };
        let records = match shared {
            Some(records) => records,
            None => {
                if self.own_at != self.at {
                    self.own.seek(self.at);
                }
                let records = self.own.read(until, max)?;
                self.own_at = self.own.position();
                records
            }
        };
        for r in &records {
            self.at.lines = r.seq;
            self.at.bytes += r.jsonl_bytes();
        }
        Ok(records)
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

    fn at(lines: u64) -> SinkCheckpoint {
        SinkCheckpoint {
            lines,
            bytes: (1..=lines).map(|i| line(i).len() as u64).sum(),
        }
    }

    /// A JSONL of records 1 to `n`, flushed whole: its folder, path and length.
    fn jsonl(n: u64) -> (tempfile::TempDir, PathBuf, u64) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let text: String = (1..=n).map(line).collect();
        std::fs::write(&p, &text).unwrap();
        (dir, p, text.len() as u64)
    }

    fn ids(records: &[ShipRecord]) -> Vec<String> {
        records.iter().map(|r| r.record_id().to_owned()).collect()
    }

    #[test]
    fn readers_in_step_share_one_parse_and_each_keeps_its_position() {
        let (_dir, p, until) = jsonl(10);
        let feed = RecordFeed::new(&p, 100);
        let mut a = feed.reader("a", at(0)).unwrap();
        let mut b = feed.reader("b", at(0)).unwrap();
        assert_eq!(ids(&a.read(until, 4).unwrap()), ["r1", "r2", "r3", "r4"]);
        assert_eq!(ids(&b.read(until, 3).unwrap()), ["r1", "r2", "r3"]);
        assert_eq!(ids(&b.read(until, 3).unwrap()), ["r4", "r5", "r6"]);
        assert_eq!(
            ids(&a.read(until, 10).unwrap()),
            ["r5", "r6", "r7", "r8", "r9", "r10"]
        );
        assert_eq!(a.position(), at(10));
        assert_eq!(b.position(), at(6));
        // One parse for both: the window holds each line once, and nobody read on its own.
        let w = feed.window.lock().unwrap();
        assert_eq!(w.records.len(), 10);
        assert_eq!(w.end(), at(10));
        drop(w);
        assert_eq!((a.own_at, b.own_at), (at(0), at(0)));
        assert_eq!(ids(&b.read(until, 10).unwrap()), ["r7", "r8", "r9", "r10"]);
        assert!(a.read(until, 10).unwrap().is_empty());
    }

    #[test]
    fn a_reader_outside_the_window_reads_on_its_own_and_joins_it_again() {
        let (_dir, p, until) = jsonl(20);
        // A window of 4 records; `slow` restarts from line 2, `fast` from line 8.
        let feed = RecordFeed::new(&p, 4);
        let mut fast = feed.reader("fast", at(8)).unwrap();
        let mut slow = feed.reader("slow", at(2)).unwrap();
        assert_eq!(ids(&fast.read(until, 2).unwrap()), ["r9", "r10"]);
        // Behind the window: its own reads.
        assert_eq!(ids(&slow.read(until, 3).unwrap()), ["r3", "r4", "r5"]);
        assert_eq!(ids(&slow.read(until, 3).unwrap()), ["r6", "r7", "r8"]);
        assert_eq!(slow.own_at, at(8));
        // At the window's start now: it reads from the window.
        assert_eq!(ids(&slow.read(until, 2).unwrap()), ["r9", "r10"]);
        assert_eq!(slow.own_at, at(8));
        // The fast reader runs past the window's size: the front goes, and the slow one is behind again.
        assert_eq!(ids(&fast.read(until, 3).unwrap()), ["r11", "r12", "r13"]);
        assert_eq!(ids(&fast.read(until, 3).unwrap()), ["r14", "r15", "r16"]);
        assert_eq!(ids(&slow.read(until, 3).unwrap()), ["r11", "r12", "r13"]);
        assert_eq!(slow.own_at, at(13), "read on its own from where it was");
        // Inside the window again (lines 13 to 16): from there, and on for both.
        assert_eq!(
            ids(&slow.read(until, 10).unwrap()),
            ["r14", "r15", "r16", "r17", "r18", "r19", "r20"]
        );
        assert_eq!(
            ids(&fast.read(until, 10).unwrap()),
            ["r17", "r18", "r19", "r20"]
        );
        assert_eq!((fast.position(), slow.position()), (at(20), at(20)));
    }

    #[test]
    fn only_flushed_whole_lines_are_read_and_a_bad_line_is_the_readers_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        let text = format!("{}{}not json\n{}", line(1), line(2), line(4));
        std::fs::write(&p, &text).unwrap();
        let feed = RecordFeed::new(&p, 100);
        let mut a = feed.reader("a", at(0)).unwrap();
        let mut b = feed.reader("b", at(0)).unwrap();
        // Only the first line is flushed.
        assert_eq!(ids(&a.read(line(1).len() as u64, 10).unwrap()), ["r1"]);
        let until = text.len() as u64;
        assert_eq!(ids(&b.read(until, 10).unwrap()), ["r1", "r2"]);
        // The lines before a bad one are read first; then the error, and the position stays before it.
        assert_eq!(ids(&a.read(until, 10).unwrap()), ["r2"]);
        let e = a.read(until, 10).unwrap_err();
        assert_eq!(e.kind(), "bad_record");
        assert!(
            e.to_string().contains("`a`") && e.to_string().contains("line 3"),
            "{e}"
        );
        assert_eq!(a.position(), at(2), "the bad line is not passed over");
    }
}
