//! The archive (WARC files) on the store's thread: the fetches of a commit are appended, their JSONL records gain
//! their location, the files are synced, and the commit carries the archive's checkpoint. A restart cuts the files
//! back to the last committed checkpoint, so a fetch archived but never committed (and so fetched again) leaves no
//! second response record, and every committed record's location points to a whole WARC record.

use crate::protocol::ArchiveItem;
use crawl_core::config::Config;
use crawl_core::frontier::Batch;
use crawl_core::ownership::CrawlId;
use crawl_output::warc::{
    Metadata, PayloadDedup, RecordLocation, Sha1, WarcCheckpoint, WarcError, WarcWriter,
    WarcWriterConfig,
};

/// Payloads remembered for revisit records (their digests and where they were first written).
const DEDUP_CAPACITY: usize = 1 << 20;

/// The WARC writer and the payload table of this process.
#[derive(Debug)]
pub struct Archive {
    writer: WarcWriter,
    /// The checkpoint of a new file started at open, to commit before the crawl starts.
    opening: Option<Vec<u8>>,
    dedup: Option<PayloadDedup>,
}

impl Archive {
    /// Opens the archive of `config.output.warc_dir` (None when WARC output is off), cut back to `checkpoint`
    /// (as the last commit stored it); its warcinfo records name `crawl` (`isPartOf`).
    pub fn open(
        config: &Config,
        checkpoint: Option<&[u8]>,
        crawl: &CrawlId,
    ) -> Result<Option<Archive>, WarcError> {
        let Some(dir) = &config.output.warc_dir else {
            return Ok(None);
        };
        let mut cfg = WarcWriterConfig::new(dir, config.output.warc_prefix.clone());
        cfg.max_bytes = config.output.warc_max_bytes;
        cfg.compression_level = crate::parser::archive::ARCHIVE_LEVEL;
        cfg.config_digest = Some(Sha1::of(format!("{config:?}").as_bytes()).label());
        cfg.warcinfo_extra = vec![
            (
                "http-header-user-agent".to_owned(),
                config.crawl.user_agent.clone(),
            ),
            ("isPartOf".to_owned(), crawl.to_string()),
        ];
        let checkpoint: Option<WarcCheckpoint> = match checkpoint {
            Some(b) => Some(serde_json::from_slice(b).map_err(|e| {
                WarcError::InvalidMessage(format!("stored archive checkpoint: {e}"))
            })?),
            None => None,
        };
        let mut writer = WarcWriter::open(cfg, checkpoint.as_ref())?;
        let report = writer.open_report();
        if report.cut_bytes > 0 || !report.removed_files.is_empty() {
            tracing::info!(
                file = %report.file,
                cut_bytes = report.cut_bytes,
                removed_files = report.removed_files.len(),
                "archive cut back to its last commit"
            );
        }
        // With an object store sink a closed file may be copied at any time: a resumed file is closed and the run
        // goes on in a new one, so no file is appended to by two runs.
        let uploads = config
            .sinks
            .iter()
            .any(|s| matches!(s.kind, crawl_core::config::SinkKind::ObjectStore(_)));
        let mut opening = None;
        if uploads && !writer.open_report().created {
            let cp = writer.start_next_file()?;
            opening = Some(
                serde_json::to_vec(&cp)
                    .map_err(|e| WarcError::InvalidMessage(format!("archive checkpoint: {e}")))?,
            );
        }
        Ok(Some(Archive {
            writer,
            opening,
            dedup: config
                .output
                .warc_dedup
                .then(|| PayloadDedup::new(DEDUP_CAPACITY)),
        }))
    }

    /// The checkpoint of the file started at open (when the resumed one was closed), once: committed before the
    /// first fetch, it makes the closed file final.
    pub fn take_opening_checkpoint(&mut self) -> Option<Vec<u8>> {
        self.opening.take()
    }

    /// The file being written.
    pub fn current_file(&self) -> &str {
        self.writer.current_file()
    }

    /// Appends the fetches of a commit (with a page's metadata record), adds each location to its record's line,
    /// syncs the files and stores the checkpoint in the batch. Returns the lines that changed, by sequence number.
    pub fn write(
        &mut self,
        batch: &mut Batch,
        items: Vec<ArchiveItem>,
    ) -> Result<Vec<(u64, Vec<u8>)>, WarcError> {
        let mut rewritten = Vec::new();
        // Where each record's line is in the batch, found once (a commit holds up to thousands).
        let at: std::collections::HashMap<u64, usize> = batch
            .records
            .iter()
            .enumerate()
            .map(|(i, (seq, _))| (*seq, i))
            .collect();
        for item in items {
            let archived = *item.archived;
            let url = archived.prepared.url().to_owned();
            let date = archived.prepared.date();
            let written = self
                .writer
                .append_prepared(archived.prepared, self.dedup.as_mut())?;
            if !archived.outlinks.is_empty() {
                self.writer.append_metadata(&Metadata {
                    url: &url,
                    date,
                    about: &written.response.id,
                    outlinks: &archived.outlinks,
                    fields: &[],
                })?;
            }
            if let Some(seq) = item.record
                && let Some((_, line)) = at.get(&seq).and_then(|&i| batch.records.get_mut(i))
            {
                add_location(line, &written.response.location);
                rewritten.push((seq, line.clone()));
            }
        }
        let cp = self.writer.sync()?;
        let bytes = serde_json::to_vec(&cp)
            .map_err(|e| WarcError::InvalidMessage(format!("archive checkpoint: {e}")))?;
        batch.archive_checkpoint = Some(bytes);
        Ok(rewritten)
    }
}

/// Adds `"warc":{"file":…,"offset":…,"length":…}` to a JSONL record line (a JSON object and a newline).
fn add_location(line: &mut Vec<u8>, at: &RecordLocation) {
    let Ok(loc) = serde_json::to_string(at) else {
        return;
    };
    let end = line.iter().rposition(|&b| b == b'}');
    if let Some(i) = end {
        let field = format!(",\"warc\":{loc}");
        line.splice(i..i, field.into_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_joins_the_record_line() {
        let mut line = b"{\"url\":\"http://a/\",\"status\":200}\n".to_vec();
        add_location(
            &mut line,
            &RecordLocation {
                file: "crawl-1-00000-h.warc.gz".into(),
                offset: 512,
                length: 1234,
            },
        );
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["warc"]["file"], "crawl-1-00000-h.warc.gz");
        assert_eq!(v["warc"]["offset"], 512);
        assert_eq!(v["warc"]["length"], 1234);
        assert_eq!(v["status"], 200);
        assert_eq!(line.last(), Some(&b'\n'));
    }
}
