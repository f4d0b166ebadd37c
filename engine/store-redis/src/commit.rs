//! A commit: the adds of every shard touched, then each owned shard's finished URLs, updates, records and
//! reschedules in one fenced script, then the JSONL checkpoint and the acknowledgements of written records.

use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::keys::member;
use super::poll::ShardView;
use super::records::{self, ARCHIVE_FIELD, Records};
use super::robots::robots_value;

use super::scripts::SCRIPTS;
use super::shards::LeaseTable;
use super::{ADD_CHUNK, MAX_DEPTH, dedup_host, url_host};
use crawl_core::frontier::codec::{self, QueueElement};
use crawl_core::frontier::{
    Added, Batch, Committed, Discovered, Entry, Finished, Fp, FrontierError, RECORDS_HOST,
    Rescheduled, SharedRobots, UrlRef, host_fp, url_fp,
};
use crawl_core::recrawl::Prior;
use std::collections::{BTreeMap, HashMap};

/// The head of a queue element (see [`codec::QueueElement`]): the parent is keyed by its stored reference when
/// it has one, else by its URL's fingerprint; a revisit carries its prior visit instead.
pub(super) fn element_head(
    kind: crawl_core::frontier::JobKind,
    parent: Option<(Option<UrlRef>, &str)>,
    attempt: u32,
    retries: u32,
    redirect_chain: &[String],
    prior: Option<&Prior>,
) -> Vec<u8> {
    let parent = parent.map(|(r, url)| match r.filter(|r| r.key != 0) {
        Some(r) => (r.key, true),
        None => (url_fp(url), false),
    });
    codec::encode_element_head(&QueueElement {
        seq: 0,
        kind,
        parent,
        attempt,
        retries,
        redirect_chain: redirect_chain.to_vec(),
        url: String::new(),
        prior: prior.map(|p| Box::new(p.clone())),
    })
}

/// What one call of a commit was for.
enum Plan {
    Add(Vec<(usize, Discovered, Fp)>),
    Apply(u32, u64, ShardWork),
    /// The checkpoint, and the acknowledgements.
    Written,
}

#[derive(Default)]
struct ShardWork {
    finished: Vec<Finished>,
    updates: Vec<Entry>,
    records: Vec<(u64, Vec<u8>)>,
    rescheduled: Vec<Rescheduled>,
}

/// A due time in whole Unix seconds as the schedule keeps it: rounded up like [`crawl_core::recrawl::Stored`]'s,
/// never earlier than asked.
pub(super) fn due_s(ms: u64) -> u32 {
    u32::try_from(ms.div_ceil(1000)).unwrap_or(u32::MAX)
}

/// The URL of a record line (JSON with a `url` field).
fn record_url(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct R {
        url: String,
    }
    serde_json::from_slice::<R>(line).ok().map(|r| r.url)
}

/// The shard a record goes to: its finished URL's, else its URL's host's when held, else any held shard.
fn record_shard(
    crawl: &Crawl,
    gate: &LeaseTable,
    line: &[u8],
    by_fp: &HashMap<Fp, u32>,
) -> Option<u32> {
    let url = record_url(line);
    if let Some(u) = &url {
        if let Some(&s) = by_fp.get(&url_fp(u)) {
            return Some(s);
        }
        if let Some(h) = url_host(u) {
            let s = crawl.shard_of_host(&h);
            if gate.token(s).is_some() {
                return Some(s);
            }
        }
    }
    gate.owned().first().copied()
}

/// A shard's changes applied by a commit: the epoch they raised the shard to, and the URLs of their records.
pub(super) struct Applied {
    pub shard: u32,
    pub epoch: u64,
    pub pages: Vec<String>,
}

/// This run's commits: the session id and commit counter make each commit's nonce, which makes a retried apply
/// call harmless.
pub(super) struct CommitSession {
    id: String,
    commits: u64,
}

impl CommitSession {
    pub fn new(id: String) -> CommitSession {
        CommitSession { id, commits: 0 }
    }

    /// The next commit's nonce, unique to this run.
    fn nonce(&mut self) -> String {
        self.commits += 1;
        format!("{}:{}", self.id, self.commits)
    }

    /// [`crawl_core::frontier::FrontierStore::commit`]: adds to every shard touched, then the owned shards' changes
    /// (fenced), then the checkpoint and acknowledgements, all as one pipeline (one request per call on a
    /// cluster). The records applied go into the ledger, the counts into the view.
    pub fn commit(
        &mut self,
        conn: &mut Conn,
        crawl: &Crawl,
        gate: &LeaseTable,
        ledger: &mut Records,
        view: &mut ShardView,
        batch: Batch,
    ) -> Result<(Committed, Vec<Applied>), FrontierError> {
        let shards = u64::from(crawl.shards());
        let nonce = self.nonce();
        let mut out = Committed::default();
        let mut calls = Vec::new();
        let mut plans = Vec::new();

        // Adds: every shard touched, no ownership needed.
        let mut adds: BTreeMap<u32, Vec<(usize, Discovered, Fp)>> = BTreeMap::new();
        for (i, d) in batch.discovered.into_iter().enumerate() {
            if d.depth >= MAX_DEPTH {
                return Err(FrontierError::Store(format!(
                    "depth {} of {} is beyond what the redis store queues ({MAX_DEPTH})",
                    d.depth, d.url
                )));
            }
            let shard = crawl.shard_of_host(&dedup_host(&d));
            let qfp = if d.kind.is_fetched() {
                host_fp(&d.host)
            } else {
                RECORDS_HOST
            };
            adds.entry(shard).or_default().push((i, d, qfp));
        }
        for (shard, mut list) in adds {
            while !list.is_empty() {
                let rest = list.split_off(list.len().min(ADD_CHUNK));
                let mut c = crawl
                    .shard_call(&SCRIPTS.add, shard)
                    .arg(crawl.shards())
                    .arg(&crawl.pid)
                    .arg(crawl.settings.recrawl_after_s);
                for (_, d, qfp) in &list {
                    let parent = d.parent.as_ref().map(|(r, u)| (Some(*r), u.as_str()));
                    c.push(member(url_fp(&d.url)));
                    c.push(*qfp);
                    c.push(if *qfp == RECORDS_HOST {
                        ""
                    } else {
                        d.host.as_str()
                    });
                    c.push(d.depth);
                    c.push(element_head(d.kind, parent, 0, 0, &d.redirect_chain, None));
                    c.push(d.url.as_str());
                    c.push(parent.map_or("", |p| p.1));
                }
                calls.push(c);
                plans.push(Plan::Add(list));
                list = rest;
            }
        }

        // Finished URLs, updates and records: per shard, fenced by the lease token.
        let mut work: BTreeMap<u32, ShardWork> = BTreeMap::new();
        let mut by_fp = HashMap::new();
        for f in batch.finished {
            let s = (f.key.seq % shards) as u32;
            by_fp.insert(f.id.key, s);
            work.entry(s).or_default().finished.push(f);
        }
        for e in batch.updates {
            let s = (e.seq % shards) as u32;
            work.entry(s).or_default().updates.push(e);
        }
        for (seq, line) in batch.records {
            match record_shard(crawl, gate, &line, &by_fp) {
                Some(s) => work.entry(s).or_default().records.push((seq, line)),
                None => out.fenced_records.push(seq),
            }
        }
        // A reschedule goes with its finish (the script applies it only when the finish is applied); one without
        // a finish in the batch is not applied.
        for r in batch.rescheduled {
            if let Some(&s) = by_fp.get(&r.id.key) {
                work.entry(s).or_default().rescheduled.push(r);
            }
        }
        for (s, w) in work {
            let Some(token) = gate.token(s) else {
                out.fenced.extend(w.finished.iter().map(|f| f.id));
                out.fenced_records.extend(w.records.iter().map(|r| r.0));
                out.fenced_shards.push(s);
                continue;
            };
            let mut c = crawl
                .shard_call(&SCRIPTS.apply, s)
                .arg(&crawl.pid)
                .arg(token)
                .arg(w.finished.len())
                .arg(w.updates.len())
                .arg(w.records.len())
                .arg(nonce.as_str())
                .arg(w.rescheduled.len());
            for f in &w.finished {
                c.push(member(f.id.key));
                c.push(f.host);
                c.push(f.key.depth);
                c.push(f.key.seq);
                c.push(if f.fetched_page { "1" } else { "0" });
            }
            for e in &w.updates {
                c.push(member(e.id.key));
                c.push(e.host);
                c.push(e.depth);
                c.push(e.seq);
                c.push(element_head(
                    e.kind,
                    e.parent.as_deref().map(|u| (e.parent_ref, u)),
                    e.attempt,
                    e.retries,
                    &e.redirect_chain,
                    e.prior.as_deref(),
                ));
                c.push(e.url.as_str());
            }
            for (seq, line) in &w.records {
                c.push(*seq);
                c.push(line.as_slice());
            }
            for r in &w.rescheduled {
                // Matched with its finish by the finish's reference; found by hints by its URL's fingerprint.
                c.push(member(r.id.key));
                c.push(&url_fp(&r.url).to_le_bytes()[..]);
                c.push(due_s(r.stored.next_due_ms));
                c.push(r.host);
                c.push(&r.host.to_le_bytes()[..]);
                c.push(r.depth);
                c.push(element_head(r.kind, None, 0, 0, &[], Some(&r.stored.prior)));
                c.push(r.url.as_str());
            }
            calls.push(c);
            plans.push(Plan::Apply(s, token, w));
        }

        // Pauses of throttled hosts, kept with their shard for whoever crawls it next (not fenced: a late pause
        // only makes a host wait longer).
        let mut pauses: BTreeMap<u32, Vec<(String, u64, u32)>> = BTreeMap::new();
        for (host, until, level) in batch.pauses {
            pauses
                .entry(crawl.shard_of_host(&host))
                .or_default()
                .push((host, until, level));
        }
        for (s, list) in pauses {
            let mut c = Call::new(&SCRIPTS.hset, crawl.keys.pause(s));
            for (host, until, level) in list {
                c.push(host);
                c.push(format!("{until}:{level}"));
            }
            calls.push(c);
            plans.push(Plan::Written);
        }

        // robots.txt rules, kept with their host's shard like the pauses (a late write is as good as any).
        let mut robots: BTreeMap<u32, Vec<SharedRobots>> = BTreeMap::new();
        for r in batch.robots {
            robots
                .entry(crawl.shard_of_host(&r.host))
                .or_default()
                .push(r);
        }
        for (s, list) in robots {
            let mut c = Call::new(&SCRIPTS.hset, crawl.keys.robots(s));
            for r in list {
                c.push(r.authority.as_str());
                c.push(robots_value(&r));
            }
            calls.push(c);
            plans.push(Plan::Written);
        }

        // Written: the checkpoint first, then the records it covers are acknowledged and deleted.
        if let Some(a) = batch.archive_checkpoint {
            calls.push(
                Call::new(&SCRIPTS.hset, crawl.keys.process(&crawl.pid))
                    .arg(ARCHIVE_FIELD)
                    .arg(a),
            );
            plans.push(Plan::Written);
        }
        if let Some(cp) = batch.written {
            calls.push(
                Call::new(&SCRIPTS.hset, crawl.keys.process(&crawl.pid))
                    .arg("lines")
                    .arg(cp.lines)
                    .arg("bytes")
                    .arg(cp.bytes),
            );
            plans.push(Plan::Written);
            let list = ledger.written(cp.lines);
            out.trimmed = list.len() as u64;
            for c in records::ack_calls(crawl, list) {
                calls.push(c);
                plans.push(Plan::Written);
            }
        }

        // On a cluster the adds and the applies that finish their pages can live on different masters, which fail
        // independently: the adds are on enough replicas before any apply is sent. (On one master the replication
        // stream keeps them in order.)
        let replies = match plans.iter().position(|p| !matches!(p, Plan::Add(_))) {
            Some(first) if first > 0 && conn.is_cluster() && conn.replicas_ack() > 0 => {
                let rest = calls.split_off(first);
                let mut replies = conn.run_spooled(&calls)?;
                replies.extend(conn.run_spooled(&rest)?);
                replies
            }
            _ => conn.run_spooled(&calls)?,
        };
        let mut added: Vec<(usize, Added)> = Vec::new();
        let mut applied: Vec<(u64, u32, String)> = Vec::new();
        let mut shard_epochs = Vec::new();
        for (plan, r) in plans.into_iter().zip(replies) {
            let v = r.map_err(|e| conn.error(&e))?;
            match plan {
                Plan::Add(list) => {
                    let seqs = reply::array(v, "add")?;
                    for ((i, d, qfp), seq) in list.into_iter().zip(seqs) {
                        let seq = reply::uint(&seq, "add")?;
                        if seq == 0 {
                            out.duplicates += 1;
                            continue;
                        }
                        view.added();
                        let (parent_ref, parent) = match d.parent {
                            Some((r, u)) => (Some(r).filter(|r| r.key != 0), Some(u)),
                            None => (None, None),
                        };
                        let id = UrlRef {
                            key: url_fp(&d.url),
                            slot: 0,
                        };
                        added.push((
                            i,
                            Added {
                                entry: Entry {
                                    url: d.url,
                                    depth: d.depth,
                                    parent,
                                    parent_ref,
                                    attempt: 0,
                                    retries: 0,
                                    redirect_chain: d.redirect_chain,
                                    seq,
                                    kind: d.kind,
                                    host: qfp,
                                    id,
                                    queued_at: None,
                                    prior: None,
                                },
                                host: if qfp == RECORDS_HOST {
                                    String::new()
                                } else {
                                    d.host
                                },
                            },
                        ));
                    }
                }
                Plan::Apply(s, token, w) => {
                    let a = reply::array(v, "apply")?;
                    let ok = a.first().map(|v| reply::int(v, "apply")).transpose()? == Some(1);
                    if !ok {
                        tracing::warn!(
                            shard = s,
                            finished = w.finished.len(),
                            records = w.records.len(),
                            "shard fenced: its lease was taken over, nothing of it applied"
                        );
                        gate.drop_shard(s, token);
                        out.fenced.extend(w.finished.iter().map(|f| f.id));
                        out.fenced_records.extend(w.records.iter().map(|r| r.0));
                        out.fenced_shards.push(s);
                        continue;
                    }
                    let n = |i: usize| a.get(i).map_or(Ok(0), |v| reply::uint(v, "apply"));
                    let (done, pages, epoch, scheduled) = (n(1)?, n(2)?, n(3)?, n(4)?);
                    view.finished(done, pages);
                    view.scheduled(scheduled);
                    shard_epochs.push(Applied {
                        shard: s,
                        epoch,
                        pages: w
                            .records
                            .iter()
                            .filter_map(|(_, l)| record_url(l))
                            .collect(),
                    });
                    for ((seq, _), id) in w.records.iter().zip(a.into_iter().skip(5)) {
                        applied.push((*seq, s, reply::string(id, "stream id")?));
                    }
                }
                Plan::Written => {}
            }
        }
        added.sort_by_key(|(i, _)| *i);
        out.added = added.into_iter().map(|(_, a)| a).collect();
        // The caller writes the kept records in batch order under the next line numbers, then the claimed
        // records of stopped processes: number them the same way for the acknowledgements.
        out.extra = ledger.committed(applied);
        out.counters = view.counters();
        Ok((out, shard_epochs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_commit_of_a_session_has_its_own_nonce() {
        let mut a = CommitSession::new("run".into());
        assert_eq!(a.nonce(), "run:1");
        assert_eq!(a.nonce(), "run:2");
        let mut b = CommitSession::new("other".into());
        assert_eq!(b.nonce(), "other:1");
    }

    #[test]
    fn record_lines_give_their_url() {
        assert_eq!(
            record_url(br#"{"url":"http://h/1","status":200}"#).as_deref(),
            Some("http://h/1")
        );
        assert_eq!(record_url(b"not json"), None);
        assert_eq!(record_url(br#"{"status":200}"#), None);
    }
}
