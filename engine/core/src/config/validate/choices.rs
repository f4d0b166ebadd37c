//! Settings that take one of a fixed set of names (scope, log format, OTLP protocol and
//! compression, resolver mode, proxy selection and resolution), each read into its enum.

use crate::config::value_error::ValueError;
use crate::config::{
    LogFormat, OtlpCompression, OtlpProtocol, ResolveAt, ResolverMode, SelectPolicy,
};
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
