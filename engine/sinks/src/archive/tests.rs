//! The archive sink on the stores that need no server: memory and a local folder.

use super::*;
use crawl_core::config::{Secret, SinkKind};

pub(crate) fn config(url: &str) -> ObjectStoreSink {
    ObjectStoreSink {
        url: SecretUrl::parse(url).unwrap(),
        endpoint: None,
        region: None,
        access_key_id: None,
        secret_access_key: None,
        allow_http: false,
        multipart_threshold: 2 << 20,
        part_size: 1 << 20,
        delete_local: false,
    }
}

pub(crate) fn sink(name: &str, cfg: &ObjectStoreSink) -> SinkConfig {
    SinkConfig {
        name: name.to_owned(),
        batch_records: 500,
        retry_max: Duration::from_secs(1),
        timeout: Duration::from_secs(2),
        kind: SinkKind::ObjectStore(cfg.clone()),
    }
}

/// `len` bytes that differ from offset to offset (so a part out of place shows).
fn content(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed)
        .collect()
}

fn write(dir: &Path, name: &str, len: usize, seed: u8) -> (PathBuf, Vec<u8>) {
    let p = dir.join(name);
    let data = content(len, seed);
    std::fs::write(&p, &data).unwrap();
    (p, data)
}

fn sha256_hex(data: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(ring::digest::digest(&ring::digest::SHA256, data).as_ref())
}

async fn object(s: &ArchiveStore, key: &str) -> Option<Vec<u8>> {
    match s.backend.store().get(&ObjPath::from(key)).await {
        Ok(g) => Some(g.bytes().await.unwrap().to_vec()),
        Err(object_store::Error::NotFound { .. }) => None,
        Err(e) => panic!("get {key}: {e}"),
    }
}

fn manifest_lines(state: &Path, sink: &str) -> Vec<ManifestEntry> {
    std::fs::read_to_string(state.join(format!("{sink}.manifest.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn memory_takes_a_single_put_and_a_multipart_upload_and_keeps_a_manifest() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let cfg = config("memory:///crawl/warcs");
    let mut s = ArchiveStore::open(&sink("mem", &cfg), &cfg, &state)
        .await
        .unwrap();
    let (small, small_data) = write(work.path(), "a.warc.gz", 1000, 1);
    let (big, big_data) = write(work.path(), "b.warc.gz", (3 << 20) + 12345, 2);

    let up = s.upload(&small).await.unwrap();
    assert_eq!(
        up,
        Uploaded {
            location: "memory:///crawl/warcs/a.warc.gz".into(),
            bytes: 1000,
            checksum: sha256_hex(&small_data),
            existed: false,
        }
    );
    let up = s.upload(&big).await.unwrap();
    assert_eq!(up.bytes, big_data.len() as u64);
    assert!(!up.existed);
    assert_eq!(
        object(&s, "crawl/warcs/a.warc.gz").await.unwrap(),
        small_data
    );
    assert_eq!(object(&s, "crawl/warcs/b.warc.gz").await.unwrap(), big_data);
    assert!(!state.join("mem.upload").exists());

    let lines = manifest_lines(&state, "mem");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1].file, "b.warc.gz");
    assert_eq!(lines[1].sha256, sha256_hex(&big_data));
    assert!(s.uploaded("a.warc.gz") && s.uploaded("b.warc.gz") && !s.uploaded("c.warc.gz"));
    assert_eq!(s.manifest_len(), 2);
    let copy = object(&s, "crawl/warcs/manifest.jsonl").await.unwrap();
    assert_eq!(
        copy,
        std::fs::read(state.join("mem.manifest.jsonl")).unwrap()
    );
    // Again: a no-op that says so.
    let again = s.upload(&small).await.unwrap();
    assert!(again.existed);
    assert_eq!(again.checksum, sha256_hex(&small_data));
    assert_eq!(s.manifest_len(), 2);
}

#[tokio::test]
async fn a_local_folder_takes_both_sizes_survives_a_restart_and_deletes_only_verified_files() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let dest = work.path().join("archive");
    let url = url::Url::from_directory_path(&dest).unwrap();
    let mut cfg = config(url.as_str());
    cfg.delete_local = true;
    let mut s = ArchiveStore::open(&sink("local", &cfg), &cfg, &state)
        .await
        .unwrap();
    let local = work.path().join("warc");
    std::fs::create_dir_all(&local).unwrap();
    let (small, small_data) = write(&local, "a.warc.gz", 4096, 3);
    let (big, big_data) = write(&local, "b.warc.gz", (5 << 20) / 2 + 7, 4);

    let up = s.upload(&small).await.unwrap();
    assert_eq!(
        up.location,
        url::Url::from_file_path(dest.join("a.warc.gz"))
            .unwrap()
            .to_string()
    );
    s.upload(&big).await.unwrap();
    assert_eq!(std::fs::read(dest.join("a.warc.gz")).unwrap(), small_data);
    assert_eq!(std::fs::read(dest.join("b.warc.gz")).unwrap(), big_data);
    assert!(
        !small.exists() && !big.exists(),
        "verified files are deleted"
    );
    assert_eq!(
        std::fs::read(dest.join(MANIFEST_OBJECT)).unwrap(),
        std::fs::read(state.join("local.manifest.jsonl")).unwrap()
    );
    assert!(!state.join("local.upload").exists());

    // A restart sees the manifest: the same name again is a no-op.
    drop(s);
    let mut s = ArchiveStore::open(&sink("local", &cfg), &cfg, &state)
        .await
        .unwrap();
    assert_eq!(s.manifest_len(), 2);
    let (again, _) = write(&local, "a.warc.gz", 4096, 3);
    assert!(s.upload(&again).await.unwrap().existed);
    assert!(!again.exists());

    // Another object under a file's name is not overwritten, and the local file stays.
    std::fs::write(dest.join("c.warc.gz"), b"someone else's").unwrap();
    let (c, _) = write(&local, "c.warc.gz", 100, 5);
    let e = s.upload(&c).await.unwrap_err();
    assert_eq!(e.kind(), "setup", "{e}");
    assert!(e.to_string().contains("c.warc.gz"), "{e}");
    assert!(c.exists(), "a file that was not uploaded stays");
    assert_eq!(
        std::fs::read(dest.join("c.warc.gz")).unwrap(),
        b"someone else's"
    );
    assert!(!s.uploaded("c.warc.gz"));
}

#[tokio::test]
async fn an_object_already_there_is_recorded_without_sending_it_again() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let dest = work.path().join("archive");
    let cfg = config(url::Url::from_directory_path(&dest).unwrap().as_str());
    let (f, data) = write(work.path(), "x.warc.gz", 3 << 20, 6);
    {
        let mut s = ArchiveStore::open(&sink("l", &cfg), &cfg, &state)
            .await
            .unwrap();
        assert!(!s.upload(&f).await.unwrap().existed);
    }
    // The manifest is lost; the object is there.
    std::fs::remove_file(state.join("l.manifest.jsonl")).unwrap();
    let before = std::fs::metadata(dest.join("x.warc.gz"))
        .unwrap()
        .modified()
        .unwrap();
    let mut s = ArchiveStore::open(&sink("l", &cfg), &cfg, &state)
        .await
        .unwrap();
    assert_eq!(s.manifest_len(), 0);
    let up = s.upload(&f).await.unwrap();
    assert!(up.existed);
    assert_eq!(up.checksum, sha256_hex(&data));
    let after = std::fs::metadata(dest.join("x.warc.gz"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after, "the object was not written again");
    let lines = manifest_lines(&state, "l");
    assert_eq!(lines.len(), 1);
    assert!(lines[0].existed);
}

#[tokio::test]
async fn a_crash_in_a_local_write_leaves_a_staging_file_that_open_removes() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let dest = work.path().join("archive");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let cfg = config(url::Url::from_directory_path(&dest).unwrap().as_str());
    // What a kill -9 in the middle of writing y.warc.gz leaves.
    std::fs::write(dest.join("y.warc.gz#1"), b"half").unwrap();
    std::fs::write(dest.join("y.warc.gz#x"), b"not ours").unwrap();
    std::fs::write(
        state.join("l.upload"),
        br#"{"file":"y.warc.gz","location":"y.warc.gz","upload_id":null,"parts_done":0}"#,
    )
    .unwrap();
    let mut s = ArchiveStore::open(&sink("l", &cfg), &cfg, &state)
        .await
        .unwrap();
    assert!(!dest.join("y.warc.gz#1").exists());
    assert!(dest.join("y.warc.gz#x").exists());
    assert!(!state.join("l.upload").exists());
    let (y, data) = write(work.path(), "y.warc.gz", 10, 7);
    s.upload(&y).await.unwrap();
    assert_eq!(std::fs::read(dest.join("y.warc.gz")).unwrap(), data);
}

#[tokio::test]
async fn a_memory_upload_left_by_another_process_is_dropped_at_open() {
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("m.upload"),
        br#"{"file":"z.warc.gz","location":"z.warc.gz","upload_id":"7","parts_done":1}"#,
    )
    .unwrap();
    let cfg = config("memory://");
    let s = ArchiveStore::open(&sink("m", &cfg), &cfg, &state)
        .await
        .unwrap();
    assert!(!state.join("m.upload").exists());
    assert_eq!(s.location_of("z.warc.gz"), "memory:///z.warc.gz");
}

#[tokio::test]
async fn schemes_not_built_in_and_odd_names_are_refused_clearly() {
    let work = tempfile::tempdir().unwrap();
    for url in ["gs://bucket/p", "az://container/p"] {
        let cfg = config(url);
        let e = ArchiveStore::open(&sink("o", &cfg), &cfg, work.path())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "setup");
        let text = e.to_string();
        assert!(
            text.contains("`url`") && text.contains("not built in") && text.contains("sink `o`"),
            "{text}"
        );
    }
    let cfg = config("memory://");
    let mut s = ArchiveStore::open(&sink("o", &cfg), &cfg, work.path())
        .await
        .unwrap();
    let (odd, _) = write(work.path(), "a#1", 1, 0);
    assert_eq!(s.upload(&odd).await.unwrap_err().kind(), "io");
    let missing = s
        .upload(&work.path().join("none.warc.gz"))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), "io");
    assert!(missing.to_string().contains("none.warc.gz"), "{missing}");
}

#[test]
fn secrets_stay_out_of_debug_output() {
    let mut cfg = config("s3://bucket/p");
    cfg.access_key_id = Some(Secret::new("AKIDSHOWNNOWHERE"));
    cfg.secret_access_key = Some(Secret::new("s3cr3t-never-shown"));
    let shown = format!("{cfg:?} {:?}", sink("s", &cfg));
    assert!(
        !shown.contains("s3cr3t-never-shown") && !shown.contains("AKIDSHOWNNOWHERE"),
        "{shown}"
    );
    let built = build(&sink("s", &cfg), &cfg).unwrap();
    assert!(
        built
            .secrets
            .iter()
            .any(|s| s.as_str() == "s3cr3t-never-shown")
    );
    assert_eq!(built.base, "s3://bucket");
    assert_eq!(built.prefix.as_ref(), "p");
    let shown = format!("{:?}", built.backend);
    assert!(!shown.contains("s3cr3t-never-shown"), "{shown}");
}

#[test]
fn a_status_in_the_message_is_read_as_a_status() {
    let e = object_store::Error::Generic {
        store: "S3",
        source: "Error performing GET http://x in 1ms - Server returned non-2xx status code: 503 Service \
                 Unavailable: busy"
            .into(),
    };
    assert_eq!(Failure::of(&e), Failure::Status(503));
    let e = object_store::Error::Generic {
        store: "S3",
        source: "something else".into(),
    };
    assert_eq!(Failure::of(&e), Failure::Other);
    let e = object_store::Error::NotFound {
        path: "p".into(),
        source: "gone".into(),
    };
    assert_eq!(Failure::of(&e), Failure::NotFound);
}

#[tokio::test]
async fn a_file_of_more_parts_than_s3_takes_is_refused_naming_part_size() {
    let work = tempfile::tempdir().unwrap();
    let mut cfg = config("memory://");
    cfg.part_size = 1;
    cfg.multipart_threshold = 1;
    let mut s = ArchiveStore::open(&sink("m", &cfg), &cfg, work.path())
        .await
        .unwrap();
    let (f, _) = write(work.path(), "many.warc.gz", MAX_PARTS + 1, 0);
    let e = s.upload(&f).await.unwrap_err();
    assert_eq!(e.kind(), "setup");
    assert!(e.to_string().contains("`part_size_bytes`"), "{e}");
    assert!(!work.path().join("m.upload").exists());
}

#[tokio::test]
async fn an_upload_runs_on_a_task_of_its_own() {
    let work = tempfile::tempdir().unwrap();
    let (f, data) = write(work.path(), "t.warc.gz", 5000, 9);
    let state = work.path().join("sinks");
    let task = tokio::spawn(async move {
        let cfg = config("memory://");
        let mut s = ArchiveStore::open(&sink("m", &cfg), &cfg, &state).await?;
        s.upload(&f).await
    });
    let up = task.await.unwrap().unwrap();
    assert_eq!(up.checksum, sha256_hex(&data));
    assert_eq!(up.location, "memory:///t.warc.gz");
}
