//! Tests of `resolver::wire`: round trips through hickory-proto and hostile input.

use super::*;
use hickory_proto::op::ResponseCode;
use hickory_proto::rr::Record;
use hickory_proto::rr::rdata::{A, AAAA, CNAME, SOA};
use std::net::{Ipv4Addr, Ipv6Addr};

fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

fn response_to(id: u16, qname: &str, rt: RecordType) -> Message {
    let mut m = Message::response(id, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.metadata.recursion_available = true;
    m.add_query(Query::query(name(qname), rt));
    m
}

fn a(owner: &str, ttl: u32, ip: [u8; 4]) -> Record {
    Record::from_rdata(name(owner), ttl, RData::A(A(Ipv4Addr::from(ip))))
}

fn cname(owner: &str, ttl: u32, target: &str) -> Record {
    Record::from_rdata(name(owner), ttl, RData::CNAME(CNAME(name(target))))
}

#[test]
fn query_round_trips_with_rd_and_edns() {
    let bytes = build_query(0x1234, "Example.COM", QType::Aaaa).unwrap();
    let m = Message::from_vec(&bytes).unwrap();
    assert_eq!(m.metadata.id, 0x1234);
    assert_eq!(m.metadata.message_type, MessageType::Query);
    assert!(m.metadata.recursion_desired);
    assert_eq!(m.queries.len(), 1);
    assert_eq!(m.queries[0].query_type(), RecordType::AAAA);
    assert_eq!(m.queries[0].query_class(), DNSClass::IN);
    assert!(m.queries[0].name().is_fqdn());
    assert_eq!(
        m.queries[0].name().to_ascii().to_ascii_lowercase(),
        "example.com."
    );
    assert_eq!(m.edns.as_ref().map(|e| e.max_payload()), Some(EDNS_PAYLOAD));
}

#[test]
fn query_accepts_trailing_dot_and_rejects_bad_names() {
    let with_dot = build_query(1, "example.com.", QType::A).unwrap();
    let without = build_query(1, "example.com", QType::A).unwrap();
    assert_eq!(with_dot, without);
    let long_label = format!("{}.com", "a".repeat(64));
    let long_name = vec!["abcdefghij"; 30].join(".");
    for bad in [
        "",
        ".",
        "a..b",
        "exämple.com",
        long_label.as_str(),
        long_name.as_str(),
    ] {
        let err = build_query(1, bad, QType::A).unwrap_err();
        assert!(matches!(err, WireError::BadName { .. }), "{bad:?}: {err:?}");
    }
}

#[test]
fn parses_addresses_ttl_and_question() {
    let mut m = response_to(7, "www.example.com.", RecordType::A);
    m.add_answer(a("www.example.com.", 300, [93, 184, 216, 34]));
    m.add_answer(a("WWW.Example.com.", 60, [93, 184, 216, 35]));
    m.add_answer(a("www.example.com.", 60, [93, 184, 216, 34]));
    let r = parse_response(&m.to_vec().unwrap()).unwrap();
    assert_eq!(r.id, 7);
    assert_eq!(r.rcode, 0);
    assert!(!r.truncated);
    assert_eq!(r.question, Some(("www.example.com".to_string(), QType::A)));
    assert!(r.answers("WWW.EXAMPLE.COM.", QType::A));
    assert!(!r.answers("www.example.com", QType::Aaaa));
    assert!(!r.answers("example.com", QType::A));
    assert_eq!(
        r.ips,
        vec![
            IpAddr::from([93, 184, 216, 34]),
            IpAddr::from([93, 184, 216, 35])
        ]
    );
    assert_eq!(r.min_ttl, 60);
}

#[test]
fn follows_cname_chain_in_answer_only() {
    let mut m = response_to(9, "a.example.", RecordType::AAAA);
    m.add_answer(cname("a.example.", 500, "b.example."));
    m.add_answer(cname("b.example.", 40, "c.example."));
    let v6 = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    m.add_answer(Record::from_rdata(
        name("c.example."),
        200,
        RData::AAAA(AAAA(v6)),
    ));
    // Not in the chain: ignored, and so is an A record for an AAAA question.
    m.add_answer(Record::from_rdata(
        name("other.example."),
        1,
        RData::AAAA(AAAA(Ipv6Addr::LOCALHOST)),
    ));
    m.add_answer(a("c.example.", 1, [10, 0, 0, 1]));
    // Additional-section addresses never count.
    m.add_additional(Record::from_rdata(
        name("a.example."),
        1,
        RData::AAAA(AAAA(Ipv6Addr::UNSPECIFIED)),
    ));
    let r = parse_response(&m.to_vec().unwrap()).unwrap();
    assert_eq!(r.ips, vec![IpAddr::V6(v6)]);
    assert_eq!(r.min_ttl, 40);
}

#[test]
fn cname_loop_terminates() {
    let mut m = response_to(3, "x.example.", RecordType::A);
    m.add_answer(cname("x.example.", 30, "y.example."));
    m.add_answer(cname("y.example.", 30, "x.example."));
    m.add_answer(a("y.example.", 30, [192, 0, 2, 1]));
    let r = parse_response(&m.to_vec().unwrap()).unwrap();
    assert_eq!(r.ips, vec![IpAddr::from([192, 0, 2, 1])]);
}

#[test]
fn nxdomain_takes_soa_negative_ttl() {
    let mut m = response_to(11, "nope.example.", RecordType::A);
    m.metadata.response_code = ResponseCode::NXDomain;
    let soa = SOA::new(
        name("ns.example."),
        name("admin.example."),
        1,
        3600,
        600,
        86400,
        120,
    );
    m.add_authority(Record::from_rdata(name("example."), 900, RData::SOA(soa)));
    let r = parse_response(&m.to_vec().unwrap()).unwrap();
    assert_eq!(r.rcode, 3);
    assert!(r.ips.is_empty());
    assert_eq!(r.min_ttl, 120);
}

#[test]
fn servfail_and_refused_codes() {
    for (code, byte) in [(ResponseCode::ServFail, 2u8), (ResponseCode::Refused, 5)] {
        let mut m = response_to(1, "example.com.", RecordType::A);
        m.metadata.response_code = code;
        let r = parse_response(&m.to_vec().unwrap()).unwrap();
        assert_eq!(r.rcode, byte);
        assert_eq!(r.min_ttl, 0);
    }
}

#[test]
fn query_message_is_not_a_response() {
    let bytes = build_query(5, "example.com", QType::A).unwrap();
    assert_eq!(parse_response(&bytes), Err(WireError::NotResponse));
}

#[test]
fn response_without_question_collects_all_addresses() {
    let mut m = Message::response(2, OpCode::Query);
    m.add_answer(a("anything.example.", 10, [192, 0, 2, 7]));
    let r = parse_response(&m.to_vec().unwrap()).unwrap();
    assert_eq!(r.question, None);
    assert!(!r.answers("anything.example", QType::A));
    assert_eq!(r.ips, vec![IpAddr::from([192, 0, 2, 7])]);
}

#[test]
fn cut_off_truncated_message_still_reports_tc() {
    let mut m = response_to(0xbeef, "big.example.", RecordType::A);
    m.metadata.truncation = true;
    for i in 0..20u8 {
        m.add_answer(a("big.example.", 10, [192, 0, 2, i]));
    }
    let bytes = m.to_vec().unwrap();
    // Cut in the middle of the answer records: header counts now lie.
    let cut = &bytes[..bytes.len() - 7];
    let r = parse_response(cut).unwrap();
    assert!(r.truncated);
    assert_eq!(r.id, 0xbeef);
    assert_eq!(r.question, Some(("big.example".to_string(), QType::A)));
    assert!(r.ips.is_empty());
    // The same cut without TC is just malformed.
    let mut m2 = m.clone();
    m2.metadata.truncation = false;
    let bytes2 = m2.to_vec().unwrap();
    assert!(matches!(
        parse_response(&bytes2[..bytes2.len() - 7]),
        Err(WireError::Malformed(_))
    ));
}

#[test]
fn garbage_never_panics() {
    assert!(parse_response(&[]).is_err());
    assert!(parse_response(&[0xff; 11]).is_err());
    let mut m = response_to(1, "www.example.com.", RecordType::A);
    m.add_answer(cname("www.example.com.", 5, "cdn.example.net."));
    m.add_answer(a("cdn.example.net.", 5, [198, 51, 100, 1]));
    let good = m.to_vec().unwrap();
    // Every prefix and every single-byte corruption of a valid message, plus pseudo-random noise.
    for len in 0..good.len() {
        let _ = parse_response(&good[..len]);
    }
    for pos in 0..good.len() {
        for val in [0x00, 0x01, 0x3f, 0x40, 0xc0, 0xff] {
            let mut bad = good.clone();
            bad[pos] = val;
            let _ = parse_response(&bad);
        }
    }
    let mut state: u32 = 0x9e37_79b9;
    for round in 0..500 {
        let len = 12 + (round % 200);
        let noise: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state & 0xff) as u8
            })
            .collect();
        let _ = parse_response(&noise);
    }
    // A compression pointer to itself in the question name.
    let mut looped = vec![0, 1, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0];
    looped.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
    assert!(parse_response(&looped).is_err());
}

/// Only the root's trailing dot is stripped, not a dot escaped inside the last label, so that normalising a
/// normalised name changes nothing; the response the fuzz target found (a question name whose last label ends in a
/// dot) keeps its escaped dot.
#[test]
fn normalising_keeps_an_escaped_trailing_dot() {
    assert_eq!(normalize_name("Example.COM."), "example.com");
    assert_eq!(normalize_name("example.com"), "example.com");
    assert_eq!(normalize_name("a\\."), "a\\.");
    assert_eq!(normalize_name("a\\.."), "a\\.");
    assert_eq!(
        normalize_name("a\\\\."),
        "a\\\\",
        "an escaped backslash, then the root"
    );
    assert_eq!(normalize_name("a\\\\\\."), "a\\\\\\.");
    let found: [u8; 31] = [
        0, 10, 131, 36, 128, 0, 1, 0, 5, 0, 5, 0, 10, 131, 36, 128, 0, 1, 0, 5, 32, 0, 46, 0, 0, 1,
        0, 1, 192, 121, 0,
    ];
    let resp = parse_response(&found).expect("parses");
    let (name, _) = resp.question.expect("an IN A question");
    assert!(name.ends_with("\\."), "{name}");
    assert_eq!(normalize_name(&name), name);
}
