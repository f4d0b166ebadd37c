//! The record log: record lines numbered as JSONL lines, from staged to committed to written, with the traces
//! that end when their record is in the file.

use crawl_core::output::JsonlCheckpoint;
use crawl_observability::trace::{self, Trace};
use std::collections::VecDeque;
use std::time::Instant;

#[derive(Debug, Default)]
pub(super) struct RecordLog {
    next_seq: u64,
    /// Staged records' traces (their lines are in the staged batch).
    staged: Vec<(u64, Trace)>,
    /// Records of the commit in flight: (sequence, line, trace).
    committing: Vec<(u64, Vec<u8>, Trace)>,
    /// Committed records on their way to the sink: (sequence, trace), in order.
    writing: VecDeque<(u64, Trace)>,
    committed_upto: u64,
    written_upto: u64,
    /// The JSONL position to checkpoint with the next commit.
    checkpoint: Option<JsonlCheckpoint>,
}

impl RecordLog {
    /// `next_seq` is the sequence number of the next record; `lines` the JSONL's complete lines.
    pub(super) fn new(next_seq: u64, lines: u64, checkpoint: Option<JsonlCheckpoint>) -> RecordLog {
        RecordLog {
            next_seq: next_seq.max(lines + 1),
            committed_upto: lines,
            written_upto: lines,
            checkpoint,
            ..RecordLog::default()
        }
    }

    /// Numbers a new record.
    pub(super) fn stage(&mut self, trace: Trace) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.staged.push((seq, trace));
        seq
    }

    /// The staged records go into a commit whose lines are `lines`.
    pub(super) fn start_commit(&mut self, lines: &[(u64, Vec<u8>)]) {
        let traces = std::mem::take(&mut self.staged);
        self.committing = traces
            .into_iter()
            .zip(lines.iter())
            .map(|((seq, t), (_, line))| (seq, line.clone(), t))
            .collect();
    }

    /// Lines of the commit in flight that changed on the way (their archive location was added).
    pub(super) fn rewrite(&mut self, lines: Vec<(u64, Vec<u8>)>) {
        if lines.is_empty() {
            return;
        }
        let mut by_seq: std::collections::HashMap<u64, Vec<u8>> = lines.into_iter().collect();
        for (seq, line, _) in &mut self.committing {
            if let Some(new) = by_seq.remove(seq) {
                *line = new;
            }
        }
    }

    /// The commit is durable: its lines, in order, for the sink. `fenced` are the sequence numbers the store
    /// refused (another process owns their URLs now) and `extra` the records it handed over to write: the kept
    /// records are numbered on from the last committed one, then the extra ones.
    /// Each kept record's trace gets a `frontier.commit` span from `started` to `done` (the store's backend is a
    /// resource attribute of the process's spans).
    pub(super) fn committed(
        &mut self,
        (started, done): (Instant, Instant),
        fenced: &[u64],
        extra: Vec<Vec<u8>>,
    ) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.committing.len() + extra.len());
        let mut next = self.committed_upto + 1;
        // One span for every record's trace, encoded once.
        let mut span = trace::Alike::new("frontier.commit", started, done);
        for (seq, line, trace) in std::mem::take(&mut self.committing) {
            if fenced.contains(&seq) {
                continue;
            }
            span.add(&trace.ctx());
            self.writing.push_back((next, trace));
            out.push((next, line));
            next += 1;
        }
        for line in extra {
            self.writing.push_back((next, Trace::default()));
            out.push((next, line));
            next += 1;
        }
        self.committed_upto = next - 1;
        out
    }

    /// After a commit whose numbering moved (fenced or extra records), numbers the staged records on from the
    /// committed ones; `records` are the staged batch's lines.
    pub(super) fn restage(&mut self, records: &mut [(u64, Vec<u8>)]) {
        let old_first = self.next_seq - self.staged.len() as u64;
        let new_first = self.committed_upto + 1;
        if old_first == new_first {
            return;
        }
        let shift = |seq: u64| seq - old_first + new_first;
        for (seq, _) in &mut self.staged {
            *seq = shift(*seq);
        }
        for (seq, _) in records.iter_mut() {
            *seq = shift(*seq);
        }
        self.next_seq = new_first + self.staged.len() as u64;
    }

    /// The commit failed: its records are lost with it (the process stops).
    pub(super) fn commit_failed(&mut self) {
        self.committing.clear();
    }

    /// The sink wrote records up to `cp.lines`. Returns true when that is news.
    pub(super) fn written(&mut self, cp: JsonlCheckpoint) -> bool {
        if cp.lines > self.written_upto {
            self.written_upto = cp.lines;
            self.checkpoint = Some(cp);
            return true;
        }
        false
    }

    /// The checkpoint to store with the next commit, if it moved.
    pub(super) fn take_checkpoint(&mut self) -> Option<JsonlCheckpoint> {
        self.checkpoint.take()
    }

    pub(super) fn has_checkpoint(&self) -> bool {
        self.checkpoint.is_some()
    }

    pub(super) fn settled(&self) -> bool {
        self.staged.is_empty()
            && self.committing.is_empty()
            && self.written_upto >= self.committed_upto
    }

    /// The traces of records now written (up to line `upto`), in order, with their line numbers.
    pub(super) fn take_written(&mut self, upto: u64) -> impl Iterator<Item = (u64, Trace)> + '_ {
        let n = self.writing.partition_point(|(seq, _)| *seq <= upto);
        self.writing.drain(..n)
    }

    /// Records committed but not yet written.
    pub(super) fn pending_writes(&self) -> u64 {
        self.committed_upto.saturating_sub(self.written_upto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_records_are_dropped_and_later_records_keep_a_gapless_numbering() {
        let mut log = RecordLog::new(1, 0, None);
        let t = Instant::now();
        let s1 = log.stage(Trace::default());
        let s2 = log.stage(Trace::default());
        let s3 = log.stage(Trace::default());
        let batch = vec![
            (s1, b"a\n".to_vec()),
            (s2, b"b\n".to_vec()),
            (s3, b"c\n".to_vec()),
        ];
        log.start_commit(&batch);
        // Two more records are staged while the commit is out.
        let s4 = log.stage(Trace::default());
        let s5 = log.stage(Trace::default());
        let mut staged = vec![(s4, b"d\n".to_vec()), (s5, b"e\n".to_vec())];
        let out = log.committed((t, t), &[s2], vec![b"x\n".to_vec(), b"y\n".to_vec()]);
        assert_eq!(
            out,
            vec![
                (1, b"a\n".to_vec()),
                (2, b"c\n".to_vec()),
                (3, b"x\n".to_vec()),
                (4, b"y\n".to_vec())
            ]
        );
        log.restage(&mut staged);
        assert_eq!(staged.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(log.stage(Trace::default()), 7);
        assert_eq!(log.pending_writes(), 4);
    }
}
