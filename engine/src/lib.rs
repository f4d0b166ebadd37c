//! crawl-engine: the binary's library half — command line, config loading, signals, progress and summary, and
//! the wiring that starts the actor tree ([`crawl_actors::tree`]) and waits for the crawl to end.
//!
//! # Layout
//! - [`cli`]: arguments. [`config_file`]: which config file a run reads. [`load`]: load and check the config.
//! - [`run`]: run the crawl. [`progress`]: bar or log lines.
//! - [`reload`]: SIGHUP config reloads. [`signals`]: SIGINT/SIGTERM on a thread of their own.
//! - [`merge`]: one JSONL from the files of a distributed crawl's processes.
//! - [`summary`]: the end-of-crawl report, with the process's CPU and memory (`crawl_observability::usage`).
//! - [`ownership`]: the crawl's outputs claimed before it writes a byte (`--fresh` moves old ones aside).
//! - [`check`]: `--check` beyond parsing. [`error`]: exit statuses.
//! - [`api`]: the control API's server. [`ctl`]: `crawl-engine ctl`, its client.

pub mod api;
pub mod check;
pub mod cli;
pub mod config_file;
pub mod ctl;
pub mod error;
pub mod load;
pub mod merge;
pub mod ownership;
pub mod progress;
pub mod reload;
pub mod run;
pub mod signals;
pub mod summary;

pub use error::EngineError;
pub use load::{load_config, load_config_with};
pub use run::{Options, run_crawl, run_crawl_owned};
