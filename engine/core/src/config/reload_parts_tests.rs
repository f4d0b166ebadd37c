//! Tests of the reload diff by part: a change in one section reapplies that section's part and
//! nothing else (a log level change leaves the resolver and the proxy breakers alone), every
//! live key feeds exactly one part, and the changed keys read as one log field.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::reload::{KeyClass, Part, ReloadPlan, classify, plan};
use super::tests::{ALL_KEYS, ok};
use super::*;

/// A change to the `[resolver]` section.
type ResolverEdit = Box<dyn FnOnce(&mut ResolverConfig)>;

/// The plan of a reload from the default config to `edit(default)`.
fn diff(edit: impl FnOnce(&mut Config)) -> ReloadPlan {
    let old = Config::default();
    let mut new = old.clone();
    edit(&mut new);
    plan(&old, &new)
}

fn parts(list: &[Part]) -> BTreeSet<Part> {
    list.iter().copied().collect()
}

/// Asserts that `edit` changes exactly the live `keys` and reapplies exactly `part`.
fn assert_only(part: Part, keys: &[&str], edit: impl FnOnce(&mut Config)) {
    let p = diff(edit);
    assert!(p.restart_only.is_empty(), "{:?}", p.restart_only);
    assert_eq!(p.live, keys);
    assert_eq!(p.parts(), parts(&[part]), "{keys:?}");
}

#[test]
fn every_live_key_feeds_one_part_and_every_part_is_fed() {
    let mut fed = BTreeSet::new();
    for key in Config::keys() {
        match classify(key) {
            Some(KeyClass::Live) => {
                let part = Part::of(key).unwrap_or_else(|| panic!("`{key}` feeds no part"));
                fed.insert(part);
            }
            _ => assert_eq!(Part::of(key), None, "restart-only `{key}` feeds a part"),
        }
    }
    let all = parts(&[
        Part::Scope,
        Part::UserAgent,
        Part::Politeness,
        Part::Resolver,
        Part::LogLevel,
        Part::SampleRatio,
        Part::Proxy,
        Part::Recrawl,
        Part::AlertActions,
    ]);
    assert_eq!(fed, all);
    for unknown in [
        "",
        "resolver",
        "resolver.",
        "nope.key",
        "observability.log_format",
    ] {
        assert_eq!(Part::of(unknown), None, "{unknown:?}");
    }
}

#[test]
fn no_change_reapplies_nothing() {
    let p = plan(&ok(ALL_KEYS), &ok(ALL_KEYS));
    assert!(p.parts().is_empty());
    assert_eq!(p.changed(), "no change");
    let p = plan(&Config::default(), &ok(""));
    assert!(p.parts().is_empty());
    assert_eq!(p.changed(), "no change");
}

#[test]
fn the_log_level_alone_reapplies_the_log_filter_only() {
    assert_only(Part::LogLevel, &["observability.log_level"], |c| {
        c.observability.log_level = "warn".to_owned();
    });
    let p = diff(|c| c.observability.log_level = "debug,h2=info".to_owned());
    assert_eq!(p.changed(), "observability.log_level");
    assert!(!p.parts().contains(&Part::Resolver));
    assert!(!p.parts().contains(&Part::Proxy));
}

#[test]
fn the_sample_ratio_alone_reapplies_the_sampler_only() {
    assert_only(Part::SampleRatio, &["observability.sample_ratio"], |c| {
        c.observability.sample_ratio = 0.25;
    });
}

#[test]
fn politeness_keys_reapply_the_politeness_policy_only() {
    assert_only(Part::Politeness, &["politeness.min_delay_ms"], |c| {
        c.politeness.min_delay = Duration::from_millis(10);
    });
    assert_only(
        Part::Politeness,
        &[
            "politeness.per_host_concurrency",
            "politeness.honour_crawl_delay",
            "politeness.max_crawl_delay_ms",
            "politeness.backoff_base_ms",
            "politeness.backoff_max_ms",
        ],
        |c| {
            let p = &mut c.politeness;
            p.per_host_concurrency = 3;
            p.honour_crawl_delay = !p.honour_crawl_delay;
            p.max_crawl_delay = Duration::from_secs(7);
            p.backoff_base = Duration::from_millis(3);
            p.backoff_max = Duration::from_secs(9);
        },
    );
}

#[test]
fn include_and_exclude_reapply_the_scope_and_the_user_agent_its_own_part() {
    assert_only(Part::Scope, &["crawl.include"], |c| {
        c.crawl.include = vec![regex::Regex::new("^https://a\\.example/").expect("regex")];
    });
    assert_only(Part::Scope, &["crawl.exclude"], |c| {
        c.crawl.exclude = vec![regex::Regex::new("\\.pdf$").expect("regex")];
    });
    assert_only(Part::UserAgent, &["crawl.user_agent"], |c| {
        c.crawl.user_agent = "other-bot/1.0 (+https://a.example/bot)".to_owned();
    });
    // The same patterns, compiled again, are no change.
    let c = ok("[crawl]\nexclude = [\"/private/\"]\n");
    assert!(
        plan(&c, &ok("[crawl]\nexclude = [\"/private/\"]\n"))
            .parts()
            .is_empty()
    );
}

#[test]
fn every_resolver_key_reapplies_the_resolver_only() {
    let ns: SocketAddr = "127.0.0.1:5353".parse().expect("addr");
    let ip: IpAddr = "127.0.0.9".parse().expect("ip");
    let edits: Vec<(&str, ResolverEdit)> = vec![
        (
            "resolver.nameservers",
            Box::new(move |r| r.nameservers = vec![ns]),
        ),
        ("resolver.mode", Box::new(|r| r.mode = ResolverMode::Plain)),
        (
            "resolver.hosts",
            Box::new(move |r| {
                r.hosts.insert("a.example".to_owned(), vec![ip]);
            }),
        ),
        (
            "resolver.bogus_ips",
            Box::new(|r| r.bogus_ips.push("203.0.113.0/24".to_owned())),
        ),
        (
            "resolver.bogus_ips_file",
            Box::new(|r| r.bogus_ips_file = Some(PathBuf::from("bogus.txt"))),
        ),
        (
            "resolver.hold_on_ms",
            Box::new(|r| r.hold_on += Duration::from_millis(1)),
        ),
        (
            "resolver.timeout_ms",
            Box::new(|r| r.timeout += Duration::from_millis(1)),
        ),
        ("resolver.attempts", Box::new(|r| r.attempts += 1)),
        (
            "resolver.min_ttl_s",
            Box::new(|r| r.min_ttl += Duration::from_secs(1)),
        ),
        (
            "resolver.max_ttl_s",
            Box::new(|r| r.max_ttl += Duration::from_secs(1)),
        ),
        (
            "resolver.negative_ttl_s",
            Box::new(|r| r.negative_ttl += Duration::from_secs(1)),
        ),
        (
            "resolver.hijack_probe",
            Box::new(|r| r.hijack_probe = !r.hijack_probe),
        ),
    ];
    for (key, edit) in edits {
        assert_only(Part::Resolver, &[key], |c| edit(&mut c.resolver));
    }
    let doh = ok("[[resolver.doh]]\nurl = \"https://dns.example/q\"\n");
    let p = plan(&Config::default(), &doh);
    assert_eq!(p.parts(), parts(&[Part::Resolver]));
}

#[test]
fn proxy_keys_reapply_the_proxy_chains_only() {
    assert_only(
        Part::Proxy,
        &["proxy.select", "proxy.breaker_cooldown_ms"],
        |c| {
            c.proxy.select = SelectPolicy::Sticky;
            c.proxy.breaker_cooldown = Duration::from_secs(1);
        },
    );
    let chains = |port: u16| {
        ok(&format!(
            "[proxy.chains.eu]\nhops = [\"socks5://127.0.0.1:{port}\"]\n"
        ))
    };
    let p = plan(&chains(1080), &chains(1081));
    assert_eq!(p.live, ["proxy.chains"]);
    assert_eq!(p.parts(), parts(&[Part::Proxy]));
}

#[test]
fn restart_only_keys_feed_no_part() {
    let p = diff(|c| {
        c.fetch.request_timeout = std::time::Duration::from_secs(1);
        c.frontier.data_dir = PathBuf::from("elsewhere");
        c.observability.metrics_listen = None;
        c.observability.log_format = LogFormat::Json;
    });
    assert!(p.rejected());
    assert!(p.parts().is_empty());
    assert_eq!(p.changed(), "no change");
}

#[test]
fn sections_changed_together_reapply_each_of_their_parts() {
    let p = diff(|c| {
        c.politeness.min_delay = Duration::ZERO;
        c.observability.log_level = "warn".to_owned();
        c.resolver.attempts = 5;
    });
    assert_eq!(
        p.parts(),
        parts(&[Part::Politeness, Part::Resolver, Part::LogLevel])
    );
    assert_eq!(
        p.changed(),
        "politeness.min_delay_ms,resolver.attempts,observability.log_level"
    );
    // Every section at once (the first proxy chain too, which alone is restart-only).
    let p = plan(&Config::default(), &ok(ALL_KEYS));
    assert_eq!(
        p.parts(),
        parts(&[
            Part::Scope,
            Part::UserAgent,
            Part::Politeness,
            Part::Resolver,
            Part::LogLevel,
            Part::SampleRatio,
            Part::Proxy,
            Part::Recrawl,
            Part::AlertActions,
        ])
    );
}

#[test]
fn a_key_noted_from_outside_the_file_joins_in_key_order_once() {
    let mut p = diff(|c| {
        c.politeness.min_delay = Duration::ZERO;
        c.observability.log_level = "warn".to_owned();
    });
    p.note_live("resolver.bogus_ips_file");
    assert_eq!(
        p.live,
        [
            "politeness.min_delay_ms",
            "resolver.bogus_ips_file",
            "observability.log_level"
        ]
    );
    p.note_live("resolver.bogus_ips_file");
    // A restart-only key is never noted as live.
    p.note_live("frontier.data_dir");
    assert_eq!(p.live.len(), 3);
    assert!(p.restart_only.is_empty());
    assert!(p.parts().contains(&Part::Resolver));

    let mut p = ReloadPlan::default();
    p.note_live("resolver.bogus_ips_file");
    assert_eq!(p.parts(), parts(&[Part::Resolver]));
    assert_eq!(p.changed(), "resolver.bogus_ips_file");
}
