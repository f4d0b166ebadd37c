//! The one generator of test sites for integration tests, `make demo` and `make bench`.
//!
//! A [`Site`] is a set of simulated hosts, host `i` listening on `127.0.0.{first_octet + i}` (HTTP/1.1 and h2c; another
//! /24 with [`SiteSpec::prefix`]), serving a deterministic link graph built from [`SiteSpec::seed`]: `/` is page 0,
//! page `n` is `/page/{n}`, and every page links to other pages (some on other hosts), to `/private/{n}` (disallowed by
//! robots.txt), to `/old/{k}` (301 to page `k`), to `/missing/{n}` (404), to `/nofollow/{n}` with `rel=nofollow`, with
//! relative, absolute and duplicate hrefs. `/orphan/{k}` pages are listed only in `/sitemap-pages.xml`, reached from
//! the sitemap index `/sitemap.xml` named in robots.txt. [`Site::expected`] computes the exact result of a correct
//! crawl from the same graph; [`Site::requests`] and friends show what a crawler actually did.
//!
//! Wide mode ([`SiteSpec::wide_links`] > 0) adds a frontier of many URLs: page 0 of each host also links to
//! `wide_links` distinct `/w/{id}` URLs on its host; most answer 404 (a static body), a share
//! [`SiteSpec::wide_ok_ratio`] are pages that again carry `wide_links` new distinct links. The links are computed
//! from the id on each request, nothing is stored, so a crawl can know millions of URLs after fetching a small
//! fraction of them ([`SiteSpec::wide_siblings`] makes those pages link to URLs already linked instead, for a
//! frontier that keeps its size). [`Site::expected`] does not list wide URLs.
//!
//! Markup modes change how pages carry what they reference, not the graph: [`SiteSpec::noscript_links`] puts a
//! page's links only inside `<noscript>` (as mdBook does with its sidebar); [`SiteSpec::embeds`] gives every page
//! requisites under `/static/` (a stylesheet that `@import`s another and loads images and a font through `url()`,
//! an icon, an image with a `srcset`, a style attribute), served with their content types and listed in
//! [`Expected::embeds`].
//!
//! Realistic mode ([`SiteSpec::realistic`]) lays pages out like a documentation site: 5 to 60 KB each (drawn from
//! the seed and the page), an inline `<style>` and `<script>`, a header navigation of 30 to 80 links to pages of
//! the same host, a sidebar, sections with headings, paragraphs with inline links and `<code>`, tables,
//! highlighted code blocks and images. The header links join the graph (so depth-limited expectations follow them)
//! but reach no page the chain does not: without a depth limit the expected crawl is the plain mode's.
//!
//! Changing mode ([`SiteSpec::changing`], see [`ChangingSpec`]) gives every HTML page a change schedule drawn from
//! the seed (periodic, never, bursts, Poisson), a version marker in its body, a strong `ETag` and a `Last-Modified`,
//! and answers `If-None-Match` / `If-Modified-Since` with 304; hosts can misbehave on purpose ([`Misbehavior`]).
//! The page sitemap then lists every page with its true `<lastmod>` and a `<changefreq>`, and `/new/{k}` pages
//! appear in it as they are born (not linked, not in [`Site::expected`]). Time is the site's [`SiteClock`], which a
//! test advances; [`Site::changes_between`] and [`Site::version`] are the ground truth.
//!
//! Tests can override any path of any host with a [`Route`] (status, headers, delays, stalls, trickling,
//! closing the connection, sequences, gzip bombs), or every path of a host at once ([`Site::set_host_route`]), and
//! change or remove overrides while the site runs.

mod changing;
mod clock;
mod conditional;
mod graph;
mod log;
mod realistic;
mod render;
mod routes;
mod server;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bfs;
#[cfg(test)]
mod tests_changing;
#[cfg(test)]
mod tests_modes;
#[cfg(test)]
mod tests_observe;
#[cfg(test)]
mod tests_realistic;
#[cfg(test)]
mod tests_wide;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

pub use changing::{ChangeClass, ChangingSpec, ClassWeights, Misbehavior};
pub use clock::SiteClock;
pub use conditional::{http_date, parse_http_date};
pub use log::RequestLog;
pub use routes::{GZIP_BOMB_SIZE, Route};

use render::Renderer;
use server::{Shared, Tasks};

/// Errors starting a site.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("invalid site spec: {0}")]
    InvalidSpec(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Largest [`SiteSpec::wide_links`]: a page of a million links is already about 30 MB of HTML.
pub const MAX_WIDE_LINKS: usize = 1_000_000;

/// Shape of a generated site. Everything is deterministic from these values (ports aside).
#[derive(Debug, Clone, PartialEq)]
pub struct SiteSpec {
    /// number of simulated hosts (each on its own loopback IP)
    pub hosts: usize,
    /// page ids `0..pages_per_host` on each host
    pub pages_per_host: usize,
    /// pseudo-random page links per page, besides the chain link to the next page and the special links
    pub links_per_page: usize,
    /// share (0..=1) of the pseudo-random links that point to another host
    pub cross_host_ratio: f64,
    pub seed: u64,
    /// gzip generated 200 bodies when the request accepts gzip
    pub gzip: bool,
    /// serve robots.txt (`User-agent: *`, `Disallow: /private/`, `Sitemap:`); otherwise it is 404
    pub robots: bool,
    /// serve `/sitemap.xml` (index), `/sitemap-pages.xml` and the orphan pages
    pub sitemaps: bool,
    /// link and serve `/old/{n}` (301)
    pub redirects: bool,
    /// link `/missing/{n}` (404)
    pub missing: bool,
    /// orphan pages per host (only with `sitemaps`)
    pub orphans: usize,
    /// host `i` listens on `127.0.0.{first_octet + i}` (`{prefix}.{first_octet + i}`)
    pub first_octet: u8,
    /// the first three octets of the hosts' addresses: 127.0.0 by default; a test whose crawler runs in a network
    /// namespace of its own gives the site addresses it added to the namespaces' hub
    pub prefix: [u8; 3],
    /// 0: each host gets its own free port; otherwise all hosts use this port
    pub port: u16,
    /// pad HTML pages to about this many bytes
    pub page_bytes: usize,
    /// keep the per-request log (`requests`, `hits`, `min_inter_arrival`); counters work either way
    pub log_requests: bool,
    /// wide mode: page 0 and every 200 `/w/{id}` page link to this many distinct new `/w/{id}` URLs of their host
    /// (node `i` to `i * wide_links + 1 ..= i * wide_links + wide_links`, page 0 being node 0); 0 = off
    pub wide_links: usize,
    /// share (0..=1) of the `/w/{id}` URLs that answer 200 with wide links of their own; the rest answer 404
    pub wide_ok_ratio: f64,
    /// a 200 `/w/{id}` page links to its siblings (the links of its parent) instead of new URLs, so a crawl that
    /// resumes a wide-mode frontier meets only URLs it knows and the frontier keeps its size
    pub wide_siblings: bool,
    /// a page's links are written only inside `<noscript>` (found by a crawler that reads it as markup)
    pub noscript_links: bool,
    /// pages reference requisites under `/static/` (see [`Expected::embeds`])
    pub embeds: bool,
    /// Every answer waits this long before it is sent (a slow host); 0 = at once.
    pub delay_ms: u64,
    /// Realistic corpus: pages laid out like documentation (see the module docs); `page_bytes` is ignored.
    pub realistic: bool,
    /// Absolute URLs (links, seeds, sitemaps, the expected crawl) name host `i` `h{i}.test` instead of its IP, so
    /// that a crawler resolves a name for every URL (given `h{i}.test` = `127.0.0.{first_octet + i}`, say in its
    /// hosts table).
    pub host_names: bool,
    /// Changing mode: pages change on schedules and carry validators (see the module docs); `None` = off.
    pub changing: Option<ChangingSpec>,
}

impl Default for SiteSpec {
    fn default() -> Self {
        Self {
            hosts: 3,
            pages_per_host: 200,
            links_per_page: 8,
            cross_host_ratio: 0.1,
            seed: 42,
            gzip: true,
            robots: true,
            sitemaps: true,
            redirects: true,
            missing: true,
            orphans: 3,
            first_octet: 2,
            prefix: [127, 0, 0],
            port: 0,
            page_bytes: 2048,
            log_requests: true,
            wide_links: 0,
            wide_ok_ratio: 0.1,
            wide_siblings: false,
            noscript_links: false,
            embeds: false,
            delay_ms: 0,
            realistic: false,
            host_names: false,
            changing: None,
        }
    }
}

impl SiteSpec {
    /// A small site for tests: 2 hosts x 30 pages, 2 orphans each.
    pub fn small() -> Self {
        Self {
            hosts: 2,
            pages_per_host: 30,
            links_per_page: 4,
            cross_host_ratio: 0.15,
            seed: 7,
            orphans: 2,
            page_bytes: 800,
            ..Self::default()
        }
    }

    pub(crate) fn effective_cross_ratio(&self) -> f64 {
        if self.cross_host_ratio.is_nan() {
            0.0
        } else {
            self.cross_host_ratio.clamp(0.0, 1.0)
        }
    }

    pub(crate) fn effective_wide_ratio(&self) -> f64 {
        if self.wide_ok_ratio.is_nan() {
            0.0
        } else {
            self.wide_ok_ratio.clamp(0.0, 1.0)
        }
    }

    fn validate(&self) -> Result<(), SiteError> {
        let bad = |m: &str| Err(SiteError::InvalidSpec(m.to_owned()));
        if self.hosts == 0 {
            return bad("hosts must be at least 1");
        }
        if self.pages_per_host == 0 {
            return bad("pages_per_host must be at least 1");
        }
        if self.first_octet == 0 || usize::from(self.first_octet) + self.hosts - 1 > 255 {
            return bad("first_octet + hosts - 1 must be within 1..=255");
        }
        if self.wide_links > MAX_WIDE_LINKS {
            return bad("wide_links must be at most 1000000");
        }
        if let Some(ch) = &self.changing {
            ch.validate(self.hosts).map_err(SiteError::InvalidSpec)?;
        }
        Ok(())
    }

    /// The IP of host `i`.
    pub fn ip(&self, host: usize) -> Ipv4Addr {
        let last = (usize::from(self.first_octet) + host).min(255) as u8;
        let [a, b, c] = self.prefix;
        Ipv4Addr::new(a, b, c, last)
    }

    /// Linked pages in the whole site (`hosts * pages_per_host`, orphans not counted).
    pub fn total_pages(&self) -> usize {
        self.hosts.saturating_mul(self.pages_per_host)
    }
}

/// What a crawler is assumed to do, for [`Site::expected`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectOptions {
    /// skip URLs disallowed by robots.txt (`/private/`)
    pub respect_robots: bool,
    /// add URLs of the sitemaps (found via robots.txt or `/sitemap.xml`) of every host it reaches, at depth 1
    pub follow_sitemaps: bool,
    /// fetch URLs at most this many links from the seed (`Some(0)`: the seed only)
    pub max_depth: Option<u32>,
}

impl Default for ExpectOptions {
    /// robots respected, sitemaps followed, no depth limit
    fn default() -> Self {
        Self {
            respect_robots: true,
            follow_sitemaps: true,
            max_depth: None,
        }
    }
}

/// The exact result of a correct crawl, as canonical absolute URLs (`http://127.0.0.2:40000/page/7`, root `.../`).
/// Only page URLs: robots.txt and sitemap fetches are not listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// URLs answered 200 (pages, redirect targets, orphans, and private pages when robots are ignored)
    pub fetched_ok: BTreeSet<String>,
    /// 301 URL -> Location
    pub redirects: BTreeMap<String, String>,
    /// URLs answered 404
    pub not_found: BTreeSet<String>,
    /// URLs found but disallowed by robots.txt
    pub robots_excluded: BTreeSet<String>,
    /// `rel=nofollow` targets: never fetched
    pub never: BTreeSet<String>,
    /// With [`SiteSpec::embeds`]: the requisites of the pages answered 200 (all 200 `text/css`, `image/png`,
    /// `image/x-icon` or `font/woff2`), which a crawl that fetches requisites fetches once each. Not counted in
    /// [`Expected::fetch_count`].
    pub embeds: BTreeSet<String>,
}

impl Expected {
    /// Number of page requests a correct crawl makes (each URL once).
    pub fn fetch_count(&self) -> usize {
        self.fetched_ok.len() + self.redirects.len() + self.not_found.len()
    }

    /// Every URL a correct crawl records (once each): answered 200, redirected, answered 404, or excluded by
    /// robots.txt.
    pub fn recorded(self) -> BTreeSet<String> {
        let mut all = self.fetched_ok;
        all.extend(self.redirects.into_keys());
        all.extend(self.not_found);
        all.extend(self.robots_excluded);
        all
    }
}

/// Builds a site with override routes, then starts it.
pub struct SiteBuilder {
    spec: SiteSpec,
    routes: Vec<(usize, String, Route)>,
    host_routes: Vec<(usize, Route)>,
    clock: Option<SiteClock>,
}

impl SiteBuilder {
    /// The site's clock (changing mode). Without one the site runs a manual clock standing at
    /// [`ChangingSpec::epoch_s`] (the Unix epoch outside changing mode) until the test advances it.
    pub fn clock(mut self, clock: SiteClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// On `host`, answer `path` (exact; `path?query` matches before `path`) with `route` instead of the generator.
    pub fn route(mut self, host: usize, path: &str, route: Route) -> Self {
        self.routes.push((host, path.to_owned(), route));
        self
    }

    /// On `host`, answer every path that has no route of its own with `route` instead of the generator.
    pub fn host_route(mut self, host: usize, route: Route) -> Self {
        self.host_routes.push((host, route));
        self
    }

    /// Binds every host and starts serving. Needs a tokio runtime.
    pub async fn start(self) -> Result<Site, SiteError> {
        let spec = self.spec;
        spec.validate()?;
        let clock = self.clock.unwrap_or_else(|| {
            let epoch = spec.changing.as_ref().map_or(0, |c| c.epoch_s);
            SiteClock::manual(epoch.saturating_mul(1000))
        });
        let mut listeners = Vec::with_capacity(spec.hosts);
        let mut bases = Vec::with_capacity(spec.hosts);
        for host in 0..spec.hosts {
            let addr = SocketAddr::from((spec.ip(host), spec.port));
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| SiteError::Bind { addr, source })?;
            let local = listener
                .local_addr()
                .map_err(|source| SiteError::Bind { addr, source })?;
            bases.push(if spec.host_names {
                format!("http://h{host}.test:{}", local.port())
            } else {
                format!("http://{local}")
            });
            listeners.push((listener, local));
        }
        let routes: Vec<RwLock<HashMap<String, Arc<Route>>>> = (0..spec.hosts)
            .map(|_| RwLock::new(HashMap::new()))
            .collect();
        let host_routes: Vec<RwLock<Option<Arc<Route>>>> =
            (0..spec.hosts).map(|_| RwLock::new(None)).collect();
        let has_routes = !self.routes.is_empty() || !self.host_routes.is_empty();
        for (host, path, route) in self.routes {
            if let Some(map) = routes.get(host) {
                map.write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(path, Arc::new(route));
            }
        }
        for (host, route) in self.host_routes {
            if let Some(slot) = host_routes.get(host) {
                *slot.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(route));
            }
        }
        let rec = Arc::new(log::Recorder::new(spec.hosts, spec.log_requests));
        let shared = Arc::new(Shared {
            render: Renderer::new(spec, bases, clock),
            rec,
            routes,
            host_routes,
            has_routes: AtomicBool::new(has_routes),
        });
        let (stop, stop_rx) = watch::channel(false);
        let tasks = Tasks::new(stop_rx);
        let mut addrs = Vec::with_capacity(listeners.len());
        for (host, (listener, local)) in listeners.into_iter().enumerate() {
            addrs.push(local);
            tasks.spawn(server::accept_loop(
                listener,
                host,
                Arc::clone(&shared),
                tasks.clone(),
            ));
        }
        tracing::debug!(hosts = addrs.len(), "test site started");
        Ok(Site {
            shared,
            addrs,
            stop,
            tasks,
        })
    }
}

/// A running test site. Dropping it stops all its servers; [`Site::shutdown`] also waits for them.
pub struct Site {
    shared: Arc<Shared>,
    addrs: Vec<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: Tasks,
}

impl Site {
    pub fn builder(spec: SiteSpec) -> SiteBuilder {
        SiteBuilder {
            spec,
            routes: Vec::new(),
            host_routes: Vec::new(),
            clock: None,
        }
    }

    /// Starts a site without overrides.
    pub async fn start(spec: SiteSpec) -> Result<Site, SiteError> {
        Self::builder(spec).start().await
    }

    pub fn spec(&self) -> &SiteSpec {
        &self.shared.render.spec
    }

    pub fn hosts(&self) -> usize {
        self.addrs.len()
    }

    pub fn addr(&self, host: usize) -> Option<SocketAddr> {
        self.addrs.get(host).copied()
    }

    /// `http://127.0.0.{x}:{port}` (`http://h{i}.test:{port}` with [`SiteSpec::host_names`]; no trailing slash);
    /// empty for an unknown host.
    pub fn base(&self, host: usize) -> &str {
        self.shared
            .render
            .bases
            .get(host)
            .map_or("", String::as_str)
    }

    /// Absolute URL of `path` (starting with `/`) on `host`.
    pub fn url(&self, host: usize, path: &str) -> String {
        format!("{}{}", self.base(host), path)
    }

    /// Canonical URL of page `n` on `host` (`.../` for page 0).
    pub fn page_url(&self, host: usize, n: usize) -> String {
        let mut s = self.base(host).to_owned();
        graph::Target::page(host, n).write_path(&mut s);
        s
    }

    /// The default seed: page 0 of host 0.
    pub fn seed_url(&self) -> String {
        self.page_url(0, 0)
    }

    /// Page 0 of every host.
    pub fn all_seed_urls(&self) -> Vec<String> {
        (0..self.hosts()).map(|h| self.page_url(h, 0)).collect()
    }

    /// The orphan URLs of `host` (listed only in its page sitemap).
    pub fn orphan_urls(&self, host: usize) -> Vec<String> {
        graph::orphans(self.spec(), host)
            .map(|t| {
                let mut s = self.base(host).to_owned();
                t.write_path(&mut s);
                s
            })
            .collect()
    }

    /// Expected crawl from the default seed (page 0 of host 0).
    pub fn expected(&self, opts: ExpectOptions) -> Expected {
        self.expected_from(opts, &[0])
    }

    /// Expected crawl seeded with page 0 of each host in `seed_hosts`.
    pub fn expected_from(&self, opts: ExpectOptions, seed_hosts: &[usize]) -> Expected {
        graph::expected(self.spec(), &self.shared.render.bases, &opts, seed_hosts)
    }

    /// The site's clock (a test advances a manual one to make pages change).
    pub fn clock(&self) -> &SiteClock {
        &self.shared.render.clock
    }

    fn schedule(&self, host: usize, path: &str) -> Option<changing::Schedule> {
        let r = &self.shared.render;
        let ch = r.spec.changing.as_ref()?;
        let key = changing::PageKey::parse(host, path)?;
        r.has_schedule(&key)
            .then(|| changing::Schedule::of(&r.spec, ch, &key))
    }

    /// Changing mode: the change instants (site time, Unix seconds) of `path` on `host` in `(from_s, to_s]`;
    /// `None` when the path has no schedule.
    pub fn changes_between(
        &self,
        host: usize,
        path: &str,
        from_s: u64,
        to_s: u64,
    ) -> Option<Vec<u64>> {
        self.schedule(host, path)
            .map(|s| s.changes_between(from_s, to_s))
    }

    /// Changing mode: the class of `path` on `host` (`None` when it has no schedule).
    pub fn change_class(&self, host: usize, path: &str) -> Option<ChangeClass> {
        self.schedule(host, path).map(|s| s.class)
    }

    /// Changing mode: the site time (Unix seconds) from which `path` on `host` exists with version 0: the epoch,
    /// or a `/new/{k}` page's birth. `None` when the path has no schedule.
    pub fn schedule_start(&self, host: usize, path: &str) -> Option<u64> {
        self.schedule(host, path).map(|s| s.start)
    }

    /// Changing mode: `(version, since)` of `path` on `host` at site time `t_s`: the number of changes so far and
    /// the instant the version became current (its `Last-Modified`). `None` without a schedule or before birth.
    pub fn version_at(&self, host: usize, path: &str, t_s: u64) -> Option<(u64, u64)> {
        self.schedule(host, path)?.version_at(t_s)
    }

    /// [`Site::version_at`] now.
    pub fn version(&self, host: usize, path: &str) -> Option<(u64, u64)> {
        self.version_at(host, path, self.clock().now_s())
    }

    /// Changing mode: the strong `ETag` a behaving host sends for `path` at `version` (identity or gzip coding).
    pub fn etag(&self, host: usize, path: &str, version: u64, gzipped: bool) -> Option<String> {
        self.schedule(host, path).map(|s| s.etag(version, gzipped))
    }

    /// Changing mode: the paths of `host` with a schedule that its page sitemap lists now (pages, orphans, new
    /// pages born so far), in sitemap order. Private and nofollow pages change too but are not listed.
    pub fn changing_paths(&self, host: usize) -> Vec<String> {
        let r = &self.shared.render;
        r.sitemap_keys(host, r.clock.now_s())
            .iter()
            .map(changing::PageKey::path)
            .collect()
    }

    /// Adds or replaces an override on a running site.
    pub fn set_route(&self, host: usize, path: &str, route: Route) {
        if let Some(map) = self.shared.routes.get(host) {
            map.write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(path.to_owned(), Arc::new(route));
            self.shared.has_routes.store(true, Ordering::Release);
        }
    }

    /// Removes an override; the generated content answers again.
    pub fn remove_route(&self, host: usize, path: &str) {
        if let Some(map) = self.shared.routes.get(host) {
            map.write().unwrap_or_else(|e| e.into_inner()).remove(path);
        }
    }

    /// Answers every path of `host` that has no route of its own with `route` (a host that turns to answering 429
    /// to everything, say), on a running site.
    pub fn set_host_route(&self, host: usize, route: Route) {
        if let Some(slot) = self.shared.host_routes.get(host) {
            *slot.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(route));
            self.shared.has_routes.store(true, Ordering::Release);
        }
    }

    /// Removes the route of every path of `host`: the generated content (and the paths' own routes) answer again.
    pub fn remove_host_route(&self, host: usize) {
        if let Some(slot) = self.shared.host_routes.get(host) {
            *slot.write().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Every request so far, in arrival order (empty when `log_requests` is off).
    pub fn requests(&self) -> Vec<RequestLog> {
        self.shared.rec.snapshot()
    }

    /// Forgets the request log (counters are kept).
    pub fn clear_requests(&self) {
        self.shared.rec.clear();
    }

    /// Requests on `host` whose path (with or without its query) is `path`.
    pub fn hits(&self, host: usize, path: &str) -> usize {
        self.shared.rec.hits(host, path)
    }

    /// Peak number of simultaneous in-flight requests on `host` (start to body fully sent or dropped).
    pub fn max_concurrency(&self, host: usize) -> usize {
        self.shared
            .rec
            .stats(host)
            .map_or(0, |s| s.peak.load(Ordering::SeqCst))
    }

    /// Requests in flight on `host` right now.
    pub fn in_flight(&self, host: usize) -> usize {
        self.shared
            .rec
            .stats(host)
            .map_or(0, |s| s.in_flight.load(Ordering::SeqCst))
    }

    /// Smallest gap between two request starts on `host` (`None` with fewer than two logged requests).
    pub fn min_inter_arrival(&self, host: usize) -> Option<Duration> {
        self.shared.rec.min_inter_arrival(host)
    }

    /// TCP connections accepted by `host`.
    pub fn connections(&self, host: usize) -> usize {
        self.shared
            .rec
            .stats(host)
            .map_or(0, |s| s.connections.load(Ordering::Relaxed))
    }

    /// TCP connections of every host not closed yet: 0 once a killed client's connections are all closed, so
    /// every request it sent before it died is in the log.
    pub fn open_connections(&self) -> usize {
        self.shared
            .rec
            .hosts
            .iter()
            .map(|s| s.open.load(Ordering::SeqCst))
            .sum()
    }

    /// Requests received by all hosts (counted even when logging is off).
    pub fn total_requests(&self) -> u64 {
        self.shared.rec.total_requests()
    }

    /// Response body bytes sent by all hosts (as sent on the wire, i.e. compressed when gzipped).
    pub fn bytes_sent(&self) -> u64 {
        self.shared.rec.total_bytes()
    }

    /// Tasks (listeners, connections, HTTP/2 streams) still running.
    pub fn live_tasks(&self) -> usize {
        self.tasks.live()
    }

    /// Stops every listener and connection and waits (up to 5 s) until all tasks are gone.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        if !self.tasks.drained(Duration::from_secs(5)).await {
            tracing::warn!(
                live = self.tasks.live(),
                "test site tasks still running after shutdown"
            );
        }
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
