//! What operators set on the crawl ([`OperatorState`]) in Redis, and this process's view of it.
//!
//! # Layout
//! A host's rule ([`HostRule`] as JSON) is a field of its shard's `ops` hash, named by the [`HostMatch`] text (the
//! shard is the one of `host_fp(host)`, where the host's queue is): it moves with the shard, and whoever owns the
//! shard, now or later, finds it there. The crawl's pause is the field `crawl` of the crawl-wide hash `{c}:op`,
//! whose field `v` is a version raised by every change, and `s:<shard>` the shard's change counter (`opv` in the
//! shard's meta hash) as last announced.
//!
//! # Changes
//! Any process may apply any change (an operator's API may run on any process; nothing is fenced by a lease). A
//! change is a read-modify-write done by compare-and-set: the rule as last read (or as cached) is sent with the new
//! one to a script that writes only if the stored rule is still the one read, else answers the stored one, which
//! the change is applied to again (at most [`CAS_TRIES`] times: each failed try means another process changed that
//! rule meanwhile). A script rather than WATCH/MULTI: one request per try on a pipeline-less cluster link, and no
//! connection state to lose on a reconnect. The change itself is always [`OperatorState::apply`]'s, applied to a
//! state holding that host's rule alone. The crawl's pause is compared and set the same way in `{c}:op`, with `v`
//! raised in the same script. A host's change is then announced in `{c}:op` (a second request: the shard's slot
//! and the crawl-wide one differ on a cluster), raising `v` and `s:<shard>`.
//!
//! # Reading
//! [`FrontierStore::operator_state`](crawl_core::frontier::FrontierStore::operator_state) is asked about once a
//! second by every process: when `v` did not move it costs one request (`HGET`, O(1) on the server). When it moved,
//! `{c}:op` is read whole (O(shards with rules)) and then, in one pipeline, the rules of the shards whose announced
//! counter is past the one read last. Because a rule is written before it is announced, a reader that sees an
//! announcement reads the rule; a reader may also read a rule before its announcement, which is then already
//! there. A writer that dies between the two requests leaves a rule unannounced: every [`FULL_READ_EVERY`] each
//! shard's counter is read anyway (one pipeline; the rules only where the counter moved), so no reader keeps a
//! stale state longer than that.
//!
//! # Measured
//! A host's rule costs about 180 bytes of Redis memory (2,000 paused hosts on 256 shards: 81 bytes of JSON each,
//! which is past the 64 bytes a listpack value may hold, so a shard's `ops` hash is a hash table); `{c}:op` about
//! 2.6 KB with every shard announced. A read when nothing changed is one request; after a host's change, three
//! (`tests/operator.rs` prints both).
//!
//! The version returned is this view's: `v · 2^16` as read, kept while the state read is the same, and raised by
//! one when the state changed while `v` did not (a rule found by the full read), so it changes exactly when the
//! state does and, in the common case, is the same number in every process.

use super::conn::{Call, Conn, reply};
use super::crawl::Crawl;
use super::scripts::SCRIPTS;
use crawl_core::control::{Change, HostMatch, HostRule, OperatorState, Pause};
use crawl_core::frontier::{FrontierError, corrupt};
use redis::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often every shard's rule counter is read even when `v` did not move.
pub const FULL_READ_EVERY: Duration = Duration::from_secs(60);
/// Compare-and-set tries of one change before it fails.
pub const CAS_TRIES: usize = 32;

/// One shard's rules as last read.
#[derive(Debug, Default, Clone)]
struct ShardRules {
    /// The shard's `opv` they were read at (None: never read).
    opv: Option<u64>,
    rules: BTreeMap<HostMatch, HostRule>,
}

/// This process's view of what operators set.
#[derive(Debug)]
pub(super) struct OperatorView {
    /// `v` as of the last read.
    v: Option<u64>,
    crawl: Option<Pause>,
    shards: Vec<ShardRules>,
    /// When every shard was last read.
    full_at: Option<Instant>,
    /// The version and state last returned.
    last: Option<(u64, OperatorState)>,
}

/// The version of a state read at crawl-wide version `v`, after `last` (see the module's docs).
fn next_version(last: Option<&(u64, OperatorState)>, v: u64, state: &OperatorState) -> u64 {
    let read = v.saturating_mul(1 << 16);
    match last {
        Some((version, same)) if same == state => *version,
        Some((version, _)) => read.max(version.saturating_add(1)),
        None => read,
    }
}

fn to_json<T: serde::Serialize>(what: &str, v: &T) -> Result<String, FrontierError> {
    serde_json::to_string(v).map_err(|e| FrontierError::Store(format!("{what} not encodable: {e}")))
}

/// A stored rule or pause: "" is none.
fn from_json<T: serde::de::DeserializeOwned>(
    what: &str,
    s: &str,
) -> Result<Option<T>, FrontierError> {
    if s.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(s)
        .map(Some)
        .map_err(|e| corrupt(what, e))
}

/// A compare-and-set script's answer: Ok(the counter raised) or Err(the value stored instead).
fn cas_reply(v: Value, what: &str) -> Result<Result<u64, String>, FrontierError> {
    let mut it = reply::array(v, what)?.into_iter();
    let (Some(ok), Some(x)) = (it.next(), it.next()) else {
        return Err(FrontierError::Store(format!("{what}: short reply")));
    };
    if reply::int(&ok, what)? == 1 {
        Ok(Ok(reply::uint(&x, what)?))
    } else {
        Ok(Err(reply::string(x, what)?))
    }
}

fn conflict(what: &str) -> FrontierError {
    FrontierError::Store(format!(
        "operator change of {what} kept meeting concurrent changes ({CAS_TRIES} tries)"
    ))
}

impl OperatorView {
    pub fn new(shards: u32) -> OperatorView {
        OperatorView {
            v: None,
            crawl: None,
            shards: vec![ShardRules::default(); shards as usize],
            full_at: None,
            last: None,
        }
    }

    /// The state as this view has it.
    fn assemble(&self) -> OperatorState {
        OperatorState {
            crawl: self.crawl.clone(),
            hosts: self
                .shards
                .iter()
                .flat_map(|s| s.rules.iter().map(|(h, r)| (h.clone(), r.clone())))
                .collect(),
        }
    }

    /// The version and the state (see the module's docs for what it costs).
    pub fn state(
        &mut self,
        conn: &mut Conn,
        crawl: &Crawl,
        now: Instant,
    ) -> Result<(u64, OperatorState), FrontierError> {
        let full = self
            .full_at
            .is_none_or(|t| now.saturating_duration_since(t) >= FULL_READ_EVERY);
        if !full {
            let v = conn.cmd(redis::cmd("HGET").arg(crawl.keys.operator()).arg("v"))?;
            let v = match v {
                Value::Nil => 0,
                v => reply::uint(&v, "operator version")?,
            };
            if self.v == Some(v)
                && let Some(last) = &self.last
            {
                return Ok(last.clone());
            }
        }
        let all = conn.cmd(redis::cmd("HGETALL").arg(crawl.keys.operator()))?;
        let mut v = 0;
        let mut crawl_pause = None;
        let mut announced = Vec::new();
        let fields: Vec<(Value, Value)> = match all {
            Value::Map(m) => m,
            other => {
                let mut it = reply::array(other, "operator state")?.into_iter();
                let mut pairs = Vec::new();
                while let (Some(k), Some(x)) = (it.next(), it.next()) {
                    pairs.push((k, x));
                }
                pairs
            }
        };
        for (k, x) in fields {
            let k = reply::string(k, "operator field")?;
            let x = reply::string(x, "operator value")?;
            let number = |x: &str| {
                x.parse::<u64>()
                    .map_err(|e| corrupt(format!("operator field {k}"), e))
            };
            match k.as_str() {
                "v" => v = number(&x)?,
                "crawl" => crawl_pause = from_json::<Pause>("the crawl's pause", &x)?,
                _ => {
                    if let Some(s) = k.strip_prefix("s:").and_then(|s| s.parse::<u32>().ok())
                        && (s as usize) < self.shards.len()
                    {
                        announced.push((s, number(&x)?));
                    }
                }
            }
        }
        let read: Vec<u32> = if full {
            (0..crawl.shards()).collect()
        } else {
            announced
                .into_iter()
                .filter(|&(s, opv)| self.shards[s as usize].opv.is_none_or(|had| had < opv))
                .map(|(s, _)| s)
                .collect()
        };
        let calls: Vec<Call> = read
            .iter()
            .map(|&s| {
                let had = self.shards[s as usize].opv.map_or(-1, |o| o as i64);
                crawl.shard_call(&SCRIPTS.oprules, s).arg(had)
            })
            .collect();
        for (&s, r) in read.iter().zip(conn.run(&calls)?) {
            let rules = r.map_err(|e| conn.error(&e))?;
            let mut it = reply::array(rules, "operator rules")?.into_iter();
            let (Some(opv), Some(changed)) = (it.next(), it.next()) else {
                return Err(FrontierError::Store("operator rules: short reply".into()));
            };
            let opv = reply::uint(&opv, "operator rules")?;
            if reply::int(&changed, "operator rules")? == 1 {
                let mut rules = BTreeMap::new();
                while let (Some(h), Some(rule)) = (it.next(), it.next()) {
                    let h = reply::string(h, "operator host")?;
                    let host = HostMatch::parse(&h).map_err(|e| corrupt("operator host", e))?;
                    let what = format!("operator rule of {h}");
                    if let Some(rule) =
                        from_json::<HostRule>(&what, &reply::string(rule, "operator rule")?)?
                    {
                        rules.insert(host, rule);
                    }
                }
                self.shards[s as usize].rules = rules;
            }
            self.shards[s as usize].opv = Some(opv);
        }
        self.v = Some(v);
        self.crawl = crawl_pause;
        if full {
            self.full_at = Some(now);
        }
        let state = self.assemble();
        let version = next_version(self.last.as_ref(), v, &state);
        self.last = Some((version, state.clone()));
        Ok((version, state))
    }

    /// Applies `change` (see the module's docs); true when the state changed.
    pub fn apply(
        &mut self,
        conn: &mut Conn,
        crawl: &Crawl,
        change: &Change,
    ) -> Result<bool, FrontierError> {
        let Some(host) = change.host() else {
            let mut stored = match &self.crawl {
                Some(p) => to_json("the crawl's pause", p)?,
                None => String::new(),
            };
            for _ in 0..CAS_TRIES {
                let mut state = OperatorState {
                    crawl: from_json("the crawl's pause", &stored)?,
                    ..OperatorState::default()
                };
                if !state.apply(change) {
                    return Ok(false);
                }
                let new = match &state.crawl {
                    Some(p) => to_json("the crawl's pause", p)?,
                    None => String::new(),
                };
                let call = Call::new(&SCRIPTS.opcrawl, crawl.keys.operator())
                    .arg(&stored)
                    .arg(&new);
                match cas_reply(conn.call(&call)?, "operator pause")? {
                    Ok(_) => {
                        self.crawl = state.crawl;
                        return Ok(true);
                    }
                    Err(now) => stored = now,
                }
            }
            return Err(conflict("the crawl"));
        };
        let shard = crawl.shard_of_host(host.host());
        let name = host.to_string();
        let mut stored = match self.shards[shard as usize].rules.get(host) {
            Some(r) => to_json("a host's rule", r)?,
            None => String::new(),
        };
        for _ in 0..CAS_TRIES {
            let mut state = OperatorState::default();
            if let Some(rule) = from_json::<HostRule>("a host's rule", &stored)? {
                state.hosts.insert(host.clone(), rule);
            }
            if !state.apply(change) {
                return Ok(false);
            }
            let new = match state.hosts.get(host) {
                Some(r) => to_json("a host's rule", r)?,
                None => String::new(),
            };
            let call = crawl
                .shard_call(&SCRIPTS.opset, shard)
                .arg(&name)
                .arg(&stored)
                .arg(&new);
            match cas_reply(conn.call(&call)?, "operator rule")? {
                Ok(opv) => {
                    // Kept for the next change; the next read reads the shard again (its counter moved).
                    let rules = &mut self.shards[shard as usize].rules;
                    match state.hosts.remove(host) {
                        Some(r) => rules.insert(host.clone(), r),
                        None => rules.remove(host),
                    };
                    conn.call(
                        &Call::new(&SCRIPTS.opannounce, crawl.keys.operator())
                            .arg(shard)
                            .arg(opv),
                    )?;
                    return Ok(true);
                }
                Err(now) => stored = now,
            }
        }
        Err(conflict(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::control::Requester;

    fn paused(host: &str) -> OperatorState {
        let mut s = OperatorState::default();
        s.apply(&Change::Pause {
            host: Some(HostMatch::parse(host).unwrap()),
            at_ms: 1,
            by: Requester::Process,
        });
        s
    }

    #[test]
    fn the_version_moves_exactly_when_the_state_does() {
        let empty = OperatorState::default();
        assert_eq!(next_version(None, 0, &empty), 0);
        assert_eq!(next_version(None, 3, &empty), 3 << 16, "as read");
        let a = paused("a.example");
        let last = (3 << 16, empty.clone());
        assert_eq!(next_version(Some(&last), 4, &a), 4 << 16);
        assert_eq!(
            next_version(Some(&last), 9, &empty),
            3 << 16,
            "v moved, the state did not: kept"
        );
        assert_eq!(
            next_version(Some(&last), 3, &a),
            (3 << 16) + 1,
            "the state moved, v did not: raised by one"
        );
        let raised = ((3 << 16) + 1, a.clone());
        assert_eq!(
            next_version(Some(&raised), 3, &paused("b.example")),
            (3 << 16) + 2
        );
        assert_eq!(next_version(Some(&raised), 4, &empty), 4 << 16);
    }

    #[test]
    fn stored_values_and_script_answers_are_read_or_refused() {
        assert_eq!(from_json::<Pause>("p", "").unwrap(), None);
        assert!(matches!(
            from_json::<HostRule>("r", "{\"paused\":3}"),
            Err(FrontierError::Corrupt { .. })
        ));
        let rule = paused("a.example").hosts.into_values().next().unwrap();
        let json = to_json("r", &rule).unwrap();
        assert_eq!(from_json::<HostRule>("r", &json).unwrap(), Some(rule));
        let ok = Value::Array(vec![Value::Int(1), Value::Int(7)]);
        assert_eq!(cas_reply(ok, "x").unwrap(), Ok(7));
        let lost = Value::Array(vec![Value::Int(0), Value::BulkString(b"{}".to_vec())]);
        assert_eq!(cas_reply(lost, "x").unwrap(), Err("{}".to_owned()));
        assert!(cas_reply(Value::Array(vec![Value::Int(1)]), "x").is_err());
    }
}
