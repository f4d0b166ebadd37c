//! Records in the shards' streams: this process's pending entries (read back after a restart), acknowledgements
//! once they are in the JSONL, and the take-over of records that processes which stopped left behind.

use super::conn::{Call, reply};
use super::scripts::SCRIPTS;
use super::{PAGE, RedisFrontier};
use crawl_core::frontier::FrontierError;
use crawl_core::output::JsonlCheckpoint;
use redis::Value;
use std::collections::BTreeMap;

/// The field of a process's state hash that holds its archive checkpoint.
pub(super) const ARCHIVE_FIELD: &str = "archive";

/// A record's pending stream entry.
pub(super) struct PendingRecord {
    pub seq: u64,
    pub shard: u32,
    pub id: String,
    pub line: Vec<u8>,
}

impl RedisFrontier {
    /// This process's pending records in every shard.
    pub(super) fn read_pel(&mut self) -> Result<Vec<PendingRecord>, FrontierError> {
        let mut out = Vec::new();
        let mut todo: Vec<(u32, String)> =
            (0..self.shards()).map(|s| (s, "0".to_owned())).collect();
        while !todo.is_empty() {
            let calls: Vec<Call> = todo
                .iter()
                .map(|(s, from)| {
                    self.shard_call(&SCRIPTS.pel, *s)
                        .arg(&self.pid)
                        .arg(from.as_str())
                        .arg(PAGE)
                })
                .collect();
            let replies = self.conn.run(&calls)?;
            let mut next = Vec::new();
            for ((s, _), r) in todo.iter().zip(replies) {
                let v = r.map_err(|e| self.conn.error(&e))?;
                let mut it = reply::array(v, "pending records")?.into_iter();
                let mut n = 0;
                let mut last = None;
                while let (Some(id), Some(seq), Some(line)) = (it.next(), it.next(), it.next()) {
                    let id = reply::string(id, "stream id")?;
                    let seq = reply::uint(&seq, "record seq")?;
                    out.push(PendingRecord {
                        seq,
                        shard: *s,
                        id: id.clone(),
                        line: reply::bytes(line, "record")?,
                    });
                    last = Some(id);
                    n += 1;
                }
                if n >= PAGE
                    && let Some(last) = last
                {
                    next.push((*s, last));
                }
            }
            todo = next;
        }
        Ok(out)
    }

    /// The JSONL checkpoint this process stored with its last commit that had one.
    /// This process's archive checkpoint (the field of its state hash the commits write).
    pub(super) fn read_archive_checkpoint(&mut self) -> Result<Option<Vec<u8>>, FrontierError> {
        let v = self.conn.cmd(
            redis::cmd("HGET")
                .arg(self.keys.process(&self.pid))
                .arg(ARCHIVE_FIELD),
        )?;
        Ok(match v {
            Value::Nil => None,
            v => Some(reply::bytes(v, "archive checkpoint")?),
        })
    }

    pub(super) fn read_checkpoint(&mut self) -> Result<Option<JsonlCheckpoint>, FrontierError> {
        let v = self
            .conn
            .cmd(redis::cmd("HGETALL").arg(self.keys.process(&self.pid)))?;
        let mut lines = None;
        let mut bytes = None;
        let fields: Vec<(Value, Value)> = match v {
            Value::Map(m) => m,
            other => {
                let mut it = reply::array(other, "process state")?.into_iter();
                let mut pairs = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                pairs
            }
        };
        for (k, v) in fields {
            match reply::string(k, "field")?.as_str() {
                "lines" => lines = Some(reply::uint(&v, "lines")?),
                "bytes" => bytes = Some(reply::uint(&v, "bytes")?),
                _ => {}
            }
        }
        Ok(match (lines, bytes) {
            (Some(lines), Some(bytes)) => Some(JsonlCheckpoint { lines, bytes }),
            _ => None,
        })
    }

    pub(super) fn ack_calls(&self, list: Vec<(u32, String)>) -> Vec<Call> {
        let mut by_shard: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (s, id) in list {
            by_shard.entry(s).or_default().push(id);
        }
        let mut calls = Vec::new();
        for (s, ids) in by_shard {
            for chunk in ids.chunks(PAGE) {
                let mut c = Call::new(&SCRIPTS.ack, self.keys.stream(s));
                for id in chunk {
                    c.push(id.as_str());
                }
                calls.push(c);
            }
        }
        calls
    }

    /// Takes over the records of other processes left unacknowledged for two leases in the shards this process
    /// holds, numbered from `next_record`.
    pub(super) fn take_over(&mut self) -> Result<Vec<(u32, String, Vec<u8>)>, FrontierError> {
        let mut taken = Vec::new();
        let owned: Vec<(u32, u64)> = self
            .gate
            .owned()
            .into_iter()
            .filter_map(|s| self.gate.token(s).map(|t| (s, t)))
            .collect();
        let calls: Vec<Call> = owned
            .iter()
            .map(|&(s, token)| {
                self.shard_call(&SCRIPTS.claim, s)
                    .arg(&self.pid)
                    .arg(self.settings.lease_ms * 2)
                    .arg(PAGE)
                    .arg(token)
            })
            .collect();
        for (&(s, _), r) in owned.iter().zip(self.conn.run(&calls)?) {
            let v = r.map_err(|e| self.conn.error(&e))?;
            let mut it = reply::array(v, "claim")?.into_iter();
            while let (Some(id), Some(line)) = (it.next(), it.next()) {
                let id = reply::string(id, "stream id")?;
                taken.push((s, id, reply::bytes(line, "record")?));
            }
        }
        if !taken.is_empty() {
            tracing::info!(
                records = taken.len(),
                "took over records of processes that stopped"
            );
        }
        Ok(taken)
    }
}
