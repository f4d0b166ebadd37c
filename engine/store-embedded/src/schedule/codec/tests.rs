use super::*;

/// 2026-12-01T00:00:00Z.
const T0: u64 = 1_796_083_200_000;

fn typical(row: u64) -> Revisit {
    Revisit {
        row,
        due_s: due_s(T0 + 86_400_000 + 3_217_000),
        depth: 2,
        kind: JobKind::Page,
        prior: Prior {
            visits: 1,
            fetched_at_ms: T0 + 417,
            interval_ds: 864_000,
            validators: Validators {
                etag: Some("\"5f3a-60b1c2d3e4f50\"".into()),
                last_modified_s: Some(T0 / 1000 - 40 * 86_400),
            },
            capture: Some(Capture {
                fetched_at_ms: T0 + 417,
                digest: DigestKey::of("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"),
            }),
        },
    }
}

fn round_trip(e: &Revisit) -> Revisit {
    let mut out = Vec::new();
    put_entry(&mut out, e);
    let mut r = Reader::new(&out);
    let back = read_entry(&mut r, e.row).unwrap();
    assert!(r.is_empty(), "{e:?}");
    back
}

#[test]
fn a_typical_entry_takes_26_bytes_besides_its_etag() {
    let e = typical(7);
    let mut out = Vec::new();
    put_entry(&mut out, &e);
    let etag = e.prior.validators.etag.as_ref().unwrap().len();
    // due 4, head 1, visits 1, interval 3, fetch 4, Last-Modified 4, digest key 8, ETag length 1
    assert_eq!(out.len() - etag, 26);
    assert_eq!(round_trip(&e), e);
}

#[test]
fn entries_round_trip_whatever_their_fields() {
    let base = typical(1);
    let mut cases = vec![base.clone()];
    let mut e = base.clone();
    e.prior.capture = Some(Capture {
        fetched_at_ms: T0 - 30 * 86_400_000 + 5,
        digest: DigestKey([9; 8]),
    });
    cases.push(e);
    let mut e = base.clone();
    e.prior.validators = Validators::default();
    e.prior.capture = None;
    cases.push(e);
    for depth in [0, 6, 7, 8, 1_000, u32::MAX] {
        let mut e = base.clone();
        e.depth = depth;
        e.kind = JobKind::Embed;
        cases.push(e);
    }
    // Differences of either sign and of any size: a Last-Modified after the fetch, a fetch after the due time,
    // times at the ends of their types.
    let mut e = base.clone();
    e.prior.validators.last_modified_s = Some(T0 / 1000 + 99);
    e.prior.fetched_at_ms = due_ms(e.due_s) + 1;
    cases.push(e);
    let mut e = base.clone();
    e.due_s = u32::MAX;
    e.prior.fetched_at_ms = 0;
    e.prior.validators.last_modified_s = Some(u64::MAX);
    e.prior.visits = u32::MAX;
    e.prior.interval_ds = u32::MAX;
    cases.push(e);
    let mut e = base.clone();
    e.due_s = 0;
    e.prior.fetched_at_ms = u64::MAX;
    e.prior.capture = Some(Capture {
        fetched_at_ms: 0,
        digest: DigestKey::default(),
    });
    cases.push(e);
    let mut e = base;
    e.prior.validators.etag = Some("x".repeat(255));
    cases.push(e);
    for e in cases {
        assert_eq!(round_trip(&e), e);
    }
}

#[test]
fn an_etag_too_long_for_its_length_byte_is_dropped() {
    let mut e = typical(1);
    e.prior.validators.etag = Some("x".repeat(256));
    let back = round_trip(&e);
    assert_eq!(back.prior.validators.etag, None);
    assert_eq!(
        back.prior.validators.last_modified_s,
        e.prior.validators.last_modified_s
    );
}

#[test]
fn an_entry_is_measured_and_its_due_time_read_without_decoding_it() {
    let mut cases = vec![typical(3)];
    let mut e = typical(4);
    e.depth = 300;
    e.prior.capture.as_mut().unwrap().fetched_at_ms -= 86_400_000;
    cases.push(e);
    let mut e = typical(5);
    e.prior.validators = Validators::default();
    e.prior.capture = None;
    cases.push(e);
    for e in cases {
        let mut buf = Vec::new();
        put_entry(&mut buf, &e);
        let len = buf.len();
        buf.extend_from_slice(b"next");
        assert_eq!(entry_len(&buf).unwrap(), len);
        assert_eq!(entry_due_s(&buf).unwrap(), e.due_s);
        for n in 0..len {
            assert!(entry_len(&buf[..n]).is_err(), "cut at {n}");
            assert!(read_entry(&mut Reader::new(&buf[..n]), 1).is_err());
        }
    }
}

#[test]
fn malformed_entries_are_errors_not_panics() {
    // A capture time flag without a capture.
    let mut e = typical(3);
    e.prior.capture = None;
    let mut bad = Vec::new();
    put_entry(&mut bad, &e);
    bad[4] |= CAPTURE_AT_FETCH;
    assert!(read_entry(&mut Reader::new(&bad), 3).is_err());
    for len in 0..60 {
        let junk: Vec<u8> = (0..len).map(|i| (i * 59 + 7) as u8).collect();
        let _ = read_entry(&mut Reader::new(&junk), 1);
        let _ = entry_len(&junk);
        let _ = read_due_delta(&mut Cur::new(&junk), (1, 1));
    }
}

#[test]
fn due_pairs_are_small_differences() {
    let pairs: Vec<DuePair> = vec![
        (100, 5_000_000),
        (100, 5_000_001),
        (100, 9_000_000),
        (101, 12),
        (7_000, 4_000_000),
        (u32::MAX, u64::MAX),
    ];
    let mut buf = Vec::new();
    for w in pairs.windows(2) {
        put_due_delta(&mut buf, w[0], w[1]);
    }
    // 1+1, 1+4, 1+1, 2+4, then the last one's 5+10
    assert_eq!(buf.len(), 2 + 5 + 2 + 6 + 15);
    let mut c = Cur::new(&buf);
    let mut back = vec![pairs[0]];
    while !c.is_empty() {
        back.push(read_due_delta(&mut c, *back.last().unwrap()).unwrap());
    }
    assert_eq!(back, pairs);
    // A repeated pair, and differences running past the ends of the types.
    assert!(read_due_delta(&mut Cur::new(&[0, 0]), (3, 4)).is_err());
    let mut over = Vec::new();
    put_varint(&mut over, 0);
    put_varint(&mut over, u64::MAX);
    assert!(read_due_delta(&mut Cur::new(&over), (3, 4)).is_err());
    let mut over = Vec::new();
    put_varint(&mut over, u64::from(u32::MAX));
    put_varint(&mut over, 1);
    assert!(read_due_delta(&mut Cur::new(&over), (3, 4)).is_err());
    assert!(
        read_row_delta(&mut Cur::new(&[0]), 3).is_err(),
        "a row repeated"
    );
    let mut over = Vec::new();
    put_row_delta(&mut over, 0, u64::MAX);
    assert!(read_row_delta(&mut Cur::new(&over), 2).is_err());
    assert!(Cur::new(&[0x80; 11]).varint().is_err());
}

#[test]
fn due_times_round_up_and_due_is_at_or_before_now() {
    assert_eq!(due_ms(due_s(T0)), T0);
    assert_eq!(
        due_ms(due_s(T0 + 1)),
        T0 + 1_000,
        "never earlier than asked"
    );
    assert_eq!(due_s(5), 0, "before the epoch: the epoch");
    assert_eq!(due_upto_s(T0 + 999), Some(due_s(T0)));
    assert_eq!(due_upto_s(RECRAWL_EPOCH_S * 1000 - 1), None);
    assert_eq!(due_s(u64::MAX), u32::MAX);
}
