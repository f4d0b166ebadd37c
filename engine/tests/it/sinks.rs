//! Sinks end to end: the real binary crawling a loopback site while delivering to a Kafka-protocol broker
//! (tansu), a PostgreSQL cluster (initdb) and an S3-compatible server (moto), each started by the test. What must
//! hold: every record reaches Kafka with its `record_id` (duplicates only from a kill -9, counted), PostgreSQL has
//! exactly one row per record through kill -9s and an outage (with backpressure while it is down), every closed WARC
//! file is uploaded once and warcio reads the copy; a sink out of reach refuses the run and `--check` (exit 2)
//! naming the sink and its setting, without its secrets; the shipping runs at a lower CPU priority than the crawl.
//!
//! Sites: 3 hosts x 120 pages on 127.0.5.60-79 (this file's range).

use crate::ENGINE;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crawl_tests::engine::{Running, TestCrawl};
use crawl_tests::site::{Site, SiteSpec};

const DEADLINE: Duration = Duration::from_secs(90);

/// A site of 3 hosts x `pages` pages from 127.0.5.`octet`, and a crawl of it (one request at a time per host, a
/// short delay, so the crawl lasts a few seconds) with `extra` config.
async fn fixture(octet: u8, pages: usize, extra: &str) -> (Site, TestCrawl) {
    let spec = SiteSpec {
        hosts: 3,
        pages_per_host: pages,
        first_octet: octet,
        prefix: [127, 0, 5],
        page_bytes: 3000,
        ..SiteSpec::default()
    };
    let site = Site::start(spec).await.expect("start site");
    let overrides = format!(
        "[crawl]\nmax_depth = 1000\n[politeness]\nper_host_concurrency = 1\nmin_delay_ms = 15\n\
         [fetch]\nconcurrency = 6\n{extra}"
    );
    let crawl = TestCrawl::new(ENGINE, &site.all_seed_urls(), &overrides).expect("test crawl");
    (site, crawl)
}

/// The JSONL's complete lines: record id -> the line.
fn jsonl_by_id(crawl: &TestCrawl) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(&crawl.jsonl).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let id = v["record_id"]
            .as_str()
            .expect("every record has a record_id")
            .to_owned();
        assert!(
            out.insert(id.clone(), line.to_owned()).is_none(),
            "record id {id} twice in the JSONL"
        );
    }
    out
}

fn jsonl_lines(crawl: &TestCrawl) -> usize {
    std::fs::read(&crawl.jsonl).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count())
}

/// Waits until the JSONL has at least `n` lines.
fn wait_for_lines(crawl: &TestCrawl, n: usize, within: Duration) {
    let start = Instant::now();
    while jsonl_lines(crawl) < n {
        assert!(
            start.elapsed() < within,
            "the JSONL did not reach {n} lines in {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `crawl` to its end and asserts exit 0.
fn finish(run: Running, label: &str) {
    let r = run.wait(DEADLINE);
    assert_eq!(r.code(), Some(0), "{label}: {}\n{}", r.stdout, r.stderr);
}

fn kill(run: Running) {
    run.signal("KILL");
    let _ = run.wait(Duration::from_secs(10));
}

/// Fetching is held back: once what was in flight has ended, the site sees no request for a while.
fn assert_held(site: &Site) {
    std::thread::sleep(Duration::from_millis(1500));
    let at = site.total_requests();
    std::thread::sleep(Duration::from_secs(2));
    let later = site.total_requests();
    assert_eq!(
        at, later,
        "requests went on while a sink held fetching back"
    );
}

/// True when a JSON log line says `message`.
fn logged(line: &str, message: &str) -> bool {
    line.contains(&format!("\"message\":\"{message}\""))
}

// ------------------------------------------------------------------------------------------------ Kafka

mod kafka {
    use super::*;
    use crawl_test_kit::kafka::Broker;

    fn sink(broker: &Broker, topic: &str) -> String {
        format!(
            "[[sinks]]\nkind = \"kafka\"\nbrokers = [\"{}\"]\ntopic = \"{topic}\"\ncreate_topic = true\n\
             partitions = 4\nbatch_records = 40\ntimeout_ms = 3000\nretry_max_ms = 500\n",
            broker.bootstrap()
        )
    }

    /// Every message of the topic by record id, with how many copies each has; checks each copy's value is the
    /// record's JSONL line and its key the URL's fingerprint.
    fn topic_by_id(
        broker: &Broker,
        topic: &str,
        want: &BTreeMap<String, String>,
    ) -> BTreeMap<String, usize> {
        let messages = broker
            .read_all(topic, Duration::from_secs(30))
            .expect("read the topic");
        let mut copies = BTreeMap::new();
        for m in messages {
            let id = String::from_utf8(m.header("record_id").expect("a record_id header").to_vec())
                .expect("utf-8 id");
            let line = want
                .get(&id)
                .unwrap_or_else(|| panic!("message {id} is no JSONL record"));
            assert_eq!(
                m.value,
                line.as_bytes(),
                "the message of {id} is its JSONL line"
            );
            assert_eq!(
                m.key.as_deref(),
                Some(id.split('-').next().unwrap_or_default().as_bytes()),
                "key = the URL's fingerprint"
            );
            *copies.entry(id).or_insert(0) += 1;
        }
        copies
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_record_reaches_the_topic_with_its_id_across_a_kill() {
        let Some(broker) = Broker::start("kafka sink: kill -9") else {
            return;
        };
        let (_site, crawl) = fixture(60, 160, &sink(&broker, "records")).await;
        for n in [60, 200, 400] {
            let run = crawl.start();
            wait_for_lines(&crawl, n, DEADLINE);
            kill(run);
        }
        finish(crawl.start(), "after three kill -9s");
        let want = jsonl_by_id(&crawl);
        assert!(want.len() > 200, "{} records", want.len());
        let copies = topic_by_id(&broker, "records", &want);
        let missing: Vec<_> = want.keys().filter(|id| !copies.contains_key(*id)).collect();
        assert!(
            missing.is_empty(),
            "{} records not in the topic: {missing:?}",
            missing.len()
        );
        let dups: usize = copies.values().map(|n| n - 1).sum();
        eprintln!(
            "kafka sink: {} records, {} messages, {dups} duplicates after three kill -9s",
            want.len(),
            copies.values().sum::<usize>()
        );
        // A kill repeats at most the batch delivered but not checkpointed: one batch of 40 records each here.
        assert!(dups <= 3 * 40, "{dups} duplicates after three kills");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_broker_stopped_mid_crawl_holds_fetching_back_then_catches_up() {
        let Some(mut broker) = Broker::durable("kafka sink: broker outage") else {
            return;
        };
        let extra = format!("{}[output]\nsink_max_lag = 30\n", sink(&broker, "outage"));
        let (site, crawl) = fixture(63, 80, &extra).await;
        let run = crawl.start();
        wait_for_lines(&crawl, 20, DEADLINE);
        broker.stop();
        let held = run.wait_for_line(Duration::from_secs(30), |l| {
            logged(l, "sink behind: fetching waits for it").then_some(())
        });
        assert!(held.is_some(), "no backpressure:\n{}", run.stderr_so_far());
        assert_held(&site);
        broker.start_again().expect("start the broker again");
        let resumed = run.wait_for_line(Duration::from_secs(60), |l| {
            logged(l, "sink caught up: fetching goes on").then_some(())
        });
        assert!(
            resumed.is_some(),
            "never caught up:\n{}",
            run.stderr_so_far()
        );
        finish(run, "after the outage");
        let want = jsonl_by_id(&crawl);
        let copies = topic_by_id(&broker, "outage", &want);
        assert_eq!(copies.len(), want.len(), "every record in the topic");
        let dups: usize = copies.values().map(|n| n - 1).sum();
        eprintln!(
            "kafka sink: {} records, {dups} duplicates after a broker outage",
            want.len()
        );
        // Only what was in flight when the broker died (written, its acknowledgement lost) is sent again: at most
        // one batch.
        assert!(dups <= 40, "{dups} duplicates");
    }
}

// ------------------------------------------------------------------------------------------------ PostgreSQL

mod postgres {
    use super::*;
    use crawl_test_kit::postgres::{Cluster, require};
    use crawl_tests::otlp::OtlpReceiver;

    fn sink(pg: &Cluster, table: &str) -> String {
        format!(
            "[[sinks]]\nkind = \"postgres\"\nurl = \"{}\"\ntable = \"{table}\"\nbatch_records = 25\n\
             timeout_ms = 2000\nretry_max_ms = 500\n",
            pg.password_url()
        )
    }

    /// The table's record ids, each once (the primary key), checked against the JSONL: the same set, and each
    /// row's record is its line.
    fn assert_rows_are_the_records(pg: &Cluster, table: &str, crawl: &TestCrawl) {
        let want = jsonl_by_id(crawl);
        let rows = pg.psql(&format!(
            "select record_id, record::text from {table} order by record_id"
        ));
        let mut got = BTreeMap::new();
        for row in rows.lines().filter(|l| !l.is_empty()) {
            let (id, record) = row.split_once('|').expect("id|record");
            got.insert(id.to_owned(), record.to_owned());
        }
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "the table's record ids are the JSONL's"
        );
        for (id, line) in &want {
            let a: serde_json::Value = serde_json::from_str(line).expect("line");
            let b: serde_json::Value = serde_json::from_str(&got[id]).expect("row");
            assert_eq!(a, b, "the row of {id} holds its record");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_row_per_record_through_kills_and_an_outage_with_backpressure() {
        if !require("postgres sink: kill -9 and outage") {
            return;
        }
        let mut pg = Cluster::start();
        let rx = OtlpReceiver::start().await;
        let extra = format!(
            "{}[output]\nsink_max_lag = 30\n[observability]\notlp_endpoint = \"{}\"\n",
            sink(&pg, "records"),
            rx.http_endpoint()
        );
        let (site, crawl) = fixture(66, 90, &extra).await;
        // Two kills at different points.
        for n in [40, 120] {
            let run = crawl.start();
            wait_for_lines(&crawl, n, DEADLINE);
            kill(run);
        }
        // An outage: the database stops, the crawl holds back, then catches up once it is back.
        let run = crawl.start();
        wait_for_lines(&crawl, 150, DEADLINE);
        pg.stop();
        let held = run.wait_for_line(Duration::from_secs(30), |l| {
            logged(l, "sink behind: fetching waits for it").then_some(())
        });
        assert!(held.is_some(), "no backpressure:\n{}", run.stderr_so_far());
        assert_held(&site);
        pg.start_again();
        finish(run, "after the outage");
        assert_rows_are_the_records(&pg, "records", &crawl);
        let count: usize = pg
            .psql("select count(*) from records")
            .trim()
            .parse()
            .expect("count");
        assert_eq!(count, jsonl_lines(&crawl), "one row per JSONL line");
        // Each batch is a trace of its own: delivered ones, and failed ones (the outage) marked as errors; no span
        // carries the password.
        let secret = pg.password().to_owned();
        let seen = rx.wait_for(
            |spans| {
                let batches: Vec<_> = spans.iter().filter(|s| s.name == "sink.batch").collect();
                batches
                    .iter()
                    .any(|s| !s.status_error && s.attr_int("sink.records").is_some_and(|n| n > 0))
                    && batches.iter().any(|s| s.status_error)
            },
            Duration::from_secs(15),
        );
        assert!(
            seen,
            "sink.batch spans, delivered and failed: {:?}",
            rx.spans().len()
        );
        for s in rx.spans().iter().filter(|s| s.name == "sink.batch") {
            assert_eq!(s.attr_str("sink.name"), Some("postgres"), "{s:?}");
            assert!(s.parent_span_id.is_none(), "a root: {s:?}");
            assert!(
                !format!("{s:?}").contains(&secret),
                "the password in a span: {s:?}"
            );
        }
        // The password is in no log line, record or file of the crawl.
        for entry in walk(crawl.dir.path()) {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(&secret),
                "the password in {}",
                entry.display()
            );
        }
    }

    /// Every file under `dir` (the config file, which holds the URL, aside).
    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                } else if p
                    .file_name()
                    .is_some_and(|n| n != "config.toml" && n != "config.toml.tmp")
                {
                    out.push(p);
                }
            }
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_table_of_another_shape_refuses_the_run_and_nothing_is_written() {
        if !require("postgres sink: incompatible table") {
            return;
        }
        let pg = Cluster::start();
        pg.psql("create table records (record_id integer primary key, url text)");
        let (_site, crawl) = fixture(69, 5, &sink(&pg, "records")).await;
        let r = crawl.run(DEADLINE);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code(), Some(2), "{all}");
        assert!(all.contains("record_id") && all.contains("table"), "{all}");
        assert_eq!(pg.psql("select count(*) from records").trim(), "0");
        assert_eq!(jsonl_lines(&crawl), 0, "nothing fetched");
    }
}

// ------------------------------------------------------------------------------------------------ object store

mod object_store {
    use super::*;
    use crawl_test_kit::s3::MotoServer;
    use crawl_test_kit::warcio::Warcio;

    fn sink(s3: &MotoServer, prefix: &str) -> String {
        format!(
            "[[sinks]]\nkind = \"object_store\"\nurl = \"s3://crawl/{prefix}\"\nendpoint = \"{}\"\n\
             allow_http = true\nregion = \"us-east-1\"\naccess_key_id = \"AKIDTEST\"\n\
             secret_access_key = \"canary-upload-secret\"\nmultipart_threshold_bytes = 600000\n\
             timeout_ms = 5000\nretry_max_ms = 500\n\
             [output]\nwarc_dir = \"warc\"\nwarc_max_bytes = 1048576\n",
            s3.endpoint()
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_closed_warc_file_is_uploaded_once_through_a_kill_and_warcio_reads_the_copies() {
        let Some(warcio) = Warcio::find("object store sink: warcio") else {
            return;
        };
        let Some(s3) = MotoServer::find("object store sink: moto") else {
            return;
        };
        s3.create_bucket("crawl").expect("bucket");
        let (_site, crawl) = fixture(72, 150, &sink(&s3, "run")).await;
        let warc = crawl.dir.path().join("warc");
        let run = crawl.start();
        wait_for_lines(&crawl, 150, DEADLINE);
        kill(run);
        let run = crawl.start();
        finish(run, "after kill -9");
        let mut local: Vec<String> = std::fs::read_dir(&warc)
            .expect("warc dir")
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .filter(|n| n.ends_with(".warc.gz"))
            .collect();
        local.sort();
        assert!(
            local.len() >= 3,
            "several files (rotation and a new file per run): {local:?}"
        );
        let keys = s3.keys("crawl", "run/").expect("keys");
        let uploaded: BTreeSet<&str> = keys
            .iter()
            .filter_map(|k| k.strip_prefix("run/"))
            .filter(|k| k.ends_with(".warc.gz"))
            .collect();
        assert_eq!(
            uploaded,
            local.iter().map(String::as_str).collect::<BTreeSet<_>>(),
            "every local WARC file, and only those, in the bucket"
        );
        let manifest = s3
            .object("crawl", "run/manifest.jsonl")
            .expect("get")
            .expect("a manifest object");
        let listed: Vec<String> = String::from_utf8_lossy(&manifest)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("manifest line");
                v["file"].as_str().expect("file").to_owned()
            })
            .collect();
        assert_eq!(
            listed.len(),
            local.len(),
            "each file once in the manifest: {listed:?}"
        );
        assert!(
            s3.uploads("crawl").expect("uploads").is_empty(),
            "no multipart upload left"
        );
        let copies = crawl.dir.path().join("copies");
        std::fs::create_dir_all(&copies).expect("dir");
        for name in &local {
            let body = s3
                .object("crawl", &format!("run/{name}"))
                .expect("get")
                .expect("object");
            assert_eq!(
                body,
                std::fs::read(warc.join(name)).expect("local"),
                "{name} byte for byte"
            );
            let copy = copies.join(name);
            std::fs::write(&copy, &body).expect("write copy");
            warcio
                .check(&copy)
                .unwrap_or_else(|e| panic!("warcio check {name}: {e}"));
        }
        // Every record's WARC location is in an uploaded file.
        for line in jsonl_by_id(&crawl).values() {
            let v: serde_json::Value = serde_json::from_str(line).expect("line");
            if let Some(f) = v["warc"]["file"].as_str() {
                assert!(uploaded.contains(f), "{f} not uploaded");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------ start

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sinks_out_of_reach_refuse_the_run_and_check_naming_sink_and_key() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    for (label, sink, names) in [
        (
            "kafka",
            format!(
                "[[sinks]]\nname = \"events\"\nkind = \"kafka\"\nbrokers = [\"127.0.0.1:{closed}\"]\n\
                 topic = \"t\"\ntimeout_ms = 1500\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\n\
                 sasl_password = \"canary-kafka-secret\"\n"
            ),
            ["`events`", "brokers"],
        ),
        (
            "postgres",
            format!(
                "[[sinks]]\nname = \"rows\"\nkind = \"postgres\"\n\
                 url = \"postgres://crawler:canary-pg-secret@127.0.0.1:{closed}/crawl\"\ntimeout_ms = 1500\n"
            ),
            ["`rows`", "url"],
        ),
        (
            "object_store",
            format!(
                "[[sinks]]\nname = \"archive\"\nkind = \"object_store\"\nurl = \"s3://bucket/p\"\n\
                 endpoint = \"http://127.0.0.1:{closed}\"\nallow_http = true\nregion = \"us-east-1\"\n\
                 access_key_id = \"AKIDCANARY\"\nsecret_access_key = \"canary-s3-secret\"\ntimeout_ms = 1500\n\
                 [output]\nwarc_dir = \"warc\"\n"
            ),
            ["`archive`", "endpoint"],
        ),
    ] {
        let crawl =
            TestCrawl::new(ENGINE, &["http://127.0.5.79:9/".to_owned()], &sink).expect("crawl");
        let mut check = crawl.command();
        check.arg("--check");
        let out = check.output().expect("run --check");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(2), "{label} --check: {text}");
        for n in names {
            assert!(text.contains(n), "{label} --check names {n}: {text}");
        }
        let r = crawl.run(Duration::from_secs(30));
        let all = format!("{}{}", r.stdout, r.stderr);
        assert_eq!(r.code(), Some(2), "{label} run: {all}");
        for n in names {
            assert!(all.contains(n), "{label} run names {n}: {all}");
        }
        for secret in [
            "canary-kafka-secret",
            "canary-pg-secret",
            "canary-s3-secret",
        ] {
            assert!(
                !text.contains(secret) && !all.contains(secret),
                "{label}: {secret} shown"
            );
        }
        assert_eq!(jsonl_lines(&crawl), 0, "{label}: nothing fetched");
    }
}

// ------------------------------------------------------------------------------------------------ Redis mode

mod redis_mode {
    use super::*;
    use crawl_test_kit::postgres::{Cluster, require};
    use crawl_test_kit::redis::{self, RedisServer};

    /// Two processes share one crawl through a Redis the test starts, each shipping its own records to one table;
    /// one is killed mid-crawl and started again. The table ends with exactly the crawl's records, each once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_process_ships_its_own_records_and_the_table_has_each_once() {
        if !redis::require("sinks in redis mode", false)
            || !require("sinks in redis mode: postgres")
        {
            return;
        }
        let pg = Cluster::start();
        let redis = RedisServer::start();
        let extra = format!(
            "[[sinks]]\nkind = \"postgres\"\nurl = \"{}\"\ntable = \"shared\"\nbatch_records = 20\n\
             [frontier]\nbackend = \"redis\"\ncommit_interval_ms = 20\n\
             [frontier.redis]\nurls = [\"{}\"]\ncrawl = \"sinks\"\nshards = 16\nlease_ms = 2000\n",
            pg.url(),
            redis.url()
        );
        let (site, first) = fixture(75, 80, &extra).await;
        let second = TestCrawl::new(ENGINE, &site.all_seed_urls(), "").expect("second crawl");
        std::fs::copy(&first.config_path, &second.config_path).expect("config");
        let text = std::fs::read_to_string(&second.config_path).expect("read");
        let text = text
            .replace(
                &first.jsonl.display().to_string(),
                &second.jsonl.display().to_string(),
            )
            .replace(
                &first.data_dir.display().to_string(),
                &second.data_dir.display().to_string(),
            );
        second.write_raw(&text).expect("write");
        let a = first.start();
        let b = second.start();
        // The process that has written 40 records is killed mid-crawl and started again (which one gets the
        // shards first is the leases' race).
        let start = Instant::now();
        let (a, b) = loop {
            if jsonl_lines(&first) >= 40 {
                kill(a);
                break (first.start(), b);
            }
            if jsonl_lines(&second) >= 40 {
                kill(b);
                break (a, second.start());
            }
            assert!(
                start.elapsed() < DEADLINE,
                "neither process wrote 40 records in {DEADLINE:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        finish(a, "first process");
        finish(b, "second process");
        let mut ids = BTreeSet::new();
        for c in [&first, &second] {
            let text = std::fs::read_to_string(&c.jsonl).expect("jsonl");
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).expect("line");
                ids.insert(v["record_id"].as_str().expect("id").to_owned());
            }
        }
        assert!(ids.len() > 200, "{} records", ids.len());
        let rows: BTreeSet<String> = pg
            .psql("select record_id from shared")
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        assert_eq!(rows, ids, "one row per record of the crawl");
    }
}

/// `--check` connects a reachable sink and leaves no file behind (no data_dir, no sink state).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reaches_a_sink_and_writes_nothing() {
    let store = tempfile::tempdir().expect("store dir");
    let sink = format!(
        "[[sinks]]\nkind = \"object_store\"\nurl = \"file://{}\"\n[output]\nwarc_dir = \"warc\"\n",
        store.path().display()
    );
    let crawl = TestCrawl::new(ENGINE, &["http://127.0.5.79:9/".to_owned()], &sink).expect("crawl");
    let mut check = crawl.command();
    check.arg("--check");
    let out = check.output().expect("run --check");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!crawl.data_dir.exists(), "--check made the data_dir");
    assert_eq!(
        std::fs::read_dir(store.path()).expect("store").count(),
        0,
        "--check wrote to the store"
    );
    // The same store where no folder can be made (under a file): the probe really opens it, and refuses.
    let file = store.path().join("a-file");
    std::fs::write(&file, b"x").expect("file");
    crawl
        .rewrite(&sink.replace(
            &store.path().display().to_string(),
            &file.join("sub").display().to_string(),
        ))
        .expect("config");
    let out = crawl
        .command()
        .arg("--check")
        .output()
        .expect("run --check");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("`object_store`") && text.contains("`url`"),
        "{text}"
    );
    assert!(!crawl.data_dir.exists(), "--check made the data_dir");
}

/// The shipping thread (and the threads it starts) runs 10 nice steps below the crawl's threads, so a busy machine
/// fetches first; the crawl itself keeps its priority.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sinks_ship_at_a_lower_cpu_priority_than_the_crawl() {
    let spec = SiteSpec {
        hosts: 1,
        pages_per_host: 200,
        first_octet: 78,
        prefix: [127, 0, 5],
        ..SiteSpec::default()
    };
    let site = Site::start(spec).await.expect("start site");
    let store = tempfile::tempdir().expect("store dir");
    let extra = format!(
        "[politeness]\nper_host_concurrency = 1\nmin_delay_ms = 15\n\
         [[sinks]]\nkind = \"object_store\"\nurl = \"file://{}\"\n[output]\nwarc_dir = \"warc\"\n",
        store.path().display()
    );
    let crawl = TestCrawl::new(ENGINE, &site.all_seed_urls(), &extra).expect("crawl");
    let run = crawl.start();
    run.wait_for_line(DEADLINE, |l| l.contains("sink started").then_some(()))
        .expect("the sink started");
    // (thread name, nice) of every thread of the engine now.
    let pid = run.child().id();
    let nice_of = |stat: &str| -> Option<(String, i64)> {
        let (head, rest) = stat.rsplit_once(") ")?;
        let name = head.split_once(" (")?.1.to_owned();
        // After the name: state is field 3, nice field 19.
        let nice = rest.split_whitespace().nth(19 - 3)?.parse().ok()?;
        Some((name, nice))
    };
    let threads: Vec<(String, i64)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the engine's threads")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("stat")).ok())
        .filter_map(|stat| nice_of(&stat))
        .collect();
    let main = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/stat"))
        .ok()
        .and_then(|stat| nice_of(&stat))
        .map(|t| t.1)
        .expect("the main thread");
    let lowered: Vec<&(String, i64)> = threads.iter().filter(|t| t.1 == main + 10).collect();
    assert!(
        !lowered.is_empty(),
        "no thread 10 nice steps below the crawl's: {threads:?}"
    );
    assert!(
        threads.iter().filter(|t| t.1 == main).count() > lowered.len(),
        "the crawl's threads keep their priority: {threads:?}"
    );
    finish(run, "crawl");
    assert!(
        std::fs::read_dir(store.path()).expect("store").count() > 0,
        "the sink uploaded nothing"
    );
}
