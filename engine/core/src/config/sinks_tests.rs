//! Tests of `[[sinks]]`: each kind with its defaults and settings, the keys each requires, names, the checks across
//! keys and sections, secrets never shown, and that a reload cannot change sinks.

use std::time::Duration;

use super::reload::plan;
use super::tests::{errors, ok};
use super::*;

const WARC: &str = "[output]\nwarc_dir = \"w\"\n";

fn sinks(body: &str) -> Vec<SinkConfig> {
    ok(&format!("{WARC}{body}")).sinks
}

/// Every error message of `body` (after an `[output]` with a WARC folder).
fn messages(body: &str) -> Vec<String> {
    errors(&format!("{WARC}{body}"))
        .into_iter()
        .map(|e| e.message)
        .collect()
}

#[test]
fn no_sinks_by_default() {
    assert!(Config::default().sinks.is_empty());
    let o = Config::default().output;
    assert_eq!(
        (o.sink_max_lag, o.sink_max_lag_bytes, o.sink_finish),
        (100_000, 4 << 30, Duration::from_secs(300))
    );
}

#[test]
fn a_kafka_sink_with_its_defaults_and_settings() {
    let s =
        sinks("[[sinks]]\nkind = \"kafka\"\nbrokers = [\"127.0.0.1:9092\"]\ntopic = \"records\"\n");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "kafka");
    assert_eq!(s[0].batch_records, 500);
    assert_eq!(s[0].timeout, Duration::from_secs(10));
    let SinkKind::Kafka(k) = &s[0].kind else {
        panic!("{s:?}")
    };
    assert_eq!(k.brokers, ["127.0.0.1:9092"]);
    assert_eq!(
        (k.key, k.acks, k.idempotent),
        (KafkaKey::Url, KafkaAcks::All, true)
    );
    assert_eq!(
        (k.compression, k.oversize),
        (KafkaCompression::Lz4, Oversize::Skip)
    );
    assert_eq!(
        (k.create_topic, k.partitions, k.message_max_bytes),
        (false, 12, 1_000_000)
    );
    assert!(k.sasl.is_none() && !k.tls);

    let s = sinks(
        "[[sinks]]\nname = \"events\"\nkind = \"kafka\"\nbrokers = [\"k1:9092\", \"[::1]:9093\"]\ntopic = \"a.b-c\"\n\
         key = \"host\"\ncompression = \"zstd\"\nacks = \"1\"\nidempotent = false\ncreate_topic = true\n\
         partitions = 3\noversize = \"fail\"\nmessage_max_bytes = 4096\ntls = true\ntls_ca_file = \"ca.pem\"\n\
         sasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"crawler\"\nsasl_password = \"hunter2\"\n\
         properties = { \"socket.keepalive.enable\" = \"true\" }\nbatch_records = 50\n",
    );
    let SinkKind::Kafka(k) = &s[0].kind else {
        panic!("{s:?}")
    };
    assert_eq!(s[0].name, "events");
    assert_eq!(
        (k.key, k.acks, k.compression),
        (KafkaKey::Host, KafkaAcks::Leader, KafkaCompression::Zstd)
    );
    assert_eq!(
        (k.partitions, k.message_max_bytes, k.oversize),
        (3, 4096, Oversize::Fail)
    );
    let sasl = k.sasl.as_ref().expect("sasl");
    assert_eq!(sasl.password.expose(), "hunter2");
    assert_eq!(
        k.properties
            .get("socket.keepalive.enable")
            .map(String::as_str),
        Some("true")
    );
    assert!(!format!("{s:?}").contains("hunter2"), "a password in Debug");
}

#[test]
fn a_postgres_and_an_object_store_sink() {
    let s = sinks(
        "[[sinks]]\nkind = \"postgres\"\nurl = \"postgres://crawler:s3cret@db:5432/crawl\"\n\
         [[sinks]]\nkind = \"object_store\"\nurl = \"s3://bucket/warc\"\nendpoint = \"http://127.0.0.1:9000\"\n\
         allow_http = true\naccess_key_id = \"AKIA\"\nsecret_access_key = \"topsecret\"\ndelete_local = true\n",
    );
    let SinkKind::Postgres(p) = &s[0].kind else {
        panic!("{s:?}")
    };
    assert_eq!(
        (p.table.as_str(), p.on_conflict),
        ("crawl_records", OnConflict::Nothing)
    );
    assert_eq!(p.url.expose(), "postgres://crawler:s3cret@db:5432/crawl");
    assert_eq!(p.url.to_string(), "postgres://***@db:5432/crawl");
    let SinkKind::ObjectStore(o) = &s[1].kind else {
        panic!("{s:?}")
    };
    assert_eq!(s[1].name, "object_store");
    assert_eq!(o.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
    assert!(o.delete_local && o.allow_http);
    assert_eq!((o.part_size, o.multipart_threshold), (8 << 20, 16 << 20));
    let shown = format!("{s:?}");
    assert!(
        !shown.contains("s3cret") && !shown.contains("topsecret"),
        "{shown}"
    );
}

#[test]
fn required_keys_and_bad_values_are_reported_at_the_sink() {
    let m = messages("[[sinks]]\nbrokers = [\"k:9092\"]\n");
    assert!(
        m.iter()
            .any(|m| m.contains("`sinks[0]`: missing required key `kind`")),
        "{m:?}"
    );
    let m = messages("[[sinks]]\nkind = \"kafka\"\n");
    assert!(
        m.iter()
            .any(|m| m.contains("missing required key `brokers`")),
        "{m:?}"
    );
    assert!(
        m.iter().any(|m| m.contains("missing required key `topic`")),
        "{m:?}"
    );
    let m = messages("[[sinks]]\nkind = \"postgres\"\n");
    assert!(
        m.iter().any(|m| m.contains("missing required key `url`")),
        "{m:?}"
    );
    let m = messages("[[sinks]]\nkind = \"kafka\"\nbrokers = [\"nohost\"]\ntopic = \"a b\"\n");
    assert!(
        m.iter().any(|m| m.contains("not a broker address")),
        "{m:?}"
    );
    assert!(m.iter().any(|m| m.contains("not a topic name")), "{m:?}");
    let m = messages("[[sinks]]\nkind = \"queue\"\n");
    assert!(
        m.iter().any(|m| m.contains("unknown value `queue`")),
        "{m:?}"
    );
    let m = messages(
        "[[sinks]]\nkind = \"postgres\"\nurl = \"mysql://u:pw@h/db\"\ntable = \"a;drop\"\n",
    );
    assert!(m.iter().any(|m| m.contains("postgres://")), "{m:?}");
    assert!(m.iter().any(|m| m.contains("not a table name")), "{m:?}");
    assert!(!m.iter().any(|m| m.contains("pw@")), "a password in {m:?}");
    let m = messages("[[sinks]]\nkind = \"postgres\"\nurl = \"postgres://h/db\"\ntopic = \"x\"\n");
    assert!(
        m.iter().any(|m| m.contains("unknown key `sinks[0].topic`")),
        "{m:?}"
    );
    let m = messages("[sinks]\nkind = \"kafka\"\n");
    assert!(
        m.iter().any(|m| m.contains("expected an array of tables")),
        "{m:?}"
    );
}

#[test]
fn checks_across_keys_and_sections() {
    let m =
        messages("[[sinks]]\nkind = \"kafka\"\nbrokers = [\"k:1\"]\ntopic = \"t\"\nacks = \"1\"\n");
    assert!(
        m.iter().any(|m| m.contains("idempotent producer needs")),
        "{m:?}"
    );
    let m = messages(
        "[[sinks]]\nkind = \"kafka\"\nbrokers = [\"k:1\"]\ntopic = \"t\"\nsasl_username = \"u\"\n",
    );
    assert!(m.iter().any(|m| m.contains("SASL needs")), "{m:?}");
    let m = messages(
        "[[sinks]]\nkind = \"postgres\"\nurl = \"postgres://h/a\"\n[[sinks]]\nkind = \"postgres\"\nurl = \"postgres://h/b\"\n",
    );
    assert!(
        m.iter()
            .any(|m| m.contains("another sink is named `postgres`")),
        "{m:?}"
    );
    let m = messages(
        "[[sinks]]\nkind = \"object_store\"\nurl = \"s3://b/p\"\nendpoint = \"http://h:9000\"\n",
    );
    assert!(
        m.iter().any(|m| m.contains("needs `allow_http = true`")),
        "{m:?}"
    );
    let m =
        messages("[[sinks]]\nkind = \"object_store\"\nurl = \"s3://b/p\"\naccess_key_id = \"a\"\n");
    assert!(m.iter().any(|m| m.contains("together")), "{m:?}");
    let e = errors("[[sinks]]\nkind = \"object_store\"\nurl = \"file:///tmp/x\"\n");
    assert!(
        e.iter()
            .any(|e| e.message.contains("set `output.warc_dir` too")),
        "{e:?}"
    );
}

#[test]
fn sinks_change_only_with_a_restart() {
    let old = ok(WARC);
    let new = ok(&format!(
        "{WARC}[[sinks]]\nkind = \"postgres\"\nurl = \"postgres://h/db\"\n"
    ));
    let p = plan(&old, &new);
    assert!(p.rejected(), "{p:?}");
    assert_eq!(p.restart_only, ["sinks"]);
    let lag = ok(&format!("{WARC}sink_max_lag = 10\n"));
    assert_eq!(plan(&old, &lag).restart_only, ["output.sink_max_lag"]);
}
