//! The Kafka sink against a real Kafka-compatible broker (tansu, started by the test kit on a loopback port):
//! records shipped and read back, the spread over partitions, topic checks and creation, unreachable and restarted
//! brokers, oversize records, and secrets kept out of every message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use crawl_core::config::{
    KafkaAcks, KafkaCompression, KafkaKey, KafkaSasl, KafkaSink, Oversize, Secret, SinkConfig,
    SinkKind,
};
use crawl_sinks::SinkError;
use crawl_sinks::kafka::{KafkaTarget, RECORD_ID_HEADER};
use crawl_sinks::record::ShipRecord;
use crawl_test_kit::kafka::{Broker, Message};

/// How long a test waits to read a topic back.
const READ_WITHIN: Duration = Duration::from_secs(15);

fn kafka(brokers: Vec<String>, topic: &str) -> KafkaSink {
    KafkaSink {
        brokers,
        topic: topic.to_owned(),
        key: KafkaKey::Url,
        compression: KafkaCompression::Lz4,
        acks: KafkaAcks::All,
        idempotent: true,
        create_topic: true,
        partitions: 4,
        replication_factor: 1,
        message_max_bytes: 1_000_000,
        oversize: Oversize::Skip,
        linger: Duration::from_millis(5),
        tls: false,
        tls_ca_file: None,
        sasl: None,
        properties: BTreeMap::new(),
    }
}

fn sink(name: &str, cfg: &KafkaSink, timeout: Duration) -> SinkConfig {
    SinkConfig {
        name: name.to_owned(),
        batch_records: 1000,
        retry_max: Duration::from_secs(1),
        timeout,
        kind: SinkKind::Kafka(cfg.clone()),
    }
}

/// A made-up committed record of `url`, line `seq`, with `pad` bytes of filler.
fn record(seq: u64, url: &str, pad: usize) -> ShipRecord {
    let line = format!(
        r#"{{"url":"{url}","outcome":"fetched","status":200,"fetched_at":"2026-12-06T10:00:00Z","record_id":"r{seq:06}","title":"{}"}}"#,
        "x".repeat(pad)
    );
    ShipRecord::parse("kafka", seq, Bytes::from(line)).unwrap()
}

/// `n` records over a few hosts.
fn records(n: u64) -> Vec<ShipRecord> {
    (0..n)
        .map(|i| record(i, &format!("http://h{}.test/p/{i}", i % 7), 40))
        .collect()
}

/// Records by record id, each at most once; panics on a duplicate.
fn by_id(msgs: &[Message]) -> HashMap<String, &Message> {
    let mut out = HashMap::new();
    for m in msgs {
        let id = String::from_utf8(m.header(RECORD_ID_HEADER).unwrap().to_vec()).unwrap();
        assert!(out.insert(id.clone(), m).is_none(), "record {id} twice");
    }
    out
}

/// Messages per record id (a count above 1 is a duplicate).
fn copies(msgs: &[Message]) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for m in msgs {
        let id = String::from_utf8(m.header(RECORD_ID_HEADER).unwrap().to_vec()).unwrap();
        *out.entry(id).or_default() += 1;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_read_back_whole_with_its_keys_and_record_ids() {
    let Some(broker) = Broker::start("kafka round trip") else {
        return;
    };
    let cfg = kafka(vec![broker.bootstrap()], "records");
    let mut target = KafkaTarget::connect(&sink("k", &cfg, Duration::from_secs(10)), &cfg)
        .await
        .unwrap();
    assert_eq!(target.partitions(), 4);
    let batch = records(1000);
    let t = Instant::now();
    let shipped = target.ship(&batch).await.unwrap();
    let took = t.elapsed();
    assert_eq!(shipped.records, 1000);
    assert_eq!(shipped.skipped, 0);
    assert_eq!(
        shipped.bytes,
        batch.iter().map(|r| r.line.len() as u64).sum::<u64>()
    );
    eprintln!("shipped 1000 records ({} bytes) in {took:?}", shipped.bytes);
    let msgs = broker.read_all("records", READ_WITHIN).unwrap();
    assert_eq!(msgs.len(), 1000);
    let got = by_id(&msgs);
    for r in &batch {
        let m = got[r.record_id()];
        assert_eq!(m.value, r.line.to_vec(), "{}", r.record_id());
        assert_eq!(m.key.as_deref(), Some(format!("{:016x}", r.fp).as_bytes()));
    }
    let used: HashSet<i32> = msgs.iter().map(|m| m.partition).collect();
    assert_eq!(used.len(), 4, "every partition got records");
}

/// The murmur2 hash of the Java client (`org.apache.kafka.common.utils.Utils.murmur2`).
fn java_murmur2(data: &[u8]) -> i32 {
    const M: i32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: i32 = 0x9747_b28c_u32 as i32 ^ data.len() as i32;
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        let mut k = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= ((k as u32) >> R) as i32;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    if tail.len() >= 3 {
        h ^= i32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= i32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= i32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= ((h as u32) >> 13) as i32;
    h = h.wrapping_mul(M);
    h ^= ((h as u32) >> 15) as i32;
    h
}

/// The partition the Java client's default partitioner picks for a key.
fn java_partition(key: &[u8], partitions: usize) -> i32 {
    ((java_murmur2(key) & 0x7fff_ffff) as usize % partitions) as i32
}

/// Records per partition, and the largest deviation from an even share (in percent).
fn spread(msgs: &[Message], partitions: usize) -> (Vec<usize>, f64) {
    let mut per = vec![0usize; partitions];
    for m in msgs {
        per[m.partition as usize] += 1;
    }
    let even = msgs.len() as f64 / partitions as f64;
    let worst = per
        .iter()
        .map(|&n| ((n as f64 - even) / even * 100.0).abs())
        .fold(0.0, f64::max);
    (per, worst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_keys_spread_evenly_where_java_puts_them_and_host_keys_skew() {
    let Some(broker) = Broker::start("kafka partition spread") else {
        return;
    };
    // One large host (6000 URLs) and 200 small ones (20 URLs each).
    let mut batch = Vec::new();
    for i in 0..6000u64 {
        batch.push(record(i, &format!("http://big.test/page/{i}"), 0));
    }
    for h in 0..200u64 {
        for i in 0..20u64 {
            let seq = 6000 + h * 20 + i;
            batch.push(record(seq, &format!("http://small{h}.test/p{i}"), 0));
        }
    }
    let mut results = Vec::new();
    for (key, topic) in [(KafkaKey::Url, "by-url"), (KafkaKey::Host, "by-host")] {
        let mut cfg = kafka(vec![broker.bootstrap()], topic);
        cfg.key = key;
        cfg.partitions = 12;
        let mut target = KafkaTarget::connect(&sink("k", &cfg, Duration::from_secs(10)), &cfg)
            .await
            .unwrap();
        assert_eq!(target.partitions(), 12);
        for chunk in batch.chunks(1000) {
            let shipped = target.ship(chunk).await.unwrap();
            assert_eq!(shipped.records, chunk.len() as u64);
        }
        let msgs = broker.read_all(topic, READ_WITHIN).unwrap();
        assert_eq!(msgs.len(), batch.len());
        // murmur2_random places every key where the Java client's default partitioner would.
        for m in &msgs {
            let k = m.key.as_deref().unwrap();
            assert_eq!(
                m.partition,
                java_partition(k, 12),
                "{:?}",
                String::from_utf8_lossy(k)
            );
        }
        let (per, worst) = spread(&msgs, 12);
        eprintln!("key={topic}: records per partition {per:?}, worst {worst:.1} % from even");
        results.push(worst);
    }
    let (url, host) = (results[0], results[1]);
    assert!(url <= 15.0, "key=url: a partition {url:.1} % from even");
    assert!(
        host > url,
        "key=host ({host:.1} %) should skew more than key=url ({url:.1} %)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_topic_is_a_setup_error_unless_the_sink_creates_it() {
    let Some(broker) = Broker::start("kafka missing topic") else {
        return;
    };
    let mut cfg = kafka(vec![broker.bootstrap()], "not-there");
    cfg.create_topic = false;
    let e = KafkaTarget::connect(&sink("kf", &cfg, Duration::from_secs(5)), &cfg)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "setup", "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("`kf`") && msg.contains("`topic`") && msg.contains("not-there"),
        "{msg}"
    );
    assert!(msg.contains("create_topic"), "{msg}");

    cfg.create_topic = true;
    cfg.partitions = 6;
    let target = KafkaTarget::connect(&sink("kf", &cfg, Duration::from_secs(5)), &cfg)
        .await
        .unwrap();
    assert_eq!(target.partitions(), 6);
    drop(target);
    // Now it exists: a sink that may not create it connects, and sees its 6 partitions.
    cfg.create_topic = false;
    cfg.partitions = 3;
    let target = KafkaTarget::connect(&sink("kf", &cfg, Duration::from_secs(5)), &cfg)
        .await
        .unwrap();
    assert_eq!(target.partitions(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_broker_fails_connect_in_bounded_time() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = kafka(vec![format!("127.0.0.1:{port}")], "records");
    let timeout = Duration::from_secs(2);
    let t = Instant::now();
    let e = KafkaTarget::connect(&sink("down", &cfg, timeout), &cfg)
        .await
        .unwrap_err();
    let took = t.elapsed();
    eprintln!("unreachable broker: {e} (after {took:?})");
    assert_eq!(e.kind(), "unreachable", "{e}");
    let msg = e.to_string();
    assert!(msg.contains("`down`") && msg.contains("`brokers`"), "{msg}");
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
    assert!(took < timeout + Duration::from_secs(2), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_stopped_mid_batch_fails_it_and_the_batch_lands_after_a_restart() {
    let Some(mut broker) = Broker::durable("kafka broker restart") else {
        return;
    };
    let mut cfg = kafka(vec![broker.bootstrap()], "restart");
    cfg.partitions = 3;
    let timeout = Duration::from_secs(3);
    let mut target = KafkaTarget::connect(&sink("k", &cfg, timeout), &cfg)
        .await
        .unwrap();
    let first: Vec<ShipRecord> = (0..500)
        .map(|i| record(i, &format!("http://a.test/{i}"), 40))
        .collect();
    assert_eq!(target.ship(&first).await.unwrap().records, 500);
    // A large batch, and the broker killed while it is on its way.
    let second: Vec<ShipRecord> = (500..20_500)
        .map(|i| record(i, &format!("http://b{}.test/{i}", i % 50), 40))
        .collect();
    let again = second.clone();
    let before = broker.bytes_received();
    let shipping = tokio::spawn(async move {
        let t = Instant::now();
        let r = target.ship(&second).await;
        (target, r, t.elapsed())
    });
    // Stop the broker once about a tenth of the batch reached it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while broker.bytes_received() < before + 300_000 {
        assert!(Instant::now() < deadline, "the batch did not start");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    broker.stop();
    let (mut target, result, took) = shipping.await.unwrap();
    let e = result.unwrap_err();
    eprintln!("ship while the broker went down: {e} (after {took:?})");
    assert!(matches!(e.kind(), "unreachable" | "transient"), "{e}");
    // Every message's report comes within timeout + linger of its hand-over.
    assert!(took < 2 * timeout + Duration::from_secs(2), "took {took:?}");

    broker.start_again().unwrap();
    // The shipping loop ships the same batch again until it lands.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut tries = 0;
    let shipped = loop {
        tries += 1;
        match target.ship(&again).await {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                eprintln!("ship after the restart, try {tries}: {e}");
            }
            Err(e) => panic!("the batch did not land after the restart: {e}"),
        }
    };
    assert_eq!(shipped.records, again.len() as u64);
    let msgs = broker.read_all("restart", READ_WITHIN).unwrap();
    let copies = copies(&msgs);
    for r in first.iter().chain(&again) {
        assert!(copies.contains_key(r.record_id()), "{} lost", r.record_id());
    }
    let first_dups: usize = first.iter().map(|r| copies[r.record_id()] - 1).sum();
    let dups: usize = copies.values().map(|n| n - 1).sum();
    eprintln!(
        "after the restart: {} messages for {} records, {dups} duplicates (records in flight when the broker went \
         down: written, their acknowledgement lost, so shipped again; acknowledged ones are not), {tries} tries",
        msgs.len(),
        copies.len()
    );
    assert_eq!(first_dups, 0, "the acknowledged batch was written once");
    assert!(dups <= again.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_records_are_skipped_or_stop_the_batch_before_anything_is_sent() {
    let Some(broker) = Broker::start("kafka oversize") else {
        return;
    };
    const MAX: usize = 2048;
    // A record of exactly MAX bytes (line, key and header) is sent; one byte more is oversize.
    let base = record(0, "http://a.test/0", 0);
    let fits = MAX
        - crawl_sinks::kafka::message_size(
            &crawl_sinks::kafka::message_key(KafkaKey::Url, &base),
            &base,
        );
    let mut batch: Vec<ShipRecord> = (0..100)
        .map(|i| {
            record(
                i,
                &format!("http://a.test/{i}"),
                if i == 10 { fits } else { 30 },
            )
        })
        .collect();
    // URLs and record ids of the same length as record 0's, so the sizes are exact.
    batch[10] = record(10, "http://a.test/x", fits);
    batch[40] = record(40, "http://a.test/y", fits + 1);
    batch[70] = record(70, "http://a.test/z", 5000);
    let size = |r: &ShipRecord| {
        crawl_sinks::kafka::message_size(&crawl_sinks::kafka::message_key(KafkaKey::Url, r), r)
    };
    assert_eq!(size(&batch[10]), MAX);
    assert_eq!(size(&batch[40]), MAX + 1);

    let mut cfg = kafka(vec![broker.bootstrap()], "skip");
    cfg.message_max_bytes = MAX;
    cfg.oversize = Oversize::Skip;
    let mut target = KafkaTarget::connect(&sink("k", &cfg, Duration::from_secs(5)), &cfg)
        .await
        .unwrap();
    let shipped = target.ship(&batch).await.unwrap();
    assert_eq!((shipped.records, shipped.skipped), (98, 2));
    let msgs = broker.read_all("skip", READ_WITHIN).unwrap();
    let got = by_id(&msgs);
    assert_eq!(got.len(), 98);
    assert!(
        got.contains_key("r000010"),
        "the record of exactly message_max_bytes was sent"
    );
    assert!(!got.contains_key("r000040") && !got.contains_key("r000070"));

    cfg.topic = "fail".to_owned();
    cfg.oversize = Oversize::Fail;
    let mut target = KafkaTarget::connect(&sink("kfail", &cfg, Duration::from_secs(5)), &cfg)
        .await
        .unwrap();
    let e = target.ship(&batch).await.unwrap_err();
    assert_eq!(e.kind(), "oversize", "{e}");
    match &e {
        SinkError::Oversize {
            sink,
            record_id,
            bytes,
            max,
        } => {
            assert_eq!((sink.as_str(), record_id.as_str()), ("kfail", "r000040"));
            assert_eq!((*bytes, *max), (MAX + 1, MAX));
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("r000040"), "{e}");
    // Nothing of the batch was sent: the topic is empty, and the batch without its oversize records lands whole.
    assert!(broker.read_all("fail", READ_WITHIN).unwrap().is_empty());
    let rest: Vec<ShipRecord> = batch.iter().filter(|r| size(r) <= MAX).cloned().collect();
    assert_eq!(target.ship(&rest).await.unwrap().records, 98);
    assert_eq!(broker.read_all("fail", READ_WITHIN).unwrap().len(), 98);
}

/// Everything every test logged (librdkafka's own lines included), at debug.
fn captured_logs() -> &'static Mutex<Vec<u8>> {
    static LOGS: OnceLock<Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        struct W;
        impl Write for W {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                captured_logs().lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(|| W)
            .try_init();
        Mutex::new(Vec::new())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sasl_password_is_never_shown() {
    const PASSWORD: &str = "pw-Zq7-never-shown";
    captured_logs();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = kafka(vec![format!("127.0.0.1:{port}")], "records");
    cfg.sasl = Some(KafkaSasl {
        mechanism: "SCRAM-SHA-256".to_owned(),
        username: "crawler".to_owned(),
        password: Secret::new(PASSWORD),
    });
    // librdkafka's own debug output, its configuration dump included.
    cfg.properties.insert("debug".to_owned(), "all".to_owned());
    let e = KafkaTarget::connect(&sink("sasl", &cfg, Duration::from_secs(1)), &cfg)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "unreachable");
    for shown in [e.to_string(), format!("{e:?}"), format!("{cfg:?}")] {
        assert!(!shown.contains(PASSWORD), "{shown}");
    }
    // A setting librdkafka refuses, whose value is the password: the error shows neither.
    let mut bad = cfg.clone();
    bad.properties.insert(
        "sasl.kerberos.min.time.before.relogin".to_owned(),
        PASSWORD.to_owned(),
    );
    let e = KafkaTarget::connect(&sink("sasl", &bad, Duration::from_secs(1)), &bad)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "setup", "{e}");
    for shown in [e.to_string(), format!("{e:?}")] {
        assert!(!shown.contains(PASSWORD), "{shown}");
    }

    // A connected target holding a secret (tansu takes no SASL without users set up, so the secret is a TLS key
    // password, which a plaintext connection ignores): neither its Debug nor the logs show it.
    if let Some(broker) = Broker::start("kafka secret in properties") {
        let mut cfg = kafka(vec![broker.bootstrap()], "secret");
        cfg.properties
            .insert("ssl.key.password".to_owned(), PASSWORD.to_owned());
        cfg.properties.insert("debug".to_owned(), "all".to_owned());
        let mut target = KafkaTarget::connect(&sink("sasl", &cfg, Duration::from_secs(5)), &cfg)
            .await
            .unwrap();
        let shown = format!("{target:?}");
        assert!(
            !shown.contains(PASSWORD) && shown.contains("sasl"),
            "{shown}"
        );
        assert_eq!(target.ship(&records(10)).await.unwrap().records, 10);
    }
    let logs = String::from_utf8_lossy(&captured_logs().lock().unwrap()).into_owned();
    assert!(
        logs.contains("librdkafka"),
        "librdkafka's logs reach tracing"
    );
    assert!(!logs.contains(PASSWORD), "the password is in the logs");
}
