use super::*;
use crate::schedule::codec::{Revisit, put_entry};
use crawl_core::frontier::JobKind;
use crawl_core::recrawl::{Capture, DigestKey, Prior, Validators};

fn body(row: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_entry(
        &mut out,
        &Revisit {
            row,
            due_s: 1_000 + (row % 7) as u32,
            depth: (row % 3) as u32,
            kind: JobKind::Page,
            prior: Prior {
                visits: 1,
                fetched_at_ms: 1_700_000_000_000 + row,
                interval_ds: 864_000,
                validators: Validators {
                    etag: row.is_multiple_of(2).then(|| format!("\"{row}\"")),
                    last_modified_s: None,
                },
                capture: Some(Capture {
                    fetched_at_ms: 1_700_000_000_000 + row,
                    digest: DigestKey::default(),
                }),
            },
        },
    );
    out
}

fn build_rows(rows: &[u64]) -> (u64, Vec<u8>) {
    let mut b = Builder::<ByRow>::new(0);
    for &r in rows {
        b.item(r, &body(r));
    }
    b.finish().unwrap()
}

fn build_due(pairs: &[DuePair]) -> (DuePair, Vec<u8>) {
    let mut b = Builder::<DueOrder>::new(0);
    for &p in pairs {
        b.item(p, &[]);
    }
    b.finish().unwrap()
}

#[test]
fn chunks_parse_back_to_their_items() {
    let rows = [7, 8, 200, 100_000, 100_001];
    let (key, value) = build_rows(&rows);
    assert_eq!(key, 7);
    let spans = parse::<ByRow>(key, &value).unwrap();
    assert_eq!(spans.iter().map(|s| s.id).collect::<Vec<_>>(), rows);
    for s in &spans {
        assert_eq!(&value[s.body..s.end], body(s.id).as_slice());
    }
    assert_eq!(spans[0].start, 0);
    assert_eq!(spans.last().unwrap().end, value.len());
    let pairs = [(5, 9), (5, 10), (6, 1), (900, 4)];
    let (key, value) = build_due(&pairs);
    let spans = parse::<DueOrder>(key, &value).unwrap();
    assert_eq!(spans.iter().map(|s| s.id).collect::<Vec<_>>(), pairs);
    assert_eq!(
        parse::<DueOrder>((1, 1), &[]).unwrap().len(),
        1,
        "the key alone"
    );
    assert!(Builder::<ByRow>::new(0).finish().is_none());
}

/// Removing, inserting, replacing and cutting the front by copying what is around the change gives the very bytes of
/// a chunk built anew.
#[test]
fn copies_around_a_change_give_the_chunk_built_anew() {
    let rows: Vec<u64> = vec![3, 4, 9, 30, 31, 500, 501, 502, 9_000];
    let (key, value) = build_rows(&rows);
    let spans = parse::<ByRow>(key, &value).unwrap();
    for (i, &row) in rows.iter().enumerate() {
        let c = cut::<ByRow>(key, &value, row).unwrap();
        assert_eq!(c.index, i);
        assert_eq!(c.found, Some(spans[i]));
        assert_eq!(c.before, i.checked_sub(1).map(|j| spans[j]));
        assert_eq!(c.after, spans.get(i + 1).copied());
        let mut b = Builder::<ByRow>::new(0);
        b.prefix(&value, key, c.before.as_ref());
        b.rest(&value, c.after.as_ref());
        let mut rest = rows.clone();
        rest.remove(i);
        assert_eq!(b.finish().unwrap(), build_rows(&rest), "without {row}");
        // Its body replaced: the next item's difference is unchanged.
        let mut b = Builder::<ByRow>::new(0);
        b.prefix(&value, key, c.before.as_ref());
        b.item(row, &body(row + 1));
        b.rest_raw(&value, c.found.unwrap().end);
        let (k, v) = b.finish().unwrap();
        assert_eq!(k, key);
        let back = parse::<ByRow>(k, &v).unwrap();
        assert_eq!(&v[back[i].body..back[i].end], body(row + 1).as_slice());
        assert_eq!(back.iter().map(|s| s.id).collect::<Vec<_>>(), rows);
        // The front cut after i items.
        let mut b = Builder::<ByRow>::new(0);
        b.rest(&value, spans.get(i));
        assert_eq!(b.finish().unwrap(), build_rows(&rows[i..]), "from {i}");
    }
    for new in [1, 5, 29, 600, 10_000] {
        let c = cut::<ByRow>(key, &value, new).unwrap();
        assert_eq!(c.found, None);
        let mut b = Builder::<ByRow>::new(0);
        b.prefix(&value, key, c.before.as_ref());
        b.item(new, &body(new));
        b.rest(&value, c.after.as_ref());
        let mut with = rows.clone();
        with.insert(c.index, new);
        assert_eq!(b.finish().unwrap(), build_rows(&with), "with {new}");
    }
    let pairs = [(5, 9), (5, 10), (6, 1), (900, 4)];
    let (key, value) = build_due(&pairs);
    let c = cut::<DueOrder>(key, &value, (5, 10)).unwrap();
    let mut b = Builder::<DueOrder>::new(0);
    b.prefix(&value, key, c.before.as_ref());
    b.rest(&value, c.after.as_ref());
    assert_eq!(b.finish().unwrap(), build_due(&[(5, 9), (6, 1), (900, 4)]));
    let c = cut::<DueOrder>(key, &value, (5, 9)).unwrap();
    let mut b = Builder::<DueOrder>::new(0);
    b.prefix(&value, key, c.before.as_ref());
    b.rest(&value, c.after.as_ref());
    assert_eq!(b.finish().unwrap(), build_due(&pairs[1..]), "a new key");
}

#[test]
fn splits_are_about_equal_and_within_the_cap() {
    let rows: Vec<u64> = (0..300).map(|i| 1_000 + i * 3).collect();
    let bodies: Vec<Vec<u8>> = rows.iter().map(|&r| body(r)).collect();
    let items: Vec<(u64, &[u8])> = rows
        .iter()
        .zip(&bodies)
        .map(|(&r, b)| (r, b.as_slice()))
        .collect();
    let (_, whole) = build_rows(&rows);
    for parts in [2, 3] {
        let pieces = split::<ByRow>(&items, parts, whole.len() / 2 + 64);
        assert_eq!(pieces.len(), parts);
        let sizes: Vec<usize> = pieces.iter().map(|p| p.1.len()).collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min < 80, "{sizes:?}");
        let mut back = Vec::new();
        for (k, v) in &pieces {
            back.extend(parse::<ByRow>(*k, v).unwrap().iter().map(|s| s.id));
        }
        assert_eq!(back, rows);
    }
    // Pieces larger than the cap are halved.
    let pieces = split::<ByRow>(&items, 2, whole.len() / 5);
    assert!(pieces.len() >= 5);
    assert!(pieces.iter().all(|p| p.1.len() <= whole.len() / 5));
    assert!(pieces.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn damaged_chunks_are_errors_not_panics() {
    let (key, value) = build_rows(&[3, 4, 9]);
    let spans = parse::<ByRow>(key, &value).unwrap();
    let ends: Vec<usize> = spans.iter().map(|s| s.end).collect();
    for n in (0..value.len()).filter(|n| !ends.contains(n)) {
        assert!(parse::<ByRow>(key, &value[..n]).is_err(), "cut at {n}");
    }
    assert!(parse::<ByRow>(1, &[]).is_err(), "a row chunk has an entry");
    // A difference of 0: a row repeated.
    let mut bad = value[..spans[0].end].to_vec();
    bad.push(0);
    bad.extend_from_slice(&body(3));
    assert!(parse::<ByRow>(key, &bad).is_err());
    // A due pair running backwards cannot be written, nor read: differences are unsigned.
    for len in 0..40 {
        let junk: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
        let _ = parse::<ByRow>(5, &junk);
        let _ = parse::<DueOrder>((5, 5), &junk);
    }
}
