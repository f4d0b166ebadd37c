//! Seeds with a user name and password: their credential is for their origin, the seeds themselves lose it.

use super::load_config;
use crawl_core::config::Secret;

fn url(s: &str) -> url::Url {
    url::Url::parse(s).expect("url")
}

#[test]
fn a_seed_password_becomes_basic_auth_for_its_origin_only() {
    let config = load_config(
        None,
        &[
            "http://alice:s%3Acret@a.example:8080/x".to_owned(),
            "http://alice:s%3Acret@a.example:8080/y".to_owned(),
            "https://b.example/".to_owned(),
        ],
    )
    .expect("config");
    let seeds: Vec<&str> = config.crawl.seeds.iter().map(url::Url::as_str).collect();
    assert_eq!(
        seeds,
        [
            "http://a.example:8080/x",
            "http://a.example:8080/y",
            "https://b.example/"
        ]
    );
    let creds = &config.fetch.credentials;
    assert_eq!(creds.len(), 1);
    // "alice:s:cret"
    assert_eq!(
        creds
            .for_url(&url("http://a.example:8080/other"))
            .and_then(|c| c.authorization.as_ref())
            .map(Secret::expose),
        Some("Basic YWxpY2U6czpjcmV0")
    );
    assert!(creds.for_url(&url("https://a.example:8080/")).is_none());
    assert!(creds.for_url(&url("https://b.example/")).is_none());
}

#[test]
fn conflicting_or_bad_seeds_are_reported_without_their_password() {
    let err = load_config(
        None,
        &[
            "http://alice:hunter2@a.example/".to_owned(),
            "http://alice:hunter3@a.example/z".to_owned(),
            "http://bob:hunter4@[bad/".to_owned(),
        ],
    )
    .expect_err("conflict");
    let text = err.to_string();
    assert!(!text.contains("hunter"), "{text}");
    assert!(text.contains("seed `http://***@a.example/z`"), "{text}");
    assert!(
        text.contains("--seed: invalid URL `http://***@[bad/`"),
        "{text}"
    );
}

#[test]
fn seeds_without_a_scheme_are_each_reported_with_those_of_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[crawl]\nseeds = [\"docs.example.org/start\"]\nmax_depth = -1\n",
    )
    .expect("write");
    let err = load_config(
        Some(&path),
        &[
            "www.example.org".to_owned(),
            "https://fine.example/".to_owned(),
            "localhost:8080/".to_owned(),
        ],
    )
    .expect_err("bad seeds");
    assert_eq!(err.exit_code(), 2);
    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let origin = path.display();
    assert_eq!(
        lines,
        [
            format!(
                "{origin}:2:10: `crawl.seeds[0]`: URL `docs.example.org/start` has no scheme; did you mean \
                 `https://docs.example.org/start`?"
            )
            .as_str(),
            format!("{origin}:3:1: `crawl.max_depth`: must not be negative, found -1").as_str(),
            "--seed: URL `www.example.org` has no scheme; did you mean `https://www.example.org/`?",
            "--seed: URL `localhost:8080/` has no scheme; did you mean `http://localhost:8080/`?",
        ]
    );
    // Bad command-line seeds alone: no "no seeds" besides.
    let err = load_config(None, &["www.example.org".to_owned()]).expect_err("bad seed");
    assert_eq!(
        err.to_string(),
        "--seed: URL `www.example.org` has no scheme; did you mean `https://www.example.org/`?"
    );
}

#[test]
fn recrawl_enabled_is_accepted_but_not_with_the_redis_requeue_period() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[recrawl]\nenabled = true\ninterval_s = 3600\n").expect("write");
    let config = load_config(Some(&path), &["http://a.example/".to_owned()]).expect("accepted");
    assert!(config.recrawl.enabled);
    assert_eq!(config.recrawl.interval.as_secs(), 3600);
    std::fs::write(
        &path,
        "[recrawl]\nenabled = true\n[frontier.redis]\nrecrawl_after_s = 600\n",
    )
    .expect("write");
    let err = load_config(Some(&path), &["http://a.example/".to_owned()]).expect_err("refused");
    assert!(
        err.to_string()
            .contains("set frontier.redis.recrawl_after_s = 0"),
        "{err}"
    );
}
