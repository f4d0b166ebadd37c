//! The crawl's instance: created once (with a random id that every shard keeps as its sentinel), checked by every
//! process that opens the crawl.

use super::RedisSettings;
use super::conn::{Call, Conn, reply};
use super::keys::Keys;
use super::scripts::SCRIPTS;
use crawl_core::frontier::FrontierError;

/// A random id (128 bits, hex) from the standard library's randomly keyed hasher.
pub(super) fn random_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut a = std::collections::hash_map::RandomState::new().build_hasher();
    a.write_u128(nanos);
    a.write_u32(std::process::id());
    let x = a.finish();
    let mut b = std::collections::hash_map::RandomState::new().build_hasher();
    b.write_u64(x);
    format!("{x:016x}{:016x}", b.finish())
}

/// The shard count an instance id (`<random>-s<shards>`) was made with.
pub(super) fn made_with(inst: &str) -> Option<u32> {
    inst.rsplit_once("-s").and_then(|(_, n)| n.parse().ok())
}

/// Settings that cannot work are refused before anything is sent.
pub(super) fn validate(s: &RedisSettings, pid: &str) -> Result<(), FrontierError> {
    let bad = |m: String| Err(FrontierError::Store(m));
    if s.urls.is_empty() && s.sentinels.is_empty() {
        return bad("redis: no URL configured".into());
    }
    if !s.sentinels.is_empty() && (!s.urls.is_empty() || s.cluster || s.master.is_empty()) {
        return bad("redis: sentinels need a master name, and exclude urls and cluster".into());
    }
    if s.crawl.is_empty() || s.crawl.contains(['{', '}']) {
        return bad(format!(
            "redis: crawl name {:?} must be non-empty without braces",
            s.crawl
        ));
    }
    if s.shards == 0 || s.shards > 1 << 16 {
        return bad(format!("redis: shards must be 1..=65536, not {}", s.shards));
    }
    if s.lease_ms < 100 {
        return bad(format!(
            "redis: lease_ms must be at least 100, not {}",
            s.lease_ms
        ));
    }
    if pid.is_empty() || pid.contains(char::is_whitespace) {
        return bad(format!(
            "redis: process id {pid:?} must be non-empty without spaces"
        ));
    }
    Ok(())
}

/// Opens the crawl's instance: creates it (and every shard) when the namespace is new, finishes a creation another
/// process left half done, and refuses a crawl made with another shard count. Returns (instance id, created).
pub(super) fn open_instance(
    conn: &mut Conn,
    keys: &Keys,
    shards: u32,
) -> Result<(String, bool), FrontierError> {
    let id = format!("{}-s{shards}", random_id());
    let v = conn.call(
        &Call::new(&SCRIPTS.instance, keys.instance())
            .arg("open")
            .arg(&id),
    )?;
    let mut a = reply::array(v, "instance")?.into_iter();
    let (Some(created), Some(value)) = (a.next(), a.next()) else {
        return Err(FrontierError::Store(
            "bad reply for the crawl instance".into(),
        ));
    };
    let created = reply::int(&created, "instance")? == 1;
    let value = reply::string(value, "instance")?;
    let Some((state, inst)) = value.split_once(':') else {
        return Err(FrontierError::Store(format!(
            "the crawl's instance key holds {value:?}"
        )));
    };
    let inst = inst.to_owned();
    let made_with = made_with(&inst);
    if made_with != Some(shards) {
        return Err(FrontierError::Store(format!(
            "the crawl was created with {} shards; this process is configured with {shards}",
            made_with.map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string())
        )));
    }
    match state {
        "ready" => {}
        "creating" => {
            let calls: Vec<Call> = (0..shards)
                .map(|s| {
                    Call::new(&SCRIPTS.shard_init, keys.meta(s))
                        .arg(&inst)
                        .arg(s)
                        .arg(LAYOUT)
                })
                .collect();
            for r in conn.run(&calls)? {
                if let Err(e) = r {
                    return Err(conn.error(&e));
                }
            }
            conn.call(
                &Call::new(&SCRIPTS.instance, keys.instance())
                    .arg("ready")
                    .arg(&inst),
            )?;
        }
        other => {
            return Err(FrontierError::Store(format!(
                "the crawl's instance is in an unknown state {other:?}"
            )));
        }
    }
    check_layout(conn, keys)?;
    Ok((inst, created))
}

/// The layout version of a shard's keys this version reads and writes (`lay` in every shard's meta hash): host
/// queues as lists per depth, the parent table (see [`super::keys`]).
pub(super) const LAYOUT: &str = "2";

/// Refuses a crawl whose shards were made by a version with another key layout (shard 0 speaks for all: every
/// shard is made by the same process).
fn check_layout(conn: &mut Conn, keys: &Keys) -> Result<(), FrontierError> {
    let lay = match conn.cmd(redis::cmd("HGET").arg(keys.meta(0)).arg("lay"))? {
        redis::Value::Nil => None,
        v => Some(reply::string(v, "layout")?),
    };
    if lay.as_deref() == Some(LAYOUT) {
        return Ok(());
    }
    Err(FrontierError::Store(format!(
        "the crawl {:?} in redis was stored by an older version of crawl-engine (key layout {}, this version \
         reads layout {LAYOUT}); start a new crawl name ([frontier.redis] crawl) or delete the old crawl's keys",
        keys.crawl(),
        lay.as_deref().unwrap_or("1")
    )))
}
