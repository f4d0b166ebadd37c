//! The running config as `GET /v1/status` shows it: by section and key as the config file names them, with every
//! secret masked — credential header values, Redis and proxy passwords and userinfo, the API token (its file's
//! path is shown, never its contents).

use crawl_core::config::{
    Config, KafkaAcks, KafkaKey, OnConflict, Oversize, SinkConfig, SinkKind, hide_userinfo,
};
use crawl_core::control::alerts::{ActionKind, AlertAction};
use serde_json::{Value, json};
use std::time::Duration;

const MASK: &str = "***";

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn path(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn patterns(v: &[regex::Regex]) -> Vec<&str> {
    v.iter().map(regex::Regex::as_str).collect()
}

/// The config, secrets masked.
pub fn config_view(c: &Config) -> Value {
    let k = &c.crawl;
    let r = &c.frontier.redis;
    let mask = |present: bool| present.then_some(MASK);
    json!({
        "crawl": {
            "seeds": k.seeds.iter().map(|u| hide_userinfo(u.as_str())).collect::<Vec<_>>(),
            "max_pages": k.max_pages,
            "max_depth": k.max_depth,
            "scope": k.scope,
            "include": patterns(&k.include),
            "exclude": patterns(&k.exclude),
            "user_agent": k.user_agent,
            "respect_robots": k.respect_robots,
            "robots_cache_s": k.robots_cache.as_secs(),
            "robots_retry_ms": ms(k.robots_retry),
            "robots_max_attempts": k.robots_max_attempts,
            "follow_sitemaps": k.follow_sitemaps,
            "sitemap_max_bytes": k.sitemap_max_bytes,
            "sitemap_max_depth": k.sitemap_max_depth,
            "sitemap_max_urls": k.sitemap_max_urls,
            "embeds": k.embeds,
            "embeds_scope": k.embeds_scope,
        },
        "traps": {
            "max_urls_per_host": c.traps.max_urls_per_host,
            "max_urls_per_pattern": c.traps.max_urls_per_pattern,
            "max_repeated_segments": c.traps.max_repeated_segments,
            "max_path_bytes": c.traps.max_path_bytes,
            "max_query_bytes": c.traps.max_query_bytes,
            "max_query_params": c.traps.max_query_params,
            "calendar": c.traps.calendar,
            "strip_params": c.traps.strip_params,
        },
        "recrawl": {
            "enabled": c.recrawl.enabled,
            "interval_s": c.recrawl.interval.as_secs(),
            "min_interval_s": c.recrawl.min_interval.as_secs(),
            "max_interval_s": c.recrawl.max_interval.as_secs(),
            "adaptive": c.recrawl.adaptive,
            "rules": c.recrawl.rules.len(),
        },
        "politeness": {
            "per_host_concurrency": c.politeness.per_host_concurrency,
            "min_delay_ms": ms(c.politeness.min_delay),
            "honour_crawl_delay": c.politeness.honour_crawl_delay,
            "max_crawl_delay_ms": ms(c.politeness.max_crawl_delay),
            "backoff_base_ms": ms(c.politeness.backoff_base),
            "backoff_max_ms": ms(c.politeness.backoff_max),
        },
        "fetch": {
            "concurrency": c.fetch.concurrency,
            "fetchers": c.fetch.fetchers,
            "connect_timeout_ms": ms(c.fetch.connect_timeout),
            "header_timeout_ms": ms(c.fetch.header_timeout),
            "idle_timeout_ms": ms(c.fetch.idle_timeout),
            "request_timeout_ms": ms(c.fetch.request_timeout),
            "max_body_bytes": c.fetch.max_body_bytes,
            "max_redirects": c.fetch.max_redirects,
            "http2": c.fetch.http2,
            "max_retries": c.fetch.max_retries,
            "credentials": c.fetch.credentials.iter().map(|cr| json!({
                "origin": cr.origin_text(),
                "values": MASK,
            })).collect::<Vec<_>>(),
        },
        "frontier": {
            "data_dir": path(&c.frontier.data_dir),
            "backend": c.frontier.backend.as_str(),
            "commit_interval_ms": ms(c.frontier.commit_interval),
            "commit_max_ops": c.frontier.commit_max_ops,
            "host_window": c.frontier.host_window,
            "redis": {
                // RedisUrl's Display masks the password.
                "urls": r.urls.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "cluster": r.cluster,
                "crawl": r.crawl,
                "shards": r.shards,
                "lease_ms": ms(r.lease),
                "sentinels": r.sentinels.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "master": r.master,
                "password": mask(r.password.is_some()),
                "sentinel_password": mask(r.sentinel_password.is_some()),
            },
        },
        "output": {
            "jsonl": path(&c.output.jsonl),
            "warc_dir": c.output.warc_dir.as_deref().map(path),
            "warc_max_bytes": c.output.warc_max_bytes,
            "warc_prefix": c.output.warc_prefix,
            "warc_dedup": c.output.warc_dedup,
            "sink_max_lag": c.output.sink_max_lag,
            "sink_max_lag_bytes": c.output.sink_max_lag_bytes,
            "sink_finish_s": c.output.sink_finish.as_secs(),
        },
        "security": {
            "allow_private_networks": c.security.allow_private_networks,
            "allow_cidrs": c.security.allow_cidrs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        },
        "resolver": {
            "mode": c.resolver.mode.as_str(),
            "nameservers": c.resolver.nameservers.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "doh": c.resolver.doh.iter().map(|d| hide_userinfo(d.url.as_str())).collect::<Vec<_>>(),
            "timeout_ms": ms(c.resolver.timeout),
            "attempts": c.resolver.attempts,
            "hijack_probe": c.resolver.hijack_probe,
        },
        "supervisor": {
            "max_attempts": c.supervisor.max_attempts,
            "max_restarts": c.supervisor.max_restarts,
            "restart_window_s": c.supervisor.restart_window.as_secs(),
        },
        "parser": {
            "threads": c.parser.threads,
            "max_links_per_page": c.parser.max_links_per_page,
            "inline_max_bytes": c.parser.inline_max_bytes,
        },
        "shutdown": { "grace_ms": ms(c.shutdown.grace) },
        "observability": {
            "log_level": c.observability.log_level,
            "log_format": c.observability.log_format.as_str(),
            "otlp_endpoint": c.observability.otlp_endpoint.as_ref().map(|u| hide_userinfo(u.as_str())),
            "service_name": c.observability.service_name,
            "sample_ratio": c.observability.sample_ratio,
            "metrics_listen": c.observability.metrics_listen.map(|a| a.to_string()),
        },
        // Hops with their passwords hidden.
        "proxy": {
            "default": c.proxy.default,
            "select": c.proxy.select.as_str(),
            "fallback_direct": c.proxy.fallback_direct,
            "chains": crawl_actors::tree::proxy_chains(c),
            "rules": c.proxy.rules.iter().map(|r| json!({"hosts": r.hosts, "use": r.use_})).collect::<Vec<_>>(),
        },
        "api": {
            "listen": c.api.listen.map(|a| a.to_string()),
            "token_file": c.api.token_file.as_deref().map(path),
            "cert_file": c.api.cert_file.as_deref().map(path),
            "key_file": c.api.key_file.as_deref().map(path),
            "max_body_bytes": c.api.max_body_bytes,
            "alert_actions": c.api.alert_actions.iter().map(alert_action).collect::<Vec<_>>(),
        },
        "sinks": c.sinks.iter().map(sink).collect::<Vec<_>>(),
    })
}

/// One `[[sinks]]` table, secrets masked (a URL's userinfo, SASL password, object-store keys).
fn sink(s: &SinkConfig) -> Value {
    let mut v = json!({
        "name": s.name,
        "kind": s.kind.as_str(),
        "batch_records": s.batch_records,
        "retry_max_ms": ms(s.retry_max),
        "timeout_ms": ms(s.timeout),
    });
    let more = match &s.kind {
        SinkKind::Kafka(k) => json!({
            "brokers": k.brokers,
            "topic": k.topic,
            "key": match k.key { KafkaKey::Url => "url", KafkaKey::Host => "host" },
            "compression": k.compression.as_str(),
            "acks": match k.acks { KafkaAcks::All => "all", KafkaAcks::Leader => "1" },
            "idempotent": k.idempotent,
            "create_topic": k.create_topic,
            "partitions": k.partitions,
            "replication_factor": k.replication_factor,
            "message_max_bytes": k.message_max_bytes,
            "oversize": match k.oversize { Oversize::Skip => "skip", Oversize::Fail => "fail" },
            "linger_ms": ms(k.linger),
            "tls": k.tls,
            "tls_ca_file": k.tls_ca_file.as_deref().map(path),
            "sasl_mechanism": k.sasl.as_ref().map(|s| s.mechanism.clone()),
            "sasl_username": k.sasl.as_ref().map(|s| s.username.clone()),
            "sasl_password": k.sasl.as_ref().map(|_| MASK),
            "properties": k.properties,
        }),
        SinkKind::Postgres(p) => json!({
            "url": p.url.to_string(),
            "table": p.table,
            "on_conflict": match p.on_conflict { OnConflict::Nothing => "nothing", OnConflict::Update => "update" },
        }),
        SinkKind::ObjectStore(o) => json!({
            "url": o.url.to_string(),
            "endpoint": o.endpoint,
            "region": o.region,
            "access_key_id": o.access_key_id.as_ref().map(|_| MASK),
            "secret_access_key": o.secret_access_key.as_ref().map(|_| MASK),
            "allow_http": o.allow_http,
            "multipart_threshold_bytes": o.multipart_threshold,
            "part_size_bytes": o.part_size,
            "delete_local": o.delete_local,
        }),
    };
    if let (Some(v), Value::Object(more)) = (v.as_object_mut(), more) {
        v.extend(more);
    }
    v
}

/// One `[[api.alert_actions]]` table, with only the keys its action takes.
fn alert_action(a: &AlertAction) -> Value {
    let mut v = json!({"alert": a.alert, "action": a.action.as_str(), "labels": a.labels});
    match a.action {
        ActionKind::PauseHost => v["host_label"] = json!(a.host_label),
        ActionKind::LowerConcurrency { factor } => v["factor"] = json!(factor),
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked() {
        let text = r#"
[crawl]
seeds = ["https://seeduser:seedpass-canary@a.example/"]
[fetch]
[[fetch.credentials]]
origin = "https://b.example"
authorization = "Bearer header-canary"
[frontier]
backend = "redis"
[frontier.redis]
urls = ["redis://:redis-canary@10.0.0.5:6380/3"]
[proxy.chains.eu]
hops = ["socks5://u:proxy-canary@127.0.0.1:1080"]
[api]
listen = "127.0.0.1:0"
token_file = "/etc/crawl/api.token"
[[api.alert_actions]]
alert = "Crawl429Storm"
action = "pause_host"
host_label = "host_group"
[[api.alert_actions]]
alert = "Slow"
action = "lower_concurrency"
factor = 0.5
labels = { severity = "critical" }
"#;
        let c = Config::from_str(text, "t.toml").unwrap();
        let v = config_view(&c);
        let shown = v.to_string();
        for canary in [
            "seedpass-canary",
            "header-canary",
            "redis-canary",
            "proxy-canary",
            "seeduser",
        ] {
            assert!(!shown.contains(canary), "{canary} in {shown}");
        }
        assert_eq!(v["api"]["token_file"], "/etc/crawl/api.token");
        assert_eq!(
            v["api"]["alert_actions"],
            json!([
                {"alert": "Crawl429Storm", "action": "pause_host", "labels": {}, "host_label": "host_group"},
                {"alert": "Slow", "action": "lower_concurrency", "labels": {"severity": "critical"}, "factor": 0.5}
            ])
        );
        assert_eq!(v["fetch"]["credentials"][0]["values"], "***");
        assert_eq!(v["politeness"]["min_delay_ms"], 1000);
        assert_eq!(v["crawl"]["scope"], "host");
        assert_eq!(
            v["proxy"]["chains"]["eu"][0]
                .as_str()
                .map(|h| h.contains("127.0.0.1:1080")),
            Some(true)
        );
    }
}
