//! Tests of the detection rules alone and combined, the cross-check policy, public names and
//! the hijack probe helpers.

use super::*;

const TTL: Duration = Duration::from_secs(300);
const NAME: &str = "www.example.com";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip literal")
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| ip(s)).collect()
}

fn ans(list: &[&str]) -> Answer {
    Answer::addresses(ips(list), TTL)
}

fn ctx() -> DetectCtx {
    DetectCtx {
        bogus: IpSet::from_entries(["203.0.113.0/24", "2001:db8:bad::1"]).expect("valid"),
        hijack: [ip("198.51.100.66")].into_iter().collect(),
        non_public_suspicious: true,
        allow_cidrs: Vec::new(),
    }
}

fn resolution(outcome: Outcome) -> Resolution {
    match outcome {
        Outcome::Resolved(r) => r,
        other => panic!("expected resolved, got {other:?}"),
    }
}

#[test]
fn names_and_codes() {
    let all = [
        Rule::BogusIp,
        Rule::NonPublic,
        Rule::InjectionRace,
        Rule::NxdomainHijack,
        Rule::CrossCheck,
    ];
    let names: Vec<&str> = all.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        names,
        [
            "bogus_ip",
            "non_public",
            "injection_race",
            "nxdomain_hijack",
            "cross_check"
        ]
    );
    let strong: Vec<bool> = all.iter().map(|r| r.is_strong()).collect();
    assert_eq!(strong, [true, false, true, true, false]);
    assert_eq!(Rule::CrossCheck.to_string(), "cross_check");
    assert_eq!(Source::Hosts.as_str(), "hosts");
    assert_eq!(Source::Doh.to_string(), "doh");
    for code in 0..=255u8 {
        assert_eq!(Rcode::from_u8(code).code(), code);
    }
    assert_eq!(Rcode::from_u8(3), Rcode::NxDomain);
    assert_eq!(Rcode::from_u8(9).to_string(), "rcode 9");
}

#[test]
fn clean_answer() {
    let v = judge_plain(
        NAME,
        &[ans(&[
            "93.184.215.14",
            "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
        ])],
        &ctx(),
    );
    assert_eq!(
        v,
        PlainVerdict::Clean {
            ips: ips(&["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]),
            ttl: TTL
        }
    );
    assert!(!v.wants_doh());
    let r = resolution(cross_check(&v, None));
    assert_eq!(
        (r.source, r.polluted, r.rules.len()),
        (Source::Plain, false, 0)
    );
    assert_eq!(r.ttl, TTL);
    // Identical duplicates (a retransmitted answer) are no race; repeated addresses collapse.
    let v = judge_plain(
        NAME,
        &[ans(&["1.1.1.1", "1.1.1.1"]), ans(&["1.1.1.1"])],
        &ctx(),
    );
    assert_eq!(
        v,
        PlainVerdict::Clean {
            ips: ips(&["1.1.1.1"]),
            ttl: TTL
        }
    );
}

#[test]
fn no_answer_failures_and_negative_answers() {
    let v = judge_plain(NAME, &[], &ctx());
    assert_eq!(
        v,
        PlainVerdict::Failed {
            detail: "no answer".into()
        }
    );
    assert!(v.wants_doh());
    let v = judge_plain(NAME, &[Answer::empty(Rcode::ServFail, TTL)], &ctx());
    assert_eq!(
        v,
        PlainVerdict::Failed {
            detail: "servfail".into()
        }
    );
    match cross_check(&v, None) {
        Outcome::Unresolved {
            polluted,
            rules,
            detail,
        } => {
            assert!(!polluted && rules.is_empty());
            assert_eq!(detail, "servfail");
        }
        other => panic!("{other:?}"),
    }
    // A failed plain lookup falls back to DoH.
    let r = resolution(cross_check(&v, Some(&ans(&["8.8.4.4"]))));
    assert_eq!(
        (r.source, r.polluted, r.addrs.clone()),
        (Source::Doh, false, ips(&["8.8.4.4"]))
    );

    let nx = judge_plain(NAME, &[Answer::empty(Rcode::NxDomain, TTL)], &ctx());
    assert_eq!(nx, PlainVerdict::NxDomain { rules: vec![] });
    let nodata = judge_plain(NAME, &[Answer::empty(Rcode::NoError, TTL)], &ctx());
    assert_eq!(nodata, PlainVerdict::NxDomain { rules: vec![] });
    // An unsuspicious NXDOMAIN is final even if DoH has addresses.
    let o = cross_check(&nx, Some(&ans(&["8.8.8.8"])));
    assert_eq!(o, Outcome::NxDomain { rules: vec![] });
    // Failure answers next to a real one are ignored, not a race.
    let v = judge_plain(
        NAME,
        &[Answer::empty(Rcode::Refused, TTL), ans(&["9.9.9.9"])],
        &ctx(),
    );
    assert_eq!(
        v,
        PlainVerdict::Clean {
            ips: ips(&["9.9.9.9"]),
            ttl: TTL
        }
    );
}

#[test]
fn truncated_answers_yield_to_complete_ones() {
    let mut cut = ans(&["9.9.9.9"]);
    cut.truncated = true;
    let v = judge_plain(NAME, &[cut.clone(), ans(&["9.9.9.9", "9.9.9.10"])], &ctx());
    assert_eq!(
        v,
        PlainVerdict::Clean {
            ips: ips(&["9.9.9.9", "9.9.9.10"]),
            ttl: TTL
        }
    );
    // Only a truncated answer: its addresses are still used.
    let v = judge_plain(NAME, &[cut], &ctx());
    assert_eq!(
        v,
        PlainVerdict::Clean {
            ips: ips(&["9.9.9.9"]),
            ttl: TTL
        }
    );
}

#[test]
fn bogus_ip_alone_is_strong() {
    let v = judge_plain(NAME, &[ans(&["203.0.113.7", "93.184.215.14"])], &ctx());
    assert_eq!(
        v,
        PlainVerdict::Suspicious {
            usable: ips(&["93.184.215.14"]),
            forged: ips(&["203.0.113.7"]),
            rules: vec![Rule::BogusIp],
            strong: true,
            ttl: TTL,
        }
    );
    // Without DoH: polluted, the forged address is dropped.
    let r = resolution(cross_check(&v, None));
    assert_eq!(r.addrs, ips(&["93.184.215.14"]));
    assert!(r.polluted);
    assert_eq!(r.rules, [Rule::BogusIp]);

    // Only bogus addresses: polluted Unresolved without DoH, DoH's answer with it.
    let v = judge_plain(NAME, &[ans(&["203.0.113.7", "2001:db8:bad::1"])], &ctx());
    match cross_check(&v, None) {
        Outcome::Unresolved {
            polluted, rules, ..
        } => {
            assert!(polluted);
            assert_eq!(rules, [Rule::BogusIp]);
        }
        other => panic!("{other:?}"),
    }
    let r = resolution(cross_check(&v, Some(&ans(&["93.184.215.14"]))));
    assert_eq!((r.source, r.polluted), (Source::Doh, true));
    assert_eq!(r.rules, [Rule::BogusIp, Rule::CrossCheck]);
    assert_eq!(r.addrs, ips(&["93.184.215.14"]));
    // A failing DoH answer counts as no DoH.
    let o = cross_check(&v, Some(&Answer::empty(Rcode::ServFail, TTL)));
    assert!(
        matches!(o, Outcome::Unresolved { polluted: true, .. }),
        "{o:?}"
    );
}

#[test]
fn bogus_mapped_ipv6_address_matches_ipv4_entry() {
    let v = judge_plain(NAME, &[ans(&["::ffff:203.0.113.9"])], &ctx());
    assert_eq!(v.rules(), [Rule::BogusIp]);
}

#[test]
fn non_public_weak_rule_and_cross_check() {
    let v = judge_plain(NAME, &[ans(&["10.0.0.1"])], &ctx());
    let PlainVerdict::Suspicious {
        usable,
        forged,
        rules,
        strong,
        ..
    } = &v
    else {
        panic!("{v:?}");
    };
    assert_eq!((usable.clone(), forged.len()), (ips(&["10.0.0.1"]), 0));
    assert_eq!(
        (rules.as_slice(), *strong),
        ([Rule::NonPublic].as_slice(), false)
    );
    assert!(v.wants_doh());

    // Left clean without DoH (the fetcher's own SSRF check still applies).
    let r = resolution(cross_check(&v, None));
    assert_eq!(
        (r.addrs.clone(), r.polluted, r.source),
        (ips(&["10.0.0.1"]), false, Source::Plain)
    );
    assert_eq!(r.rules, [Rule::NonPublic]);

    // Cleared by an agreeing DoH answer (one address in common is enough).
    let r = resolution(cross_check(&v, Some(&ans(&["10.0.0.1", "10.0.0.2"]))));
    assert_eq!(
        (r.addrs.clone(), r.polluted, r.source),
        (ips(&["10.0.0.1"]), false, Source::Plain)
    );
    assert_eq!(r.rules, [Rule::NonPublic]);

    // Made polluted by a disagreeing one: DoH's addresses are used.
    let r = resolution(cross_check(&v, Some(&ans(&["93.184.215.14"]))));
    assert_eq!(
        (r.addrs.clone(), r.polluted, r.source),
        (ips(&["93.184.215.14"]), true, Source::Doh)
    );
    assert_eq!(r.rules, [Rule::NonPublic, Rule::CrossCheck]);

    // DoH says the name does not exist: disagreement too.
    let o = cross_check(&v, Some(&Answer::empty(Rcode::NxDomain, TTL)));
    assert_eq!(
        o,
        Outcome::NxDomain {
            rules: vec![Rule::NonPublic, Rule::CrossCheck]
        }
    );
}

#[test]
fn non_public_rule_needs_a_public_name_and_the_switch() {
    for name in [
        "intranet.corp",
        "printer.local",
        "localhost",
        "db.test",
        "10.0.0.1",
    ] {
        let v = judge_plain(name, &[ans(&["10.0.0.1"])], &ctx());
        assert!(matches!(v, PlainVerdict::Clean { .. }), "{name}: {v:?}");
    }
    let mut off = ctx();
    off.non_public_suspicious = false;
    let v = judge_plain(NAME, &[ans(&["127.0.0.1", "192.168.1.1"])], &off);
    assert!(matches!(v, PlainVerdict::Clean { .. }), "{v:?}");
}

#[test]
fn teredo_counts_as_non_public() {
    let v = judge_plain(
        NAME,
        &[ans(&["2001:0:4136:e378:8000:63bf:3fff:fdd2"])],
        &ctx(),
    );
    assert_eq!(v.rules(), [Rule::NonPublic]);
    let v = judge_plain(NAME, &[ans(&["2606:4700::1111"])], &ctx());
    assert!(matches!(v, PlainVerdict::Clean { .. }), "{v:?}");
}

#[test]
fn injection_race_drops_the_first_answer() {
    let v = judge_plain(
        NAME,
        &[ans(&["192.0.78.1"]), ans(&["93.184.215.14"])],
        &ctx(),
    );
    assert_eq!(
        v,
        PlainVerdict::Suspicious {
            usable: ips(&["93.184.215.14"]),
            forged: ips(&["192.0.78.1"]),
            rules: vec![Rule::InjectionRace],
            strong: true,
            ttl: TTL,
        }
    );
    let r = resolution(cross_check(&v, None));
    assert_eq!(
        (r.addrs.clone(), r.polluted, r.source),
        (ips(&["93.184.215.14"]), true, Source::Plain)
    );
    // An agreeing DoH answer keeps it polluted (strong rule) with the plain addresses.
    let r = resolution(cross_check(&v, Some(&ans(&["93.184.215.14"]))));
    assert_eq!((r.polluted, r.source), (true, Source::Plain));
    assert_eq!(r.rules, [Rule::InjectionRace]);

    // Three different answers: only the last new one is kept.
    let v = judge_plain(
        NAME,
        &[
            ans(&["192.0.78.1"]),
            ans(&["192.0.78.2"]),
            ans(&["192.0.78.1"]),
            ans(&["93.184.215.14"]),
        ],
        &ctx(),
    );
    let PlainVerdict::Suspicious { usable, forged, .. } = v else {
        panic!("{v:?}");
    };
    assert_eq!(usable, ips(&["93.184.215.14"]));
    assert_eq!(forged, ips(&["192.0.78.1", "192.0.78.2"]));
}

#[test]
fn race_with_forged_address_then_nxdomain() {
    let v = judge_plain(
        NAME,
        &[ans(&["192.0.78.1"]), Answer::empty(Rcode::NxDomain, TTL)],
        &ctx(),
    );
    assert_eq!(
        v,
        PlainVerdict::NxDomain {
            rules: vec![Rule::InjectionRace]
        }
    );
    assert!(v.wants_doh());
    assert_eq!(
        cross_check(&v, None),
        Outcome::NxDomain {
            rules: vec![Rule::InjectionRace]
        }
    );
    let r = resolution(cross_check(&v, Some(&ans(&["93.184.215.14"]))));
    assert_eq!((r.polluted, r.source), (true, Source::Doh));
    assert_eq!(r.rules, [Rule::InjectionRace, Rule::CrossCheck]);
}

#[test]
fn bogus_plus_race() {
    let v = judge_plain(
        NAME,
        &[ans(&["203.0.113.1"]), ans(&["93.184.215.14"])],
        &ctx(),
    );
    assert_eq!(
        v,
        PlainVerdict::Suspicious {
            usable: ips(&["93.184.215.14"]),
            forged: ips(&["203.0.113.1"]),
            rules: vec![Rule::BogusIp, Rule::InjectionRace],
            strong: true,
            ttl: TTL,
        }
    );
    let r = resolution(cross_check(&v, None));
    assert_eq!(r.addrs, ips(&["93.184.215.14"]));
    assert!(r.polluted);
}

#[test]
fn race_where_the_later_answer_is_bogus_too() {
    let v = judge_plain(NAME, &[ans(&["192.0.78.1"]), ans(&["203.0.113.2"])], &ctx());
    assert_eq!(
        v,
        PlainVerdict::Suspicious {
            usable: vec![],
            forged: ips(&["192.0.78.1", "203.0.113.2"]),
            rules: vec![Rule::BogusIp, Rule::InjectionRace],
            strong: true,
            ttl: TTL,
        }
    );
    // Strong rule, nothing usable, no DoH: polluted Unresolved.
    match cross_check(&v, None) {
        Outcome::Unresolved {
            polluted, rules, ..
        } => {
            assert!(polluted);
            assert_eq!(rules, [Rule::BogusIp, Rule::InjectionRace]);
        }
        other => panic!("{other:?}"),
    }
    let r = resolution(cross_check(&v, Some(&ans(&["93.184.215.14"]))));
    assert_eq!(
        r.rules,
        [Rule::BogusIp, Rule::InjectionRace, Rule::CrossCheck]
    );
    assert_eq!(r.addrs, ips(&["93.184.215.14"]));
}

#[test]
fn nxdomain_hijack_address_means_nxdomain() {
    let v = judge_plain(NAME, &[ans(&["198.51.100.66"])], &ctx());
    assert_eq!(
        v,
        PlainVerdict::NxDomain {
            rules: vec![Rule::NxdomainHijack]
        }
    );
    assert_eq!(
        cross_check(&v, None),
        Outcome::NxDomain {
            rules: vec![Rule::NxdomainHijack]
        }
    );
    // DoH agreeing that the name does not exist.
    let o = cross_check(&v, Some(&Answer::empty(Rcode::NxDomain, TTL)));
    assert_eq!(
        o,
        Outcome::NxDomain {
            rules: vec![Rule::NxdomainHijack]
        }
    );
    // DoH knows the name: polluted, DoH's addresses.
    let r = resolution(cross_check(&v, Some(&ans(&["93.184.215.14"]))));
    assert_eq!((r.polluted, r.source), (true, Source::Doh));
    assert_eq!(r.rules, [Rule::NxdomainHijack, Rule::CrossCheck]);

    // A hijack address next to a real one: the real one stays, polluted (strong).
    let v = judge_plain(NAME, &[ans(&["198.51.100.66", "93.184.215.14"])], &ctx());
    let r = resolution(cross_check(&v, None));
    assert_eq!(
        (r.addrs.clone(), r.polluted),
        (ips(&["93.184.215.14"]), true)
    );
    assert_eq!(r.rules, [Rule::NxdomainHijack]);

    // Hijack plus bogus, nothing else: suspicious, not NXDOMAIN.
    let v = judge_plain(NAME, &[ans(&["198.51.100.66", "203.0.113.3"])], &ctx());
    assert!(
        matches!(&v, PlainVerdict::Suspicious { usable, .. } if usable.is_empty()),
        "{v:?}"
    );
}

#[test]
fn weak_and_strong_together() {
    let v = judge_plain(NAME, &[ans(&["203.0.113.5", "10.1.1.1"])], &ctx());
    assert_eq!(v.rules(), [Rule::BogusIp, Rule::NonPublic]);
    // Agreement does not clear a strong rule.
    let r = resolution(cross_check(&v, Some(&ans(&["10.1.1.1"]))));
    assert_eq!((r.addrs.clone(), r.polluted), (ips(&["10.1.1.1"]), true));
    let r = resolution(cross_check(&v, None));
    assert_eq!((r.addrs.clone(), r.polluted), (ips(&["10.1.1.1"]), true));
}

#[test]
fn answer_outcome_without_detection() {
    let r = resolution(answer_outcome(
        &ans(&["10.0.0.1", "10.0.0.1", "10.0.0.2"]),
        Source::Plain,
    ));
    assert_eq!(
        (r.addrs.clone(), r.polluted),
        (ips(&["10.0.0.1", "10.0.0.2"]), false)
    );
    assert_eq!(
        answer_outcome(&Answer::empty(Rcode::NoError, TTL), Source::Doh),
        Outcome::NxDomain { rules: vec![] }
    );
    match answer_outcome(&Answer::empty(Rcode::Refused, TTL), Source::Doh) {
        Outcome::Unresolved {
            detail, polluted, ..
        } => {
            assert_eq!(detail, "doh answer: refused");
            assert!(!polluted);
        }
        other => panic!("{other:?}"),
    }
    let o = Outcome::NxDomain {
        rules: vec![Rule::NxdomainHijack],
    };
    assert!(o.addrs().is_empty() && !o.polluted());
    assert_eq!(o.rules(), [Rule::NxdomainHijack]);
}

#[test]
fn public_names() {
    for name in [
        "example.com",
        "www.example.com.",
        "WWW.Example.CO.UK",
        "a.b.github.io",
        "xn--bcher-kva.de",
    ] {
        assert!(public_name(name), "{name}");
    }
    for name in [
        "",
        ".",
        "com",
        "co.uk",
        "localhost",
        "foo.localhost",
        "host.test",
        "x.invalid",
        "www.example",
        "nas.local",
        "intranet.corp",
        "single",
        "192.0.2.1",
        "[2001:db8::1]",
        "::1",
        "a..com",
        ".example.com",
    ] {
        assert!(!public_name(name), "{name}");
    }
}

#[test]
fn probe_names_are_public_random_and_stable() {
    let a = probe_name(1);
    assert_eq!(a, probe_name(1));
    assert_ne!(a, probe_name(2));
    let mut seen = HashSet::new();
    for seed in 0..200u64 {
        let name = probe_name(seed.wrapping_mul(0x1234_5678_9abc));
        let (label, tld) = name.split_once('.').expect("two labels");
        assert!(label.len() == 33 && label.starts_with('x'), "{name}");
        assert!(label[1..].bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        assert!(PROBE_TLDS.contains(&tld), "{name}");
        assert!(public_name(&name), "{name}");
        seen.insert(name);
    }
    assert_eq!(seen.len(), 200);
}

#[test]
fn hijack_addresses_from_probe_answers() {
    let found = hijack_addresses(&ans(&["198.51.100.66", "198.51.100.66", "2001:db8::66"]));
    assert_eq!(found, ips(&["198.51.100.66", "2001:db8::66"]));
    assert!(hijack_addresses(&Answer::empty(Rcode::NxDomain, TTL)).is_empty());
    let mut refused = ans(&["198.51.100.66"]);
    refused.rcode = Rcode::Refused;
    assert!(hijack_addresses(&refused).is_empty());
}

/// Every rule judges AAAA answers as it judges A answers.
#[test]
fn every_rule_applies_to_aaaa_answers() {
    // bogus_ip (strong): the bogus v6 address is dropped; alone, nothing usable is left.
    let v = judge_plain(NAME, &[ans(&["2001:db8:bad::1"])], &ctx());
    assert!(
        matches!(&v, PlainVerdict::Suspicious { usable, strong: true, rules, .. }
        if usable.is_empty() && rules == &[Rule::BogusIp]),
        "{v:?}"
    );
    let o = cross_check(&v, None);
    assert!(
        matches!(&o, Outcome::Unresolved { polluted: true, .. }),
        "{o:?}"
    );
    // non_public (weak) for every non-public IPv6 class, the mapped and NAT64 forms included.
    for a in [
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "64:ff9b::a00:1",
        "2002:c0a8:101::1",
    ] {
        let v = judge_plain(NAME, &[ans(&[a])], &ctx());
        assert_eq!(v.rules(), [Rule::NonPublic], "{a}: {v:?}");
        // A DoH answer without it: polluted, DoH's address used.
        let o = cross_check(&v, Some(&ans(&["2606:2800:220:1::1"])));
        let r = resolution(o);
        assert!(
            r.polluted && r.rules.contains(&Rule::CrossCheck),
            "{a}: {r:?}"
        );
        assert_eq!(r.addrs, ips(&["2606:2800:220:1::1"]));
    }
    // injection_race (strong): the first of two different AAAA answers is dropped.
    let v = judge_plain(
        NAME,
        &[ans(&["2001:db8:f00::1"]), ans(&["2606:2800:220:1::1"])],
        &ctx(),
    );
    let r = resolution(cross_check(&v, None));
    assert_eq!(r.addrs, ips(&["2606:2800:220:1::1"]));
    assert!(
        r.polluted && r.rules.contains(&Rule::InjectionRace),
        "{r:?}"
    );
    // nxdomain_hijack: a v6 address learned by the probe means NXDOMAIN.
    let mut c = ctx();
    c.hijack.insert(ip("2001:db8:4a1::66"));
    let v = judge_plain(NAME, &[ans(&["2001:db8:4a1::66"])], &c);
    assert_eq!(
        v,
        PlainVerdict::NxDomain {
            rules: vec![Rule::NxdomainHijack]
        }
    );
}

#[test]
fn allow_cidrs_are_not_suspicious() {
    let mut c = ctx();
    c.allow_cidrs = vec![
        "10.1.0.0/16".parse().unwrap(),
        "fd00:1::/32".parse().unwrap(),
    ];
    for a in ["10.1.2.3", "fd00:1::5"] {
        let v = judge_plain(NAME, &[ans(&[a])], &c);
        assert!(matches!(v, PlainVerdict::Clean { .. }), "{a}: {v:?}");
    }
    for a in ["10.2.0.1", "fd00:2::5"] {
        let v = judge_plain(NAME, &[ans(&[a])], &c);
        assert_eq!(v.rules(), [Rule::NonPublic], "{a}: {v:?}");
    }
}
