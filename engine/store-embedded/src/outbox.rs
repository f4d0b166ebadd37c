//! Rows of the embedded frontier's outbox: the JSONL lines a commit made durable and the output file may not hold
//! yet. One row per commit holds all of that commit's lines (one B-tree write instead of one per line), keyed by
//! the smallest record number in it. Rows written before batching held one line each, keyed by its number; both
//! forms are read. A batch row starts with [`BATCH`] (a JSON line starts with `{`), then per line its number and
//! length as varints and its bytes.

use crate::error::StoreResult;
use redb::ReadableTable;

use crawl_core::frontier::FrontierError;
use crawl_core::frontier::codec::{DecodeError, Reader, put_varint};

/// First byte of a batch row.
const BATCH: u8 = 0;

/// The row holding `lines` (record number, line), and its key; `None` for no lines.
pub fn encode(lines: &[(u64, Vec<u8>)]) -> Option<(u64, Vec<u8>)> {
    let key = lines.iter().map(|(seq, _)| *seq).min()?;
    let size: usize = lines.iter().map(|(_, l)| l.len() + 12).sum();
    let mut out = Vec::with_capacity(size + 1);
    out.push(BATCH);
    for (seq, line) in lines {
        put_varint(&mut out, *seq);
        put_varint(&mut out, line.len() as u64);
        out.extend_from_slice(line);
    }
    Some((key, out))
}

/// The lines of the row stored under `key`.
pub fn decode(key: u64, row: &[u8]) -> Result<Vec<(u64, &[u8])>, DecodeError> {
    match row.split_first() {
        Some((&BATCH, rest)) => {
            let mut r = Reader::new(rest);
            let mut lines = Vec::new();
            while !r.is_empty() {
                let seq = r.varint()?;
                let len = usize::try_from(r.varint()?).map_err(|_| DecodeError("line length"))?;
                lines.push((seq, r.bytes(len)?));
            }
            Ok(lines)
        }
        Some(_) => Ok(vec![(key, row)]),
        None => Err(DecodeError("empty outbox row")),
    }
}

/// Record numbers and lines.
type Lines = Vec<(u64, Vec<u8>)>;

/// Removes the outbox lines numbered up to `upto` (the output holds them): rows with only such lines are deleted,
/// a row that also holds later ones is written again with those alone. Returns the number of lines removed.
pub fn trim(
    outbox: &mut redb::Table<'_, u64, &'static [u8]>,
    upto: u64,
) -> Result<u64, FrontierError> {
    // Rows are read in place: only the lines a row keeps (of the one row that straddles `upto`) are copied.
    let mut rows: Vec<(u64, Lines)> = Vec::new();
    let mut trimmed = 0u64;
    for item in outbox.range(..=upto).store()? {
        let (k, v) = item.store()?;
        let key = k.value();
        let lines = decode(key, v.value()).map_err(corrupt)?;
        let total = lines.len();
        let kept: Lines = lines
            .into_iter()
            .filter(|(seq, _)| *seq > upto)
            .map(|(seq, line)| (seq, line.to_vec()))
            .collect();
        trimmed += (total - kept.len()) as u64;
        rows.push((key, kept));
    }
    for (key, kept) in rows {
        outbox.remove(key).store()?;
        if let Some((k, row)) = encode(&kept) {
            outbox.insert(k, row.as_slice()).store()?;
        }
    }
    Ok(trimmed)
}

/// A row that cannot be read.
pub fn corrupt(e: DecodeError) -> FrontierError {
    FrontierError::Corrupt {
        what: "outbox row".into(),
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_single_rows_still_read() {
        let lines = vec![
            (7, b"{\"a\":1}\n".to_vec()),
            (5, b"{}\n".to_vec()),
            (300, vec![b'x'; 200]),
        ];
        let (key, row) = encode(&lines).unwrap();
        assert_eq!(key, 5);
        let back = decode(key, &row).unwrap();
        assert_eq!(
            back,
            lines
                .iter()
                .map(|(s, l)| (*s, l.as_slice()))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            decode(9, b"{\"old\":1}\n").unwrap(),
            vec![(9, &b"{\"old\":1}\n"[..])]
        );
        assert!(encode(&[]).is_none());
    }

    #[test]
    fn trimming_deletes_written_rows_and_rewrites_the_one_that_straddles() {
        const T: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("outbox");
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("o.redb")).unwrap();
        let line = |n: u64| format!("{{\"n\":{n}}}\n").into_bytes();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(T).unwrap();
            // A row written before batching (one line, no batch byte), then two commits' rows.
            t.insert(1, line(1).as_slice()).unwrap();
            for lines in [[2, 3, 4], [5, 6, 7]] {
                let lines: Vec<_> = lines.iter().map(|&n| (n, line(n))).collect();
                let (k, row) = encode(&lines).unwrap();
                t.insert(k, row.as_slice()).unwrap();
            }
            assert_eq!(trim(&mut t, 5).unwrap(), 5);
            let left: Vec<(u64, Lines)> = t
                .iter()
                .unwrap()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    let lines = decode(k.value(), v.value()).unwrap();
                    let lines = lines.into_iter().map(|(s, l)| (s, l.to_vec())).collect();
                    (k.value(), lines)
                })
                .collect();
            assert_eq!(left, vec![(6, vec![(6, line(6)), (7, line(7))])]);
            assert_eq!(trim(&mut t, 5).unwrap(), 0, "nothing left to trim");
            assert_eq!(trim(&mut t, 7).unwrap(), 2);
            assert_eq!(t.iter().unwrap().count(), 0);
        }
        txn.commit().unwrap();
    }

    #[test]
    fn damaged_rows_are_errors_not_panics() {
        let (_, row) = encode(&[(1, b"{}\n".to_vec())]).unwrap();
        for cut in 2..row.len() {
            assert!(decode(1, &row[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode(1, &[]).is_err());
        assert!(
            decode(
                1,
                &[
                    BATCH, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f
                ]
            )
            .is_err()
        );
    }
}
