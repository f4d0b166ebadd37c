//! Tests of the telemetry keys of `[observability]` (`otlp_endpoint`, `otlp_protocol`, `service_name`,
//! `sample_ratio`, `metrics_listen`): accepted values and every error at its line:column.

use std::net::SocketAddr;

use super::tests::{errors, ok, only_error};
use super::*;

fn obs(body: &str) -> ObservabilityConfig {
    ok(&format!("[observability]\n{body}\n")).observability
}

/// The only error of `[observability]\n<body>`, which must sit at 2:1, without the key prefix.
fn obs_error(key: &str, body: &str) -> (String, ErrorKind) {
    let (l, c, m, k) = only_error(&format!("[observability]\n{body}\n"));
    assert_eq!((l, c), (2, 1), "{m}");
    let prefix = format!("`observability.{key}`: ");
    let msg = m
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{m:?} lacks {prefix:?}"));
    (msg.to_owned(), k)
}

#[test]
fn otlp_endpoint_accepts_http_and_https_with_a_port() {
    assert_eq!(obs("").otlp_endpoint, None);
    assert_eq!(obs("otlp_endpoint = \"\"").otlp_endpoint, None);
    for (text, host, port) in [
        ("http://127.0.0.1:4317", "127.0.0.1", 4317),
        (
            "http://otel-collector.example:4317/",
            "otel-collector.example",
            4317,
        ),
        ("https://[::1]:4317", "[::1]", 4317),
        // A port equal to the scheme's default still counts as written.
        ("https://collector.example:443", "collector.example", 443),
        ("HTTP://Collector.Example:80", "collector.example", 80),
    ] {
        let url = obs(&format!("otlp_endpoint = {text:?}"))
            .otlp_endpoint
            .unwrap_or_else(|| panic!("{text} gave no endpoint"));
        assert_eq!(url.host_str(), Some(host), "{text}");
        assert_eq!(url.port_or_known_default(), Some(port), "{text}");
        assert_eq!(url.path(), "/", "{text}");
    }
}

#[test]
fn otlp_endpoint_errors() {
    let cases = [
        (
            "127.0.0.1:4317",
            "invalid URL `127.0.0.1:4317`: relative URL without a base",
        ),
        (
            "localhost:4317",
            "OTLP endpoint `localhost:4317` must use http or https, found `localhost`",
        ),
        (
            "grpc://collector.example:4317",
            "OTLP endpoint `grpc://collector.example:4317` must use http or https, found `grpc`",
        ),
        (
            "http://collector.example",
            "OTLP endpoint `http://collector.example` needs an explicit port, e.g. `http://127.0.0.1:4317`",
        ),
        (
            "https://collector.example/",
            "OTLP endpoint `https://collector.example/` needs an explicit port, e.g. `http://127.0.0.1:4317`",
        ),
        (
            "http://collector.example:/",
            "OTLP endpoint `http://collector.example:/` needs an explicit port, e.g. `http://127.0.0.1:4317`",
        ),
        (
            "http://[::1]/",
            "OTLP endpoint `http://[::1]/` needs an explicit port, e.g. `http://127.0.0.1:4317`",
        ),
        (
            "http://collector.example:0",
            "OTLP endpoint `http://collector.example:0` must not use port 0",
        ),
        (
            "http://collector.example:4318/v1/traces",
            "OTLP endpoint `http://collector.example:4318/v1/traces` must not have a path, found `/v1/traces` (the exporter adds the path of its protocol)",
        ),
        (
            "http://collector.example:4317/?x=1",
            "OTLP endpoint `http://collector.example:4317/?x=1` must not have a query or fragment",
        ),
        (
            "http://collector.example:4317#f",
            "OTLP endpoint `http://collector.example:4317#f` must not have a query or fragment",
        ),
        (
            "http://collector.example:70000",
            "invalid URL `http://collector.example:70000`: invalid port number",
        ),
        (" ", "invalid URL ` `: relative URL without a base"),
    ];
    for (bad, msg) in cases {
        let (m, k) = obs_error("otlp_endpoint", &format!("otlp_endpoint = {bad:?}"));
        assert_eq!(k, ErrorKind::InvalidValue, "{bad}");
        assert_eq!(m, msg, "{bad}");
    }
    let (m, k) = obs_error("otlp_endpoint", "otlp_endpoint = 4317");
    assert_eq!(
        (m.as_str(), k),
        ("expected a string, found integer", ErrorKind::WrongType)
    );
}

#[test]
fn otlp_endpoint_credentials_are_rejected_without_showing_them() {
    let (m, _) = obs_error(
        "otlp_endpoint",
        "otlp_endpoint = \"http://user:s3cret@collector.example:4317\"",
    );
    assert_eq!(
        m,
        "OTLP endpoint `http://***@collector.example:4317` must not contain credentials"
    );
    let (m, _) = obs_error(
        "otlp_endpoint",
        "otlp_endpoint = \"http://user:s3cret@collector.example:99999\"",
    );
    assert!(!m.contains("s3cret") && !m.contains("user"), "{m}");
}

#[test]
fn otlp_protocol_values() {
    assert_eq!(obs("").otlp_protocol, None);
    assert_eq!(obs("otlp_protocol = \"\"").otlp_protocol, None);
    assert_eq!(
        obs("otlp_protocol = \"grpc\"").otlp_protocol,
        Some(OtlpProtocol::Grpc)
    );
    assert_eq!(
        obs("otlp_protocol = \"http/protobuf\"").otlp_protocol,
        Some(OtlpProtocol::HttpProtobuf)
    );
    for p in [OtlpProtocol::Grpc, OtlpProtocol::HttpProtobuf] {
        assert_eq!(
            obs(&format!("otlp_protocol = {:?}", p.as_str())).otlp_protocol,
            Some(p)
        );
    }
    let (m, k) = obs_error("otlp_protocol", "otlp_protocol = \"http/json\"");
    assert_eq!(
        (m.as_str(), k),
        (
            "unknown value `http/json`, expected one of `grpc`, `http/protobuf`",
            ErrorKind::InvalidValue
        )
    );
}

#[test]
fn otlp_compression_values() {
    assert_eq!(obs("").otlp_compression, None);
    assert_eq!(obs("otlp_compression = \"\"").otlp_compression, None);
    for c in [OtlpCompression::None, OtlpCompression::Gzip] {
        assert_eq!(
            obs(&format!("otlp_compression = {:?}", c.as_str())).otlp_compression,
            Some(c)
        );
    }
    let (m, k) = obs_error("otlp_compression", "otlp_compression = \"zstd\"");
    assert_eq!(
        (m.as_str(), k),
        (
            "unknown value `zstd`, expected one of `none`, `gzip`",
            ErrorKind::InvalidValue
        )
    );
}

#[test]
fn service_name_values() {
    assert_eq!(obs("").service_name, DEFAULT_SERVICE_NAME);
    for good in ["crawl-eu-1", "crawl engine", "crawler.ü", "x"] {
        assert_eq!(obs(&format!("service_name = {good:?}")).service_name, good);
    }
    // Values as TOML literals (TOML writes `\u007f`, Rust's `{:?}` would write `\u{7f}`).
    for (bad, msg) in [
        (r#""""#, "must not be empty"),
        (r#""  ""#, "must not be empty"),
        (
            r#""crawl\tengine""#,
            "must not contain control characters, found '\\t' at character 6",
        ),
        (
            r#""crawl\u007f""#,
            "must not contain control characters, found '\\u{7f}' at character 6",
        ),
        (
            r#""a\u0085b""#,
            "must not contain control characters, found '\\u{85}' at character 2",
        ),
    ] {
        let (m, k) = obs_error("service_name", &format!("service_name = {bad}"));
        assert_eq!((m.as_str(), k), (msg, ErrorKind::InvalidValue), "{bad}");
    }
    let (m, k) = obs_error("service_name", "service_name = [\"a\"]");
    assert_eq!(
        (m.as_str(), k),
        ("expected a string, found array", ErrorKind::WrongType)
    );
}

#[test]
fn sample_ratio_values() {
    assert_eq!(obs("").sample_ratio, 1.0);
    for (text, value) in [
        ("0.0", 0.0),
        ("1.0", 1.0),
        ("0.25", 0.25),
        ("1e-3", 0.001),
        ("0.000_5", 0.0005),
        ("+0.5", 0.5),
        ("0", 0.0),
        ("1", 1.0),
        ("0x1", 1.0),
    ] {
        let got = obs(&format!("sample_ratio = {text}")).sample_ratio;
        assert_eq!(got, value, "{text}");
    }
    let zero = obs("sample_ratio = -0.0").sample_ratio;
    assert!(zero == 0.0 && zero.is_sign_positive());

    for (bad, found) in [
        ("1.5", "1.5"),
        ("-0.1", "-0.1"),
        ("1.000_001", "1.000001"),
        ("2", "2"),
        ("-1", "-1"),
        ("nan", "nan"),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("99999999999999999999999", "99999999999999999999999"),
    ] {
        let (m, k) = obs_error("sample_ratio", &format!("sample_ratio = {bad}"));
        assert_eq!(k, ErrorKind::InvalidValue, "{bad}");
        assert_eq!(
            m,
            format!("must be from 0.0 to 1.0, found {found}"),
            "{bad}"
        );
    }
    for (bad, found) in [("\"0.5\"", "string"), ("true", "boolean")] {
        let (m, k) = obs_error("sample_ratio", &format!("sample_ratio = {bad}"));
        assert_eq!(k, ErrorKind::WrongType, "{bad}");
        assert_eq!(m, format!("expected a number, found {found}"));
    }
}

#[test]
fn metrics_listen_values() {
    let default = obs("").metrics_listen;
    assert_eq!(default, Some(DEFAULT_METRICS_LISTEN));
    assert!(DEFAULT_METRICS_LISTEN.ip().is_loopback());
    assert_eq!(obs("metrics_listen = \"\"").metrics_listen, None);
    for good in [
        "127.0.0.1:9464",
        "0.0.0.0:9464",
        "[::1]:9090",
        "[::]:0",
        "127.0.0.1:0",
    ] {
        let addr: SocketAddr = good.parse().expect("addr");
        let got = obs(&format!("metrics_listen = {good:?}")).metrics_listen;
        assert_eq!(got, Some(addr), "{good}");
    }
    let hint = "expected ip:port such as `127.0.0.1:9464` or `[::1]:9464` (\"\" = off)";
    let v6 = "missing port (IPv6 addresses go in brackets)";
    for (bad, why) in [
        ("127.0.0.1", "missing port"),
        ("::1", v6),
        // Valid as an IPv6 address, so the port is what is missing.
        ("::1:9464", v6),
        ("localhost:9464", "not an IP address and port"),
        (":9464", "not an IP address and port"),
        ("127.0.0.1:99999", "not an IP address and port"),
        (" ", "not an IP address and port"),
    ] {
        let (m, k) = obs_error("metrics_listen", &format!("metrics_listen = {bad:?}"));
        assert_eq!(k, ErrorKind::InvalidValue, "{bad}");
        assert_eq!(m, format!("invalid listen address `{bad}`: {why}; {hint}"));
    }
    let (m, k) = obs_error("metrics_listen", "metrics_listen = 9464");
    assert_eq!(
        (m.as_str(), k),
        ("expected a string, found integer", ErrorKind::WrongType)
    );
}

#[test]
fn errors_are_positioned_and_reported_together() {
    let text = "\
[observability]
log_level = \"info\"
  otlp_endpoint = \"http://collector.example\"
service_name = \"\"
sample_ratio = 1.01
\tmetrics_listen = \"localhost:9464\"
";
    let errs = errors(text);
    let got: Vec<(usize, usize, &str)> = errs
        .iter()
        .map(|e| (e.line, e.column, e.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                3,
                3,
                "`observability.otlp_endpoint`: OTLP endpoint `http://collector.example` needs an explicit port, e.g. `http://127.0.0.1:4317`"
            ),
            (4, 1, "`observability.service_name`: must not be empty"),
            (
                5,
                1,
                "`observability.sample_ratio`: must be from 0.0 to 1.0, found 1.01"
            ),
            (
                6,
                2,
                "`observability.metrics_listen`: invalid listen address `localhost:9464`: not an IP address and port; expected ip:port such as `127.0.0.1:9464` or `[::1]:9464` (\"\" = off)"
            ),
        ]
    );
    let shown = Config::from_str(text, "crawl.toml")
        .expect_err("invalid")
        .to_string();
    assert!(
        shown.starts_with("crawl.toml:3:3: `observability.otlp_endpoint`: "),
        "{shown}"
    );

    // Inline tables and dotted keys point at the key itself.
    let (l, c, m, _) = only_error("observability = { log_format = \"json\", sample_ratio = 3 }\n");
    assert_eq!((l, c), (1, 40));
    assert_eq!(
        m,
        "`observability.sample_ratio`: must be from 0.0 to 1.0, found 3"
    );
    let (l, c, _, _) = only_error("observability.metrics_listen = \"x\"\n");
    assert_eq!((l, c), (1, 15));

    // A near-miss of a new key gets a suggestion.
    let (l, c, m, k) = only_error("[observability]\nsample_rate = 0.5\n");
    assert_eq!((l, c, k), (2, 1, ErrorKind::UnknownKey));
    assert_eq!(
        m,
        "unknown key `observability.sample_rate`; did you mean `sample_ratio`?"
    );
}

#[test]
fn all_four_keys_together() {
    let o = obs(
        "otlp_endpoint = \"https://otel.example:4317\"\nservice_name = \"crawl-eu\"\n\
         sample_ratio = 0.1\nmetrics_listen = \"0.0.0.0:9100\"",
    );
    assert_eq!(
        o.otlp_endpoint.as_ref().map(url::Url::as_str),
        Some("https://otel.example:4317/")
    );
    assert_eq!(o.service_name, "crawl-eu");
    assert_eq!(o.sample_ratio, 0.1);
    let listen = o.metrics_listen.expect("listen");
    assert!(!listen.ip().is_loopback() && listen.port() == 9100);
    // Untouched keys keep their defaults.
    assert_eq!(o.log_level, "info");
    assert_eq!(o.log_format, LogFormat::Auto);
}
