//! WARC writer tests, continued: files (rotation with warcinfo first, serials, torn tails cut at the checkpoint or
//! found by scanning, config checks). The fixtures and readers are in `tests.rs`.

use super::*;

#[test]
fn rotation_starts_new_files_with_warcinfo_and_rising_serials() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_bytes = 8 * 1024;
    cfg.first_serial = 3;
    let mut w = WarcWriter::open(cfg, None).unwrap();
    let mut locations = Vec::new();
    for i in 0..12u64 {
        let url = format!("http://example.org/{i}");
        let req = get(&url, HttpVersion::Http11);
        let resp = ResponseHead::new(HttpVersion::Http11, 200, HttpHeaders::new());
        let body = noise(1500, i);
        let c = capture(&url, &req, &resp, &body);
        let wr = w.append_capture(&c).unwrap();
        let q = wr.request.unwrap();
        assert_eq!(
            q.location.file, wr.response.location.file,
            "a pair stays in one file"
        );
        locations.push(wr.response.location);
    }
    // A record larger than max_bytes gets a file of its own.
    let big = noise(20 * 1024, 99);
    let req = get("http://example.org/big", HttpVersion::Http11);
    let resp = ResponseHead::new(HttpVersion::Http11, 200, HttpHeaders::new());
    let wr = w
        .append_capture(&capture("http://example.org/big", &req, &resp, &big))
        .unwrap();
    w.sync().unwrap();
    let files = warc_files(dir.path());
    assert!(files.len() >= 4, "{files:?}");
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.last(), Some(&wr.response.location.file));
    let mut total_records = 0;
    for (i, (path, name)) in files.iter().zip(&names).enumerate() {
        // crawl-TIMESTAMP-SERIAL-testhost.warc.gz, serials 00003, 00004, ...
        let parts: Vec<&str> = name.trim_end_matches(".warc.gz").split('-').collect();
        assert_eq!(parts.len(), 4, "{name}");
        assert_eq!(parts[0], "crawl");
        assert_eq!(parts[1].len(), 17);
        assert!(parts[1].bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(parts[2], format!("{:05}", 3 + i), "{name}");
        assert_eq!(parts[3], "testhost");
        let recs = read_all(path);
        assert_eq!(recs[0].kind(), "warcinfo", "{name}");
        assert_eq!(recs[0].get("WARC-Filename"), Some(name.as_str()));
        assert!(recs[1..].iter().all(|r| r.kind() != "warcinfo"));
        let len = std::fs::metadata(path).unwrap().len();
        if recs.len() > 3 {
            assert!(len <= 8 * 1024, "{name} has {len} bytes");
        }
        total_records += recs.len() - 1;
    }
    assert_eq!(total_records, 13 * 2);
    for loc in &locations {
        assert!(names.contains(&loc.file));
    }
    if let Some(wio) = warcio() {
        for f in &files {
            check(&wio, f);
        }
    }
}

/// Writes a synced capture, then two more that reach the file but are never synced, and tears the last one
/// in the middle of its gzip member as `kill -9` during a write would.
fn write_then_tear(dir: &Path) -> (WarcCheckpoint, u64, Vec<WrittenRecord>) {
    let mut w = WarcWriter::open(config(dir), None).unwrap();
    let req = get("http://example.org/a", HttpVersion::Http11);
    let resp = ResponseHead::new(HttpVersion::Http11, 200, HttpHeaders::new());
    let a = noise(3000, 1);
    w.append_capture(&capture("http://example.org/a", &req, &resp, &a))
        .unwrap();
    let cp = w.sync().unwrap();
    let mut late = Vec::new();
    for i in 2..4 {
        let url = format!("http://example.org/{i}");
        let body = noise(3000, i);
        let wr = w
            .append_capture(&capture(&url, &req, &resp, &body))
            .unwrap();
        late.push(wr.response);
        late.push(wr.request.unwrap());
    }
    drop(w); // the buffered bytes reach the file, but no fsync and no checkpoint
    let path = dir.join(&cp.file);
    let full = std::fs::metadata(&path).unwrap().len();
    let last = late.last().unwrap().location.clone();
    assert_eq!(full, last.offset + last.length);
    let torn = last.offset + last.length / 2;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(torn)
        .unwrap();
    (cp, torn, late)
}

fn append_one_more(w: &mut WarcWriter) -> CaptureWritten {
    let req = get("http://example.org/after", HttpVersion::Http11);
    let resp = ResponseHead::new(HttpVersion::Http11, 200, HttpHeaders::new());
    let wr = w
        .append_capture(&capture("http://example.org/after", &req, &resp, b"after"))
        .unwrap();
    w.sync().unwrap();
    wr
}

#[test]
fn torn_tail_is_cut_at_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (cp, torn, _) = write_then_tear(dir.path());
    // A file created after the checkpoint (a rotation nobody committed) goes too.
    let later = dir
        .path()
        .join("crawl-20261203054000123-00001-testhost.warc.gz");
    std::fs::write(&later, gzip(b"uncommitted")).unwrap();
    let other = dir
        .path()
        .join("other-20261203054000123-00001-testhost.warc.gz");
    std::fs::write(&other, b"not ours").unwrap();

    let mut w = WarcWriter::open(config(dir.path()), Some(&cp)).unwrap();
    let rep = w.open_report().clone();
    assert_eq!(rep.file, cp.file);
    assert_eq!(rep.cut_bytes, torn - cp.bytes);
    assert_eq!(
        rep.removed_files,
        ["crawl-20261203054000123-00001-testhost.warc.gz"]
    );
    assert!(!later.exists() && other.exists());
    assert_eq!(w.checkpoint(), &cp);
    let path = dir.path().join(&cp.file);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), cp.bytes);
    let wr = append_one_more(&mut w);
    assert_eq!(wr.response.location.offset, cp.bytes);
    let recs = read_all(&path);
    let uris: Vec<&str> = recs
        .iter()
        .filter_map(|r| r.get("WARC-Target-URI"))
        .collect();
    assert_eq!(
        uris,
        [
            "http://example.org/a",
            "http://example.org/a",
            "http://example.org/after",
            "http://example.org/after"
        ]
    );
    if let Some(wio) = warcio() {
        check(&wio, &path);
    }

    // A checkpoint the files cannot honour is refused.
    drop(w);
    let too_long = WarcCheckpoint {
        file: cp.file.clone(),
        bytes: 1 << 40,
    };
    assert!(matches!(
        WarcWriter::open(config(dir.path()), Some(&too_long)),
        Err(WarcError::CheckpointMismatch { .. })
    ));
    let foreign = WarcCheckpoint {
        file: "other-20261203054000123-00001-testhost.warc.gz".to_string(),
        bytes: 1,
    };
    assert!(matches!(
        WarcWriter::open(config(dir.path()), Some(&foreign)),
        Err(WarcError::CheckpointMismatch { .. })
    ));
}

#[test]
fn torn_tail_is_found_by_scanning_without_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (cp, torn, late) = write_then_tear(dir.path());
    let mut w = WarcWriter::open(config(dir.path()), None).unwrap();
    let rep = w.open_report().clone();
    // The members that were written whole survive; only the torn one goes.
    let torn_member = late.last().unwrap().location.clone();
    assert_eq!(rep.file, cp.file);
    assert_eq!(rep.cut_bytes, torn - torn_member.offset);
    assert_eq!(w.checkpoint().bytes, torn_member.offset);
    let wr = append_one_more(&mut w);
    assert_eq!(wr.response.location.offset, torn_member.offset);
    let path = dir.path().join(&cp.file);
    let recs = read_all(&path);
    let kinds: Vec<&str> = recs.iter().map(Rec::kind).collect();
    assert_eq!(
        kinds,
        [
            "warcinfo", "response", "request", "response", "request", "response", "response",
            "request"
        ]
    );
    if let Some(wio) = warcio() {
        check(&wio, &path);
    }

    // A file torn inside its warcinfo record is left empty and gets a new one.
    drop(w);
    let len = std::fs::metadata(&path).unwrap().len();
    let first = read_all(&path)[0].length;
    assert!(len > first);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(first - 3)
        .unwrap();
    let w = WarcWriter::open(config(dir.path()), None).unwrap();
    assert_eq!(w.open_report().cut_bytes, first - 3);
    drop(w);
    let recs = read_all(&path);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].kind(), "warcinfo");
}

#[test]
fn config_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.prefix = "bad/prefix".to_string();
    assert!(matches!(
        WarcWriter::open(c, None),
        Err(WarcError::Config(_))
    ));
    let mut c = config(dir.path());
    c.timestamp = FileTimestamp::Fixed("2026".to_string());
    assert!(matches!(
        WarcWriter::open(c, None),
        Err(WarcError::Config(_))
    ));
    let mut c = config(dir.path());
    c.timestamp = FileTimestamp::Fixed("20261203054000".to_string());
    c.first_serial = 41;
    let w = WarcWriter::open(c.clone(), None).unwrap();
    assert_eq!(
        w.current_file(),
        "crawl-20261203054000-00041-testhost.warc.gz"
    );
    // A second writer with the same prefix and host is kept out while the first lives.
    assert!(matches!(
        WarcWriter::open(c.clone(), None),
        Err(WarcError::Busy { .. })
    ));
    let mut other = c.clone();
    other.prefix = "crawl2".to_string();
    WarcWriter::open(other, None).unwrap();
    drop(w);
    WarcWriter::open(c, None).unwrap();
}
