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
    #[arg(
        long,
        short = 'c',
        value_name = "PATH",
        env = "CRAWL_ENGINE_CONFIG",
        global = true
    )]
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
    /// Steer a running crawl through its control API ([api] listen): status, hosts, pauses, politeness, URLs,
    /// queue drops, reloads. Exit status 0 on success, 2 on bad usage or a refusal (4xx), 1 when the API cannot be
    /// reached or fails (5xx).
    Ctl(CtlArgs),
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

/// `crawl-engine ctl`: where the API is, how to authenticate, what to ask.
#[derive(Debug, Clone, clap::Args)]
pub struct CtlArgs {
    /// The API's base URL. Default: the [api] listen of --config (https when it has a certificate), else
    /// http://127.0.0.1:9465.
    #[arg(long, value_name = "URL", global = true)]
    pub api: Option<String>,
    /// The file holding the bearer token. Default: the [api] token_file of --config, if any.
    #[arg(long, value_name = "FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// PEM CA certificates trusted for an https API besides the system's roots.
    #[arg(long, value_name = "FILE", global = true)]
    pub ca_file: Option<PathBuf>,
    /// Print the server's JSON answer as it is instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub action: CtlAction,
}

/// What `crawl-engine ctl` asks.
#[derive(Debug, Clone, Subcommand)]
pub enum CtlAction {
    /// The crawl's state, counters and operator settings (GET /v1/status).
    Status,
    /// Hosts, largest first (GET /v1/hosts).
    Hosts {
        /// queued, in_flight, errors or name.
        #[arg(long, default_value = "queued")]
        sort: String,
        /// At most this many hosts (1 to 10000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One host (GET /v1/hosts/HOST).
    Host {
        /// `example.org` or `example.org:8080`.
        host: String,
    },
    /// Add URLs to the frontier (POST /v1/urls).
    Add {
        #[arg(required = true, value_name = "URL")]
        urls: Vec<String>,
        /// The depth they are queued at.
        #[arg(long, default_value_t = 0)]
        depth: u32,
        /// Queue them even when the frontier knows them already.
        #[arg(long)]
        force: bool,
    },
    /// Pause the crawl, or one host (POST /v1/pause).
    Pause { host: Option<String> },
    /// Resume the crawl, or one host (POST /v1/resume).
    Resume { host: Option<String> },
    /// Set a host's politeness (PUT), or --clear it back to the configured one (DELETE).
    Politeness {
        host: String,
        #[arg(long, value_name = "N")]
        delay_ms: Option<u64>,
        #[arg(long, value_name = "N")]
        concurrency: Option<u32>,
        /// Lapse after N seconds.
        #[arg(long, value_name = "N")]
        expires_s: Option<u64>,
        /// Back to the configured politeness.
        #[arg(long, conflicts_with_all = ["delay_ms", "concurrency", "expires_s"])]
        clear: bool,
    },
    /// Drop the URLs queued for a host (DELETE /v1/hosts/HOST/queue).
    Drop { host: String },
    /// Re-read the config file, as SIGHUP does (POST /v1/reload).
    Reload,
}
