//! The records ledger: this process's records in the shards' streams. It numbers them as the caller's JSONL lines
//! (committed, taken over, or read back after a restart), acknowledges those the JSONL holds, and takes over the
//! records that processes which stopped left behind.

use super::PAGE;
use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::scripts::SCRIPTS;
use super::shards::LeaseTable;
use crawl_core::frontier::FrontierError;
use crawl_core::output::JsonlCheckpoint;
use redis::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The field of a process's state hash that holds its archive checkpoint.
pub(super) const ARCHIVE_FIELD: &str = "archive";

/// A record's pending stream entry.
pub(super) struct PendingRecord {
    pub seq: u64,
    pub shard: u32,
    pub id: String,
    pub line: Vec<u8>,
}

/// A record taken over from a stopped process: its shard, its stream id, its line.
pub(super) type Claimed = (u32, String, Vec<u8>);

/// This process's records between the streams and its JSONL.
pub(super) struct Records {
    /// Records committed (or taken over) by this process and not acknowledged: sequence → (shard, stream id).
    outstanding: BTreeMap<u64, (u32, String)>,
    /// Records of stopped processes claimed by the last polls, handed out with the next commit.
    claimed: Vec<Claimed>,
    /// The line number the next record gets.
    next_record: u64,
    /// The JSONL's complete lines, when the caller told them before recovering.
    jsonl_lines: Option<u64>,
    /// When records were last taken over.
    last_claim: Option<Instant>,
}

impl Records {
    pub fn new() -> Records {
        Records {
            outstanding: BTreeMap::new(),
            claimed: Vec::new(),
            next_record: 1,
            jsonl_lines: None,
            last_claim: None,
        }
    }

    pub fn set_jsonl_lines(&mut self, lines: u64) {
        self.jsonl_lines = Some(lines);
    }

    pub fn next_record(&self) -> u64 {
        self.next_record
    }

    /// Records taken over and not yet handed out.
    pub fn claimed(&self) -> u64 {
        self.claimed.len() as u64
    }

    /// After a restart: numbers this process's pending records from the JSONL position + 1 (the lines given with
    /// [`Records::set_jsonl_lines`], else the stored checkpoint's), in their order, and returns them as the outbox.
    pub fn recover(
        &mut self,
        checkpoint: Option<u64>,
        mut pending: Vec<PendingRecord>,
    ) -> Vec<(u64, Vec<u8>)> {
        let base = self.jsonl_lines.or(checkpoint).unwrap_or(0);
        pending.sort_by_key(|p| p.seq);
        self.outstanding.clear();
        let mut outbox = Vec::with_capacity(pending.len());
        for (i, p) in pending.into_iter().enumerate() {
            let seq = base + 1 + i as u64;
            self.outstanding.insert(seq, (p.shard, p.id));
            outbox.push((seq, p.line));
        }
        self.next_record = base + 1 + outbox.len() as u64;
        outbox
    }

    /// The JSONL holds every line up to `lines`: those records leave the ledger, to be acknowledged.
    pub fn written(&mut self, lines: u64) -> Vec<(u32, String)> {
        let keep = match lines.checked_add(1) {
            Some(above) => self.outstanding.split_off(&above),
            None => BTreeMap::new(),
        };
        std::mem::replace(&mut self.outstanding, keep)
            .into_values()
            .collect()
    }

    /// A commit went through: its applied records (batch sequence, shard, stream id) take the next line numbers in
    /// batch order, then the records taken over since the last commit, whose lines are returned for the caller
    /// to write after the batch's own.
    pub fn committed(&mut self, mut applied: Vec<(u64, u32, String)>) -> Vec<Vec<u8>> {
        applied.sort_by_key(|(seq, _, _)| *seq);
        for (_, s, id) in applied {
            self.outstanding.insert(self.next_record, (s, id));
            self.next_record += 1;
        }
        let mut extra = Vec::with_capacity(self.claimed.len());
        for (s, id, line) in std::mem::take(&mut self.claimed) {
            self.outstanding.insert(self.next_record, (s, id));
            self.next_record += 1;
            extra.push(line);
        }
        extra
    }

    /// Of this process's pending records in the streams, those the ledger no longer holds: records it wrote and
    /// acknowledged, whose acknowledgement a failover lost. They are acknowledged again.
    pub fn forgotten(&self, pending: Vec<PendingRecord>) -> Vec<(u32, String)> {
        let held: std::collections::HashSet<&str> = self
            .outstanding
            .values()
            .map(|(_, id)| id.as_str())
            .chain(self.claimed.iter().map(|(_, id, _)| id.as_str()))
            .collect();
        pending
            .into_iter()
            .filter(|p| !held.contains(p.id.as_str()))
            .map(|p| (p.shard, p.id))
            .collect()
    }

    /// Whether a take-over is due at `now` (at most once per `every`); if so, it counts as done.
    pub fn claim_due(&mut self, now: Instant, every: Duration) -> bool {
        if self
            .last_claim
            .is_some_and(|t| now.saturating_duration_since(t) < every)
        {
            return false;
        }
        self.last_claim = Some(now);
        true
    }

    /// Keeps records taken over, to hand out with the next commit.
    pub fn hold(&mut self, taken: Vec<Claimed>) {
        self.claimed.extend(taken);
    }
}

/// This process's pending records in every shard.
pub(super) fn read_pel(
    conn: &mut Conn,
    crawl: &Crawl,
) -> Result<Vec<PendingRecord>, FrontierError> {
    let mut out = Vec::new();
    let mut todo: Vec<(u32, String)> = (0..crawl.shards()).map(|s| (s, "0".to_owned())).collect();
    while !todo.is_empty() {
        let calls: Vec<Call> = todo
            .iter()
            .map(|(s, from)| {
                crawl
                    .shard_call(&SCRIPTS.pel, *s)
                    .arg(&crawl.pid)
                    .arg(from.as_str())
                    .arg(PAGE)
            })
            .collect();
        let replies = conn.run(&calls)?;
        let mut next = Vec::new();
        for ((s, _), r) in todo.iter().zip(replies) {
            let v = r.map_err(|e| conn.error(&e))?;
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

/// This process's archive checkpoint (the field of its state hash the commits write).
pub(super) fn read_archive_checkpoint(
    conn: &mut Conn,
    crawl: &Crawl,
) -> Result<Option<Vec<u8>>, FrontierError> {
    let v = conn.cmd(
        redis::cmd("HGET")
            .arg(crawl.keys.process(&crawl.pid))
            .arg(ARCHIVE_FIELD),
    )?;
    Ok(match v {
        Value::Nil => None,
        v => Some(reply::bytes(v, "archive checkpoint")?),
    })
}

/// The JSONL checkpoint this process stored with its last commit that had one.
pub(super) fn read_checkpoint(
    conn: &mut Conn,
    crawl: &Crawl,
) -> Result<Option<JsonlCheckpoint>, FrontierError> {
    let v = conn.cmd(redis::cmd("HGETALL").arg(crawl.keys.process(&crawl.pid)))?;
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

/// The calls that acknowledge and delete records (shard, stream id), in pages per shard.
pub(super) fn ack_calls(crawl: &Crawl, list: Vec<(u32, String)>) -> Vec<Call> {
    let mut by_shard: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (s, id) in list {
        by_shard.entry(s).or_default().push(id);
    }
    let mut calls = Vec::new();
    for (s, ids) in by_shard {
        for chunk in ids.chunks(PAGE) {
            let mut c = Call::new(&SCRIPTS.ack, crawl.keys.stream(s));
            for id in chunk {
                c.push(id.as_str());
            }
            calls.push(c);
        }
    }
    calls
}

/// Takes over the records of other processes left unacknowledged for two leases in the shards this process
/// holds.
pub(super) fn take_over(
    conn: &mut Conn,
    crawl: &Crawl,
    gate: &LeaseTable,
) -> Result<Vec<Claimed>, FrontierError> {
    let mut taken = Vec::new();
    let owned: Vec<(u32, u64)> = gate
        .owned()
        .into_iter()
        .filter_map(|s| gate.token(s).map(|t| (s, t)))
        .collect();
    let calls: Vec<Call> = owned
        .iter()
        .map(|&(s, token)| {
            crawl
                .shard_call(&SCRIPTS.claim, s)
                .arg(&crawl.pid)
                .arg(crawl.settings.lease_ms * 2)
                .arg(PAGE)
                .arg(token)
        })
        .collect();
    for (&(s, _), r) in owned.iter().zip(conn.run(&calls)?) {
        let v = r.map_err(|e| conn.error(&e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(seq: u64, shard: u32, id: &str) -> PendingRecord {
        PendingRecord {
            seq,
            shard,
            id: id.into(),
            line: format!("line {id}").into_bytes(),
        }
    }

    fn ids(list: Vec<(u32, String)>) -> Vec<String> {
        list.into_iter().map(|(_, id)| id).collect()
    }

    #[test]
    fn recovered_records_are_numbered_after_the_jsonl_position_in_their_order() {
        let mut r = Records::new();
        r.set_jsonl_lines(10);
        let outbox = r.recover(
            Some(4),
            vec![pending(9, 1, "b"), pending(3, 0, "a"), pending(12, 2, "c")],
        );
        assert_eq!(
            outbox,
            vec![
                (11, b"line a".to_vec()),
                (12, b"line b".to_vec()),
                (13, b"line c".to_vec())
            ],
            "the lines the caller gave win over the stored checkpoint"
        );
        assert_eq!(r.next_record(), 14);
        assert_eq!(ids(r.written(12)), ["a", "b"]);
        assert_eq!(ids(r.written(13)), ["c"]);
    }

    #[test]
    fn without_lines_recovery_counts_from_the_checkpoint_else_from_one() {
        let mut r = Records::new();
        let outbox = r.recover(Some(7), vec![pending(1, 0, "a")]);
        assert_eq!(outbox[0].0, 8);
        assert_eq!(r.next_record(), 9);

        let mut r = Records::new();
        assert!(r.recover(None, Vec::new()).is_empty());
        assert_eq!(r.next_record(), 1);
    }

    #[test]
    fn recovery_forgets_what_was_outstanding_before() {
        let mut r = Records::new();
        r.committed(vec![(1, 0, "old".into())]);
        r.recover(Some(5), vec![pending(1, 3, "new")]);
        assert_eq!(r.written(u64::MAX), vec![(3, "new".to_owned())]);
    }

    #[test]
    fn written_acknowledges_the_lines_up_to_the_position_once() {
        let mut r = Records::new();
        let applied = (1..=5).map(|i| (i, 0, format!("id{i}"))).collect();
        assert!(r.committed(applied).is_empty());
        assert_eq!(r.next_record(), 6);
        assert!(r.written(0).is_empty());
        assert_eq!(ids(r.written(2)), ["id1", "id2"]);
        assert!(r.written(2).is_empty(), "acknowledged once");
        assert_eq!(ids(r.written(u64::MAX)), ["id3", "id4", "id5"]);
        assert!(r.written(u64::MAX).is_empty());
    }

    #[test]
    fn a_commit_numbers_its_records_in_batch_order_then_the_claimed_ones() {
        let mut r = Records::new();
        r.set_jsonl_lines(2);
        r.recover(None, Vec::new());
        r.hold(vec![(4, "t1".into(), b"taken 1".to_vec())]);
        r.hold(vec![(5, "t2".into(), b"taken 2".to_vec())]);
        assert_eq!(r.claimed(), 2);
        let extra = r.committed(vec![(20, 1, "second".into()), (10, 0, "first".into())]);
        assert_eq!(extra, [b"taken 1".to_vec(), b"taken 2".to_vec()]);
        assert_eq!(r.claimed(), 0, "handed out once");
        assert_eq!(r.next_record(), 7);
        assert_eq!(
            r.written(6),
            vec![
                (0, "first".to_owned()),
                (1, "second".to_owned()),
                (4, "t1".to_owned()),
                (5, "t2".to_owned())
            ]
        );
        assert!(r.committed(Vec::new()).is_empty());
        assert_eq!(r.next_record(), 7);
    }

    #[test]
    fn take_overs_are_due_once_per_interval() {
        let mut r = Records::new();
        let every = Duration::from_millis(500);
        let t0 = Instant::now();
        assert!(r.claim_due(t0, every), "the first poll takes over");
        assert!(!r.claim_due(t0 + Duration::from_millis(499), every));
        assert!(r.claim_due(t0 + every, every));
        assert!(!r.claim_due(t0 + every, every));
        assert!(
            !r.claim_due(t0, every),
            "a clock behind the last take-over waits"
        );
    }
}
