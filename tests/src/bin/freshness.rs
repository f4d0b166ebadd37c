//! `freshness`: how fresh a client kept its copies of a changing test site (`testsite --changing`), from the site's
//! truth file and the client's requests: crawl-engine's JSONL (`--jsonl`) or the site's own request log written
//! with `--request-log-unix` (`--request-log`, for any other client).
//!
//! Prints, over the window (`--from-ms`/`--to-ms`, real Unix ms; default the first and the last request), for all
//! pages and per change class: pages, pages with a copy, mean share of time with a current copy, mean age of the
//! copies (site seconds), requests per page, and the share of 304s among revisits of unchanged pages (by the
//! records' `changed: false`, and by the truth). `--json F` writes the same as JSON (`make bench-fresh` reads it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use crawl_tests::freshness::report::{
    Group, Report, Truth, Window, report, requests_from_jsonl, requests_from_log,
};

#[derive(Debug, Parser)]
#[command(
    name = "freshness",
    about = "Freshness of a client's copies of a changing test site"
)]
struct Args {
    /// the site's truth file (testsite --truth-file)
    #[arg(long)]
    truth: PathBuf,
    /// crawl-engine's JSONL output
    #[arg(
        long,
        conflicts_with = "request_log",
        required_unless_present = "request_log"
    )]
    jsonl: Option<PathBuf>,
    /// the site's request log (testsite --request-log-file F --request-log-unix)
    #[arg(long)]
    request_log: Option<PathBuf>,
    /// start of the window, real Unix ms (default: the first request)
    #[arg(long)]
    from_ms: Option<f64>,
    /// end of the window, real Unix ms (default: the last request)
    #[arg(long)]
    to_ms: Option<f64>,
    /// also write the report here as JSON
    #[arg(long)]
    json: Option<PathBuf>,
    /// name printed before the figures
    #[arg(long, default_value = "crawl")]
    label: String,
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn line(label: &str, g: &Group) -> String {
    format!(
        "{label:<24} {:>6} {:>7} {:>7.3} {:>10.1} {:>9.2} {:>9} {:>7.1} % {:>9} {:>7.1} %",
        g.pages,
        g.fetched,
        g.fresh_share,
        g.mean_age_s,
        g.requests_per_page,
        g.unchanged_revisits,
        g.unchanged_304_share() * 100.0,
        g.still_revisits,
        g.still_304_share() * 100.0,
    )
}

fn print(label: &str, r: &Report) {
    println!(
        "freshness {label}: window {:.1} real s = {:.0} site s, {} requests in it",
        (r.to_real_ms - r.from_real_ms) / 1000.0,
        r.window_site_s,
        r.total_requests
    );
    println!(
        "{:<24} {:>6} {:>7} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "class",
        "pages",
        "copies",
        "fresh",
        "age site s",
        "req/page",
        "unchanged",
        "304",
        "still",
        "304"
    );
    println!("{}", line("all", &r.all));
    for g in &r.classes {
        println!("{}", line(&g.class, g));
    }
}

fn run(args: &Args) -> Result<(), String> {
    let truth = Truth::parse(&read(&args.truth)?).map_err(|e| e.to_string())?;
    let requests = match (&args.jsonl, &args.request_log) {
        (Some(j), _) => requests_from_jsonl(&read(j)?),
        (None, Some(l)) => requests_from_log(&read(l)?, &truth),
        (None, None) => return Err("give --jsonl or --request-log".to_owned()),
    }
    .map_err(|e| e.to_string())?;
    let r = report(
        &truth,
        &requests,
        Window {
            from_ms: args.from_ms,
            to_ms: args.to_ms,
        },
    );
    print(&args.label, &r);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("freshness: {e}");
            ExitCode::from(1)
        }
    }
}
