//! Tests of the loader's error reporting: every error kind at its exact line:column, unknown
//! keys with suggestions, syntax errors, several errors collected in one run, and the
//! [`ValueError`] reason kept next to the position.

use super::tests::{errors, ok, only_error};
use super::*;
use crate::netguard::CidrError;

#[test]
fn wrong_types_name_the_expected_type() {
    let (l, c, m, k) = only_error("[crawl]\nmax_pages = \"10\"\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::WrongType));
    assert_eq!(m, "`crawl.max_pages`: expected an integer, found string");

    let (l, c, m, _) = only_error("[fetch]\n  http2 = 1\n");
    assert_eq!((l, c), (2, 3));
    assert_eq!(m, "`fetch.http2`: expected a boolean, found integer");

    let (l, c, m, _) = only_error("[politeness]\nmin_delay_ms = 1.5\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(
        m,
        "`politeness.min_delay_ms`: expected an integer, found float"
    );

    let (l, c, m, _) = only_error("[crawl]\nseeds = \"https://a.example/\"\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(
        m,
        "`crawl.seeds`: expected an array of strings, found string"
    );

    let (l, c, m, _) = only_error("[crawl]\nseeds = [\"https://a.example/\", 7]\n");
    assert_eq!((l, c), (2, 32));
    assert_eq!(m, "`crawl.seeds[1]`: expected a string, found integer");

    let (l, c, m, _) = only_error("[observability]\nlog_level = true\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(
        m,
        "`observability.log_level`: expected a string, found boolean"
    );

    let (l, c, m, _) = only_error("fetch = 3\n");
    assert_eq!((l, c), (1, 1));
    assert_eq!(m, "`fetch`: expected a table, found integer");
}

#[test]
fn bad_seed_urls_are_reported_at_the_element() {
    let (l, c, m, k) = only_error("[crawl]\nseeds = [\"not a url\"]\n");
    assert_eq!((l, c, k), (2, 10, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`crawl.seeds[0]`: invalid URL `not a url`: relative URL without a base"
    );

    let (l, c, m, _) = only_error(
        "[crawl]\nseeds = [\n  \"https://ok.example/\",\n  \"ftp://files.example/\",\n]\n",
    );
    assert_eq!((l, c), (4, 3));
    assert_eq!(
        m,
        "`crawl.seeds[1]`: URL `ftp://files.example/` must use http or https, found `ftp`"
    );
}

#[test]
fn seeds_without_a_scheme_are_each_reported_with_the_url_they_stand_for() {
    let errs = errors(
        "[crawl]\nseeds = [\"www.example.org\", \"https://ok.example/\", \"localhost:8080/\"]\n",
    );
    let found: Vec<(usize, usize, &str)> = errs
        .iter()
        .map(|e| (e.line, e.column, e.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                2,
                10,
                "`crawl.seeds[0]`: URL `www.example.org` has no scheme; did you mean `https://www.example.org/`?"
            ),
            (
                2,
                52,
                "`crawl.seeds[2]`: URL `localhost:8080/` has no scheme; did you mean `http://localhost:8080/`?"
            ),
        ]
    );
}

#[test]
fn bad_regex_carries_the_regex_error() {
    let (l, c, m, k) = only_error("[crawl]\ninclude = [\"ok\"]\nexclude = [\"a(b\"]\n");
    assert_eq!((l, c, k), (3, 12, ErrorKind::InvalidValue));
    assert_eq!(m, "`crawl.exclude[0]`: invalid regex `a(b`: unclosed group");
}

#[test]
fn zero_negative_and_out_of_range_numbers() {
    let (l, c, m, k) = only_error("[fetch]\nconcurrency = 0\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
    assert_eq!(m, "`fetch.concurrency`: must be greater than 0, found 0");

    let (l, c, m, _) = only_error("[frontier]\n\ncommit_interval_ms = 0\n");
    assert_eq!((l, c), (3, 1));
    assert_eq!(
        m,
        "`frontier.commit_interval_ms`: must be greater than 0, found 0"
    );

    let (_, _, m, _) = only_error("[crawl]\nmax_pages = -5\n");
    assert_eq!(m, "`crawl.max_pages`: must not be negative, found -5");

    let (_, _, m, _) = only_error("[crawl]\nmax_depth = 4294967296\n");
    assert_eq!(
        m,
        "`crawl.max_depth`: must be at most 4294967295, found 4294967296"
    );

    let (_, _, m, _) = only_error("[shutdown]\ngrace_ms = 9223372036854775807\n");
    assert_eq!(
        m,
        "`shutdown.grace_ms`: must be at most 315360000000, found 9223372036854775807"
    );
}

#[test]
fn min_above_max_pairs() {
    let (l, c, m, k) = only_error(
        "[fetch]\nrequest_timeout_ms = 1000\nconnect_timeout_ms = 5000\nheader_timeout_ms = 900\n",
    );
    assert_eq!((l, c, k), (3, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`fetch.connect_timeout_ms` (5000) must not exceed `fetch.request_timeout_ms` (1000)"
    );

    // Only the request timeout is written, shorter than the phases' defaults: the phases left unset follow it
    // (no error about keys the user never wrote); one that is set still may not exceed it.
    let c = Config::from_str("[fetch]\nrequest_timeout_ms = 3000\n", "t").expect("valid");
    let ms = Duration::from_millis;
    assert_eq!(
        (
            c.fetch.connect_timeout,
            c.fetch.header_timeout,
            c.fetch.idle_timeout
        ),
        (ms(3000), ms(3000), ms(3000))
    );
    let c = Config::from_str("[fetch]\nrequest_timeout_ms = 20000\n", "t").expect("valid");
    assert_eq!(
        (c.fetch.connect_timeout, c.fetch.header_timeout),
        (ms(10_000), ms(20_000)),
        "a default below the request timeout stays"
    );
    let errs = errors("[fetch]\nrequest_timeout_ms = 3000\nheader_timeout_ms = 4000\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .message
            .starts_with("`fetch.header_timeout_ms` (4000)"),
        "{errs:?}"
    );

    let (l, c, m, _) = only_error("[politeness]\nbackoff_base_ms = 700000\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(
        m,
        "`politeness.backoff_base_ms` (700000) must not exceed `politeness.backoff_max_ms` (600000)"
    );

    let (_, _, m, _) = only_error("[supervisor]\nbackoff_base_ms = 10\nbackoff_max_ms = 5\n");
    assert!(m.starts_with("`supervisor.backoff_base_ms` (10)"), "{m}");

    // A rejected side does not produce a second, misleading pair error.
    let (_, _, m, _) = only_error("[fetch]\nrequest_timeout_ms = 0\n");
    assert_eq!(
        m,
        "`fetch.request_timeout_ms`: must be greater than 0, found 0"
    );
}

#[test]
fn unknown_enum_values_list_the_allowed_ones() {
    let (l, c, m, k) = only_error("[crawl]\nscope = \"hosts\"\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
    assert_eq!(
        m,
        "`crawl.scope`: unknown value `hosts`, expected one of `host`, `domain`, `any`"
    );
    let (_, _, m, _) = only_error("[observability]\nlog_format = \"JSON\"\n");
    assert_eq!(
        m,
        "`observability.log_format`: unknown value `JSON`, expected one of `auto`, `text`, `json`"
    );
    assert_eq!(ok("[crawl]\nscope = \"any\"\n").crawl.scope, ScopeMode::Any);
    let c = ok("[observability]\nlog_format = \"text\"\n");
    assert_eq!(c.observability.log_format, LogFormat::Text);
    assert_eq!(c.observability.log_format.to_string(), "text");
}

#[test]
fn string_value_checks() {
    let (l, c, m, _) = only_error("[crawl]\nuser_agent = \"\"\n");
    assert_eq!((l, c), (2, 1));
    assert_eq!(m, "`crawl.user_agent`: must not be empty");
    let (_, _, m, _) = only_error("[crawl]\nuser_agent = \"bot\\u00e9\"\n");
    assert_eq!(
        m,
        "`crawl.user_agent`: must be printable ASCII, found 'é' at character 4"
    );
    let (_, _, m, _) = only_error("[crawl]\nuser_agent = \"bot\\n2\"\n");
    assert!(m.contains("must be printable ASCII, found '\\n'"), "{m}");

    let (_, _, m, _) = only_error("[frontier]\ndata_dir = \" \"\n");
    assert_eq!(m, "`frontier.data_dir`: must not be empty");
    let (_, _, m, _) = only_error("[output]\njsonl = \"\"\n");
    assert_eq!(m, "`output.jsonl`: must not be empty");
}

#[test]
fn log_level_is_checked_loosely() {
    for good in [
        "info",
        "DEBUG",
        "warn,crawl_core=debug",
        "crawl_actors::fetcher=trace,info",
        "crawl_core",
        "h2=off",
        "crawl[fetch{url}]=debug",
        "info,",
        "3",
    ] {
        let text = format!("[observability]\nlog_level = {good:?}\n");
        assert_eq!(ok(&text).observability.log_level, good);
    }
    let cases = [
        ("", "must not be empty (use a level such as `info`)"),
        ("debg", "invalid log level `debg`; did you mean `debug`?"),
        (
            "crawl_core=loud",
            "invalid log level `loud` in `crawl_core=loud`, expected one of `trace`, `debug`, `info`, `warn`, `error`, `off`",
        ),
        ("=info", "invalid log directive `=info`: missing target"),
        ("a b", "invalid log directive `a b`"),
    ];
    for (bad, msg) in cases {
        let text = format!("[observability]\nlog_level = {bad:?}\n");
        let (l, c, m, k) = only_error(&text);
        assert_eq!((l, c, k), (2, 1, ErrorKind::InvalidValue));
        assert_eq!(m, format!("`observability.log_level`: {msg}"));
    }
}

#[test]
fn unknown_keys_get_suggestions() {
    let (l, c, m, k) = only_error("[crawl]\nseeds = []\n  seedz = []\n");
    assert_eq!((l, c, k), (3, 3, ErrorKind::UnknownKey));
    assert_eq!(m, "unknown key `crawl.seedz`; did you mean `seeds`?");

    let (_, _, m, _) = only_error("[politeness]\nmin_delay = 5\n");
    assert_eq!(
        m,
        "unknown key `politeness.min_delay`; did you mean `min_delay_ms`?"
    );

    let (l, c, m, _) = only_error("\n[crawll]\nseeds = []\n");
    assert_eq!((l, c), (2, 2));
    assert_eq!(m, "unknown section `crawll`; did you mean `crawl`?");

    // A key written in the wrong section points to the right one.
    let (_, _, m, _) = only_error("[crawl]\nmax_body_bytes = 5\n");
    assert_eq!(
        m,
        "unknown key `crawl.max_body_bytes`; did you mean `fetch.max_body_bytes` or `api.max_body_bytes`?"
    );
    let (_, _, m, _) = only_error("backoff_max_ms = 5\n");
    assert_eq!(
        m,
        "unknown key `backoff_max_ms`; did you mean `politeness.backoff_max_ms` or `supervisor.backoff_max_ms`?"
    );

    // Nothing close: no hint.
    let (_, _, m, _) = only_error("[fetch]\nquantum_flux = true\n");
    assert_eq!(m, "unknown key `fetch.quantum_flux`");
    let (_, _, m, _) = only_error("[crawl.extra]\nx = 1\n");
    assert_eq!(m, "unknown key `crawl.extra`");
}

#[test]
fn syntax_error_gives_one_positioned_error() {
    let (l, c, m, k) = only_error("[crawl]\nmax_pages = 1\nmax_depth = \n");
    assert_eq!((l, c, k), (3, 13, ErrorKind::Syntax));
    assert!(m.starts_with("TOML syntax error: "), "{m}");

    let (l, c, m, _) = only_error("[fetch]\nhttp2 = true\nhttp2 = false\n");
    assert_eq!((l, c), (3, 1));
    assert_eq!(m, "TOML syntax error: duplicate key");

    let (l, c, _, _) = only_error("[crawl]\nseedz = 1\n[fetch\n");
    assert_eq!((l, c), (3, 7));
}

#[test]
fn several_errors_are_reported_together_in_order() {
    let text = "\
[fetch]
concurrency = 0
http2 = \"yes\"
timeout_ms = 5

[crawl]
seeds = [\"https://ok.example/\", \"mailto:x@example.com\"]
scope = \"planet\"
include = [\"(\"]
";
    let err = Config::from_str(text, "dir/crawl.toml").expect_err("invalid");
    assert_eq!(err.len(), 6);
    assert!(!err.is_empty());
    let positions: Vec<(usize, usize)> = err.iter().map(|e| (e.line, e.column)).collect();
    assert_eq!(
        positions,
        [(2, 1), (3, 1), (4, 1), (7, 33), (8, 1), (9, 12)]
    );
    let kinds: Vec<ErrorKind> = (&err).into_iter().map(|e| e.kind).collect();
    use ErrorKind::*;
    assert_eq!(
        kinds,
        [
            InvalidValue,
            WrongType,
            UnknownKey,
            InvalidValue,
            InvalidValue,
            InvalidValue
        ]
    );
    let shown = err.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(
        lines[0],
        "dir/crawl.toml:2:1: `fetch.concurrency`: must be greater than 0, found 0"
    );
    assert_eq!(
        lines[2],
        "dir/crawl.toml:4:1: unknown key `fetch.timeout_ms`; did you mean `idle_timeout_ms`?"
    );
    assert!(lines[3].starts_with(
        "dir/crawl.toml:7:33: `crawl.seeds[1]`: URL `mailto:x@example.com` must use http or https"
    ));
    assert!(lines.iter().all(|l| l.starts_with("dir/crawl.toml:")));
}

#[test]
fn positions_for_dotted_keys_inline_tables_and_unicode() {
    let (l, c, m, _) = only_error("fetch.concurrency = 0\n");
    assert_eq!((l, c), (1, 7));
    assert_eq!(m, "`fetch.concurrency`: must be greater than 0, found 0");

    let (l, c, _, _) = only_error("fetch = { http2 = true, concurrency = 0 }\n");
    assert_eq!((l, c), (1, 25));

    // Columns count characters, not bytes.
    let (l, c, _, _) = only_error("[crawl] # é\n\"é\" = 1\n");
    assert_eq!((l, c), (2, 1));
    let (l, c, _, _) = only_error("frontier = { data_dir = \"é\", commit_max_ops = 0 }\n");
    assert_eq!((l, c), (1, 30));
}

#[test]
fn the_redis_backend_is_checked_and_its_password_never_shown() {
    let (l, _, m, k) = only_error("[frontier]\nbackend = \"redis\"\n");
    assert_eq!((l, k), (2, ErrorKind::InvalidValue));
    assert!(m.contains("needs `[frontier.redis]`"), "{m}");

    let (l, _, m, _) = only_error("[frontier]\nbackend = \"sql\"\n");
    assert_eq!(l, 2);
    assert!(m.contains("`embedded` or `redis`"), "{m}");

    let (l, _, m, k) = only_error(
        "[frontier]\nbackend = \"redis\"\n[frontier.redis]\nurls = [\"redis://h:1/0\"]\nshard = 3\n",
    );
    assert_eq!((l, k), (5, ErrorKind::UnknownKey));
    assert!(
        m.contains("`frontier.redis.shard`") && m.contains("shards"),
        "{m}"
    );

    let (l, _, m, _) = only_error("[frontier.redis]\nurls = [\"http://:hunter2-secret@h:1/\"]\n");
    assert_eq!(l, 2);
    assert!(m.contains("scheme") && !m.contains("hunter2"), "{m}");

    let (_, _, m, _) =
        only_error("[frontier.redis]\nurls = [\"redis+unix:///r.sock\"]\ncluster = true\n");
    assert!(m.contains("unix socket"), "{m}");
    let (_, _, m, _) = only_error("[frontier.redis]\ncrawl = \"a{b}\"\n");
    assert!(m.contains("invalid crawl name"), "{m}");
    let (_, _, m, _) = only_error("[frontier.redis]\nlease_ms = 50\n");
    assert!(m.contains("lease_ms"), "{m}");
}

#[test]
fn sentinels_replace_urls_and_keep_their_password_out_of_sight() {
    let c = ok("[frontier]\nbackend = \"redis\"\n[frontier.redis]\n\
         sentinels = [\"redis://10.0.0.7:26379\", \"redis://10.0.0.8:26379\"]\nmaster = \"crawl\"\n\
         sentinel_password = \"s3nt-secret\"\npassword = \"m4ster-secret\"\n");
    let r = &c.frontier.redis;
    assert_eq!(r.sentinels.len(), 2);
    assert_eq!(r.master.as_deref(), Some("crawl"));
    assert_eq!(
        r.replicas_ack(),
        Some(1),
        "replicas by default with sentinels"
    );
    assert_eq!(r.replicas_ack_timeout.as_millis(), 2000);
    assert_eq!(
        r.sentinel_password.as_ref().map(|p| p.expose()),
        Some("s3nt-secret")
    );
    let shown = format!("{r:?}");
    assert!(
        !shown.contains("s3nt-secret") && !shown.contains("m4ster-secret"),
        "{shown}"
    );
    let c = ok("[frontier.redis]\nurls = [\"redis://h:1/0\"]\n");
    assert_eq!(c.frontier.redis.replicas_ack(), None, "the server tells");
    let c = ok(
        "[frontier.redis]\nurls = [\"redis://h:1/0\"]\nreplicas_ack = 2\nreplicas_ack_timeout_ms = 300\n",
    );
    assert_eq!(c.frontier.redis.replicas_ack(), Some(2));
    assert_eq!(c.frontier.redis.replicas_ack_timeout.as_millis(), 300);
    let c =
        ok("[frontier.redis]\nsentinels = [\"redis://s:1\"]\nmaster = \"m\"\nreplicas_ack = 0\n");
    assert_eq!(
        c.frontier.redis.replicas_ack(),
        Some(0),
        "the value given wins"
    );

    let (l, _, m, k) = only_error(
        "[frontier.redis]\nurls = [\"redis://h:1/0\"]\nsentinels = [\"redis://s:1\"]\nmaster = \"m\"\n",
    );
    assert_eq!((l, k), (3, ErrorKind::InvalidValue));
    assert!(m.contains("not both"), "{m}");
    let (l, _, m, _) = only_error("[frontier.redis]\nsentinels = [\"redis://s:1\"]\n");
    assert_eq!(l, 1, "at the section: {m}");
    assert!(
        m.contains("`frontier.redis.master`") && m.contains("needed"),
        "{m}"
    );
    let (l, _, m, _) = only_error("[frontier.redis]\nurls = [\"redis://h:1/0\"]\nmaster = \"m\"\n");
    assert_eq!(l, 3);
    assert!(m.contains("only with `sentinels`"), "{m}");
    let (_, _, m, _) = only_error(
        "[frontier.redis]\nurls = [\"redis://h:1/0\"]\nsentinel_password = \"hidden-pw\"\n",
    );
    assert!(
        m.contains("only with `sentinels`") && !m.contains("hidden-pw"),
        "{m}"
    );
    let (l, _, m, _) = only_error(
        "[frontier.redis]\nsentinels = [\"redis://s:1\", \"http://:hidden-pw@s:2\"]\nmaster = \"m\"\n",
    );
    assert_eq!(l, 2);
    assert!(m.contains("scheme") && !m.contains("hidden-pw"), "{m}");
    let (_, _, m, _) =
        only_error("[frontier.redis]\nsentinels = [\"redis+unix:///s.sock\"]\nmaster = \"m\"\n");
    assert!(m.contains("over TCP"), "{m}");
    let (_, _, m, _) =
        only_error("[frontier.redis]\nsentinels = [\"redis://s:1\"]\nmaster = \"a b\"\n");
    assert!(m.contains("invalid master name"), "{m}");
    let (_, _, m, _) = only_error(
        "[frontier.redis]\nsentinels = [\"redis://s:1\"]\nmaster = \"m\"\ncluster = true\n",
    );
    assert!(m.contains("`cluster = true`"), "{m}");
    let (_, _, m, _) = only_error("[frontier.redis]\nsentinels = []\nmaster = \"m\"\n");
    assert!(m.contains("at least one sentinel"), "{m}");
    let (_, _, m, _) =
        only_error("[frontier]\nbackend = \"redis\"\n[frontier.redis]\ncrawl = \"x\"\n");
    assert!(m.contains("`sentinels`"), "neither is named: {m}");
}

#[test]
fn the_loader_keeps_the_reason_next_to_the_position() {
    let text = "[crawl]\nseeds = [\"https://a.example/\", \"ftp://u:hunter2@b.example/\"]\n\
                max_depth = -1\n[security]\nallow_cidrs = [\"10.1.2.3/16\"]\n\
                [fetch]\nhttp2 = 1\n";
    let all = errors(text);
    let found: Vec<(usize, usize, ErrorKind, Option<ValueError>)> = all
        .iter()
        .map(|e| (e.line, e.column, e.kind, e.reason.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (
                2,
                32,
                ErrorKind::InvalidValue,
                Some(ValueError::Url {
                    role: UrlRole::Seed,
                    shown: "ftp://***@b.example/".to_owned(),
                    problem: UrlProblem::Scheme {
                        found: "ftp".to_owned()
                    }
                })
            ),
            (
                3,
                1,
                ErrorKind::InvalidValue,
                Some(ValueError::BelowMinimum { min: 0, found: -1 })
            ),
            (
                5,
                16,
                ErrorKind::InvalidValue,
                Some(ValueError::AddressBlock(CidrError::HostBits {
                    text: "10.1.2.3/16".to_owned(),
                    network: "10.1.0.0".parse().unwrap(),
                    prefix: 16
                }))
            ),
            (7, 1, ErrorKind::WrongType, None),
        ]
    );
    let shown: Vec<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown[..3],
        [
            "test.toml:2:32: `crawl.seeds[1]`: URL `ftp://***@b.example/` must use http or https, \
             found `ftp`",
            "test.toml:3:1: `crawl.max_depth`: must not be negative, found -1",
            "test.toml:5:16: `security.allow_cidrs[0]`: invalid address block `10.1.2.3/16`: host \
             bits are set (did you mean `10.1.0.0/16`?)",
        ]
    );
    for e in &all {
        assert!(!format!("{e} {e:?}").contains("hunter2"), "{e:?}");
    }
}
