//! A forced re-fetch ([`FrontierStore::refetch`](crawl_core::frontier::FrontierStore::refetch)) in Redis: known
//! URLs that are done or scheduled queued again, by any process, in any shard.
//!
//! Redis keeps no mark of a done URL: a known URL is done when no queue holds it and the schedule does not. So a
//! re-fetch looks in three steps, each shard's URLs together:
//! 1. `rfcheck.lua` tells unknown URLs, URLs in the pending set (kept with recrawl) and scheduled ones (with their
//!    due time) from the rest, and reads the shard's last sequence number, the limit;
//! 2. `rfscan.lua` looks for the rest in their hosts' queues and in the shard's records queue, among the elements
//!    numbered up to the limit, a page of [`SCAN_PAGE`] elements per call (the server is never held long, and the
//!    pages of all the hosts go out together); an element is matched by its URL, exactly;
//! 3. `refetch.lua` queues, in one script per shard, the URLs not found: a scheduled one if it is still scheduled
//!    at the due time read, a done one if it is still not scheduled and no element of it was queued since the limit
//!    (it looks at the elements numbered above the limit, from the end of each list of the host and of the records
//!    queue: what was queued since the re-fetch began, by a promotion, another re-fetch or a recrawl).
//!
//! Between the steps the lists only lose elements (finished, so done) or gain them at their end, numbered above the
//! limit, so a URL pending at the last step is found by step 2 or step 3. Step 2 costs what the hosts named have
//! queued (once per host and call for up to 2,000 of its URLs), steps 1 and 3 a few lookups per URL.
//!
//! A URL queued here bumps its shard's hosts version, whoever queues: the shard's owner reads the shard's hosts at
//! its next poll and reads each host's queue again from its start, so the entry (at whatever depth) reaches its
//! window even when the process that queued it is another one.

use super::commit::element_head;
use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::keys::member;
use super::poll::ShardView;
use super::schedule::promoted;
use super::scripts::SCRIPTS;
use super::{ADD_CHUNK, MAX_DEPTH, dedup_host};
use crawl_core::frontier::{Added, Discovered, Fp, FrontierError, RECORDS_HOST, host_fp, url_fp};
use redis::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Elements a scan call looks at, at most.
pub const SCAN_PAGE: usize = 8192;

/// What the steps found of a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Unknown,
    Pending,
    /// Scheduled, due at (Unix seconds).
    Scheduled(u64),
    /// Not pending as far as looked: done.
    Done,
}

/// A URL asked for.
struct Asked<'a> {
    /// Its place in the call.
    index: usize,
    d: &'a Discovered,
    /// Its host queue (the records queue for kinds not fetched).
    queue: Fp,
    found: Found,
}

/// One host queue of a shard looked through for some of its URLs.
struct Scan {
    shard: u32,
    host: Fp,
    /// Positions of the URLs in the shard's list.
    urls: Vec<usize>,
    /// Where the next page starts: (depth, sequence number); None once all is looked at.
    at: Option<(i64, i64)>,
}

fn short(what: &str) -> FrontierError {
    FrontierError::Store(format!("{what}: short reply"))
}

/// See the module's docs. Returns what was queued, in the order asked; the counters move in `view`.
pub(super) fn refetch(
    conn: &mut Conn,
    crawl: &Crawl,
    view: &mut ShardView,
    urls: &[Discovered],
) -> Result<Vec<Added>, FrontierError> {
    let mut names = HashSet::new();
    let mut by_shard: BTreeMap<u32, Vec<Asked>> = BTreeMap::new();
    for (index, d) in urls.iter().enumerate() {
        if !names.insert(d.url.as_str()) {
            continue;
        }
        if d.depth >= MAX_DEPTH {
            return Err(FrontierError::Store(format!(
                "depth {} of {} is beyond what the redis store queues ({MAX_DEPTH})",
                d.depth, d.url
            )));
        }
        let queue = if d.kind.is_fetched() {
            host_fp(&d.host)
        } else {
            RECORDS_HOST
        };
        by_shard
            .entry(crawl.shard_of_host(&dedup_host(d)))
            .or_default()
            .push(Asked {
                index,
                d,
                queue,
                found: Found::Done,
            });
    }
    if by_shard.is_empty() {
        return Ok(Vec::new());
    }
    let limits = look(conn, crawl, &mut by_shard)?;
    scan(conn, crawl, &mut by_shard, &limits)?;

    // 3. Queue what was found done or scheduled.
    let mut calls = Vec::new();
    let mut plans: Vec<(u32, Vec<usize>)> = Vec::new();
    for (&s, list) in &by_shard {
        let todo: Vec<usize> = (0..list.len())
            .filter(|&i| matches!(list[i].found, Found::Done | Found::Scheduled(_)))
            .collect();
        for chunk in todo.chunks(ADD_CHUNK) {
            let mut c = crawl
                .shard_call(&SCRIPTS.refetch, s)
                .arg(crawl.shards())
                .arg(crawl.settings.recrawl_after_s)
                .arg(limits.get(&s).copied().unwrap_or(0));
            for &i in chunk {
                let a = &list[i];
                let fp = url_fp(&a.d.url);
                c.push(member(fp));
                c.push(&fp.to_le_bytes()[..]);
                c.push(match a.found {
                    Found::Scheduled(due) => due,
                    _ => 0,
                });
                c.push(a.queue);
                c.push(if a.queue == RECORDS_HOST {
                    ""
                } else {
                    a.d.host.as_str()
                });
                c.push(a.d.depth);
                c.push(element_head(a.d.kind, None, 0, 0, &[], None));
                c.push(a.d.url.as_str());
            }
            calls.push(c);
            plans.push((s, chunk.to_vec()));
        }
    }
    let mut out: Vec<(usize, Added)> = Vec::new();
    let (mut from_done, mut from_scheduled) = (0, 0);
    for ((s, positions), r) in plans.into_iter().zip(conn.run(&calls)?) {
        let v = r.map_err(|e| conn.error(&e))?;
        let list = &by_shard[&s];
        let items = reply::array(v, "refetch")?;
        if items.len() != positions.len() {
            return Err(short("refetch"));
        }
        for (i, item) in positions.into_iter().zip(items) {
            if matches!(item, Value::Int(0)) {
                continue; // pending meanwhile
            }
            let (_, added) = promoted(item, s)?;
            match list[i].found {
                Found::Scheduled(_) => from_scheduled += 1,
                _ => from_done += 1,
            }
            out.push((list[i].index, added));
        }
    }
    view.refetched(from_done, from_scheduled);
    out.sort_unstable_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, a)| a).collect())
}

/// Step 1: what each shard knows of its URLs; returns each shard's limit.
fn look(
    conn: &mut Conn,
    crawl: &Crawl,
    by_shard: &mut BTreeMap<u32, Vec<Asked>>,
) -> Result<BTreeMap<u32, u64>, FrontierError> {
    let mut calls = Vec::new();
    let mut plans = Vec::new();
    for (&s, list) in by_shard.iter() {
        for (k, chunk) in list.chunks(ADD_CHUNK).enumerate() {
            let mut c = crawl
                .shard_call(&SCRIPTS.rfcheck, s)
                .arg(crawl.settings.recrawl_after_s)
                .arg(crawl.shards());
            for a in chunk {
                let fp = url_fp(&a.d.url);
                c.push(member(fp));
                c.push(&fp.to_le_bytes()[..]);
            }
            calls.push(c);
            plans.push((s, k * ADD_CHUNK, chunk.len()));
        }
    }
    let mut limits: BTreeMap<u32, u64> = BTreeMap::new();
    for ((s, from, n), r) in plans.into_iter().zip(conn.run(&calls)?) {
        let v = r.map_err(|e| conn.error(&e))?;
        let a = reply::array(v, "rfcheck")?;
        if a.len() != 1 + 2 * n {
            return Err(short("rfcheck"));
        }
        let limit = reply::uint(&a[0], "rfcheck")?;
        // The lowest of a shard's chunks: every element numbered up to it was there before any scan began.
        limits
            .entry(s)
            .and_modify(|l| *l = (*l).min(limit))
            .or_insert(limit);
        let list = by_shard.get_mut(&s).ok_or_else(|| short("rfcheck"))?;
        for k in 0..n {
            let state = reply::uint(&a[1 + 2 * k], "rfcheck")?;
            let due = reply::uint(&a[2 + 2 * k], "rfcheck")?;
            list[from + k].found = match state {
                0 => Found::Unknown,
                1 => Found::Pending,
                2 => Found::Scheduled(due),
                _ => Found::Done,
            };
        }
    }
    Ok(limits)
}

/// Step 2: the URLs not told apart yet are looked for in their hosts' queues and the shard's records queue; those
/// found are pending.
fn scan(
    conn: &mut Conn,
    crawl: &Crawl,
    by_shard: &mut BTreeMap<u32, Vec<Asked>>,
    limits: &BTreeMap<u32, u64>,
) -> Result<(), FrontierError> {
    let mut scans = Vec::new();
    for (&s, list) in by_shard.iter() {
        let unsure: Vec<usize> = (0..list.len())
            .filter(|&i| list[i].found == Found::Done)
            .collect();
        if unsure.is_empty() {
            continue;
        }
        let mut hosts: BTreeSet<Fp> = unsure
            .iter()
            .map(|&i| host_fp(&dedup_host(list[i].d)))
            .collect();
        hosts.insert(RECORDS_HOST);
        for host in hosts {
            let urls: Vec<usize> = unsure
                .iter()
                .copied()
                .filter(|&i| host == RECORDS_HOST || host_fp(&dedup_host(list[i].d)) == host)
                .collect();
            // A call's arguments stay well below Redis's limits: many URLs of one host are looked for in turns.
            for part in urls.chunks(ADD_CHUNK) {
                scans.push(Scan {
                    shard: s,
                    host,
                    urls: part.to_vec(),
                    at: Some((-1, -1)),
                });
            }
        }
    }
    loop {
        let open: Vec<usize> = (0..scans.len())
            .filter(|&k| scans[k].at.is_some())
            .collect();
        if open.is_empty() {
            return Ok(());
        }
        let calls: Vec<Call> = open
            .iter()
            .map(|&k| {
                let sc = &scans[k];
                let (depth, seq) = sc.at.unwrap_or((-1, -1));
                let mut c = crawl
                    .shard_call(&SCRIPTS.rfscan, sc.shard)
                    .arg(sc.host)
                    .arg(limits.get(&sc.shard).copied().unwrap_or(0))
                    .arg(depth)
                    .arg(seq)
                    .arg(SCAN_PAGE);
                for &i in &sc.urls {
                    c.push(by_shard[&sc.shard][i].d.url.as_str());
                }
                c
            })
            .collect();
        for (k, r) in open.into_iter().zip(conn.run(&calls)?) {
            let v = r.map_err(|e| conn.error(&e))?;
            let a = reply::array(v, "rfscan")?;
            let (Some(depth), Some(seq)) = (a.first(), a.get(1)) else {
                return Err(short("rfscan"));
            };
            let depth = reply::int(depth, "rfscan")?;
            let seq = reply::int(seq, "rfscan")?;
            let sc = &mut scans[k];
            sc.at = (depth >= 0).then_some((depth, seq));
            let list = by_shard.get_mut(&sc.shard).ok_or_else(|| short("rfscan"))?;
            for p in &a[2..] {
                let p = reply::uint(p, "rfscan")? as usize;
                if let Some(&i) = p.checked_sub(1).and_then(|p| sc.urls.get(p)) {
                    list[i].found = Found::Pending;
                }
            }
        }
    }
}
