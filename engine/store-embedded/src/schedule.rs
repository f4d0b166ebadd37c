//! The revisit schedule of the embedded frontier (continuous crawling): finished URLs that come due again, each
//! with its prior visit, found in due order for promotion and by row for sitemap hints.
//!
//! # Layout
//!
//! Two tables of chunks ([`chunk`]): sorted items packed in one value keyed by the first item's id, each later item
//! written as the difference of its id to the previous one, then its body. A B-tree entry per URL would cost its
//! key, a value offset and its share of the leaf's free space for every URL (a plain table keyed (host, due, row) was
//! measured at about 92 bytes per URL).
//! - `schedule_due`: (due time in seconds since 2020 (u32), row (u64)) of the chunk's first pair -> the later
//!   pairs, each as the difference of its due time (varint) and then the difference of its row when the due time is
//!   the same, else its row (varint): about 3 bytes a pair. Promotion takes pairs from the front.
//! - `schedule_rows`: the row (u64) of the chunk's first entry -> the entries in row order, each after the
//!   difference of its row to the previous one (varint, mostly 1 byte): its due time (4 bytes), a head byte (which
//!   fields follow, page or embed, the depth when below 7), visits and interval (varints), then as zigzag varints
//!   the due time minus the last fetch (ms), the last fetch minus Last-Modified (s), the last fetch minus the
//!   capture (ms, absent when the capture is the last fetch), the capture's digest key (8 bytes) and the ETag
//!   (length byte and text) ([`codec::put_entry`]): 26 bytes besides the ETag's text for a page with all three, a
//!   day's interval and a Last-Modified 40 days old.
//!
//! A chunk holds at most [`CHUNK_BYTES`]: with its key, one 4 KiB page. One larger than half a page fills a leaf of
//! its own, so leaves are as full as their chunks; a chunk that grows past the cap shares its items with a
//! neighbour, and two full neighbours become three (as a B*-tree splits), which keeps chunks two-thirds full or more
//! wherever they grow; an item after all others starts a new chunk, so chunks filled in order stay full. Changing a
//! chunk reads it up to the change and copies the rest as it is.
//!
//! A row is scheduled when its due pair is there. Its entry in `schedule_rows` outlives promotion (read then, not
//! written): the revisit's next schedule overwrites it in place, or, when the revisit finishes without one, it is
//! removed. All of it is written in the transaction of the commit, promotion or hint that changes it; a store
//! written before the schedule existed has neither table and reads as an empty schedule.
//!
//! # Measured
//!
//! `cargo bench -p crawl-store-embedded --bench schedule` (knobs `SCHED_SIZES`, `SCHED_HOSTS`, `SCHED_ETAGS`):
//! 1M URLs of 1,000 hosts fetched and scheduled again in commits of 500, intervals of an hour, a day and a week,
//! Last-Modified on 60 % of them and a capture on all; the store closed and compacted, its file compared with the
//! same crawl finished without a schedule.
//!
//! | URLs | with an ETag | file bytes per scheduled URL | ETag text per URL | stored bytes per URL | leaf fill |
//! | --- | --- | --- | --- | --- | --- |
//! | 1M | none | 35.1 | 0 | 27.8 | 80 % |
//! | 1M | 70 % (17 characters on average) | 51.1 | 12.1 | 40.6 | 80 % |
//! | 3M | 70 % | 50.3 | 12.1 | 40.6 | 82 % |
//!
//! The budget is 40 bytes a URL besides the ETag's text, which adds its length (over the leaf fill): 35.1 without
//! ETags, and 51.1 − 12.1 / 0.8 ≈ 36 with them. The same after every URL was promoted, fetched and scheduled again
//! (entries are overwritten in place). Without
//! the compaction the files differ by what redb's growth by doubling left free, which says nothing of the schedule.
//! Time on this machine (two cores shared with other work; about twice as much under heavier load), at 1M and 3M:
//! scheduling adds 24 and 44 µs a URL to the commits of finished URLs (which take 6.4 and 7.0 µs a URL without it),
//! promotion takes 46 and 66 µs a URL in calls of 1,000 (each a durable commit). Both are mostly pages read and
//! written: about two 4 KiB leaves per URL scheduled (its row chunk and its due chunk, in no useful order), and for
//! a promotion its row chunk and URL row read and one queue leaf per host it reaches.

mod chunk;
pub mod codec;

use crate::error::StoreResult;
use chunk::{Builder, ByRow, Cut, DueOrder, Packing, Span};
use codec::Revisit;
use crawl_core::frontier::codec::Reader;
use crawl_core::frontier::{FrontierError, Outlook, corrupt};
use redb::{ReadTransaction, ReadableTable, Table, TableDefinition, WriteTransaction};
use std::marker::PhantomData;
use std::ops::Bound;

pub const DUE: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("schedule_due");
pub const BY_ROW: TableDefinition<u64, &[u8]> = TableDefinition::new("schedule_rows");

/// The most bytes of a chunk: with its key and the leaf's header and value offset, one 4 KiB page. A chunk that
/// grows past it is split, so a chunk larger than half a page fills a leaf of its own.
pub const CHUNK_BYTES: usize = 4096 - 4 - 4 - 12;

/// A chunk as read: its key and its value.
type Raw<P> = (<P as Packing>::Id, Vec<u8>);

/// A chunk as the table hands it out.
type Found<'a, P> = (
    redb::AccessGuard<'a, <P as Packing>::K>,
    redb::AccessGuard<'a, &'static [u8]>,
);

fn parse<P: Packing>(first: P::Id, value: &[u8]) -> Result<Vec<Span<P::Id>>, FrontierError> {
    chunk::parse::<P>(first, value).map_err(|e| corrupt(format!("{} {first:?}", P::WHAT), e))
}

/// Where `id` is or goes in a chunk.
fn cut<P: Packing>(first: P::Id, value: &[u8], id: P::Id) -> Result<Cut<P::Id>, FrontierError> {
    chunk::cut::<P>(first, value, id).map_err(|e| corrupt(format!("{} {first:?}", P::WHAT), e))
}

/// A packed table open in a write transaction.
pub struct Chunked<'t, P: Packing> {
    table: Table<'t, P::K, &'static [u8]>,
    /// The most bytes of a chunk ([`CHUNK_BYTES`]; less in tests, to have many).
    cap: usize,
    _packing: PhantomData<P>,
}

impl<'t, P: Packing> Chunked<'t, P> {
    fn open(
        txn: &'t WriteTransaction,
        def: TableDefinition<P::K, &'static [u8]>,
        cap: usize,
    ) -> Result<Chunked<'t, P>, FrontierError> {
        Ok(Chunked {
            table: txn.open_table(def).store()?,
            cap,
            _packing: PhantomData,
        })
    }

    fn read(found: Option<Found<'_, P>>) -> Option<Raw<P>> {
        found.map(|(k, v)| (k.value(), v.value().to_vec()))
    }

    /// The chunk whose range holds `id`: the one with the greatest key at or before it.
    fn holding(&self, id: P::Id) -> Result<Option<Raw<P>>, FrontierError> {
        match self.table.range::<P::Id>(..=id).store()?.next_back() {
            Some(item) => Ok(Self::read(Some(item.store()?))),
            None => Ok(None),
        }
    }

    fn first(&self) -> Result<Option<Raw<P>>, FrontierError> {
        Ok(Self::read(self.table.first().store()?))
    }

    /// The first item's id.
    fn first_id(&self) -> Result<Option<P::Id>, FrontierError> {
        Ok(self.table.first().store()?.map(|(k, _)| k.value()))
    }

    /// The chunk after the one keyed `key`.
    fn next_chunk(&self, key: P::Id) -> Result<Option<Raw<P>>, FrontierError> {
        let mut range = self
            .table
            .range::<P::Id>((Bound::Excluded(key), Bound::Unbounded))
            .store()?;
        match range.next() {
            Some(item) => Ok(Self::read(Some(item.store()?))),
            None => Ok(None),
        }
    }

    /// The chunk before the one keyed `key`.
    fn prev_chunk(&self, key: P::Id) -> Result<Option<Raw<P>>, FrontierError> {
        match self.table.range::<P::Id>(..key).store()?.next_back() {
            Some(item) => Ok(Self::read(Some(item.store()?))),
            None => Ok(None),
        }
    }

    /// The body of the item `id`.
    fn get(&self, id: P::Id) -> Result<Option<Vec<u8>>, FrontierError> {
        let Some((first, value)) = self.holding(id)? else {
            return Ok(None);
        };
        let c = cut::<P>(first, &value, id)?;
        Ok(c.found.map(|s| value[s.body..s.end].to_vec()))
    }

    /// Writes a chunk built in place of the chunk keyed `old` (removed when it is no longer a chunk's key).
    fn store(&mut self, old: Option<P::Id>, built: Option<Raw<P>>) -> Result<(), FrontierError> {
        if let Some(old) = old
            && built.as_ref().map(|b| b.0) != Some(old)
        {
            self.table.remove(old).store()?;
        }
        if let Some((key, value)) = built {
            self.table.insert(key, value.as_slice()).store()?;
        }
        Ok(())
    }

    /// Adds an item, or replaces the body of the one with its id (returned).
    fn put(&mut self, id: P::Id, body: &[u8]) -> Result<Option<Vec<u8>>, FrontierError> {
        // An item before all others joins the first chunk.
        let found = match self.holding(id)? {
            Some(c) => Some(c),
            None => self.first()?,
        };
        let Some((first, value)) = found else {
            let mut b = Builder::<P>::new(body.len());
            b.item(id, body);
            return self.store(None, b.finish()).map(|()| None);
        };
        let c = cut::<P>(first, &value, id)?;
        let replaced = c.found.map(|s| value[s.body..s.end].to_vec());
        let mut b = Builder::<P>::new(value.len() + body.len() + 16);
        b.prefix(&value, first, c.before.as_ref());
        b.item(id, body);
        match c.found {
            // The next item's difference is to the same id: all that follows is copied.
            Some(f) => b.rest_raw(&value, f.end),
            None => b.rest(&value, c.after.as_ref()),
        }
        let alone = c.before.is_none() && c.after.is_none();
        if b.len() <= self.cap || alone {
            self.store(Some(first), b.finish())?;
            return Ok(replaced);
        }
        let next = self.next_chunk(first)?;
        if next.is_none() && c.after.is_none() && c.found.is_none() {
            // After all others: the last chunk stays as full as it is and a new one starts, so that chunks filled
            // in id order stay full.
            let mut b = Builder::<P>::new(body.len());
            b.item(id, body);
            self.store(None, b.finish())?;
            return Ok(replaced);
        }
        // The chunk's items with the new one, then a neighbour's.
        let spans = parse::<P>(first, &value)?;
        let after = c.index + usize::from(c.found.is_some());
        let mut items: Vec<(P::Id, &[u8])> = spans[..c.index]
            .iter()
            .map(|s| (s.id, &value[s.body..s.end]))
            .collect();
        items.push((id, body));
        items.extend(spans[after..].iter().map(|s| (s.id, &value[s.body..s.end])));
        self.overflow(first, items, next)?;
        Ok(replaced)
    }

    /// A chunk grown past the cap shares its items with the neighbour that has more room, both ending up about as
    /// full; when the two hold more than two chunks can, they become three (as a B*-tree splits), so chunks stay
    /// two-thirds full or more while they grow anywhere.
    fn overflow(
        &mut self,
        first: P::Id,
        items: Vec<(P::Id, &[u8])>,
        next: Option<Raw<P>>,
    ) -> Result<(), FrontierError> {
        let prev = self.prev_chunk(first)?;
        let neighbour = match (&prev, &next) {
            (Some(p), Some(n)) if p.1.len() < n.1.len() => prev,
            (Some(_), None) => prev,
            _ => next,
        };
        let mut old = vec![first];
        let mut size: usize = items.iter().map(|(_, b)| b.len() + 2).sum();
        let mut items: Vec<(P::Id, &[u8])> = items;
        let spans;
        if let Some((key, value)) = &neighbour {
            spans = parse::<P>(*key, value)?;
            items.extend(spans.iter().map(|s| (s.id, &value[s.body..s.end])));
            items.sort_by_key(|x| x.0);
            size += value.len();
            old.push(*key);
        }
        let parts = match neighbour {
            None => 2,
            Some(_) if size <= 2 * self.cap * 15 / 16 => 2,
            Some(_) => 3,
        };
        let pieces = chunk::split::<P>(&items, parts, self.cap);
        for k in old {
            if !pieces.iter().any(|p| p.0 == k) {
                self.table.remove(k).store()?;
            }
        }
        for (key, value) in pieces {
            self.table.insert(key, value.as_slice()).store()?;
        }
        Ok(())
    }

    /// Takes the item `id` out; its body.
    fn take(&mut self, id: P::Id) -> Result<Option<Vec<u8>>, FrontierError> {
        let Some((first, value)) = self.holding(id)? else {
            return Ok(None);
        };
        let c = cut::<P>(first, &value, id)?;
        let Some(found) = c.found else {
            return Ok(None);
        };
        let mut b = Builder::<P>::new(value.len());
        b.prefix(&value, first, c.before.as_ref());
        b.rest(&value, c.after.as_ref());
        self.store(Some(first), b.finish())?;
        Ok(Some(value[found.body..found.end].to_vec()))
    }

    /// Takes up to `max` items from the front while `take` says so; their ids.
    fn pop_front(
        &mut self,
        max: usize,
        take: impl Fn(P::Id) -> bool,
    ) -> Result<Vec<P::Id>, FrontierError> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some((first, value)) = self.first()? else {
                break;
            };
            let want = max - out.len();
            let mut seen = 0;
            let spans = chunk::parse_while::<P>(first, &value, |s| {
                seen += 1;
                seen <= want && take(s.id)
            })
            .map_err(|e| corrupt(format!("{} {first:?}", P::WHAT), e))?;
            let n = spans.iter().take_while(|s| take(s.id)).count().min(want);
            if n == 0 {
                break;
            }
            out.extend(spans[..n].iter().map(|s| s.id));
            let mut b = Builder::<P>::new(value.len());
            b.rest(&value, spans.get(n));
            self.store(Some(first), b.finish())?;
            if n < spans.len() {
                break;
            }
        }
        Ok(out)
    }
}

/// The schedule's tables, open in a write transaction.
pub struct Schedule<'t> {
    due: Chunked<'t, DueOrder>,
    by_row: Chunked<'t, ByRow>,
}

impl<'t> Schedule<'t> {
    pub fn open(txn: &'t WriteTransaction) -> Result<Schedule<'t>, FrontierError> {
        Self::with_chunk_bytes(txn, CHUNK_BYTES)
    }

    /// The tables with chunks of at most `cap` bytes.
    fn with_chunk_bytes(
        txn: &'t WriteTransaction,
        cap: usize,
    ) -> Result<Schedule<'t>, FrontierError> {
        Ok(Schedule {
            due: Chunked::open(txn, DUE, cap)?,
            by_row: Chunked::open(txn, BY_ROW, cap)?,
        })
    }

    /// Schedules a row; a row scheduled already is moved to the new due time and prior. Returns true when the row
    /// was not scheduled before.
    pub fn put(&mut self, r: &Revisit) -> Result<bool, FrontierError> {
        let mut body = Vec::with_capacity(40);
        codec::put_entry(&mut body, r);
        let pair = (r.due_s, r.row);
        if let Some(old) = self.by_row.put(r.row, &body)? {
            // The row's last entry: scheduled still when its due pair is there, else promoted since (a pair before
            // the first one is not looked for: promotion took it).
            let old_due = codec::entry_due_s(&old).map_err(|e| entry_corrupt(r.row, e))?;
            if old_due == r.due_s {
                if self.due.get(pair)?.is_some() {
                    return Ok(false);
                }
            } else if self.due.first_id()?.is_some_and(|f| f <= (old_due, r.row))
                && self.due.take((old_due, r.row))?.is_some()
            {
                self.due.put(pair, &[])?;
                return Ok(false);
            }
        }
        self.due.put(pair, &[])?;
        Ok(true)
    }

    /// The row's entry, when it is scheduled (not when it was promoted and is pending).
    pub fn get(&self, row: u64) -> Result<Option<Revisit>, FrontierError> {
        let Some(body) = self.by_row.get(row)? else {
            return Ok(None);
        };
        let r = read_entry(&body, row)?;
        Ok(self.due.get((r.due_s, row))?.map(|_| r))
    }

    /// Takes the row out of the schedule now, whenever it is due (a forced re-fetch): as a promotion does, its
    /// entry stays in its row chunk (the revisit is pending). None when the row is not scheduled.
    pub fn take(&mut self, row: u64) -> Result<Option<Revisit>, FrontierError> {
        let Some(body) = self.by_row.get(row)? else {
            return Ok(None);
        };
        let r = read_entry(&body, row)?;
        Ok(self.due.take((r.due_s, row))?.map(|_| r))
    }

    /// True when the row has an entry, scheduled or promoted (a revisit pending in its queue).
    pub fn holds(&self, row: u64) -> Result<bool, FrontierError> {
        Ok(self.by_row.get(row)?.is_some())
    }

    /// Takes up to `max` entries due at or before `upto_s` out of the schedule, oldest first. Their entries stay
    /// in their row chunks (read, not written) until the revisit is scheduled again or [`forget`](Self::forget)s.
    pub fn take_due(&mut self, upto_s: u32, max: usize) -> Result<Vec<Revisit>, FrontierError> {
        let pairs = self.due.pop_front(max, |p| p.0 <= upto_s)?;
        let mut out = Vec::with_capacity(pairs.len());
        for (_, row) in pairs {
            match self.by_row.get(row)? {
                Some(body) => out.push(read_entry(&body, row)?),
                None => {
                    return Err(corrupt(
                        format!("schedule entry of row {row}"),
                        "due but missing from the row chunks",
                    ));
                }
            }
        }
        Ok(out)
    }

    /// A revisit that finished without being scheduled again: its entry goes. Returns true when it was scheduled
    /// (never, when the caller is right that the revisit was pending).
    pub fn forget(&mut self, row: u64) -> Result<bool, FrontierError> {
        let Some(old) = self.by_row.take(row)? else {
            return Ok(false);
        };
        let due = codec::entry_due_s(&old).map_err(|e| entry_corrupt(row, e))?;
        Ok(self.due.take((due, row))?.is_some())
    }
}

fn entry_corrupt(row: u64, e: impl std::fmt::Display) -> FrontierError {
    corrupt(format!("schedule entry of row {row}"), e)
}

fn read_entry(body: &[u8], row: u64) -> Result<Revisit, FrontierError> {
    codec::read_entry(&mut Reader::new(body), row).map_err(|e| entry_corrupt(row, e))
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
        for p in parse::<DueOrder>(first, v.value())? {
            if out.due_before >= cap || codec::due_ms(p.id.0) >= horizon_ms {
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

/// The rows that have an entry, scheduled or promoted and pending.
#[cfg(test)]
pub fn rows_with_entries(txn: &ReadTransaction) -> Vec<u64> {
    let mut out = Vec::new();
    if let Ok(t) = txn.open_table(BY_ROW) {
        for item in t.iter().into_iter().flatten().flatten() {
            let (k, v) = item;
            let spans = chunk::parse::<ByRow>(k.value(), v.value()).unwrap_or_default();
            out.extend(spans.iter().map(|s| s.id));
        }
    }
    out
}

#[cfg(test)]
mod tests;
