//! What each part of the tree runs with, derived from the config: at start, and again for a reload.

use crate::fetcher::http::HttpSettings;
use crate::parser::logic::ParseSettings;
use crawl_core::config::Config;
use crawl_core::politeness::PolitenessPolicy;
use crawl_core::scope::ScopePolicy;
use crawl_core::traps::{TrapRules, current_year};
use std::sync::Arc;

/// Settings of the HTTP client, from the config.
pub fn http_settings(config: &Config) -> HttpSettings {
    HttpSettings {
        user_agent: config.crawl.user_agent.clone(),
        connect_timeout: config.fetch.connect_timeout,
        header_timeout: config.fetch.header_timeout,
        idle_timeout: config.fetch.idle_timeout,
        total_timeout: config.fetch.request_timeout,
        max_body_bytes: config.fetch.max_body_bytes,
        http2: config.fetch.http2,
        allow_private_networks: config.security.allow_private_networks,
        allow_cidrs: config.security.allow_cidrs.clone(),
        attempt_delay: crate::fetcher::dial::ATTEMPT_DELAY,
        pool_idle_timeout: config.fetch.pool_idle_timeout,
        // Every request a host may have in flight can leave its connection for the next one: a smaller idle limit
        // closes the surplus after each burst and opens it again (a TCP handshake per few pages). 0 keeps none.
        pool_max_idle_per_host: match config.fetch.pool_max_idle_per_host {
            0 => 0,
            n => n.max(config.politeness.per_host_concurrency as usize),
        },
        extra_roots: Vec::new(),
        keep_request_headers: config.output.warc_dir.is_some(),
        lookup: None,
        proxy: None,
        credentials: config.fetch.credentials.clone(),
    }
}

/// The scope of a config, with its trap rules (calendar windows around the current year).
pub fn scope_policy(config: &Config) -> Arc<ScopePolicy> {
    Arc::new(
        ScopePolicy::new(
            config.crawl.scope,
            &config.crawl.seeds,
            config.crawl.include.clone(),
            config.crawl.exclude.clone(),
            config.crawl.max_depth,
        )
        .with_traps(TrapRules::new(&config.traps, current_year())),
    )
}

/// The politeness policy of a config.
pub fn politeness_policy(config: &Config) -> PolitenessPolicy {
    PolitenessPolicy {
        per_host_concurrency: config.politeness.per_host_concurrency,
        min_delay: config.politeness.min_delay,
        honour_crawl_delay: config.politeness.honour_crawl_delay,
        max_crawl_delay: config.politeness.max_crawl_delay,
        backoff_base: config.politeness.backoff_base,
        backoff_max: config.politeness.backoff_max,
    }
}

/// The scope of page requisites (`crawl.embeds_scope`), or `None` when they are not fetched. The crawl's exclude
/// patterns apply to them too; its include patterns, which say which pages to crawl, do not.
fn embeds_policy(config: &Config) -> Option<Arc<ScopePolicy>> {
    config.crawl.embeds.then(|| {
        Arc::new(ScopePolicy::new(
            config.crawl.embeds_scope,
            &config.crawl.seeds,
            Vec::new(),
            config.crawl.exclude.clone(),
            config.crawl.max_depth,
        ))
    })
}

pub fn parse_settings(config: &Config, scope: Arc<ScopePolicy>) -> ParseSettings {
    ParseSettings {
        scope,
        user_agent: config.crawl.user_agent.clone(),
        max_body_bytes: config.fetch.max_body_bytes,
        sitemap_max_bytes: config.crawl.sitemap_max_bytes,
        sitemap_max_urls: config.crawl.sitemap_max_urls,
        archive_level: config
            .output
            .warc_dir
            .as_ref()
            .map(|_| crate::parser::archive::ARCHIVE_LEVEL),
        max_links_per_page: config.parser.max_links_per_page,
        inline_max_bytes: config.parser.inline_max_bytes,
        embeds: embeds_policy(config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_kept_cover_the_requests_a_host_may_have_in_flight() {
        let idle = |text: &str| {
            let config = Config::from_str(text, "t.toml").expect("valid");
            http_settings(&config).pool_max_idle_per_host
        };
        assert_eq!(idle("[politeness]\nper_host_concurrency = 64\n"), 64);
        assert_eq!(idle("[politeness]\nper_host_concurrency = 2\n"), 8);
        let set = "[politeness]\nper_host_concurrency = 64\n[fetch]\npool_max_idle_per_host = ";
        assert_eq!(idle(&format!("{set}8\n")), 64);
        assert_eq!(idle(&format!("{set}100\n")), 100);
        // 0: no connection is kept.
        assert_eq!(idle(&format!("{set}0\n")), 0);
    }
}
