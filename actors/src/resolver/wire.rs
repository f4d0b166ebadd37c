//! DNS wire format for the resolver's own transports (plain UDP/TCP and DoH), on top of hickory-proto.
//!
//! [`build_query`] encodes one recursive A or AAAA question (with an EDNS0 OPT record advertising a
//! 1232-byte UDP payload). [`parse_response`] decodes a response into the few facts the resolver
//! needs: id, rcode, the TC bit, the question, the addresses for the question's name (following
//! CNAME chains inside the answer section only) and the smallest TTL involved. Any input, however
//! malformed, gives a value or a [`WireError`], never a panic.

use std::collections::HashSet;
use std::net::IpAddr;

use hickory_proto::op::{Edns, Header, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{DNSClass, Name, RData, RecordType};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

/// UDP payload size advertised in EDNS0 (the DNS flag day 2020 recommendation).
pub const EDNS_PAYLOAD: u16 = 1232;

/// Longest CNAME chain followed inside one answer section.
const MAX_CHAIN: usize = 16;

/// The address family asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QType {
    /// IPv4 addresses (type 1).
    A,
    /// IPv6 addresses (type 28).
    Aaaa,
}

impl QType {
    /// The matching hickory record type.
    pub fn record_type(self) -> RecordType {
        match self {
            QType::A => RecordType::A,
            QType::Aaaa => RecordType::AAAA,
        }
    }

    /// `"A"` or `"AAAA"`.
    pub fn as_str(self) -> &'static str {
        match self {
            QType::A => "A",
            QType::Aaaa => "AAAA",
        }
    }

    fn from_record_type(rt: RecordType) -> Option<QType> {
        match rt {
            RecordType::A => Some(QType::A),
            RecordType::AAAA => Some(QType::Aaaa),
            _ => None,
        }
    }
}

/// Errors of the wire layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The name cannot be put in a query (empty, non-ASCII, label or name too long, ...).
    #[error("invalid query name {name:?}: {detail}")]
    BadName { name: String, detail: String },
    /// Encoding the query failed.
    #[error("cannot encode query: {0}")]
    Encode(String),
    /// The bytes are not a DNS message.
    #[error("malformed dns message: {0}")]
    Malformed(String),
    /// The message is a query, not a response.
    #[error("dns message is not a response")]
    NotResponse,
}

/// What the resolver needs from one DNS response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Message id.
    pub id: u16,
    /// Response code, including the EDNS extended bits when they fit in a byte
    /// (0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED, ...).
    pub rcode: u8,
    /// TC bit: the answer did not fit and must be asked again over TCP.
    pub truncated: bool,
    /// The first question, as a lowercase name without the trailing dot, when it is IN A or IN AAAA.
    pub question: Option<(String, QType)>,
    /// Addresses of the question's type for the question name or any name of its CNAME chain
    /// (answer section only), in order of appearance, without duplicates.
    pub ips: Vec<IpAddr>,
    /// Smallest TTL of the CNAME and address records used; without any, the negative TTL of an SOA
    /// in the authority section (min of its TTL and MINIMUM); else 0.
    pub min_ttl: u32,
}

impl Response {
    /// True when this response answers `name` / `qtype` (case-insensitive, trailing dot ignored).
    pub fn answers(&self, name: &str, qtype: QType) -> bool {
        match &self.question {
            Some((q, t)) => *t == qtype && q == &normalize_name(name),
            None => false,
        }
    }
}

/// Lowercases and strips the root's trailing dot ([`without_root_dot`]): the form used in [`Response::question`].
/// Normalising twice changes nothing.
pub fn normalize_name(name: &str) -> String {
    without_root_dot(name).to_ascii_lowercase()
}

/// `name` without its trailing dot, the root's: not a dot escaped as `\.` at the end of the last label (an odd run
/// of backslashes before the dot escapes it; an even one is escaped backslashes).
fn without_root_dot(name: &str) -> &str {
    match name.strip_suffix('.') {
        Some(rest) if rest.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 0 => rest,
        _ => name,
    }
}

fn bad_name(name: &str, detail: impl Into<String>) -> WireError {
    WireError::BadName {
        name: name.chars().take(300).collect(),
        detail: detail.into(),
    }
}

/// Parses `name` into a fully-qualified hickory name.
fn query_name(name: &str) -> Result<Name, WireError> {
    let trimmed = without_root_dot(name);
    if trimmed.is_empty() {
        return Err(bad_name(name, "empty name"));
    }
    if !trimmed.is_ascii() {
        return Err(bad_name(name, "not ascii (use the punycode form)"));
    }
    if trimmed.split('.').any(str::is_empty) {
        return Err(bad_name(name, "empty label"));
    }
    let mut parsed = Name::from_ascii(trimmed).map_err(|e| bad_name(name, e.to_string()))?;
    parsed.set_fqdn(true);
    Ok(parsed)
}

/// Encodes a recursive query for `name` (ASCII / punycode, trailing dot optional) of type `qtype`.
pub fn build_query(id: u16, name: &str, qtype: QType) -> Result<Vec<u8>, WireError> {
    let qname = query_name(name)?;
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    let mut query = Query::query(qname, qtype.record_type());
    query.set_query_class(DNSClass::IN);
    message.add_query(query);
    let mut edns = Edns::new();
    edns.set_max_payload(EDNS_PAYLOAD);
    message.set_edns(edns);
    message
        .to_vec()
        .map_err(|e| WireError::Encode(e.to_string()))
}

fn rcode_byte(code: hickory_proto::op::ResponseCode) -> u8 {
    u8::try_from(u16::from(code)).unwrap_or_else(|_| code.low())
}

fn question_of(query: &Query) -> Option<(String, QType)> {
    if query.query_class() != DNSClass::IN {
        return None;
    }
    let qtype = QType::from_record_type(query.query_type())?;
    Some((normalize_name(&query.name().to_ascii()), qtype))
}

/// Decodes a DNS response. A truncated (TC) message whose records are cut off is still returned
/// (header and question only) so the caller can retry over TCP.
pub fn parse_response(bytes: &[u8]) -> Result<Response, WireError> {
    match Message::from_vec(bytes) {
        Ok(message) => from_message(&message),
        Err(full_err) => {
            parse_truncated(bytes).ok_or_else(|| WireError::Malformed(full_err.to_string()))
        }
    }
}

/// Header + first question of a message whose TC bit is set; `None` otherwise.
fn parse_truncated(bytes: &[u8]) -> Option<Response> {
    let mut decoder = BinDecoder::new(bytes);
    let header = Header::read(&mut decoder).ok()?;
    let meta = header.metadata;
    if meta.message_type != MessageType::Response || !meta.truncation {
        return None;
    }
    let question = if header.counts.queries > 0 {
        Query::read(&mut decoder)
            .ok()
            .as_ref()
            .and_then(question_of)
    } else {
        None
    };
    Some(Response {
        id: meta.id,
        rcode: rcode_byte(meta.response_code),
        truncated: true,
        question,
        ips: Vec::new(),
        min_ttl: 0,
    })
}

fn from_message(message: &Message) -> Result<Response, WireError> {
    let meta = &message.metadata;
    if meta.message_type != MessageType::Response {
        return Err(WireError::NotResponse);
    }
    let question = message.queries.first().and_then(question_of);
    let (ips, min_ttl) = collect_answers(message, question.as_ref());
    Ok(Response {
        id: meta.id,
        rcode: rcode_byte(meta.response_code),
        truncated: meta.truncation,
        question,
        ips,
        min_ttl,
    })
}

fn take_min(current: &mut Option<u32>, ttl: u32) {
    *current = Some(current.map_or(ttl, |m| m.min(ttl)));
}

fn push_unique(ips: &mut Vec<IpAddr>, ip: IpAddr) {
    if !ips.contains(&ip) {
        ips.push(ip);
    }
}

/// Addresses and the smallest TTL used, following CNAMEs from the question name. Without a
/// question every IN A / AAAA record of the answer section counts.
fn collect_answers(message: &Message, question: Option<&(String, QType)>) -> (Vec<IpAddr>, u32) {
    let in_class = |r: &&hickory_proto::rr::Record| r.dns_class == DNSClass::IN;
    let mut min_ttl: Option<u32> = None;
    let mut ips: Vec<IpAddr> = Vec::new();

    match question {
        None => {
            for record in message.answers.iter().filter(in_class) {
                let ip = match &record.data {
                    RData::A(a) => IpAddr::V4(a.0),
                    RData::AAAA(aaaa) => IpAddr::V6(aaaa.0),
                    _ => continue,
                };
                push_unique(&mut ips, ip);
                take_min(&mut min_ttl, record.ttl);
            }
        }
        Some((qname, qtype)) => {
            // Owners of the chain: the question name, then each CNAME target reached from it.
            let mut chain: Vec<String> = vec![qname.clone()];
            let mut used_cnames: HashSet<usize> = HashSet::new();
            for _ in 0..MAX_CHAIN {
                let mut grew = false;
                for (idx, record) in message.answers.iter().enumerate() {
                    if used_cnames.contains(&idx) || record.dns_class != DNSClass::IN {
                        continue;
                    }
                    let RData::CNAME(target) = &record.data else {
                        continue;
                    };
                    let owner = normalize_name(&record.name.to_ascii());
                    if chain.contains(&owner) {
                        used_cnames.insert(idx);
                        take_min(&mut min_ttl, record.ttl);
                        let target = normalize_name(&target.0.to_ascii());
                        if !chain.contains(&target) {
                            chain.push(target);
                            grew = true;
                        }
                    }
                }
                if !grew || chain.len() > MAX_CHAIN {
                    break;
                }
            }
            for record in message.answers.iter().filter(in_class) {
                let ip = match (&record.data, qtype) {
                    (RData::A(a), QType::A) => IpAddr::V4(a.0),
                    (RData::AAAA(aaaa), QType::Aaaa) => IpAddr::V6(aaaa.0),
                    _ => continue,
                };
                if chain.contains(&normalize_name(&record.name.to_ascii())) {
                    push_unique(&mut ips, ip);
                    take_min(&mut min_ttl, record.ttl);
                }
            }
        }
    }

    if min_ttl.is_none() {
        for record in &message.authorities {
            if let RData::SOA(soa) = &record.data {
                take_min(&mut min_ttl, record.ttl.min(soa.minimum));
            }
        }
    }
    (ips, min_ttl.unwrap_or(0))
}

#[cfg(test)]
mod tests;
