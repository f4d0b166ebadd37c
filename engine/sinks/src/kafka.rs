//! The Kafka sink: committed records to a Kafka topic, one message per record, through librdkafka (the reference
//! C client), so it works unchanged against Apache Kafka, Redpanda and managed services.
//!
//! Each message carries the record's JSONL line as its value, a key (the URL's fingerprint as 16 hex digits, or
//! the URL's host, as `key` says) and a `record_id` header that consumers deduplicate on. [`KafkaTarget::ship`]
//! returns only once the brokers acknowledged every message of the batch (or it failed), so the shipping loop
//! moves its checkpoint only past records the topic holds.
//!
//! Delivery is at least once: a batch that failed is shipped again whole, and records of it that had landed
//! before the failure land again (consumers drop them by `record_id`). The idempotent producer (`idempotent =
//! true`, the default) keeps librdkafka's own retries inside one batch from adding duplicates.
//!
//! Messages are placed with the `murmur2_random` partitioner: the murmur2 hash of the key, as the Java client's
//! default partitioner computes it, so a key lands on the partition a Java (or Kafka Streams) producer would put
//! it on, and topics keyed alike stay co-partitioned. (librdkafka's own default, `consistent_random`, hashes
//! with CRC32 and disagrees with Java.) `properties` may still set another `partitioner`.
//!
//! A producer whose idempotence state the brokers stop accepting is replaced by a new one (a new producer id)
//! before the next batch; see [`KafkaTarget::ship`]. librdkafka is the system's library, linked dynamically
//! (Debian: `librdkafka-dev` to build, `librdkafka1` to run); its own log lines go to `tracing` at debug level,
//! with the sink's name, and the producer settings are never printed.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crawl_core::config::{KafkaAcks, KafkaKey, KafkaSink, Oversize, Secret, SinkConfig};
use rdkafka::ClientContext;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::{ClientConfig, FromClientConfigAndContext, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::metadata::Metadata;
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord, Producer};

use crate::record::ShipRecord;
use crate::{Shipped, SinkError};

const KIND: &str = "kafka";
/// The header that carries a record's id.
pub const RECORD_ID_HEADER: &str = "record_id";
/// Bytes librdkafka may add around a message that fits `message_max_bytes` (the record's own framing and its
/// share of the record batch header): its `message.max.bytes` is set this much higher, so every message the sink
/// sends passes librdkafka's check, and oversize stays decided by the sink alone.
pub const FRAMING_ALLOWANCE: usize = 512;
/// The longest librdkafka waits before connecting to a broker again (`reconnect.backoff.max.ms`): a broker that
/// came back is used again within this.
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often `connect` asks again for the metadata of a topic that is not ready yet (a just created one).
const METADATA_POLL: Duration = Duration::from_millis(100);

/// A connected Kafka sink: a producer for one topic.
pub struct KafkaTarget {
    sink: String,
    topic: String,
    brokers: String,
    key: KafkaKey,
    oversize: Oversize,
    max_bytes: usize,
    partitions: usize,
    /// How long every message of a batch may take to be acknowledged (`message.timeout.ms`).
    delivery_timeout: Duration,
    /// Values that never appear in an error or log (SASL password, secret-looking `properties`).
    secrets: Vec<Secret>,
    /// The producer settings (with the SASL password: never printed), kept to make a new producer after a fatal
    /// error.
    config: ClientConfig,
    producer: FutureProducer<SinkContext>,
    /// The producer's id or epoch was refused by a broker: make a new producer before the next batch.
    renew: AtomicBool,
    /// Records of a batch that failed as a whole which the brokers did acknowledge (or which were skipped), by
    /// their line number: shipping the batch again sends only the others, so a failure part-way through a batch
    /// adds no copy. Emptied once a batch succeeds.
    settled: HashMap<u64, Settled>,
}

/// How a record of a failed batch was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Acknowledged, with its line's bytes.
    Delivered(u64),
    /// Left out as oversize.
    Skipped,
}

impl fmt::Debug for KafkaTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaTarget")
            .field("sink", &self.sink)
            .field("brokers", &self.brokers)
            .field("topic", &self.topic)
            .field("key", &self.key)
            .field("partitions", &self.partitions)
            .field("max_bytes", &self.max_bytes)
            .field("oversize", &self.oversize)
            .finish_non_exhaustive()
    }
}

/// Where librdkafka's own logs and errors go: `tracing` at debug, with the sink's name and secrets hidden.
struct SinkContext {
    sink: String,
    secrets: Vec<Secret>,
}

impl ClientContext for SinkContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        let detail = redact(log_message, &self.secrets);
        tracing::debug!(sink = %self.sink, facility = fac, level = ?level, detail = %detail, "librdkafka log");
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let reason = redact(reason, &self.secrets);
        tracing::debug!(sink = %self.sink, error = %error, reason = %reason, "librdkafka error");
    }
}

/// `text` with every secret value replaced by `***`.
fn redact(text: &str, secrets: &[Secret]) -> String {
    secrets
        .iter()
        .filter(|s| !s.expose().is_empty())
        .fold(text.to_owned(), |t, s| t.replace(s.expose(), "***"))
}

/// True for a librdkafka setting whose value is a secret (`sasl.password`, `ssl.key.password`, ...).
fn secret_property(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "password",
        "secret",
        "token",
        "ssl.key.pem",
        "sasl.oauthbearer.config",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// `security.protocol` from `tls` and `sasl`.
fn security_protocol(cfg: &KafkaSink) -> &'static str {
    match (cfg.tls, cfg.sasl.is_some()) {
        (false, false) => "plaintext",
        (true, false) => "ssl",
        (false, true) => "sasl_plaintext",
        (true, true) => "sasl_ssl",
    }
}

fn millis(d: Duration) -> String {
    d.as_millis().max(1).to_string()
}

/// The producer settings of a sink (the SASL password included: never printed).
fn producer_config(sink: &SinkConfig, cfg: &KafkaSink) -> ClientConfig {
    let mut c = ClientConfig::new();
    let delivery = delivery_timeout(sink, cfg);
    c.set("bootstrap.servers", cfg.brokers.join(","))
        .set("client.id", format!("crawl-engine-{}", sink.name))
        .set(
            "acks",
            match cfg.acks {
                KafkaAcks::All => "all",
                KafkaAcks::Leader => "1",
            },
        )
        .set("enable.idempotence", cfg.idempotent.to_string())
        .set("compression.codec", cfg.compression.as_str())
        .set("linger.ms", cfg.linger.as_millis().to_string())
        .set(
            "message.max.bytes",
            (cfg.message_max_bytes + FRAMING_ALLOWANCE).to_string(),
        )
        .set("partitioner", "murmur2_random")
        // A metadata request must not create the topic on a broker with auto.create.topics.enable: whether the
        // sink creates it is `create_topic`'s choice, with its partitions.
        .set("allow.auto.create.topics", "false")
        .set("message.timeout.ms", millis(delivery))
        .set("request.timeout.ms", millis(sink.timeout))
        .set(
            "socket.connection.setup.timeout.ms",
            millis(sink.timeout.max(Duration::from_secs(1))),
        )
        .set("reconnect.backoff.max.ms", millis(RECONNECT_BACKOFF_MAX))
        .set("security.protocol", security_protocol(cfg));
    if let Some(ca) = &cfg.tls_ca_file {
        c.set("ssl.ca.location", ca.display().to_string());
    }
    if let Some(sasl) = &cfg.sasl {
        c.set("sasl.mechanisms", &sasl.mechanism)
            .set("sasl.username", &sasl.username)
            .set("sasl.password", sasl.password.expose());
    }
    for (k, v) in &cfg.properties {
        c.set(k, v);
    }
    c
}

/// How long one message may take to be acknowledged: the request timeout after the linger.
fn delivery_timeout(sink: &SinkConfig, cfg: &KafkaSink) -> Duration {
    sink.timeout + cfg.linger
}

/// The secret values of a sink's settings.
fn secrets_of(cfg: &KafkaSink) -> Vec<Secret> {
    let mut out: Vec<Secret> = cfg.sasl.iter().map(|s| s.password.clone()).collect();
    out.extend(
        cfg.properties
            .iter()
            .filter(|(k, _)| secret_property(k))
            .map(|(_, v)| Secret::new(v.clone())),
    );
    out
}

/// The message key of a record.
pub fn message_key(key: KafkaKey, record: &ShipRecord) -> String {
    match key {
        KafkaKey::Url => format!("{:016x}", record.fp),
        KafkaKey::Host => record.host().to_owned(),
    }
}

/// The size a record counts for against `message_max_bytes`: its line, its key and its header (name and value).
pub fn message_size(key: &str, record: &ShipRecord) -> usize {
    record.line.len() + key.len() + RECORD_ID_HEADER.len() + record.record_id().len()
}

impl KafkaTarget {
    /// Connects within `sink.timeout`: fetches metadata from `brokers` (unreachable: [`SinkError::Unreachable`]
    /// with key `brokers`); the topic must exist, or is created (with `partitions` and `replication_factor`) when
    /// `create_topic` is set, else [`SinkError::Setup`] with key `topic` saying so. A setting librdkafka rejects is
    /// a [`SinkError::Setup`] with key `properties`.
    pub async fn connect(sink: &SinkConfig, cfg: &KafkaSink) -> Result<KafkaTarget, SinkError> {
        let deadline = Instant::now() + sink.timeout;
        let secrets = secrets_of(cfg);
        let config = producer_config(sink, cfg);
        let setup = |e: KafkaError| SinkError::Setup {
            sink: sink.name.clone(),
            kind: KIND,
            key: "properties",
            detail: format!(
                "librdkafka refused the settings: {}",
                redact(&e.to_string(), &secrets)
            ),
        };
        let context = SinkContext {
            sink: sink.name.clone(),
            secrets: secrets.clone(),
        };
        let producer = FutureProducer::from_config_and_context(&config, context).map_err(setup)?;
        let mut target = KafkaTarget {
            sink: sink.name.clone(),
            topic: cfg.topic.clone(),
            brokers: cfg.brokers.join(","),
            key: cfg.key,
            oversize: cfg.oversize,
            max_bytes: cfg.message_max_bytes,
            partitions: 0,
            delivery_timeout: delivery_timeout(sink, cfg),
            secrets,
            config: config.clone(),
            producer,
            renew: AtomicBool::new(false),
            settled: HashMap::new(),
        };
        let mut created = false;
        loop {
            match target.topic_partitions(deadline).await? {
                Some(n) if n > 0 => {
                    target.partitions = n;
                    break;
                }
                Some(_) => {}
                None if cfg.create_topic && !created => {
                    target.create_topic(&config, cfg, deadline).await?;
                    created = true;
                }
                None if !created => {
                    return Err(SinkError::Setup {
                        sink: sink.name.clone(),
                        kind: KIND,
                        key: "topic",
                        detail: format!(
                            "topic `{}` does not exist on the brokers (create it, or set `create_topic = true`)",
                            cfg.topic
                        ),
                    });
                }
                None => {}
            }
            // The topic is being created (or its leaders elected): ask again until the deadline.
            if Instant::now() + METADATA_POLL >= deadline {
                return Err(SinkError::Setup {
                    sink: sink.name.clone(),
                    kind: KIND,
                    key: "topic",
                    detail: format!(
                        "topic `{}` has no partitions ready within {:?}",
                        cfg.topic, sink.timeout
                    ),
                });
            }
            tokio::time::sleep(METADATA_POLL).await;
        }
        tracing::info!(
            sink = %target.sink,
            topic = %target.topic,
            partitions = target.partitions,
            created,
            "kafka sink connected"
        );
        Ok(target)
    }

    /// The topic's partitions as the brokers report them: None when the topic does not exist, Some(0) while it
    /// has no usable partitions yet.
    async fn topic_partitions(&self, deadline: Instant) -> Result<Option<usize>, SinkError> {
        let producer = self.producer.clone();
        let topic = self.topic.clone();
        let left = deadline.saturating_duration_since(Instant::now());
        let meta: Result<Metadata, KafkaError> = tokio::task::spawn_blocking(move || {
            producer.client().fetch_metadata(Some(&topic), left)
        })
        .await
        .map_err(|e| SinkError::Transient {
            sink: self.sink.clone(),
            detail: format!("kafka metadata request did not finish: {e}"),
        })?;
        let meta = meta.map_err(|e| self.unreachable(&e))?;
        let Some(t) = meta.topics().iter().find(|t| t.name() == self.topic) else {
            return Ok(None);
        };
        match t.error().map(RDKafkaErrorCode::from) {
            None => Ok(Some(
                t.partitions()
                    .iter()
                    .filter(|p| p.error().is_none())
                    .count(),
            )),
            Some(RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownTopic) => {
                Ok(None)
            }
            Some(RDKafkaErrorCode::LeaderNotAvailable) => Ok(Some(0)),
            Some(code) => Err(SinkError::Setup {
                sink: self.sink.clone(),
                kind: KIND,
                key: "topic",
                detail: format!("topic `{}`: {code}", self.topic),
            }),
        }
    }

    /// Creates the topic with the configured partitions and replication factor (one that exists already is
    /// fine: another producer made it meanwhile).
    async fn create_topic(
        &self,
        config: &ClientConfig,
        cfg: &KafkaSink,
        deadline: Instant,
    ) -> Result<(), SinkError> {
        let context = SinkContext {
            sink: self.sink.clone(),
            secrets: self.secrets.clone(),
        };
        let admin = AdminClient::from_config_and_context(config, context).map_err(|e| {
            SinkError::Setup {
                sink: self.sink.clone(),
                kind: KIND,
                key: "properties",
                detail: redact(&e.to_string(), &self.secrets),
            }
        })?;
        let partitions = i32::try_from(cfg.partitions).unwrap_or(i32::MAX);
        let replication = i32::try_from(cfg.replication_factor).unwrap_or(i32::MAX);
        let new = NewTopic::new(
            &self.topic,
            partitions,
            TopicReplication::Fixed(replication),
        );
        let left = deadline.saturating_duration_since(Instant::now());
        let opts = AdminOptions::new()
            .request_timeout(Some(left))
            .operation_timeout(Some(left));
        let failed = |detail: String| SinkError::Setup {
            sink: self.sink.clone(),
            kind: KIND,
            key: "topic",
            detail: format!("cannot create topic `{}`: {detail}", self.topic),
        };
        let results =
            admin
                .create_topics([&new], &opts)
                .await
                .map_err(|e| match e.rdkafka_error_code() {
                    Some(code) if reachability(code) => self.unreachable(&e),
                    _ => failed(redact(&e.to_string(), &self.secrets)),
                })?;
        for r in results {
            match r {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((_, code)) if reachability(code) => {
                    return Err(self.unreachable(&KafkaError::AdminOp(code)));
                }
                Err((_, code)) => return Err(failed(code.to_string())),
            }
        }
        tracing::info!(
            sink = %self.sink,
            topic = %self.topic,
            partitions = cfg.partitions,
            replication_factor = cfg.replication_factor,
            "kafka topic created"
        );
        Ok(())
    }

    /// The topic's partitions, as the brokers reported them at connect.
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// The topic shipped to.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Ships one batch: one message per record (value: its JSONL line; key: as `key` says; header `record_id`)
    /// and waits for every delivery report. `Ok` only when every record was acknowledged, or left out as
    /// oversize with `oversize = "skip"` (counted in [`Shipped::skipped`], logged with its record id).
    ///
    /// Oversize (line, key and header above `message_max_bytes`) is decided before anything is sent. With
    /// `oversize = "fail"`, a batch holding such a record is not sent at all: [`SinkError::Oversize`] names the
    /// first one, and nothing of the batch, before or after it, reaches the topic (nor is skipped), so the
    /// checkpoint stays before the batch until the operator raises the limit or chooses `skip`. A record the
    /// brokers themselves refuse as too large (their limit below the sink's) is handled the same way when its
    /// report comes back: skipped, or [`SinkError::Oversize`].
    ///
    /// Any other failed delivery is an error ([`SinkError::Unreachable`] when the brokers could not be reached in
    /// time, [`SinkError::Transient`] otherwise, [`SinkError::Setup`] for a topic that is gone or not allowed)
    /// and the caller ships the same batch again later. Every failure comes within `timeout + linger` of the
    /// last message being handed to librdkafka.
    ///
    /// A producer whose idempotence state the brokers no longer accept (a fatal error in librdkafka, or a
    /// delivery refused as fenced, of an unknown producer id or epoch, or out of sequence: after a broker lost or
    /// could not move on its producer state) is replaced by a new one, with a new producer id, before the next
    /// batch, so the sink recovers without a restart.
    pub async fn ship(&mut self, batch: &[ShipRecord]) -> Result<Shipped, SinkError> {
        self.renew_if_failed()?;
        let mut shipped = Shipped::default();
        let keys: Vec<String> = batch.iter().map(|r| message_key(self.key, r)).collect();
        let oversize: Vec<bool> = batch
            .iter()
            .zip(&keys)
            .map(|(r, k)| message_size(k, r) > self.max_bytes)
            .collect();
        if self.oversize == Oversize::Fail
            && let Some(i) = oversize.iter().position(|&o| o)
        {
            return Err(self.oversize_error(&batch[i], message_size(&keys[i], &batch[i])));
        }
        let mut pending: VecDeque<(usize, DeliveryFuture)> = VecDeque::with_capacity(batch.len());
        let mut failure: Option<SinkError> = None;
        'records: for (i, (record, key)) in batch.iter().zip(&keys).enumerate() {
            match self.settled.get(&record.seq) {
                Some(Settled::Delivered(bytes)) => {
                    shipped.records += 1;
                    shipped.bytes += bytes;
                    continue;
                }
                Some(Settled::Skipped) => {
                    shipped.skipped += 1;
                    continue;
                }
                None => {}
            }
            if oversize[i] {
                self.skip(record, message_size(key, record));
                self.settled.insert(record.seq, Settled::Skipped);
                shipped.skipped += 1;
                continue;
            }
            let enqueue_deadline = Instant::now() + self.delivery_timeout;
            loop {
                let headers = OwnedHeaders::new_with_capacity(1).insert(Header {
                    key: RECORD_ID_HEADER,
                    value: Some(record.record_id().as_bytes()),
                });
                let message = FutureRecord::to(&self.topic)
                    .key(key.as_bytes())
                    .payload(&record.line[..])
                    .headers(headers);
                match self.producer.send_result(message) {
                    Ok(delivery) => {
                        pending.push_back((i, delivery));
                        break;
                    }
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _))
                        if Instant::now() < enqueue_deadline =>
                    {
                        // librdkafka's queue is full of this batch's messages: make room by waiting for the
                        // oldest report.
                        match pending.pop_front() {
                            Some((j, delivery)) => {
                                if let Err(e) = self.settle(batch, j, delivery, &mut shipped).await
                                {
                                    failure.get_or_insert(e);
                                }
                            }
                            None => tokio::time::sleep(Duration::from_millis(5)).await,
                        }
                    }
                    Err((e, _)) => {
                        failure.get_or_insert(self.delivery_error(&e));
                        break 'records;
                    }
                }
            }
        }
        // Every message handed over gets its report within message.timeout.ms; wait for all of them, so no
        // message of this batch is still on its way when the caller ships the batch again.
        for (i, delivery) in pending {
            if let Err(e) = self.settle(batch, i, delivery, &mut shipped).await {
                failure.get_or_insert(e);
            }
        }
        match failure {
            Some(e) => {
                // A fatal error fails every later message too: make the new producer now.
                let _ = self.renew_if_failed();
                Err(e)
            }
            None => {
                self.settled.clear();
                Ok(shipped)
            }
        }
    }

    /// Replaces the producer when librdkafka reports a fatal error on it, or a broker refused its producer state.
    fn renew_if_failed(&mut self) -> Result<(), SinkError> {
        let reason = match self.producer.client().fatal_error() {
            Some((code, reason)) => format!("{code}: {}", redact(&reason, &self.secrets)),
            None if self.renew.load(Ordering::Relaxed) => {
                "the brokers refused its producer id or epoch".to_owned()
            }
            None => return Ok(()),
        };
        tracing::warn!(
            sink = %self.sink,
            reason = %reason,
            "kafka producer failed for good, making a new one"
        );
        let context = SinkContext {
            sink: self.sink.clone(),
            secrets: self.secrets.clone(),
        };
        self.producer =
            FutureProducer::from_config_and_context(&self.config, context).map_err(|e| {
                SinkError::Transient {
                    sink: self.sink.clone(),
                    detail: format!(
                        "cannot make a new kafka producer: {}",
                        redact(&e.to_string(), &self.secrets)
                    ),
                }
            })?;
        self.renew.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Waits for one delivery report and counts it.
    async fn settle(
        &mut self,
        batch: &[ShipRecord],
        i: usize,
        delivery: DeliveryFuture,
        shipped: &mut Shipped,
    ) -> Result<(), SinkError> {
        let record = &batch[i];
        let bound = self.delivery_timeout + self.delivery_timeout / 2 + Duration::from_secs(1);
        let report = match tokio::time::timeout(bound, delivery).await {
            Ok(Ok(report)) => report,
            Ok(Err(_canceled)) => {
                return Err(SinkError::Transient {
                    sink: self.sink.clone(),
                    detail: "the kafka producer closed before the delivery report".to_owned(),
                });
            }
            Err(_elapsed) => {
                return Err(SinkError::Transient {
                    sink: self.sink.clone(),
                    detail: format!("no kafka delivery report within {bound:?}"),
                });
            }
        };
        match report {
            Ok(_) => {
                shipped.records += 1;
                shipped.bytes += record.line.len() as u64;
                self.settled
                    .insert(record.seq, Settled::Delivered(record.line.len() as u64));
                Ok(())
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => {
                let size = message_size(&message_key(self.key, record), record);
                match self.oversize {
                    Oversize::Skip => {
                        self.skip(record, size);
                        self.settled.insert(record.seq, Settled::Skipped);
                        shipped.skipped += 1;
                        Ok(())
                    }
                    Oversize::Fail => Err(self.oversize_error(record, size)),
                }
            }
            Err((e, _)) => Err(self.delivery_error(&e)),
        }
    }

    fn skip(&self, record: &ShipRecord, size: usize) {
        tracing::warn!(
            sink = %self.sink,
            record_id = %record.record_id(),
            bytes = size,
            max = self.max_bytes,
            "kafka record above message_max_bytes skipped"
        );
    }

    fn oversize_error(&self, record: &ShipRecord, size: usize) -> SinkError {
        SinkError::Oversize {
            sink: self.sink.clone(),
            record_id: record.record_id().to_owned(),
            bytes: size,
            max: self.max_bytes,
        }
    }

    fn unreachable(&self, e: &KafkaError) -> SinkError {
        SinkError::Unreachable {
            sink: self.sink.clone(),
            kind: KIND,
            key: "brokers",
            target: self.brokers.clone(),
            detail: redact(&e.to_string(), &self.secrets),
        }
    }

    /// The error of a failed delivery: unreachable brokers, a topic problem, or a transient failure.
    fn delivery_error(&self, e: &KafkaError) -> SinkError {
        let detail = redact(&e.to_string(), &self.secrets);
        if let Some(
            RDKafkaErrorCode::ProducerFenced
            | RDKafkaErrorCode::InvalidProducerEpoch
            | RDKafkaErrorCode::UnknownProducerId
            | RDKafkaErrorCode::OutOfOrderSequenceNumber
            | RDKafkaErrorCode::InvalidProducerIdMapping,
        ) = e.rdkafka_error_code()
        {
            self.renew.store(true, Ordering::Relaxed);
        }
        match e.rdkafka_error_code() {
            Some(code) if reachability(code) => self.unreachable(e),
            Some(
                RDKafkaErrorCode::UnknownTopic
                | RDKafkaErrorCode::UnknownTopicOrPartition
                | RDKafkaErrorCode::TopicAuthorizationFailed
                | RDKafkaErrorCode::ClusterAuthorizationFailed
                | RDKafkaErrorCode::InvalidTopic,
            ) => SinkError::Setup {
                sink: self.sink.clone(),
                kind: KIND,
                key: "topic",
                detail: format!("topic `{}`: {detail}", self.topic),
            },
            _ => SinkError::Transient {
                sink: self.sink.clone(),
                detail: format!("kafka delivery failed: {detail}"),
            },
        }
    }
}

/// True for errors that mean the brokers could not be reached (or refused the credentials).
fn reachability(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::MessageTimedOut
            | RDKafkaErrorCode::AllBrokersDown
            | RDKafkaErrorCode::BrokerTransportFailure
            | RDKafkaErrorCode::Resolve
            | RDKafkaErrorCode::OperationTimedOut
            | RDKafkaErrorCode::RequestTimedOut
            | RDKafkaErrorCode::NetworkException
            | RDKafkaErrorCode::SSL
            | RDKafkaErrorCode::Authentication
            | RDKafkaErrorCode::SaslAuthenticationFailed
            | RDKafkaErrorCode::UnsupportedSASLMechanism
            | RDKafkaErrorCode::IllegalSASLState
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use crawl_core::config::{KafkaCompression, KafkaSasl, SinkKind};

    use super::*;

    fn cfg(sasl: Option<KafkaSasl>) -> KafkaSink {
        KafkaSink {
            brokers: vec!["127.0.0.1:9".to_owned()],
            topic: "t".to_owned(),
            key: KafkaKey::Url,
            compression: KafkaCompression::Lz4,
            acks: KafkaAcks::All,
            idempotent: true,
            create_topic: false,
            partitions: 3,
            replication_factor: 1,
            message_max_bytes: 2048,
            oversize: Oversize::Skip,
            linger: Duration::from_millis(20),
            tls: false,
            tls_ca_file: None,
            sasl,
            properties: BTreeMap::new(),
        }
    }

    fn sink(c: &KafkaSink) -> SinkConfig {
        SinkConfig {
            name: "k".to_owned(),
            batch_records: 10,
            retry_max: Duration::from_secs(1),
            timeout: Duration::from_secs(2),
            kind: SinkKind::Kafka(c.clone()),
        }
    }

    fn record(url: &str, id: &str) -> ShipRecord {
        let line =
            format!(r#"{{"url":"{url}","outcome":"fetched","status":200,"record_id":"{id}"}}"#);
        ShipRecord::parse("k", 1, Bytes::from(line)).unwrap()
    }

    #[test]
    fn the_producer_settings_follow_the_config_and_properties_win() {
        let mut c = cfg(Some(KafkaSasl {
            mechanism: "SCRAM-SHA-512".to_owned(),
            username: "u".to_owned(),
            password: Secret::new("pw-123"),
        }));
        c.tls = true;
        c.properties.insert("linger.ms".to_owned(), "7".to_owned());
        let p = producer_config(&sink(&c), &c);
        assert_eq!(p.get("security.protocol"), Some("sasl_ssl"));
        assert_eq!(p.get("sasl.mechanisms"), Some("SCRAM-SHA-512"));
        assert_eq!(p.get("acks"), Some("all"));
        assert_eq!(p.get("enable.idempotence"), Some("true"));
        assert_eq!(p.get("compression.codec"), Some("lz4"));
        assert_eq!(p.get("partitioner"), Some("murmur2_random"));
        assert_eq!(p.get("message.max.bytes"), Some("2560"));
        assert_eq!(p.get("message.timeout.ms"), Some("2020"));
        assert_eq!(p.get("linger.ms"), Some("7"));
        c.tls = false;
        c.sasl = None;
        assert_eq!(security_protocol(&c), "plaintext");
        c.tls = true;
        assert_eq!(security_protocol(&c), "ssl");
    }

    #[test]
    fn keys_and_sizes_count_line_key_and_header() {
        let r = record("http://a.test/x", "id-1");
        let url_key = message_key(KafkaKey::Url, &r);
        assert_eq!(url_key, format!("{:016x}", r.fp));
        assert_eq!(url_key.len(), 16);
        assert_eq!(message_key(KafkaKey::Host, &r), "a.test");
        assert_eq!(
            message_size(&url_key, &r),
            r.line.len() + 16 + "record_id".len() + "id-1".len()
        );
    }

    #[test]
    fn secrets_are_redacted_from_text() {
        let mut c = cfg(Some(KafkaSasl {
            mechanism: "PLAIN".to_owned(),
            username: "u".to_owned(),
            password: Secret::new("hunter2"),
        }));
        c.properties
            .insert("ssl.key.password".to_owned(), "keypass".to_owned());
        c.properties
            .insert("socket.keepalive.enable".to_owned(), "true".to_owned());
        let s = secrets_of(&c);
        assert_eq!(s.len(), 2);
        assert_eq!(
            redact("a hunter2 b keypass c true", &s),
            "a *** b *** c true"
        );
    }
}
