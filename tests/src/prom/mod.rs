//! Prometheus metrics for tests: a parser of the text exposition format 0.0.4 ([`parse`]), a blocking scraper of
//! `GET /metrics` ([`scrape`]), a bridge to `promtool check metrics` ([`promtool_check_metrics`]), and the queries
//! of a Grafana dashboard held against a scrape ([`dashboard`]).
//!
//! The parser is strict about the 0.0.4 syntax (names, label escapes, values, duplicate `# TYPE`/labels) and also
//! reads OpenMetrics text: a `# {labels} value [timestamp]` exemplar after a sample goes to [`Sample::exemplar`]
//! (0.0.4 has none, so a test can assert that), and `# EOF`, `# UNIT` are accepted.

use std::collections::BTreeMap;
use std::num::ParseFloatError;

/// Why [`parse`] rejected an exposition: the 1-based line, the line as written and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}: {text:?}")]
pub struct ParseError {
    pub line: usize,
    pub text: String,
    pub problem: Syntax,
}

/// What is wrong with a line of an exposition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Syntax {
    #[error("invalid metric name")]
    MetricName,
    #[error("invalid metric name {name:?} in # {keyword}")]
    CommentMetricName { name: String, keyword: String },
    #[error("second # HELP for {name}")]
    SecondHelp { name: String },
    #[error("second # TYPE for {name}")]
    SecondType { name: String },
    #[error("unknown type {ty:?}")]
    UnknownType { ty: String },
    #[error("invalid value {text:?}")]
    ValueText { text: String },
    #[error("invalid value {text:?}: {source}")]
    Value {
        text: String,
        source: ParseFloatError,
    },
    #[error("invalid timestamp {text:?}: {source}")]
    Timestamp {
        text: String,
        source: ParseFloatError,
    },
    #[error("expected '{{'")]
    LabelsOpen,
    #[error("expected '{{' to open the exemplar's labels")]
    ExemplarOpen,
    #[error("invalid label name at {rest:?}")]
    LabelName { rest: String },
    #[error("expected '=' after label name {name:?}")]
    LabelEquals { name: String },
    #[error("expected '\"' to open the value of label {name:?}")]
    LabelQuote { name: String },
    #[error("unterminated value of label {name:?}")]
    UnterminatedLabel { name: String },
    #[error("invalid escape \\{found:?} in the value of label {name:?}")]
    LabelEscape { name: String, found: Option<char> },
    #[error("duplicate label {name:?}")]
    DuplicateLabel { name: String },
    #[error("expected ',' or '}}' after label {name:?}, found {found:?}")]
    LabelSeparator { name: String, found: Option<char> },
    #[error("unexpected text {rest:?}")]
    TrailingText { rest: String },
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The full sample name (`x_total`, `x_bucket`, `x_sum`, ...).
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    /// The optional timestamp (milliseconds since the epoch in 0.0.4).
    pub timestamp: Option<f64>,
    /// An OpenMetrics exemplar (`# {trace_id="..."} 0.12`), never present in 0.0.4.
    pub exemplar: Option<Exemplar>,
}

/// An OpenMetrics exemplar.
#[derive(Debug, Clone, PartialEq)]
pub struct Exemplar {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
    pub timestamp: Option<f64>,
}

/// A parsed exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    /// Every sample, in order.
    pub samples: Vec<Sample>,
    /// `# TYPE` lines: metric family name → type (`counter`, `gauge`, `histogram`, `summary`, `untyped`, ...).
    pub types: BTreeMap<String, String>,
    /// `# HELP` lines: metric family name → unescaped help text.
    pub help: BTreeMap<String, String>,
}

impl Scrape {
    /// The samples named `name` whose labels include every `(key, value)` pair of `labels`.
    pub fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).is_some_and(|have| have == v))
        })
    }

    /// The sum of the values of the samples named `name` whose labels include the given pairs (a subset match:
    /// `&[]` matches every series of `name`); `None` when no sample matches.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut found = false;
        let mut sum = 0.0;
        for s in self.matching(name, labels) {
            found = true;
            sum += s.value;
        }
        found.then_some(sum)
    }

    /// The sum of every sample named `name` (0 when there is none).
    pub fn sum(&self, name: &str) -> f64 {
        self.value(name, &[]).unwrap_or(0.0)
    }

    /// The `# TYPE` of the family `name`.
    pub fn type_of(&self, name: &str) -> Option<&str> {
        self.types.get(name).map(String::as_str)
    }

    /// Whether any sample is named `name`.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }

    /// The cumulative buckets of histogram `family` (`family_bucket` samples) over the series that include
    /// `labels`, summed per `le` and sorted by it (`+Inf` last).
    pub fn buckets(&self, family: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
        let name = format!("{family}_bucket");
        let mut out: Vec<(f64, f64)> = Vec::new();
        for s in self.matching(&name, labels) {
            let Some(le) = s.labels.get("le").and_then(|le| parse_value(le).ok()) else {
                continue;
            };
            match out.iter_mut().find(|(l, _)| *l == le) {
                Some((_, c)) => *c += s.value,
                None => out.push((le, s.value)),
            }
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

fn is_name_start(c: char, colon: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || (colon && c == ':')
}

fn is_name_char(c: char, colon: bool) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':')
}

fn valid_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| is_name_start(c, colon)) && chars.all(|c| is_name_char(c, colon))
}

/// A sample value: a Go float, `+Inf`, `-Inf`, `Inf`, `NaN`.
fn parse_value(s: &str) -> Result<f64, Syntax> {
    match s {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => {
            let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c));
            if !ok {
                return Err(Syntax::ValueText { text: s.to_owned() });
            }
            s.parse::<f64>().map_err(|source| Syntax::Value {
                text: s.to_owned(),
                source,
            })
        }
    }
}

/// A cursor over one line.
struct Line<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Line<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_blanks(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.bump();
        }
        &self.s[start..self.pos]
    }

    /// A token up to the next blank.
    fn token(&mut self) -> &'a str {
        self.take_while(|c| c != ' ' && c != '\t')
    }

    /// `{name="value",...}` (the `{` not yet read); a trailing comma is allowed.
    fn labels(&mut self) -> Result<BTreeMap<String, String>, Syntax> {
        let mut labels = BTreeMap::new();
        if self.bump() != Some('{') {
            return Err(Syntax::LabelsOpen);
        }
        loop {
            self.skip_blanks();
            if self.peek() == Some('}') {
                self.bump();
                return Ok(labels);
            }
            let name = self.take_while(|c| is_name_char(c, false));
            if !valid_name(name, false) {
                return Err(Syntax::LabelName {
                    rest: self.rest().to_owned(),
                });
            }
            self.skip_blanks();
            let name_of = || name.to_owned();
            if self.bump() != Some('=') {
                return Err(Syntax::LabelEquals { name: name_of() });
            }
            self.skip_blanks();
            if self.bump() != Some('"') {
                return Err(Syntax::LabelQuote { name: name_of() });
            }
            let mut value = String::new();
            loop {
                match self.bump() {
                    None => return Err(Syntax::UnterminatedLabel { name: name_of() }),
                    Some('"') => break,
                    Some('\\') => match self.bump() {
                        Some('\\') => value.push('\\'),
                        Some('"') => value.push('"'),
                        Some('n') => value.push('\n'),
                        found => {
                            return Err(Syntax::LabelEscape {
                                name: name_of(),
                                found,
                            });
                        }
                    },
                    Some(c) => value.push(c),
                }
            }
            if labels.insert(name_of(), value).is_some() {
                return Err(Syntax::DuplicateLabel { name: name_of() });
            }
            self.skip_blanks();
            match self.bump() {
                Some(',') => {}
                Some('}') => return Ok(labels),
                found => {
                    return Err(Syntax::LabelSeparator {
                        name: name_of(),
                        found,
                    });
                }
            }
        }
    }

    /// ` value [timestamp]` after the labels.
    fn value_and_timestamp(&mut self) -> Result<(f64, Option<f64>), Syntax> {
        self.skip_blanks();
        let value = parse_value(self.token())?;
        self.skip_blanks();
        let timestamp = match self.peek() {
            None | Some('#') => None,
            Some(_) => {
                let t = self.token();
                Some(t.parse::<f64>().map_err(|source| Syntax::Timestamp {
                    text: t.to_owned(),
                    source,
                })?)
            }
        };
        self.skip_blanks();
        Ok((value, timestamp))
    }
}

fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

const TYPES: &[&str] = &[
    "counter",
    "gauge",
    "histogram",
    "summary",
    "untyped",
    // OpenMetrics
    "unknown",
    "info",
    "stateset",
    "gaugehistogram",
];

fn parse_sample(line: &str) -> Result<Sample, Syntax> {
    let mut l = Line { s: line, pos: 0 };
    let name = l.take_while(|c| is_name_char(c, true));
    if !valid_name(name, true) {
        return Err(Syntax::MetricName);
    }
    l.skip_blanks();
    let labels = if l.peek() == Some('{') {
        l.labels()?
    } else {
        BTreeMap::new()
    };
    let (value, timestamp) = l.value_and_timestamp()?;
    let exemplar = if l.peek() == Some('#') {
        l.bump();
        l.skip_blanks();
        if l.peek() != Some('{') {
            return Err(Syntax::ExemplarOpen);
        }
        let labels = l.labels()?;
        let (value, timestamp) = l.value_and_timestamp()?;
        Some(Exemplar {
            labels,
            value,
            timestamp,
        })
    } else {
        None
    };
    if !l.rest().is_empty() {
        return Err(Syntax::TrailingText {
            rest: l.rest().to_owned(),
        });
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
        timestamp,
        exemplar,
    })
}

/// Parses a text exposition (0.0.4, or OpenMetrics text). Errors name the line (1-based).
pub fn parse(text: &str) -> Result<Scrape, ParseError> {
    let mut scrape = Scrape::default();
    for (i, raw) in text.lines().enumerate() {
        let err = |problem| ParseError {
            line: i + 1,
            text: raw.to_owned(),
            problem,
        };
        let line = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim_start_matches([' ', '\t']);
            let mut words = comment.splitn(3, [' ', '\t']);
            let keyword = words.next().unwrap_or("");
            match keyword {
                "HELP" | "TYPE" | "UNIT" => {
                    let name = words.next().unwrap_or("");
                    if !valid_name(name, true) {
                        return Err(err(Syntax::CommentMetricName {
                            name: name.to_owned(),
                            keyword: keyword.to_owned(),
                        }));
                    }
                    let rest = words.next().unwrap_or("");
                    if keyword == "HELP" {
                        let help = unescape_help(rest);
                        if scrape.help.insert(name.to_string(), help).is_some() {
                            return Err(err(Syntax::SecondHelp {
                                name: name.to_owned(),
                            }));
                        }
                    } else if keyword == "TYPE" {
                        let ty = rest.trim();
                        if !TYPES.contains(&ty) {
                            return Err(err(Syntax::UnknownType { ty: ty.to_owned() }));
                        }
                        if scrape
                            .types
                            .insert(name.to_string(), ty.to_string())
                            .is_some()
                        {
                            return Err(err(Syntax::SecondType {
                                name: name.to_owned(),
                            }));
                        }
                    }
                }
                // Any other comment, and OpenMetrics' `# EOF`.
                _ => {}
            }
            continue;
        }
        scrape.samples.push(parse_sample(line).map_err(err)?);
    }
    Ok(scrape)
}

pub mod dashboard;
mod http;
mod promtool;

pub use http::{Response, SCRAPE_TIMEOUT, ScrapeError, get, scrape};
pub use promtool::{PromtoolError, promtool_check_metrics};

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"# HELP crawl_records_total JSONL records by outcome.\nSecond \\ line.
# TYPE crawl_records_total counter
crawl_records_total{outcome="fetched",reason=""} 7
crawl_records_total{outcome="failed",reason="timeout"} 2
crawl_records_total{outcome="failed",reason="dns"} 1 1700000000000
# a free comment
   
# HELP crawl_build_info Build information.
# TYPE crawl_build_info gauge
crawl_build_info{version="0.1.0",note="a \"quoted\" \\ value\nnext"} 1
# TYPE crawl_fetch_duration_seconds histogram
crawl_fetch_duration_seconds_bucket{outcome="fetched",le="0.1"} 3
crawl_fetch_duration_seconds_bucket{outcome="fetched",le="1.0"} 5
crawl_fetch_duration_seconds_bucket{outcome="fetched",le="+Inf"} 6
crawl_fetch_duration_seconds_bucket{outcome="failed",le="0.1"} 0
crawl_fetch_duration_seconds_bucket{outcome="failed",le="1.0"} 1
crawl_fetch_duration_seconds_bucket{outcome="failed",le="+Inf"} 2
crawl_fetch_duration_seconds_sum{outcome="fetched"} 2.5e0
crawl_fetch_duration_seconds_count{outcome="fetched"} 6
crawl_fetch_duration_seconds_sum{outcome="failed"} 3.25
crawl_fetch_duration_seconds_count{outcome="failed"} 2
# TYPE odd gauge
odd{a="x",} NaN
odd{a="y"} -Inf
odd{a="z"} +Inf
no_labels 42
"#;

    #[test]
    fn parses_the_text_format() {
        let s = parse(SAMPLE).expect("parse");
        assert_eq!(s.type_of("crawl_records_total"), Some("counter"));
        assert_eq!(s.type_of("crawl_fetch_duration_seconds"), Some("histogram"));
        assert_eq!(s.type_of("crawl_fetch_duration_seconds_bucket"), None);
        assert_eq!(
            s.help["crawl_records_total"],
            "JSONL records by outcome.\nSecond \\ line."
        );
        assert_eq!(s.sum("crawl_records_total"), 10.0);
        assert_eq!(
            s.value("crawl_records_total", &[("outcome", "failed")]),
            Some(3.0)
        );
        assert_eq!(
            s.value(
                "crawl_records_total",
                &[("outcome", "failed"), ("reason", "dns")]
            ),
            Some(1.0)
        );
        assert_eq!(s.value("crawl_records_total", &[("reason", "")]), Some(7.0));
        assert_eq!(
            s.value("crawl_records_total", &[("outcome", "excluded")]),
            None
        );
        assert_eq!(
            s.value("crawl_records_total", &[("nope", "")]),
            None,
            "a missing label is not \"\""
        );
        assert_eq!(s.value("missing_total", &[]), None);
        assert_eq!(s.sum("missing_total"), 0.0);
        let dns = s
            .matching("crawl_records_total", &[("reason", "dns")])
            .next()
            .expect("dns sample");
        assert_eq!(dns.timestamp, Some(1_700_000_000_000.0));
        assert!(dns.exemplar.is_none());

        let info = &s
            .matching("crawl_build_info", &[])
            .next()
            .expect("build info");
        assert_eq!(info.labels["version"], "0.1.0");
        assert_eq!(info.labels["note"], "a \"quoted\" \\ value\nnext");
        assert_eq!(info.value, 1.0);

        assert_eq!(
            s.buckets("crawl_fetch_duration_seconds", &[("outcome", "fetched")]),
            vec![(0.1, 3.0), (1.0, 5.0), (f64::INFINITY, 6.0)]
        );
        assert_eq!(
            s.buckets("crawl_fetch_duration_seconds", &[]),
            vec![(0.1, 3.0), (1.0, 6.0), (f64::INFINITY, 8.0)]
        );
        assert_eq!(
            s.value("crawl_fetch_duration_seconds_bucket", &[("le", "+Inf")]),
            Some(8.0)
        );
        assert_eq!(s.sum("crawl_fetch_duration_seconds_count"), 8.0);
        assert_eq!(s.sum("crawl_fetch_duration_seconds_sum"), 5.75);

        assert!(s.value("odd", &[("a", "x")]).expect("NaN sample").is_nan());
        assert_eq!(s.value("odd", &[("a", "y")]), Some(f64::NEG_INFINITY));
        assert_eq!(s.value("odd", &[("a", "z")]), Some(f64::INFINITY));
        assert_eq!(s.value("no_labels", &[]), Some(42.0));
        assert!(s.has("no_labels"));
        assert_eq!(s.samples.len(), 18);
    }

    #[test]
    fn reads_openmetrics_exemplars_and_eof() {
        let text = "# TYPE crawl_fetch_duration_seconds histogram\n\
            # UNIT crawl_fetch_duration_seconds seconds\n\
            crawl_fetch_duration_seconds_bucket{outcome=\"fetched\",le=\"0.5\"} 1 # {trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 0.25 1700000000.5\n\
            crawl_fetch_duration_seconds_bucket{outcome=\"fetched\",le=\"+Inf\"} 1\n\
            # EOF\n";
        let s = parse(text).expect("parse");
        let b = &s.samples[0];
        let ex = b.exemplar.as_ref().expect("exemplar");
        assert_eq!(ex.labels["trace_id"], "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(ex.value, 0.25);
        assert_eq!(ex.timestamp, Some(1_700_000_000.5));
        assert!(s.samples[1].exemplar.is_none());
    }

    #[test]
    fn rejects_malformed_lines() {
        let name = || "a".to_owned();
        let cases = [
            (
                "x{a=\"b\" 1",
                Syntax::LabelSeparator {
                    name: name(),
                    found: Some('1'),
                },
            ),
            ("x{a=\"b} 1", Syntax::UnterminatedLabel { name: name() }),
            (
                "x{a=\"\\t\"} 1",
                Syntax::LabelEscape {
                    name: name(),
                    found: Some('t'),
                },
            ),
            ("x{a=b} 1", Syntax::LabelQuote { name: name() }),
            (
                "x{a=\"1\",a=\"2\"} 1",
                Syntax::DuplicateLabel { name: name() },
            ),
            (
                "x{1a=\"b\"} 1",
                Syntax::LabelName {
                    rest: "=\"b\"} 1".to_owned(),
                },
            ),
            ("1x 1", Syntax::MetricName),
            (
                "x",
                Syntax::ValueText {
                    text: String::new(),
                },
            ),
            (
                "x one",
                Syntax::ValueText {
                    text: "one".to_owned(),
                },
            ),
            (
                "x 1 2 3",
                Syntax::TrailingText {
                    rest: "3".to_owned(),
                },
            ),
            (
                "# TYPE x countr\nx 1",
                Syntax::UnknownType {
                    ty: "countr".to_owned(),
                },
            ),
            (
                "# TYPE x counter\n# TYPE x gauge\nx 1",
                Syntax::SecondType {
                    name: "x".to_owned(),
                },
            ),
            (
                "# TYPE 9x counter",
                Syntax::CommentMetricName {
                    name: "9x".to_owned(),
                    keyword: "TYPE".to_owned(),
                },
            ),
        ];
        for (bad, want) in cases {
            match parse(bad) {
                Err(e) => assert_eq!(e.problem, want, "{bad:?}"),
                Ok(s) => panic!("{bad:?} parsed as {s:?}"),
            }
        }
        let e = parse("x 1 abc").expect_err("bad timestamp");
        assert!(
            matches!(&e.problem, Syntax::Timestamp { text, .. } if text == "abc"),
            "{e:?}"
        );
        let e = parse("ok 1\nx{a=\"b\" 1").expect_err("bad second line");
        assert_eq!(
            e,
            ParseError {
                line: 2,
                text: "x{a=\"b\" 1".to_owned(),
                problem: Syntax::LabelSeparator {
                    name: "a".to_owned(),
                    found: Some('1')
                }
            }
        );
        assert_eq!(
            e.to_string(),
            "line 2: expected ',' or '}' after label \"a\", found Some('1'): \"x{a=\\\"b\\\" 1\""
        );
    }
}
