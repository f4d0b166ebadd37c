//! The schema: which keys each section has, their types, bounds and cross-key checks, turning a
//! [`Walker`] over the spanned document into a typed [`Config`]. Field order here is the key
//! order of `Config::keys()`.

use super::api::ApiConfig;
use super::credentials::{self, Credential};
use super::proxy::Secret;
use super::reader::{Section, Walker};
use super::recrawl::{MAX_RECRAWL_INTERVAL_S, RecrawlConfig, RecrawlRule};
use super::redis::{self, FrontierBackend, RedisConfig, RedisUrl};
use super::validate;
use super::value_error::ValueError;
use super::{
    ChainConfig, Config, CrawlConfig, DohEndpoint, FetchConfig, FrontierConfig,
    ObservabilityConfig, OutputConfig, ParserConfig, PolitenessConfig, ProxyConfig, ProxyRule,
    ResolverConfig, SecurityConfig, ShutdownConfig, SupervisorConfig, TrapsConfig,
};
use crate::control::alerts::{ActionKind, AlertAction};

/// Builds the config from the document, recording every problem in the walker's sink.
/// Bad or missing values take their defaults, so the result is only meaningful without errors.
pub(super) fn build(w: &mut Walker<'_, '_, '_>) -> Config {
    let crawl = crawl(&mut w.section("crawl"));
    let traps = traps(&mut w.section("traps"));
    let recrawl = recrawl(&mut w.section("recrawl"));
    let politeness = politeness(&mut w.section("politeness"));
    let fetch = fetch(&mut w.section("fetch"));
    let frontier = frontier(&mut w.section("frontier"));
    let output = output(&mut w.section("output"));
    let security = security(&mut w.section("security"));
    let resolver = resolver(&mut w.section("resolver"));
    let supervisor = supervisor(&mut w.section("supervisor"));
    let parser = parser(&mut w.section("parser"));
    let shutdown = shutdown(&mut w.section("shutdown"));
    let observability = observability(&mut w.section("observability"));
    let proxy = proxy(&mut w.section("proxy"));
    let api = api(&mut w.section("api"), !resolver.doh.is_empty());
    let warc = output.warc_dir.is_some();
    let mut names: Vec<String> = Vec::new();
    let sinks = w.tables("sinks", |t| {
        let c = super::sinks::sink(t, warc)?;
        if names.contains(&c.name) {
            let msg = format!(
                "another sink is named `{}`: give each a `name` of its own",
                c.name
            );
            t.invalid("name", &msg);
            return None;
        }
        names.push(c.name.clone());
        Some(c)
    });
    Config {
        crawl,
        traps,
        recrawl,
        politeness,
        fetch,
        frontier,
        output,
        security,
        resolver,
        supervisor,
        parser,
        shutdown,
        observability,
        proxy,
        api,
        sinks,
    }
}

/// Most years a calendar window may reach from the current year.
const MAX_CALENDAR_YEARS: u32 = 1_000;

fn traps(s: &mut Section<'_, '_, '_, '_>) -> TrapsConfig {
    let d = TrapsConfig::default();
    let mut c = TrapsConfig {
        max_urls_per_host: s.u64("max_urls_per_host", d.max_urls_per_host, 0),
        max_urls_per_pattern: s.u64("max_urls_per_pattern", d.max_urls_per_pattern, 0),
        max_repeated_segments: s.u32("max_repeated_segments", d.max_repeated_segments, 0),
        max_path_bytes: s.usize("max_path_bytes", d.max_path_bytes, 0),
        max_query_bytes: s.usize("max_query_bytes", d.max_query_bytes, 0),
        max_query_params: s.usize("max_query_params", d.max_query_params, 0),
        calendar: s.bool("calendar", d.calendar),
        calendar_past_years: s.u32("calendar_past_years", d.calendar_past_years, 0),
        calendar_future_years: s.u32("calendar_future_years", d.calendar_future_years, 0),
        strip_params: Vec::new(),
    };
    // Absent: the default list; `[]`: none.
    let strip_given = s.has("strip_params");
    let strip = s.list("strip_params", validate::strip_param);
    c.strip_params = if strip_given { strip } else { d.strip_params };
    for (key, years) in [
        ("calendar_past_years", c.calendar_past_years),
        ("calendar_future_years", c.calendar_future_years),
    ] {
        if years > MAX_CALENDAR_YEARS {
            s.invalid(key, &format!("at most {MAX_CALENDAR_YEARS} years"));
        }
    }
    c
}

fn recrawl(s: &mut Section<'_, '_, '_, '_>) -> RecrawlConfig {
    let d = RecrawlConfig::default();
    let max = MAX_RECRAWL_INTERVAL_S;
    let interval =
        |s: &mut Section<'_, '_, '_, '_>, key: &'static str, default: std::time::Duration| {
            std::time::Duration::from_secs(s.int(key, default.as_secs(), 1, max))
        };
    let mut c = RecrawlConfig {
        enabled: s.bool("enabled", d.enabled),
        interval: interval(s, "interval_s", d.interval),
        min_interval: interval(s, "min_interval_s", d.min_interval),
        max_interval: interval(s, "max_interval_s", d.max_interval),
        adaptive: s.bool("adaptive", d.adaptive),
        inc_rate: s.float("inc_rate", d.inc_rate, 0.0, 1.0),
        dec_rate: s.float("dec_rate", d.dec_rate, 0.0, 1.0),
        host_revisits_per_minute: s.u32("host_revisits_per_minute", d.host_revisits_per_minute, 0),
        rules: Vec::new(),
    };
    // The rates are open intervals: 0 would never adapt, 1 would double or zero an interval at once.
    for (key, rate) in [("inc_rate", c.inc_rate), ("dec_rate", c.dec_rate)] {
        if (rate <= 0.0 || rate >= 1.0) && !s.rejected(key) {
            s.invalid(key, &format!("must be above 0 and below 1, found {rate}"));
        }
    }
    let (min_s, max_s) = (c.min_interval.as_secs(), c.max_interval.as_secs());
    s.check_not_above(
        "min_interval_s",
        min_s.into(),
        "interval_s",
        c.interval.as_secs().into(),
    );
    s.check_not_above(
        "interval_s",
        c.interval.as_secs().into(),
        "max_interval_s",
        max_s.into(),
    );
    s.check_not_above(
        "min_interval_s",
        min_s.into(),
        "max_interval_s",
        max_s.into(),
    );
    let max_given = !s.rejected("max_interval_s");
    c.rules = s.tables("rules", |r| recrawl_rule(r, max_given.then_some(max_s)));
    c
}

/// One `[[recrawl.rules]]` table: `pattern` and `interval_s` are required; `interval_s` may be below
/// `recrawl.min_interval_s` but not above `recrawl.max_interval_s` (`max_s`, None when that was rejected).
fn recrawl_rule(s: &mut Section<'_, '_, '_, '_>, max_s: Option<u64>) -> Option<RecrawlRule> {
    let has_pattern = s.has("pattern");
    let has_interval = s.has("interval_s");
    let pattern = s.string("pattern", None, |v| validate::regex(v).map(Some));
    let interval_s = s.int("interval_s", 0, 1, MAX_RECRAWL_INTERVAL_S);
    let adaptive_given = s.has("adaptive");
    let adaptive = s.bool("adaptive", false);
    if !has_pattern {
        s.missing("pattern");
    }
    if !has_interval {
        s.missing("interval_s");
    } else if let Some(max) = max_s.filter(|max| interval_s > *max && !s.rejected("interval_s")) {
        s.invalid(
            "interval_s",
            &format!("{interval_s} is above `recrawl.max_interval_s` ({max})"),
        );
        return None;
    }
    if s.rejected("interval_s") {
        return None;
    }
    Some(RecrawlRule {
        pattern: pattern?,
        interval: std::time::Duration::from_secs(interval_s),
        adaptive: adaptive_given.then_some(adaptive),
    })
}

fn crawl(s: &mut Section<'_, '_, '_, '_>) -> CrawlConfig {
    let d = CrawlConfig::default();
    CrawlConfig {
        seeds: s.list("seeds", validate::seed_url),
        max_pages: s.u64("max_pages", d.max_pages, 0),
        max_depth: s.u32("max_depth", d.max_depth, 0),
        scope: s.string("scope", d.scope, validate::scope),
        include: s.list("include", validate::regex),
        exclude: s.list("exclude", validate::regex),
        user_agent: s.string("user_agent", d.user_agent, validate::user_agent),
        respect_robots: s.bool("respect_robots", d.respect_robots),
        robots_cache: s.secs("robots_cache_s", d.robots_cache, 0),
        robots_retry: s.millis("robots_retry_ms", d.robots_retry, 1),
        robots_max_attempts: s.u32("robots_max_attempts", d.robots_max_attempts, 1),
        follow_sitemaps: s.bool("follow_sitemaps", d.follow_sitemaps),
        sitemap_max_bytes: s.u64("sitemap_max_bytes", d.sitemap_max_bytes, 1),
        sitemap_max_depth: s.u32("sitemap_max_depth", d.sitemap_max_depth, 0),
        sitemap_max_urls: s.usize("sitemap_max_urls", d.sitemap_max_urls, 1),
        embeds: s.bool("embeds", d.embeds),
        embeds_scope: s.string("embeds_scope", d.embeds_scope, validate::scope),
    }
}

fn politeness(s: &mut Section<'_, '_, '_, '_>) -> PolitenessConfig {
    let d = PolitenessConfig::default();
    let c = PolitenessConfig {
        per_host_concurrency: s.u32("per_host_concurrency", d.per_host_concurrency, 1),
        min_delay: s.millis("min_delay_ms", d.min_delay, 0),
        honour_crawl_delay: s.bool("honour_crawl_delay", d.honour_crawl_delay),
        max_crawl_delay: s.millis("max_crawl_delay_ms", d.max_crawl_delay, 0),
        backoff_base: s.millis("backoff_base_ms", d.backoff_base, 0),
        backoff_max: s.millis("backoff_max_ms", d.backoff_max, 0),
    };
    s.check_not_above(
        "backoff_base_ms",
        c.backoff_base.as_millis(),
        "backoff_max_ms",
        c.backoff_max.as_millis(),
    );
    c
}

fn fetch(s: &mut Section<'_, '_, '_, '_>) -> FetchConfig {
    let d = FetchConfig::default();
    let mut c = FetchConfig {
        concurrency: s.u32("concurrency", d.concurrency, 1),
        fetchers: s.u32("fetchers", d.fetchers, 0),
        connect_timeout: s.millis("connect_timeout_ms", d.connect_timeout, 1),
        header_timeout: s.millis("header_timeout_ms", d.header_timeout, 1),
        idle_timeout: s.millis("idle_timeout_ms", d.idle_timeout, 1),
        request_timeout: s.millis("request_timeout_ms", d.request_timeout, 1),
        max_body_bytes: s.u64("max_body_bytes", d.max_body_bytes, 1),
        max_redirects: s.u32("max_redirects", d.max_redirects, 0),
        http2: s.bool("http2", d.http2),
        max_retries: s.u32("max_retries", d.max_retries, 0),
        retry_base: s.millis("retry_base_ms", d.retry_base, 0),
        pool_idle_timeout: s.millis("pool_idle_timeout_ms", d.pool_idle_timeout, 0),
        pool_max_idle_per_host: s.usize("pool_max_idle_per_host", d.pool_max_idle_per_host, 0),
        credentials: d.credentials,
    };
    let mut seen: Vec<(url::Origin, usize)> = Vec::new();
    let mut index = 0;
    c.credentials = s
        .tables("credentials", |t| {
            let i = index;
            index += 1;
            credential(t, i, &mut seen)
        })
        .into_iter()
        .collect();
    // Phase timeouts left unset follow a shorter request timeout: setting `request_timeout_ms` alone is enough.
    for (key, t) in [
        ("connect_timeout_ms", &mut c.connect_timeout),
        ("header_timeout_ms", &mut c.header_timeout),
        ("idle_timeout_ms", &mut c.idle_timeout),
    ] {
        if !s.has(key) {
            *t = (*t).min(c.request_timeout);
        }
    }
    let request = c.request_timeout.as_millis();
    s.check_not_above(
        "connect_timeout_ms",
        c.connect_timeout.as_millis(),
        "request_timeout_ms",
        request,
    );
    s.check_not_above(
        "header_timeout_ms",
        c.header_timeout.as_millis(),
        "request_timeout_ms",
        request,
    );
    c
}

/// One `[[fetch.credentials]]` table (the `i`th): `origin` and at least one of `authorization` and `cookie`; an
/// origin given twice is an error at the second. Messages never show a value.
fn credential(
    s: &mut Section<'_, '_, '_, '_>,
    i: usize,
    seen: &mut Vec<(url::Origin, usize)>,
) -> Option<Credential> {
    let present = s.has("origin");
    let origin = s.string("origin", None, |v| credentials::origin(v).map(Some));
    let authorization = s.string("authorization", None, |v| {
        credentials::header_secret(v).map(Some)
    });
    let cookie = s.string("cookie", None, |v| credentials::header_secret(v).map(Some));
    if !present {
        s.missing("origin");
    }
    if !s.has("authorization") && !s.has("cookie") {
        s.invalid("authorization", "needed unless `cookie` is given");
    }
    let c = Credential::new(&origin?, authorization, cookie)?;
    if let Some((_, first)) = seen.iter().find(|(o, _)| o == c.origin()) {
        let msg = format!(
            "origin `{}` is already given in `fetch.credentials[{first}]`",
            c.origin_text()
        );
        s.invalid("origin", &msg);
        return None;
    }
    seen.push((c.origin().clone(), i));
    Some(c)
}

fn frontier(s: &mut Section<'_, '_, '_, '_>) -> FrontierConfig {
    let d = FrontierConfig::default();
    let c = FrontierConfig {
        data_dir: s.string("data_dir", d.data_dir, validate::path),
        commit_interval: s.millis("commit_interval_ms", d.commit_interval, 1),
        commit_max_ops: s.usize("commit_max_ops", d.commit_max_ops, 1),
        host_window: s.usize("host_window", d.host_window, 1),
        backend: s.string("backend", d.backend, redis::backend),
        redis: s.table("redis", redis_section).unwrap_or_default(),
    };
    if c.backend == FrontierBackend::Redis
        && c.redis.urls.is_empty()
        && c.redis.sentinels.is_empty()
        && !s.rejected("redis")
        && !s.rejected("backend")
    {
        s.invalid(
            "backend",
            "`backend = \"redis\"` needs `[frontier.redis]` with at least one URL in `urls` (or `sentinels` \
             with `master`)",
        );
    }
    c
}

/// `[frontier.redis]`.
fn redis_section(s: &mut Section<'_, '_, '_, '_>) -> Option<RedisConfig> {
    let d = RedisConfig::default();
    let ack_given = s.has("replicas_ack");
    let ack = s.u32("replicas_ack", 0, 0);
    let c = RedisConfig {
        urls: s.list("urls", redis::redis_url),
        cluster: s.bool("cluster", d.cluster),
        crawl: s.string("crawl", d.crawl, redis::crawl_name),
        shards: s.u32("shards", d.shards, 1),
        lease: s.millis("lease_ms", d.lease, 200),
        max_outage: s.millis("max_outage_ms", d.max_outage, 0),
        recrawl_after: std::time::Duration::from_secs(s.u64("recrawl_after_s", 0, 0)),
        sentinels: s.list("sentinels", redis::sentinel_url),
        master: s.string("master", None, |v| redis::master_name(v).map(Some)),
        sentinel_password: s.string("sentinel_password", None, |v| Ok(Some(Secret::new(v)))),
        password: s.string("password", None, |v| Ok(Some(Secret::new(v)))),
        replicas_ack: ack_given.then_some(ack),
        replicas_ack_timeout: s.millis("replicas_ack_timeout_ms", d.replicas_ack_timeout, 1),
    };
    sentinel_topology(s, &c);
    if c.shards > 16_384 {
        s.invalid("shards", "at most 16384 shards");
    }
    if c.cluster && c.urls.iter().any(RedisUrl::is_unix) {
        s.invalid(
            "urls",
            "a cluster is reached over TCP: unix socket URLs are not allowed with `cluster = true`",
        );
    }
    Some(c)
}

/// `sentinels` and `urls` exclude each other; `master` goes with `sentinels`, and so do their passwords.
fn sentinel_topology(s: &mut Section<'_, '_, '_, '_>, c: &RedisConfig) {
    let sentinels = s.has("sentinels");
    if sentinels && (!c.urls.is_empty() || s.rejected("urls")) {
        s.invalid(
            "sentinels",
            "give either `urls` (the server or cluster) or `sentinels` (which name the master), not both",
        );
    }
    if sentinels && c.cluster {
        s.invalid(
            "sentinels",
            "`cluster = true` finds its masters itself: `sentinels` are for one master with replicas",
        );
    }
    if sentinels && c.master.is_none() && !s.rejected("master") {
        s.invalid(
            "master",
            "needed with `sentinels`: the name the sentinels monitor the master under",
        );
    }
    for key in ["master", "sentinel_password", "password"] {
        if !sentinels && s.has(key) {
            s.invalid(key, "only with `sentinels`");
        }
    }
    if s.has("sentinels") && c.sentinels.is_empty() && !s.rejected("sentinels") {
        s.invalid("sentinels", "at least one sentinel URL");
    }
}

fn output(s: &mut Section<'_, '_, '_, '_>) -> OutputConfig {
    let d = OutputConfig::default();
    OutputConfig {
        jsonl: s.string("jsonl", d.jsonl, validate::path),
        // "" = no archive, so that the documented default can be written out.
        warc_dir: s.string("warc_dir", None, |v| {
            if v.is_empty() {
                Ok(None)
            } else {
                validate::path(v).map(Some)
            }
        }),
        warc_max_bytes: s.u64("warc_max_bytes", d.warc_max_bytes, 1 << 20),
        warc_prefix: s.string("warc_prefix", d.warc_prefix, validate::warc_prefix),
        warc_dedup: s.bool("warc_dedup", d.warc_dedup),
        sink_max_lag: s.u64("sink_max_lag", d.sink_max_lag, 1),
        sink_max_lag_bytes: s.u64("sink_max_lag_bytes", d.sink_max_lag_bytes, 1 << 20),
        sink_finish: s.secs("sink_finish_s", d.sink_finish, 0),
    }
}

fn security(s: &mut Section<'_, '_, '_, '_>) -> SecurityConfig {
    let d = SecurityConfig::default();
    SecurityConfig {
        allow_private_networks: s.bool("allow_private_networks", d.allow_private_networks),
        allow_cidrs: s.list("allow_cidrs", |v| {
            v.parse::<crate::netguard::Cidr>().map_err(ValueError::from)
        }),
    }
}

fn resolver(s: &mut Section<'_, '_, '_, '_>) -> ResolverConfig {
    let d = ResolverConfig::default();
    let c = ResolverConfig {
        nameservers: s.list("nameservers", validate::nameserver),
        mode: s.string("mode", d.mode, validate::resolver_mode),
        hosts: s.string_map("hosts", validate::host_name, validate::ip),
        bogus_ips: s.list("bogus_ips", validate::ip_or_cidr),
        bogus_ips_file: s.string("bogus_ips_file", d.bogus_ips_file, |v| {
            // "" = none, so that the documented default can be written out.
            if v.is_empty() {
                Ok(None)
            } else {
                validate::path(v).map(Some)
            }
        }),
        hold_on: s.millis("hold_on_ms", d.hold_on, 0),
        timeout: s.millis("timeout_ms", d.timeout, 1),
        attempts: s.u32("attempts", d.attempts, 1),
        min_ttl: s.secs("min_ttl_s", d.min_ttl, 0),
        max_ttl: s.secs("max_ttl_s", d.max_ttl, 0),
        negative_ttl: s.secs("negative_ttl_s", d.negative_ttl, 0),
        hijack_probe: s.bool("hijack_probe", d.hijack_probe),
        doh: s.tables("doh", doh_endpoint),
    };
    s.check_not_above(
        "min_ttl_s",
        c.min_ttl.as_secs().into(),
        "max_ttl_s",
        c.max_ttl.as_secs().into(),
    );
    if c.mode.needs_doh() && c.doh.is_empty() && !s.rejected("mode") && !s.rejected("doh") {
        let msg = format!(
            "mode `{}` needs at least one `[[resolver.doh]]` endpoint",
            c.mode
        );
        s.invalid("mode", &msg);
    }
    c
}

/// One `[[resolver.doh]]` table; `None` when its URL is missing or bad.
fn doh_endpoint(s: &mut Section<'_, '_, '_, '_>) -> Option<DohEndpoint> {
    let present = s.has("url");
    let url = s.string("url", None, |v| validate::doh_url(v).map(Some));
    let bootstrap = s.string("bootstrap", None, |v| validate::ip(v).map(Some));
    let ca_file = s.string("ca_file", None, |v| validate::path(v).map(Some));
    if !present {
        s.missing("url");
    }
    Some(DohEndpoint {
        url: url?,
        bootstrap,
        ca_file,
    })
}

fn supervisor(s: &mut Section<'_, '_, '_, '_>) -> SupervisorConfig {
    let d = SupervisorConfig::default();
    let c = SupervisorConfig {
        max_attempts: s.u32("max_attempts", d.max_attempts, 1),
        backoff_base: s.millis("backoff_base_ms", d.backoff_base, 0),
        backoff_max: s.millis("backoff_max_ms", d.backoff_max, 0),
        max_restarts: s.u32("max_restarts", d.max_restarts, 0),
        restart_window: s.secs("restart_window_s", d.restart_window, 1),
        parse_budget: s.millis("parse_budget_ms", d.parse_budget, 1),
    };
    s.check_not_above(
        "backoff_base_ms",
        c.backoff_base.as_millis(),
        "backoff_max_ms",
        c.backoff_max.as_millis(),
    );
    c
}

fn parser(s: &mut Section<'_, '_, '_, '_>) -> ParserConfig {
    let d = ParserConfig::default();
    ParserConfig {
        threads: s.u32("threads", d.threads, 0),
        max_links_per_page: s.usize("max_links_per_page", d.max_links_per_page, 1),
        inline_max_bytes: s.usize("inline_max_bytes", d.inline_max_bytes, 0),
    }
}

fn shutdown(s: &mut Section<'_, '_, '_, '_>) -> ShutdownConfig {
    let d = ShutdownConfig::default();
    ShutdownConfig {
        grace: s.millis("grace_ms", d.grace, 0),
    }
}

fn observability(s: &mut Section<'_, '_, '_, '_>) -> ObservabilityConfig {
    let d = ObservabilityConfig::default();
    ObservabilityConfig {
        log_level: s.string("log_level", d.log_level, validate::log_level),
        log_format: s.string("log_format", d.log_format, validate::log_format),
        progress_interval: s.secs("progress_interval_s", d.progress_interval, 1),
        otlp_endpoint: s.string("otlp_endpoint", d.otlp_endpoint, validate::otlp_endpoint),
        otlp_protocol: s.string("otlp_protocol", d.otlp_protocol, validate::otlp_protocol),
        otlp_compression: s.string(
            "otlp_compression",
            d.otlp_compression,
            validate::otlp_compression,
        ),
        service_name: s.string("service_name", d.service_name, validate::service_name),
        sample_ratio: s.float("sample_ratio", d.sample_ratio, 0.0, 1.0),
        // Only the default is implied; a non-loopback address must be written out.
        metrics_listen: s.string("metrics_listen", d.metrics_listen, validate::listen_addr),
    }
}

fn proxy(s: &mut Section<'_, '_, '_, '_>) -> ProxyConfig {
    let d = ProxyConfig::default();
    // `default` and `rules` refer to chains by name; a declared name counts even when its
    // table has errors, so that those are not reported a second time as unknown chains.
    let declared: Vec<String> = s
        .sub_keys("chains")
        .into_iter()
        .filter(|n| validate::chain_name(n).is_ok())
        .collect();
    let has_default = s.has("default");
    let default = s.string_or_list("default", |v| validate::chain_ref(v, &declared));
    let c = ProxyConfig {
        default: if has_default && !default.is_empty() {
            default
        } else {
            d.default
        },
        select: s.string("select", d.select, validate::select_policy),
        fallback_direct: s.bool("fallback_direct", d.fallback_direct),
        connect_timeout: s.millis("connect_timeout_ms", d.connect_timeout, 1),
        greeting_timeout: s.millis("greeting_timeout_ms", d.greeting_timeout, 1),
        auth_timeout: s.millis("auth_timeout_ms", d.auth_timeout, 1),
        connect_reply_timeout: s.millis("connect_reply_timeout_ms", d.connect_reply_timeout, 1),
        chain_timeout: s.millis("chain_timeout_ms", d.chain_timeout, 1),
        breaker_failures: s.u32("breaker_failures", d.breaker_failures, 1),
        breaker_cooldown: s.millis("breaker_cooldown_ms", d.breaker_cooldown, 0),
        chains: s
            .named_tables("chains", validate::chain_name, proxy_chain)
            .into_iter()
            .filter_map(|(name, chain)| Some((name, chain?)))
            .collect(),
        rules: s.tables("rules", |r| proxy_rule(r, &declared)),
    };
    let chain = c.chain_timeout.as_millis();
    for (key, phase) in [
        ("connect_timeout_ms", c.connect_timeout),
        ("greeting_timeout_ms", c.greeting_timeout),
        ("auth_timeout_ms", c.auth_timeout),
        ("connect_reply_timeout_ms", c.connect_reply_timeout),
    ] {
        s.check_not_above(key, phase.as_millis(), "chain_timeout_ms", chain);
    }
    c
}

/// One `[proxy.chains.<name>]` table; `None` when its hops are missing or bad.
fn proxy_chain(s: &mut Section<'_, '_, '_, '_>) -> Option<ChainConfig> {
    let present = s.has("hops");
    let hops = s.list("hops", validate::proxy_hop);
    let resolve = s.string("resolve", Default::default(), validate::resolve_at);
    if !present {
        s.missing("hops");
        return None;
    }
    if s.rejected("hops") {
        return None;
    }
    if hops.is_empty() {
        s.invalid("hops", "must not be empty (a chain needs at least one hop)");
        return None;
    }
    Some(ChainConfig { hops, resolve })
}

/// One `[[proxy.rules]]` table; `hosts` and `use` are required.
fn proxy_rule(s: &mut Section<'_, '_, '_, '_>, declared: &[String]) -> Option<ProxyRule> {
    let has_hosts = s.has("hosts");
    let has_use = s.has("use");
    let hosts = s.list("hosts", validate::host_pattern);
    let use_ = s.string_or_list("use", |v| validate::chain_ref(v, declared));
    if !has_hosts {
        s.missing("hosts");
    } else if hosts.is_empty() && !s.rejected("hosts") {
        s.invalid("hosts", "must not be empty");
    }
    if !has_use {
        s.missing("use");
    }
    Some(ProxyRule { hosts, use_ })
}

/// An optional path: `""` = none, so that the documented default can be written out.
fn optional_path(v: &str) -> Result<Option<std::path::PathBuf>, ValueError> {
    if v.is_empty() {
        Ok(None)
    } else {
        validate::path(v).map(Some)
    }
}

/// `[api]`: a token is required off loopback; a certificate goes with its key. `doh` tells whether a
/// `[[resolver.doh]]` endpoint is configured (a `resolver_doh` action needs one).
fn api(s: &mut Section<'_, '_, '_, '_>, doh: bool) -> ApiConfig {
    let d = ApiConfig::default();
    let c = ApiConfig {
        listen: s.string("listen", d.listen, validate::listen_addr),
        token_file: s.string("token_file", None, optional_path),
        cert_file: s.string("cert_file", None, optional_path),
        key_file: s.string("key_file", None, optional_path),
        max_body_bytes: s.u64("max_body_bytes", d.max_body_bytes, 1),
        alert_actions: s.tables("alert_actions", |t| alert_action(t, doh)),
    };
    for (key, other, has, has_other) in [
        (
            "cert_file",
            "key_file",
            c.cert_file.is_some(),
            c.key_file.is_some(),
        ),
        (
            "key_file",
            "cert_file",
            c.key_file.is_some(),
            c.cert_file.is_some(),
        ),
    ] {
        if has && !has_other && !s.rejected(other) {
            s.invalid(
                key,
                &format!("needs `{other}` too: give both (the API is then HTTPS only) or neither"),
            );
        }
    }
    if let Some(addr) = c.listen
        && !addr.ip().is_loopback()
        && c.token_file.is_none()
        && !s.rejected("token_file")
    {
        s.invalid(
            "listen",
            &format!(
                "{addr} is reachable from other machines: set `token_file` (a file holding the bearer token every \
                 request must carry), or listen on loopback (127.0.0.1)"
            ),
        );
    }
    c
}

/// One `[[api.alert_actions]]` table: `alert` and `action` are required; `factor` goes with `lower_concurrency`
/// only (and is required there), `host_label` with `pause_host` only; `resolver_doh` needs a DoH endpoint (`doh`).
fn alert_action(s: &mut Section<'_, '_, '_, '_>, doh: bool) -> Option<AlertAction> {
    let has_alert = s.has("alert");
    let has_action = s.has("action");
    let has_factor = s.has("factor");
    let has_host_label = s.has("host_label");
    let alert = s.string("alert", String::new(), |v| {
        let v = v.trim();
        if v.is_empty() {
            Err(ValueError::Empty)
        } else {
            Ok(v.to_owned())
        }
    });
    let factor = s.float("factor", 0.5, 0.0, 1.0);
    let action = s.string("action", None, |v| {
        validate::alert_action(v, factor).map(Some)
    });
    let host_label = s.string("host_label", "host".to_owned(), validate::label_name);
    let labels = s.string_table("labels", validate::label_name);
    if !has_alert {
        s.missing("alert");
    }
    if !has_action {
        s.missing("action");
    }
    let action = action?;
    let lower = matches!(action, ActionKind::LowerConcurrency { .. });
    if lower && !has_factor {
        s.invalid(
            "factor",
            "`lower_concurrency` needs `factor`: what concurrency is multiplied by, above 0 and below 1 \
             (e.g. 0.5)",
        );
    } else if lower && (factor <= 0.0 || factor >= 1.0) && !s.rejected("factor") {
        s.invalid(
            "factor",
            &format!("must be above 0 and below 1, found {factor}"),
        );
    } else if !lower && has_factor {
        s.invalid(
            "factor",
            &format!(
                "only `lower_concurrency` takes a factor, not `{}`",
                action.as_str()
            ),
        );
    }
    if action != ActionKind::PauseHost && has_host_label {
        s.invalid(
            "host_label",
            &format!(
                "only `pause_host` names a host by a label, not `{}`",
                action.as_str()
            ),
        );
    }
    if action == ActionKind::ResolverDoh && !doh {
        s.invalid(
            "action",
            "`resolver_doh` switches the resolver to `[[resolver.doh]]` endpoints: configure at least one",
        );
    }
    if alert.is_empty() {
        return None;
    }
    Some(AlertAction {
        alert,
        labels,
        action,
        host_label,
    })
}
