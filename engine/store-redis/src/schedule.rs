//! The revisit schedule (continuous crawling), kept with each shard (`lua/sched.lua` has the layout): a finished
//! URL rescheduled by a commit waits there with its prior visit until it comes due; the owner of its shard then
//! promotes it into its host's queue, fenced by the shard's lease like a finish, so after a hand-off the next owner
//! promotes it and a URL due once is promoted once. Sitemap hints bring scheduled URLs of any shard forward.

use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::poll::ShardView;
use super::scripts::SCRIPTS;
use super::shards::LeaseTable;
use super::{commit::due_s, url_host};
use crawl_core::frontier::codec::{self, DecodeError, QueueElement, Reader};
use crawl_core::frontier::{
    Added, Entry, Fp, FrontierError, Hinted, Outlook, SitemapHint, UrlRef, url_fp,
};
use crawl_core::recrawl::Policy;
use redis::Value;
use std::collections::BTreeMap;

/// A schedule entry as `lua/sched.lua` keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduleEntry {
    pub url_fp: Fp,
    /// Unix seconds.
    pub due_s: u32,
    pub host: Fp,
    pub depth: u32,
    /// The queue element it becomes (its sequence number 0), URL and prior visit included.
    pub element: QueueElement,
}

/// Reads an entry of a host queue whose origin is `origin`: URL fp (8 bytes LE), due time (Unix seconds, 4 bytes
/// LE), host fp (8 bytes LE), depth (varint), the element without its sequence number.
pub(crate) fn parse_entry(buf: &[u8], origin: &str) -> Result<ScheduleEntry, DecodeError> {
    let mut r = Reader::new(buf);
    let url_fp = r.u64_fixed()?;
    let d = r.bytes(4)?;
    let due_s = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    let host = r.u64_fixed()?;
    let depth = r.u32()?;
    let mut element = vec![0];
    element.extend_from_slice(r.rest());
    Ok(ScheduleEntry {
        url_fp,
        due_s,
        host,
        depth,
        element: codec::decode_element(&element, origin)?,
    })
}

fn corrupt(shard: u32, e: impl std::fmt::Display) -> FrontierError {
    FrontierError::Corrupt {
        what: format!("revisit schedule of shard {shard}"),
        detail: e.to_string(),
    }
}

/// The earliest due time (Unix seconds, None: nothing scheduled), the count, and the (due, count) pairs of one
/// shard's `sdue` reply.
type Glance = (Option<u64>, u64, Vec<(u64, u64)>);

fn glance(v: Value) -> Result<Glance, FrontierError> {
    let a = reply::array(v, "schedule")?;
    let first = a
        .first()
        .map(|v| reply::int(v, "schedule"))
        .transpose()?
        .and_then(|f| u64::try_from(f).ok());
    let count = a.get(1).map_or(Ok(0), |v| reply::uint(v, "schedule"))?;
    let mut pairs = Vec::new();
    let mut it = a.iter().skip(2);
    while let (Some(d), Some(n)) = (it.next(), it.next()) {
        pairs.push((reply::uint(d, "schedule")?, reply::uint(n, "schedule")?));
    }
    Ok((first, count, pairs))
}

/// Runs one `sdue` call per shard.
fn glances(
    conn: &mut Conn,
    crawl: &Crawl,
    shards: &[u32],
    limit_s: i64,
    cap: u64,
    pairs: bool,
) -> Result<Vec<Glance>, FrontierError> {
    let calls: Vec<Call> = shards
        .iter()
        .map(|&s| {
            crawl
                .shard_call(&SCRIPTS.sdue, s)
                .arg(limit_s)
                .arg(cap)
                .arg(if pairs { "1" } else { "0" })
        })
        .collect();
    let mut out = Vec::with_capacity(shards.len());
    for r in conn.run(&calls)? {
        out.push(glance(r.map_err(|e| conn.error(&e))?)?);
    }
    Ok(out)
}

/// [`crawl_core::frontier::FrontierStore::promote_due`]: what is due in each shard this process may work on now
/// (held, lease live, not being handed over) is counted first with its due times, and the `max` are shared out
/// among the shards the earliest first; then each shard promotes its share, its earliest due first, in one script
/// fenced by its lease token. Within a shard the order is exact. Across shards it is exact while a shard has up to
/// 256 entries due; beyond that a window's start stands for its entries (at most 128, of several due times), so
/// that much due at once costs a length per window, not a read of every entry. A shard found taken over is dropped.
pub(super) fn promote(
    conn: &mut Conn,
    crawl: &Crawl,
    gate: &LeaseTable,
    view: &mut ShardView,
    now_ms: u64,
    max: usize,
) -> Result<Vec<Added>, FrontierError> {
    let shards: Vec<u32> = gate
        .owned()
        .into_iter()
        .filter(|&s| gate.may_start_shard(s))
        .collect();
    if max == 0 || shards.is_empty() {
        return Ok(Vec::new());
    }
    let limit = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
    let mut due: Vec<(u64, u32, u64)> = Vec::new();
    for (&s, (_, _, pairs)) in shards
        .iter()
        .zip(glances(conn, crawl, &shards, limit, max as u64, true)?)
    {
        due.extend(pairs.into_iter().map(|(d, n)| (d, s, n)));
    }
    due.sort_unstable();
    let mut quota: BTreeMap<u32, u64> = BTreeMap::new();
    let mut left = max as u64;
    for (_, s, n) in due {
        if left == 0 {
            break;
        }
        let take = n.min(left);
        *quota.entry(s).or_default() += take;
        left -= take;
    }
    let mut plans = Vec::new();
    let mut calls = Vec::new();
    for (s, n) in quota {
        let Some(token) = gate.token(s) else { continue };
        calls.push(
            crawl
                .shard_call(&SCRIPTS.promote, s)
                .arg(&crawl.pid)
                .arg(token)
                .arg(limit)
                .arg(n)
                .arg(crawl.shards())
                .arg(crawl.settings.recrawl_after_s),
        );
        plans.push((s, token));
    }
    let mut got: Vec<(u64, usize, Added)> = Vec::new();
    let mut failed = None;
    for ((s, token), r) in plans.into_iter().zip(conn.run(&calls)?) {
        let v = match r {
            Ok(v) => v,
            Err(e) => {
                failed.get_or_insert(conn.error(&e));
                continue;
            }
        };
        let mut items = reply::array(v, "promote")?.into_iter();
        if items
            .next()
            .map(|v| reply::int(&v, "promote"))
            .transpose()?
            != Some(1)
        {
            tracing::warn!(
                shard = s,
                "shard fenced: its lease was taken over, no revisit of it promoted"
            );
            gate.drop_shard(s, token);
            continue;
        }
        for item in items {
            match promoted(item, s) {
                Ok((due, a)) => got.push((due, got.len(), a)),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
    }
    view.promoted(got.len() as u64);
    if let Some(e) = failed {
        if got.is_empty() {
            return Err(e);
        }
        // What was promoted is queued in Redis whatever the caller is told: tell it.
        tracing::warn!(error = %e, promoted = got.len(), "revisits promoted in part");
    }
    got.sort_unstable_by_key(|(due, i, _)| (*due, *i));
    Ok(got.into_iter().map(|(_, _, a)| a).collect())
}

/// One promoted URL of a `promote` reply: {due time, host fp, host key, depth, element, queue origin}.
pub(super) fn promoted(item: Value, shard: u32) -> Result<(u64, Added), FrontierError> {
    let mut f = reply::array(item, "promoted")?.into_iter();
    let (Some(due), Some(host), Some(name), Some(depth), Some(elem), Some(origin)) =
        (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
    else {
        return Err(FrontierError::Store("promote: short reply".into()));
    };
    let due = reply::uint(&due, "promoted due")?;
    let host: Fp = reply::string(host, "promoted host")?
        .parse()
        .map_err(|e| corrupt(shard, e))?;
    let mut name = reply::string(name, "promoted host key")?;
    let depth =
        u32::try_from(reply::uint(&depth, "promoted depth")?).map_err(|e| corrupt(shard, e))?;
    let origin = reply::string(origin, "queue origin")?;
    let e = codec::decode_element(&reply::bytes(elem, "promoted element")?, &origin)
        .map_err(|e| corrupt(shard, e))?;
    if name.is_empty() {
        name = url_host(&e.url).unwrap_or_default();
    }
    let entry = Entry {
        id: UrlRef {
            key: url_fp(&e.url),
            slot: 0,
        },
        url: e.url,
        depth,
        parent: None,
        parent_ref: None,
        attempt: e.attempt,
        retries: e.retries,
        redirect_chain: e.redirect_chain,
        seq: e.seq,
        kind: e.kind,
        host,
        queued_at: None,
        prior: e.prior,
    };
    Ok((due, Added { entry, host: name }))
}

/// [`crawl_core::frontier::FrontierStore::outlook`] over the shards this process holds: revisits due before
/// `horizon_ms` (whole seconds: a due time is kept rounded up to one).
pub(super) fn outlook(
    conn: &mut Conn,
    crawl: &Crawl,
    gate: &LeaseTable,
    horizon_ms: u64,
    cap: u64,
) -> Result<Outlook, FrontierError> {
    let shards = gate.owned();
    // Due at d seconds is before the horizon when d·1000 < horizon_ms.
    let limit = match horizon_ms.checked_sub(1) {
        Some(h) => i64::try_from(h / 1000).unwrap_or(i64::MAX),
        None => -1,
    };
    let mut out = Outlook::default();
    for (first, count, _) in glances(conn, crawl, &shards, limit, cap, false)? {
        if let Some(f) = first {
            let ms = f.saturating_mul(1000);
            out.next_due_ms = Some(out.next_due_ms.map_or(ms, |n| n.min(ms)));
        }
        out.due_before = out.due_before.saturating_add(count);
    }
    out.due_before = out.due_before.min(cap);
    Ok(out)
}

/// [`crawl_core::frontier::FrontierStore::hint`]: the entries of the URLs hinted are read (every shard, held or
/// not), the policy decides, and the URLs brought forward are moved by a second script, each only if it is still
/// scheduled at the time read (a promotion or another move in between wins).
pub(super) fn hint(
    conn: &mut Conn,
    crawl: &Crawl,
    hints: &[SitemapHint],
    policy: &Policy,
    now_ms: u64,
) -> Result<Hinted, FrontierError> {
    let mut by_shard: BTreeMap<u32, Vec<&SitemapHint>> = BTreeMap::new();
    for h in hints {
        if let Some(host) = url_host(&h.url) {
            by_shard
                .entry(crawl.shard_of_host(&host))
                .or_default()
                .push(h);
        }
    }
    let calls: Vec<Call> = by_shard
        .iter()
        .map(|(&s, list)| {
            let mut c = crawl.shard_call(&SCRIPTS.sget, s);
            for h in list {
                c.push(&url_fp(&h.url).to_le_bytes()[..]);
            }
            c
        })
        .collect();
    let mut out = Hinted::default();
    let mut moves: Vec<Call> = Vec::new();
    for ((s, list), r) in by_shard.iter().zip(conn.run(&calls)?) {
        let v = r.map_err(|e| conn.error(&e))?;
        let mut it = reply::array(v, "scheduled entries")?.into_iter();
        let mut mv = crawl.shard_call(&SCRIPTS.smove, *s);
        let mut any = false;
        for h in list {
            let (Some(entry), Some(origin)) = (it.next(), it.next()) else {
                return Err(FrontierError::Store("sget: short reply".into()));
            };
            let entry = reply::bytes(entry, "scheduled entry")?;
            if entry.is_empty() {
                continue;
            }
            let origin = reply::string(origin, "queue origin")?;
            let e = parse_entry(&entry, &origin).map_err(|e| corrupt(*s, e))?;
            // Exact: a URL sharing the fingerprint of a scheduled one is not that one.
            let Some(prior) = e
                .element
                .prior
                .as_deref()
                .filter(|_| e.element.url == h.url)
            else {
                continue;
            };
            let hinted = policy.sitemap_hint(
                &h.url,
                prior,
                u64::from(e.due_s) * 1000,
                h.lastmod.as_deref(),
                h.changefreq.as_deref(),
                now_ms,
            );
            out.anomalies.extend(hinted.anomaly);
            if let Some(t) = hinted.due_ms.map(due_s).filter(|&t| t < e.due_s) {
                mv.push(&e.url_fp.to_le_bytes()[..]);
                mv.push(e.due_s);
                mv.push(t);
                any = true;
            }
        }
        if any {
            moves.push(mv);
        }
    }
    for r in conn.run(&moves)? {
        let v = r.map_err(|e| conn.error(&e))?;
        out.moved += reply::uint(&v, "moved")?;
    }
    Ok(out)
}
