//! Command-line arguments.

use crate::error::EXIT_STATUS;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// A production web crawler: polite, durable, observable.
#[derive(Debug, Clone, Parser)]
#[command(name = "crawl-engine", version, about, long_about = None, after_help = EXIT_STATUS)]
pub struct Cli {
    /// The TOML configuration file (every key is documented in the shipped config.toml).
    #[arg(long, short = 'c', value_name = "PATH", env = "CRAWL_ENGINE_CONFIG")]
    pub config: Option<PathBuf>,

    /// A seed URL to add to crawl.seeds (repeatable).
    #[arg(long = "seed", value_name = "URL")]
    pub seeds: Vec<String>,

    /// See what a run would: validate the configuration (every problem with file:line:column), judge its outputs
    /// (held or owned by another crawl?), open its paths and ports, connect to Redis and the other servers it
    /// names; exit as the run would, without crawling.
    #[arg(long)]
    pub check: bool,

    /// Start over: move the old outputs (frontier.data_dir, output.jsonl, output.warc_dir) aside, renamed with a
    /// timestamp suffix (nothing is deleted), and start a new crawl. With --check: say what would move.
    #[arg(long)]
    pub fresh: bool,

    /// Write the end-of-crawl summary as JSON to this file as well.
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<PathBuf>,

    /// Never draw a progress bar, even on a terminal.
    #[arg(long)]
    pub no_progress: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What to do instead of crawling.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Merge the JSONL files of a crawl's processes into one, each record once (the first copy is kept).
    Merge {
        /// The merged file (written beside as OUT.merging, then renamed).
        #[arg(long, short = 'o', value_name = "OUT")]
        output: PathBuf,
        /// The JSONL files, in the order their records should come.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}
