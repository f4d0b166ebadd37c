//! Loading the config: the file (or the defaults), the command-line seeds, and the checks that need both.

use crate::error::EngineError;
use crawl_core::canon;
use crawl_core::config::{Config, hide_userinfo, seed_url};
use std::path::Path;

/// Loads the config file (or the defaults when `path` is None), adds the command-line seeds and checks that there
/// is something to crawl. Every problem is reported at once: those of the file and those of every `--seed`.
pub fn load_config(path: Option<&Path>, seeds: &[String]) -> Result<Config, EngineError> {
    load_config_with(path, seeds, true)
}

/// [`load_config`]; with `require_seeds` false a config without seeds is accepted (`--check`: seeds may come from
/// `--seed` when it runs).
pub fn load_config_with(
    path: Option<&Path>,
    seeds: &[String],
    require_seeds: bool,
) -> Result<Config, EngineError> {
    let mut problems = Vec::new();
    let (mut config, file_ok) = match path.map(Config::from_file) {
        Some(Ok(config)) => (config, true),
        Some(Err(errors)) => {
            problems.extend(errors.iter().map(ToString::to_string));
            (Config::default(), false)
        }
        None => (Config::default(), true),
    };
    // A seed's user name and password become `Authorization: Basic` for the seed's origin (and only it); the
    // canonical seed, like every URL the crawl stores or records, has none.
    for s in seeds {
        let raw = match seed_url(s.trim()) {
            Ok(raw) => raw,
            Err(e) => {
                problems.push(format!("--seed: {e}"));
                continue;
            }
        };
        if let Err(e) = config.fetch.credentials.add_seed(&raw) {
            problems.push(e.to_string());
        }
        match canon::canonicalize(s) {
            Ok(u) => config.add_seed(u),
            Err(e) => problems.push(format!("--seed {}: {e}", hide_userinfo(s))),
        }
    }
    // Two ways of fetching a URL again cannot both decide when: the schedule of `[recrawl]` takes every URL.
    if file_ok && config.recrawl.enabled && !config.frontier.redis.recrawl_after.is_zero() {
        problems.push(
            "recrawl.enabled: continuous crawling schedules every URL's next visit itself; set \
             frontier.redis.recrawl_after_s = 0 (it queues rediscovered URLs again after a period)"
                .to_owned(),
        );
    }
    if file_ok && config.crawl.seeds.is_empty() && require_seeds && problems.is_empty() {
        problems.push("no seeds: set crawl.seeds in the config or pass --seed URL".to_owned());
    }
    if !problems.is_empty() {
        return Err(EngineError::Usage(problems.join("\n")));
    }
    // Seeds from the file are canonicalised like every other URL.
    let mut canonical = Vec::with_capacity(config.crawl.seeds.len());
    for s in &config.crawl.seeds {
        if let Err(e) = config.fetch.credentials.add_seed(s) {
            problems.push(e.to_string());
        }
        match canon::canonicalize(s.as_str()) {
            Ok(u) if !canonical.contains(&u) => canonical.push(u),
            Ok(_) => {}
            Err(e) => problems.push(format!("seed {}: {e}", hide_userinfo(s.as_str()))),
        }
    }
    if !problems.is_empty() {
        return Err(EngineError::Usage(problems.join("\n")));
    }
    config.crawl.seeds = canonical;
    Ok(config)
}

#[cfg(test)]
mod tests;
