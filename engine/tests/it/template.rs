//! The shipped template for real crawls (`real-site.toml`): it passes `--check`, refuses private networks, keeps its
//! files beside itself, and samples a tenth of the traces where the demo's `config.toml` samples all of them.

use super::crawl::run_cmd;
use crate::ENGINE;
use crawl_core::config::Config;
use std::path::{Path, PathBuf};
use std::process::Command;

const TEMPLATE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../real-site.toml");
const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../config.toml");

/// The start of the warning `--check` gives for a seed the network guard refuses.
const PRIVATE_WARNING: &str = "which security.allow_private_networks = false excludes";

/// The template copied into `dir` as `config.toml`. The copy's metrics listener asks for any free port: 9464, the
/// template's, may be held by another test (`operator`) or program while this one runs, and `--check` binds it.
fn copy_template(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(TEMPLATE).expect("read real-site.toml");
    let held = "metrics_listen = \"127.0.0.1:9464\"";
    assert!(text.contains(held), "real-site.toml has no {held}");
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
    let template = Config::from_file(Path::new(TEMPLATE)).expect("real-site.toml loads");
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

    let demo = Config::from_file(Path::new(DEMO)).expect("config.toml loads");
    assert_eq!(demo.observability.sample_ratio, 1.0);
}
