//! `[frontier] backend` and `[frontier.redis]`: where the frontier lives. The embedded store (one process,
//! `data_dir`) is the default; with `backend = "redis"` many processes share one crawl through Redis.
//! Redis URLs may carry a password: [`RedisUrl`] shows them as `redis://***@host:port/db` everywhere.

use super::proxy::Secret;
use super::value_error::{UrlProblem, UrlRole, ValueError};
use std::fmt;
use std::time::Duration;

/// Which store holds the frontier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrontierBackend {
    /// redb files in `data_dir` (one process).
    #[default]
    Embedded,
    /// A Redis server or cluster shared by every process of the crawl.
    Redis,
}

impl FrontierBackend {
    /// The config's name of the backend.
    pub fn as_str(self) -> &'static str {
        match self {
            FrontierBackend::Embedded => "embedded",
            FrontierBackend::Redis => "redis",
        }
    }
}

/// A Redis URL (`redis://[:password@]host:port/db`, `rediss://…`, `redis+unix:///path`). `Display` and `Debug`
/// hide the password and the user name.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl {
    full: Secret,
    shown: String,
}

impl RedisUrl {
    /// The URL with its credentials: only for connecting.
    pub fn expose(&self) -> &str {
        self.full.expose()
    }

    /// True for `redis+unix://` and `unix://` URLs.
    pub fn is_unix(&self) -> bool {
        self.shown.starts_with("redis+unix:") || self.shown.starts_with("unix:")
    }
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({})", self.shown)
    }
}

/// `[frontier.redis]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// The server, or seed nodes of a cluster.
    pub urls: Vec<RedisUrl>,
    /// Talk to a Redis Cluster (MOVED/ASK followed; every key of a shard in one slot).
    pub cluster: bool,
    /// The crawl's name: the key namespace, so several crawls can share one Redis.
    pub crawl: String,
    /// Hosts map to this many shards; a shard has one owner at a time.
    pub shards: u32,
    /// How long a shard's lease lasts without renewal (renewed every third of it).
    pub lease: Duration,
    /// How long commits wait for an unreachable Redis (spooled in data_dir) before the crawl stops.
    pub max_outage: Duration,
    /// A URL found again at least this long after it was queued (up to twice that) is crawled again; zero: never.
    pub recrawl_after: Duration,
    /// Redis Sentinel nodes that name the current master (an alternative to `urls`).
    pub sentinels: Vec<RedisUrl>,
    /// The master's name as the sentinels monitor it (with `sentinels`).
    pub master: Option<String>,
    /// The sentinels' password (`requirepass` of the sentinels), when their URLs carry none.
    pub sentinel_password: Option<Secret>,
    /// The master's (and replicas') password when reached through the sentinels.
    pub password: Option<Secret>,
    /// How many replicas must hold a commit or a lease before it counts; None: 1 with sentinels, else decided
    /// from the topology when the store connects (1 when the master or every cluster master has a replica).
    pub replicas_ack: Option<u32>,
    /// How long a commit or a lease round waits for those replicas.
    pub replicas_ack_timeout: Duration,
}

impl RedisConfig {
    /// `replicas_ack` as far as the configuration decides it: the value given, else 1 with sentinels (they watch
    /// replicas), else None: the store asks the server whether it has replicas.
    pub fn replicas_ack(&self) -> Option<u32> {
        self.replicas_ack
            .or_else(|| (!self.sentinels.is_empty()).then_some(1))
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            urls: Vec::new(),
            cluster: false,
            crawl: "crawl".to_owned(),
            shards: 256,
            lease: Duration::from_millis(15_000),
            max_outage: Duration::from_millis(600_000),
            recrawl_after: Duration::ZERO,
            sentinels: Vec::new(),
            master: None,
            sentinel_password: None,
            password: None,
            replicas_ack: None,
            replicas_ack_timeout: Duration::from_millis(DEFAULT_REPLICAS_ACK_TIMEOUT_MS),
        }
    }
}

/// How long a commit waits for its replicas by default (ms).
pub const DEFAULT_REPLICAS_ACK_TIMEOUT_MS: u64 = 2_000;

/// A sentinel URL: `redis://[:password@]host:port` or `rediss://…` (a sentinel is reached over TCP).
pub(super) fn sentinel_url(s: &str) -> Result<RedisUrl, ValueError> {
    let u = redis_url(s)?;
    if u.is_unix() {
        return Err(ValueError::SentinelUnix { shown: u.shown });
    }
    Ok(u)
}

/// A master name as the sentinels know it: printable, no spaces.
pub(super) fn master_name(s: &str) -> Result<String, ValueError> {
    if s.is_empty() || s.len() > 128 || !s.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ValueError::MasterName { text: s.to_owned() });
    }
    Ok(s.to_owned())
}

/// `backend`: `embedded` or `redis`.
pub(super) fn backend(s: &str) -> Result<FrontierBackend, ValueError> {
    [FrontierBackend::Embedded, FrontierBackend::Redis]
        .into_iter()
        .find(|b| b.as_str() == s)
        .ok_or_else(|| ValueError::UnknownBackend { text: s.to_owned() })
}

/// A Redis URL; the error never shows the password.
pub(super) fn redis_url(s: &str) -> Result<RedisUrl, ValueError> {
    let bad = |problem| ValueError::Url {
        role: UrlRole::Redis,
        shown: super::proxy::redact_credentials(s),
        problem,
    };
    let u = url::Url::parse(s).map_err(|e| bad(UrlProblem::Syntax(e)))?;
    let unix = matches!(u.scheme(), "redis+unix" | "unix");
    if !matches!(u.scheme(), "redis" | "rediss") && !unix {
        return Err(bad(UrlProblem::Scheme {
            found: u.scheme().to_owned(),
        }));
    }
    if !unix && u.host_str().is_none_or(str::is_empty) {
        return Err(bad(UrlProblem::NoHost));
    }
    if unix && u.path().is_empty() {
        return Err(bad(UrlProblem::NoSocketPath));
    }
    let mut shown = u.clone();
    if !u.username().is_empty() || u.password().is_some() {
        let _ = shown.set_username("");
        let _ = shown.set_password(Some("***"));
    }
    // Unix socket URLs carry the password as `?pass=` (and the user as `?user=`).
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let hidden = matches!(&*k, "pass" | "password" | "user");
                (
                    k.into_owned(),
                    if hidden {
                        "***".to_owned()
                    } else {
                        v.into_owned()
                    },
                )
            })
            .collect();
        shown.query_pairs_mut().clear().extend_pairs(pairs);
    }
    Ok(RedisUrl {
        full: Secret::new(s),
        shown: shown.to_string(),
    })
}

/// A crawl name: letters, digits, `-`, `_` and `.` (it goes into every key, inside a cluster hash tag).
pub(super) fn crawl_name(s: &str) -> Result<String, ValueError> {
    if s.is_empty() || s.len() > 64 {
        return Err(ValueError::CrawlNameLength);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(ValueError::CrawlNameCharacter { text: s.to_owned() });
    }
    Ok(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_hide_their_password_everywhere() {
        let u = redis_url("redis://:s3cret-pw@127.0.0.1:6380/2").unwrap();
        assert_eq!(u.expose(), "redis://:s3cret-pw@127.0.0.1:6380/2");
        for shown in [u.to_string(), format!("{u:?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(shown.contains("127.0.0.1:6380/2"), "{shown}");
        }
        let u = redis_url("redis://user:pw2@h:1/0").unwrap();
        assert!(!u.to_string().contains("pw2") && !u.to_string().contains("user"));
        let e = redis_url("ftp://:topsecret@h/").unwrap_err();
        assert!(
            matches!(
                &e,
                ValueError::Url { role: UrlRole::Redis, problem: UrlProblem::Scheme { found }, .. }
                    if found == "ftp"
            ),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            !text.contains("topsecret") && text.contains("scheme"),
            "{text}"
        );
        let e = redis_url("redis://:topsecret@").unwrap_err();
        assert!(
            matches!(
                e,
                ValueError::Url {
                    problem: UrlProblem::Syntax(_),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!e.to_string().contains("topsecret"), "{e}");
        assert!(!format!("{e:?}").contains("topsecret"), "{e:?}");
        let e = redis_url("redis+unix://").unwrap_err();
        assert!(
            matches!(
                e,
                ValueError::Url {
                    problem: UrlProblem::NoSocketPath,
                    ..
                }
            ),
            "{e:?}"
        );
        let u = redis_url("redis+unix:///tmp/r.sock").unwrap();
        assert!(u.is_unix());
        let u = redis_url("redis+unix:///tmp/r.sock?db=1&pass=sockpw").unwrap();
        assert!(
            !u.to_string().contains("sockpw") && u.to_string().contains("db=1"),
            "{u}"
        );
    }

    #[test]
    fn crawl_names_and_backends() {
        assert_eq!(crawl_name("news-2026.a_b").unwrap(), "news-2026.a_b");
        assert_eq!(crawl_name(""), Err(ValueError::CrawlNameLength));
        assert_eq!(
            crawl_name(&"a".repeat(65)),
            Err(ValueError::CrawlNameLength)
        );
        for bad in ["a{b}", "a:b"] {
            assert_eq!(
                crawl_name(bad),
                Err(ValueError::CrawlNameCharacter {
                    text: bad.to_owned()
                })
            );
        }
        assert_eq!(backend("redis").unwrap(), FrontierBackend::Redis);
        for b in [FrontierBackend::Embedded, FrontierBackend::Redis] {
            assert_eq!(backend(b.as_str()), Ok(b), "the name reads back");
        }
        let e = backend("postgres").unwrap_err();
        assert_eq!(
            e,
            ValueError::UnknownBackend {
                text: "postgres".to_owned()
            }
        );
        assert!(e.to_string().contains("embedded"), "{e}");
    }
}
