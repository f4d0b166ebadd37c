//! Crawl configuration: the validated [`Config`] types with their defaults, and the loader
//! that reads a TOML file and reports every problem at once, each as `path:line:col: message`.
//!
//! Loading parses into a spanned tree (`toml::de::DeTable`), walks the known schema collecting
//! errors (`reader`, `schema`, `build`, `validate`), then returns the typed `Config` only if none
//! were found. Every key is optional; an empty file yields [`Config::default`].
//!
//! [`reload`] decides which differences between two validated configs a running crawl can
//! apply (SIGHUP) and which need a restart.

mod api;
mod build;
mod credentials;
mod errors;
mod observability;
mod proxy;
mod reader;
mod recrawl;
mod redis;
pub mod reload;
mod schema;
mod sinks;
mod validate;
mod value_error;

#[cfg(test)]
mod api_tests;
#[cfg(test)]
mod credentials_tests;
#[cfg(test)]
mod error_tests;
#[cfg(test)]
mod observability_tests;
#[cfg(test)]
mod proxy_tests;
#[cfg(test)]
mod recrawl_tests;
#[cfg(test)]
mod reload_parts_tests;
#[cfg(test)]
mod reload_tests;
#[cfg(test)]
mod resolver_tests;
#[cfg(test)]
mod sinks_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod traps_tests;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

pub use crate::traps::TrapsConfig;
pub use api::{
    ApiConfig, DEFAULT_API_MAX_BODY_BYTES, DEFAULT_API_URL, MIN_TOKEN_CHARS, TokenProblem,
    parse_token,
};
pub use credentials::{Credential, Credentials};
pub use errors::{ConfigError, ConfigErrors, ErrorKind};
pub use observability::{
    DEFAULT_METRICS_LISTEN, DEFAULT_SERVICE_NAME, LogFormat, ObservabilityConfig, OtlpCompression,
    OtlpProtocol,
};
pub use proxy::{
    ChainConfig, DIRECT, ProxyConfig, ProxyHop, ProxyRule, ResolveAt, Secret, SelectPolicy,
    redact_credentials,
};
pub use recrawl::{
    DEFAULT_DEC_RATE, DEFAULT_INC_RATE, DEFAULT_RECRAWL_INTERVAL, DEFAULT_RECRAWL_MAX_INTERVAL,
    DEFAULT_RECRAWL_MIN_INTERVAL, MAX_RECRAWL_INTERVAL_S, RecrawlConfig, RecrawlRule,
};
pub use redis::{FrontierBackend, RedisConfig, RedisUrl};
pub use sinks::{
    DEFAULT_SINK_MAX_LAG, DEFAULT_SINK_MAX_LAG_BYTES, KafkaAcks, KafkaCompression, KafkaKey,
    KafkaSasl, KafkaSink, ObjectStoreSink, OnConflict, Oversize, PostgresSink, SecretUrl,
    SinkConfig, SinkKind,
};
pub use validate::{hide_userinfo, seed_url};
pub use value_error::{HopProblem, NameRole, UrlProblem, UrlRole, ValueError};

use crate::scope::ScopeMode;

/// The whole crawl configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    pub crawl: CrawlConfig,
    pub politeness: PolitenessConfig,
    pub fetch: FetchConfig,
    pub frontier: FrontierConfig,
    pub output: OutputConfig,
    pub security: SecurityConfig,
    pub resolver: ResolverConfig,
    pub supervisor: SupervisorConfig,
    pub parser: ParserConfig,
    pub shutdown: ShutdownConfig,
    pub observability: ObservabilityConfig,
    pub proxy: ProxyConfig,
    pub traps: TrapsConfig,
    pub recrawl: RecrawlConfig,
    pub api: ApiConfig,
    /// `[[sinks]]`: Kafka, PostgreSQL and object-store sinks, in file order.
    pub sinks: Vec<SinkConfig>,
}

/// `[crawl]`: what to crawl.
#[derive(Debug, Clone)]
pub struct CrawlConfig {
    /// Start URLs (http/https). May be empty in the file; the binary requires at least one seed.
    pub seeds: Vec<url::Url>,
    /// Stop after this many pages; 0 = no limit.
    pub max_pages: u64,
    /// Maximum link depth from a seed.
    pub max_depth: u32,
    /// Which discovered URLs are in scope relative to the seeds.
    pub scope: ScopeMode,
    /// If non-empty, a URL must match at least one of these.
    pub include: Vec<regex::Regex>,
    /// A URL matching any of these is skipped.
    pub exclude: Vec<regex::Regex>,
    /// User-Agent header and robots.txt product token source.
    pub user_agent: String,
    pub respect_robots: bool,
    /// How long a fetched robots.txt stays valid (key `robots_cache_s`).
    pub robots_cache: Duration,
    /// First wait before re-fetching an unavailable robots.txt, doubled each time (`robots_retry_ms`).
    pub robots_retry: Duration,
    /// After this many unavailable answers the waiting URLs are recorded failed.
    pub robots_max_attempts: u32,
    pub follow_sitemaps: bool,
    pub sitemap_max_bytes: u64,
    /// Maximum sitemap-index nesting.
    pub sitemap_max_depth: u32,
    /// Maximum URLs taken from one sitemap.
    pub sitemap_max_urls: usize,
    /// Also fetch the page requisites (images, stylesheets, scripts, fonts, icons...) of every fetched page.
    pub embeds: bool,
    /// Which requisites are in scope relative to the seeds (same values as `scope`).
    pub embeds_scope: ScopeMode,
}

/// Regexes compare by pattern text.
impl PartialEq for CrawlConfig {
    fn eq(&self, other: &Self) -> bool {
        fn pats(v: &[regex::Regex]) -> Vec<&str> {
            v.iter().map(regex::Regex::as_str).collect()
        }
        self.seeds == other.seeds
            && self.max_pages == other.max_pages
            && self.max_depth == other.max_depth
            && self.scope == other.scope
            && pats(&self.include) == pats(&other.include)
            && pats(&self.exclude) == pats(&other.exclude)
            && self.user_agent == other.user_agent
            && self.respect_robots == other.respect_robots
            && self.robots_cache == other.robots_cache
            && self.robots_retry == other.robots_retry
            && self.robots_max_attempts == other.robots_max_attempts
            && self.follow_sitemaps == other.follow_sitemaps
            && self.sitemap_max_bytes == other.sitemap_max_bytes
            && self.sitemap_max_depth == other.sitemap_max_depth
            && self.sitemap_max_urls == other.sitemap_max_urls
            && self.embeds == other.embeds
            && self.embeds_scope == other.embeds_scope
    }
}

/// Default User-Agent.
pub const DEFAULT_USER_AGENT: &str =
    "crawl-engine/0.1 (+https://github.com/crawl-engine/crawl-engine)";

impl Default for CrawlConfig {
    fn default() -> Self {
        Self {
            seeds: Vec::new(),
            max_pages: 0,
            max_depth: 16,
            scope: ScopeMode::Host,
            include: Vec::new(),
            exclude: Vec::new(),
            user_agent: DEFAULT_USER_AGENT.to_owned(),
            respect_robots: true,
            robots_cache: Duration::from_secs(86_400),
            robots_retry: Duration::from_millis(30_000),
            robots_max_attempts: 5,
            follow_sitemaps: true,
            sitemap_max_bytes: 52_428_800,
            sitemap_max_depth: 2,
            sitemap_max_urls: 50_000,
            embeds: false,
            embeds_scope: ScopeMode::Any,
        }
    }
}

/// `[politeness]`: per-host pacing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolitenessConfig {
    /// Requests in flight per host (>= 1).
    pub per_host_concurrency: u32,
    /// Minimum gap between requests to one host (`min_delay_ms`).
    pub min_delay: Duration,
    /// Obey robots.txt Crawl-delay (capped by `max_crawl_delay`).
    pub honour_crawl_delay: bool,
    pub max_crawl_delay: Duration,
    /// Pause after a 429/503 without Retry-After, doubled each time.
    pub backoff_base: Duration,
    /// Cap of that pause; also caps Retry-After.
    pub backoff_max: Duration,
}

impl Default for PolitenessConfig {
    fn default() -> Self {
        Self {
            per_host_concurrency: 1,
            min_delay: Duration::from_millis(1_000),
            honour_crawl_delay: true,
            max_crawl_delay: Duration::from_millis(30_000),
            backoff_base: Duration::from_millis(2_000),
            backoff_max: Duration::from_millis(600_000),
        }
    }
}

/// `[fetch]`: the HTTP client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchConfig {
    /// Requests in flight overall (>= 1).
    pub concurrency: u32,
    /// Fetcher actors; 0 = one per CPU.
    pub fetchers: u32,
    pub connect_timeout: Duration,
    /// Request sent -> response headers.
    pub header_timeout: Duration,
    /// Longest gap between body bytes.
    pub idle_timeout: Duration,
    /// Whole request.
    pub request_timeout: Duration,
    /// Limit on decoded body bytes (> 0).
    pub max_body_bytes: u64,
    pub max_redirects: u32,
    pub http2: bool,
    /// Retries for transient errors and 429/503.
    pub max_retries: u32,
    pub retry_base: Duration,
    pub pool_idle_timeout: Duration,
    pub pool_max_idle_per_host: usize,
    /// `[[fetch.credentials]]` and the user names and passwords of the seeds: headers sent to one origin only.
    pub credentials: Credentials,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            concurrency: 64,
            fetchers: 0,
            connect_timeout: Duration::from_millis(10_000),
            header_timeout: Duration::from_millis(30_000),
            idle_timeout: Duration::from_millis(30_000),
            request_timeout: Duration::from_millis(120_000),
            max_body_bytes: 10_485_760,
            max_redirects: 5,
            http2: true,
            max_retries: 3,
            retry_base: Duration::from_millis(1_000),
            pool_idle_timeout: Duration::from_millis(30_000),
            pool_max_idle_per_host: 8,
            credentials: Credentials::default(),
        }
    }
}

/// `[frontier]`: the persistent URL store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierConfig {
    pub data_dir: PathBuf,
    /// Group-commit window (>= 1 ms).
    pub commit_interval: Duration,
    /// Operations that force a commit (>= 1).
    pub commit_max_ops: usize,
    /// Ready URLs held in memory per host (and for the records queue), refilled from the store (>= 1).
    pub host_window: usize,
    /// Where the frontier lives: `embedded` (data_dir) or `redis` (shared by many processes).
    pub backend: FrontierBackend,
    /// `[frontier.redis]`: the shared store, used when the backend is Redis.
    pub redis: RedisConfig,
}

impl Default for FrontierConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("crawl-data"),
            commit_interval: Duration::from_millis(50),
            commit_max_ops: 4_096,
            host_window: 64,
            backend: FrontierBackend::Embedded,
            redis: RedisConfig::default(),
        }
    }
}

/// `[output]`: where records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputConfig {
    pub jsonl: PathBuf,
    /// Where WARC files go; None: no archive.
    pub warc_dir: Option<PathBuf>,
    /// A WARC file is rotated before it would pass this size.
    pub warc_max_bytes: u64,
    /// The first part of WARC file names (`PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz`).
    pub warc_prefix: String,
    /// A payload already archived in this crawl is written as a `revisit` record.
    pub warc_dedup: bool,
    /// Records a sink may lag behind the JSONL before fetching pauses (resumes at half).
    pub sink_max_lag: u64,
    /// Bytes a sink may lag behind (JSONL bytes, or closed WARC bytes not uploaded) before fetching pauses.
    pub sink_max_lag_bytes: u64,
    /// How long the sinks may go on delivering after the crawl ended before the process exits (1 when one is
    /// still behind).
    pub sink_finish: Duration,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            jsonl: PathBuf::from("crawl.jsonl"),
            warc_dir: None,
            warc_max_bytes: 1 << 30,
            warc_prefix: "crawl".to_owned(),
            warc_dedup: true,
            sink_max_lag: sinks::DEFAULT_SINK_MAX_LAG,
            sink_max_lag_bytes: sinks::DEFAULT_SINK_MAX_LAG_BYTES,
            sink_finish: Duration::from_secs(300),
        }
    }
}

/// `[security]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityConfig {
    /// Allow loopback/private/link-local addresses (off by default: SSRF protection).
    pub allow_private_networks: bool,
    /// Non-public address blocks the crawl may reach even with `allow_private_networks = false` (an intranet
    /// crawl names what it may reach). Restart-only, like the rest of `[security]`.
    pub allow_cidrs: Vec<crate::netguard::Cidr>,
}

impl SecurityConfig {
    /// The guard the fetcher dials through.
    pub fn guard(&self) -> crate::netguard::NetGuard {
        crate::netguard::NetGuard::new(self.allow_private_networks, self.allow_cidrs.clone())
    }
}

/// How names are resolved (`resolver.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResolverMode {
    /// Plain DNS with pollution detection; DoH when an answer is judged polluted or plain fails.
    #[default]
    Detect,
    /// DoH only, no plain queries at all.
    Doh,
    /// DoH, plain DNS when DoH fails.
    DohFirst,
    /// Plain DNS without detection.
    Plain,
}

impl ResolverMode {
    /// The name used in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            ResolverMode::Detect => "detect",
            ResolverMode::Doh => "doh",
            ResolverMode::DohFirst => "doh-first",
            ResolverMode::Plain => "plain",
        }
    }

    /// True for the modes that cannot work without a DoH endpoint.
    pub fn needs_doh(self) -> bool {
        matches!(self, ResolverMode::Doh | ResolverMode::DohFirst)
    }
}

impl fmt::Display for ResolverMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `[[resolver.doh]]` endpoint (RFC 8484).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DohEndpoint {
    /// `https://host[:port]/path`.
    pub url: url::Url,
    /// Connect to this address instead of resolving the URL's host.
    pub bootstrap: Option<IpAddr>,
    /// PEM CA certificates trusted for this endpoint in addition to the webpki roots.
    pub ca_file: Option<PathBuf>,
}

/// `[resolver]`: DNS resolution and pollution detection (docs/RESOLVER.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverConfig {
    /// Plain DNS servers; empty = the system's (/etc/resolv.conf).
    pub nameservers: Vec<SocketAddr>,
    pub mode: ResolverMode,
    /// Static overrides by lowercase name without trailing dot, used first.
    pub hosts: BTreeMap<String, Vec<IpAddr>>,
    /// Known forged answers, each an IP address or CIDR (validated, kept as written).
    pub bogus_ips: Vec<String>,
    /// More of them, one per line; `""` in the file = none (`from_file` resolves it against the
    /// config directory).
    pub bogus_ips_file: Option<PathBuf>,
    /// After the first plain answer, how long to keep listening for more (`hold_on_ms`).
    pub hold_on: Duration,
    /// Per query attempt (`timeout_ms`).
    pub timeout: Duration,
    /// Attempts per server (>= 1).
    pub attempts: u32,
    /// TTL clamps of the cache (`min_ttl_s` <= `max_ttl_s`).
    pub min_ttl: Duration,
    pub max_ttl: Duration,
    /// Cache lifetime of NXDOMAIN and failures (`negative_ttl_s`).
    pub negative_ttl: Duration,
    /// Resolve a random never-registered name at start to learn NXDOMAIN-hijack addresses.
    pub hijack_probe: bool,
    /// DoH endpoints, in order of preference.
    pub doh: Vec<DohEndpoint>,
}

impl Default for ResolverConfig {
    fn default() -> Self {
        Self {
            nameservers: Vec::new(),
            mode: ResolverMode::Detect,
            hosts: BTreeMap::new(),
            bogus_ips: Vec::new(),
            bogus_ips_file: None,
            hold_on: Duration::from_millis(300),
            timeout: Duration::from_millis(2_000),
            attempts: 2,
            min_ttl: Duration::from_secs(30),
            max_ttl: Duration::from_secs(86_400),
            negative_ttl: Duration::from_secs(60),
            hijack_probe: true,
            doh: Vec::new(),
        }
    }
}

/// `[supervisor]`: actor restarts and poison URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorConfig {
    /// A URL whose handler panicked this many times is recorded failed (reason poison).
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// More than this many restarts of one child within `restart_window` stops the crawl.
    pub max_restarts: u32,
    pub restart_window: Duration,
    /// How long a parser may work on one response before its lease is considered stuck (with the request timeout,
    /// it makes up a lease's deadline).
    pub parse_budget: Duration,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(30_000),
            max_restarts: 20,
            restart_window: Duration::from_secs(60),
            parse_budget: Duration::from_millis(10_000),
        }
    }
}

/// `[parser]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParserConfig {
    /// Parser threads; 0 = one per CPU.
    pub threads: u32,
    /// Links (and, separately, page requisites) kept per page; the rest are counted in the record's
    /// `links_dropped`.
    pub max_links_per_page: usize,
    /// Pages whose decoded body is at most this many bytes are parsed on the fetcher's thread, without a hand-over
    /// to a parser thread; 0 = every response goes to the parser threads. Not with WARC output.
    pub inline_max_bytes: usize,
}

/// The default of `parser.inline_max_bytes`.
pub const INLINE_MAX_BYTES: usize = 65_536;

impl Default for ParserConfig {
    fn default() -> Self {
        Self {
            threads: 0,
            max_links_per_page: 10_000,
            inline_max_bytes: INLINE_MAX_BYTES,
        }
    }
}

/// `[shutdown]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownConfig {
    /// Time allowed for in-flight work after a stop request.
    pub grace: Duration,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        Self {
            grace: Duration::from_millis(10_000),
        }
    }
}

/// Every dotted key name, computed once by walking an empty document through the schema.
static KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let empty = toml::de::DeTable::new();
    let mut walker = reader::Walker::new(errors::Sink::new("", ""), &empty);
    let _ = build::build(&mut walker);
    walker.dotted_keys()
});

impl Config {
    /// Reads and validates a config file. Relative `frontier.data_dir`, `output.jsonl` (given or default) and
    /// `output.warc_dir`, `resolver.bogus_ips_file`, `resolver.doh[].ca_file` and `api.token_file`,
    /// `api.cert_file` and `api.key_file` are resolved against the file's directory.
    pub fn from_file(path: &Path) -> Result<Config, ConfigErrors> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| errors::io_error(&origin, &e))?;
        let mut config = Self::from_str(&text, &origin)?;
        if let Some(base) = path.parent() {
            let resolve = |p: &mut PathBuf| {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            };
            resolve(&mut config.frontier.data_dir);
            resolve(&mut config.output.jsonl);
            if let Some(p) = config.output.warc_dir.as_mut() {
                resolve(p);
            }
            if let Some(p) = config.resolver.bogus_ips_file.as_mut() {
                resolve(p);
            }
            for sink in &mut config.sinks {
                if let SinkKind::Kafka(k) = &mut sink.kind
                    && let Some(p) = k.tls_ca_file.as_mut()
                {
                    resolve(p);
                }
            }
            for doh in &mut config.resolver.doh {
                if let Some(p) = doh.ca_file.as_mut() {
                    resolve(p);
                }
            }
            let api = &mut config.api;
            for p in [&mut api.token_file, &mut api.cert_file, &mut api.key_file]
                .into_iter()
                .flatten()
            {
                resolve(p);
            }
        }
        Ok(config)
    }

    /// Parses and validates TOML text; `origin` names it in error messages. Paths stay as given.
    pub fn from_str(text: &str, origin: &str) -> Result<Config, ConfigErrors> {
        let mut sink = errors::Sink::new(origin, text);
        let root = match toml::de::DeTable::parse(text) {
            Ok(root) => root,
            Err(e) => {
                let pos = sink.pos(e.span().map_or(0, |s| s.start));
                sink.push(
                    pos,
                    ErrorKind::Syntax,
                    format!("TOML syntax error: {}", e.message()),
                );
                return Err(sink.into_errors());
            }
        };
        let mut walker = reader::Walker::new(sink, root.get_ref());
        let config = build::build(&mut walker);
        walker.check_unknown();
        let sink = walker.into_sink();
        if sink.has_errors() {
            Err(sink.into_errors())
        } else {
            Ok(config)
        }
    }

    /// Appends a seed (e.g. from `--seed`), skipping exact duplicates.
    pub fn add_seed(&mut self, url: url::Url) {
        if !self.crawl.seeds.contains(&url) {
            self.crawl.seeds.push(url);
        }
    }

    /// Every dotted key the file may contain, e.g. `crawl.seeds`, `fetch.connect_timeout_ms`.
    pub fn keys() -> Vec<&'static str> {
        KEYS.iter().map(String::as_str).collect()
    }
}

/// Every dotted key the file may contain (same as [`Config::keys`]).
pub fn keys() -> Vec<&'static str> {
    Config::keys()
}
