//! The shipped template for real crawls (the repository's `config.toml`): it passes `--check`, refuses private
//! networks, keeps its files beside itself, and samples a tenth of the traces where the demo's `demo/config.toml`
//! samples all of them; the README's config table names every key it documents.

use super::crawl::run_cmd;
use crate::ENGINE;
use crawl_core::config::Config;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../config.toml");
const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../demo/config.toml");
const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");

/// The start of the warning `--check` gives for a seed the network guard refuses.
const PRIVATE_WARNING: &str = "which security.allow_private_networks = false excludes";

/// The template copied into `dir` as `config.toml`. The copy's metrics listener asks for any free port: 9464, the
/// template's, may be held by another test (`operator`) or program while this one runs, and `--check` binds it.
fn copy_template(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(TEMPLATE).expect("read config.toml");
    let held = "metrics_listen = \"127.0.0.1:9464\"";
    assert!(text.contains(held), "config.toml has no {held}");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        text.replace(held, "metrics_listen = \"127.0.0.1:0\""),
    )
    .expect("write config");
    config
}

fn check(config: &Path, seed: &str) -> Command {
    let mut c = Command::new(ENGINE);
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env_remove("CRAWL_ENGINE_CONFIG")
        .current_dir(config.parent().expect("config folder"))
        .arg("--config")
        .arg(config)
        .arg("--seed")
        .arg(seed)
        .arg("--check");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_template_passes_check_and_refuses_private_networks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = copy_template(dir.path());

    // A public seed (an address literal: nothing is resolved or dialed by the check).
    let res = run_cmd(check(&config, "https://9.9.9.9/")).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(res.stdout.contains("ok (1 seed"), "stdout:\n{}", res.stdout);
    assert!(
        !res.stderr.contains(PRIVATE_WARNING) && !res.stderr.contains("private"),
        "stderr:\n{}",
        res.stderr
    );
    // The check opens nothing it would have to create.
    assert!(!dir.path().join("crawl-data").exists());

    // A loopback seed is what the template refuses: the check says so (and still passes: it is a warning).
    let res = run_cmd(check(&config, "http://127.0.0.1:9/")).await;
    assert_eq!(res.code(), Some(0), "{res:?}");
    assert!(
        res.stderr.contains(PRIVATE_WARNING),
        "stderr:\n{}",
        res.stderr
    );
}

#[test]
fn the_template_is_safe_for_the_public_web_and_samples_a_tenth_of_the_traces() {
    let template = Config::from_file(Path::new(TEMPLATE)).expect("config.toml loads");
    let folder = Path::new(TEMPLATE).parent().expect("template folder");
    assert!(!template.security.allow_private_networks);
    assert!(template.security.allow_cidrs.is_empty());
    assert_eq!(template.politeness.per_host_concurrency, 1);
    assert!(template.politeness.min_delay.as_millis() >= 1000);
    assert!(template.crawl.respect_robots);
    assert!(template.crawl.user_agent.contains("CHANGE-ME"));
    assert_eq!(
        template.observability.metrics_listen,
        Some("127.0.0.1:9464".parse().expect("address"))
    );
    // Every file of the crawl beside the config, none in the demo's folder.
    let warc = template.output.warc_dir.clone().expect("warc_dir set");
    for p in [&template.frontier.data_dir, &template.output.jsonl, &warc] {
        assert_eq!(p.parent(), Some(folder), "{}", p.display());
        assert!(!p.to_string_lossy().contains(".demo"), "{}", p.display());
    }
    assert_eq!(template.observability.sample_ratio, 0.1);

    let demo = Config::from_file(Path::new(DEMO)).expect("demo/config.toml loads");
    assert_eq!(demo.observability.sample_ratio, 1.0);
    // The demo's files land beside its copy in .demo/ (make demo runs it there), never beside the template.
    let demo_folder = Path::new(DEMO).parent().expect("demo folder");
    assert!(demo.security.allow_private_networks);
    assert_eq!(demo.frontier.data_dir, demo_folder.join("crawl-data"));
    assert_eq!(demo.output.jsonl, demo_folder.join("crawl.jsonl"));
    assert_eq!(demo.output.warc_dir, Some(demo_folder.join("warc")));
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/scripts/demo.sh"
    ))
    .expect("demo.sh");
    assert!(
        script.contains("cp demo/config.toml .demo/config.toml")
            && script.contains("--config .demo/config.toml"),
        "demo.sh does not run the demo's config from .demo/"
    );
}

/// The README's configuration table: section (`crawl`, `frontier.redis`, ...) → the text of its keys cell.
fn readme_config_table() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(README).expect("README.md");
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in readme.lines() {
        if line.starts_with("| section | keys |") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[1].starts_with("---") {
            continue;
        }
        let section = cells[1].trim_matches(|c| c == '`' || c == '[' || c == ']');
        rows.push((section.to_owned(), cells[2].to_owned()));
    }
    rows
}

#[test]
fn the_readme_config_table_names_every_key_the_template_documents() {
    let rows = readme_config_table();
    assert!(rows.len() >= 10, "{rows:?}");
    let mut missing = Vec::new();
    for key in Config::keys() {
        let (section, name) = key.split_once('.').expect("dotted key");
        let Some((_, cell)) = rows.iter().find(|(s, _)| s == section) else {
            missing.push(format!("[{section}] row, for {key}"));
            continue;
        };
        // A key, or a table of its own (`[frontier.redis]`, `[[fetch.credentials]]`, `[proxy.chains.NAME]`).
        if !cell.contains(&format!("`{name}`")) && !cell.contains(&format!("[{key}")) {
            missing.push(key.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "README.md's config table lacks {missing:?}"
    );
    let output = &rows
        .iter()
        .find(|(s, _)| s == "output")
        .expect("[output] row")
        .1;
    for key in ["warc_dir", "warc_max_bytes", "warc_prefix", "warc_dedup"] {
        assert!(output.contains(&format!("`{key}`")), "[output] lacks {key}");
    }
}
