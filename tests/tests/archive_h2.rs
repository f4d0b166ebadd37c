//! An HTTP/2 answer through the real fetcher's client, prepared for the archive as the parser does and written by
//! the WARC writer, read back with warcio: a `response` record holding an HTTP/1.1-style message with
//! `WARC-Protocol: h2`, digests that `warcio check` verifies, and the payload the server sent; its `request` record
//! beside it. (The crawler binary trusts only the public roots, so this runs the same parts in-process against a
//! TLS server with a test CA.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use crawl_actors::fetcher::dial::NameLookup;
use crawl_actors::fetcher::http::{HttpClient, HttpSettings};
use crawl_actors::parser::archive::{ARCHIVE_LEVEL, prepare};
use crawl_actors::protocol::Job;
use crawl_core::frontier::Entry;
use crawl_output::warc::{WarcWriter, WarcWriterConfig};
use crawl_test_kit::warcio::{Warcio, warc_files};
use crawl_tests::dns::{DOH_HOST, FakeDoh, Zone};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_answer_is_archived_as_an_http11_message_that_warcio_reads() {
    let Some(w) = Warcio::find("http/2 archive") else {
        return;
    };
    let server = FakeDoh::start(Zone::new()).await.expect("tls server");
    let ip = server.bootstrap();
    let client = HttpClient::new(HttpSettings {
        allow_private_networks: true,
        extra_roots: vec![server.ca_der()],
        keep_request_headers: true,
        lookup: Some(NameLookup(Arc::new(move |_name: String| {
            Box::pin(async move { Ok(vec![ip]) })
        }))),
        ..HttpSettings::default()
    })
    .expect("client");
    let target = server.url();
    assert!(target.contains(DOH_HOST));
    let resp = client
        .get(&url::Url::parse(&target).expect("url"), None)
        .await
        .expect("https get");
    assert_eq!(resp.version, http::Version::HTTP_2);
    let sent = resp.body.clone();
    let status = resp.status;

    let job = Job {
        id: 1,
        host: 0,
        entry: Entry::page(target.as_str(), 0, None),
        started_at: std::time::Instant::now(),
        trace: Default::default(),
        gate: None,
    };
    let prepared = prepare(&job, &resp, ARCHIVE_LEVEL).expect("prepared");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = WarcWriterConfig::new(dir.path(), "h2");
    cfg.hostname = Some("test".into());
    let mut writer = WarcWriter::open(cfg, None).expect("writer");
    let written = writer.append_prepared(prepared, None).expect("append");
    writer.sync().expect("sync");

    let files = warc_files(dir.path());
    for f in &files {
        w.check(f).unwrap_or_else(|e| panic!("{e}"));
    }
    let records = w.records(&files).unwrap_or_else(|e| panic!("{e}"));
    let response = records
        .iter()
        .find(|r| r.kind == "response")
        .expect("a response record");
    assert_eq!(response.uri.as_deref(), Some(target.as_str()));
    assert_eq!(response.protocol.as_deref(), Some("h2"));
    let line = response.status.as_deref().unwrap_or_default();
    assert!(
        line.starts_with(&format!("HTTP/1.1 {status}")),
        "status line {line:?}"
    );
    assert_eq!(response.content_bytes(), sent.to_vec());
    assert_eq!(response.offset, written.response.location.offset);
    let request = records
        .iter()
        .find(|r| r.kind == "request")
        .expect("a request record");
    assert_eq!(request.uri.as_deref(), Some(target.as_str()));
    assert!(
        request
            .user_agent
            .as_deref()
            .is_some_and(|ua| ua.starts_with("crawl-engine/")),
        "the request record has the headers sent: {request:?}"
    );
}
