//! Settings that take one of a fixed set of names (scope, log format, OTLP protocol and
//! compression, resolver mode, proxy selection and resolution, alert actions), each read into its enum.

use crate::config::value_error::ValueError;
use crate::config::{
    LogFormat, OtlpCompression, OtlpProtocol, ResolveAt, ResolverMode, SelectPolicy,
};
use crate::control::alerts::ActionKind;
use crate::scope::ScopeMode;

/// The value of the name `s` among `allowed`, written exactly; an error lists the names.
fn one_of<T: Copy>(s: &str, allowed: &[(&'static str, T)]) -> Result<T, ValueError> {
    if let Some((_, v)) = allowed.iter().find(|(name, _)| *name == s) {
        return Ok(*v);
    }
    Err(ValueError::UnknownName {
        text: s.to_owned(),
        expected: allowed.iter().map(|(n, _)| *n).collect(),
    })
}

/// `host`, `domain` or `any`.
pub(in crate::config) fn scope(s: &str) -> Result<ScopeMode, ValueError> {
    one_of(
        s,
        &[
            ("host", ScopeMode::Host),
            ("domain", ScopeMode::Domain),
            ("any", ScopeMode::Any),
        ],
    )
}

/// `auto`, `text` or `json`.
pub(in crate::config) fn log_format(s: &str) -> Result<LogFormat, ValueError> {
    one_of(
        s,
        &[
            ("auto", LogFormat::Auto),
            ("text", LogFormat::Text),
            ("json", LogFormat::Json),
        ],
    )
}

/// `grpc` or `http/protobuf`; `""` = from the environment.
pub(in crate::config) fn otlp_protocol(s: &str) -> Result<Option<OtlpProtocol>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    one_of(
        s,
        &[
            ("grpc", OtlpProtocol::Grpc),
            ("http/protobuf", OtlpProtocol::HttpProtobuf),
        ],
    )
    .map(Some)
}

/// `none` or `gzip`; `""` = from the environment.
pub(in crate::config) fn otlp_compression(s: &str) -> Result<Option<OtlpCompression>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    one_of(
        s,
        &[
            ("none", OtlpCompression::None),
            ("gzip", OtlpCompression::Gzip),
        ],
    )
    .map(Some)
}

/// `detect`, `doh`, `doh-first` or `plain`.
pub(in crate::config) fn resolver_mode(s: &str) -> Result<ResolverMode, ValueError> {
    one_of(
        s,
        &[
            ("detect", ResolverMode::Detect),
            ("doh", ResolverMode::Doh),
            ("doh-first", ResolverMode::DohFirst),
            ("plain", ResolverMode::Plain),
        ],
    )
}

/// `round-robin`, `least-failures` or `sticky`.
pub(in crate::config) fn select_policy(s: &str) -> Result<SelectPolicy, ValueError> {
    one_of(
        s,
        &[
            ("round-robin", SelectPolicy::RoundRobin),
            ("least-failures", SelectPolicy::LeastFailures),
            ("sticky", SelectPolicy::Sticky),
        ],
    )
}

/// `remote` or `local`.
pub(in crate::config) fn resolve_at(s: &str) -> Result<ResolveAt, ValueError> {
    one_of(
        s,
        &[("remote", ResolveAt::Remote), ("local", ResolveAt::Local)],
    )
}

/// An `[[api.alert_actions]]` action: `pause_host`, `pause_crawl`, `resolver_doh`, `fallback_direct`,
/// `forbid_direct` or `lower_concurrency` (with `factor`, which the caller checks).
pub(in crate::config) fn alert_action(s: &str, factor: f64) -> Result<ActionKind, ValueError> {
    one_of(
        s,
        &[
            ("pause_host", ActionKind::PauseHost),
            ("pause_crawl", ActionKind::PauseCrawl),
            ("resolver_doh", ActionKind::ResolverDoh),
            ("fallback_direct", ActionKind::FallbackDirect),
            ("forbid_direct", ActionKind::ForbidDirect),
            ("lower_concurrency", ActionKind::LowerConcurrency { factor }),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_must_be_written_exactly_and_the_error_lists_the_names() {
        assert_eq!(scope("domain"), Ok(ScopeMode::Domain));
        let e = scope("hosts").unwrap_err();
        assert_eq!(
            e,
            ValueError::UnknownName {
                text: "hosts".to_owned(),
                expected: vec!["host", "domain", "any"]
            }
        );
        assert_eq!(
            e.to_string(),
            "unknown value `hosts`, expected one of `host`, `domain`, `any`"
        );
        assert!(
            matches!(resolver_mode("DoH"), Err(ValueError::UnknownName { .. })),
            "names are case-sensitive"
        );
        assert_eq!(resolve_at("local"), Ok(ResolveAt::Local));
        assert_eq!(
            alert_action("lower_concurrency", 0.25),
            Ok(ActionKind::LowerConcurrency { factor: 0.25 })
        );
        for name in [
            "pause_host",
            "pause_crawl",
            "resolver_doh",
            "fallback_direct",
            "forbid_direct",
        ] {
            assert_eq!(alert_action(name, 0.5).map(|a| a.as_str()), Ok(name));
        }
        assert!(alert_action("pause", 0.5).is_err());
    }

    #[test]
    fn an_empty_otlp_choice_leaves_it_to_the_environment() {
        assert_eq!(otlp_protocol(""), Ok(None));
        assert_eq!(otlp_compression(""), Ok(None));
        assert_eq!(
            otlp_protocol("http/protobuf"),
            Ok(Some(OtlpProtocol::HttpProtobuf))
        );
        assert_eq!(otlp_compression("gzip"), Ok(Some(OtlpCompression::Gzip)));
        assert!(otlp_compression("zstd").is_err());
    }
}
