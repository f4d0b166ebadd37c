//! The embedded frontier's known URLs: rows numbered in discovery order, and an index from a URL's fingerprint to
//! its rows.
//!
//! - `url_rows` (row -> URL and parent): a new row is appended at the end of the table, so the pages a commit
//!   copies are the last few, whatever the URLs hash to. Nothing else is written per URL.
//! - the (fingerprint, row) pairs of the newest rows, at most about [`FLUSH_AT`], in memory. They are the rows
//!   after the last run, so opening the store reads them back from the end of `url_rows`.
//! - sorted runs of the older pairs in files beside the database ([`super::fpruns`]), listed in the store with the
//!   row they cover up to, by the commit whose rows they complete.
//! - runs merge in the background: the newest runs, once the one before them is at most twice their size together,
//!   are merged a slice at a time between the store's requests ([`FpIndex::merge_step`]); the merged run replaces
//!   them in the list of the next commit, and their files are deleted once that commit is durable. Lookups use the
//!   runs as listed until then, and a merge that was not listed is a stray file the next open removes.
//!
//! Exact dedup reads the rows a fingerprint points to and compares their URLs.

use super::codec;
use super::fpruns::{self, Run};
use super::{FrontierError, corrupt};
use redb::{ReadableTable, TableDefinition};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const ROWS: TableDefinition<u64, &[u8]> = TableDefinition::new("url_rows");

/// Pairs kept in memory before they are written out as a run (under a megabyte; also the most rows opening reads
/// back).
pub const FLUSH_AT: usize = 16_384;

/// Pairs a merge moves in one step (1 MiB read, 1 MiB written): what a request may wait behind.
pub const MERGE_STEP: usize = 65_536;

fn matching(
    rows: &impl ReadableTable<u64, &'static [u8]>,
    candidates: &[u64],
    url: &str,
) -> Result<Option<u64>, FrontierError> {
    for &row in candidates {
        let Some(v) = rows.get(row)? else {
            return Err(corrupt(
                format!("url row {row}"),
                "indexed but missing from the row table",
            ));
        };
        if codec::row_url(v.value()).map_err(|e| corrupt("url row", e))? == url {
            return Ok(Some(row));
        }
    }
    Ok(None)
}

/// The index from fingerprints to rows: the newest pairs in memory, the others in runs (oldest first).
///
/// The pairs of the commit under way are also listed in `pending` until it is durable ([`FpIndex::settle`]) or
/// has failed ([`FpIndex::rollback`]).
#[derive(Debug)]
pub struct FpIndex {
    dir: PathBuf,
    fresh: BTreeSet<(u64, u64)>,
    pending: Vec<(u64, u64)>,
    runs: Vec<Arc<Run>>,
    next_id: u64,
    merge: Merging,
}

/// The background merge.
#[derive(Default)]
enum Merging {
    #[default]
    Idle,
    /// Merging `runs[from..upto]` (runs are only appended while it runs, so the range holds).
    Running {
        from: usize,
        upto: usize,
        job: Box<fpruns::Merge<Arc<Run>>>,
    },
    /// Merged: the run replaces `runs[from..upto]` in the next commit's list.
    Done { from: usize, upto: usize, run: Run },
    /// The merge failed: the next commit reports it.
    Failed(FrontierError),
}

impl std::fmt::Debug for Merging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Merging::Idle => f.write_str("Idle"),
            Merging::Running { from, upto, .. } => write!(f, "Running({from}..{upto})"),
            Merging::Done { from, upto, .. } => write!(f, "Done({from}..{upto})"),
            Merging::Failed(e) => write!(f, "Failed({e})"),
        }
    }
}

/// What a commit lists that the last one did not: a new run of the pairs in memory (`tail`), and a finished merge
/// that replaces `runs[from..upto]`.
#[derive(Debug)]
pub struct Prepared {
    tail: Option<Run>,
    merged: Option<(usize, usize, Run)>,
    next_id: u64,
}

/// What a commit stores with a new run list: the list, the next run id, and (with a new run) the last row the runs
/// cover.
pub struct Listing {
    pub list: Vec<u8>,
    pub next_id: u64,
    pub covered: Option<u64>,
}

impl Prepared {
    pub fn listing(&self, index: &FpIndex) -> Listing {
        let entry = |r: &Run| (r.id(), r.count());
        let mut list: Vec<(u64, u64)> = Vec::with_capacity(index.runs.len() + 1);
        match &self.merged {
            Some((from, upto, run)) => {
                list.extend(index.runs[..*from].iter().map(|r| entry(r)));
                list.push(entry(run));
                list.extend(index.runs[*upto..].iter().map(|r| entry(r)));
            }
            None => list.extend(index.runs.iter().map(|r| entry(r))),
        }
        list.extend(self.tail.as_ref().map(entry));
        Listing {
            list: fpruns::encode_list(&list),
            next_id: self.next_id,
            covered: self
                .tail
                .as_ref()
                .map(|_| index.fresh.iter().map(|p| p.1).max().unwrap_or(0)),
        }
    }
}

impl FpIndex {
    /// No URLs yet.
    pub fn empty(dir: &Path) -> FpIndex {
        FpIndex {
            dir: dir.to_path_buf(),
            fresh: BTreeSet::new(),
            pending: Vec::new(),
            runs: Vec::new(),
            next_id: 1,
            merge: Merging::Idle,
        }
    }

    /// Opens the runs of a stored list (removing run files the list does not name) and reads back the pairs of the
    /// rows after `covered`, the last row in a run.
    pub fn open(
        dir: &Path,
        list: Option<&[u8]>,
        next_id: u64,
        rows: &impl ReadableTable<u64, &'static [u8]>,
        covered: u64,
    ) -> Result<FpIndex, FrontierError> {
        let list = match list {
            Some(raw) => {
                fpruns::decode_list(raw).ok_or_else(|| corrupt("run list", "torn entry"))?
            }
            None => Vec::new(),
        };
        let ids: Vec<u64> = list.iter().map(|(id, _)| *id).collect();
        fpruns::remove_strays(dir, &ids)?;
        let runs = list
            .iter()
            .map(|&(id, count)| Run::open(dir, id, count).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let mut fresh = BTreeSet::new();
        for item in rows.range((Bound::Excluded(covered), Bound::Unbounded))? {
            let (k, v) = item?;
            let url = codec::row_url(v.value()).map_err(|e| corrupt("url row", e))?;
            fresh.insert((super::url_fp(url), k.value()));
        }
        Ok(FpIndex {
            dir: dir.to_path_buf(),
            fresh,
            pending: Vec::new(),
            runs,
            next_id: next_id.max(ids.iter().max().map_or(1, |m| m + 1)),
            merge: Merging::Idle,
        })
    }

    /// The row of `url` among the rows with fingerprint `fp`, if it is known.
    pub fn find(
        &self,
        rows: &impl ReadableTable<u64, &'static [u8]>,
        fp: u64,
        url: &str,
    ) -> Result<Option<u64>, FrontierError> {
        let range = (fp, 0)..=(fp, u64::MAX);
        let mut candidates: Vec<u64> = self.fresh.range(range).map(|p| p.1).collect();
        if let Some(row) = matching(rows, &candidates, url)? {
            return Ok(Some(row));
        }
        // Oldest run first: each run is more than twice the size of the next, so a known URL is in the first with
        // a probability of more than a half, and a lookup reads about two blocks.
        for run in &self.runs {
            candidates.clear();
            run.rows(fp, &mut candidates)?;
            if let Some(row) = matching(rows, &candidates, url)? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    /// The commit under way failed: its pairs are taken out.
    pub fn rollback(&mut self) {
        for p in self.pending.drain(..) {
            self.fresh.remove(&p);
        }
    }

    /// A new row, written in the commit under way.
    pub fn add(&mut self, fp: u64, row: u64) {
        self.fresh.insert((fp, row));
        self.pending.push((fp, row));
    }

    /// The commit under way is durable: its pairs join the others in memory, or, if it listed a new run
    /// ([`FpIndex::prepare`]), are in that run with them; a merge it listed replaces the runs it merged, whose
    /// files are deleted.
    pub fn settle(&mut self, prepared: Option<Prepared>) {
        self.pending.clear();
        let Some(p) = prepared else {
            return;
        };
        if let Some((from, upto, run)) = p.merged {
            let gone: Vec<_> = self.runs.splice(from..upto, [Arc::new(run)]).collect();
            for r in gone {
                remove(&self.dir, r.id());
            }
        }
        if let Some(tail) = p.tail {
            self.fresh.clear();
            self.runs.push(Arc::new(tail));
        }
        self.next_id = self.next_id.max(p.next_id);
    }

    /// Pairs held in memory.
    #[cfg(test)]
    pub fn in_memory(&self) -> usize {
        self.fresh.len()
    }

    /// The pair counts of the runs, oldest first.
    #[cfg(test)]
    pub fn counts(&self) -> Vec<u64> {
        self.runs.iter().map(|r| r.count()).collect()
    }

    /// What the next commit lists that the last did not: the pairs in memory written as a new run when there are
    /// [`FLUSH_AT`] of them, and a merge that finished. The files are durable when this returns; the caller stores
    /// [`Prepared::listing`] in the commit that wrote the newest of those rows and then calls [`FpIndex::settle`]
    /// (or [`FpIndex::abandon`] if the commit failed). A merge that failed is this commit's error.
    pub fn prepare(&mut self) -> Result<Option<Prepared>, FrontierError> {
        let merged = match std::mem::take(&mut self.merge) {
            Merging::Done { from, upto, run } => Some((from, upto, run)),
            Merging::Failed(e) => return Err(e),
            running => {
                self.merge = running;
                None
            }
        };
        let tail = if self.fresh.len() >= FLUSH_AT {
            let pairs = self.fresh.iter().map(|p| Ok(*p));
            match Run::create(&self.dir, self.next_id, self.fresh.len() as u64, pairs) {
                Ok(run) => {
                    self.next_id += 1;
                    Some(run)
                }
                Err(e) => {
                    if let Some((_, _, run)) = merged {
                        remove(&self.dir, run.id());
                    }
                    return Err(e);
                }
            }
        } else {
            None
        };
        if tail.is_none() && merged.is_none() {
            return Ok(None);
        }
        Ok(Some(Prepared {
            tail,
            merged,
            next_id: self.next_id,
        }))
    }

    /// The commit that would have listed `p` failed: its new runs are deleted (a merge starts again).
    pub fn abandon(&self, p: Prepared) {
        if let Some(tail) = p.tail {
            remove(&self.dir, tail.id());
        }
        if let Some((_, _, run)) = p.merged {
            remove(&self.dir, run.id());
        }
    }

    /// Moves the background merge on by one step, starting one when the runs call for it (the newest runs, while
    /// the one before them is at most twice their size together); true while there is more to do.
    pub fn merge_step(&mut self) -> bool {
        if matches!(self.merge, Merging::Idle) {
            let Some(from) = merge_from(&self.counts_all()) else {
                return false;
            };
            let upto = self.runs.len();
            let id = self.next_id;
            self.next_id += 1;
            self.merge = match fpruns::Merge::new(&self.dir, id, self.runs[from..upto].to_vec()) {
                Ok(job) => Merging::Running {
                    from,
                    upto,
                    job: Box::new(job),
                },
                Err(e) => Merging::Failed(e),
            };
        }
        let Merging::Running { from, upto, job } = &mut self.merge else {
            return false;
        };
        let (from, upto) = (*from, *upto);
        match job.step(MERGE_STEP) {
            Ok(false) => true,
            Ok(true) => {
                let Merging::Running { job, .. } = std::mem::take(&mut self.merge) else {
                    return false;
                };
                self.merge = match job.finish() {
                    Ok(run) => Merging::Done { from, upto, run },
                    Err(e) => Merging::Failed(e),
                };
                false
            }
            Err(e) => {
                self.merge = Merging::Failed(e);
                false
            }
        }
    }

    fn counts_all(&self) -> Vec<u64> {
        self.runs.iter().map(|r| r.count()).collect()
    }

    /// Whether a merge is under way or waits for a commit.
    #[cfg(test)]
    pub fn merging(&self) -> bool {
        !matches!(self.merge, Merging::Idle)
    }
}

/// The first of the runs (pair counts oldest first) that the newest should merge with: the newest runs merge while
/// the one before them is at most twice their size together ([`fpruns::should_merge`]); None when the newest stays.
fn merge_from(counts: &[u64]) -> Option<usize> {
    let mut from = counts.len().checked_sub(1)?;
    let mut size = counts[from];
    while from > 0 && fpruns::should_merge(&[counts[from - 1], size]) {
        from -= 1;
        size = size.saturating_add(counts[from]);
    }
    (from + 1 < counts.len()).then_some(from)
}

/// Deletes run `id`'s file; one left behind is removed when the store opens next.
fn remove(dir: &Path, id: u64) {
    let path = fpruns::run_path(dir, id);
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(path = %path.display(), error = %e, "could not delete a fingerprint run");
    }
}

#[cfg(test)]
mod tests {
    use super::merge_from;

    /// The newest runs merge while the one before them is at most twice their size together.
    #[test]
    fn the_newest_runs_merge_while_the_one_before_is_at_most_twice_their_size() {
        assert_eq!(merge_from(&[]), None);
        assert_eq!(merge_from(&[7]), None);
        assert_eq!(merge_from(&[4, 1]), None);
        assert_eq!(merge_from(&[2, 1]), Some(0));
        assert_eq!(merge_from(&[100, 2, 1]), Some(1));
        assert_eq!(merge_from(&[5, 2, 1, 1]), Some(0));
        assert_eq!(merge_from(&[9, 2, 1, 1]), Some(1));
    }
}
