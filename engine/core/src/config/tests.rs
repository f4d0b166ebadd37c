//! Tests of the configuration loader: defaults, every key, the key list and the documented
//! root `config.toml`, file loading; shared helpers for `error_tests`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::*;

pub(super) const ORIGIN: &str = "test.toml";

pub(super) fn errors(text: &str) -> Vec<ConfigError> {
    match Config::from_str(text, ORIGIN) {
        Ok(c) => panic!("expected errors, got {c:?}"),
        Err(e) => e.into_vec(),
    }
}

/// The only error of `text`, as `line:col: message`.
pub(super) fn only_error(text: &str) -> (usize, usize, String, ErrorKind) {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:?}");
    let e = &errs[0];
    assert_eq!(e.origin, ORIGIN);
    (e.line, e.column, e.message.clone(), e.kind)
}

pub(super) fn ok(text: &str) -> Config {
    match Config::from_str(text, ORIGIN) {
        Ok(c) => c,
        Err(e) => panic!("unexpected errors:\n{e}"),
    }
}

#[test]
fn empty_file_gives_all_defaults() {
    let c = ok("");
    assert_eq!(c, Config::default());
    assert_eq!(ok("# only a comment\n\n[crawl]\n"), Config::default());
    assert!(c.crawl.seeds.is_empty());
    assert_eq!(c.crawl.max_pages, 0);
    assert_eq!(c.crawl.max_depth, 16);
    assert_eq!(c.crawl.scope, ScopeMode::Host);
    assert_eq!(c.crawl.user_agent, DEFAULT_USER_AGENT);
    assert!(c.crawl.respect_robots && c.crawl.follow_sitemaps);
    assert_eq!(c.crawl.robots_cache, Duration::from_secs(86_400));
    assert_eq!(c.crawl.robots_retry, Duration::from_secs(30));
    assert_eq!(c.crawl.robots_max_attempts, 5);
    assert_eq!(c.crawl.sitemap_max_bytes, 52_428_800);
    assert_eq!(c.crawl.sitemap_max_depth, 2);
    assert_eq!(c.crawl.sitemap_max_urls, 50_000);
    assert_eq!(c.politeness.per_host_concurrency, 1);
    assert_eq!(c.politeness.min_delay, Duration::from_secs(1));
    assert_eq!(c.politeness.backoff_max, Duration::from_secs(600));
    assert_eq!(c.fetch.concurrency, 64);
    assert_eq!(c.fetch.request_timeout, Duration::from_secs(120));
    assert_eq!(c.fetch.max_body_bytes, 10_485_760);
    assert_eq!(c.fetch.pool_max_idle_per_host, 8);
    assert_eq!(c.frontier.data_dir, PathBuf::from("crawl-data"));
    assert_eq!(c.frontier.commit_interval, Duration::from_millis(50));
    assert_eq!(c.frontier.commit_max_ops, 4096);
    assert_eq!(c.output.jsonl, PathBuf::from("crawl.jsonl"));
    assert!(!c.security.allow_private_networks);
    assert_eq!(c.resolver, ResolverConfig::default());
    assert_eq!(c.resolver.mode, ResolverMode::Detect);
    assert_eq!(c.resolver.hold_on, Duration::from_millis(300));
    assert_eq!(c.resolver.timeout, Duration::from_secs(2));
    assert_eq!(c.resolver.attempts, 2);
    assert_eq!(c.resolver.min_ttl, Duration::from_secs(30));
    assert_eq!(c.resolver.max_ttl, Duration::from_secs(86_400));
    assert_eq!(c.resolver.negative_ttl, Duration::from_secs(60));
    assert!(c.resolver.hijack_probe);
    assert!(c.resolver.nameservers.is_empty() && c.resolver.hosts.is_empty());
    assert!(c.resolver.bogus_ips.is_empty() && c.resolver.doh.is_empty());
    assert_eq!(c.resolver.bogus_ips_file, None);
    assert_eq!(c.supervisor.max_attempts, 3);
    assert_eq!(c.supervisor.restart_window, Duration::from_secs(60));
    assert_eq!(c.supervisor.parse_budget, Duration::from_millis(10_000));
    assert_eq!(c.parser.threads, 0);
    assert_eq!(c.parser.max_links_per_page, 10_000);
    assert_eq!(c.parser.inline_max_bytes, 65_536);
    assert!(!c.crawl.embeds);
    assert_eq!(c.crawl.embeds_scope, ScopeMode::Any);
    assert_eq!(c.shutdown.grace, Duration::from_secs(10));
    assert_eq!(c.observability.log_level, "info");
    assert_eq!(c.observability.log_format, LogFormat::Auto);
    assert_eq!(c.observability.progress_interval, Duration::from_secs(10));
    assert_eq!(c.observability.otlp_endpoint, None);
    assert_eq!(c.observability.service_name, "crawl-engine");
    assert_eq!(c.observability.sample_ratio, 1.0);
    let listen = c.observability.metrics_listen.expect("on by default");
    assert_eq!(listen.to_string(), "127.0.0.1:9464");
    assert!(listen.ip().is_loopback());
    assert_eq!(c.proxy, ProxyConfig::default());
    assert_eq!(c.proxy.default, [DIRECT]);
    assert_eq!(c.proxy.select, SelectPolicy::RoundRobin);
    assert!(!c.proxy.fallback_direct && !c.proxy.enabled());
    assert_eq!(c.proxy.connect_timeout, Duration::from_secs(5));
    assert_eq!(c.proxy.greeting_timeout, Duration::from_secs(3));
    assert_eq!(c.proxy.auth_timeout, Duration::from_secs(3));
    assert_eq!(c.proxy.connect_reply_timeout, Duration::from_secs(10));
    assert_eq!(c.proxy.chain_timeout, Duration::from_secs(20));
    assert_eq!(c.proxy.breaker_failures, 3);
    assert_eq!(c.proxy.breaker_cooldown, Duration::from_secs(30));
    assert!(c.proxy.chains.is_empty() && c.proxy.rules.is_empty());
}

/// Every key set to a non-default value.
pub(super) const ALL_KEYS: &str = r#"
[crawl]
seeds = ["https://example.com/", "http://example.org/a?b=1"]
max_pages = 1_000
max_depth = 3
scope = "domain"
include = ["^https://example\\.com/"]
exclude = ['\.pdf$', "/private/"]
user_agent = "testbot/1.0"
respect_robots = false
robots_cache_s = 600
robots_retry_ms = 250
robots_max_attempts = 2
follow_sitemaps = false
sitemap_max_bytes = 0x400
sitemap_max_depth = 1
sitemap_max_urls = 10
embeds = true
embeds_scope = "domain"

[traps]
max_urls_per_host = 500
max_urls_per_pattern = 50
max_repeated_segments = 2
max_path_bytes = 300
max_query_bytes = 200
max_query_params = 8
calendar = false
calendar_past_years = 10
calendar_future_years = 1
strip_params = ["SessionID", "ref_*"]

[recrawl]
enabled = true
interval_s = 3600
min_interval_s = 30
max_interval_s = 604800
adaptive = false
inc_rate = 0.5
dec_rate = 0.25
host_revisits_per_minute = 20

[[recrawl.rules]]
pattern = '^https://example\.com/news/'
interval_s = 10
adaptive = true

[[recrawl.rules]]
pattern = '\.pdf$'
interval_s = 604800

[politeness]
per_host_concurrency = 2
min_delay_ms = 5
honour_crawl_delay = false
max_crawl_delay_ms = 7
backoff_base_ms = 11
backoff_max_ms = 13

[fetch]
concurrency = 8
fetchers = 2
connect_timeout_ms = 100
header_timeout_ms = 200
idle_timeout_ms = 300
request_timeout_ms = 400
max_body_bytes = 500
max_redirects = 0
http2 = false
max_retries = 1
retry_base_ms = 9
pool_idle_timeout_ms = 0
pool_max_idle_per_host = 0
credentials = [{ origin = "https://intranet.example:8443", authorization = "Bearer t0ken", cookie = "sid=1" }]

[frontier]
data_dir = "/var/lib/crawl"
commit_interval_ms = 1
commit_max_ops = 16
host_window = 8
backend = "redis"

[frontier.redis]
urls = ["redis://:pw@10.0.0.5:6380/3", "redis://10.0.0.6:6380/3"]
cluster = true
crawl = "news"
shards = 64
lease_ms = 5000
max_outage_ms = 60000
recrawl_after_s = 86400

[output]
jsonl = "out/records.jsonl"
warc_dir = "out/warc"
warc_max_bytes = 104857600
warc_prefix = "news-crawl"
warc_dedup = false
sink_max_lag = 5000
sink_max_lag_bytes = 2097152
sink_finish_s = 7

[security]
allow_private_networks = true
allow_cidrs = ["10.1.0.0/16", "fd00:1::/32"]

[resolver]
nameservers = ["192.0.2.53:53", "[2001:db8::53]:5353", "198.51.100.53"]
mode = "doh-first"
hosts = { "Intranet.Example." = "192.0.2.10", "dual.example" = ["192.0.2.11", "2001:db8::11"] }
bogus_ips = ["203.0.113.0/24", "2001:db8:bad::1"]
bogus_ips_file = "bogus.txt"
hold_on_ms = 0
timeout_ms = 500
attempts = 1
min_ttl_s = 0
max_ttl_s = 600
negative_ttl_s = 5
hijack_probe = false

[[resolver.doh]]
url = "https://dns.example/dns-query"

[[resolver.doh]]
url = "https://127.0.0.1:8443/q"
bootstrap = "127.0.0.1"
ca_file = "certs/ca.pem"

[supervisor]
max_attempts = 1
backoff_base_ms = 1
backoff_max_ms = 2
max_restarts = 0
restart_window_s = 5
parse_budget_ms = 250

[parser]
threads = 3
max_links_per_page = 50
inline_max_bytes = 0

[shutdown]
grace_ms = 0

[observability]
log_level = "warn,crawl_core=debug,crawl_actors::fetcher=trace"
log_format = "json"
progress_interval_s = 1
otlp_endpoint = "http://127.0.0.1:4317"
otlp_protocol = "grpc"
otlp_compression = "gzip"
service_name = "crawl-test"
sample_ratio = 0.25
metrics_listen = "[::1]:0"

[proxy]
default = ["eu", "direct"]
select = "sticky"
fallback_direct = true
connect_timeout_ms = 1
greeting_timeout_ms = 2
auth_timeout_ms = 3
connect_reply_timeout_ms = 4
chain_timeout_ms = 5
breaker_failures = 1
breaker_cooldown_ms = 0

[proxy.chains.eu]
hops = ["socks5://127.0.0.1:1080"]
resolve = "local"

[[proxy.rules]]
hosts = ["*.example.org"]
use = "eu"

[api]
listen = "0.0.0.0:9465"
token_file = "/etc/crawl/api.token"
cert_file = "/etc/crawl/api.crt"
key_file = "/etc/crawl/api.key"
max_body_bytes = 4096

[[api.alert_actions]]
alert = "Crawl429Storm"
action = "pause_host"
host_label = "host_group"
labels = { severity = "warning" }
"#;

#[test]
fn every_key_is_parsed() {
    let c = ok(ALL_KEYS);
    let ms = Duration::from_millis;
    let k = &c.crawl;
    let seeds: Vec<&str> = k.seeds.iter().map(url::Url::as_str).collect();
    assert_eq!(seeds, ["https://example.com/", "http://example.org/a?b=1"]);
    assert_eq!(
        (k.max_pages, k.max_depth, k.scope),
        (1000, 3, ScopeMode::Domain)
    );
    assert_eq!(k.include.len(), 1);
    assert!(k.include[0].is_match("https://example.com/x"));
    let excl: Vec<&str> = k.exclude.iter().map(regex::Regex::as_str).collect();
    assert_eq!(excl, [r"\.pdf$", "/private/"]);
    assert_eq!(k.user_agent, "testbot/1.0");
    let r = &c.recrawl;
    assert!(r.enabled && !r.adaptive);
    assert_eq!(
        (
            r.interval.as_secs(),
            r.min_interval.as_secs(),
            r.max_interval.as_secs()
        ),
        (3600, 30, 604_800)
    );
    assert_eq!(
        (r.inc_rate, r.dec_rate, r.host_revisits_per_minute),
        (0.5, 0.25, 20)
    );
    let rules: Vec<(&str, u64, Option<bool>)> = r
        .rules
        .iter()
        .map(|x| (x.pattern.as_str(), x.interval.as_secs(), x.adaptive))
        .collect();
    assert_eq!(
        rules,
        [
            (r"^https://example\.com/news/", 10, Some(true)),
            (r"\.pdf$", 604_800, None)
        ]
    );
    assert!(!k.respect_robots && !k.follow_sitemaps);
    assert_eq!(
        c.traps,
        TrapsConfig {
            max_urls_per_host: 500,
            max_urls_per_pattern: 50,
            max_repeated_segments: 2,
            max_path_bytes: 300,
            max_query_bytes: 200,
            max_query_params: 8,
            calendar: false,
            calendar_past_years: 10,
            calendar_future_years: 1,
            strip_params: vec!["sessionid".to_owned(), "ref_*".to_owned()],
        }
    );
    assert_eq!(k.robots_cache, Duration::from_secs(600));
    assert_eq!((k.robots_retry, k.robots_max_attempts), (ms(250), 2));
    assert_eq!(k.sitemap_max_bytes, 1024);
    assert_eq!((k.sitemap_max_depth, k.sitemap_max_urls), (1, 10));
    assert!(k.embeds);
    assert_eq!(k.embeds_scope, ScopeMode::Domain);

    let p = &c.politeness;
    assert_eq!(
        p,
        &PolitenessConfig {
            per_host_concurrency: 2,
            min_delay: ms(5),
            honour_crawl_delay: false,
            max_crawl_delay: ms(7),
            backoff_base: ms(11),
            backoff_max: ms(13),
        }
    );
    assert_eq!(
        c.fetch,
        FetchConfig {
            concurrency: 8,
            fetchers: 2,
            connect_timeout: ms(100),
            header_timeout: ms(200),
            idle_timeout: ms(300),
            request_timeout: ms(400),
            max_body_bytes: 500,
            max_redirects: 0,
            http2: false,
            max_retries: 1,
            retry_base: ms(9),
            pool_idle_timeout: ms(0),
            pool_max_idle_per_host: 0,
            credentials: [Credential::new(
                &url::Url::parse("https://intranet.example:8443").unwrap(),
                Some(Secret::new("Bearer t0ken")),
                Some(Secret::new("sid=1")),
            )
            .unwrap()]
            .into_iter()
            .collect(),
        }
    );
    assert_eq!(
        c.frontier,
        FrontierConfig {
            data_dir: PathBuf::from("/var/lib/crawl"),
            commit_interval: ms(1),
            commit_max_ops: 16,
            host_window: 8,
            backend: crate::config::FrontierBackend::Redis,
            redis: c.frontier.redis.clone(),
        }
    );
    let redis = &c.frontier.redis;
    let urls: Vec<String> = redis.urls.iter().map(ToString::to_string).collect();
    assert_eq!(
        urls,
        ["redis://:***@10.0.0.5:6380/3", "redis://10.0.0.6:6380/3"]
    );
    assert_eq!(redis.urls[0].expose(), "redis://:pw@10.0.0.5:6380/3");
    assert!(redis.cluster);
    assert_eq!(
        (
            redis.crawl.as_str(),
            redis.shards,
            redis.lease,
            redis.max_outage,
            redis.recrawl_after
        ),
        ("news", 64, ms(5000), ms(60_000), ms(86_400_000))
    );
    assert_eq!(c.output.jsonl, PathBuf::from("out/records.jsonl"));
    assert_eq!(c.output.warc_dir, Some(PathBuf::from("out/warc")));
    assert_eq!(
        (
            c.output.warc_max_bytes,
            c.output.warc_prefix.as_str(),
            c.output.warc_dedup
        ),
        (100 << 20, "news-crawl", false)
    );
    assert_eq!(
        (
            c.output.sink_max_lag,
            c.output.sink_max_lag_bytes,
            c.output.sink_finish
        ),
        (5000, 2 << 20, Duration::from_secs(7))
    );
    assert!(c.security.allow_private_networks);
    let blocks: Vec<String> = c
        .security
        .allow_cidrs
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(blocks, ["10.1.0.0/16", "fd00:1::/32"]);
    let r = &c.resolver;
    let ns: Vec<String> = r.nameservers.iter().map(ToString::to_string).collect();
    assert_eq!(
        ns,
        ["192.0.2.53:53", "[2001:db8::53]:5353", "198.51.100.53:53"]
    );
    assert_eq!(r.mode, ResolverMode::DohFirst);
    let hosts: Vec<(String, Vec<String>)> = r
        .hosts
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().map(ToString::to_string).collect()))
        .collect();
    assert_eq!(
        hosts,
        [
            (
                "dual.example".to_owned(),
                vec!["192.0.2.11".to_owned(), "2001:db8::11".to_owned()]
            ),
            ("intranet.example".to_owned(), vec!["192.0.2.10".to_owned()]),
        ]
    );
    assert_eq!(r.bogus_ips, ["203.0.113.0/24", "2001:db8:bad::1"]);
    assert_eq!(r.bogus_ips_file, Some(PathBuf::from("bogus.txt")));
    assert_eq!((r.hold_on, r.timeout, r.attempts), (ms(0), ms(500), 1));
    assert_eq!(
        (r.min_ttl, r.max_ttl, r.negative_ttl),
        (
            Duration::ZERO,
            Duration::from_secs(600),
            Duration::from_secs(5)
        )
    );
    assert!(!r.hijack_probe);
    assert_eq!(
        r.doh,
        [
            DohEndpoint {
                url: url::Url::parse("https://dns.example/dns-query").expect("url"),
                bootstrap: None,
                ca_file: None,
            },
            DohEndpoint {
                url: url::Url::parse("https://127.0.0.1:8443/q").expect("url"),
                bootstrap: Some("127.0.0.1".parse().expect("ip")),
                ca_file: Some(PathBuf::from("certs/ca.pem")),
            },
        ]
    );
    assert_eq!(
        c.supervisor,
        SupervisorConfig {
            max_attempts: 1,
            backoff_base: ms(1),
            backoff_max: ms(2),
            max_restarts: 0,
            restart_window: Duration::from_secs(5),
            parse_budget: Duration::from_millis(250),
        }
    );
    assert_eq!(c.parser.threads, 3);
    assert_eq!(c.parser.max_links_per_page, 50);
    assert_eq!(c.parser.inline_max_bytes, 0);
    assert_eq!(c.shutdown.grace, Duration::ZERO);
    assert_eq!(
        c.observability,
        ObservabilityConfig {
            log_level: "warn,crawl_core=debug,crawl_actors::fetcher=trace".to_owned(),
            log_format: LogFormat::Json,
            progress_interval: Duration::from_secs(1),
            otlp_endpoint: Some(url::Url::parse("http://127.0.0.1:4317").expect("url")),
            otlp_protocol: Some(OtlpProtocol::Grpc),
            otlp_compression: Some(OtlpCompression::Gzip),
            service_name: "crawl-test".to_owned(),
            sample_ratio: 0.25,
            metrics_listen: Some("[::1]:0".parse().expect("addr")),
        }
    );
    let x = &c.proxy;
    assert_eq!(x.default, ["eu", "direct"]);
    assert_eq!(
        (x.select, x.fallback_direct, x.breaker_failures),
        (SelectPolicy::Sticky, true, 1)
    );
    assert_eq!(
        [
            x.connect_timeout,
            x.greeting_timeout,
            x.auth_timeout,
            x.connect_reply_timeout,
            x.chain_timeout,
            x.breaker_cooldown
        ],
        [ms(1), ms(2), ms(3), ms(4), ms(5), ms(0)]
    );
    assert_eq!(x.chains.len(), 1);
    assert_eq!(x.chains["eu"].resolve, ResolveAt::Local);
    assert_eq!(
        x.chains["eu"].hops[0].to_string(),
        "socks5://127.0.0.1:1080"
    );
    assert_eq!(
        x.rules,
        [ProxyRule {
            hosts: vec!["*.example.org".to_owned()],
            use_: vec!["eu".to_owned()],
        }]
    );
}

/// Dotted names of every key in a TOML text (two levels: section.key).
fn dotted_keys_of(text: &str) -> BTreeSet<String> {
    let root = toml::de::DeTable::parse(text).expect("valid toml");
    let mut out = BTreeSet::new();
    for (section, value) in root.get_ref().iter() {
        if let Some(table) = value.get_ref().as_table() {
            for (key, _) in table.iter() {
                out.insert(format!("{}.{}", section.get_ref(), key.get_ref()));
            }
        }
    }
    out
}

#[test]
fn keys_list_matches_schema_and_full_example() {
    let keys = Config::keys();
    assert_eq!(keys, super::keys());
    let set: BTreeSet<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    assert_eq!(set.len(), keys.len(), "duplicate keys in {keys:?}");
    assert_eq!(keys.len(), 122);
    assert!(keys.contains(&"proxy.chains") && keys.contains(&"proxy.rules"));
    assert!(keys.contains(&"resolver.doh") && keys.contains(&"resolver.hosts"));
    assert_eq!(keys[0], "crawl.seeds");
    assert!(keys.contains(&"fetch.connect_timeout_ms"));
    assert!(keys.contains(&"observability.progress_interval_s"));
    assert!(keys.ends_with(&[
        "proxy.chains",
        "proxy.rules",
        "api.listen",
        "api.token_file",
        "api.cert_file",
        "api.key_file",
        "api.max_body_bytes",
        "api.alert_actions"
    ]));
    // The every-key example really covers every key (and nothing else).
    assert_eq!(dotted_keys_of(ALL_KEYS), set);
}

#[test]
fn root_config_toml_parses_and_documents_every_key() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config.toml");
    let text = std::fs::read_to_string(path).expect("read config.toml");
    let present = dotted_keys_of(&text);
    for key in Config::keys() {
        assert!(present.contains(key), "config.toml lacks `{key}`");
        let bare = key.rsplit('.').next().unwrap_or(key);
        // Each key line is preceded by a comment stating its default.
        let lines: Vec<&str> = text.lines().collect();
        let idx = lines
            .iter()
            .position(|l| l.starts_with(&format!("{bare} =")))
            .unwrap_or_else(|| panic!("no line for {key}"));
        assert!(
            idx > 0 && lines[idx - 1].starts_with('#'),
            "{key} has no comment"
        );
    }
    assert_eq!(present.len(), Config::keys().len());
    let comments = text.lines().filter(|l| l.contains("Default:")).count();
    assert!(comments >= Config::keys().len(), "{comments} default notes");

    // The template: the defaults, save what it marks "Template:"; its files beside it.
    let c = Config::from_file(std::path::Path::new(path)).expect("config.toml is valid");
    let mut expected = Config::default();
    expected.crawl.max_pages = 10_000;
    expected.crawl.user_agent =
        "crawl-engine/0.1 (+https://example.com/CHANGE-ME-crawler-contact)".to_owned();
    expected.traps.max_urls_per_host = 100_000;
    expected.traps.max_urls_per_pattern = 10_000;
    expected.fetch.concurrency = 32;
    expected.fetch.request_timeout = Duration::from_millis(60_000);
    expected.observability.sample_ratio = 0.1;
    let base = std::path::Path::new(path).parent().expect("parent");
    expected.frontier.data_dir = base.join("crawl-data");
    expected.output.jsonl = base.join("crawl.jsonl");
    expected.output.warc_dir = Some(base.join("warc"));
    assert_eq!(c, expected);
    let marked = text.lines().filter(|l| l.contains("Template:")).count();
    assert_eq!(marked, 8, "one \"Template:\" note per value that differs");
}

#[test]
fn from_file_resolves_relative_paths_and_reports_io_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crawl.toml");
    std::fs::write(
        &path,
        "[frontier]\ndata_dir = \"state\"\n[output]\njsonl = \"/abs/out.jsonl\"\n",
    )
    .expect("write");
    let c = Config::from_file(&path).expect("valid");
    assert_eq!(c.frontier.data_dir, dir.path().join("state"));
    assert_eq!(c.output.jsonl, PathBuf::from("/abs/out.jsonl"));

    // from_str keeps them as written.
    let c = ok("[frontier]\ndata_dir = \"state\"\n");
    assert_eq!(c.frontier.data_dir, PathBuf::from("state"));

    std::fs::write(&path, "[crawl]\nmax_depth = \"x\"\n").expect("write");
    let err = Config::from_file(&path).expect_err("invalid");
    let origin = path.display().to_string();
    assert_eq!(
        err.to_string(),
        format!("{origin}:2:1: `crawl.max_depth`: expected an integer, found string")
    );

    let missing = dir.path().join("missing.toml");
    let err = Config::from_file(&missing).expect_err("missing");
    assert_eq!(err.len(), 1);
    let e = err.iter().next().expect("one");
    assert_eq!(e.kind, ErrorKind::Io);
    assert_eq!(e.origin, missing.display().to_string());
    assert!(
        e.message.starts_with("cannot read config file: "),
        "{}",
        e.message
    );
}

#[test]
fn add_seed_appends_without_duplicates() {
    let mut c = ok("[crawl]\nseeds = [\"https://a.example/\"]\n");
    c.add_seed(url::Url::parse("https://b.example/").expect("url"));
    c.add_seed(url::Url::parse("https://a.example/").expect("url"));
    let seeds: Vec<&str> = c.crawl.seeds.iter().map(url::Url::as_str).collect();
    assert_eq!(seeds, ["https://a.example/", "https://b.example/"]);
}

#[test]
fn hostile_inputs_never_panic() {
    for text in [
        "\u{feff}[crawl]\n",
        "[crawl]\nseeds = [[\"x\"]]\n",
        "[crawl]\nmax_pages = 0xFFFFFFFFFFFFFFFF\n",
        "[[crawl]]\nseeds = []\n",
        "crawl.seeds.x = 1\n",
        "[crawl]\nrespect_robots = 1979-05-27\n",
        "\0",
        "[observability]\nlog_level = \"[\"\n",
    ] {
        let _ = Config::from_str(text, ORIGIN);
    }
    let errs = errors("[[crawl]]\nseeds = []\n");
    assert_eq!(errs[0].message, "`crawl`: expected a table, found array");
}
