//! The object store sink against a real S3-compatible server (moto, started by each test on a loopback port), with
//! a cuttable forwarder in between where a test takes the server away.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crawl_core::config::{ObjectStoreSink, Secret, SecretUrl, SinkConfig, SinkKind};
use crawl_sinks::archive::{ArchiveStore, ManifestEntry, Uploaded};
use crawl_test_kit::cut::Forwarder;
use crawl_test_kit::s3::MotoServer;
use crawl_test_kit::warcio::Warcio;

const BUCKET: &str = "crawl";
const PREFIX: &str = "warcs/run1";
const KEY_ID: &str = "AKIDMOTOTESTKEY";
const SECRET: &str = "moto-secret-never-shown-anywhere";
const MIB: usize = 1 << 20;

fn config(endpoint: &str) -> ObjectStoreSink {
    ObjectStoreSink {
        url: SecretUrl::parse(&format!("s3://{BUCKET}/{PREFIX}")).unwrap(),
        endpoint: Some(endpoint.to_owned()),
        region: Some("us-east-1".to_owned()),
        access_key_id: Some(Secret::new(KEY_ID)),
        secret_access_key: Some(Secret::new(SECRET)),
        allow_http: true,
        multipart_threshold: (8 * MIB) as u64,
        part_size: 5 * MIB,
        delete_local: false,
    }
}

fn sink(cfg: &ObjectStoreSink) -> SinkConfig {
    SinkConfig {
        name: "archive".to_owned(),
        batch_records: 500,
        retry_max: Duration::from_secs(1),
        timeout: Duration::from_secs(3),
        kind: SinkKind::ObjectStore(cfg.clone()),
    }
}

async fn open(cfg: &ObjectStoreSink, state: &Path) -> ArchiveStore {
    ArchiveStore::open(&sink(cfg), cfg, state).await.unwrap()
}

/// `len` bytes that differ from offset to offset, so a part out of place shows.
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

fn key(name: &str) -> String {
    format!("{PREFIX}/{name}")
}

fn manifest(state: &Path) -> Vec<ManifestEntry> {
    std::fs::read_to_string(state.join("archive.manifest.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn moto(test: &str) -> Option<MotoServer> {
    let m = MotoServer::find(test)?;
    m.create_bucket(BUCKET).unwrap();
    Some(m)
}

#[tokio::test]
async fn small_and_multipart_files_go_up_once_verified_and_recorded() {
    let Some(m) = moto("archive round trip") else {
        return;
    };
    let fwd = Forwarder::start(m.addr()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let cfg = config(&fwd.http_url());
    let mut s = open(&cfg, &state).await;
    let (small, small_data) = write(work.path(), "a-00001.warc.gz", 20_000, 1);
    let (big, big_data) = write(work.path(), "a-00002.warc.gz", 12 * MIB, 2);

    let up = s.upload(&small).await.unwrap();
    assert_eq!(
        up.location,
        format!("s3://{BUCKET}/{PREFIX}/a-00001.warc.gz")
    );
    assert!(!up.existed);
    let started = Instant::now();
    let up = s.upload(&big).await.unwrap();
    let took = started.elapsed();
    eprintln!(
        "12 MiB in 5 MiB parts through moto: {took:?} ({:.1} MiB/s)",
        12.0 / took.as_secs_f64()
    );
    assert_eq!(up.bytes, (12 * MIB) as u64);
    assert_eq!(
        m.object(BUCKET, &key("a-00001.warc.gz")).unwrap().unwrap(),
        small_data
    );
    assert_eq!(
        m.object(BUCKET, &key("a-00002.warc.gz")).unwrap().unwrap(),
        big_data
    );
    assert!(m.uploads(BUCKET).unwrap().is_empty());
    assert!(!state.join("archive.upload").exists());

    // The manifest: one line each, with the ETags S3 gave (a multipart one for the big file).
    let lines = manifest(&state);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].file, "a-00001.warc.gz");
    assert_eq!(lines[1].bytes, (12 * MIB) as u64);
    assert!(
        lines[1].etag.as_deref().unwrap().ends_with("-3\""),
        "{lines:?}"
    );
    assert_eq!(
        m.object(BUCKET, &key("manifest.jsonl")).unwrap().unwrap(),
        std::fs::read(state.join("archive.manifest.jsonl")).unwrap()
    );
    assert_eq!(
        m.keys(BUCKET, PREFIX).unwrap(),
        [
            key("a-00001.warc.gz"),
            key("a-00002.warc.gz"),
            key("manifest.jsonl")
        ]
    );

    // Again: nothing is sent.
    let before = fwd.forwarded();
    assert!(s.upload(&big).await.unwrap().existed);
    assert_eq!(
        fwd.forwarded(),
        before,
        "a file in the manifest sends nothing"
    );

    // A restart sees the manifest.
    drop(s);
    let mut s = open(&cfg, &state).await;
    assert_eq!(s.manifest_len(), 2);
    assert!(s.uploaded("a-00002.warc.gz"));
    let before = fwd.forwarded();
    assert!(s.upload(&big).await.unwrap().existed);
    assert!(fwd.forwarded() - before < 64 * 1024);

    // The manifest is lost; the objects are there: recorded, not sent again.
    drop(s);
    std::fs::remove_file(state.join("archive.manifest.jsonl")).unwrap();
    let mut s = open(&cfg, &state).await;
    assert_eq!(s.manifest_len(), 0);
    let before = fwd.forwarded();
    let up: Uploaded = s.upload(&big).await.unwrap();
    assert!(up.existed);
    assert!(
        fwd.forwarded() - before < 64 * 1024,
        "{} bytes sent for an object already there",
        fwd.forwarded() - before
    );
    let lines = manifest(&state);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].existed);
    assert!(s.upload(&small).await.unwrap().existed);
    assert_eq!(s.manifest_len(), 2);
}

#[tokio::test]
async fn an_outage_in_the_middle_of_a_multipart_upload_leaves_nothing_dangling() {
    let Some(m) = moto("archive outage") else {
        return;
    };
    let fwd = Forwarder::start(m.addr()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let cfg = config(&fwd.http_url());
    let mut s = open(&cfg, &state).await;
    let (big, big_data) = write(work.path(), "b-00001.warc.gz", 12 * MIB, 3);

    // The store goes away in the middle of the second part.
    fwd.cut_after((5 * MIB + 5 * MIB / 2) as u64);
    let started = Instant::now();
    let e = s.upload(&big).await.unwrap_err();
    let took = started.elapsed();
    eprintln!("upload failed after {took:?}: {e}");
    assert!(fwd.is_cut());
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(matches!(e.kind(), "unreachable" | "transient"), "{e}");
    assert!(!e.to_string().contains(SECRET));

    // The abort could not reach the store either (it is still away): the upload is recorded, so it is not lost.
    let dangling = m.uploads(BUCKET).unwrap();
    assert_eq!(dangling.len(), 1, "{dangling:?}");
    let record = std::fs::read_to_string(state.join("archive.upload")).unwrap();
    assert!(
        record.contains(&dangling[0].upload_id) && record.contains("\"parts_done\":1"),
        "{dangling:?} not in {record:?}"
    );
    assert_eq!(m.object(BUCKET, &key("b-00001.warc.gz")).unwrap(), None);
    assert!(!s.uploaded("b-00001.warc.gz"));

    fwd.heal();
    let up = s.upload(&big).await.unwrap();
    assert!(!up.existed);
    assert_eq!(
        m.object(BUCKET, &key("b-00001.warc.gz")).unwrap().unwrap(),
        big_data
    );
    assert!(m.uploads(BUCKET).unwrap().is_empty(), "nothing dangles");
    assert!(!state.join("archive.upload").exists());
    assert_eq!(s.manifest_len(), 1);
}

#[tokio::test]
async fn an_upload_a_crash_left_is_aborted_at_open_and_the_file_sent_again() {
    let Some(m) = moto("archive crash") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let cfg = config(&m.endpoint());
    let (big, big_data) = write(work.path(), "c-00001.warc.gz", 11 * MIB, 4);

    // A process killed after its first part: the upload runs until the record shows a part done, then it stops
    // at whatever point it is (the future is dropped, as kill -9 would stop it), without aborting anything.
    {
        let mut s = open(&cfg, &state).await;
        let upload = s.upload(&big);
        tokio::pin!(upload);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            tokio::select! {
                r = &mut upload => panic!("the upload ended before the kill: {r:?}"),
                () = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
            let record = std::fs::read_to_string(state.join("archive.upload")).unwrap_or_default();
            if record.contains("\"parts_done\":1") {
                break;
            }
            assert!(Instant::now() < deadline, "no part done in time");
        }
    }
    let left = m.uploads(BUCKET).unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].key, key("c-00001.warc.gz"));

    // Another upload started by hand and left, recorded as a crash would leave it (the record names one only).
    let mut s = open(&cfg, &state).await;
    assert!(m.uploads(BUCKET).unwrap().is_empty(), "open() aborted it");
    assert!(!state.join("archive.upload").exists());
    let id = m.start_upload(BUCKET, &key("c-00002.warc.gz")).unwrap();
    m.upload_part(BUCKET, &key("c-00002.warc.gz"), &id, 1, &[9u8; 5 * MIB])
        .unwrap();
    std::fs::write(
        state.join("archive.upload"),
        format!(
            r#"{{"file":"c-00002.warc.gz","location":"{}","upload_id":"{id}","parts_done":1}}"#,
            key("c-00002.warc.gz")
        ),
    )
    .unwrap();
    drop(s);
    s = open(&cfg, &state).await;
    assert!(m.uploads(BUCKET).unwrap().is_empty());

    let up = s.upload(&big).await.unwrap();
    assert!(!up.existed);
    assert_eq!(
        m.object(BUCKET, &key("c-00001.warc.gz")).unwrap().unwrap(),
        big_data
    );
    assert!(m.uploads(BUCKET).unwrap().is_empty());
}

#[tokio::test]
async fn an_endpoint_that_refuses_or_never_answers_is_unreachable_in_bounded_time() {
    let work = tempfile::tempdir().unwrap();
    // Nothing listens on a port the system handed out and took back.
    let closed = {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    // A listener that never accepts: connections complete in its backlog and then hear nothing.
    let silent = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    for endpoint in [closed, silent_url] {
        let cfg = config(&endpoint);
        let started = Instant::now();
        let e = ArchiveStore::open(&sink(&cfg), &cfg, work.path())
            .await
            .unwrap_err();
        let took = started.elapsed();
        eprintln!("{endpoint}: {took:?}: {e}");
        assert!(took < Duration::from_secs(15), "{took:?}");
        assert_eq!(e.kind(), "unreachable", "{e}");
        let text = e.to_string();
        assert!(
            text.contains("sink `archive`")
                && text.contains("`endpoint`")
                && text.contains(&endpoint),
            "{text}"
        );
        let debug = format!("{e:?}");
        for shown in [&text, &debug] {
            assert!(
                !shown.contains(SECRET) && !shown.contains(KEY_ID),
                "{shown}"
            );
        }
    }
}

#[tokio::test]
async fn a_missing_bucket_is_a_setup_error_naming_the_url_and_no_secret_shows() {
    let Some(m) = moto("archive missing bucket") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut cfg = config(&m.endpoint());
    cfg.url = SecretUrl::parse("s3://no-such-bucket/p").unwrap();
    let e = ArchiveStore::open(&sink(&cfg), &cfg, work.path())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "setup", "{e}");
    let text = e.to_string();
    eprintln!("{text}");
    assert!(
        text.contains("`url`") && text.contains("NoSuchBucket"),
        "{text}"
    );
    assert!(!text.contains(SECRET) && !format!("{e:?}").contains(SECRET));

    let cfg = config(&m.endpoint());
    let s = open(&cfg, work.path()).await;
    let shown = format!("{s:?} {cfg:?}");
    assert!(
        !shown.contains(SECRET) && !shown.contains(KEY_ID),
        "{shown}"
    );
}

/// A WARC file of `n` resource records with SHA-256 block digests (base32), as warcio checks them.
fn warc(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let body = format!("record {i}: {}\n", "archived text ".repeat(40)).into_bytes();
        let digest = ring::digest::digest(&ring::digest::SHA256, &body);
        let head = format!(
            "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{i:012}>\r\n\
             WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: http://example.test/{i}\r\n\
             Content-Type: text/plain\r\nWARC-Block-Digest: sha256:{}\r\nContent-Length: {}\r\n\r\n",
            data_encoding::BASE32.encode(digest.as_ref()),
            body.len()
        );
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(b"\r\n\r\n");
    }
    out
}

#[tokio::test]
async fn a_warc_file_read_back_from_the_store_passes_warcio() {
    let Some(warcio) = Warcio::find("archive warcio") else {
        return;
    };
    let Some(m) = moto("archive warcio") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let state = work.path().join("sinks");
    let mut cfg = config(&m.endpoint());
    cfg.delete_local = true;
    let mut s = open(&cfg, &state).await;
    let local = work.path().join("d-00001.warc");
    std::fs::write(&local, warc(50)).unwrap();
    s.upload(&local).await.unwrap();
    assert!(!local.exists(), "deleted once verified");
    let back = work.path().join("back.warc");
    std::fs::write(
        &back,
        m.object(BUCKET, &key("d-00001.warc")).unwrap().unwrap(),
    )
    .unwrap();
    warcio.check(&back).unwrap();
    let records = warcio.records(&[back]).unwrap();
    assert_eq!(records.len(), 50);
    assert_eq!(records[49].uri.as_deref(), Some("http://example.test/49"));
}

/// Set in the copy of this test binary that [`https_to_the_store_trusts_the_roots_it_is_given`] runs: the endpoint
/// to open, with `SSL_CERT_FILE` naming the server's certificate.
const TLS_CHILD: &str = "ARCHIVE_TEST_TLS_ENDPOINT";

#[tokio::test]
async fn https_to_the_store_trusts_the_roots_it_is_given() {
    let work = tempfile::tempdir().unwrap();
    if let Some(endpoint) = std::env::var_os(TLS_CHILD) {
        // The child: the system's roots are the test's certificate, so the handshake passes and the store answers
        // (that the bucket is missing: the request and its answer went through TLS).
        let mut cfg = config(endpoint.to_str().unwrap());
        cfg.allow_http = false;
        let e = ArchiveStore::open(&sink(&cfg), &cfg, work.path())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), "setup", "{e}");
        assert!(e.to_string().contains("NoSuchBucket"), "{e}");
        return;
    }
    let Some((m, cert)) = MotoServer::find_tls("archive https") else {
        return;
    };
    let mut cfg = config(&m.endpoint());
    cfg.allow_http = false;
    // Not trusted (the system's roots do not hold the test's certificate): the handshake fails, in bounded time.
    let started = Instant::now();
    let e = ArchiveStore::open(&sink(&cfg), &cfg, work.path())
        .await
        .unwrap_err();
    eprintln!("untrusted: {:?}: {e}", started.elapsed());
    assert_eq!(e.kind(), "unreachable", "{e}");
    assert!(started.elapsed() < Duration::from_secs(15));
    // Trusted through SSL_CERT_FILE, in a process of its own (the environment is the process's).
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "https_to_the_store_trusts_the_roots_it_is_given",
            "--exact",
            "--nocapture",
        ])
        .env(TLS_CHILD, m.endpoint())
        .env("SSL_CERT_FILE", &cert.cert)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
}
