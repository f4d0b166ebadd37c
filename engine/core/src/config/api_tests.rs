//! Tests of `[api]`: defaults, the listen address, the token required off loopback, certificate and key together,
//! the token file's text, paths resolved against the config file, `[[api.alert_actions]]` and its errors.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::tests::{ok, only_error};
use super::*;
use crate::control::alerts::AlertAction;

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

const DOH: &str = "[[resolver.doh]]\nurl = \"https://dns.example/dns-query\"\n";

/// `[[api.alert_actions]]` tables `body` (one or more, separated by the header) after `prefix`.
fn actions(prefix: &str, body: &str) -> Vec<AlertAction> {
    ok(&format!("{prefix}[[api.alert_actions]]\n{body}\n"))
        .api
        .alert_actions
}

/// The only error of `[[api.alert_actions]]\n<body>` as (line, message, kind).
fn action_error(prefix: &str, body: &str) -> (usize, String, ErrorKind) {
    let (l, _, m, k) = only_error(&format!("{prefix}[[api.alert_actions]]\n{body}\n"));
    (l, m, k)
}

#[test]
fn alert_actions_are_read_in_file_order_with_their_defaults() {
    use crate::control::alerts::ActionKind;
    assert!(Config::default().api.alert_actions.is_empty());
    let got = actions(
        DOH,
        "alert = \"Crawl429Storm\"\naction = \"pause_host\"\nhost_label = \"host_group\"\n\
         [[api.alert_actions]]\nalert = \"CrawlDnsPollutionSpike\"\naction = \"resolver_doh\"\n\
         labels = { severity = \"critical\", team = \"crawl\" }\n\
         [[api.alert_actions]]\nalert = \"Slow\"\naction = \"lower_concurrency\"\nfactor = 0.25\n\
         [[api.alert_actions]]\nalert = \"Hosts\"\naction = \"pause_host\"\n\
         [[api.alert_actions]]\nalert = \"A\"\naction = \"pause_crawl\"\n\
         [[api.alert_actions]]\nalert = \"B\"\naction = \"fallback_direct\"\n\
         [[api.alert_actions]]\nalert = \"C\"\naction = \"forbid_direct\"",
    );
    let summary: Vec<(&str, ActionKind, &str, usize)> = got
        .iter()
        .map(|a| {
            (
                a.alert.as_str(),
                a.action,
                a.host_label.as_str(),
                a.labels.len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("Crawl429Storm", ActionKind::PauseHost, "host_group", 0),
            ("CrawlDnsPollutionSpike", ActionKind::ResolverDoh, "host", 2),
            (
                "Slow",
                ActionKind::LowerConcurrency { factor: 0.25 },
                "host",
                0
            ),
            ("Hosts", ActionKind::PauseHost, "host", 0),
            ("A", ActionKind::PauseCrawl, "host", 0),
            ("B", ActionKind::FallbackDirect, "host", 0),
            ("C", ActionKind::ForbidDirect, "host", 0),
        ]
    );
    assert_eq!(got[1].labels["severity"], "critical");
    // An inline array of tables reads the same.
    let inline = ok(
        "[api]\nalert_actions = [{ alert = \"Crawl429Storm\", action = \"pause_host\", host_label = \"host_group\" }]\n",
    );
    assert_eq!(inline.api.alert_actions, got[..1]);
}

#[test]
fn an_alert_action_needs_its_alert_and_a_known_action() {
    let (l, m, _) = action_error("", "action = \"pause_host\"");
    assert_eq!(
        (l, m.as_str()),
        (1, "`api.alert_actions[0]`: missing required key `alert`")
    );
    let (_, m, _) = action_error("", "alert = \"A\"");
    assert_eq!(m, "`api.alert_actions[0]`: missing required key `action`");
    let (l, m, _) = action_error("", "alert = \" \"\naction = \"pause_host\"");
    assert_eq!(
        (l, m.as_str()),
        (2, "`api.alert_actions[0].alert`: must not be empty")
    );
    let (l, m, _) = action_error("", "alert = \"A\"\naction = \"pause\"");
    assert_eq!(l, 3);
    assert_eq!(
        m,
        "`api.alert_actions[0].action`: unknown value `pause`, expected one of `pause_host`, `pause_crawl`, \
         `resolver_doh`, `fallback_direct`, `forbid_direct`, `lower_concurrency`"
    );
    let (_, m, k) = action_error("", "alert = \"A\"\naction = \"pause_crawl\"\nhots = 1");
    assert_eq!(k, ErrorKind::UnknownKey, "{m}");
    assert!(m.contains("api.alert_actions[0]"), "{m}");
}

#[test]
fn a_factor_goes_with_lower_concurrency_only_and_lies_between_0_and_1() {
    let (l, m, _) = action_error("", "alert = \"A\"\naction = \"lower_concurrency\"");
    assert_eq!(l, 1);
    assert!(
        m.starts_with("`api.alert_actions[0].factor`: `lower_concurrency` needs `factor`"),
        "{m}"
    );
    for factor in ["1.0", "0", "1"] {
        let (l, m, _) = action_error(
            "",
            &format!("alert = \"A\"\naction = \"lower_concurrency\"\nfactor = {factor}"),
        );
        assert_eq!(l, 4, "{m}");
        assert!(
            m.starts_with("`api.alert_actions[0].factor`: must be above 0 and below 1"),
            "{m}"
        );
    }
    let (_, m, _) = action_error(
        "",
        "alert = \"A\"\naction = \"lower_concurrency\"\nfactor = 1.5",
    );
    assert!(m.starts_with("`api.alert_actions[0].factor`: "), "{m}");
    let (l, m, _) = action_error("", "alert = \"A\"\naction = \"pause_crawl\"\nfactor = 0.5");
    assert_eq!(
        (l, m.as_str()),
        (
            4,
            "`api.alert_actions[0].factor`: only `lower_concurrency` takes a factor, not `pause_crawl`"
        )
    );
}

#[test]
fn host_label_and_labels_are_label_names_and_host_label_is_for_pause_host() {
    let (l, m, _) = action_error(
        "",
        "alert = \"A\"\naction = \"fallback_direct\"\nhost_label = \"host\"",
    );
    assert_eq!(
        (l, m.as_str()),
        (
            4,
            "`api.alert_actions[0].host_label`: only `pause_host` names a host by a label, not `fallback_direct`"
        )
    );
    let (_, m, _) = action_error(
        "",
        "alert = \"A\"\naction = \"pause_host\"\nhost_label = \"host-group\"",
    );
    assert!(
        m.starts_with("`api.alert_actions[0].host_label`: invalid label name `host-group`"),
        "{m}"
    );
    let (l, m, k) = action_error(
        "",
        "alert = \"A\"\naction = \"pause_crawl\"\nlabels = { severity = 2 }",
    );
    assert_eq!((l, k), (4, ErrorKind::WrongType), "{m}");
    assert_eq!(
        m,
        "`api.alert_actions[0].labels.severity`: expected a string, found integer"
    );
    let (_, m, k) = action_error(
        "",
        "alert = \"A\"\naction = \"pause_crawl\"\nlabels = \"severity\"",
    );
    assert_eq!(k, ErrorKind::WrongType, "{m}");
    let (_, m, _) = action_error(
        "",
        "alert = \"A\"\naction = \"pause_crawl\"\nlabels = { \"a-b\" = \"x\" }",
    );
    assert!(m.contains("invalid label name `a-b`"), "{m}");
}

#[test]
fn resolver_doh_needs_a_doh_endpoint() {
    let (l, m, _) = action_error("", "alert = \"A\"\naction = \"resolver_doh\"");
    assert_eq!(l, 3);
    assert_eq!(
        m,
        "`api.alert_actions[0].action`: `resolver_doh` switches the resolver to `[[resolver.doh]]` endpoints: \
         configure at least one"
    );
    assert_eq!(
        actions(DOH, "alert = \"A\"\naction = \"resolver_doh\"").len(),
        1
    );
}
