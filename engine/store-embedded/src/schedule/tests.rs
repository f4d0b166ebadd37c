//! The schedule's tables against a model (the store's use of them is tested with the store).

use super::codec::{Revisit, due_ms};
use super::*;
use crawl_core::frontier::JobKind;
use crawl_core::recrawl::Prior;
use redb::{Database, ReadableDatabase, ReadableTableMetadata};
use std::collections::BTreeMap;

fn revisit(row: u64, due_s: u32) -> Revisit {
    Revisit {
        row,
        due_s,
        depth: (row % 9) as u32,
        kind: if row.is_multiple_of(5) {
            JobKind::Embed
        } else {
            JobKind::Page
        },
        prior: Prior {
            visits: (row % 4) as u32 + 1,
            fetched_at_ms: due_ms(due_s).saturating_sub(3_600_000 + row),
            interval_ds: 36_000,
            ..Prior::default()
        },
    }
}

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Chunks of at most this many bytes in these tests: many chunks from few items.
const SMALL: usize = 200;

fn write<T>(db: &Database, f: impl FnOnce(&mut Schedule<'_>) -> T) -> T {
    let txn = db.begin_write().unwrap();
    let out = {
        let mut s = Schedule::with_chunk_bytes(&txn, SMALL).unwrap();
        f(&mut s)
    };
    txn.commit().unwrap();
    out
}

fn due_chunks(db: &Database) -> usize {
    let txn = db.begin_read().unwrap();
    txn.open_table(DUE).unwrap().len().unwrap() as usize
}

/// Puts (new rows, moves of scheduled ones, rows promoted before), takes, forgets and lookups in random order agree
/// with a plain map, across many chunks of both tables; what is taken comes oldest due first, at most as many as
/// asked, and keeps its entry until it is scheduled again or forgotten.
#[test]
fn the_tables_agree_with_a_model_through_puts_moves_takes_and_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("s.redb")).unwrap();
    let mut model: BTreeMap<u64, Revisit> = BTreeMap::new();
    // Taken and not yet scheduled again or forgotten.
    let mut pending: Vec<Revisit> = Vec::new();
    let mut rng = Lcg(7);
    let mut now = 1_000u32;
    let mut most_chunks = 0;
    for round in 0..40 {
        let mut puts: Vec<Revisit> = (0..250)
            .map(|_| revisit(rng.next(20_000) + 1, now + rng.next(400) as u32))
            .collect();
        // Half the pending revisits are scheduled again, the others finish for good.
        let forget: Vec<u64> = pending.iter().skip(1).step_by(2).map(|r| r.row).collect();
        puts.extend(
            pending
                .iter()
                .step_by(2)
                .map(|r| revisit(r.row, now + 300 + rng.next(100) as u32)),
        );
        let (fresh, forgotten) = write(&db, |s| {
            let fresh = puts.iter().filter(|r| s.put(r).unwrap()).count();
            let forgotten = forget.iter().filter(|&&row| s.forget(row).unwrap()).count();
            (fresh, forgotten)
        });
        let mut expect_fresh = 0;
        for r in puts {
            expect_fresh += usize::from(model.insert(r.row, r).is_none());
        }
        assert_eq!(fresh, expect_fresh, "round {round}: new rows counted once");
        // A row drawn again since it was taken is scheduled: forgetting it takes it out.
        let expect_forgotten = forget
            .iter()
            .filter(|row| model.remove(row).is_some())
            .count();
        assert_eq!(forgotten, expect_forgotten, "round {round}");
        now += 37;
        let max = 1 + rng.next(300) as usize;
        let taken = write(&db, |s| s.take_due(now, max).unwrap());
        let mut due: Vec<&Revisit> = model.values().filter(|r| r.due_s <= now).collect();
        due.sort_by_key(|r| (r.due_s, r.row));
        let expected: Vec<Revisit> = due.into_iter().take(max).cloned().collect();
        assert_eq!(taken, expected, "round {round}");
        most_chunks = most_chunks.max(due_chunks(&db));
        for r in &taken {
            model.remove(&r.row);
        }
        pending = taken;
        let txn = db.begin_write().unwrap();
        {
            let s = Schedule::with_chunk_bytes(&txn, SMALL).unwrap();
            for row in (1..20_000).step_by(97).chain(pending.iter().map(|r| r.row)) {
                assert_eq!(s.get(row).unwrap().as_ref(), model.get(&row), "row {row}");
            }
        }
        txn.abort().unwrap();
    }
    assert!(
        most_chunks > 3,
        "the test must cross chunks of the due table"
    );
    let all = write(&db, |s| s.take_due(u32::MAX, usize::MAX).unwrap());
    assert_eq!(all.len(), model.len());
    assert!(
        all.windows(2)
            .all(|w| (w[0].due_s, w[0].row) < (w[1].due_s, w[1].row))
    );
    assert_eq!(due_chunks(&db), 0);
    // Every row ever scheduled still has its entry until it is forgotten.
    let ever: std::collections::BTreeSet<u64> = write(&db, |s| {
        (1..=20_000)
            .filter(|&row| s.by_row.get(row).unwrap().is_some())
            .collect()
    });
    assert!(ever.len() >= all.len() + pending.len());
    write(&db, |s| {
        for &row in &ever {
            assert!(!s.forget(row).unwrap(), "none is scheduled");
        }
    });
    let txn = db.begin_read().unwrap();
    assert!(txn.open_table(BY_ROW).unwrap().is_empty().unwrap());
}

/// A pair earlier than every chunk's first one starts the first chunk; chunks split as they grow and the outlook
/// counts across them up to its cap.
#[test]
fn pairs_before_every_chunk_and_the_outlook_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("s.redb")).unwrap();
    write(&db, |s| {
        for row in 1..=20_000u64 {
            s.put(&revisit(row, 5_000 + (row % 50) as u32)).unwrap();
        }
    });
    assert!(due_chunks(&db) > 2);
    // Brought forward before everything (as a sitemap hint does).
    write(&db, |s| {
        let mut r = s.get(7_777).unwrap().unwrap();
        r.due_s = 10;
        assert!(!s.put(&r).unwrap(), "moved, not added");
    });
    let txn = db.begin_read().unwrap();
    let all = outlook(&txn, u64::MAX, u64::MAX).unwrap();
    assert_eq!(all.next_due_ms, Some(due_ms(10)));
    assert_eq!(all.due_before, 20_000, "one pair per row");
    // Rows due at 5,000 + 0..50, 400 of them in each second (row 7,777 was one of those at 5,027); it is at 10 now.
    let horizon = due_ms(5_010);
    assert_eq!(
        outlook(&txn, horizon, u64::MAX).unwrap().due_before,
        1 + 10 * 400
    );
    assert_eq!(outlook(&txn, horizon, 25).unwrap().due_before, 25);
    assert_eq!(
        outlook(&txn, due_ms(10), 99).unwrap().due_before,
        0,
        "strictly before"
    );
    assert_eq!(first_due_s(&txn).unwrap(), Some(10));
    drop(txn);
    let first = write(&db, |s| s.take_due(10, 5).unwrap());
    assert_eq!(first.iter().map(|r| r.row).collect::<Vec<_>>(), vec![7_777]);
}

#[test]
fn a_database_without_the_tables_has_an_empty_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("s.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    assert_eq!(outlook(&txn, u64::MAX, 10).unwrap(), Outlook::default());
    assert_eq!(first_due_s(&txn).unwrap(), None);
}

/// A row taken out of the schedule by itself (a forced re-fetch) is no longer due, keeps its entry as a promoted
/// one does (until it is scheduled again or forgotten), and is taken once.
#[test]
fn a_row_taken_alone_is_no_longer_due_and_keeps_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("s.redb")).unwrap();
    write(&db, |s| {
        for row in 1..=60 {
            assert!(s.put(&revisit(row, 1_000 + row as u32)).unwrap());
        }
    });
    let got = write(&db, |s| s.take(17).unwrap());
    assert_eq!(got, Some(revisit(17, 1_017)));
    write(&db, |s| {
        assert!(s.take(17).unwrap().is_none(), "taken once");
        assert!(s.take(99).unwrap().is_none(), "never scheduled");
        assert!(s.get(17).unwrap().is_none(), "not scheduled any more");
        assert!(s.holds(17).unwrap() && s.holds(18).unwrap() && !s.holds(99).unwrap());
        let due: Vec<u64> = s
            .take_due(u32::MAX, 100)
            .unwrap()
            .iter()
            .map(|r| r.row)
            .collect();
        assert_eq!(due.len(), 59);
        assert!(!due.contains(&17));
        assert!(s.forget(17).is_ok_and(|was_scheduled| !was_scheduled));
        assert!(!s.holds(17).unwrap());
    });
}
