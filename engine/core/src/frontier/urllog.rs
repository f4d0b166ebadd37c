//! The embedded frontier's log of newly stored URLs.
//!
//! A new URL is not inserted into the fingerprint-keyed URL table at once: that is an insert at a random key,
//! which makes redb copy and rebuild a whole leaf (and its branch pages) for almost every new URL. It is appended
//! to `url_log` instead, keyed by its discovery sequence number (the end of one B-tree), in the same transaction as
//! its queue entry, and indexed in memory by fingerprint ([`Staged`]). When the log holds enough URLs, one commit
//! moves them all into the URL table in fingerprint order ([`merge`]), where neighbouring keys share leaves, and
//! drops the log. Opening a store reads the log back (it is bounded by the merge threshold).
//!
//! A log row holds the URL's fingerprint, its slot under that fingerprint and the slot's encoding as in the URL
//! table, so merging appends bytes to the row.

use super::codec::{self, DecodeError};
use super::fphash::FpMap;
use super::{Fp, FrontierError};
use redb::{ReadableTable, Table, TableDefinition};

pub(super) const URL_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("url_log");

/// URLs the log holds before a commit merges it into the URL table. Bounds the memory of the index (about 48
/// bytes a URL) and the time opening a store spends reading the log back.
pub(super) const MERGE_AT: usize = 32_768;

/// Where a staged URL is: its slot under its fingerprint and its key in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StagedUrl {
    pub slot: u8,
    pub seq: u64,
}

#[derive(Debug, Clone)]
enum Entries {
    One(StagedUrl),
    Many(Vec<StagedUrl>),
}

/// The in-memory index of the log: fingerprint -> the URLs staged under it (almost always one).
#[derive(Debug, Default, Clone)]
pub(super) struct Staged {
    map: FpMap<Fp, Entries>,
    len: usize,
}

impl Staged {
    pub fn len(&self) -> usize {
        self.len
    }

    /// The URLs staged under `fp`, in slot order.
    pub fn get(&self, fp: Fp) -> &[StagedUrl] {
        match self.map.get(&fp) {
            None => &[],
            Some(Entries::One(e)) => std::slice::from_ref(e),
            Some(Entries::Many(v)) => v,
        }
    }

    pub fn push(&mut self, fp: Fp, e: StagedUrl) {
        self.len += 1;
        match self.map.get_mut(&fp) {
            None => {
                self.map.insert(fp, Entries::One(e));
            }
            Some(Entries::Many(v)) => v.push(e),
            Some(one @ Entries::One(_)) => {
                if let Entries::One(first) = *one {
                    *one = Entries::Many(vec![first, e]);
                }
            }
        }
    }

    /// Adds everything in `other` (staged after everything here).
    pub fn extend(&mut self, other: Staged) {
        for (fp, entries) in other.map {
            match entries {
                Entries::One(e) => self.push(fp, e),
                Entries::Many(v) => v.into_iter().for_each(|e| self.push(fp, e)),
            }
        }
    }

    pub fn clear(&mut self) {
        self.map = FpMap::default();
        self.len = 0;
    }

    /// The fingerprints staged.
    pub fn fps(&self) -> impl Iterator<Item = Fp> + '_ {
        self.map.keys().copied()
    }
}

/// A log row: fingerprint, slot, then the slot's encoding.
pub(super) fn encode(fp: Fp, slot: u8, slot_bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + slot_bytes.len());
    out.extend_from_slice(&fp.to_le_bytes());
    out.push(slot);
    out.extend_from_slice(slot_bytes);
    out
}

/// Reads a log row back: fingerprint, slot and the slot's encoding.
pub(super) fn decode(row: &[u8]) -> Result<(Fp, u8, &[u8]), DecodeError> {
    if row.len() < 10 {
        return Err(DecodeError("url log row too short"));
    }
    let mut fp = [0u8; 8];
    fp.copy_from_slice(&row[..8]);
    Ok((u64::from_le_bytes(fp), row[8], &row[9..]))
}

/// Reads the whole log into an index (opening a store).
pub(super) fn load(log: &impl ReadableTable<u64, &'static [u8]>) -> Result<Staged, FrontierError> {
    let mut staged = Staged::default();
    let mut rows: Vec<(Fp, StagedUrl)> = Vec::new();
    for item in log.iter()? {
        let (k, v) = item?;
        let (fp, slot, _) = decode(v.value()).map_err(bad_row)?;
        rows.push((
            fp,
            StagedUrl {
                slot,
                seq: k.value(),
            },
        ));
    }
    // Slot order within a fingerprint is log order, which is key order: push as read.
    for (fp, e) in rows {
        staged.push(fp, e);
    }
    Ok(staged)
}

/// Moves every URL of the log into the URL table, in fingerprint order, appending each to its fingerprint's row.
/// The caller drops the log afterwards (in the same transaction). Returns the number of URLs moved.
pub(super) fn merge(
    urls: &mut Table<u64, &'static [u8]>,
    log: &Table<u64, &'static [u8]>,
) -> Result<usize, FrontierError> {
    let mut rows: Vec<(Fp, u8, Vec<u8>)> = Vec::new();
    for item in log.iter()? {
        let (_, v) = item?;
        let (fp, slot, bytes) = decode(v.value()).map_err(bad_row)?;
        rows.push((fp, slot, bytes.to_vec()));
    }
    rows.sort_unstable_by_key(|(fp, slot, _)| (*fp, *slot));
    for group in rows.chunk_by(|a, b| a.0 == b.0) {
        let fp = group[0].0;
        let mut row = urls
            .get(fp)?
            .map(|v| v.value().to_vec())
            .unwrap_or_default();
        let have = codec::count_slots(&row).map_err(|e| FrontierError::Corrupt {
            what: "url slots".into(),
            detail: e.to_string(),
        })?;
        for (i, (_, slot, bytes)) in group.iter().enumerate() {
            if usize::from(*slot) != have + i {
                return Err(FrontierError::Corrupt {
                    what: format!("url {fp:016x}"),
                    detail: format!("logged slot {slot} does not follow the {} stored", have + i),
                });
            }
            row.extend_from_slice(bytes);
        }
        urls.insert(fp, row.as_slice())?;
    }
    Ok(rows.len())
}

/// The URL log of a read transaction (None when there is none: nothing logged since the last merge).
pub(super) fn open_log(
    txn: &redb::ReadTransaction,
) -> Result<Option<redb::ReadOnlyTable<u64, &'static [u8]>>, FrontierError> {
    match txn.open_table(URL_LOG) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether one of the `logged` URLs (staged under one fingerprint) is `url`.
pub(super) fn logged_has<'a>(
    log: &impl ReadableTable<u64, &'static [u8]>,
    logged: impl Iterator<Item = &'a StagedUrl>,
    url: &str,
) -> Result<bool, FrontierError> {
    for e in logged {
        let Some(row) = log.get(e.seq)? else {
            return Err(FrontierError::Corrupt {
                what: format!("url log {}", e.seq),
                detail: "missing".into(),
            });
        };
        let (_, _, bytes) = decode(row.value()).map_err(bad_row)?;
        if codec::find_slot(bytes, url)
            .map_err(|e| FrontierError::Corrupt {
                what: "url slots".into(),
                detail: e.to_string(),
            })?
            .is_some()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn bad_row(e: DecodeError) -> FrontierError {
    FrontierError::Corrupt {
        what: "url log row".into(),
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back() {
        let row = encode(0xdead_beef, 3, b"\x01abc");
        assert_eq!(
            decode(&row).expect("row"),
            (0xdead_beef, 3, &b"\x01abc"[..])
        );
        assert!(decode(&row[..9]).is_err());
    }

    #[test]
    fn index_keeps_slot_order_per_fingerprint() {
        let mut s = Staged::default();
        let e = |slot, seq| StagedUrl { slot, seq };
        s.push(7, e(0, 10));
        s.push(9, e(2, 11));
        let mut later = Staged::default();
        later.push(7, e(1, 12));
        later.push(7, e(2, 13));
        s.extend(later);
        assert_eq!(s.len(), 4);
        assert_eq!(s.get(7), &[e(0, 10), e(1, 12), e(2, 13)]);
        assert_eq!(s.get(9), &[e(2, 11)]);
        assert!(s.get(8).is_empty());
        let mut fps: Vec<_> = s.fps().collect();
        fps.sort_unstable();
        assert_eq!(fps, vec![7, 9]);
        s.clear();
        assert_eq!(s.len(), 0);
        assert!(s.get(7).is_empty());
    }

    fn merged(
        rows: &[(u64, Fp, u8)],
        stored: &[(Fp, &[u8])],
    ) -> Result<Vec<(Fp, Vec<u8>)>, FrontierError> {
        const URLS: TableDefinition<u64, &[u8]> = TableDefinition::new("url_ids");
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let res = {
            let mut urls = txn.open_table(URLS).unwrap();
            let mut log = txn.open_table(URL_LOG).unwrap();
            for (fp, bytes) in stored {
                urls.insert(*fp, *bytes).unwrap();
            }
            for (seq, fp, slot) in rows {
                let one = codec::UrlSlots {
                    slots: vec![codec::Slot {
                        state: codec::PENDING,
                        url: format!("http://a/{seq}"),
                        parent: codec::Parent::None,
                    }],
                };
                log.insert(*seq, encode(*fp, *slot, &one.encode()).as_slice())
                    .unwrap();
            }
            merge(&mut urls, &log).map(|_| {
                urls.iter()
                    .unwrap()
                    .map(|r| {
                        let (k, v) = r.unwrap();
                        (k.value(), v.value().to_vec())
                    })
                    .collect()
            })
        };
        res
    }

    #[test]
    fn merge_appends_slots_in_order_and_refuses_gaps() {
        let existing = codec::UrlSlots {
            slots: vec![codec::Slot {
                state: codec::PENDING,
                url: "http://a/old".into(),
                parent: codec::Parent::None,
            }],
        }
        .encode();
        // Log order is not fingerprint order; fingerprint 5 already has one slot stored.
        let rows = merged(
            &[(1, 9, 0), (2, 5, 1), (3, 9, 1), (4, 5, 2)],
            &[(5, &existing)],
        )
        .unwrap();
        let urls = |fp: Fp| {
            let (_, v) = rows.iter().find(|(k, _)| *k == fp).unwrap();
            codec::UrlSlots::decode(v)
                .unwrap()
                .slots
                .into_iter()
                .map(|s| s.url)
                .collect::<Vec<_>>()
        };
        assert_eq!(urls(5), ["http://a/old", "http://a/2", "http://a/4"]);
        assert_eq!(urls(9), ["http://a/1", "http://a/3"]);
        // A logged slot that does not follow what is stored is a corrupt store, not a silent overwrite.
        let err = merged(&[(1, 5, 0)], &[(5, &existing)]).unwrap_err();
        assert!(err.to_string().contains("does not follow"), "{err}");
    }
}
