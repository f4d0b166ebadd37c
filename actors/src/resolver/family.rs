//! One name, two address families: every lookup asks for A and AAAA records alike (each judged by the same
//! detection rules on its own, with its own DoH cross-check), and [`merge`] makes one [`Outcome`] of the two.
//!
//! The addresses of both families are kept, IPv6 first (the default preference of RFC 6724; the dialer
//! interleaves the families and races them, RFC 8305). A name with addresses in one family only resolves to those:
//! the other family's "no data" is not a failure. Every rule that fired on either family is reported, and either
//! family judged polluted makes the whole answer polluted. When neither family has an address, the name is
//! NXDOMAIN only when both answers say so; a failure of either family (timeout, SERVFAIL, no clean answer) makes
//! the lookup unresolved, to be tried again, since the missing family might have had addresses.

use super::logic::{Outcome, Resolution, Rule, Source};

fn union(a: &[Rule], b: &[Rule]) -> Vec<Rule> {
    let mut rules: Vec<Rule> = a.iter().chain(b).copied().collect();
    rules.sort_unstable();
    rules.dedup();
    rules
}

/// The source of two answers taken together: the one they share, else DoH if either needed it.
fn source(a: Source, b: Source) -> Source {
    if a == b || b == Source::Doh { b } else { a }
}

/// Whether an answer was judged forged (an NXDOMAIN with rules is a hijacked answer).
fn judged_polluted(o: &Outcome) -> bool {
    match o {
        Outcome::NxDomain { rules } => !rules.is_empty(),
        other => other.polluted(),
    }
}

/// `r` with the verdict of the other family's answer added (its rules; polluted if it was).
fn with_verdict(mut r: Resolution, other: &Outcome) -> Resolution {
    r.rules = union(&r.rules, other.rules());
    r.polluted |= judged_polluted(other);
    r
}

/// One outcome of the A (`v4`) and AAAA (`v6`) lookups of one name (see the module doc).
pub fn merge(v4: Outcome, v6: Outcome) -> Outcome {
    match (v4, v6) {
        (Outcome::Resolved(a), Outcome::Resolved(b)) => {
            let mut addrs = b.addrs;
            for ip in a.addrs {
                if !addrs.contains(&ip) {
                    addrs.push(ip);
                }
            }
            Outcome::Resolved(Resolution {
                addrs,
                source: source(a.source, b.source),
                polluted: a.polluted || b.polluted,
                rules: union(&a.rules, &b.rules),
                ttl: a.ttl.min(b.ttl),
            })
        }
        (Outcome::Resolved(r), other) | (other, Outcome::Resolved(r)) => {
            Outcome::Resolved(with_verdict(r, &other))
        }
        (Outcome::NxDomain { rules: a }, Outcome::NxDomain { rules: b }) => Outcome::NxDomain {
            rules: union(&a, &b),
        },
        (
            Outcome::Unresolved {
                polluted,
                rules,
                detail,
            },
            other,
        ) => Outcome::Unresolved {
            polluted: polluted || judged_polluted(&other),
            rules: union(&rules, other.rules()),
            detail: match other {
                Outcome::Unresolved { detail: d6, .. } if d6 != detail => {
                    format!("{detail} (aaaa: {d6})")
                }
                _ => detail,
            },
        },
        (
            nx @ Outcome::NxDomain { .. },
            Outcome::Unresolved {
                polluted,
                rules,
                detail,
            },
        ) => Outcome::Unresolved {
            polluted: polluted || judged_polluted(&nx),
            rules: union(nx.rules(), &rules),
            detail: format!("aaaa: {detail}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;
    use std::time::Duration;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn resolved(addrs: &[&str], source: Source, rules: &[Rule], ttl: u64) -> Outcome {
        Outcome::Resolved(Resolution {
            addrs: addrs.iter().map(|a| ip(a)).collect(),
            source,
            polluted: rules.iter().any(|r| r.is_strong()),
            rules: rules.to_vec(),
            ttl: Duration::from_secs(ttl),
        })
    }

    fn nodata() -> Outcome {
        Outcome::NxDomain { rules: Vec::new() }
    }

    fn failed(detail: &str) -> Outcome {
        Outcome::Unresolved {
            polluted: false,
            rules: Vec::new(),
            detail: detail.into(),
        }
    }

    #[test]
    fn both_families_are_kept_v6_first() {
        let m = merge(
            resolved(&["93.184.216.34"], Source::Plain, &[], 300),
            resolved(&["2606:2800::1", "2606:2800::2"], Source::Plain, &[], 60),
        );
        assert_eq!(
            m,
            resolved(
                &["2606:2800::1", "2606:2800::2", "93.184.216.34"],
                Source::Plain,
                &[],
                60
            )
        );
    }

    #[test]
    fn one_family_is_enough() {
        let v4 = resolved(&["93.184.216.34"], Source::Plain, &[], 300);
        assert_eq!(merge(v4.clone(), nodata()), v4);
        let v6 = resolved(&["2606:2800::1"], Source::Doh, &[], 300);
        assert_eq!(merge(nodata(), v6.clone()), v6);
        // A failed AAAA lookup does not hide the A records.
        assert_eq!(merge(v4.clone(), failed("timeout")), v4);
    }

    #[test]
    fn a_polluted_family_marks_the_whole_answer() {
        // The AAAA answer carried a bogus address and no clean one: the A records stay, the verdict is reported.
        let aaaa = Outcome::Unresolved {
            polluted: true,
            rules: vec![Rule::BogusIp],
            detail: "no usable address in the plain answer".into(),
        };
        let m = merge(resolved(&["93.184.216.34"], Source::Plain, &[], 300), aaaa);
        assert!(m.polluted());
        assert_eq!(m.rules(), [Rule::BogusIp]);
        assert_eq!(m.addrs(), [ip("93.184.216.34")]);
        // The AAAA answer was replaced by DoH's: the source says so.
        let m = merge(
            resolved(&["93.184.216.34"], Source::Plain, &[], 300),
            resolved(
                &["2606:2800::1"],
                Source::Doh,
                &[Rule::CrossCheck, Rule::InjectionRace],
                300,
            ),
        );
        assert_eq!(
            (m.polluted(), m.rules()),
            (true, &[Rule::InjectionRace, Rule::CrossCheck][..])
        );
        assert!(matches!(&m, Outcome::Resolved(r) if r.source == Source::Doh));
    }

    #[test]
    fn nxdomain_needs_both_and_a_failure_is_retried() {
        assert_eq!(merge(nodata(), nodata()), nodata());
        let hijack = Outcome::NxDomain {
            rules: vec![Rule::NxdomainHijack],
        };
        assert_eq!(
            merge(hijack.clone(), nodata()),
            Outcome::NxDomain {
                rules: vec![Rule::NxdomainHijack]
            }
        );
        assert_eq!(
            merge(nodata(), failed("servfail")),
            Outcome::Unresolved {
                polluted: false,
                rules: Vec::new(),
                detail: "aaaa: servfail".into()
            }
        );
        assert_eq!(merge(failed("timeout"), nodata()), failed("timeout"));
        assert_eq!(
            merge(failed("timeout"), failed("refused")),
            failed("timeout (aaaa: refused)")
        );
        assert_eq!(
            merge(failed("timeout"), failed("timeout")),
            failed("timeout")
        );
        let m = merge(hijack, failed("timeout"));
        assert!(m.polluted(), "{m:?}");
        assert_eq!(m.rules(), [Rule::NxdomainHijack]);
    }
}
