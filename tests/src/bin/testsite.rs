//! `testsite`: serves a generated test site (see `crawl_tests::site`) for `make demo` and `make bench`.
//!
//! Prints `testsite ready seeds=<url,...> pages=<total>` once every host listens, serves until SIGTERM/SIGINT (or
//! until stdin closes with `--stdin-close`), then prints `testsite served requests=N bytes=N` and exits 0.
//! With `--first-request-file F`, each SIGUSR1 writes `armed` to F, and the first request received after it
//! replaces that with `first <unix seconds with nanoseconds>` (`make bench-scale` times restarts with it).
//! With `--changing` pages change on schedules and carry validators (see `crawl_tests::site::ChangingSpec`); the
//! site's clock runs `--time-scale` site seconds per real second from `--epoch`, and `--truth-file F` gets every
//! listed page's change instants at exit (for freshness: `freshness --truth F` reads it). With a scale above 1 the site's dates (`Date`,
//! `Last-Modified`, `<lastmod>`) run ahead of the real clock; `--epoch` in the past keeps them behind it.
//! Loopback only; needs no internet.

use std::fmt::Write as _;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use crawl_tests::site::{
    ChangingSpec, ExpectOptions, Misbehavior, Site, SiteClock, SiteError, SiteSpec,
};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Debug, Parser)]
#[command(
    name = "testsite",
    about = "Serve a generated multi-host test site on loopback"
)]
struct Args {
    /// simulated hosts, host i on 127.0.0.{first-octet + i}
    #[arg(long, default_value_t = 4)]
    hosts: usize,
    /// pages per host
    #[arg(long, default_value_t = 2500)]
    pages: usize,
    /// pseudo-random page links per page
    #[arg(long, default_value_t = 12)]
    links: usize,
    #[arg(long, default_value_t = 10)]
    first_octet: u8,
    /// 0: a free port per host
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// pad pages to about this size
    #[arg(long, default_value_t = 4000)]
    page_bytes: usize,
    /// share of links pointing to another host
    #[arg(long, default_value_t = 0.1)]
    cross_host_ratio: f64,
    /// graph seed
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// orphan pages (sitemap only) per host
    #[arg(long, default_value_t = 3)]
    orphans: usize,
    #[arg(long)]
    no_gzip: bool,
    #[arg(long)]
    no_robots: bool,
    #[arg(long)]
    no_sitemaps: bool,
    #[arg(long)]
    no_redirects: bool,
    #[arg(long)]
    no_missing: bool,
    /// keep the per-request log in memory (off: counters only)
    #[arg(long)]
    log_requests: bool,
    /// also write the seed URLs here, one per line
    #[arg(long)]
    seeds_file: Option<PathBuf>,
    /// seed with page 0 of every host (default: host 0 only)
    #[arg(long)]
    all_seeds: bool,
    /// write the expected crawl (robots respected, sitemaps followed, no depth limit) here as JSON
    #[arg(long)]
    expected_file: Option<PathBuf>,
    /// on each SIGUSR1 write `armed` here, then `first <unix time>` when the next request arrives
    #[arg(long)]
    first_request_file: Option<PathBuf>,
    /// also stop when stdin closes
    #[arg(long)]
    stdin_close: bool,
    /// wide mode: page 0 and every 200 /w/{id} page link to this many distinct new /w/{id} URLs; 0 = off
    #[arg(long, default_value_t = 0)]
    wide_links: usize,
    /// share of /w/{id} URLs that answer 200 with wide links of their own (the rest answer 404)
    #[arg(long, default_value_t = 0.1)]
    wide_ok_ratio: f64,
    /// 200 /w/{id} pages link to their siblings (URLs already linked) instead of new ones: a resumed crawl's
    /// frontier keeps its size
    #[arg(long)]
    wide_siblings: bool,
    /// write every page's links only inside <noscript>
    #[arg(long)]
    noscript_links: bool,
    /// pages reference requisites under /static/ (images, stylesheets, an icon, a font)
    #[arg(long)]
    embeds: bool,
    /// realistic corpus: documentation-like pages of 5-60 KB (navigation, sidebar, tables, code, inline scripts and
    /// styles) over the same link graph; --page-bytes is ignored
    #[arg(long)]
    realistic: bool,
    /// absolute URLs name host i `h{i}.test` instead of its IP (the crawler maps the names, e.g. in
    /// `[resolver] hosts`)
    #[arg(long)]
    host_names: bool,
    /// at exit write every request here, one line each: host, start and end in ms since the first request, status,
    /// path (implies --log-requests)
    #[arg(long)]
    request_log_file: Option<PathBuf>,
    /// the request log's start and end are Unix times in ms instead (to line up with another program's clock)
    #[arg(long)]
    request_log_unix: bool,
    /// every answer waits this many milliseconds (a slow host)
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// changing mode: pages change on schedules drawn from the seed and answer conditional requests
    #[arg(long)]
    changing: bool,
    /// changing mode: site seconds per real second
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// changing mode: Unix time (s) at which every page has version 0 and the site clock starts (default: now)
    #[arg(long)]
    epoch: Option<u64>,
    /// changing mode: pages /new/{k} per host, born one every --new-every seconds, listed only in the sitemap
    #[arg(long, default_value_t = 0)]
    new_pages: usize,
    #[arg(long, default_value_t = 300)]
    new_every: u64,
    /// changing mode: HOST=HOW makes a host misbehave (repeatable); HOW is etag-churn, ignore-conditional,
    /// future-last-modified, bad-last-modified, always-304, no-validators or lying-sitemap
    #[arg(long, value_parser = parse_misbehave)]
    misbehave: Vec<(usize, Misbehavior)>,
    /// changing mode: at exit write the change instants of every page the sitemaps list here as JSON
    #[arg(long)]
    truth_file: Option<PathBuf>,
    /// tokio worker threads (default: one per core)
    #[arg(long)]
    threads: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if let Some(t) = args.threads {
        builder.worker_threads(t.max(1));
    }
    let rt = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("testsite: cannot start runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("testsite: {e}");
            ExitCode::from(1)
        }
    }
}

/// Why `testsite` stopped before serving, or failed to write its files.
#[derive(Debug, thiserror::Error)]
enum TestsiteError {
    #[error(transparent)]
    Site(#[from] SiteError),
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot render the expected counts: {0}")]
    Expected(#[from] serde_json::Error),
    #[error("cannot watch {signal}: {source}")]
    Signal {
        signal: &'static str,
        source: io::Error,
    },
}

/// `std::fs::write` with the path in the error.
fn write_file(path: &Path, text: impl AsRef<[u8]>) -> Result<(), TestsiteError> {
    std::fs::write(path, text).map_err(|source| TestsiteError::Write {
        path: path.to_owned(),
        source,
    })
}

fn spec(args: &Args) -> SiteSpec {
    SiteSpec {
        hosts: args.hosts,
        pages_per_host: args.pages,
        links_per_page: args.links,
        cross_host_ratio: args.cross_host_ratio,
        seed: args.seed,
        gzip: !args.no_gzip,
        robots: !args.no_robots,
        sitemaps: !args.no_sitemaps,
        redirects: !args.no_redirects,
        missing: !args.no_missing,
        orphans: args.orphans,
        first_octet: args.first_octet,
        prefix: [127, 0, 0],
        port: args.port,
        page_bytes: args.page_bytes,
        log_requests: args.log_requests || args.request_log_file.is_some(),
        wide_links: args.wide_links,
        wide_ok_ratio: args.wide_ok_ratio,
        wide_siblings: args.wide_siblings,
        noscript_links: args.noscript_links,
        embeds: args.embeds,
        delay_ms: args.delay_ms,
        realistic: args.realistic,
        host_names: args.host_names,
        changing: args.changing.then(|| ChangingSpec {
            epoch_s: epoch(args),
            new_pages: args.new_pages,
            new_every_s: args.new_every,
            misbehaving: args.misbehave.iter().copied().collect(),
            ..ChangingSpec::default()
        }),
    }
}

fn parse_misbehave(s: &str) -> Result<(usize, Misbehavior), String> {
    let (host, how) = s.split_once('=').ok_or("expected HOST=HOW")?;
    let host = host
        .parse()
        .map_err(|_| format!("bad host index {host:?}"))?;
    let how = Misbehavior::parse(how).ok_or_else(|| format!("unknown misbehaviour {how:?}"))?;
    Ok((host, how))
}

fn epoch(args: &Args) -> u64 {
    args.epoch.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
    })
}

/// The ground truth of changing mode: clock parameters and, per listed page, its host index, the site time it
/// exists from (`start_s`: the epoch, or a new page's birth), its class and its change instants between the epoch
/// and now (site time, Unix seconds).
fn truth_json(site: &Site, epoch_s: u64, started_real_ms: u64) -> serde_json::Value {
    let now = site.clock().now_s();
    let mut pages = Vec::new();
    for host in 0..site.hosts() {
        for path in site.changing_paths(host) {
            pages.push(serde_json::json!({
                "url": site.url(host, &path),
                "host": host,
                "start_s": site.schedule_start(host, &path),
                "class": site.change_class(host, &path).map(|c| format!("{c:?}")),
                "changes": site.changes_between(host, &path, epoch_s, now).unwrap_or_default(),
            }));
        }
    }
    serde_json::json!({
        "time_scale": site.clock().time_scale(),
        "epoch_s": epoch_s,
        "started_real_ms": started_real_ms,
        "now_s": now,
        "pages": pages,
    })
}

fn expected_json(site: &Site, seed_hosts: &[usize]) -> serde_json::Value {
    let e = site.expected_from(ExpectOptions::default(), seed_hosts);
    serde_json::json!({
        "fetched_ok": e.fetched_ok,
        "redirects": e.redirects,
        "not_found": e.not_found,
        "robots_excluded": e.robots_excluded,
        "never": e.never,
        "embeds": e.embeds,
    })
}

async fn run(args: Args) -> Result<(), TestsiteError> {
    let spec = spec(&args);
    let epoch_s = spec.changing.as_ref().map_or(0, |c| c.epoch_s);
    let started_real_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let site = Site::builder(spec)
        .clock(SiteClock::scaled(
            epoch_s.saturating_mul(1000),
            args.time_scale,
        ))
        .start()
        .await?;
    let (seeds, seed_hosts): (Vec<String>, Vec<usize>) = if args.all_seeds {
        (site.all_seed_urls(), (0..site.hosts()).collect())
    } else {
        (vec![site.seed_url()], vec![0])
    };
    if let Some(path) = &args.seeds_file {
        let mut text = seeds.join("\n");
        text.push('\n');
        write_file(path, text)?;
    }
    if let Some(path) = &args.expected_file {
        let text = serde_json::to_string_pretty(&expected_json(&site, &seed_hosts))?;
        write_file(path, text)?;
    }
    let watch = |signal_name: &'static str, kind: SignalKind| {
        signal(kind).map_err(|source| TestsiteError::Signal {
            signal: signal_name,
            source,
        })
    };
    let mut term = watch("SIGTERM", SignalKind::terminate())?;
    let usr1 = match &args.first_request_file {
        Some(_) => Some(watch("SIGUSR1", SignalKind::user_defined1())?),
        None => None,
    };
    let first_request = first_request_loop(&site, usr1, args.first_request_file.as_ref());
    let (stdin_tx, stdin_rx) = tokio::sync::oneshot::channel::<()>();
    if args.stdin_close {
        // a plain thread: a blocking stdin read must not hold up runtime shutdown
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut stdin = std::io::stdin().lock();
            while let Ok(n) = stdin.read(&mut buf) {
                if n == 0 {
                    break;
                }
            }
            let _ = stdin_tx.send(());
        });
    }
    let stdin_close = args.stdin_close;
    let stdin_closed = async move {
        if stdin_close {
            let _ = stdin_rx.await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    println!(
        "testsite ready seeds={} pages={}",
        seeds.join(","),
        site.spec().total_pages()
    );
    let _ = std::io::stdout().flush();
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
        () = stdin_closed => {}
        () = first_request => {}
    }
    site.shutdown().await;
    if let Some(path) = &args.truth_file {
        let text = serde_json::to_string(&truth_json(&site, epoch_s, started_real_ms))?;
        write_file(path, text)?;
    }
    if let Some(path) = &args.request_log_file {
        write_request_log(&site, path, args.request_log_unix)?;
    }
    println!(
        "testsite served requests={} bytes={}",
        site.total_requests(),
        site.bytes_sent()
    );
    let _ = std::io::stdout().flush();
    Ok(())
}

/// Writes the request log: `host start_ms end_ms status path` per line, in order; times since the first request,
/// or Unix times with `unix`.
fn write_request_log(site: &Site, path: &Path, unix: bool) -> Result<(), TestsiteError> {
    let mut log = site.requests();
    log.sort_by_key(|r| r.start);
    let Some(t0) = log.first().map(|r| r.start) else {
        return write_file(path, "");
    };
    // the Unix time of t0, from one reading of both clocks
    let origin_ms = if unix {
        let (now, real) = (std::time::Instant::now(), SystemTime::now());
        let real_ms = real
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            * 1000.0;
        real_ms - now.saturating_duration_since(t0).as_secs_f64() * 1000.0
    } else {
        0.0
    };
    let ms = |t: std::time::Instant| origin_ms + t.duration_since(t0).as_secs_f64() * 1000.0;
    let mut text = String::with_capacity(log.len() * 48);
    for r in &log {
        let end = r.end.map_or(-1.0, ms);
        let _ = writeln!(
            text,
            "{} {:.3} {:.3} {} {}",
            r.host,
            ms(r.start),
            end,
            r.status,
            r.path
        );
    }
    write_file(path, text)
}

/// Seconds since the Unix epoch with nanoseconds, as `date +%s.%N` prints them.
fn unix_now() -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}", t.as_secs(), t.subsec_nanos())
}

/// On each SIGUSR1 writes `armed` to `path`; the first request counted after that writes `first <unix time>`.
/// The request counter is polled every millisecond while armed, so the time is at most about 1 ms late. Without a
/// path it waits forever.
async fn first_request_loop(
    site: &Site,
    usr1: Option<tokio::signal::unix::Signal>,
    path: Option<&PathBuf>,
) {
    let (Some(mut usr1), Some(path)) = (usr1, path) else {
        return std::future::pending().await;
    };
    let write = |text: String| {
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("testsite: cannot write {}: {e}", path.display());
        }
    };
    let mut armed: Option<u64> = None;
    loop {
        tokio::select! {
            sig = usr1.recv() => {
                if sig.is_none() {
                    return std::future::pending().await;
                }
                armed = Some(site.total_requests());
                write("armed\n".to_owned());
            }
            () = tokio::time::sleep(Duration::from_millis(1)), if armed.is_some() => {
                if armed.is_some_and(|baseline| site.total_requests() > baseline) {
                    armed = None;
                    write(format!("first {}\n", unix_now()));
                }
            }
        }
    }
}
