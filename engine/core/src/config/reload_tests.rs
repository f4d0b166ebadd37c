//! Tests of reload planning: every key is classified, every difference is found under its key
//! name in key order, and each key group lands on the documented side.

use std::path::PathBuf;
use std::time::Duration;

use super::reload::{KeyClass, ReloadPlan, classify, plan};
use super::tests::{ALL_KEYS, ok};
use super::*;

/// The live keys of docs/OBSERVABILITY.md ("SIGHUP"), spelled out.
const LIVE: &[&str] = &[
    "crawl.include",
    "crawl.exclude",
    "crawl.user_agent",
    "recrawl.interval_s",
    "recrawl.min_interval_s",
    "recrawl.max_interval_s",
    "recrawl.adaptive",
    "recrawl.inc_rate",
    "recrawl.dec_rate",
    "recrawl.host_revisits_per_minute",
    "recrawl.rules",
    "politeness.per_host_concurrency",
    "politeness.min_delay_ms",
    "politeness.honour_crawl_delay",
    "politeness.max_crawl_delay_ms",
    "politeness.backoff_base_ms",
    "politeness.backoff_max_ms",
    "fetch.concurrency",
    "resolver.nameservers",
    "resolver.mode",
    "resolver.hosts",
    "resolver.bogus_ips",
    "resolver.bogus_ips_file",
    "resolver.hold_on_ms",
    "resolver.timeout_ms",
    "resolver.attempts",
    "resolver.min_ttl_s",
    "resolver.max_ttl_s",
    "resolver.negative_ttl_s",
    "resolver.hijack_probe",
    "resolver.doh",
    "observability.log_level",
    "observability.sample_ratio",
    "proxy.default",
    "proxy.select",
    "proxy.fallback_direct",
    "proxy.connect_timeout_ms",
    "proxy.greeting_timeout_ms",
    "proxy.auth_timeout_ms",
    "proxy.connect_reply_timeout_ms",
    "proxy.chain_timeout_ms",
    "proxy.breaker_failures",
    "proxy.breaker_cooldown_ms",
    "proxy.chains",
    "proxy.rules",
    "api.alert_actions",
];

/// Where `key` sits in `Config::keys()`.
fn rank(key: &str) -> usize {
    Config::keys()
        .iter()
        .position(|k| *k == key)
        .unwrap_or_else(|| panic!("`{key}` is not a config key"))
}

fn assert_in_key_order(keys: &[&str]) {
    let ranks: Vec<usize> = keys.iter().map(|k| rank(k)).collect();
    assert!(ranks.is_sorted(), "not in key order: {keys:?}");
}

/// `(restart_only, live)` of a reload from the default config to `edit(default)`.
fn changes(edit: impl FnOnce(&mut Config)) -> (Vec<&'static str>, Vec<&'static str>) {
    let old = Config::default();
    let mut new = old.clone();
    edit(&mut new);
    let p = plan(&old, &new);
    (p.restart_only, p.live)
}

fn chain_config(port: u16) -> Config {
    ok(&format!(
        "[proxy.chains.eu]\nhops = [\"socks5://127.0.0.1:{port}\"]\n"
    ))
}

#[test]
fn every_key_is_classified_as_documented() {
    let keys = Config::keys();
    for key in &keys {
        assert!(classify(key).is_some(), "`{key}` is not classified");
    }
    let live: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| classify(k) == Some(KeyClass::Live))
        .collect();
    assert_eq!(live, LIVE);
    for key in [
        "crawl.seeds",
        "crawl.max_pages",
        "fetch.fetchers",
        "frontier.data_dir",
        "output.jsonl",
        "security.allow_private_networks",
        "supervisor.max_restarts",
        "parser.threads",
        "shutdown.grace_ms",
        "observability.log_format",
        "observability.progress_interval_s",
        "observability.otlp_endpoint",
        "observability.service_name",
        "observability.metrics_listen",
    ] {
        assert_eq!(classify(key), Some(KeyClass::RestartOnly), "{key}");
    }
    for unknown in ["", "politeness", "politeness.", "nope.key", "observability"] {
        assert_eq!(classify(unknown), None, "{unknown:?}");
    }
}

#[test]
fn equal_configs_are_a_noop() {
    let p = plan(&Config::default(), &ok(""));
    assert!(p.is_noop() && !p.rejected());
    assert_eq!(p, ReloadPlan::default());
    assert_eq!(p.message(), "reload: no changes");
    let full = ok(ALL_KEYS);
    assert!(plan(&full, &ok(ALL_KEYS)).is_noop());
    // Regexes compare by pattern text, not by identity.
    let c = ok("[crawl]\ninclude = [\"^https://a\\\\.example/\"]\n");
    assert!(plan(&c, &c.clone()).is_noop());
}

/// `ALL_KEYS` sets every key to a non-default value, so a reload from the defaults changes
/// every key: each must be reported once, under its name, on its side, in key order.
#[test]
fn every_key_difference_is_found_under_its_name() {
    let old = Config::default();
    let new = ok(ALL_KEYS);
    for p in [plan(&old, &new), plan(&new, &old)] {
        assert_in_key_order(&p.live);
        assert_in_key_order(&p.restart_only);
        let mut all: Vec<&str> = p.live.iter().chain(&p.restart_only).copied().collect();
        all.sort_by_key(|k| rank(k));
        assert_eq!(all, Config::keys());
        for key in &p.live {
            assert_eq!(classify(key), Some(KeyClass::Live), "{key}");
        }
        for key in &p.restart_only {
            // Going from no chains to one is the one live key that is restart-only here.
            if *key != "proxy.chains" {
                assert_eq!(classify(key), Some(KeyClass::RestartOnly), "{key}");
            }
        }
        assert!(p.restart_only.contains(&"proxy.chains"));
        assert!(p.rejected() && !p.is_noop());
    }
}

#[test]
fn crawl_keys() {
    let (restart, live) = changes(|c| {
        c.crawl.include = vec![regex::Regex::new("^https://").expect("regex")];
        c.crawl.exclude = vec![regex::Regex::new(r"\.pdf$").expect("regex")];
        c.crawl.user_agent = "bot/2".to_owned();
    });
    assert!(restart.is_empty());
    assert_eq!(live, ["crawl.include", "crawl.exclude", "crawl.user_agent"]);

    let seed = url::Url::parse("https://a.example/").expect("url");
    let (restart, live) = changes(|c| {
        c.crawl.seeds.push(seed);
        c.crawl.max_pages = 10;
        c.crawl.robots_cache = Duration::ZERO;
        c.crawl.sitemap_max_urls = 1;
    });
    assert!(live.is_empty());
    assert_eq!(
        restart,
        [
            "crawl.seeds",
            "crawl.max_pages",
            "crawl.robots_cache_s",
            "crawl.sitemap_max_urls"
        ]
    );
}

#[test]
fn recrawl_keys_are_live_but_enabled() {
    let (restart, live) = changes(|c| {
        c.recrawl.interval = Duration::from_secs(600);
        c.recrawl.inc_rate = 0.5;
        c.recrawl.rules.push(crate::config::RecrawlRule {
            pattern: regex::Regex::new("/news/").expect("regex"),
            interval: Duration::from_secs(60),
            adaptive: Some(false),
        });
    });
    assert!(restart.is_empty());
    assert_eq!(
        live,
        ["recrawl.interval_s", "recrawl.inc_rate", "recrawl.rules"]
    );
    let (restart, live) = changes(|c| c.recrawl.enabled = true);
    assert_eq!((restart, live), (vec!["recrawl.enabled"], vec![]));
    // Rules compare by pattern text.
    let c = ok("[recrawl]\n[[recrawl.rules]]\npattern = '/a/'\ninterval_s = 60\n");
    assert!(plan(&c, &c.clone()).is_noop());
}

#[test]
fn politeness_keys_are_live() {
    let (restart, live) = changes(|c| {
        c.politeness.per_host_concurrency = 8;
        c.politeness.min_delay = Duration::from_millis(5);
        c.politeness.backoff_max = Duration::from_secs(1);
    });
    assert!(restart.is_empty());
    assert_eq!(
        live,
        [
            "politeness.per_host_concurrency",
            "politeness.min_delay_ms",
            "politeness.backoff_max_ms"
        ]
    );
}

#[test]
fn engine_sections_are_restart_only() {
    let (restart, live) = changes(|c| {
        c.fetch.request_timeout = Duration::from_secs(1);
        c.frontier.data_dir = PathBuf::from("elsewhere");
        c.output.jsonl = PathBuf::from("other.jsonl");
        c.security.allow_private_networks = true;
        c.supervisor.restart_window = Duration::from_secs(1);
        c.parser.threads = 2;
        c.shutdown.grace = Duration::ZERO;
    });
    assert!(live.is_empty());
    assert_eq!(
        restart,
        [
            "fetch.request_timeout_ms",
            "frontier.data_dir",
            "output.jsonl",
            "security.allow_private_networks",
            "supervisor.restart_window_s",
            "parser.threads",
            "shutdown.grace_ms",
        ]
    );
}

#[test]
fn fetch_concurrency_is_live_with_the_politeness() {
    let (restart, live) = changes(|c| c.fetch.concurrency = 3);
    assert!(restart.is_empty());
    assert_eq!(live, ["fetch.concurrency"]);
    let p = plan(&Config::default(), &{
        let mut c = Config::default();
        c.fetch.concurrency = 3;
        c
    });
    assert!(p.parts().contains(&crate::config::reload::Part::Politeness));
}

#[test]
fn alert_actions_are_live_and_the_rest_of_api_restart_only() {
    let action = crate::control::alerts::AlertAction {
        alert: "Crawl429Storm".into(),
        labels: Default::default(),
        action: crate::control::alerts::ActionKind::PauseHost,
        host_label: "host_group".into(),
    };
    let (restart, live) = changes(|c| c.api.alert_actions.push(action.clone()));
    assert!(restart.is_empty());
    assert_eq!(live, ["api.alert_actions"]);
    let mut new = Config::default();
    new.api.alert_actions.push(action);
    assert_eq!(
        plan(&Config::default(), &new).parts(),
        [super::reload::Part::AlertActions].into()
    );
    let (restart, live) = changes(|c| {
        c.api.max_body_bytes = 1;
        c.api.token_file = Some(PathBuf::from("t"));
    });
    assert!(live.is_empty());
    assert_eq!(restart, ["api.token_file", "api.max_body_bytes"]);
}

#[test]
fn resolver_keys_are_live_including_the_bogus_ip_list_and_file() {
    let (restart, live) = changes(|c| {
        c.resolver.mode = ResolverMode::Plain;
        c.resolver.bogus_ips.push("203.0.113.0/24".to_owned());
        c.resolver.bogus_ips_file = Some(PathBuf::from("bogus.txt"));
        c.resolver.negative_ttl = Duration::ZERO;
    });
    assert!(restart.is_empty());
    assert_eq!(
        live,
        [
            "resolver.mode",
            "resolver.bogus_ips",
            "resolver.bogus_ips_file",
            "resolver.negative_ttl_s"
        ]
    );
    // Another file path is a live change too (the resolver reads the file).
    let a = ok("[resolver]\nbogus_ips_file = \"a.txt\"\n");
    let b = ok("[resolver]\nbogus_ips_file = \"b.txt\"\n");
    assert_eq!(plan(&a, &b).live, ["resolver.bogus_ips_file"]);
    let doh = ok("[[resolver.doh]]\nurl = \"https://dns.example/q\"\n");
    assert_eq!(plan(&Config::default(), &doh).live, ["resolver.doh"]);
}

#[test]
fn observability_keys() {
    let (restart, live) = changes(|c| {
        c.observability.log_level = "debug".to_owned();
        c.observability.sample_ratio = 0.5;
    });
    assert!(restart.is_empty());
    assert_eq!(
        live,
        ["observability.log_level", "observability.sample_ratio"]
    );

    let (restart, live) = changes(|c| {
        let o = &mut c.observability;
        o.log_format = LogFormat::Json;
        o.progress_interval = Duration::from_secs(1);
        o.otlp_endpoint = url::Url::parse("http://127.0.0.1:4317").ok();
        o.service_name = "other".to_owned();
        o.metrics_listen = None;
    });
    assert!(live.is_empty());
    assert_eq!(
        restart,
        [
            "observability.log_format",
            "observability.progress_interval_s",
            "observability.otlp_endpoint",
            "observability.service_name",
            "observability.metrics_listen",
        ]
    );
}

#[test]
fn proxy_keys_are_live_while_chains_stay_configured() {
    // Without chains on either side.
    let (restart, live) = changes(|c| {
        c.proxy.select = SelectPolicy::Sticky;
        c.proxy.breaker_failures = 9;
    });
    assert!(restart.is_empty());
    assert_eq!(live, ["proxy.select", "proxy.breaker_failures"]);

    // With chains on both sides, changing them is live.
    let old = chain_config(1080);
    let new = chain_config(1081);
    let p = plan(&old, &new);
    assert_eq!(
        (p.restart_only.as_slice(), p.live.as_slice()),
        (&[][..], &["proxy.chains"][..])
    );
    let two = ok(
        "[proxy]\ndefault = [\"eu\", \"us\"]\n[proxy.chains.eu]\nhops = [\"socks5://127.0.0.1:1080\"]\n\
         [proxy.chains.us]\nhops = [\"socks5://127.0.0.1:1082\"]\n",
    );
    let p = plan(&old, &two);
    assert!(!p.rejected());
    assert_eq!(p.live, ["proxy.default", "proxy.chains"]);

    // Adding the first chain or removing the last one needs a restart.
    for (from, to) in [(Config::default(), old.clone()), (old, Config::default())] {
        let p = plan(&from, &to);
        assert_eq!(p.restart_only, ["proxy.chains"]);
        assert!(p.live.is_empty() && p.rejected());
    }
    let rules = ok("[proxy.chains.eu]\nhops = [\"socks5://127.0.0.1:1080\"]\n\
                    [[proxy.rules]]\nhosts = [\"*.example\"]\nuse = \"eu\"\n");
    let p = plan(&Config::default(), &rules);
    assert_eq!(p.restart_only, ["proxy.chains"]);
    assert_eq!(p.live, ["proxy.rules"]);
}

#[test]
fn messages() {
    let (restart, live) = changes(|c| {
        c.politeness.min_delay = Duration::ZERO;
        c.frontier.data_dir = PathBuf::from("x");
        c.observability.metrics_listen = None;
    });
    let p = ReloadPlan {
        restart_only: restart,
        live,
    };
    assert!(p.rejected() && !p.is_noop());
    assert_eq!(p.live, ["politeness.min_delay_ms"]);
    assert_eq!(
        p.message(),
        "reload rejected: frontier.data_dir, observability.metrics_listen cannot change while running (restart to apply)"
    );

    let (restart, live) = changes(|c| {
        c.politeness.min_delay = Duration::ZERO;
        c.observability.log_level = "warn".to_owned();
    });
    let p = ReloadPlan {
        restart_only: restart,
        live,
    };
    assert!(!p.rejected() && !p.is_noop());
    assert_eq!(
        p.message(),
        "reload applies politeness.min_delay_ms, observability.log_level"
    );
}
