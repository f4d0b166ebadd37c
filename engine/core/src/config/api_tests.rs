//! Tests of `[api]`: defaults, the listen address, the token required off loopback, certificate and key together,
//! the token file's text, paths resolved against the config file.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::tests::{ok, only_error};
use super::*;

fn api(body: &str) -> ApiConfig {
    ok(&format!("[api]\n{body}\n")).api
}

/// The only error of `[api]\n<body>` as (line, message).
fn api_error(body: &str) -> (usize, String) {
    let (l, _, m, k) = only_error(&format!("[api]\n{body}\n"));
    assert_eq!(k, ErrorKind::InvalidValue, "{m}");
    (l, m)
}

#[test]
fn the_api_is_off_by_default() {
    let d = Config::default().api;
    assert_eq!(d, ok("").api);
    assert_eq!(d.listen, None);
    assert_eq!(d.token_file, None);
    assert!(!d.tls());
    assert_eq!(d.max_body_bytes, 1_048_576);
    assert_eq!(d.url(), None);
    // The documented defaults written out are the defaults.
    assert_eq!(
        api(
            "listen = \"\"\ntoken_file = \"\"\ncert_file = \"\"\nkey_file = \"\"\nmax_body_bytes = 1048576"
        ),
        d
    );
}

#[test]
fn loopback_needs_no_token() {
    let c = api("listen = \"127.0.0.1:9465\"");
    assert_eq!(
        c.listen,
        Some("127.0.0.1:9465".parse::<SocketAddr>().unwrap())
    );
    assert_eq!(c.url().as_deref(), Some("http://127.0.0.1:9465"));
    assert_eq!(
        api("listen = \"[::1]:0\"").url().as_deref(),
        Some("http://[::1]:0")
    );
}

#[test]
fn a_bad_listen_address_is_refused() {
    let (l, m) = api_error("listen = \"localhost:9465\"");
    assert_eq!(l, 2);
    assert!(m.starts_with("`api.listen`: "), "{m}");
    assert!(m.contains("localhost:9465"), "{m}");
    let (_, m) = api_error("listen = \"127.0.0.1\"");
    assert!(m.starts_with("`api.listen`: "), "{m}");
    let (l, _, m, k) = only_error("[api]\nlisten = 9465\n");
    assert_eq!((l, k), (2, ErrorKind::WrongType), "{m}");
}

#[test]
fn a_token_is_required_off_loopback() {
    let (l, m) = api_error("listen = \"0.0.0.0:9465\"");
    assert_eq!(l, 2);
    assert!(
        m.starts_with(
            "`api.listen`: 0.0.0.0:9465 is reachable from other machines: set `token_file`"
        ),
        "{m}"
    );
    let (_, m) = api_error("listen = \"192.0.2.7:9465\"\ntoken_file = \"\"");
    assert!(m.contains("set `token_file`"), "{m}");
    let c = api("listen = \"0.0.0.0:9465\"\ntoken_file = \"api.token\"");
    assert_eq!(c.token_file, Some(PathBuf::from("api.token")));
    // Reached on loopback by a client on this machine.
    assert_eq!(c.url().as_deref(), Some("http://127.0.0.1:9465"));
}

#[test]
fn a_certificate_goes_with_its_key() {
    let (l, m) = api_error("listen = \"127.0.0.1:9465\"\ncert_file = \"api.crt\"");
    assert_eq!(l, 3);
    assert_eq!(
        m,
        "`api.cert_file`: needs `key_file` too: give both (the API is then HTTPS only) or neither"
    );
    let (l, m) = api_error("key_file = \"api.key\"");
    assert_eq!(l, 2);
    assert!(
        m.starts_with("`api.key_file`: needs `cert_file` too"),
        "{m}"
    );
    let c = api(
        "listen = \"[::]:9465\"\ntoken_file = \"t\"\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"",
    );
    assert!(c.tls());
    assert_eq!(c.url().as_deref(), Some("https://[::1]:9465"));
}

#[test]
fn max_body_bytes_is_at_least_one() {
    assert_eq!(api("max_body_bytes = 1").max_body_bytes, 1);
    let (l, _, m, _) = only_error("[api]\nmax_body_bytes = 0\n");
    assert_eq!(l, 2);
    assert!(m.starts_with("`api.max_body_bytes`: "), "{m}");
}

#[test]
fn unknown_api_keys_are_reported() {
    let (_, _, m, k) = only_error("[api]\nlistn = \"127.0.0.1:1\"\n");
    assert_eq!(k, ErrorKind::UnknownKey);
    assert!(m.contains("did you mean `listen`?"), "{m}");
}

#[test]
fn paths_are_resolved_against_the_config_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crawl.toml");
    std::fs::write(
        &path,
        "[api]\nlisten = \"127.0.0.1:0\"\ntoken_file = \"api.token\"\ncert_file = \"/abs/c.pem\"\nkey_file = \"k.pem\"\n",
    )
    .expect("write");
    let c = Config::from_file(&path).expect("valid").api;
    assert_eq!(c.token_file, Some(dir.path().join("api.token")));
    assert_eq!(c.cert_file, Some(PathBuf::from("/abs/c.pem")));
    assert_eq!(c.key_file, Some(dir.path().join("k.pem")));
}

#[test]
fn a_token_is_one_word_of_sixteen_characters_or_more() {
    let t = parse_token("  0123456789abcdef\n").expect("token");
    assert_eq!(t.expose(), "0123456789abcdef");
    assert_eq!(parse_token(""), Err(TokenProblem::Empty));
    assert_eq!(parse_token(" \n\t"), Err(TokenProblem::Empty));
    assert_eq!(
        parse_token("short-token\n"),
        Err(TokenProblem::TooShort { found: 11 })
    );
    assert_eq!(
        parse_token("0123456789 abcdef"),
        Err(TokenProblem::BadCharacter)
    );
    assert_eq!(
        parse_token("0123456789abcdef\n0123456789abcdef"),
        Err(TokenProblem::BadCharacter)
    );
    assert_eq!(
        parse_token("0123456789abcdéf"),
        Err(TokenProblem::BadCharacter)
    );
    let msg = TokenProblem::TooShort { found: 5 }.to_string();
    assert_eq!(
        msg,
        "the token is 5 characters long; at least 16 are needed"
    );
}
