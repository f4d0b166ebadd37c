//! The label values the metrics registry creates at zero (`crawl_observability::metrics::known`) are the names the
//! engine uses: every record reason with its outcome (`Reason::ALL`, kept complete by a test in crawl-core), the
//! resolver's answer labels and rules, the proxy's fault kinds. A new variant of one of these enums fails to compile
//! until it is listed, and then fails the test until the registry knows it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use crawl_actors::proxy::socks::{FaultKind, Phase};
use crawl_actors::resolver::actor::labels;
use crawl_actors::resolver::logic::{Outcome, Resolution, Rule, Source};
use crawl_core::record::Reason;
use crawl_observability::metrics::known;
use std::collections::BTreeSet;
use std::time::Duration;

#[test]
fn every_record_reason_has_its_series() {
    let want: BTreeSet<(String, String)> = Reason::ALL
        .into_iter()
        .map(|r| (r.outcome().as_str().to_owned(), r.as_str().to_owned()))
        .chain([("fetched".to_owned(), String::new())])
        .collect();
    let have: BTreeSet<(String, String)> = known::RECORDS
        .iter()
        .map(|(o, r)| ((*o).to_owned(), (*r).to_owned()))
        .collect();
    assert_eq!(have, want);
    let reasons: BTreeSet<&str> = Reason::ALL.into_iter().map(Reason::as_str).collect();
    for r in known::FETCH_ERROR_REASONS {
        assert!(reasons.contains(r), "{r} is no record reason");
    }
}

#[test]
fn every_dns_label_and_rule_has_its_series() {
    use Rule::*;
    let rules = [
        BogusIp,
        NonPublic,
        InjectionRace,
        NxdomainHijack,
        CrossCheck,
    ];
    for r in rules {
        match r {
            BogusIp | NonPublic | InjectionRace | NxdomainHijack | CrossCheck => {}
        }
    }
    let names: BTreeSet<&str> = rules.iter().map(|r| r.as_str()).collect();
    assert_eq!(names, known::DNS_POLLUTION_RULES.into_iter().collect());

    let mut seen = BTreeSet::new();
    for source in [Source::Hosts, Source::Cache, Source::Plain, Source::Doh] {
        let o = Outcome::Resolved(Resolution {
            addrs: Vec::new(),
            source,
            polluted: false,
            rules: Vec::new(),
            ttl: Duration::ZERO,
        });
        seen.insert(labels(&o, false));
    }
    for cached in [false, true] {
        seen.insert(labels(&Outcome::NxDomain { rules: Vec::new() }, cached));
        let failed = Outcome::Unresolved {
            polluted: false,
            rules: Vec::new(),
            detail: String::new(),
        };
        seen.insert(labels(&failed, cached));
    }
    assert_eq!(seen, known::DNS_LOOKUPS.into_iter().collect());
}

#[test]
fn every_proxy_fault_kind_has_its_series() {
    use FaultKind::*;
    let kinds = [
        Refused,
        Timeout(Phase::Connect),
        Timeout(Phase::Greeting),
        Timeout(Phase::Auth),
        Timeout(Phase::ConnectReply),
        AuthFailed,
        AuthRequired,
        GeneralFailure,
        NotAllowed,
        CommandNotSupported,
        AddrTypeNotSupported,
        Malformed,
        Closed,
    ];
    for k in kinds {
        match k {
            Refused
            | Timeout(Phase::Connect | Phase::Greeting | Phase::Auth | Phase::ConnectReply)
            | AuthFailed
            | AuthRequired
            | GeneralFailure
            | NotAllowed
            | CommandNotSupported
            | AddrTypeNotSupported
            | Malformed
            | Closed => {}
        }
    }
    let names: BTreeSet<&str> = kinds.iter().map(|k| k.as_str()).collect();
    assert_eq!(names, known::PROXY_FAULT_KINDS.into_iter().collect());
}

#[test]
fn every_recrawl_anomaly_has_its_series() {
    use crawl_core::recrawl::Anomaly;
    // A new variant fails to compile here until it is added to `Anomaly::ALL` and the registry's list.
    for a in Anomaly::ALL {
        match a {
            Anomaly::NotModifiedWithoutPrior
            | Anomaly::LastModifiedUnparseable
            | Anomaly::LastModifiedInFuture
            | Anomaly::EtagUnstable
            | Anomaly::ConditionalIgnored
            | Anomaly::EtagTooLong
            | Anomaly::LastmodUnparseable
            | Anomaly::LastmodInFuture
            | Anomaly::HintBounded => {}
        }
    }
    let names: BTreeSet<&str> = Anomaly::ALL.iter().map(|a| a.as_str()).collect();
    assert_eq!(names.len(), Anomaly::ALL.len());
    assert_eq!(names, known::RECRAWL_ANOMALIES.into_iter().collect());
}
