//! `[[sinks]]`: where committed records and closed archives go beyond the local JSONL and WARC files: a Kafka
//! topic, a PostgreSQL table, an object store. Each sink reads the committed records (the JSONL, the local truth)
//! from its own durable checkpoint; `output.sink_max_lag` and `output.sink_max_lag_bytes` bound how far one may fall
//! behind before fetching pauses.
//!
//! Secrets (the database URL's password, SASL passwords, object-store keys) are kept in [`Secret`]s or
//! [`SecretUrl`]s, which show `***` wherever they are printed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::proxy::Secret;
use super::value_error::ValueError;

/// One `[[sinks]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SinkConfig {
    /// Names the sink in logs, metrics, its checkpoint file and errors (default: its kind); unique.
    pub name: String,
    /// Records per batch (Kafka: per flush; PostgreSQL: per transaction).
    pub batch_records: usize,
    /// Longest wait between retries of a failing batch (the backoff doubles from 100 ms up to this).
    pub retry_max: Duration,
    /// How long connecting (and each request) may take before it counts as a failure.
    pub timeout: Duration,
    pub kind: SinkKind,
}

/// What a sink ships to.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkKind {
    Kafka(KafkaSink),
    Postgres(PostgresSink),
    ObjectStore(ObjectStoreSink),
}

impl SinkKind {
    /// `kafka`, `postgres` or `object_store`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SinkKind::Kafka(_) => "kafka",
            SinkKind::Postgres(_) => "postgres",
            SinkKind::ObjectStore(_) => "object_store",
        }
    }

    /// True for the sinks that ship records (Kafka, PostgreSQL); the object store ships files.
    pub fn ships_records(&self) -> bool {
        !matches!(self, SinkKind::ObjectStore(_))
    }
}

/// The message key of a Kafka record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KafkaKey {
    /// The URL's 64-bit fingerprint (hex): records spread evenly over the partitions.
    Url,
    /// The URL's host: a host's records stay in order on one partition, and a large host skews it.
    Host,
}

/// Producer compression (`compression.codec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KafkaCompression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl KafkaCompression {
    pub fn as_str(self) -> &'static str {
        match self {
            KafkaCompression::None => "none",
            KafkaCompression::Gzip => "gzip",
            KafkaCompression::Snappy => "snappy",
            KafkaCompression::Lz4 => "lz4",
            KafkaCompression::Zstd => "zstd",
        }
    }
}

/// Which acknowledgement a produce waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KafkaAcks {
    /// Every in-sync replica (`acks=all`): required by the idempotent producer.
    All,
    /// The partition leader only (`acks=1`).
    Leader,
}

/// What happens to a record larger than `message_max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oversize {
    /// Not sent: counted (`crawl_sink_records_skipped_total{reason="oversize"}`) and logged with its record id.
    Skip,
    /// The sink stops at it with an error naming the record id (the crawl then pauses at `sink_max_lag`).
    Fail,
}

/// SASL authentication for a Kafka cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSasl {
    /// `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub mechanism: String,
    pub username: String,
    pub password: Secret,
}

/// `kind = "kafka"`.
#[derive(Debug, Clone, PartialEq)]
pub struct KafkaSink {
    /// Bootstrap brokers, `host:port` each.
    pub brokers: Vec<String>,
    pub topic: String,
    pub key: KafkaKey,
    pub compression: KafkaCompression,
    pub acks: KafkaAcks,
    /// The idempotent producer (`enable.idempotence`): no duplicates from the producer's own retries.
    pub idempotent: bool,
    /// Create the topic when it does not exist (with `partitions` and `replication_factor`); otherwise a missing
    /// topic is an error at start.
    pub create_topic: bool,
    pub partitions: u32,
    pub replication_factor: u32,
    /// The largest message sent (`message.max.bytes`); larger records are handled as `oversize` says.
    pub message_max_bytes: usize,
    pub oversize: Oversize,
    /// How long the producer waits to fill a batch (`linger.ms`).
    pub linger: Duration,
    /// TLS to the brokers (`security.protocol` `ssl` or `sasl_ssl`).
    pub tls: bool,
    /// CA certificates (PEM) that sign the brokers' certificates; None: the system's.
    pub tls_ca_file: Option<PathBuf>,
    pub sasl: Option<KafkaSasl>,
    /// Further librdkafka settings, passed as given (`properties = { "socket.keepalive.enable" = "true" }`).
    pub properties: BTreeMap<String, String>,
}

/// What a PostgreSQL sink does with a record id already in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// `ON CONFLICT (record_id) DO NOTHING`: the first row stays.
    Nothing,
    /// `ON CONFLICT (record_id) DO UPDATE`: the row takes the record as shipped last.
    Update,
}

/// `kind = "postgres"`.
#[derive(Debug, Clone, PartialEq)]
pub struct PostgresSink {
    /// `postgres://user:password@host:port/db?sslmode=...` (a secret: shown without its password).
    pub url: SecretUrl,
    /// `name` or `schema.name`; created if missing.
    pub table: String,
    pub on_conflict: OnConflict,
}

/// `kind = "object_store"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectStoreSink {
    /// `s3://bucket/prefix`, `file:///dir`, `gs://`, `az://`, ... (the schemes of the `object_store` crate).
    pub url: SecretUrl,
    /// An S3-compatible server's address (`http://127.0.0.1:9000`); None: the scheme's own service.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Credentials; when absent, the usual environment variables (`AWS_ACCESS_KEY_ID`, ...) are read.
    pub access_key_id: Option<Secret>,
    pub secret_access_key: Option<Secret>,
    /// Plain http to `endpoint` (a local test server); https otherwise.
    pub allow_http: bool,
    /// Files at least this large are uploaded in parts.
    pub multipart_threshold: u64,
    /// The size of each part of a multipart upload (at least 5 MiB, S3's minimum).
    pub part_size: usize,
    /// Delete a local WARC file once its upload was verified.
    pub delete_local: bool,
}

/// A URL that may carry a password (a database URL, an object store's). `Display` and `Debug` show it with the
/// user name and password replaced by `***`; [`SecretUrl::expose`] gives it whole.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl {
    full: String,
    shown: String,
}

impl SecretUrl {
    /// Parses `s` as a URL with a scheme; the error never shows the password.
    pub fn parse(s: &str) -> Result<SecretUrl, ValueError> {
        let shown = super::validate::hide_userinfo(s).into_owned();
        let parsed = url::Url::parse(s).map_err(|e| ValueError::SinkUrl {
            shown: shown.clone(),
            reason: e.to_string(),
        })?;
        let shown = if parsed.username().is_empty() && parsed.password().is_none() {
            s.to_owned()
        } else {
            shown
        };
        Ok(SecretUrl {
            full: s.to_owned(),
            shown,
        })
    }

    /// The URL with its password; only for connecting.
    pub fn expose(&self) -> &str {
        &self.full
    }

    /// The scheme (`postgres`, `s3`, `file`, ...).
    pub fn scheme(&self) -> &str {
        self.full.split(':').next().unwrap_or("")
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretUrl({})", self.shown)
    }
}

/// Records a sink may lag behind the JSONL before fetching pauses (`output.sink_max_lag`).
pub const DEFAULT_SINK_MAX_LAG: u64 = 100_000;
/// Bytes a sink may lag behind before fetching pauses (`output.sink_max_lag_bytes`): JSONL bytes for record
/// sinks, closed WARC bytes for an object store.
pub const DEFAULT_SINK_MAX_LAG_BYTES: u64 = 4 << 30;
pub const DEFAULT_SINK_BATCH: usize = 500;
pub const DEFAULT_KAFKA_MESSAGE_MAX: usize = 1_000_000;
/// S3's smallest part (5 MiB) and the default part size.
pub const MIN_PART_SIZE: usize = 5 << 20;
pub const DEFAULT_PART_SIZE: usize = 8 << 20;
pub const DEFAULT_MULTIPART_THRESHOLD: u64 = 16 << 20;

use super::reader::Section;

/// A sink's name: what metrics, logs and the checkpoint file call it.
fn sink_name(s: &str) -> Result<String, ValueError> {
    if s.is_empty() {
        return Err(ValueError::Empty);
    }
    if s.len() > 64
        || !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ValueError::SinkName { text: s.to_owned() });
    }
    Ok(s.to_owned())
}

fn nonempty(s: &str) -> Result<String, ValueError> {
    let t = s.trim();
    if t.is_empty() {
        Err(ValueError::Empty)
    } else {
        Ok(t.to_owned())
    }
}

/// A Kafka bootstrap broker: `host:port`.
fn broker(s: &str) -> Result<String, ValueError> {
    let bad = || ValueError::Broker { text: s.to_owned() };
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty()
        || host.contains(['/', '@', ' '])
        || port.parse::<u16>().map_or(true, |p| p == 0)
    {
        return Err(bad());
    }
    Ok(s.to_owned())
}

/// A Kafka topic name: 1 to 249 of `[a-zA-Z0-9._-]`, not `.` or `..`.
fn topic(s: &str) -> Result<String, ValueError> {
    let ok = !s.is_empty()
        && s.len() <= 249
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(s.to_owned())
    } else {
        Err(ValueError::Topic { text: s.to_owned() })
    }
}

/// A table name, `name` or `schema.name`, each part an unquoted SQL identifier.
fn table_name(s: &str) -> Result<String, ValueError> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 63
            && p.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() <= 2 && parts.iter().all(|p| part_ok(p)) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(ValueError::TableName { text: s.to_owned() })
    }
}

fn postgres_url(s: &str) -> Result<SecretUrl, ValueError> {
    let u = SecretUrl::parse(s)?;
    if !matches!(u.scheme(), "postgres" | "postgresql") {
        return Err(ValueError::SinkUrl {
            shown: u.to_string(),
            reason: "use a postgres:// or postgresql:// URL".to_owned(),
        });
    }
    Ok(u)
}

fn store_url(s: &str) -> Result<SecretUrl, ValueError> {
    let u = SecretUrl::parse(s)?;
    const SCHEMES: [&str; 10] = [
        "s3", "s3a", "file", "gs", "az", "adl", "azure", "abfs", "abfss", "memory",
    ];
    if !SCHEMES.contains(&u.scheme()) {
        return Err(ValueError::SinkUrl {
            shown: u.to_string(),
            reason: format!("unknown scheme, use one of {}", SCHEMES.join(", ")),
        });
    }
    Ok(u)
}

fn endpoint(s: &str) -> Result<Option<String>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    let u = SecretUrl::parse(s)?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(ValueError::SinkUrl {
            shown: u.to_string(),
            reason: "an endpoint is an http:// or https:// address".to_owned(),
        });
    }
    Ok(Some(s.trim_end_matches('/').to_owned()))
}

fn choice<T: Copy>(s: &str, allowed: &[(&'static str, T)]) -> Result<T, ValueError> {
    allowed
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, v)| *v)
        .ok_or_else(|| ValueError::UnknownName {
            text: s.to_owned(),
            expected: allowed.iter().map(|(n, _)| *n).collect(),
        })
}

/// One `[[sinks]]` table; `kind` is required, and so are the keys its kind needs.
pub(super) fn sink(s: &mut Section<'_, '_, '_, '_>, warc: bool) -> Option<SinkConfig> {
    let has_kind = s.has("kind");
    let kind = s.string("kind", None, |v| {
        choice(
            v,
            &[
                ("kafka", "kafka"),
                ("postgres", "postgres"),
                ("object_store", "object_store"),
            ],
        )
        .map(Some)
    });
    let name = s.string("name", None, |v| sink_name(v).map(Some));
    let batch_records = s.usize("batch_records", DEFAULT_SINK_BATCH, 1);
    if batch_records > 100_000 {
        s.invalid("batch_records", "at most 100000");
    }
    let retry_max = s.millis("retry_max_ms", Duration::from_secs(30), 100);
    let timeout = s.millis("timeout_ms", Duration::from_secs(10), 100);
    if !has_kind {
        s.missing("kind");
    }
    let kind_name = kind?;
    if kind_name == "object_store" && !warc {
        s.invalid(
            "kind",
            "an object_store sink uploads closed WARC files: set `output.warc_dir` too",
        );
    }
    let kind = match kind_name {
        "kafka" => SinkKind::Kafka(kafka(s)?),
        "postgres" => SinkKind::Postgres(postgres(s)?),
        _ => SinkKind::ObjectStore(object_store(s)?),
    };
    Some(SinkConfig {
        name: name.unwrap_or_else(|| kind_name.to_owned()),
        batch_records,
        retry_max,
        timeout,
        kind,
    })
}

fn required(s: &mut Section<'_, '_, '_, '_>, key: &'static str) -> bool {
    if s.has(key) {
        true
    } else {
        s.missing(key);
        false
    }
}

fn kafka(s: &mut Section<'_, '_, '_, '_>) -> Option<KafkaSink> {
    let brokers = s.list("brokers", broker);
    let topic = s.string("topic", String::new(), topic);
    let key = s.string("key", KafkaKey::Url, |v| {
        choice(v, &[("url", KafkaKey::Url), ("host", KafkaKey::Host)])
    });
    let compression = s.string("compression", KafkaCompression::Lz4, |v| {
        choice(
            v,
            &[
                ("none", KafkaCompression::None),
                ("gzip", KafkaCompression::Gzip),
                ("snappy", KafkaCompression::Snappy),
                ("lz4", KafkaCompression::Lz4),
                ("zstd", KafkaCompression::Zstd),
            ],
        )
    });
    let acks = s.string("acks", KafkaAcks::All, |v| {
        choice(
            v,
            &[
                ("all", KafkaAcks::All),
                ("1", KafkaAcks::Leader),
                ("leader", KafkaAcks::Leader),
            ],
        )
    });
    let idempotent = s.bool("idempotent", true);
    let create_topic = s.bool("create_topic", false);
    let partitions = s.u32("partitions", 12, 1);
    let replication_factor = s.u32("replication_factor", 1, 1);
    let message_max_bytes = s.usize("message_max_bytes", DEFAULT_KAFKA_MESSAGE_MAX, 1024);
    let oversize = s.string("oversize", Oversize::Skip, |v| {
        choice(v, &[("skip", Oversize::Skip), ("fail", Oversize::Fail)])
    });
    let linger = s.millis("linger_ms", Duration::from_millis(20), 0);
    let tls = s.bool("tls", false);
    let tls_ca_file = s.string("tls_ca_file", None, |v| super::validate::path(v).map(Some));
    let mechanism = s.string("sasl_mechanism", None, |v| {
        choice(
            v,
            &[
                ("PLAIN", "PLAIN"),
                ("SCRAM-SHA-256", "SCRAM-SHA-256"),
                ("SCRAM-SHA-512", "SCRAM-SHA-512"),
            ],
        )
        .map(Some)
    });
    let username = s.string("sasl_username", None, |v| nonempty(v).map(Some));
    let password = s.string("sasl_password", None, |v| Ok(Some(Secret::new(v))));
    let properties = s.string_table("properties", nonempty);
    if idempotent && acks != KafkaAcks::All && !s.rejected("acks") {
        s.invalid(
            "acks",
            "the idempotent producer needs `acks = \"all\"` (or set `idempotent = false`)",
        );
    }
    if tls_ca_file.is_some() && !tls {
        s.invalid("tls_ca_file", "goes with `tls = true`");
    }
    let sasl = match (mechanism, username, password) {
        (Some(mechanism), Some(username), Some(password)) => Some(KafkaSasl {
            mechanism: mechanism.to_owned(),
            username,
            password,
        }),
        (None, None, None) => None,
        _ => {
            s.invalid(
                "sasl_mechanism",
                "SASL needs `sasl_mechanism`, `sasl_username` and `sasl_password` together",
            );
            None
        }
    };
    let ok = required(s, "brokers") & required(s, "topic");
    if ok && brokers.is_empty() && !s.rejected("brokers") {
        s.invalid("brokers", "name at least one broker (`host:port`)");
    }
    ok.then_some(KafkaSink {
        brokers,
        topic,
        key,
        compression,
        acks,
        idempotent,
        create_topic,
        partitions,
        replication_factor,
        message_max_bytes,
        oversize,
        linger,
        tls,
        tls_ca_file,
        sasl,
        properties,
    })
}

fn postgres(s: &mut Section<'_, '_, '_, '_>) -> Option<PostgresSink> {
    let url = s.string("url", None, |v| postgres_url(v).map(Some));
    let table = s.string("table", "crawl_records".to_owned(), table_name);
    let on_conflict = s.string("on_conflict", OnConflict::Nothing, |v| {
        choice(
            v,
            &[
                ("nothing", OnConflict::Nothing),
                ("update", OnConflict::Update),
            ],
        )
    });
    if !s.has("url") {
        s.missing("url");
    }
    Some(PostgresSink {
        url: url?,
        table,
        on_conflict,
    })
}

fn object_store(s: &mut Section<'_, '_, '_, '_>) -> Option<ObjectStoreSink> {
    let url = s.string("url", None, |v| store_url(v).map(Some));
    let endpoint = s.string("endpoint", None, endpoint);
    let region = s.string("region", None, |v| nonempty(v).map(Some));
    let access_key_id = s.string("access_key_id", None, |v| Ok(Some(Secret::new(v))));
    let secret_access_key = s.string("secret_access_key", None, |v| Ok(Some(Secret::new(v))));
    let allow_http = s.bool("allow_http", false);
    let multipart_threshold = s.u64("multipart_threshold_bytes", DEFAULT_MULTIPART_THRESHOLD, 1);
    let part_size = s.usize("part_size_bytes", DEFAULT_PART_SIZE, MIN_PART_SIZE);
    let delete_local = s.bool("delete_local", false);
    if !s.has("url") {
        s.missing("url");
    }
    if access_key_id.is_some() != secret_access_key.is_some() {
        s.invalid(
            "access_key_id",
            "give `access_key_id` and `secret_access_key` together",
        );
    }
    if let Some(e) = &endpoint
        && e.starts_with("http://")
        && !allow_http
    {
        s.invalid(
            "endpoint",
            "a plain http:// endpoint needs `allow_http = true`",
        );
    }
    Some(ObjectStoreSink {
        url: url?,
        endpoint,
        region,
        access_key_id,
        secret_access_key,
        allow_http,
        multipart_threshold,
        part_size,
        delete_local,
    })
}
