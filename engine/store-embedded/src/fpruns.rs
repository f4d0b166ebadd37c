//! Sorted runs of (URL fingerprint, row) pairs: the embedded frontier's index from a fingerprint to the rows of the
//! URLs that have it, in files written once and never changed.
//!
//! New pairs go to a small redb table first; when it is full its pairs are written out as a run, in the commit that
//! empties the table (see [`crate::store`]). The newest run merges into the one before it while that one is at
//! most twice its size, so a crawl of n URLs keeps O(log n) runs and rewrites each pair O(log n) times, sequentially,
//! instead of copying a random B-tree page for every new URL.
//!
//! A run file (`fp-<id>.run`): a 32-byte header (magic, pair count, body checksum, index checksum), the pairs in
//! ascending order (fingerprint and row, little-endian u64 each), then the first fingerprint of each block of
//! [`BLOCK`] pairs. Opening reads the header and the block index; a lookup reads the one or two blocks that can hold
//! its fingerprint; a merge reads whole runs and checks their body checksum.

use crawl_core::frontier::FrontierError;
use std::fs::File;
use std::io::{BufWriter, Write};
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
    crawl_core::frontier::corrupt(format!("fingerprint run {}", path.display()), detail)
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
        let path = run_path(dir, id);
        let tmp = path.with_extension("run.tmp");
        let written = Self::write(&path, &tmp, count, pairs);
        if written.is_err() {
            // Best effort: a leftover temporary file is removed when the store opens.
            let _ = std::fs::remove_file(&tmp);
        }
        let firsts = written?;
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir))?;
        let file = File::open(&path).map_err(io(&path))?;
        Ok(Run {
            id,
            count,
            file,
            path,
            firsts,
        })
    }

    fn write(
        path: &Path,
        tmp: &Path,
        count: u64,
        pairs: impl Iterator<Item = Result<(u64, u64), FrontierError>>,
    ) -> Result<Vec<u64>, FrontierError> {
        let file = File::create(tmp).map_err(io(tmp))?;
        let mut w = BufWriter::with_capacity(64 * 1024, &file);
        w.write_all(&[0u8; HEADER]).map_err(io(tmp))?;
        let mut block = Vec::with_capacity(BLOCK * PAIR);
        let mut firsts = Vec::new();
        let mut body = 0u64;
        let mut n = 0u64;
        let mut last = None;
        for pair in pairs {
            let (fp, row) = pair?;
            if last.is_some_and(|l| l > (fp, row)) {
                return Err(corrupt(path, "pairs out of order"));
            }
            last = Some((fp, row));
            if block.is_empty() {
                firsts.push(fp);
            }
            block.extend_from_slice(&fp.to_le_bytes());
            block.extend_from_slice(&row.to_le_bytes());
            n += 1;
            if block.len() == BLOCK * PAIR {
                body = chain(body, &block);
                w.write_all(&block).map_err(io(tmp))?;
                block.clear();
            }
        }
        if !block.is_empty() {
            body = chain(body, &block);
            w.write_all(&block).map_err(io(tmp))?;
        }
        if n != count {
            return Err(corrupt(path, "pair count differs from the one announced"));
        }
        for f in &firsts {
            w.write_all(&f.to_le_bytes()).map_err(io(tmp))?;
        }
        w.flush().map_err(io(tmp))?;
        drop(w);
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..16].copy_from_slice(&count.to_le_bytes());
        header[16..24].copy_from_slice(&body.to_le_bytes());
        header[24..32].copy_from_slice(&index_sum(count, &firsts).to_le_bytes());
        file.write_all_at(&header, 0).map_err(io(tmp))?;
        file.sync_all().map_err(io(tmp))?;
        Ok(firsts)
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

    /// Blocks in the run.
    pub fn blocks(&self) -> usize {
        self.firsts.len()
    }

    /// Appends to `out` the fingerprints of block `b`, in order (its pairs' rows left out).
    pub fn block_fps(&self, b: usize, out: &mut Vec<u64>) -> Result<(), FrontierError> {
        let mut buf = Vec::new();
        self.read_block(b, &mut buf)?;
        out.extend(buf.chunks_exact(PAIR).map(|pair| u64_at(pair, 0)));
        Ok(())
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
    pub fn pairs(&self) -> Pairs<'_> {
        Pairs {
            run: self,
            block: 0,
            buf: Vec::new(),
            at: 0,
            sum: 0,
            done: false,
        }
    }
}

/// Iterator over a run's pairs ([`Run::pairs`]).
pub struct Pairs<'a> {
    run: &'a Run,
    block: usize,
    buf: Vec<u8>,
    at: usize,
    sum: u64,
    done: bool,
}

impl Pairs<'_> {
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

impl Iterator for Pairs<'_> {
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
pub fn merge(dir: &Path, id: u64, a: &Run, b: &Run) -> Result<Run, FrontierError> {
    let mut x = a.pairs().peekable();
    let mut y = b.pairs().peekable();
    let merged = std::iter::from_fn(move || {
        let take_x = match (x.peek(), y.peek()) {
            (None, None) => return None,
            (Some(Err(_)), _) | (Some(Ok(_)), None) => true,
            (_, Some(Err(_))) | (None, Some(Ok(_))) => false,
            (Some(Ok(p)), Some(Ok(q))) => p <= q,
        };
        if take_x { x.next() } else { y.next() }
    });
    let count = a.count + b.count;
    let run = Run::create(dir, id, count, merged)?;
    Ok(run)
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
mod tests;
