//! The PostgreSQL sink against real servers the tests start (crawl-test-kit's `postgres::Cluster`): what lands in
//! the table, re-shipping, concurrent writers, tables that do not fit, TLS, and servers that are away.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};
use std::time::{Duration, Instant, UNIX_EPOCH};

use bytes::Bytes;
use crawl_core::config::{OnConflict, PostgresSink, SecretUrl, SinkConfig, SinkKind};
use crawl_sinks::SinkError;
use crawl_sinks::postgres::PostgresTarget;
use crawl_sinks::record::ShipRecord;
use crawl_test_kit::postgres::{self as pg, Cluster, Options, TlsFiles};

const TIMEOUT: Duration = Duration::from_secs(2);

fn config(url: &str, table: &str, on_conflict: OnConflict) -> (SinkConfig, PostgresSink) {
    let cfg = PostgresSink {
        url: SecretUrl::parse(url).unwrap(),
        table: table.to_owned(),
        on_conflict,
    };
    let sink = SinkConfig {
        name: "pg".to_owned(),
        batch_records: 500,
        retry_max: Duration::from_secs(1),
        timeout: TIMEOUT,
        kind: SinkKind::Postgres(cfg.clone()),
    };
    (sink, cfg)
}

async fn target(url: &str, table: &str, on_conflict: OnConflict) -> PostgresTarget {
    let (sink, cfg) = config(url, table, on_conflict);
    PostgresTarget::connect(&sink, &cfg).await.unwrap()
}

async fn connect_err(url: &str, table: &str) -> SinkError {
    let (sink, cfg) = config(url, table, OnConflict::Nothing);
    PostgresTarget::connect(&sink, &cfg).await.unwrap_err()
}

/// Record `i` as the crawler writes it; `note` changes its content without changing its id. Every tenth is an
/// excluded URL (no status, time or WARC location).
fn record(i: u64, note: &str) -> ShipRecord {
    let url = format!("http://h{}.test/p/{i}?q=\"x\"", i % 7);
    let line = if i % 10 == 3 {
        serde_json::json!({"url": url, "outcome": "excluded", "status": null, "record_id": format!("r{i:06}"),
            "note": note})
    } else {
        serde_json::json!({"url": url, "outcome": "fetched", "status": 200 + (i % 3),
            "fetched_at": format!("2026-12-06T10:{:02}:{:02}.{:03}Z", i / 60 % 60, i % 60, i % 1000),
            "warc": {"file": format!("crawl-{}.warc.gz", i / 100), "offset": i * 1000, "length": 900 + i},
            "record_id": format!("r{i:06}"), "title": "ünïcødé ✓ | tab\t", "note": note})
    };
    ShipRecord::parse("pg", i, Bytes::from(line.to_string())).unwrap()
}

fn records(ids: impl IntoIterator<Item = u64>, note: &str) -> Vec<ShipRecord> {
    ids.into_iter().map(|i| record(i, note)).collect()
}

/// A client of the test's own, to read what landed.
async fn client(c: &Cluster) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&c.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

fn count(c: &Cluster, table: &str) -> u64 {
    c.psql(&format!("SELECT count(*) FROM {table}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_thousand_records_land_once_each_with_their_lines() {
    if !pg::require("postgres sink: 1000 records") {
        return;
    }
    let c = Cluster::start();
    c.psql("CREATE SCHEMA crawl");
    let mut t = target(&c.url(), "crawl.records", OnConflict::Nothing).await;
    let input = records(0..1000, "first");
    let started = Instant::now();
    let mut shipped = 0;
    let mut bytes = 0;
    for batch in input.chunks(128) {
        let s = t.ship(batch).await.unwrap();
        assert_eq!(s.skipped, 0);
        shipped += s.records;
        bytes += s.bytes;
    }
    eprintln!("1000 records in batches of 128: {:?}", started.elapsed());
    assert_eq!(shipped, 1000);
    assert_eq!(
        bytes,
        input.iter().map(|r| r.line.len() as u64).sum::<u64>()
    );
    assert_eq!(count(&c, "crawl.records"), 1000);

    let db = client(&c).await;
    let rows = db
        .query(
            "SELECT record_id, url, host, outcome, status, \
             extract(epoch FROM fetched_at)::float8, record::text, warc_file, warc_offset, warc_length, \
             inserted_at IS NOT NULL FROM crawl.records ORDER BY record_id",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1000);
    let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    let want: Vec<String> = input.iter().map(|r| r.record_id().to_owned()).collect();
    assert_eq!(ids, want, "record ids differ from the input");
    for (row, r) in rows.iter().zip(&input) {
        let stored: serde_json::Value = serde_json::from_str(row.get(6)).unwrap();
        let line: serde_json::Value = serde_json::from_slice(&r.line).unwrap();
        assert_eq!(
            stored,
            line,
            "record {} differs from its line",
            r.record_id()
        );
        assert_eq!(row.get::<_, String>(1), r.url());
        assert_eq!(row.get::<_, String>(2), r.host());
        assert_eq!(row.get::<_, String>(3), r.outcome());
        assert_eq!(row.get::<_, Option<i32>>(4), r.status.map(i32::from));
        let at = r.fetched_at().map(|t| {
            humantime::parse_rfc3339(t)
                .unwrap()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs_f64()
        });
        let got: Option<f64> = row.get(5);
        assert_eq!(got.is_some(), at.is_some(), "{}", r.record_id());
        if let (Some(got), Some(at)) = (got, at) {
            assert!((got - at).abs() < 1e-3, "{}: {got} vs {at}", r.record_id());
        }
        assert_eq!(
            row.get::<_, Option<String>>(7),
            r.warc().map(|w| w.file.to_owned())
        );
        assert_eq!(
            row.get::<_, Option<i64>>(8),
            r.warc().map(|w| w.offset as i64)
        );
        assert_eq!(
            row.get::<_, Option<i64>>(9),
            r.warc().map(|w| w.length as i64)
        );
        assert!(row.get::<_, bool>(10));
    }
    assert_eq!(
        c.psql("SELECT count(*) FROM crawl.records WHERE outcome = 'excluded' AND status IS NULL AND warc_file IS NULL"),
        "100"
    );
}

#[tokio::test]
async fn reshipping_adds_no_row_and_update_takes_the_reshipped_record() {
    if !pg::require("postgres sink: re-shipping") {
        return;
    }
    let c = Cluster::start();
    let mut t = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    let first = records(0..300, "first");
    t.ship(&first).await.unwrap();
    // As after a kill -9 between the commit and the checkpoint: the same batch again, whole.
    let again = t.ship(&first).await.unwrap();
    assert_eq!(again.records, 300);
    assert_eq!(count(&c, "crawl_records"), 300);
    // `nothing`: the first row stays, even when the record shipped again differs.
    t.ship(&records(250..350, "second")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 350);
    assert_eq!(
        c.psql("SELECT count(*) FROM crawl_records WHERE record->>'note' = 'second'"),
        "50"
    );
    // A record twice in one batch: one row.
    t.ship(&[record(400, "a"), record(400, "b")]).await.unwrap();
    assert_eq!(
        c.psql("SELECT record->>'note' FROM crawl_records WHERE record_id = 'r000400'"),
        "a"
    );

    let before = c.psql("SELECT inserted_at FROM crawl_records WHERE record_id = 'r000010'");
    let mut u = target(&c.url(), "crawl_records", OnConflict::Update).await;
    u.ship(&records(0..100, "updated")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 351);
    assert_eq!(
        c.psql("SELECT count(*) FROM crawl_records WHERE record->>'note' = 'updated'"),
        "100"
    );
    let after = c.psql("SELECT inserted_at FROM crawl_records WHERE record_id = 'r000010'");
    assert_ne!(before, after, "inserted_at was not rewritten by the update");
    // The same records again change nothing (the rows are not rewritten).
    u.ship(&records(0..100, "updated")).await.unwrap();
    assert_eq!(
        c.psql("SELECT inserted_at FROM crawl_records WHERE record_id = 'r000010'"),
        after
    );
    // `update` with a record twice in one batch: the last one wins.
    u.ship(&[record(400, "a"), record(400, "b")]).await.unwrap();
    assert_eq!(
        c.psql("SELECT record->>'note' FROM crawl_records WHERE record_id = 'r000400'"),
        "b"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_shipping_overlapping_batches_in_opposite_orders_do_not_deadlock() {
    if !pg::require("postgres sink: concurrent writers") {
        return;
    }
    let c = Cluster::start();
    let mut a = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    let mut b = target(&c.url(), "crawl_records", OnConflict::Update).await;
    let mut all = BTreeSet::new();
    for round in 0..6u64 {
        let base = round * 10_000;
        // a: ids ascending; b: the same and more, descending; half of each batch overlaps the other's.
        let ids_a: Vec<u64> = (base..base + 1200).collect();
        let ids_b: Vec<u64> = (base + 600..base + 1800).rev().collect();
        all.extend(ids_a.iter().copied());
        all.extend(ids_b.iter().copied());
        let (ra, rb) = (records(ids_a, "a"), records(ids_b, "b"));
        let (x, y) = tokio::join!(
            async {
                for batch in ra.chunks(400) {
                    a.ship(batch).await?;
                }
                Ok::<_, SinkError>(())
            },
            async {
                for batch in rb.chunks(400) {
                    b.ship(batch).await?;
                }
                Ok::<_, SinkError>(())
            }
        );
        x.unwrap();
        y.unwrap();
    }
    assert_eq!(count(&c, "crawl_records"), all.len() as u64);
    assert_eq!(
        c.psql("SELECT count(DISTINCT record_id) FROM crawl_records"),
        all.len().to_string()
    );
    assert!(
        !c.log().contains("deadlock detected"),
        "the server saw a deadlock"
    );
}

#[tokio::test]
async fn a_table_that_does_not_fit_is_refused_by_column_and_left_empty() {
    if !pg::require("postgres sink: incompatible tables") {
        return;
    }
    let c = Cluster::start();
    let full = "url text NOT NULL, host text NOT NULL, outcome text NOT NULL, status integer, \
                fetched_at timestamptz, record jsonb NOT NULL, warc_file text, warc_offset bigint, \
                warc_length bigint";
    let cases = [
        (
            "int_id",
            format!("record_id integer PRIMARY KEY, {full}"),
            "column record_id is integer, not text",
        ),
        (
            "no_host",
            format!(
                "record_id text PRIMARY KEY, {}",
                full.replace("host text NOT NULL, ", "")
            ),
            "column host (text) is missing",
        ),
        (
            "no_key",
            format!("record_id text, {full}"),
            "record_id has no PRIMARY KEY or UNIQUE constraint",
        ),
        (
            "strict_status",
            format!(
                "record_id text PRIMARY KEY, {}",
                full.replace("status integer", "status integer NOT NULL")
            ),
            "column status is NOT NULL",
        ),
        (
            "extra_column",
            format!("record_id text PRIMARY KEY, {full}, owner text NOT NULL"),
            "column owner is NOT NULL without a default",
        ),
    ];
    for (table, columns, expect) in &cases {
        c.psql(&format!("CREATE TABLE {table} ({columns})"));
        let e = connect_err(&c.url(), table).await;
        assert!(
            matches!(e, SinkError::Setup { key: "table", .. }),
            "{table}: {e:?}"
        );
        assert!(e.to_string().contains(expect), "{table}: {e}");
        assert_eq!(count(&c, table), 0, "{table}: rows were written");
    }
    // A table that fits, but for a column of its own with a default: accepted.
    c.psql(&format!(
        "CREATE TABLE fits (record_id text UNIQUE, {full}, seen boolean NOT NULL DEFAULT true)"
    ));
    let mut t = target(&c.url(), "fits", OnConflict::Nothing).await;
    t.ship(&records(0..10, "x")).await.unwrap();
    assert_eq!(count(&c, "fits"), 10);
    // A view is not a table; a schema that does not exist is named.
    c.psql("CREATE VIEW a_view AS SELECT * FROM fits");
    let e = connect_err(&c.url(), "a_view").await;
    assert!(e.to_string().contains("a_view is a view"), "{e}");
    let e = connect_err(&c.url(), "nowhere.records").await;
    assert!(
        matches!(e, SinkError::Setup { key: "table", .. }) && e.to_string().contains("nowhere"),
        "{e}"
    );
    // A role that may not write the table, or read its key (ON CONFLICT does), is told so.
    let e = connect_err(&c.password_url(), "fits").await;
    assert!(
        matches!(e, SinkError::Setup { key: "table", .. })
            && e.to_string()
                .contains("may not INSERT column record_id, url,"),
        "{e}"
    );
    c.psql(&format!("GRANT INSERT ON fits TO {}", pg::PASSWORD_ROLE));
    let e = connect_err(&c.password_url(), "fits").await;
    assert!(
        e.to_string().contains("may not SELECT column record_id")
            && !e.to_string().contains("INSERT"),
        "{e}"
    );
    c.psql(&format!(
        "GRANT SELECT (record_id) ON fits TO {}",
        pg::PASSWORD_ROLE
    ));
    let mut w = target(&c.password_url(), "fits", OnConflict::Nothing).await;
    w.ship(&records(5..15, "w")).await.unwrap();
    assert_eq!(count(&c, "fits"), 15);
    let (sink, cfg) = config(&c.password_url(), "fits", OnConflict::Update);
    let e = PostgresTarget::connect(&sink, &cfg).await.unwrap_err();
    assert!(e.to_string().contains("may not SELECT column url"), "{e}");
    assert!(e.to_string().contains("may not UPDATE column url"), "{e}");
}

#[tokio::test]
async fn unreachable_servers_fail_in_bounded_time() {
    // No server needed: a closed port, and a listener that never answers.
    let closed = {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        l.local_addr().unwrap().port()
    };
    let started = Instant::now();
    let e = connect_err(&format!("postgres://u:hunter2@127.0.0.1:{closed}/db"), "t").await;
    assert!(
        started.elapsed() < TIMEOUT,
        "a closed port took {:?}",
        started.elapsed()
    );
    assert!(
        matches!(e, SinkError::Unreachable { key: "url", .. }),
        "{e:?}"
    );
    assert_eq!(e.kind(), "unreachable");
    let text = format!("{e} {e:?}");
    assert!(text.contains(&format!("127.0.0.1:{closed}")), "{text}");
    assert!(!text.contains("hunter2"), "{text}");

    let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let e = connect_err(&format!("postgres://u@127.0.0.1:{port}/db"), "t").await;
    let took = started.elapsed();
    assert!(
        took >= TIMEOUT / 2 && took < TIMEOUT + Duration::from_secs(2),
        "a silent server took {took:?}"
    );
    assert!(
        matches!(e, SinkError::Unreachable { key: "url", .. }),
        "{e:?}"
    );
    drop(silent);
}

#[tokio::test]
async fn a_wrong_password_is_refused_and_never_shown() {
    if !pg::require("postgres sink: passwords") {
        return;
    }
    let c = Cluster::start();
    c.psql(&format!(
        "GRANT ALL ON SCHEMA public TO {}",
        pg::PASSWORD_ROLE
    ));
    let right = c.password().to_owned();
    let wrong_url = c.password_url().replace(&right, "Wr0ng-Secret-77");
    let e = connect_err(&wrong_url, "crawl_records").await;
    assert!(
        matches!(e, SinkError::Unreachable { key: "url", .. }),
        "{e:?}"
    );
    let text = format!("{e} | {e:?}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(text.contains("***"), "{text}");
    assert!(!text.contains("Wr0ng-Secret-77"), "{text}");
    assert!(!text.contains(&right), "{text}");

    // With the right password the role connects, creates its table and ships; nothing shows the password.
    let (sink, cfg) = config(&c.password_url(), "crawl_records", OnConflict::Nothing);
    let mut t = PostgresTarget::connect(&sink, &cfg).await.unwrap();
    t.ship(&records(0..5, "x")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 5);
    let shown = format!("{t:?} {sink:?} {cfg:?}");
    assert!(!shown.contains(&right), "{shown}");

    // A database that does not exist needs the operator: Setup on `url`, still without the password.
    let e = connect_err(&c.password_url().replace("/postgres", "/nodb"), "t").await;
    assert!(matches!(e, SinkError::Setup { key: "url", .. }), "{e:?}");
    assert!(e.to_string().contains("nodb"), "{e}");
    assert!(!format!("{e} {e:?}").contains(&right));
}

#[tokio::test]
async fn an_outage_mid_way_fails_in_bounded_time_and_the_batch_lands_after_a_restart() {
    if !pg::require("postgres sink: outage") {
        return;
    }
    let mut c = Cluster::start();
    let mut t = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    t.ship(&records(0..200, "x")).await.unwrap();
    c.stop();
    let batch = records(200..400, "x");
    for _ in 0..2 {
        // First the broken connection, then the refused reconnect.
        let started = Instant::now();
        let e = t.ship(&batch).await.unwrap_err();
        eprintln!("while the server is down: {e}");
        assert!(matches!(e.kind(), "transient" | "unreachable"), "{e:?}");
        assert!(
            started.elapsed() < TIMEOUT + Duration::from_secs(1),
            "took {:?}",
            started.elapsed()
        );
    }
    c.start_again();
    let s = t.ship(&batch).await.unwrap();
    assert_eq!(s.records, 200);
    assert_eq!(count(&c, "crawl_records"), 400);
    // The rest of the crawl goes on over the new connection.
    t.ship(&records(400..500, "x")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 500);
}

#[tokio::test]
async fn a_batch_waiting_on_another_writers_lock_times_out_and_lands_later() {
    if !pg::require("postgres sink: lock wait") {
        return;
    }
    let c = Cluster::start();
    let mut t = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    let mut other = client(&c).await;
    let tx = other.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO crawl_records (record_id, url, host, outcome, record) \
         VALUES ('r000005', 'http://x/', 'x', 'fetched', '{}')",
        &[],
    )
    .await
    .unwrap();
    let started = Instant::now();
    let e = t.ship(&records(0..10, "x")).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.kind(), "transient", "{e:?}");
    assert!(
        took >= TIMEOUT / 2 && took < TIMEOUT + Duration::from_secs(2),
        "took {took:?}"
    );
    tx.rollback().await.unwrap();
    t.ship(&records(0..10, "x")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 10);
}

#[tokio::test]
async fn a_nul_escape_in_a_record_is_stored_as_a_replacement_character() {
    if !pg::require("postgres sink: NUL") {
        return;
    }
    let c = Cluster::start();
    let mut t = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    let line = r#"{"url":"http://a.test/","outcome":"fetched","status":200,"record_id":"nul-1","title":"a\u0000b"}"#;
    let r = ShipRecord::parse("pg", 1, Bytes::from_static(line.as_bytes())).unwrap();
    t.ship(&[r]).await.unwrap();
    assert_eq!(
        c.psql("SELECT record->>'title' FROM crawl_records WHERE record_id = 'nul-1'"),
        "a\u{fffd}b"
    );
}

/// A test CA and a certificate it signed for localhost and 127.0.0.1: (CA PEM, server cert PEM, key PEM).
fn test_certs() -> (String, TlsFiles) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose, SanType,
    };
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "crawl-engine test ca");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress(Ipv4Addr::LOCALHOST.into()));
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (
        ca_cert.pem(),
        TlsFiles {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        },
    )
}

#[tokio::test]
async fn tls_is_verified_against_the_given_roots() {
    if !pg::require("postgres sink: TLS") {
        return;
    }
    let (ca_pem, files) = test_certs();
    let c = Cluster::with(Options { tls: Some(files) });
    let ca = c.dir().join("test-ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        c.url(),
        ca.display()
    );
    let mut t = target(&url, "crawl_records", OnConflict::Nothing).await;
    t.ship(&records(0..3, "x")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 3);
    assert_eq!(
        c.psql(
            "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'crawl-engine sink pg'"
        ),
        "t",
        "the sink's connection is not encrypted"
    );
    // The default roots do not know the test CA: refused, and the error says why.
    let e = connect_err(&format!("{}?sslmode=require", c.url()), "crawl_records").await;
    assert!(matches!(e, SinkError::Unreachable { .. }), "{e:?}");
    assert!(e.to_string().contains("certificate"), "{e}");
    // A root file that is not there is a setup error naming it.
    let e = connect_err(
        &format!(
            "{}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            c.url()
        ),
        "crawl_records",
    )
    .await;
    assert!(
        matches!(e, SinkError::Setup { key: "url", .. })
            && e.to_string().contains("/nonexistent/ca.pem"),
        "{e:?}"
    );
}

#[tokio::test]
async fn tls_required_from_a_server_without_it_is_refused() {
    if !pg::require("postgres sink: TLS refused") {
        return;
    }
    let c = Cluster::start();
    let e = connect_err(&format!("{}?sslmode=require", c.url()), "crawl_records").await;
    assert!(matches!(e, SinkError::Unreachable { .. }), "{e:?}");
    assert!(e.to_string().contains("TLS"), "{e}");
    assert_eq!(c.psql("SELECT to_regclass('crawl_records') IS NULL"), "t");
}

#[tokio::test]
async fn a_row_the_table_refuses_needs_the_operator_and_ships_once_the_table_is_fixed() {
    if !pg::require("postgres sink: refused rows") {
        return;
    }
    let c = Cluster::start();
    let mut t = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    t.ship(&records(0..10, "x")).await.unwrap();
    c.psql("ALTER TABLE crawl_records ADD CONSTRAINT no_excluded CHECK (outcome <> 'excluded') NOT VALID");
    let batch = records(10..20, "x");
    let e = t.ship(&batch).await.unwrap_err();
    assert!(matches!(e, SinkError::Setup { key: "table", .. }), "{e:?}");
    assert!(e.to_string().contains("no_excluded"), "{e}");
    assert_eq!(
        count(&c, "crawl_records"),
        10,
        "part of the batch was written"
    );
    c.psql("ALTER TABLE crawl_records DROP CONSTRAINT no_excluded");
    t.ship(&batch).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 20);
}

/// Sends SIGSTOP to a process, and SIGCONT on drop, so a stopped process never outlives the test stopped.
struct Stopped(String);

impl Stopped {
    fn new(pid: &str) -> Stopped {
        let status = std::process::Command::new("kill")
            .args(["-STOP", pid])
            .status()
            .unwrap();
        assert!(status.success());
        Stopped(pid.to_owned())
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0])
            .status();
    }
}

#[tokio::test]
async fn a_hung_server_process_times_out_and_the_next_call_connects_anew() {
    if !pg::require("postgres sink: hung backend") {
        return;
    }
    let c = Cluster::start();
    let mut t = target(&c.url(), "crawl_records", OnConflict::Nothing).await;
    t.ship(&records(0..10, "x")).await.unwrap();
    let pid =
        c.psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'crawl-engine sink pg'");
    assert!(!pid.is_empty() && !pid.contains('\n'), "{pid:?}");
    let stopped = Stopped::new(&pid);
    // The server process serving the sink hangs: its statement_timeout cannot fire, the client's own does.
    let started = Instant::now();
    let e = t.ship(&records(10..20, "x")).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.kind(), "transient", "{e:?}");
    assert!(
        took >= TIMEOUT && took < TIMEOUT + Duration::from_secs(2),
        "took {took:?}"
    );
    // The next call opens a new connection (served by a new process) and the batch lands.
    t.ship(&records(10..20, "x")).await.unwrap();
    assert_eq!(count(&c, "crawl_records"), 20);
    drop(stopped);
}
