//! Tests of what a reload sends, part by part: nothing for a log level or sample ratio change, each actor only its
//! own part otherwise, and the resolver when the bogus-IP file's contents changed under the same path.

use super::*;
use crate::resolver::setup::bogus_set;
use std::time::Duration;

/// What a prepared reload would touch, by name.
fn sent(p: &Prepared) -> Vec<&'static str> {
    let mut v = Vec::new();
    if p.politeness.is_some() {
        v.push("politeness");
    }
    if p.scope.is_some() {
        v.push("scope");
    }
    if p.parse.is_some() {
        v.push("parse");
    }
    if p.user_agent.is_some() {
        v.push("user_agent");
    }
    if p.resolver.is_some() {
        v.push("resolver");
    }
    if p.proxy.is_some() {
        v.push("proxy");
    }
    if p.recrawl.is_some() {
        v.push("recrawl");
    }
    v
}

fn config() -> Config {
    let mut c = Config::default();
    // Never the system's resolver configuration in a test.
    c.resolver.nameservers = vec!["127.0.0.1:9".parse().expect("addr")];
    c
}

fn parts(list: &[Part]) -> BTreeSet<Part> {
    list.iter().copied().collect()
}

fn prepared(c: &Config, changed: &[Part]) -> Prepared {
    let running = bogus_set(&c.resolver).expect("bogus set");
    prepare(c, &parts(changed), &running).expect("prepare")
}

#[test]
fn log_level_and_sample_ratio_changes_send_nothing_to_the_actors() {
    let c = config();
    for changed in [
        &[][..],
        &[Part::LogLevel],
        &[Part::SampleRatio],
        &[Part::LogLevel, Part::SampleRatio],
    ] {
        let p = prepared(&c, changed);
        assert!(sent(&p).is_empty(), "{changed:?}: {:?}", sent(&p));
        assert!(!p.bogus_file_changed());
    }
}

#[test]
fn each_part_goes_to_its_own_actor_only() {
    let mut c = config();
    c.politeness.min_delay = Duration::from_millis(5);
    c.proxy.breaker_failures = 9;
    let cases: [(&[Part], &[&str]); 7] = [
        (&[Part::Politeness], &["politeness"]),
        (&[Part::Recrawl], &["recrawl"]),
        (&[Part::Scope], &["scope", "parse"]),
        (&[Part::UserAgent], &["parse", "user_agent"]),
        (&[Part::Resolver], &["resolver"]),
        (&[Part::Proxy], &["proxy"]),
        (
            &[Part::Politeness, Part::Resolver, Part::LogLevel],
            &["politeness", "resolver"],
        ),
    ];
    for (changed, expected) in cases {
        let p = prepared(&c, changed);
        assert_eq!(sent(&p), expected, "{changed:?}");
    }
    let p = prepared(&c, &[Part::Politeness]);
    assert_eq!(
        p.politeness.map(|x| x.min_delay),
        Some(Duration::from_millis(5))
    );
    let p = prepared(&c, &[Part::Proxy]);
    assert_eq!(p.proxy.map(|x| x.breaker_failures), Some(9));
}

#[test]
fn a_bad_user_agent_rejects_the_reload_that_changes_it() {
    let mut c = config();
    c.crawl.user_agent = "bad\nagent".to_owned();
    let running = IpSet::new();
    assert!(matches!(
        prepare(&c, &parts(&[Part::UserAgent]), &running),
        Err(TreeError::Http(_))
    ));
}

#[test]
fn new_contents_of_the_same_bogus_ip_file_reconfigure_the_resolver() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bogus.txt");
    std::fs::write(&file, "203.0.113.0/24\n").expect("write");
    let mut c = config();
    c.resolver.bogus_ips_file = Some(file.clone());
    let running = bogus_set(&c.resolver).expect("bogus set");

    // Unchanged file: nothing for the resolver.
    let p = prepare(&c, &parts(&[Part::LogLevel]), &running).expect("prepare");
    assert!(sent(&p).is_empty() && !p.bogus_file_changed());
    // The same entries written otherwise are no change either.
    std::fs::write(&file, "# forged\n203.0.113.0/24   # again\n\n").expect("write");
    let p = prepare(&c, &parts(&[]), &running).expect("prepare");
    assert!(sent(&p).is_empty() && !p.bogus_file_changed());

    // A new entry: the resolver gets the new set.
    std::fs::write(&file, "203.0.113.0/24\n198.51.100.7\n").expect("write");
    let p = prepare(&c, &parts(&[Part::LogLevel]), &running).expect("prepare");
    assert!(p.bogus_file_changed());
    assert_eq!(sent(&p), ["resolver"]);
    let bogus = &p.resolver.as_ref().expect("resolver parts").ctx.bogus;
    assert!(bogus.contains("198.51.100.7".parse().expect("ip")));
    assert_eq!(bogus.len(), 2);

    // A resolver section change sends it anyway, not as a file change.
    let p = prepare(&c, &parts(&[Part::Resolver]), &running).expect("prepare");
    assert_eq!(sent(&p), ["resolver"]);
    assert!(!p.bogus_file_changed());

    // A file that cannot be read any more rejects the reload, as at start.
    std::fs::remove_file(&file).expect("remove");
    assert!(matches!(
        prepare(&c, &parts(&[Part::LogLevel]), &running),
        Err(TreeError::Resolver(_))
    ));
}
