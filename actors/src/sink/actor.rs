//! The sink: appends committed records to the JSONL, exactly once and in order.
//!
//! A record's sequence number is its line number. Records at or below the file's line count are already there
//! (re-sent after a restart) and are skipped, so the file never holds a URL twice.
//!
//! A panic here is fatal for the process ([`crate::fatal`]): the sink's guard reports it, lines still buffered are
//! lost, and the next run writes them again from the frontier's outbox.

use crate::fatal::PanicGuard;
use crate::faults::{Faults, Stage};
use crate::protocol::SinkError;
use crate::protocol::WriteRecords;
use actix::{Actor, Context, Handler};
use crawl_core::output::JsonlCheckpoint;
use crawl_output::jsonl::JsonlWriter;

pub struct Sink {
    writer: JsonlWriter,
    faults: Faults,
    /// Where the JSONL stands after each write, for the shippers that read it.
    progress: Option<tokio::sync::watch::Sender<JsonlCheckpoint>>,
    _guard: PanicGuard,
}

impl Sink {
    pub fn new(writer: JsonlWriter, faults: Faults, guard: PanicGuard) -> Sink {
        Sink {
            writer,
            faults,
            progress: None,
            _guard: guard,
        }
    }

    /// Publishes the JSONL's flushed position after each write.
    pub fn with_progress(mut self, progress: tokio::sync::watch::Sender<JsonlCheckpoint>) -> Sink {
        self.progress = Some(progress);
        self
    }
}

impl Actor for Sink {
    type Context = Context<Self>;

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        if let Err(e) = self.writer.sync() {
            tracing::error!(error = %e, "final output sync failed");
        }
    }
}

/// Appends the lines that are not in the file yet. Pure enough to test without an actor.
pub fn write_lines(
    writer: &mut JsonlWriter,
    lines: &[(u64, Vec<u8>)],
) -> Result<JsonlCheckpoint, SinkError> {
    for (seq, line) in lines {
        let have = writer.lines();
        if *seq <= have {
            continue;
        }
        if *seq != have + 1 {
            return Err(SinkError::Gap {
                seq: *seq,
                lines: have,
            });
        }
        writer.append(line)?;
    }
    writer.flush()?;
    Ok(writer.checkpoint())
}

impl Handler<WriteRecords> for Sink {
    type Result = Result<JsonlCheckpoint, SinkError>;

    fn handle(&mut self, msg: WriteRecords, _ctx: &mut Context<Self>) -> Self::Result {
        if self.faults.has(Stage::Sink) {
            for (_, line) in &msg.lines {
                self.faults.hit(Stage::Sink, &String::from_utf8_lossy(line));
            }
        }
        let cp = write_lines(&mut self.writer, &msg.lines)?;
        if let Some(p) = &self.progress {
            p.send_if_modified(|at| {
                let moved = *at != cp;
                *at = cp;
                moved
            });
        }
        Ok(cp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_skipped_and_gaps_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o.jsonl");
        let mut w = JsonlWriter::open(&p).unwrap();
        let l = |s: &str| format!("{s}\n").into_bytes();
        assert_eq!(
            write_lines(&mut w, &[(1, l("a")), (2, l("b"))])
                .unwrap()
                .lines,
            2
        );
        let cp = write_lines(&mut w, &[(2, l("b")), (3, l("c"))]).unwrap();
        assert_eq!((cp.lines, cp.bytes), (3, 6));
        assert!(matches!(
            write_lines(&mut w, &[(5, l("e"))]),
            Err(SinkError::Gap { seq: 5, lines: 3 })
        ));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\nb\nc\n");
    }
}
