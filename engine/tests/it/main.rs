//! crawl-engine's integration tests: one test binary, one module per area. Every test starts its own loopback
//! servers (the site generator in `crawl_tests::site`) and runs the real `crawl-engine` binary (`crawl_tests::engine`):
//! the one cargo built for this test run, [`ENGINE`].
//!
//! Each module uses its own range of 127.0.0.x addresses so tests can run in parallel.
//! - `alerts` (127.0.5.1-9): alerts that act: Alertmanager's webhook posted to `/v1/alerts` pauses a host and
//!   resumes it, leaves an operator's pause alone, sets a setting and undoes it unless a reload set it since;
//!   `alerts_e2e` (127.0.5.10-19): a real Prometheus evaluating the shipped rules (windows shortened) and a real
//!   Alertmanager pause a host answering 429 and resume it once the alert resolves.
//! - `api` (130-134): the control API: status with and without the token, errors naming fields, bodies over the
//!   cap, reloads through the SIGHUP path, HTTPS with a test CA, bad settings refused at start, `ctl` and its
//!   exit statuses.
//! - `cli` (127.0.0.42, 64-65; nothing served): `--check`, missing seeds, seeds without a scheme, `--help`/`--version`,
//!   unreadable configs, the config file a run logs.
//! - `crawl` (127.0.0.50-69): exact URL sets, scope, depth, limits, filters, gzip, CLI, data_dir lock.
//! - `robots_politeness` (70-89): the robots.txt status matrix, crawl-delay, per-host delay and concurrency, 429/503.
//! - `crash` (90-109): kill -9 at many points, torn lines, outbox rewrite, SIGTERM drain, second signal.
//! - `faults` (110-129): injected panics, poison, escalation, redirect loops, size limits, gzip bombs, deadlines,
//!   private networks, broken servers, garbage input.
//! - `resolver` (150-169): injection race, bogus IPs with DoH cross-check, NXDOMAIN hijack, DoH modes, DNS outage,
//!   TTL expiry, names without an answer (FakeDns / FakeDoh).
//! - `observe` (190-199): one OTLP trace per record with its child spans, redaction, sampling, /metrics vs JSONL,
//!   promtool, exemplars; `observe_contract` (196-199): every known counter at 0 in the first scrape, span loss
//!   counted and warned once, exported spans against docs/OBSERVABILITY.md.
//! - `reload` (200-209): SIGHUP applies politeness and the user agent live, rejects invalid files and restart-only
//!   keys, coalesces bursts; `reload_parts` (205-209): only what changed is reapplied (the DNS cache survives a log
//!   level change, not a resolver change), the success line at warn, no exporter transport lines at debug/trace.
//! - `failover` (30-47): a Redis master with replicas and sentinels, killed or stopped mid-crawl: the processes
//!   follow the sentinels, nothing is lost, no host is fetched by two processes at once; rollbacks are detected.
//! - `cluster_failover` (8-19): a Redis Cluster master with a replica killed or stopped past the node timeout
//!   mid-crawl: the replica is promoted, the processes follow it, nothing is lost, no host is fetched by two
//!   processes at once.
//! - `partition` (198.18.0.0/15, hosts `.30-35` of a /24 of their own): three processes on one crawl, each in a
//!   network namespace of its own; one cut off from Redis past its lease and healed is fenced, rejoins, and the
//!   crawl completes exactly once with one process per host at a time.
//! - `distributed` (210-229): three processes on one crawl through a Redis the test starts: exactly once after the
//!   merge, kill -9, SIGSTOP past the lease (fencing), Redis restarted from its AOF or empty, politeness across
//!   processes.
//! - `extract` (240-249): links only in `<noscript>`, `<link rel=next>` versus icons, meta refresh, the per-page
//!   link cap, page requisites with `crawl.embeds`.
//! - `warc` (230-239): the archive read back with warcio (digests, payloads per encoding, truncation, revisits,
//!   metadata, each record's location), kept whole through kill -9; an out-of-scope robots.txt sitemap.
//! - `operator` (250-254): the demo's config with 9464 held, two processes on one data_dir, `--check` opening
//!   what a run opens, a run that fetched nothing (no fetch, no robots.txt request counted), a finished crawl run
//!   again.
//! - `ownership` (20-29): every output owned by one crawl: a second crawl on a running crawl's JSONL or WARC
//!   folder refused before it writes, a leftover archive after a start-over refused and moved aside by `--fresh`,
//!   `--check` saying the same, the exit status of a run and of `--check` for each failure class, Redis reached or
//!   not.
//! - `tls` (135-139): an https seed with an expired certificate and a stalled TLS handshake, recorded reason tls
//!   with the detail naming the cause.
//! - `traps` (140-149): a site full of crawler traps (calendar, `/a/a/a/...`, session ids, a number template,
//!   an overlong URL, a host over its budget) crawled to its end, each cut URL recorded with its rule's reason.
//! - `netguard` (127.0.1.1-19, 127.0.2.1-19, ::1): the SSRF guard with `allow_cidrs` (DNS rebinding, redirects to
//!   private addresses, mapped forms), IPv6 literals and AAAA names (plain UDP, the TCP fallback, DoH, hosts)
//!   crawled on ::1, a bogus AAAA answer detected, connection racing past a black-holed or refusing family, what
//!   the guard sees through a SOCKS5 chain (local resolution) and what it cannot (remote resolution).
//! - `proxy` (170-189): 2-hop SOCKS5 chains, no silent direct, misbehaving hops, failover, breakers, credential
//!   redaction, microsocks interop (FakeSocks).
//! - `secrets` (127.0.4.1-19): canary secrets (seed, proxy, cookie, bearer, Redis and link passwords) in no log,
//!   span, metric, record, archive or data_dir file through failures of every kind; credentials only to their origin.
//! - `steer` (127.0.5.40-49): operators steering a running crawl through the control API: hosts and the crawl
//!   paused and resumed, politeness, URLs added, a queue dropped, a pause through a restart, an add through kill -9.
//! - `steer_redis` (127.0.5.50-59): one crawl shared by two processes through Redis steered through either's API:
//!   both processes in the status, a pause, a drop and an add asked of the process that does not hold the host
//!   carried out by the one that does.
//! - `sinks` (127.0.5.60-79): Kafka (tansu), PostgreSQL (initdb) and S3 (moto) sinks the tests start: every
//!   record delivered with its id through kill -9 and outages with backpressure, one row per record, every closed
//!   WARC file uploaded once and read back by warcio, sinks out of reach refusing the run and `--check`.
//! - `template`: the shipped template `config.toml` passes `--check`, refuses private networks and samples a tenth
//!   of the traces; the demo's config writes beside its copy; the README's config table names every key.
//! - `recrawl` (127.0.0.2-7): continuous crawling over accelerated revisit cycles: conditional revisits, visit
//!   numbers, kill -9 between cycles and within them, revisit records warcio resolves, misbehaving validators and
//!   sitemaps, two Redis processes with one killed between revisits.
//! - `recipe` (127.0.0.41): the README's real-site recipe step by step: copy the template, `--check`, run, Ctrl-C,
//!   resume, run the finished crawl.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

/// The `crawl-engine` binary cargo built for these tests.
pub const ENGINE: &str = env!("CARGO_BIN_EXE_crawl-engine");

mod alerts;
mod alerts_e2e;
mod api;
mod cli;
mod cluster_failover;
mod crash;
mod crash_wide;
mod crawl;
mod distributed;
mod extract;
mod failover;
mod faults;
mod netguard;
mod observe;
mod observe_contract;
mod observe_export;
mod operator;
mod ownership;
mod partition;
mod proxy;
mod proxy_interop;
mod recipe;
mod recrawl;
mod reload;
mod reload_parts;
mod resolver;
mod robots_politeness;
mod secrets;
mod sinks;
mod steer;
mod steer_redis;
mod template;
mod tls;
mod traps;
mod warc;
