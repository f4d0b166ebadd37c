//! The embedded frontier: redb on disk under data_dir, with an exact in-memory index of known URLs.
//!
//! Tables: `urls` (canonical URL -> `D` for done, or `Q` + JSON entry for pending), `outbox` (record sequence number
//! -> JSONL line) and `meta` (counters). Every commit is `Durability::Immediate`; the scheduler groups many changes
//! into one commit (group commit), so the fsync cost is paid once per window, not once per URL.

use super::{CommitInfo, DirLock, Entry, FrontierError, FrontierStore, Recovered};
use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const URLS: TableDefinition<&str, &[u8]> = TableDefinition::new("urls");
const OUTBOX: TableDefinition<u64, &[u8]> = TableDefinition::new("outbox");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

const CACHE_BYTES: usize = 4 * 1024 * 1024;

const DONE: u8 = b'D';
const QUEUED: u8 = b'Q';

const META_NEXT_SEQ: &str = "next_seq";
const META_DONE: &str = "done";
const META_PAGES: &str = "pages_fetched";

#[derive(Debug)]
enum Op {
    Put(Entry),
    Finish {
        url: String,
        seq: u64,
        line: Vec<u8>,
    },
    Trim(u64),
}

/// redb-backed [`FrontierStore`].
pub struct EmbeddedFrontier {
    db: Database,
    known: HashSet<Box<str>>,
    staged: Vec<Op>,
    next_seq: u64,
    done: u64,
    pages_fetched: u64,
    trimmed_upto: u64,
    dir: PathBuf,
    _lock: DirLock,
}

impl std::fmt::Debug for EmbeddedFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedFrontier")
            .field("dir", &self.dir)
            .field("known", &self.known.len())
            .finish()
    }
}

impl EmbeddedFrontier {
    /// Opens (or creates) the frontier under `dir`, taking the directory's lock first.
    pub fn open(dir: &Path) -> Result<EmbeddedFrontier, FrontierError> {
        let lock = DirLock::acquire(dir)?;
        // redb caches up to 1 GiB by default; the hot set here is small (pending entries and recent pages).
        let path = dir.join("frontier.redb");
        if !path.exists() {
            create_atomically(&path)?;
        }
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)?;
        Ok(EmbeddedFrontier {
            db,
            known: HashSet::new(),
            staged: Vec::new(),
            next_seq: 1,
            done: 0,
            pages_fetched: 0,
            trimmed_upto: 0,
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    /// Sets the sequence number of the next record (used on a fresh store whose JSONL already has lines).
    pub fn set_next_seq(&mut self, next: u64) {
        self.next_seq = next.max(1);
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Creates an empty database under a temporary name and renames it into place, so a crash (even `kill -9`) in the
/// middle of creation never leaves a half-written `frontier.redb` behind: the file either does not exist or is a
/// complete, empty database.
fn create_atomically(path: &Path) -> Result<(), FrontierError> {
    let io = |source| FrontierError::Io {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension("redb.creating");
    if tmp.exists() {
        std::fs::remove_file(&tmp).map_err(io)?;
    }
    drop(
        Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&tmp)?,
    );
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}

fn encode_pending(entry: &Entry) -> Vec<u8> {
    let mut v = Vec::with_capacity(96);
    v.push(QUEUED);
    // An entry is strings and integers; serialising it cannot fail.
    if serde_json::to_writer(&mut v, entry).is_err() {
        v.truncate(1);
    }
    v
}

impl FrontierStore for EmbeddedFrontier {
    fn recover(&mut self) -> Result<Recovered, FrontierError> {
        let mut rec = Recovered::default();
        let txn = self.db.begin_read()?;
        let mut meta_next = None;
        match txn.open_table(META) {
            Ok(meta) => {
                meta_next = meta.get(META_NEXT_SEQ)?.map(|g| g.value());
                self.done = meta.get(META_DONE)?.map(|g| g.value()).unwrap_or(0);
                self.pages_fetched = meta.get(META_PAGES)?.map(|g| g.value()).unwrap_or(0);
            }
            Err(redb::TableError::TableDoesNotExist(_)) => rec.fresh = true,
            Err(e) => return Err(e.into()),
        }
        match txn.open_table(URLS) {
            Ok(urls) => {
                for item in urls.iter()? {
                    let (k, v) = item?;
                    let url = k.value();
                    let val = v.value();
                    self.known.insert(url.into());
                    match val.first() {
                        Some(&DONE) => {}
                        Some(&QUEUED) => {
                            let entry: Entry = serde_json::from_slice(&val[1..]).map_err(|e| {
                                FrontierError::Corrupt {
                                    url: url.to_owned(),
                                    detail: e.to_string(),
                                }
                            })?;
                            rec.pending.push(entry);
                        }
                        _ => {
                            return Err(FrontierError::Corrupt {
                                url: url.to_owned(),
                                detail: "unknown state byte".into(),
                            });
                        }
                    }
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
        match txn.open_table(OUTBOX) {
            Ok(outbox) => {
                for item in outbox.iter()? {
                    let (k, v) = item?;
                    rec.outbox.push((k.value(), v.value().to_vec()));
                }
            }
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
        rec.pending.sort_by_key(|e| e.seq);
        if let Some(next) = meta_next {
            self.next_seq = next;
        }
        rec.next_seq = self.next_seq;
        rec.known = self.known.len() as u64;
        rec.done = self.done;
        rec.pages_fetched = self.pages_fetched;
        Ok(rec)
    }

    fn is_known(&self, url: &str) -> bool {
        self.known.contains(url)
    }

    fn add(&mut self, entry: &Entry) -> bool {
        if self.known.contains(entry.url.as_str()) {
            return false;
        }
        self.known.insert(entry.url.as_str().into());
        self.staged.push(Op::Put(entry.clone()));
        true
    }

    fn update(&mut self, entry: &Entry) {
        self.staged.push(Op::Put(entry.clone()));
    }

    fn finish(&mut self, url: &str, record_line: Vec<u8>, fetched_page: bool) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.done += 1;
        if fetched_page {
            self.pages_fetched += 1;
        }
        self.known.insert(url.into());
        self.staged.push(Op::Finish {
            url: url.to_owned(),
            seq,
            line: record_line,
        });
        seq
    }

    fn trim_outbox(&mut self, upto_seq: u64) {
        if upto_seq > self.trimmed_upto {
            self.staged.push(Op::Trim(upto_seq));
        }
    }

    fn staged(&self) -> usize {
        self.staged.len()
    }

    fn commit(&mut self) -> Result<CommitInfo, FrontierError> {
        let mut info = CommitInfo::default();
        if self.staged.is_empty() {
            return Ok(info);
        }
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        let mut trim_to = self.trimmed_upto;
        {
            let mut urls = txn.open_table(URLS)?;
            let mut outbox = txn.open_table(OUTBOX)?;
            for op in &self.staged {
                match op {
                    Op::Put(entry) => {
                        urls.insert(entry.url.as_str(), encode_pending(entry).as_slice())?;
                        info.added += 1;
                    }
                    Op::Finish { url, seq, line } => {
                        urls.insert(url.as_str(), [DONE].as_slice())?;
                        outbox.insert(*seq, line.as_slice())?;
                        info.finished += 1;
                    }
                    Op::Trim(upto) => trim_to = trim_to.max(*upto),
                }
            }
            if trim_to > self.trimmed_upto {
                let before = outbox.len()?;
                outbox.retain_in(..=trim_to, |_, _| false)?;
                info.trimmed = (before - outbox.len()?) as usize;
            }
            let mut meta = txn.open_table(META)?;
            meta.insert(META_NEXT_SEQ, self.next_seq)?;
            meta.insert(META_DONE, self.done)?;
            meta.insert(META_PAGES, self.pages_fetched)?;
        }
        txn.commit()?;
        self.trimmed_upto = trim_to;
        self.staged.clear();
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Vec<u8> {
        format!("{{\"url\":\"{s}\"}}\n").into_bytes()
    }

    #[test]
    fn dedup_is_exact_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
            let rec = f.recover().unwrap();
            assert!(rec.fresh);
            assert!(f.add(&Entry::page("http://a/1", 0, None)));
            assert!(
                !f.add(&Entry::page("http://a/1", 3, None)),
                "second add of the same URL is refused"
            );
            assert!(f.add(&Entry::page("http://a/2", 1, Some("http://a/1".into()))));
            assert_eq!(f.finish("http://a/1", line("http://a/1"), true), 1);
            f.commit().unwrap();
        }
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        let rec = f.recover().unwrap();
        assert!(!rec.fresh);
        assert_eq!(rec.known, 2);
        assert_eq!(rec.done, 1);
        assert_eq!(rec.pages_fetched, 1);
        assert_eq!(rec.pending.len(), 1);
        assert_eq!(rec.pending[0].url, "http://a/2");
        assert_eq!(rec.pending[0].parent.as_deref(), Some("http://a/1"));
        assert_eq!(rec.outbox, vec![(1, line("http://a/1"))]);
        assert_eq!(rec.next_seq, 2);
        assert!(f.is_known("http://a/1"));
        assert!(!f.add(&Entry::page("http://a/2", 0, None)));
    }

    #[test]
    fn uncommitted_changes_are_lost_atomically() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
            f.recover().unwrap();
            f.add(&Entry::page("http://a/1", 0, None));
            f.commit().unwrap();
            f.finish("http://a/1", line("1"), true);
            f.add(&Entry::page("http://a/child", 1, None));
            // dropped without commit: neither the done mark nor the child may survive
        }
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        let rec = f.recover().unwrap();
        assert_eq!(
            rec.pending
                .iter()
                .map(|e| e.url.as_str())
                .collect::<Vec<_>>(),
            vec!["http://a/1"]
        );
        assert!(rec.outbox.is_empty());
        assert!(!f.is_known("http://a/child"));
        assert_eq!(rec.next_seq, 1);
    }

    #[test]
    fn outbox_trim_and_update() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        for i in 0..5 {
            let u = format!("http://a/{i}");
            f.add(&Entry::page(&u, 0, None));
            f.finish(&u, line(&u), false);
        }
        let mut e = Entry::page("http://a/retry", 0, None);
        f.add(&e);
        e.retries = 2;
        f.update(&e);
        f.commit().unwrap();
        f.trim_outbox(3);
        let info = f.commit().unwrap();
        assert_eq!(info.trimmed, 3);
        drop(f);
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        let rec = f.recover().unwrap();
        assert_eq!(
            rec.outbox.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert_eq!(rec.pending.len(), 1);
        assert_eq!(rec.pending[0].retries, 2);
        assert_eq!(rec.pages_fetched, 0);
        assert_eq!(rec.done, 5);
    }

    #[test]
    fn leftover_of_an_interrupted_creation_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        // What a crash in the middle of creation leaves: a partial temporary file, no frontier.redb.
        std::fs::write(dir.path().join("frontier.redb.creating"), vec![0u8; 73728]).unwrap();
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        assert!(f.recover().unwrap().fresh);
        assert!(!dir.path().join("frontier.redb.creating").exists());
    }

    #[test]
    fn second_open_of_same_dir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _f = EmbeddedFrontier::open(dir.path()).unwrap();
        let err = EmbeddedFrontier::open(dir.path()).unwrap_err();
        assert!(matches!(err, FrontierError::Locked(_)), "{err}");
    }
}
