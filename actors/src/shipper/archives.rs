//! The loop of an object store sink: uploads closed WARC files, oldest first, each once (the store's manifest says
//! which are done). A file is closed when its name sorts before the file the last commit's archive checkpoint
//! names (names carry a fixed-width timestamp and serial, so they sort in the order they were made); once the crawl
//! ends, the last file is complete too. With `delete_local` a file is deleted once its upload was verified, but
//! never the file the committed checkpoint names (a restart opens it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crawl_observability::trace::{self, Attr, Stamp};
use crawl_sinks::SinkError;
use crawl_sinks::archive::ArchiveStore;
use tokio::sync::watch;

use super::hold::Lag;
use super::outage::Outage;
use super::{Common, unix_ms};

/// How often an idle loop looks at the folder again (a rotation also wakes it).
const IDLE_POLL: Duration = Duration::from_secs(2);

/// The WARC files of `names` (name, size) that are closed: this writer's (`prefix-….warc.gz`) and sorting before
/// `committed`, or up to it as well when `all` (the crawl has ended). Oldest first.
pub(super) fn closed_files(
    mut names: Vec<(String, u64)>,
    prefix: &str,
    committed: Option<&str>,
    all: bool,
) -> Vec<(String, u64)> {
    let Some(committed) = committed else {
        return Vec::new();
    };
    let start = format!("{prefix}-");
    names.retain(|(n, _)| {
        n.starts_with(&start)
            && n.ends_with(".warc.gz")
            && (n.as_str() < committed || (all && n.as_str() == committed))
    });
    names.sort();
    names
}

/// One object store sink's loop.
pub(super) struct ArchiveLoop {
    pub common: Common,
    pub store: ArchiveStore,
    pub dir: PathBuf,
    pub prefix: String,
    pub delete_local: bool,
    pub committed: watch::Receiver<Option<String>>,
}

impl ArchiveLoop {
    /// Uploads until the crawl ends and every file is uploaded.
    pub async fn run(mut self) {
        let mut outage = Outage::new(self.common.retry_max);
        loop {
            let committed = self.committed.borrow_and_update().clone();
            let all = self.common.finishing();
            let files = match list(&self.dir) {
                Ok(f) => f,
                Err(e) => {
                    let e = SinkError::io(&self.common.name, &self.dir, e);
                    self.common.failed(&mut outage, &e).await;
                    continue;
                }
            };
            let closed = closed_files(files, &self.prefix, committed.as_deref(), all);
            let (done, todo): (Vec<_>, Vec<_>) = closed
                .into_iter()
                .partition(|(n, _)| self.store.uploaded(n));
            if self.delete_local {
                for (name, _) in &done {
                    if Some(name) != committed.as_ref() {
                        self.delete(name);
                    }
                }
            }
            self.common.lag(Lag {
                records: todo.len() as u64,
                bytes: todo.iter().map(|(_, b)| b).sum(),
            });
            let Some((name, _)) = todo.first() else {
                if all {
                    return;
                }
                self.common.wait(&mut self.committed, IDLE_POLL).await;
                continue;
            };
            match self.upload(name, committed.as_deref()).await {
                Ok(()) => self.common.delivered(&mut outage),
                Err(e) => self.common.failed(&mut outage, &e).await,
            }
        }
    }

    async fn upload(&mut self, name: &str, committed: Option<&str>) -> Result<(), SinkError> {
        let c = &self.common;
        let path = self.dir.join(name);
        let mut span = trace::root(
            "sink.upload",
            Stamp::now(),
            &[
                Attr::new("sink.name", c.name.as_str()),
                Attr::new("sink.kind", c.kind),
                Attr::new("sink.file", name),
            ],
        );
        let up = match self.store.upload(&path).await {
            Ok(u) => u,
            Err(e) => {
                span.set_error(&e.to_string());
                span.end(Stamp::now());
                return Err(e);
            }
        };
        span.set_attributes(&[
            Attr::new("sink.bytes", i64::try_from(up.bytes).unwrap_or(i64::MAX)),
            Attr::new("sink.existed", up.existed),
        ]);
        span.end(Stamp::now());
        tracing::info!(
            sink = %c.name,
            file = %name,
            location = %up.location,
            bytes = up.bytes,
            existed = up.existed,
            "warc file uploaded"
        );
        let now_ms = unix_ms();
        crawl_observability::metrics::metrics().sinks().delivered(
            &c.name,
            1,
            up.bytes,
            0,
            now_ms as f64 / 1000.0,
        );
        c.state.update(|v| {
            v.delivered += 1;
            v.bytes += up.bytes;
            v.last_success_ms = now_ms;
            v.last_error = None;
        });
        if self.delete_local && Some(name) != committed {
            self.delete(name);
        }
        Ok(())
    }

    /// Deletes a local file whose upload was verified (a file already gone is fine).
    fn delete(&self, name: &str) {
        let path = self.dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                tracing::info!(sink = %self.common.name, file = %name, "uploaded warc file deleted")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(sink = %self.common.name, file = %name, error = %e, "uploaded warc file not deleted")
            }
        }
    }
}

/// The files of `dir` with their sizes.
fn list(dir: &Path) -> std::io::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file()
            && let Some(name) = entry.file_name().to_str()
        {
            out.push((name.to_owned(), meta.len()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> Vec<(String, u64)> {
        names.iter().map(|n| ((*n).to_owned(), 10)).collect()
    }

    #[test]
    fn files_before_the_committed_one_are_closed_and_all_of_them_at_the_end() {
        let dir = files(&[
            "crawl-20261206120000000-00002-h.warc.gz",
            "crawl-20261206110000000-00001-h.warc.gz",
            "crawl-20261206100000000-00000-h.warc.gz",
            "other-20261206100000000-00000-h.warc.gz",
            "crawl-20261206100000000-00000-h.warc.gz.tmp",
            "LOCK",
        ]);
        let current = "crawl-20261206120000000-00002-h.warc.gz";
        let names = |v: Vec<(String, u64)>| v.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert_eq!(
            names(closed_files(dir.clone(), "crawl", Some(current), false)),
            [
                "crawl-20261206100000000-00000-h.warc.gz",
                "crawl-20261206110000000-00001-h.warc.gz"
            ]
        );
        assert_eq!(
            closed_files(dir.clone(), "crawl", Some(current), true).len(),
            3
        );
        assert!(
            closed_files(dir, "crawl", None, true).is_empty(),
            "nothing is closed before a commit names a file"
        );
    }
}
