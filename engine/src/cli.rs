//! Command-line arguments.

use crate::error::EXIT_STATUS;
use clap::parser::ValueSource;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use std::path::PathBuf;

/// What `--help` says after the options: where the config comes from, where the outputs go, the signals.
pub const RUNNING_HELP: &str = "\
Config: --config PATH, else CRAWL_ENGINE_CONFIG, else ./config.toml in the working directory if there is one \
(the start's log line `config file` names the file and how it was chosen), else the built-in defaults. The \
repository's config.toml is the template for a real crawl; it documents every key.

Outputs: output.jsonl (one JSON record per URL), output.warc_dir (the WARC archive, when set) and \
frontier.data_dir (the crawl's state: keep it to resume). Relative paths are resolved against the config file's \
folder (the working directory without one). The summary goes to stdout, logs and progress to stderr.

Signals: the first SIGINT (Ctrl-C) or SIGTERM stops taking work, lets fetches in flight finish within \
shutdown.grace_ms, commits and exits; the same command resumes the crawl. A second one exits at once. SIGHUP \
re-reads the config file and applies the keys that can change while running.";

/// What `--help` says after the options: the config, the outputs, the signals and the exit statuses.
fn after_help() -> String {
    format!("{RUNNING_HELP}\n\n{EXIT_STATUS}")
}

/// A production web crawler: polite, durable, observable.
#[derive(Debug, Clone, Parser)]
#[command(name = "crawl-engine", version, about, long_about = None, after_help = after_help())]
pub struct Cli {
    /// The TOML configuration file. Without it: ./config.toml in the working directory if there is one (the log
    /// says so), else the built-in defaults.
    #[arg(long, short = 'c', value_name = "PATH", env = "CRAWL_ENGINE_CONFIG")]
    pub config: Option<PathBuf>,

    /// True when `config` came from `CRAWL_ENGINE_CONFIG` rather than `--config` (set by [`Cli::from_env_args`]).
    #[arg(skip)]
    pub config_from_env: bool,

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

impl Cli {
    /// The process's arguments, parsed (exits with clap's message on bad usage, or after `--help`/`--version`),
    /// with where `--config` came from.
    pub fn from_env_args() -> Cli {
        let matches = Cli::command().get_matches();
        let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        cli.config_from_env = matches.value_source("config") == Some(ValueSource::EnvVariable);
        cli
    }
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
