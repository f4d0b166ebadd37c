//! Tests of the `[proxy]` section: chains and hop URLs, rules, chain references, timeouts,
//! every error at its exact line:column, and that no password ever shows in a message or in
//! `Debug` output.

use std::time::Duration;

use super::tests::{errors, ok, only_error};
use super::*;

const PASSWORD: &str = "hunter2secret";

fn hop(s: &str) -> ProxyHop {
    let text = format!("[proxy.chains.c]\nhops = [{s:?}]\n");
    ok(&text).proxy.chains["c"].hops[0].clone()
}

/// The only error of a one-hop chain, asserting it is at the hop and hides the password.
fn hop_error(s: &str) -> String {
    let text = format!("[proxy.chains.c]\nhops = [{s:?}]\n");
    let (l, c, m, k) = only_error(&text);
    assert_eq!((l, c, k), (2, 9, ErrorKind::InvalidValue), "{s}: {m}");
    assert!(!m.contains(PASSWORD) && !m.contains("alice"), "{m}");
    m
}

#[test]
fn chains_and_hops() {
    let c = ok(concat!(
        "[proxy]\n",
        "default = \"eu\"\n",
        "[proxy.chains.eu]\n",
        "hops = [\"socks5://alice:hunter2secret@127.0.0.1:1080\", \"SOCKS5://Proxy.Example:1081/\"]\n",
        "[proxy.chains.us-2]\n",
        "hops = [\"socks5://[::1]:9050\"]\n",
        "resolve = \"local\"\n",
    ));
    let p = &c.proxy;
    assert!(p.enabled());
    assert_eq!(p.default, ["eu"]);
    let eu = &p.chains["eu"];
    assert_eq!(eu.resolve, ResolveAt::Remote);
    let h = &eu.hops[0];
    assert_eq!(
        (h.scheme.as_str(), h.host.as_str(), h.port),
        ("socks5", "127.0.0.1", 1080)
    );
    assert_eq!(h.username.as_deref(), Some("alice"));
    assert_eq!(h.password.as_ref().map(Secret::expose), Some(PASSWORD));
    assert!(h.has_credentials());
    assert_eq!(h.to_string(), "socks5://***@127.0.0.1:1080");
    let h = &eu.hops[1];
    assert_eq!((h.host.as_str(), h.port), ("proxy.example", 1081));
    assert!(!h.has_credentials() && h.password.is_none());
    assert_eq!(h.to_string(), "socks5://proxy.example:1081");
    let us = &p.chains["us-2"];
    assert_eq!(us.resolve, ResolveAt::Local);
    assert_eq!(us.hops[0].host, "::1");
    assert_eq!(us.hops[0].authority(), "[::1]:9050");
    assert_eq!(us.hops[0].to_string(), "socks5://[::1]:9050");
    assert_eq!(ResolveAt::Local.to_string(), "local");
    assert_eq!(ResolveAt::Remote.as_str(), "remote");
}

#[test]
fn credentials_are_percent_decoded() {
    let h = hop("socks5://us%40er:p%3Ass%40w%2F0rd%C3%A9@h.example:1");
    assert_eq!(h.username.as_deref(), Some("us@er"));
    assert_eq!(h.password.as_ref().map(Secret::expose), Some("p:ss@w/0rdé"));
    // A raw `@` or `:` in the password: the last `@` ends the credentials, the first `:`
    // separates the user name.
    let h = hop("socks5://bob:a:b@c@h.example:2");
    assert_eq!(h.username.as_deref(), Some("bob"));
    assert_eq!(h.password.as_ref().map(Secret::expose), Some("a:b@c"));
    assert_eq!((h.host.as_str(), h.port), ("h.example", 2));
    let h = hop("socks5://xn--bcher-kva.example:3");
    assert_eq!(h.host, "xn--bcher-kva.example");
    assert_eq!(
        hop("socks5://bücher.example:3").host,
        "xn--bcher-kva.example"
    );
}

#[test]
fn secrets_never_show() {
    let s = Secret::new(PASSWORD);
    assert_eq!(format!("{s:?}"), "***");
    assert_eq!(s.to_string(), "***");
    assert_eq!(s.expose(), PASSWORD);

    let c = ok(concat!(
        "[proxy]\n",
        "default = \"eu\"\n",
        "[proxy.chains.eu]\n",
        "hops = [\"socks5://alice:hunter2secret@127.0.0.1:1080\"]\n",
    ));
    for shown in [
        format!("{c:?}"),
        format!("{c:#?}"),
        format!("{:?}", c.proxy),
    ] {
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(!shown.contains("alice"), "{shown}");
        assert!(shown.contains("socks5://***@127.0.0.1:1080"), "{shown}");
    }
    let h = &c.proxy.chains["eu"].hops[0];
    assert_eq!(format!("{h:?}"), "ProxyHop(socks5://***@127.0.0.1:1080)");
}

#[test]
fn redaction_of_url_like_text() {
    assert_eq!(redact_credentials("socks5://a:b@h:1"), "socks5://***@h:1");
    assert_eq!(redact_credentials("a:b@h:1"), "***@h:1");
    assert_eq!(redact_credentials("a:b@c@h:1"), "***@h:1");
    assert_eq!(redact_credentials("x y://a:b@h:1"), "***@h:1");
    assert_eq!(redact_credentials("a:b@socks5://h:1"), "***@socks5://h:1");
    assert_eq!(redact_credentials("socks5://h:1"), "socks5://h:1");
    assert_eq!(redact_credentials(""), "");
}

#[test]
fn bad_hops_are_reported_without_credentials() {
    let cases = [
        (
            "http://alice:hunter2secret@h.example:1",
            "proxy hop `http://***@h.example:1` must use socks5, found `http`",
        ),
        (
            "socks5h://h.example:1",
            "proxy hop `socks5h://h.example:1` must use socks5, found `socks5h` (write `socks5` and set `resolve = \"remote\"`)",
        ),
        (
            "alice:hunter2secret@h.example:1",
            "invalid proxy hop `***@h.example:1`: expected `socks5://[user:pass@]host:port`",
        ),
        (
            "a:hunter2secret@x://h.example:1",
            "invalid proxy hop `***@x://h.example:1`: expected `socks5://[user:pass@]host:port`",
        ),
        (
            "socks5://alice:hunter2secret@h.example",
            "invalid proxy hop `socks5://***@h.example`: missing port",
        ),
        (
            "socks5://alice:hunter2secret@h.example:",
            "invalid proxy hop `socks5://***@h.example:`: missing port",
        ),
        (
            "socks5://h.example:0",
            "invalid proxy hop `socks5://h.example:0`: port must not be 0",
        ),
        (
            "socks5://h.example:65536",
            "invalid proxy hop `socks5://h.example:65536`: invalid port `65536`",
        ),
        (
            "socks5://h.example:+80",
            "invalid proxy hop `socks5://h.example:+80`: invalid port `+80`",
        ),
        (
            "socks5://h.example:1/path",
            "invalid proxy hop `socks5://h.example:1/path`: must not have a path, query or fragment",
        ),
        (
            "socks5://alice@h.example:1",
            "invalid proxy hop `socks5://***@h.example:1`: credentials need a user name and a password (`user:pass@`)",
        ),
        (
            "socks5://:hunter2secret@h.example:1",
            "invalid proxy hop `socks5://***@h.example:1`: the user name must be 1 to 255 bytes",
        ),
        (
            "socks5://alice:@h.example:1",
            "invalid proxy hop `socks5://***@h.example:1`: the password must be 1 to 255 bytes",
        ),
        (
            "socks5://alice:hunter2secret%zz@h.example:1",
            "invalid proxy hop `socks5://***@h.example:1`: invalid percent-encoding in the credentials",
        ),
        (
            "socks5://alice:hunter2secret%+1@h.example:1",
            "invalid proxy hop `socks5://***@h.example:1`: invalid percent-encoding in the credentials",
        ),
        (
            "socks5://alice:hunter2secret%ff@h.example:1",
            "invalid proxy hop `socks5://***@h.example:1`: the credentials are not valid UTF-8",
        ),
        (
            "socks5://::1:1080",
            "invalid proxy hop `socks5://::1:1080`: write IPv6 addresses in brackets, e.g. `[::1]:1080`",
        ),
        (
            "socks5://[::1:1080",
            "invalid proxy hop `socks5://[::1:1080`: unclosed `[` in the host",
        ),
        (
            "socks5://[nope]:1080",
            "invalid proxy hop `socks5://[nope]:1080`: invalid IPv6 address `nope`",
        ),
        (
            "socks5://:1080",
            "invalid proxy hop `socks5://:1080`: missing host",
        ),
    ];
    for (bad, msg) in cases {
        assert_eq!(
            hop_error(bad),
            format!("`proxy.chains.c.hops[0]`: {msg}"),
            "{bad}"
        );
    }
    let long = "u".repeat(256);
    let m = hop_error(&format!("socks5://{long}:hunter2secret@h.example:1"));
    assert!(m.ends_with("the user name must be 1 to 255 bytes"), "{m}");
    let m = hop_error("socks5://a b.example:1");
    assert!(m.starts_with("`proxy.chains.c.hops[0]`: invalid proxy hop `socks5://a b.example:1`: invalid host `a b.example`"), "{m}");
}

#[test]
fn chain_table_errors_are_positioned() {
    let (l, c, m, k) = only_error("[proxy.chains.eu]\nhops = []\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`proxy.chains.eu.hops`: must not be empty (a chain needs at least one hop)"
    );
    let (l, c, m, _) = only_error("\n[proxy.chains.eu]\nresolve = \"local\"\n");
    assert_eq!((l, c), (2, 15), "at the chain's name");
    assert_eq!(m, "`proxy.chains.eu`: missing required key `hops`");
    let (_, _, m, k) = only_error("[proxy.chains.eu]\nhops = \"socks5://h:1\"\n");
    assert_eq!(k, ErrorKind::WrongType);
    assert_eq!(
        m,
        "`proxy.chains.eu.hops`: expected an array of strings, found string"
    );
    let (l, c, m, _) =
        only_error("[proxy.chains.eu]\nhops = [\"socks5://h:1\"]\nresolve = \"proxy\"\n");
    assert_eq!((l, c), (3, 1));
    assert_eq!(
        m,
        "`proxy.chains.eu.resolve`: unknown value `proxy`, expected one of `remote`, `local`"
    );
    let (l, c, m, k) = only_error("[proxy.chains.eu]\nhops = [\"socks5://h:1\"]\n  hop = []\n");
    assert_eq!((l, c, k), (3, 3, ErrorKind::UnknownKey));
    assert_eq!(m, "unknown key `proxy.chains.eu.hop`; did you mean `hops`?");

    let (l, c, m, k) = only_error("[proxy]\nchains = { eu = \"socks5://h:1\" }\n");
    assert_eq!((l, c, k), (2, 12, ErrorKind::WrongType));
    assert_eq!(m, "`proxy.chains.eu`: expected a table, found string");
    let (_, _, m, _) = only_error("[proxy]\nchains = [\"eu\"]\n");
    assert_eq!(m, "`proxy.chains`: expected a table, found array");
    let (l, c, m, _) = only_error("[proxy.chains.direct]\nhops = [\"socks5://h:1\"]\n");
    assert_eq!((l, c), (1, 15));
    assert_eq!(
        m,
        "`proxy.chains.direct`: `direct` is reserved (it means no proxy)"
    );
    let (_, _, m, _) = only_error("[proxy.chains.\"a b\"]\nhops = [\"socks5://h:1\"]\n");
    assert_eq!(
        m,
        "`proxy.chains.\"a b\"`: invalid chain name `a b`: use letters, digits, `-` and `_`"
    );
}

#[test]
fn references_to_chains() {
    let chains = "[proxy.chains.eu]\nhops = [\"socks5://h:1\"]\n[proxy.chains.us]\nhops = [\"socks5://h:2\"]\n";
    // `direct` mixed with chain names is allowed, in default and in rules.
    let c = ok(&format!(
        "[proxy]\ndefault = [\"us\", \"direct\"]\n{chains}[[proxy.rules]]\nhosts = [\"*.a.example\"]\nuse = [\"direct\", \"eu\"]\n"
    ));
    assert_eq!(c.proxy.default, ["us", "direct"]);
    assert_eq!(c.proxy.rules[0].use_, ["direct", "eu"]);

    let (l, c, m, k) = only_error(&format!("[proxy]\ndefault = [\"eu\", \"uss\"]\n{chains}"));
    assert_eq!((l, c, k), (2, 18, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`proxy.default[1]`: unknown chain `uss`; did you mean `us`?"
    );
    let (l, c, m, _) = only_error("[proxy]\ndefault = \"asia\"\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(
        m,
        "`proxy.default`: unknown chain `asia` (declare `[proxy.chains.asia]` or use `direct`)"
    );
    let (_, _, m, _) = only_error("[proxy]\ndefault = \"socks5://alice:hunter2secret@h:1\"\n");
    assert!(
        !m.contains(PASSWORD) && m.contains("`socks5://***@h:1`"),
        "{m}"
    );
    let (_, _, m, _) = only_error("[proxy]\ndefault = []\n");
    assert_eq!(m, "`proxy.default`: must not be empty");
    let (_, _, m, k) = only_error("[proxy]\ndefault = 1\n");
    assert_eq!(k, ErrorKind::WrongType);
    assert_eq!(
        m,
        "`proxy.default`: expected a string or an array of strings, found integer"
    );

    let (l, c, m, _) = only_error(&format!(
        "{chains}[[proxy.rules]]\nhosts = [\"a.example\"]\nuse = \"euu\"\n"
    ));
    assert_eq!((l, c), (7, 1));
    assert_eq!(
        m,
        "`proxy.rules[0].use`: unknown chain `euu`; did you mean `eu`?"
    );

    // A declared chain with a bad table is reported once, not again where it is used.
    let errs = errors("[proxy]\ndefault = \"eu\"\n[proxy.chains.eu]\nhops = [\"http://h:1\"]\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!((errs[0].line, errs[0].column), (4, 9));
}

#[test]
fn rules() {
    let c = ok(concat!(
        "[[proxy.rules]]\n",
        "hosts = [\"*.Example.ORG.\", \"example.org\", \"*\", \"10.0.*\", \"[::1]\", \"*.bücher.example\"]\n",
        "use = \"direct\"\n",
    ));
    assert_eq!(
        c.proxy.rules[0].hosts,
        [
            "*.example.org",
            "example.org",
            "*",
            "10.0.*",
            "[::1]",
            "*.xn--bcher-kva.example"
        ]
    );
    assert!(!c.proxy.enabled());

    let (l, c, m, k) = only_error("[[proxy.rules]]\nuse = \"direct\"\n");
    assert_eq!((l, c, k), (1, 1, ErrorKind::InvalidValue));
    assert_eq!(m, "`proxy.rules[0]`: missing required key `hosts`");
    let (_, _, m, _) = only_error("[[proxy.rules]]\nhosts = [\"a.example\"]\n");
    assert_eq!(m, "`proxy.rules[0]`: missing required key `use`");
    let (l, c, m, _) = only_error("[[proxy.rules]]\nhosts = []\nuse = \"direct\"\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(m, "`proxy.rules[0].hosts`: must not be empty");
    let (l, c, m, _) = only_error("[[proxy.rules]]\nuse = []\nhosts = [\"a\"]\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(m, "`proxy.rules[0].use`: must not be empty");
    let (_, _, m, k) = only_error("[[proxy.rules]]\nhosts = [\"a\"]\nuse = \"direct\"\nusee = 1\n");
    assert_eq!(k, ErrorKind::UnknownKey);
    assert_eq!(m, "unknown key `proxy.rules[0].usee`; did you mean `use`?");

    for (bad, why) in [
        ("a..example", "empty label"),
        (".example", "empty label"),
        (
            "http://a.example/",
            "only letters, digits, `-`, `_`, `.` and `*` are allowed",
        ),
        (
            "a example",
            "only letters, digits, `-`, `_`, `.` and `*` are allowed",
        ),
        (
            "*ü.example",
            "a label with `*` must be ASCII (write the `xn--` form)",
        ),
    ] {
        let text =
            format!("[[proxy.rules]]\nhosts = [\"ok.example\", {bad:?}]\nuse = \"direct\"\n");
        let (l, c, m, _) = only_error(&text);
        assert_eq!((l, c), (2, 24), "{bad}");
        assert_eq!(
            m,
            format!("`proxy.rules[0].hosts[1]`: invalid host pattern `{bad}`: {why}")
        );
    }
    let (_, _, m, _) = only_error("[[proxy.rules]]\nhosts = [\".\"]\nuse = \"direct\"\n");
    assert_eq!(
        m,
        "`proxy.rules[0].hosts[0]`: host pattern must not be empty"
    );
}

#[test]
fn select_and_numbers() {
    for (name, policy) in [
        ("round-robin", SelectPolicy::RoundRobin),
        ("least-failures", SelectPolicy::LeastFailures),
        ("sticky", SelectPolicy::Sticky),
    ] {
        let c = ok(&format!("[proxy]\nselect = {name:?}\n"));
        assert_eq!(c.proxy.select, policy);
        assert_eq!(policy.as_str(), name);
        assert_eq!(policy.to_string(), name);
    }
    let (_, _, m, _) = only_error("[proxy]\nselect = \"random\"\n");
    assert_eq!(
        m,
        "`proxy.select`: unknown value `random`, expected one of `round-robin`, `least-failures`, `sticky`"
    );
    let (_, _, m, _) = only_error("[proxy]\nbreaker_failures = 0\n");
    assert_eq!(
        m,
        "`proxy.breaker_failures`: must be greater than 0, found 0"
    );
    let (_, _, m, _) = only_error("[proxy]\ngreeting_timeout_ms = 0\n");
    assert_eq!(
        m,
        "`proxy.greeting_timeout_ms`: must be greater than 0, found 0"
    );
    let c = ok("[proxy]\nbreaker_cooldown_ms = 0\n");
    assert_eq!(c.proxy.breaker_cooldown, Duration::ZERO);
}

#[test]
fn chain_timeout_covers_every_phase() {
    let (l, c, m, k) =
        only_error("[proxy]\nchain_timeout_ms = 20000\nconnect_reply_timeout_ms = 30000\n");
    assert_eq!((l, c, k), (3, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`proxy.connect_reply_timeout_ms` (30000) must not exceed `proxy.chain_timeout_ms` (20000)"
    );
    // Only the chain timeout written: every default phase above it is reported there.
    let errs = errors("[proxy]\nchain_timeout_ms = 4000\n");
    let msgs: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "`proxy.connect_timeout_ms` (5000) must not exceed `proxy.chain_timeout_ms` (4000)",
            "`proxy.connect_reply_timeout_ms` (10000) must not exceed `proxy.chain_timeout_ms` (4000)",
        ]
    );
    assert!(errs.iter().all(|e| (e.line, e.column) == (2, 1)));
    let c = ok(
        "[proxy]\nchain_timeout_ms = 3000\nconnect_timeout_ms = 3000\nconnect_reply_timeout_ms = 3000\n",
    );
    assert_eq!(c.proxy.chain_timeout, Duration::from_secs(3));
    // A rejected phase gives no second error.
    let (_, _, m, _) = only_error("[proxy]\nauth_timeout_ms = 0\nchain_timeout_ms = 20000\n");
    assert!(
        m.starts_with("`proxy.auth_timeout_ms`: must be greater"),
        "{m}"
    );
}
