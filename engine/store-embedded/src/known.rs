//! The embedded frontier's known URLs: rows numbered in discovery order, and an index from a URL's fingerprint to
//! its rows.
//!
//! - `url_rows` (row -> URL and parent): a new row is appended at the end of the table, so the pages a commit
//!   copies are the last few, whatever the URLs hash to. Nothing else is written per URL.
//! - the (fingerprint, row) pairs of the newest rows, at most about [`FLUSH_AT`], in memory. They are the rows
//!   after the last run, so opening the store reads them back from the end of `url_rows`.
//! - sorted runs of the older pairs in files beside the database ([`crate::fpruns`]), listed in the store with the
//!   row they cover up to, by the commit whose rows they complete.
//!
//! Exact dedup reads the rows a fingerprint points to and compares their URLs.

use crate::error::StoreResult;
use crate::fpruns::{self, Run};
use crawl_core::frontier::codec;
use crawl_core::frontier::{FrontierError, corrupt, url_fp};
use redb::{ReadableTable, TableDefinition};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub const ROWS: TableDefinition<u64, &[u8]> = TableDefinition::new("url_rows");

/// Pairs kept in memory before they are written out as a run (under a megabyte; also the most rows opening reads
/// back).
pub const FLUSH_AT: usize = 16_384;

fn matching(
    rows: &impl ReadableTable<u64, &'static [u8]>,
    candidates: &[u64],
    url: &str,
) -> Result<Option<u64>, FrontierError> {
    for &row in candidates {
        let Some(v) = rows.get(row).store()? else {
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
    /// Shared with a reader of their pairs that outlives a merge (the filter's rebuild); a merged-away run's
    /// file is deleted, and read on through the handle it keeps open.
    runs: Vec<Arc<Run>>,
    next_id: u64,
}

/// Runs written for a commit that has not happened yet: the first `keep` runs stay, the others were merged into
/// `tail`, the new newest run.
#[derive(Debug)]
pub struct Prepared {
    keep: usize,
    tail: Run,
    next_id: u64,
}

/// What a commit stores with a new run: the run list, the next run id, and the last row the runs cover.
pub struct Listing {
    pub list: Vec<u8>,
    pub next_id: u64,
    pub covered: u64,
}

impl Prepared {
    pub fn listing(&self, index: &FpIndex) -> Listing {
        let mut list: Vec<(u64, u64)> = index.runs[..self.keep]
            .iter()
            .map(|r| (r.id(), r.count()))
            .collect();
        list.push((self.tail.id(), self.tail.count()));
        Listing {
            list: fpruns::encode_list(&list),
            next_id: self.next_id,
            covered: index.fresh.iter().map(|p| p.1).max().unwrap_or(0),
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
        for item in rows
            .range((Bound::Excluded(covered), Bound::Unbounded))
            .store()?
        {
            let (k, v) = item.store()?;
            let url = codec::row_url(v.value()).map_err(|e| corrupt("url row", e))?;
            fresh.insert((url_fp(url), k.value()));
        }
        Ok(FpIndex {
            dir: dir.to_path_buf(),
            fresh,
            pending: Vec::new(),
            runs,
            next_id: next_id.max(ids.iter().max().map_or(1, |m| m + 1)),
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
    /// ([`FpIndex::flush_if_full`]), are in that run with them. The runs it merged away are deleted.
    pub fn settle(&mut self, flushed: Option<Prepared>) {
        match flushed {
            Some(p) => {
                self.fresh.clear();
                self.pending.clear();
                for r in self.runs.drain(p.keep..) {
                    remove(&self.dir, r.id());
                }
                self.runs.push(Arc::new(p.tail));
                self.next_id = p.next_id;
            }
            None => self.pending.clear(),
        }
    }

    /// The runs as listed now, oldest first.
    pub fn runs(&self) -> Vec<Arc<Run>> {
        self.runs.clone()
    }

    /// The fingerprints of the pairs held in memory.
    pub fn fresh_fps(&self) -> impl Iterator<Item = u64> + '_ {
        self.fresh.iter().map(|p| p.0)
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

    /// Writes the pairs in memory as a new run when there are [`FLUSH_AT`] of them, merging runs as
    /// [`fpruns::should_merge`] says. The files are durable when this returns; the caller stores
    /// [`Prepared::listing`] in the commit that wrote the newest of those rows and then calls [`FpIndex::settle`]
    /// (or [`FpIndex::abandon`] if the commit failed).
    pub fn flush_if_full(&self) -> Result<Option<Prepared>, FrontierError> {
        if self.fresh.len() < FLUSH_AT {
            return Ok(None);
        }
        let mut next_id = self.next_id;
        let pairs = self.fresh.iter().map(|p| Ok(*p));
        let mut tail = Run::create(&self.dir, next_id, self.fresh.len() as u64, pairs)?;
        next_id += 1;
        let mut keep = self.runs.len();
        while keep > 0 && fpruns::should_merge(&[self.runs[keep - 1].count(), tail.count()]) {
            let older = &self.runs[keep - 1];
            let merged = fpruns::merge(&self.dir, next_id, older, &tail);
            // The tail was never listed: it goes whether the merge worked or not.
            remove(&self.dir, tail.id());
            tail = merged?;
            next_id += 1;
            keep -= 1;
        }
        Ok(Some(Prepared {
            keep,
            tail,
            next_id,
        }))
    }

    /// The commit that would have listed `p` failed: its new run is deleted.
    pub fn abandon(&self, p: Prepared) {
        remove(&self.dir, p.tail.id());
    }
}

/// Deletes run `id`'s file; one left behind is removed when the store opens next.
fn remove(dir: &Path, id: u64) {
    let path = fpruns::run_path(dir, id);
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(path = %path.display(), error = %e, "could not delete a fingerprint run");
    }
}
