//! Error types of the configuration loader: one [`ConfigError`] per problem, each pointing at
//! `origin:line:column`, collected into [`ConfigErrors`] so that every problem in a file is
//! reported in a single run.

use std::fmt;

use super::value_error::ValueError;

/// What kind of problem a [`ConfigError`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The file could not be read (line and column are then 1:1).
    Io,
    /// The text is not valid TOML.
    Syntax,
    /// A key or section that the schema does not know.
    UnknownKey,
    /// A value of the wrong TOML type (for example a string where an integer is expected).
    WrongType,
    /// A value of the right type that is not acceptable (bad URL, zero, min > max, ...); the
    /// error's [`ConfigError::reason`] tells why when the value alone is at fault.
    InvalidValue,
}

/// One problem in a configuration file, located at `origin:line:column` (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}:{column}: {message}")]
pub struct ConfigError {
    /// Where the text came from (the file path for [`super::Config::from_file`]).
    pub origin: String,
    /// 1-based line of the offending key (or syntax error).
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// Single-line human-readable description.
    pub message: String,
    /// Classification of the problem.
    pub kind: ErrorKind,
    /// Why the value was rejected, when one value is at fault (its `Display` ends `message`);
    /// `None` for the other kinds and for problems between keys (such as min > max).
    pub reason: Option<ValueError>,
}

/// Every problem found while loading a configuration, sorted by position.
///
/// `Display` prints one error per line as `path:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(&self.errors))]
pub struct ConfigErrors {
    errors: Vec<ConfigError>,
}

fn render(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl ConfigErrors {
    /// Wraps a list of errors, sorting them by line and column (stable for equal positions).
    pub fn new(mut errors: Vec<ConfigError>) -> Self {
        errors.sort_by_key(|e| (e.line, e.column));
        Self { errors }
    }

    /// Number of errors.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// True when there are no errors (never the case for a value returned by the loader).
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The errors in position order.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }

    /// Consumes the collection, returning the errors in position order.
    pub fn into_vec(self) -> Vec<ConfigError> {
        self.errors
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.into_iter()
    }
}

/// A 1-based line/column position in the source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pos {
    pub(super) line: usize,
    pub(super) column: usize,
}

impl Pos {
    pub(super) const START: Pos = Pos { line: 1, column: 1 };
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Collects errors for one source text and converts byte offsets into line/column positions.
pub(super) struct Sink<'a> {
    origin: &'a str,
    text: &'a str,
    line_starts: Vec<usize>,
    errors: Vec<ConfigError>,
}

impl<'a> Sink<'a> {
    pub(super) fn new(origin: &'a str, text: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self {
            origin,
            text,
            line_starts,
            errors: Vec::new(),
        }
    }

    /// Position of a byte offset (clamped to the text; columns count characters).
    pub(super) fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line_idx).copied().unwrap_or(0);
        let column = match self.text.get(start..offset) {
            Some(s) => s.chars().count(),
            None => offset - start,
        };
        Pos {
            line: line_idx + 1,
            column: column + 1,
        }
    }

    pub(super) fn push(&mut self, pos: Pos, kind: ErrorKind, message: impl Into<String>) {
        self.errors.push(ConfigError {
            origin: self.origin.to_owned(),
            line: pos.line,
            column: pos.column,
            message: one_line(&message.into()),
            kind,
            reason: None,
        });
    }

    /// Reports the value at `pos`, shown as `` `subject`: reason ``, rejected for `reason`.
    pub(super) fn push_value(&mut self, pos: Pos, subject: &str, reason: ValueError) {
        self.errors.push(ConfigError {
            origin: self.origin.to_owned(),
            line: pos.line,
            column: pos.column,
            message: one_line(&format!("`{subject}`: {reason}")),
            kind: ErrorKind::InvalidValue,
            reason: Some(reason),
        });
    }

    pub(super) fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    pub(super) fn into_errors(self) -> ConfigErrors {
        ConfigErrors::new(self.errors)
    }
}

/// Builds the single error reported for an unreadable file.
pub(super) fn io_error(origin: &str, err: &std::io::Error) -> ConfigErrors {
    ConfigErrors::new(vec![ConfigError {
        origin: origin.to_owned(),
        line: Pos::START.line,
        column: Pos::START.column,
        message: one_line(&format!("cannot read config file: {err}")),
        kind: ErrorKind::Io,
        reason: None,
    }])
}

/// Collapses a possibly multi-line message into one line, so `Display` stays one error per line.
pub(super) fn one_line(message: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    parts.join(" ")
}
