//! Sorted runs of (URL fingerprint, row) pairs: the embedded frontier's index from a fingerprint to the rows of the
//! URLs that have it, in files written once and never changed.
//!
//! New pairs are kept in memory first; when there are enough of them they are written out as a run, in the commit
//! whose rows they complete (see [`super::known`]). The newest runs merge with the one before them while that one
//! is at most twice their size together, so a crawl of n URLs keeps O(log n) runs and rewrites each pair O(log n)
//! times, sequentially, instead of copying a random B-tree page for every new URL. A merge ([`Merge`]) goes a step
//! at a time, in the store's idle time.
//!
//! A run file (`fp-<id>.run`): a 32-byte header (magic, pair count, body checksum, index checksum), the pairs in
//! ascending order (fingerprint and row, little-endian u64 each), then the first fingerprint of each block of
//! [`BLOCK`] pairs. Opening reads the header and the block index; a lookup reads the one or two blocks that can hold
//! its fingerprint; a merge reads whole runs and checks their body checksum.

use super::FrontierError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use twox_hash::XxHash3_64;

/// Pairs per block: one 4 KiB read.
pub const BLOCK: usize = 256;
const PAIR: usize = 16;
const HEADER: usize = 32;
const MAGIC: &[u8; 8] = b"CEFPRUN1";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FrontierError + '_ {
    move |source| FrontierError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn corrupt(path: &Path, detail: &str) -> FrontierError {
    super::corrupt(format!("fingerprint run {}", path.display()), detail)
}

fn u64_at(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The checksum of a run's body: each block's bytes hashed with the previous block's hash as the seed.
fn chain(seed: u64, block: &[u8]) -> u64 {
    XxHash3_64::oneshot_with_seed(seed, block)
}

fn index_sum(count: u64, firsts: &[u64]) -> u64 {
    let mut buf = Vec::with_capacity(8 + firsts.len() * 8);
    buf.extend_from_slice(&count.to_le_bytes());
    for f in firsts {
        buf.extend_from_slice(&f.to_le_bytes());
    }
    XxHash3_64::oneshot(&buf)
}

/// The file of run `id` under `dir`.
pub fn run_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("fp-{id}.run"))
}

/// One run: its file, pair count and the first fingerprint of each block.
#[derive(Debug)]
pub struct Run {
    id: u64,
    count: u64,
    file: File,
    path: PathBuf,
    firsts: Vec<u64>,
}

impl Run {
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes run `id` from `pairs` (ascending, exactly `count` of them) and makes it durable: a temporary file,
    /// synced, renamed into place, and the directory synced. The block index is kept from the writing.
    pub fn create(
        dir: &Path,
        id: u64,
        count: u64,
        pairs: impl Iterator<Item = Result<(u64, u64), FrontierError>>,
    ) -> Result<Run, FrontierError> {
        let mut w = RunWriter::new(dir, id, count)?;
        for pair in pairs {
            let (fp, row) = pair?;
            w.push(fp, row)?;
        }
        w.finish()
    }

    /// Opens run `id`, which the store's list says holds `count` pairs: reads its header and block index.
    pub fn open(dir: &Path, id: u64, count: u64) -> Result<Run, FrontierError> {
        let path = run_path(dir, id);
        let file = File::open(&path).map_err(io(&path))?;
        let len = file.metadata().map_err(io(&path))?.len();
        let blocks = count.div_ceil(BLOCK as u64);
        let body_end = (HEADER as u64)
            .checked_add(count.saturating_mul(PAIR as u64))
            .ok_or_else(|| corrupt(&path, "pair count out of range"))?;
        if len != body_end.saturating_add(blocks * 8) {
            return Err(corrupt(&path, "file length does not match its pair count"));
        }
        let mut header = [0u8; HEADER];
        file.read_exact_at(&mut header, 0).map_err(io(&path))?;
        if &header[..8] != MAGIC || u64_at(&header, 8) != count {
            return Err(corrupt(&path, "bad header"));
        }
        let mut raw = vec![0u8; (blocks * 8) as usize];
        file.read_exact_at(&mut raw, body_end).map_err(io(&path))?;
        let firsts: Vec<u64> = raw.chunks_exact(8).map(|c| u64_at(c, 0)).collect();
        if index_sum(count, &firsts) != u64_at(&header, 24) {
            return Err(corrupt(&path, "block index checksum mismatch"));
        }
        Ok(Run {
            id,
            count,
            file,
            path,
            firsts,
        })
    }

    fn read_block(&self, b: usize, buf: &mut Vec<u8>) -> Result<(), FrontierError> {
        let start = b as u64 * BLOCK as u64;
        let n = (self.count - start).min(BLOCK as u64) as usize;
        buf.resize(n * PAIR, 0);
        self.file
            .read_exact_at(buf, HEADER as u64 + start * PAIR as u64)
            .map_err(io(&self.path))
    }

    /// Appends to `out` the rows paired with `fp`.
    pub fn rows(&self, fp: u64, out: &mut Vec<u64>) -> Result<(), FrontierError> {
        // The pairs of `fp` start in the last block whose first fingerprint is below it, or in the first block
        // that starts with it, and may continue into the blocks after.
        let first = self.firsts.partition_point(|&f| f < fp).saturating_sub(1);
        let mut buf = Vec::new();
        for b in first..self.firsts.len() {
            if b > first && self.firsts[b] > fp {
                break;
            }
            self.read_block(b, &mut buf)?;
            for pair in buf.chunks_exact(PAIR) {
                let f = u64_at(pair, 0);
                if f == fp {
                    out.push(u64_at(pair, 8));
                } else if f > fp {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The run's pairs in order, read a block at a time; the body checksum is checked at the end.
    #[cfg(test)]
    pub fn pairs(&self) -> Pairs<&Run> {
        Pairs::of(self)
    }
}

/// Iterator over a run's pairs ([`Run::pairs`]), of a run borrowed or shared.
pub struct Pairs<R> {
    run: R,
    block: usize,
    buf: Vec<u8>,
    at: usize,
    sum: u64,
    done: bool,
}

impl<R: Deref<Target = Run>> Pairs<R> {
    pub fn of(run: R) -> Pairs<R> {
        Pairs {
            run,
            block: 0,
            buf: Vec::new(),
            at: 0,
            sum: 0,
            done: false,
        }
    }

    /// Compares the checksum of the blocks read with the one in the header.
    fn check_sum(&self) -> Result<(), FrontierError> {
        let mut header = [0u8; HEADER];
        self.run
            .file
            .read_exact_at(&mut header, 0)
            .map_err(io(&self.run.path))?;
        if u64_at(&header, 16) == self.sum {
            Ok(())
        } else {
            Err(corrupt(&self.run.path, "body checksum mismatch"))
        }
    }
}

impl<R: Deref<Target = Run>> Iterator for Pairs<R> {
    type Item = Result<(u64, u64), FrontierError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.at == self.buf.len() {
            if self.block == self.run.firsts.len() {
                self.done = true;
                return self.check_sum().err().map(Err);
            }
            if let Err(e) = self.run.read_block(self.block, &mut self.buf) {
                self.done = true;
                return Some(Err(e));
            }
            self.sum = chain(self.sum, &self.buf);
            self.block += 1;
            self.at = 0;
        }
        let pair = &self.buf[self.at..self.at + PAIR];
        self.at += PAIR;
        Some(Ok((u64_at(pair, 0), u64_at(pair, 8))))
    }
}

/// Merges runs `a` and `b` into a new run `id`.
#[cfg(test)]
pub fn merge(dir: &Path, id: u64, a: &Run, b: &Run) -> Result<Run, FrontierError> {
    let mut m = Merge::new(dir, id, vec![a, b])?;
    while !m.step(usize::MAX)? {}
    m.finish()
}

/// A merge of several runs into a new one, done a step at a time (the embedded store moves a slice of it between
/// requests, so that no commit waits for a whole merge). Dropped unfinished, it leaves no file behind.
pub struct Merge<R: Deref<Target = Run>> {
    inputs: Vec<std::iter::Peekable<Pairs<R>>>,
    out: RunWriter,
}

impl<R: Deref<Target = Run>> Merge<R> {
    /// A merge of `runs` into run `id` under `dir` (its temporary file is created here).
    pub fn new(dir: &Path, id: u64, runs: Vec<R>) -> Result<Merge<R>, FrontierError> {
        let count = runs.iter().map(|r| r.count).sum();
        Ok(Merge {
            out: RunWriter::new(dir, id, count)?,
            inputs: runs.into_iter().map(|r| Pairs::of(r).peekable()).collect(),
        })
    }

    /// Moves at most `max` pairs to the new run, smallest first; true when every pair is there.
    pub fn step(&mut self, max: usize) -> Result<bool, FrontierError> {
        for _ in 0..max {
            let mut least: Option<(usize, (u64, u64))> = None;
            for (i, input) in self.inputs.iter_mut().enumerate() {
                match input.peek() {
                    None => {}
                    Some(Err(_)) => {
                        return match input.next() {
                            Some(Err(e)) => Err(e),
                            _ => Err(corrupt(&self.out.path, "a merged run failed to read")),
                        };
                    }
                    Some(Ok(p)) if least.is_none_or(|(_, l)| *p < l) => least = Some((i, *p)),
                    Some(Ok(_)) => {}
                }
            }
            let Some((i, (fp, row))) = least else {
                return Ok(true);
            };
            self.inputs[i].next();
            self.out.push(fp, row)?;
        }
        Ok(self.inputs.iter_mut().all(|i| i.peek().is_none()))
    }

    /// The new run, durable, once [`Merge::step`] said every pair is in it.
    pub fn finish(self) -> Result<Run, FrontierError> {
        self.out.finish()
    }
}

/// A run being written: pairs in ascending order into a temporary file, which [`RunWriter::finish`] makes durable
/// and renames into place. Dropped unfinished, its temporary file is deleted.
pub struct RunWriter {
    dir: PathBuf,
    id: u64,
    path: PathBuf,
    tmp: PathBuf,
    count: u64,
    out: Option<BufWriter<File>>,
    block: Vec<u8>,
    firsts: Vec<u64>,
    body: u64,
    n: u64,
    last: Option<(u64, u64)>,
    /// Renamed into place: the drop leaves the file.
    placed: bool,
}

impl RunWriter {
    pub fn new(dir: &Path, id: u64, count: u64) -> Result<RunWriter, FrontierError> {
        let path = run_path(dir, id);
        let tmp = path.with_extension("run.tmp");
        let file = File::create(&tmp).map_err(io(&tmp))?;
        let mut out = BufWriter::with_capacity(64 * 1024, file);
        let mut w = RunWriter {
            dir: dir.to_path_buf(),
            id,
            path,
            tmp,
            count,
            out: None,
            block: Vec::with_capacity(BLOCK * PAIR),
            firsts: Vec::new(),
            body: 0,
            n: 0,
            last: None,
            placed: false,
        };
        // Set before the first write: a failed one still leaves the file to the drop, which deletes it.
        let header = out.write_all(&[0u8; HEADER]);
        w.out = Some(out);
        header.map_err(io(&w.tmp))?;
        Ok(w)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), FrontierError> {
        match self.out.as_mut() {
            Some(out) => out.write_all(bytes).map_err(io(&self.tmp)),
            None => Err(corrupt(&self.path, "written after it was finished")),
        }
    }

    /// Appends a pair (not below the one before).
    pub fn push(&mut self, fp: u64, row: u64) -> Result<(), FrontierError> {
        if self.last.is_some_and(|l| l > (fp, row)) {
            return Err(corrupt(&self.path, "pairs out of order"));
        }
        self.last = Some((fp, row));
        if self.block.is_empty() {
            self.firsts.push(fp);
        }
        self.block.extend_from_slice(&fp.to_le_bytes());
        self.block.extend_from_slice(&row.to_le_bytes());
        self.n += 1;
        if self.block.len() == BLOCK * PAIR {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<(), FrontierError> {
        self.body = chain(self.body, &self.block);
        let block = std::mem::take(&mut self.block);
        let written = self.write(&block);
        self.block = block;
        self.block.clear();
        written
    }

    /// Writes the block index and the header, syncs the file, renames it into place and syncs the directory.
    pub fn finish(mut self) -> Result<Run, FrontierError> {
        if !self.block.is_empty() {
            self.flush_block()?;
        }
        if self.n != self.count {
            return Err(corrupt(
                &self.path,
                "pair count differs from the one announced",
            ));
        }
        let mut index = Vec::with_capacity(self.firsts.len() * 8);
        for f in &self.firsts {
            index.extend_from_slice(&f.to_le_bytes());
        }
        self.write(&index)?;
        let Some(out) = self.out.take() else {
            return Err(corrupt(&self.path, "finished twice"));
        };
        let tmp = self.tmp.clone();
        let file = out.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..16].copy_from_slice(&self.count.to_le_bytes());
        header[16..24].copy_from_slice(&self.body.to_le_bytes());
        header[24..32].copy_from_slice(&index_sum(self.count, &self.firsts).to_le_bytes());
        file.write_all_at(&header, 0).map_err(io(&tmp))?;
        file.sync_all().map_err(io(&tmp))?;
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(io(&self.path))?;
        self.placed = true;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io(&self.dir))?;
        let file = File::open(&self.path).map_err(io(&self.path))?;
        Ok(Run {
            id: self.id,
            count: self.count,
            file,
            path: self.path.clone(),
            firsts: std::mem::take(&mut self.firsts),
        })
    }
}

impl Drop for RunWriter {
    fn drop(&mut self) {
        if !self.placed {
            // Best effort: a leftover temporary file is removed when the store opens.
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Whether the newest of runs with these pair counts (oldest first) should merge into the one before it.
pub fn should_merge(counts: &[u64]) -> bool {
    match counts {
        [.., older, newer] => *older <= newer.saturating_mul(2),
        _ => false,
    }
}

/// The run list as kept in the store: (id, pair count) of each run, oldest first.
pub fn encode_list(runs: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(runs.len() * 16);
    for (id, count) in runs {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
    }
    out
}

pub fn decode_list(raw: &[u8]) -> Option<Vec<(u64, u64)>> {
    if !raw.len().is_multiple_of(16) {
        return None;
    }
    Some(
        raw.chunks_exact(16)
            .map(|c| (u64_at(c, 0), u64_at(c, 8)))
            .collect(),
    )
}

/// Removes run files under `dir` that are not in `keep` (written for a commit that did not happen, or merged
/// away just before a crash) and unfinished temporary files.
pub fn remove_strays(dir: &Path, keep: &[u64]) -> Result<(), FrontierError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("fp-") else {
            continue;
        };
        let stray = match rest.strip_suffix(".run") {
            Some(id) => id.parse::<u64>().map_or(true, |id| !keep.contains(&id)),
            None => rest.ends_with(".run.tmp"),
        };
        if stray {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "fpruns_tests.rs"]
mod tests;
