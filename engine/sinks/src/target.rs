//! The record sinks behind one type: what the shipping loop connects and ships through.

use crawl_core::config::{SinkConfig, SinkKind};

use crate::kafka::KafkaTarget;
use crate::postgres::PostgresTarget;
use crate::record::ShipRecord;
use crate::{Shipped, SinkError};

/// A connected record sink.
pub enum RecordTarget {
    Kafka(Box<KafkaTarget>),
    Postgres(Box<PostgresTarget>),
}

impl RecordTarget {
    /// Connects the record sink `sink` (an object store ships files, not records: a setup error).
    pub async fn connect(sink: &SinkConfig) -> Result<RecordTarget, SinkError> {
        match &sink.kind {
            SinkKind::Kafka(k) => Ok(RecordTarget::Kafka(Box::new(
                KafkaTarget::connect(sink, k).await?,
            ))),
            SinkKind::Postgres(p) => Ok(RecordTarget::Postgres(Box::new(
                PostgresTarget::connect(sink, p).await?,
            ))),
            SinkKind::ObjectStore(_) => Err(SinkError::Setup {
                sink: sink.name.clone(),
                kind: "object_store",
                key: "kind",
                detail: "an object store ships WARC files, not records".to_owned(),
            }),
        }
    }

    /// Ships one batch: Ok once the target acknowledged every record of it.
    pub async fn ship(&mut self, batch: &[ShipRecord]) -> Result<Shipped, SinkError> {
        match self {
            RecordTarget::Kafka(k) => k.ship(batch).await,
            RecordTarget::Postgres(p) => p.ship(batch).await,
        }
    }
}
