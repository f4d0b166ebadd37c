//! The revisit schedule of the embedded frontier (continuous crawling): finished URLs that come due again, each
//! with its prior visit, found in due order for promotion and by row for sitemap hints.
//!
//! Two tables, both packed several URLs to a value, because a B-tree entry per URL costs its key, a value offset
//! and the free space of its leaf for each URL:
//! - `schedule_rows`: row chunk (the row divided by [`codec::ROWS_PER_CHUNK`]) -> the entries of its scheduled
//!   rows, in row order: the row's offset in the chunk, then the due time and the prior visit ([`codec::put_entry`]).
//! - `schedule_due`: the (due time, row) pairs in order, in chunks of at most [`DUE_CHUNK_BYTES`], each keyed by its
//!   first pair and holding the others as small differences ([`codec::encode_due_chunk`]).
//!
//! A row is scheduled when it has an entry in its row chunk, and then it has exactly one due pair. Both tables are
//! written in the transaction of the commit, promotion or hint that changes them; a store written before they
//! existed has neither and reads as an empty schedule.

pub mod codec;

use crate::error::StoreResult;
use codec::{DuePair, Revisit};
use crawl_core::frontier::{FrontierError, Outlook, corrupt};
use redb::{ReadTransaction, ReadableTable, Table, TableDefinition, WriteTransaction};

pub const DUE: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("schedule_due");
pub const BY_ROW: TableDefinition<u64, &[u8]> = TableDefinition::new("schedule_rows");

/// The most bytes of a due chunk's value: a chunk that grows past it is split in two.
pub const DUE_CHUNK_BYTES: usize = 1024;

/// The schedule's tables, open in a write transaction.
pub struct Schedule<'t> {
    due: Table<'t, (u32, u64), &'static [u8]>,
    by_row: Table<'t, u64, &'static [u8]>,
}

impl<'t> Schedule<'t> {
    pub fn open(txn: &'t WriteTransaction) -> Result<Schedule<'t>, FrontierError> {
        Ok(Schedule {
            due: txn.open_table(DUE).store()?,
            by_row: txn.open_table(BY_ROW).store()?,
        })
    }

    /// Schedules a row; a row scheduled already is moved to the new due time and prior. Returns true when the row
    /// was not scheduled before.
    pub fn put(&mut self, r: &Revisit) -> Result<bool, FrontierError> {
        let old = self.put_entry(r)?;
        match old {
            Some(due) if due == r.due_s => return Ok(false),
            Some(due) => {
                self.remove_pair((due, r.row))?;
            }
            None => {}
        }
        self.insert_pair((r.due_s, r.row))?;
        Ok(old.is_none())
    }

    /// The row's entry, when it is scheduled.
    pub fn get(&self, row: u64) -> Result<Option<Revisit>, FrontierError> {
        let chunk = self.row_chunk(codec::chunk_of(row))?;
        Ok(chunk.into_iter().find(|e| e.row == row))
    }

    /// Takes up to `max` entries due at or before `upto_s`, oldest first, out of the schedule.
    pub fn take_due(&mut self, upto_s: u32, max: usize) -> Result<Vec<Revisit>, FrontierError> {
        let pairs = self.pop_pairs(upto_s, max)?;
        let mut out = Vec::with_capacity(pairs.len());
        for (_, row) in pairs {
            let key = codec::chunk_of(row);
            let mut chunk = self.row_chunk(key)?;
            let Some(i) = chunk.iter().position(|e| e.row == row) else {
                return Err(corrupt(
                    format!("schedule entry of row {row}"),
                    "due but missing from its row chunk",
                ));
            };
            out.push(chunk.remove(i));
            self.write_row_chunk(key, &chunk)?;
        }
        Ok(out)
    }

    /// Writes the row's entry, returning the due time of the one it replaced.
    fn put_entry(&mut self, r: &Revisit) -> Result<Option<u32>, FrontierError> {
        let key = codec::chunk_of(r.row);
        let mut chunk = self.row_chunk(key)?;
        let old = match chunk.binary_search_by_key(&r.row, |e| e.row) {
            Ok(i) => Some(std::mem::replace(&mut chunk[i], r.clone()).due_s),
            Err(i) => {
                chunk.insert(i, r.clone());
                None
            }
        };
        self.write_row_chunk(key, &chunk)?;
        Ok(old)
    }

    fn row_chunk(&self, key: u64) -> Result<Vec<Revisit>, FrontierError> {
        match self.by_row.get(key).store()? {
            Some(v) => codec::decode_row_chunk(key, v.value())
                .map_err(|e| corrupt(format!("schedule row chunk {key}"), e)),
            None => Ok(Vec::new()),
        }
    }

    fn write_row_chunk(&mut self, key: u64, chunk: &[Revisit]) -> Result<(), FrontierError> {
        if chunk.is_empty() {
            self.by_row.remove(key).store()?;
        } else {
            self.by_row
                .insert(key, codec::encode_row_chunk(chunk).as_slice())
                .store()?;
        }
        Ok(())
    }

    /// The due chunk that holds `pair` or would: the one with the greatest first pair at or before it, else the
    /// first one. Its first pair and all its pairs.
    fn due_chunk_for(
        &self,
        pair: DuePair,
    ) -> Result<Option<(DuePair, Vec<DuePair>)>, FrontierError> {
        let found = match self.due.range::<DuePair>(..=pair).store()?.next_back() {
            Some(item) => Some(item.store()?),
            None => self.due.first().store()?,
        };
        let Some((k, v)) = found else {
            return Ok(None);
        };
        let first = k.value();
        let pairs = decode_due(first, v.value())?;
        Ok(Some((first, pairs)))
    }

    fn insert_pair(&mut self, pair: DuePair) -> Result<(), FrontierError> {
        let Some((first, mut pairs)) = self.due_chunk_for(pair)? else {
            self.due.insert(pair, [].as_slice()).store()?;
            return Ok(());
        };
        if let Err(i) = pairs.binary_search(&pair) {
            pairs.insert(i, pair);
            self.write_due_chunk(first, &pairs)?;
        }
        Ok(())
    }

    fn remove_pair(&mut self, pair: DuePair) -> Result<bool, FrontierError> {
        let Some((first, mut pairs)) = self.due_chunk_for(pair)? else {
            return Ok(false);
        };
        let Ok(i) = pairs.binary_search(&pair) else {
            return Ok(false);
        };
        pairs.remove(i);
        self.write_due_chunk(first, &pairs)?;
        Ok(true)
    }

    /// Takes up to `max` pairs due at or before `upto_s` from the front.
    fn pop_pairs(&mut self, upto_s: u32, max: usize) -> Result<Vec<DuePair>, FrontierError> {
        let mut out = Vec::new();
        while out.len() < max {
            let (first, pairs) = match self.due.first().store()? {
                Some((k, v)) => {
                    let first = k.value();
                    (first, decode_due(first, v.value())?)
                }
                None => break,
            };
            let n = pairs
                .iter()
                .take_while(|p| p.0 <= upto_s)
                .count()
                .min(max - out.len());
            if n == 0 {
                break;
            }
            out.extend_from_slice(&pairs[..n]);
            self.write_due_chunk(first, &pairs[n..])?;
            if n < pairs.len() {
                break;
            }
        }
        Ok(out)
    }

    /// Writes the pairs of the chunk keyed `old_first` (sorted): keyed by their first pair now, split in chunks of
    /// at most [`DUE_CHUNK_BYTES`], the old key removed when it is no longer a chunk's.
    fn write_due_chunk(
        &mut self,
        old_first: DuePair,
        pairs: &[DuePair],
    ) -> Result<(), FrontierError> {
        if pairs.first() != Some(&old_first) {
            self.due.remove(old_first).store()?;
        }
        let mut pieces = vec![pairs];
        while let Some(piece) = pieces.pop() {
            let Some((&first, rest)) = piece.split_first() else {
                continue;
            };
            let value = codec::encode_due_chunk(first, rest);
            if value.len() > DUE_CHUNK_BYTES && piece.len() > 1 {
                let (a, b) = piece.split_at(piece.len() / 2);
                pieces.push(a);
                pieces.push(b);
                continue;
            }
            self.due.insert(first, value.as_slice()).store()?;
        }
        Ok(())
    }
}

fn decode_due(first: DuePair, value: &[u8]) -> Result<Vec<DuePair>, FrontierError> {
    codec::decode_due_chunk(first, value)
        .map_err(|e| corrupt(format!("schedule due chunk {first:?}"), e))
}

/// The earliest due time and how many pairs are due before `horizon_ms` (counted up to `cap`).
pub fn outlook(txn: &ReadTransaction, horizon_ms: u64, cap: u64) -> Result<Outlook, FrontierError> {
    let due = match txn.open_table(DUE) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Outlook::default()),
        Err(e) => return Err(e).store(),
    };
    let mut out = Outlook::default();
    for item in due.iter().store()? {
        let (k, v) = item.store()?;
        let first = k.value();
        if out.next_due_ms.is_none() {
            out.next_due_ms = Some(codec::due_ms(first.0));
        }
        if out.due_before >= cap || codec::due_ms(first.0) >= horizon_ms {
            break;
        }
        for p in decode_due(first, v.value())? {
            if out.due_before >= cap || codec::due_ms(p.0) >= horizon_ms {
                return Ok(out);
            }
            out.due_before += 1;
        }
    }
    Ok(out)
}

/// The earliest due time stored, when anything is scheduled.
pub fn first_due_s(txn: &ReadTransaction) -> Result<Option<u32>, FrontierError> {
    match txn.open_table(DUE) {
        Ok(t) => Ok(t.first().store()?.map(|(k, _)| k.value().0)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e).store(),
    }
}

#[cfg(test)]
mod tests;
