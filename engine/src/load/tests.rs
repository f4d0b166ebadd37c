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
    assert!(text.contains("--seed http://***@[bad/"), "{text}");
}
