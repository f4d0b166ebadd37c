//! The crawl's processes as Redis has them: the live members of `{c}:members` (scored by heartbeat expiry) and
//! the holder of each shard's lease (`owner` while `exp` has not passed, in the shard's meta hash), read in one
//! pipeline: one call on the crawl-wide key, one per shard (each in its shard's slot, so a cluster runs them
//! node by node). Nothing is written; times are the server's. And whether the crawl knows a host another process
//! crawls (its shard kept its name).

use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::scripts::SCRIPTS;
use crawl_core::frontier::{FrontierError, ProcessInfo, host_fp};
use redis::Value;

/// The live processes and the shards each holds now (see [`ProcessInfo::tally`]).
pub(super) fn read(conn: &mut Conn, crawl: &Crawl) -> Result<Vec<ProcessInfo>, FrontierError> {
    let mut calls = Vec::with_capacity(crawl.shards() as usize + 1);
    calls.push(Call::new(&SCRIPTS.members, crawl.keys.members()));
    calls.extend((0..crawl.shards()).map(|s| crawl.shard_call(&SCRIPTS.holder, s)));
    let mut replies = conn.run(&calls)?.into_iter();
    let members = match replies.next() {
        Some(r) => members(r.map_err(|e| conn.error(&e))?)?,
        None => return Err(FrontierError::Store("members: no reply".into())),
    };
    let mut holders = Vec::with_capacity(crawl.shards() as usize);
    for r in replies {
        holders.push(holder(r.map_err(|e| conn.error(&e))?)?);
    }
    Ok(ProcessInfo::tally(members, &holders))
}

/// Whether any process added URLs of `host` (a host key) to its shard.
pub(super) fn knows_host(
    conn: &mut Conn,
    crawl: &Crawl,
    host: &str,
) -> Result<bool, FrontierError> {
    let call = crawl
        .shard_call(&SCRIPTS.hostknown, crawl.shard_of_host(host))
        .arg(host_fp(host))
        .arg(host);
    Ok(reply::int(&conn.call(&call)?, "host known")? == 1)
}

/// `members.lua`'s answer: (id, ms until its heartbeat lapses) pairs.
fn members(v: Value) -> Result<Vec<(String, u64)>, FrontierError> {
    let mut it = reply::array(v, "members")?.into_iter();
    let mut out = Vec::new();
    while let (Some(id), Some(left)) = (it.next(), it.next()) {
        out.push((
            reply::string(id, "member")?,
            reply::uint(&left, "heartbeat")?,
        ));
    }
    Ok(out)
}

/// `holder.lua`'s answer: the holder, or none.
fn holder(v: Value) -> Result<Option<String>, FrontierError> {
    reply::array(v, "holder")?
        .into_iter()
        .next()
        .map(|id| reply::string(id, "holder"))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn script_answers_are_read() {
        let m = Value::Array(vec![bulk("a"), Value::Int(900), bulk("b"), Value::Int(15)]);
        assert_eq!(
            members(m).unwrap(),
            [("a".to_owned(), 900), ("b".to_owned(), 15)]
        );
        assert!(members(Value::Array(vec![bulk("a"), bulk("x")])).is_err());
        assert_eq!(
            holder(Value::Array(vec![bulk("a")])).unwrap(),
            Some("a".to_owned())
        );
        assert_eq!(holder(Value::Array(Vec::new())).unwrap(), None);
    }
}
