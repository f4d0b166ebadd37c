//! What the fake DNS servers answer: per-name [`Behaviour`]s, the [`CatchAll`] for unknown names, the outage
//! switch, query counters and the log, and the answer logic shared by plain DNS and DoH.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{RData, Record, RecordType};

/// TTL of answers whose behaviour has none ([`Behaviour::Only`], [`CatchAll::Hijack`]).
pub const DEFAULT_TTL: u32 = 300;

/// The log keeps at most this many entries (counters go on counting).
const LOG_CAP: usize = 100_000;

/// How the server answers queries for one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// A queries get `v4`, AAAA queries get `v6` (NOERROR with no records when the list is empty), ANY both.
    Answer {
        v4: Vec<Ipv4Addr>,
        v6: Vec<Ipv6Addr>,
        ttl: u32,
    },
    /// Over UDP: the `forged` answer at once and the `real` one after `delay`, both with the query's id (an
    /// injection race as the client sees it). A query whose type matches neither address gets one empty answer.
    /// Over TCP and DoH (where injection cannot race): only the `real` answer, at once.
    Twice {
        forged: IpAddr,
        real: IpAddr,
        delay: Duration,
        ttl: u32,
    },
    /// Only this (bogus) address, with [`DEFAULT_TTL`]; the other query type gets NOERROR with no records.
    Only(IpAddr),
    /// NXDOMAIN.
    NxDomain,
    /// SERVFAIL.
    ServFail,
    /// Never answers (the DoH request hangs until the client gives up).
    Drop,
    /// Over UDP: the TC bit and no answers. Over TCP and DoH: the full answer (`v4` for A, none for AAAA).
    Truncate { v4: Vec<Ipv4Addr>, ttl: u32 },
    /// The n-th query of one type (A, AAAA, ...) for the name gets the n-th behaviour, the last one repeating: an
    /// answer that changes between lookups (DNS rebinding).
    Sequence(Vec<Behaviour>),
    /// Over UDP: the TC bit and no answers, for every query type. Over TCP and DoH: as the inner behaviour.
    Truncated(Box<Behaviour>),
}

impl Behaviour {
    /// `Answer` with IPv4 addresses only.
    pub fn v4(ips: &[Ipv4Addr], ttl: u32) -> Self {
        Self::Answer {
            v4: ips.to_vec(),
            v6: Vec::new(),
            ttl,
        }
    }

    /// `Answer` with the given mixed addresses, split by family.
    pub fn ips(ips: &[IpAddr], ttl: u32) -> Self {
        let (v4, v6) = split(ips);
        Self::Answer { v4, v6, ttl }
    }
}

impl Behaviour {
    /// The behaviour for the query with `nth` earlier ones of its type: the element of a [`Behaviour::Sequence`]
    /// (the last one past its end), else itself.
    fn nth(&self, nth: usize) -> &Behaviour {
        match self {
            Behaviour::Sequence(items) => match items.get(nth).or(items.last()) {
                Some(b) => b.nth(nth),
                None => &Behaviour::NxDomain,
            },
            other => other,
        }
    }
}

/// How names without their own behaviour are answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CatchAll {
    /// NXDOMAIN (the default).
    #[default]
    NxDomain,
    /// Every unknown name (e.g. a random probe label) resolves to this address, with [`DEFAULT_TTL`]: an
    /// NXDOMAIN-hijacking resolver.
    Hijack(IpAddr),
    /// Any other behaviour for every unknown name.
    Behaviour(Behaviour),
}

/// A name map plus catch-all: what a server starts with.
#[derive(Clone, Debug, Default)]
pub struct Zone {
    names: HashMap<String, Behaviour>,
    catch_all: CatchAll,
}

impl Zone {
    /// No names, unknown names get NXDOMAIN.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the behaviour of `name`.
    pub fn with(mut self, name: &str, behaviour: Behaviour) -> Self {
        self.names.insert(normalize_name(name), behaviour);
        self
    }

    /// Sets the catch-all for unknown names.
    pub fn catch_all(mut self, catch_all: CatchAll) -> Self {
        self.catch_all = catch_all;
        self
    }

    fn lookup(&self, name: &str) -> Behaviour {
        match self.names.get(name) {
            Some(b) => b.clone(),
            None => match &self.catch_all {
                CatchAll::NxDomain => Behaviour::NxDomain,
                CatchAll::Hijack(ip) => Behaviour::Only(*ip),
                CatchAll::Behaviour(b) => b.clone(),
            },
        }
    }
}

/// The key names are stored and counted under: ASCII lowercase, without the trailing dot.
pub fn normalize_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// How a query reached the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Udp,
    Tcp,
    DohGet,
    DohPost,
}

impl Transport {
    const ALL: usize = 4;

    fn index(self) -> usize {
        match self {
            Self::Udp => 0,
            Self::Tcp => 1,
            Self::DohGet => 2,
            Self::DohPost => 3,
        }
    }
}

/// One received query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryLog {
    /// normalised (see [`normalize_name`])
    pub name: String,
    pub qtype: RecordType,
    pub transport: Transport,
    pub at: Instant,
}

/// What to send back for one query.
#[derive(Debug)]
pub(crate) enum Reply {
    /// `Behaviour::Drop`: nothing.
    Silent,
    /// The server is down (`set_down(true)`): nothing over plain DNS, 503 over DoH.
    Down,
    One(Box<Message>),
    Two {
        first: Box<Message>,
        second: Box<Message>,
        delay: Duration,
    },
}

/// The bytes were not a DNS query.
#[derive(Debug)]
pub(crate) struct Malformed;

#[derive(Default)]
struct Log {
    per_name: HashMap<String, usize>,
    per_name_type: HashMap<(String, RecordType), usize>,
    entries: Vec<QueryLog>,
}

/// The live state of one server: behaviours (changeable while running), outage switch, counters.
#[derive(Default)]
pub(crate) struct State {
    zone: RwLock<Zone>,
    down: AtomicBool,
    by_transport: [AtomicUsize; Transport::ALL],
    log: Mutex<Log>,
}

impl State {
    pub fn new(zone: Zone) -> Self {
        Self {
            zone: RwLock::new(zone),
            ..Self::default()
        }
    }

    pub fn set(&self, name: &str, behaviour: Behaviour) {
        let mut z = self.zone.write().unwrap_or_else(|e| e.into_inner());
        z.names.insert(normalize_name(name), behaviour);
    }

    pub fn remove(&self, name: &str) {
        let mut z = self.zone.write().unwrap_or_else(|e| e.into_inner());
        z.names.remove(&normalize_name(name));
    }

    pub fn set_catch_all(&self, catch_all: CatchAll) {
        let mut z = self.zone.write().unwrap_or_else(|e| e.into_inner());
        z.catch_all = catch_all;
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::Release);
    }

    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    pub fn count(&self, transport: Transport) -> usize {
        self.by_transport
            .get(transport.index())
            .map_or(0, |c| c.load(Ordering::Acquire))
    }

    pub fn total(&self) -> usize {
        self.by_transport
            .iter()
            .map(|c| c.load(Ordering::Acquire))
            .sum()
    }

    pub fn queries_for(&self, name: &str) -> usize {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.per_name
            .get(&normalize_name(name))
            .copied()
            .unwrap_or(0)
    }

    pub fn log(&self) -> Vec<QueryLog> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.entries.clone()
    }

    pub fn reset_counters(&self) {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        *log = Log::default();
        for c in &self.by_transport {
            c.store(0, Ordering::Release);
        }
    }

    /// Counts one query; returns how many queries of its type for its name came before it.
    fn record(&self, name: &str, qtype: RecordType, transport: Transport) -> usize {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        *log.per_name.entry(name.to_owned()).or_insert(0) += 1;
        let typed = log
            .per_name_type
            .entry((name.to_owned(), qtype))
            .or_insert(0);
        let before = *typed;
        *typed += 1;
        if log.entries.len() < LOG_CAP {
            log.entries.push(QueryLog {
                name: name.to_owned(),
                qtype,
                transport,
                at: Instant::now(),
            });
        }
        if let Some(c) = self.by_transport.get(transport.index()) {
            c.fetch_add(1, Ordering::AcqRel);
        }
        before
    }

    /// Decodes one query, counts it (also while down) and decides the reply.
    pub fn process(&self, bytes: &[u8], transport: Transport) -> Result<Reply, Malformed> {
        let req = Message::from_vec(bytes).map_err(|_| Malformed)?;
        if req.metadata.message_type != MessageType::Query {
            return Err(Malformed);
        }
        let Some(q) = req.queries.first() else {
            let mut resp = response_to(&req, None);
            resp.metadata.response_code = ResponseCode::FormErr;
            return Ok(Reply::One(Box::new(resp)));
        };
        let name = normalize_name(&q.name.to_ascii());
        let nth = self.record(&name, q.query_type, transport);
        if self.is_down() {
            return Ok(Reply::Down);
        }
        let behaviour = self
            .zone
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .lookup(&name);
        Ok(build(&req, q, behaviour.nth(nth), transport))
    }
}

/// Splits addresses by family.
fn split(ips: &[IpAddr]) -> (Vec<Ipv4Addr>, Vec<Ipv6Addr>) {
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for ip in ips {
        match ip {
            IpAddr::V4(a) => v4.push(*a),
            IpAddr::V6(a) => v6.push(*a),
        }
    }
    (v4, v6)
}

/// An empty response to `req` (id, opcode, RD copied; RA set; the question echoed).
fn response_to(req: &Message, q: Option<&Query>) -> Message {
    let mut resp = Message::response(req.metadata.id, req.metadata.op_code);
    resp.metadata.recursion_desired = req.metadata.recursion_desired;
    resp.metadata.recursion_available = true;
    if let Some(q) = q {
        resp.add_query(q.clone());
    }
    if req.edns.is_some() {
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        resp.set_edns(edns);
    }
    resp
}

fn answer(req: &Message, q: &Query, v4: &[Ipv4Addr], v6: &[Ipv6Addr], ttl: u32) -> Message {
    let mut resp = response_to(req, Some(q));
    let (want4, want6) = match q.query_type {
        RecordType::A => (true, false),
        RecordType::AAAA => (false, true),
        RecordType::ANY => (true, true),
        _ => (false, false),
    };
    if want4 {
        for ip in v4 {
            resp.add_answer(Record::from_rdata(q.name.clone(), ttl, RData::A(A(*ip))));
        }
    }
    if want6 {
        for ip in v6 {
            resp.add_answer(Record::from_rdata(
                q.name.clone(),
                ttl,
                RData::AAAA(AAAA(*ip)),
            ));
        }
    }
    resp
}

fn rcode(req: &Message, q: &Query, code: ResponseCode) -> Message {
    let mut resp = response_to(req, Some(q));
    resp.metadata.response_code = code;
    resp
}

fn build(req: &Message, q: &Query, behaviour: &Behaviour, transport: Transport) -> Reply {
    if req.metadata.op_code != OpCode::Query {
        return Reply::One(Box::new(rcode(req, q, ResponseCode::NotImp)));
    }
    let udp = transport == Transport::Udp;
    let msg = match behaviour {
        Behaviour::Answer { v4, v6, ttl } => answer(req, q, v4, v6, *ttl),
        Behaviour::Only(ip) => {
            let (v4, v6) = split(&[*ip]);
            answer(req, q, &v4, &v6, DEFAULT_TTL)
        }
        Behaviour::Twice {
            forged,
            real,
            delay,
            ttl,
        } => {
            let (r4, r6) = split(&[*real]);
            let real_msg = answer(req, q, &r4, &r6, *ttl);
            if !udp {
                real_msg
            } else {
                let (f4, f6) = split(&[*forged]);
                let forged_msg = answer(req, q, &f4, &f6, *ttl);
                if forged_msg.answers.is_empty() && real_msg.answers.is_empty() {
                    real_msg
                } else {
                    return Reply::Two {
                        first: Box::new(forged_msg),
                        second: Box::new(real_msg),
                        delay: *delay,
                    };
                }
            }
        }
        Behaviour::NxDomain => rcode(req, q, ResponseCode::NXDomain),
        Behaviour::ServFail => rcode(req, q, ResponseCode::ServFail),
        Behaviour::Drop => return Reply::Silent,
        Behaviour::Sequence(_) => rcode(req, q, ResponseCode::ServFail),
        Behaviour::Truncated(inner) => {
            if udp {
                let mut resp = response_to(req, Some(q));
                resp.metadata.truncation = true;
                resp
            } else {
                return build(req, q, inner, transport);
            }
        }
        Behaviour::Truncate { v4, ttl } => {
            if udp {
                let mut resp = response_to(req, Some(q));
                resp.metadata.truncation = true;
                resp
            } else {
                answer(req, q, v4, &[], *ttl)
            }
        }
    };
    Reply::One(Box::new(msg))
}

/// Encodes a message, logging (not failing) when it cannot be.
pub(crate) fn encode(msg: &Message) -> Option<Vec<u8>> {
    match msg.to_vec() {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(error = %e, "fake dns could not encode a response");
            None
        }
    }
}
