//! `testsite`: serves a generated test site (see `crawl_tests::site`) for `make demo` and `make bench`.
//!
//! Prints `testsite ready seeds=<url,...> pages=<total>` once every host listens, serves until SIGTERM/SIGINT (or
//! until stdin closes with `--stdin-close`), then prints `testsite served requests=N bytes=N` and exits 0.
//! Loopback only; needs no internet.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use crawl_tests::site::{ExpectOptions, Site, SiteSpec};
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
    /// also stop when stdin closes
    #[arg(long)]
    stdin_close: bool,
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
        port: args.port,
        page_bytes: args.page_bytes,
        log_requests: args.log_requests,
    }
}

fn expected_json(site: &Site, seed_hosts: &[usize]) -> serde_json::Value {
    let e = site.expected_from(ExpectOptions::default(), seed_hosts);
    serde_json::json!({
        "fetched_ok": e.fetched_ok,
        "redirects": e.redirects,
        "not_found": e.not_found,
        "robots_excluded": e.robots_excluded,
        "never": e.never,
    })
}

async fn run(args: Args) -> Result<(), String> {
    let site = Site::start(spec(&args)).await.map_err(|e| e.to_string())?;
    let (seeds, seed_hosts): (Vec<String>, Vec<usize>) = if args.all_seeds {
        (site.all_seed_urls(), (0..site.hosts()).collect())
    } else {
        (vec![site.seed_url()], vec![0])
    };
    if let Some(path) = &args.seeds_file {
        let mut text = seeds.join("\n");
        text.push('\n');
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.expected_file {
        let text = serde_json::to_string_pretty(&expected_json(&site, &seed_hosts))
            .map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
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
    let stdin_closed = async move {
        if args.stdin_close {
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
    }
    site.shutdown().await;
    println!(
        "testsite served requests={} bytes={}",
        site.total_requests(),
        site.bytes_sent()
    );
    let _ = std::io::stdout().flush();
    Ok(())
}
