use super::*;

fn ok(pairs: &[(u64, u64)]) -> impl Iterator<Item = Result<(u64, u64), FrontierError>> + '_ {
    pairs.iter().map(|p| Ok(*p))
}

/// Pairs with runs of equal fingerprints long enough to cross block boundaries, and gaps between them.
fn sample(seed: u64, n: usize) -> Vec<(u64, u64)> {
    let mut x = seed;
    let mut out = Vec::new();
    let mut row = seed * 1_000_000;
    while out.len() < n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let fp = (x >> 20) * 3;
        let repeats = if x.is_multiple_of(17) {
            300
        } else {
            1 + (x % 3) as usize
        };
        for _ in 0..repeats {
            row += 1;
            out.push((fp, row));
        }
    }
    out.sort_unstable();
    out
}

fn rows_of(pairs: &[(u64, u64)], fp: u64) -> Vec<u64> {
    pairs.iter().filter(|p| p.0 == fp).map(|p| p.1).collect()
}

#[test]
fn lookups_find_every_row_of_a_fingerprint_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = sample(1, 5000);
    let run = Run::create(dir.path(), 7, pairs.len() as u64, ok(&pairs)).unwrap();
    let run = Run::open(dir.path(), run.id(), run.count()).unwrap();
    let mut probes: Vec<u64> = pairs.iter().map(|p| p.0).collect();
    probes.dedup();
    // Fingerprints between, before and after the stored ones.
    probes.extend(pairs.iter().map(|p| p.0 + 1).take(500));
    probes.extend([0, u64::MAX]);
    for fp in probes {
        let mut got = Vec::new();
        run.rows(fp, &mut got).unwrap();
        assert_eq!(got, rows_of(&pairs, fp), "fp {fp}");
    }
    let mut long = 0;
    for w in pairs.chunk_by(|a, b| a.0 == b.0) {
        long += usize::from(w.len() > BLOCK);
    }
    assert!(
        long > 0,
        "the sample must hold a fingerprint longer than a block"
    );
}

#[test]
fn an_empty_run_and_a_run_of_one_block_answer() {
    let dir = tempfile::tempdir().unwrap();
    let empty = Run::create(dir.path(), 1, 0, ok(&[])).unwrap();
    let mut got = Vec::new();
    empty.rows(5, &mut got).unwrap();
    assert!(got.is_empty());
    assert_eq!(empty.pairs().count(), 0);
    let one = Run::create(dir.path(), 2, 2, ok(&[(5, 1), (9, 2)])).unwrap();
    one.rows(5, &mut got).unwrap();
    one.rows(9, &mut got).unwrap();
    one.rows(7, &mut got).unwrap();
    assert_eq!(got, vec![1, 2]);
}

#[test]
fn merge_gives_the_sorted_union_and_checks_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let a = sample(2, 3000);
    let b = sample(3, 1200);
    let ra = Run::create(dir.path(), 1, a.len() as u64, ok(&a)).unwrap();
    let rb = Run::create(dir.path(), 2, b.len() as u64, ok(&b)).unwrap();
    let m = merge(dir.path(), 3, &ra, &rb).unwrap();
    let mut all = [a.clone(), b.clone()].concat();
    all.sort_unstable();
    let got: Vec<(u64, u64)> = m.pairs().map(|p| p.unwrap()).collect();
    assert_eq!(got, all);
    assert_eq!(m.count(), all.len() as u64);

    // A flipped byte in a body is found by the merge that reads it (lookups read blocks as they are): by the
    // order of the pairs or, at the end, by the checksum.
    let path = run_path(dir.path(), 1);
    let mut raw = std::fs::read(&path).unwrap();
    raw[HEADER + 100] ^= 0x40;
    std::fs::write(&path, raw).unwrap();
    let ra = Run::open(dir.path(), 1, a.len() as u64).unwrap();
    let err = merge(dir.path(), 4, &ra, &rb).unwrap_err().to_string();
    assert!(err.contains("is corrupt"), "{err}");
    assert!(!run_path(dir.path(), 4).exists());
    // A flip that keeps the order is found by the checksum.
    let mut raw = std::fs::read(&path).unwrap();
    raw[HEADER + 100] ^= 0x40;
    raw[HEADER + 8] ^= 0x01;
    std::fs::write(&path, raw).unwrap();
    let ra = Run::open(dir.path(), 1, a.len() as u64).unwrap();
    let err = merge(dir.path(), 4, &ra, &rb).unwrap_err().to_string();
    assert!(err.contains("body checksum"), "{err}");
}

#[test]
fn opening_refuses_a_file_that_does_not_match_its_list_entry() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = sample(4, 700);
    Run::create(dir.path(), 1, pairs.len() as u64, ok(&pairs)).unwrap();
    let err = Run::open(dir.path(), 1, pairs.len() as u64 + 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("length"), "{err}");
    let path = run_path(dir.path(), 1);
    let mut raw = std::fs::read(&path).unwrap();
    let last = raw.len() - 3;
    raw[last] ^= 1;
    std::fs::write(&path, &raw).unwrap();
    let err = Run::open(dir.path(), 1, pairs.len() as u64)
        .unwrap_err()
        .to_string();
    assert!(err.contains("index checksum"), "{err}");
    raw.truncate(raw.len() - 8);
    std::fs::write(&path, &raw).unwrap();
    assert!(Run::open(dir.path(), 1, pairs.len() as u64).is_err());
    assert!(
        Run::open(dir.path(), 9, 0).is_err(),
        "a listed run that is missing"
    );
    // A list entry whose count is out of any range is an error, not an overflow.
    for count in [u64::MAX, u64::MAX / 16, u64::MAX / 2] {
        assert!(Run::open(dir.path(), 1, count).is_err());
    }
}

#[test]
fn pairs_out_of_order_are_refused_and_leave_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let err = Run::create(dir.path(), 1, 2, ok(&[(5, 1), (4, 2)])).unwrap_err();
    assert!(err.to_string().contains("out of order"), "{err}");
    assert!(!run_path(dir.path(), 1).exists());
    let err = Run::create(dir.path(), 1, 3, ok(&[(4, 1), (5, 2)])).unwrap_err();
    assert!(err.to_string().contains("count"), "{err}");
    assert!(!run_path(dir.path(), 1).exists());
}

#[test]
fn merging_by_size_keeps_the_run_count_logarithmic() {
    let mut counts: Vec<u64> = Vec::new();
    let mut rewritten = 0u64;
    let flush = 16_384u64;
    for flushes in 1..=2000u64 {
        counts.push(flush);
        while should_merge(&counts) {
            let newer = counts.pop().unwrap();
            let older = counts.pop().unwrap();
            rewritten += older + newer;
            counts.push(older + newer);
        }
        assert_eq!(counts.iter().sum::<u64>(), flushes * flush);
        let bound = 2 + (64 - flushes.leading_zeros()) as usize;
        assert!(
            counts.len() <= bound,
            "{} runs after {flushes}",
            counts.len()
        );
        assert!(counts.windows(2).all(|w| w[0] > 2 * w[1]));
    }
    // Each pair is rewritten about log2(2000) times, not once per flush.
    let per_pair = rewritten as f64 / (2000 * flush) as f64;
    assert!(per_pair < 16.0, "{per_pair}");
}

#[test]
fn the_run_list_round_trips_and_a_torn_one_is_refused() {
    let list = vec![(1, 70_000), (5, 16_384)];
    assert_eq!(decode_list(&encode_list(&list)).unwrap(), list);
    assert_eq!(decode_list(&[]).unwrap(), vec![]);
    assert!(decode_list(&[0u8; 17]).is_none());
}

#[test]
fn strays_are_removed_and_listed_runs_kept() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "fp-1.run",
        "fp-2.run",
        "fp-3.run.tmp",
        "fp-x.run",
        "frontier.redb",
        "fp-notes",
    ] {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    remove_strays(dir.path(), &[1]).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, vec!["fp-1.run", "fp-notes", "frontier.redb"]);
}
