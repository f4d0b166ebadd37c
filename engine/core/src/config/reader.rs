//! Walks the spanned TOML tree (`toml::de::DeTable`) section by section, converting values to
//! typed settings and recording every problem with its key's position. The keys a section asks
//! for form the [`Schema`], which then reports those nobody asked for.

use std::collections::BTreeMap;
use std::time::Duration;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::errors::{ErrorKind, Pos, Sink};
use super::schema::{Schema, report_unknown_nested};
use super::value_error::ValueError;

/// Longest duration accepted anywhere (ten years), so that `Instant + d` can never overflow.
const MAX_DURATION_SECS: u64 = 10 * 365 * 24 * 3600;

/// State shared by all sections of one document.
pub(super) struct Walker<'a, 't, 'i> {
    sink: Sink<'a>,
    root: &'t DeTable<'i>,
    schema: Schema,
}

impl<'a, 't, 'i> Walker<'a, 't, 'i> {
    pub(super) fn new(sink: Sink<'a>, root: &'t DeTable<'i>) -> Self {
        Self {
            sink,
            root,
            schema: Schema::default(),
        }
    }

    /// Opens a section; a present but non-table value is reported and the section's defaults apply.
    pub(super) fn section<'w>(&'w mut self, name: &'static str) -> Section<'w, 'a, 't, 'i> {
        self.schema.open(name);
        let mut table = None;
        let mut start = Pos::START;
        if let Some((k, v)) = self.root.get_key_value(name) {
            start = self.sink.pos(k.span().start);
            match v.get_ref() {
                DeValue::Table(t) => table = Some(t),
                other => {
                    let pos = self.sink.pos(k.span().start);
                    let found = other.type_str();
                    self.sink.push(
                        pos,
                        ErrorKind::WrongType,
                        format!("`{name}`: expected a table, found {found}"),
                    );
                }
            }
        }
        Section {
            walker: self,
            name: name.to_owned(),
            table,
            failed: Vec::new(),
            asked: Vec::new(),
            nested: false,
            start,
        }
    }

    /// A top-level array of tables (`[[name]]`): each table is read by `read` as a section named `name[i]`.
    pub(super) fn tables<T>(
        &mut self,
        name: &'static str,
        read: impl FnMut(&mut Section<'_, 'a, 't, 'i>) -> Option<T>,
    ) -> Vec<T> {
        self.schema.open(name);
        let root = self.root;
        let mut top = Section {
            walker: self,
            name: String::new(),
            table: Some(root),
            failed: Vec::new(),
            asked: Vec::new(),
            nested: true,
            start: Pos::START,
        };
        top.tables(name, read)
    }

    /// The dotted names of every key asked for so far.
    pub(super) fn dotted_keys(&self) -> Vec<String> {
        self.schema.dotted_keys()
    }

    /// Reports every section and key present in the document that the schema does not know.
    pub(super) fn check_unknown(&mut self) {
        self.schema.report_unknown(self.root, &mut self.sink);
    }

    pub(super) fn into_sink(self) -> Sink<'a> {
        self.sink
    }
}

/// One section of the document (or one table of an array of tables, see [`Section::tables`]);
/// every getter returns the default when the key is absent or bad.
pub(super) struct Section<'w, 'a, 't, 'i> {
    walker: &'w mut Walker<'a, 't, 'i>,
    /// Dotted name used in messages: `fetch`, or `resolver.doh[0]` for a nested table.
    name: String,
    table: Option<&'t DeTable<'i>>,
    /// Keys whose value was rejected (cross-key checks skip them).
    failed: Vec<&'static str>,
    /// Keys asked for in this section.
    asked: Vec<&'static str>,
    /// A table inside an array: its keys are not part of `Config::keys()` and its unknown keys
    /// are checked by [`Section::tables`].
    nested: bool,
    /// Where the section starts (errors about a missing key point here).
    start: Pos,
}

impl<'a, 't, 'i> Section<'_, 'a, 't, 'i> {
    fn entry(&mut self, key: &'static str) -> Option<(Pos, &'t Spanned<DeValue<'i>>)> {
        self.asked.push(key);
        if !self.nested {
            self.walker.schema.ask(key);
        }
        let (k, v) = self.table?.get_key_value(key)?;
        Some((self.walker.sink.pos(k.span().start), v))
    }

    /// Position of a key if it is present in the document.
    fn key_pos(&self, key: &str) -> Option<Pos> {
        let (k, _) = self.table?.get_key_value(key)?;
        Some(self.walker.sink.pos(k.span().start))
    }

    fn fail(&mut self, key: &'static str, pos: Pos, kind: ErrorKind, msg: &str) {
        let text = if self.name.is_empty() {
            format!("`{key}`: {msg}")
        } else {
            format!("`{}.{key}`: {msg}", self.name)
        };
        self.fail_with(key, pos, kind, text);
    }

    /// Records `key` as rejected and reports `text` as written.
    fn fail_with(&mut self, key: &'static str, pos: Pos, kind: ErrorKind, text: String) {
        self.failed.push(key);
        self.walker.sink.push(pos, kind, text);
    }

    /// Records `key` as rejected for the value `subject` (`section.key`, an element or an entry
    /// of it) at `pos`, rejected for `reason`.
    fn fail_value(&mut self, key: &'static str, pos: Pos, subject: &str, reason: ValueError) {
        self.failed.push(key);
        self.walker.sink.push_value(pos, subject, reason);
    }

    /// [`Section::fail_value`] for the value of `key` itself.
    fn reject(&mut self, key: &'static str, pos: Pos, reason: ValueError) {
        let subject = format!("{}.{key}", self.name);
        self.fail_value(key, pos, &subject, reason);
    }

    /// True when `key` is present in this section.
    pub(super) fn has(&self, key: &str) -> bool {
        self.key_pos(key).is_some()
    }

    /// The names inside the table at `key`, in file order, without asking for the key (empty
    /// when it is absent or not a table).
    pub(super) fn sub_keys(&self, key: &str) -> Vec<String> {
        let Some(DeValue::Table(t)) = self.table.and_then(|t| t.get(key)).map(Spanned::get_ref)
        else {
            return Vec::new();
        };
        let mut keys: Vec<_> = t.iter().map(|(k, _)| k).collect();
        keys.sort_by_key(|k| k.span().start);
        keys.into_iter().map(|k| k.get_ref().to_string()).collect()
    }

    /// True when a value of `key` was rejected.
    pub(super) fn rejected(&self, key: &str) -> bool {
        self.failed.contains(&key)
    }

    /// Reports a cross-key problem at `key` (or at the section start when it is absent).
    pub(super) fn invalid(&mut self, key: &'static str, msg: &str) {
        let pos = self.key_pos(key).unwrap_or(self.start);
        self.fail(key, pos, ErrorKind::InvalidValue, msg);
    }

    /// Reports that the required `key` is absent, at the start of the section.
    pub(super) fn missing(&mut self, key: &'static str) {
        let text = format!("`{}`: missing required key `{key}`", self.name);
        let start = self.start;
        self.fail_with(key, start, ErrorKind::InvalidValue, text);
    }

    fn wrong_type(&mut self, key: &'static str, pos: Pos, expected: &str, found: &DeValue<'_>) {
        let msg = format!("expected {expected}, found {}", found.type_str());
        self.fail(key, pos, ErrorKind::WrongType, &msg);
    }

    pub(super) fn bool(&mut self, key: &'static str, default: bool) -> bool {
        let Some((pos, v)) = self.entry(key) else {
            return default;
        };
        match v.get_ref() {
            DeValue::Boolean(b) => *b,
            other => {
                self.wrong_type(key, pos, "a boolean", other);
                default
            }
        }
    }

    /// An integer in `min..=max`.
    pub(super) fn int(&mut self, key: &'static str, default: u64, min: u64, max: u64) -> u64 {
        let Some((pos, v)) = self.entry(key) else {
            return default;
        };
        let int = match v.get_ref() {
            DeValue::Integer(int) => int,
            other => {
                self.wrong_type(key, pos, "an integer", other);
                return default;
            }
        };
        let Ok(n) = i128::from_str_radix(int.as_str(), int.radix()) else {
            self.reject(key, pos, ValueError::IntegerOverflow);
            return default;
        };
        let reason = if n < i128::from(min) {
            ValueError::BelowMinimum { min, found: n }
        } else if n > i128::from(max) {
            ValueError::AboveMaximum { max, found: n }
        } else {
            return u64::try_from(n).unwrap_or(default);
        };
        self.reject(key, pos, reason);
        default
    }

    pub(super) fn u64(&mut self, key: &'static str, default: u64, min: u64) -> u64 {
        self.int(key, default, min, u64::MAX)
    }

    pub(super) fn u32(&mut self, key: &'static str, default: u32, min: u32) -> u32 {
        let n = self.int(key, default.into(), min.into(), u32::MAX.into());
        u32::try_from(n).unwrap_or(default)
    }

    pub(super) fn usize(&mut self, key: &'static str, default: usize, min: usize) -> usize {
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let max = as_u64(usize::MAX);
        let n = self.int(key, as_u64(default), as_u64(min), max);
        usize::try_from(n).unwrap_or(default)
    }

    /// A duration given in milliseconds, at least `min_ms`.
    pub(super) fn millis(&mut self, key: &'static str, default: Duration, min_ms: u64) -> Duration {
        let d = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(self.int(key, d, min_ms, MAX_DURATION_SECS * 1000))
    }

    /// A duration given in whole seconds, at least `min_s`.
    pub(super) fn secs(&mut self, key: &'static str, default: Duration, min_s: u64) -> Duration {
        Duration::from_secs(self.int(key, default.as_secs(), min_s, MAX_DURATION_SECS))
    }

    /// A number in `min..=max`, written as a float or as an integer (e.g. `0`, `1`); NaN is
    /// rejected.
    pub(super) fn float(&mut self, key: &'static str, default: f64, min: f64, max: f64) -> f64 {
        let Some((pos, v)) = self.entry(key) else {
            return default;
        };
        let (value, shown) = match v.get_ref() {
            DeValue::Float(f) => (f.as_str().parse::<f64>().ok(), f.as_str().to_owned()),
            // Exact up to 2^53, far beyond any bound a setting has.
            DeValue::Integer(int) => match i128::from_str_radix(int.as_str(), int.radix()) {
                Ok(n) => (Some(n as f64), n.to_string()),
                Err(_) => (None, int.to_string()),
            },
            other => {
                self.wrong_type(key, pos, "a number", other);
                return default;
            }
        };
        match value {
            // `+ 0.0` turns -0.0 into 0.0.
            Some(x) if (min..=max).contains(&x) => x + 0.0,
            _ => {
                let msg = format!("must be from {min:?} to {max:?}, found {shown}");
                self.fail(key, pos, ErrorKind::InvalidValue, &msg);
                default
            }
        }
    }

    /// A string converted by `parse`; its error is reported at the key.
    pub(super) fn string<T>(
        &mut self,
        key: &'static str,
        default: T,
        parse: impl FnOnce(&str) -> Result<T, ValueError>,
    ) -> T {
        let Some((pos, v)) = self.entry(key) else {
            return default;
        };
        let DeValue::String(s) = v.get_ref() else {
            self.wrong_type(key, pos, "a string", v.get_ref());
            return default;
        };
        match parse(s) {
            Ok(t) => t,
            Err(reason) => {
                self.reject(key, pos, reason);
                default
            }
        }
    }

    /// An array of strings, each converted by `parse`; element problems are reported at the
    /// element. Only the accepted elements are returned.
    pub(super) fn list<T>(
        &mut self,
        key: &'static str,
        parse: impl Fn(&str) -> Result<T, ValueError>,
    ) -> Vec<T> {
        let Some((pos, v)) = self.entry(key) else {
            return Vec::new();
        };
        let DeValue::Array(items) = v.get_ref() else {
            self.wrong_type(key, pos, "an array of strings", v.get_ref());
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_pos = self.walker.sink.pos(item.span().start);
            let shown = format!("{}.{key}[{i}]", self.name);
            match item.get_ref() {
                DeValue::String(s) => match parse(s) {
                    Ok(t) => out.push(t),
                    Err(reason) => self.fail_value(key, item_pos, &shown, reason),
                },
                other => {
                    let text = format!("`{shown}`: expected a string, found {}", other.type_str());
                    self.fail_with(key, item_pos, ErrorKind::WrongType, text);
                }
            }
        }
        out
    }

    /// A table whose values are each a string or an array of strings (like `resolver.hosts`),
    /// its names converted by `name_of` and its strings by `parse`. A problem is reported at
    /// the entry (string value) or the element (array) and drops that entry; names that convert
    /// to the same key are duplicates.
    pub(super) fn string_map<T>(
        &mut self,
        key: &'static str,
        name_of: impl Fn(&str) -> Result<String, ValueError>,
        parse: impl Fn(&str) -> Result<T, ValueError>,
    ) -> BTreeMap<String, Vec<T>> {
        let mut out = BTreeMap::new();
        let Some((pos, v)) = self.entry(key) else {
            return out;
        };
        let DeValue::Table(table) = v.get_ref() else {
            self.wrong_type(key, pos, "a table", v.get_ref());
            return out;
        };
        // In file order, so that the later of two duplicates is the one reported.
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (k, v) in entries {
            let raw: &str = k.get_ref();
            let entry_pos = self.walker.sink.pos(k.span().start);
            let shown = format!("{}.{key}.{}", self.name, toml_key(raw));
            let name = match name_of(raw) {
                Ok(name) if out.contains_key(&name) => {
                    let text = format!("`{shown}`: duplicate entry for `{name}`");
                    self.fail_with(key, entry_pos, ErrorKind::InvalidValue, text);
                    continue;
                }
                Ok(name) => name,
                Err(reason) => {
                    self.fail_value(key, entry_pos, &shown, reason);
                    continue;
                }
            };
            let quote = " (quote names that contain dots)";
            if let Some(values) = self.strings(key, &shown, entry_pos, v, quote, &parse) {
                out.insert(name, values);
            }
        }
        out
    }

    /// The entries of the table at `key` (`what` says what it must be when it is not a table), in file order,
    /// each with its name as `name_of` converts it, its position and how messages show it
    /// (`section.key.name`); an entry whose name is refused is reported and left out.
    fn named_entries(
        &mut self,
        key: &'static str,
        what: &str,
        name_of: impl Fn(&str) -> Result<String, ValueError>,
    ) -> Vec<(String, Pos, String, &'t Spanned<DeValue<'i>>)> {
        let mut out = Vec::new();
        let Some((pos, v)) = self.entry(key) else {
            return out;
        };
        let DeValue::Table(table) = v.get_ref() else {
            self.wrong_type(key, pos, what, v.get_ref());
            return out;
        };
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (k, v) in entries {
            let raw: &str = k.get_ref();
            let entry_pos = self.walker.sink.pos(k.span().start);
            let shown = format!("{}.{key}.{}", self.name, toml_key(raw));
            let name = match name_of(raw) {
                Ok(name) => name,
                Err(reason) => {
                    self.fail_value(key, entry_pos, &shown, reason);
                    continue;
                }
            };
            out.push((name, entry_pos, shown, v));
        }
        out
    }

    /// A table of strings (like `labels = { severity = "critical" }`), its names checked by `name_of`. A
    /// problem is reported at the entry and drops that entry.
    pub(super) fn string_table(
        &mut self,
        key: &'static str,
        name_of: impl Fn(&str) -> Result<String, ValueError>,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, entry_pos, shown, v) in self.named_entries(key, "a table of strings", name_of) {
            match v.get_ref() {
                DeValue::String(s) => {
                    out.insert(name, s.to_string());
                }
                other => {
                    let text = format!("`{shown}`: expected a string, found {}", other.type_str());
                    self.fail_with(key, entry_pos, ErrorKind::WrongType, text);
                }
            }
        }
        out
    }

    /// A string or a non-empty array of strings at `v` (shown as `shown`), each converted by
    /// `parse`; problems are reported at the value or the element. `Some` only when every
    /// element was accepted. `table_hint` is appended to the wrong-type message of a table.
    fn strings<T>(
        &mut self,
        key: &'static str,
        shown: &str,
        pos: Pos,
        v: &'t Spanned<DeValue<'i>>,
        table_hint: &str,
        parse: &impl Fn(&str) -> Result<T, ValueError>,
    ) -> Option<Vec<T>> {
        let items: Vec<(String, Pos, &Spanned<DeValue<'i>>)> = match v.get_ref() {
            DeValue::String(_) => vec![(shown.to_owned(), pos, v)],
            DeValue::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let item_pos = self.walker.sink.pos(item.span().start);
                    (format!("{shown}[{i}]"), item_pos, item)
                })
                .collect(),
            other => {
                let hint = if other.is_table() { table_hint } else { "" };
                let text = format!(
                    "`{shown}`: expected a string or an array of strings, found {}{hint}",
                    other.type_str()
                );
                self.fail_with(key, pos, ErrorKind::WrongType, text);
                return None;
            }
        };
        if items.is_empty() {
            let text = format!("`{shown}`: must not be empty");
            self.fail_with(key, pos, ErrorKind::InvalidValue, text);
            return None;
        }
        let wanted = items.len();
        let mut values = Vec::with_capacity(wanted);
        for (shown, item_pos, item) in items {
            match item.get_ref() {
                DeValue::String(s) => match parse(s) {
                    Ok(t) => values.push(t),
                    Err(reason) => self.fail_value(key, item_pos, &shown, reason),
                },
                other => {
                    let text = format!("`{shown}`: expected a string, found {}", other.type_str());
                    self.fail_with(key, item_pos, ErrorKind::WrongType, text);
                }
            }
        }
        (values.len() == wanted).then_some(values)
    }

    /// A string or a non-empty array of strings (like `proxy.default`), each converted by
    /// `parse`. Empty when the key is absent or any problem was reported.
    pub(super) fn string_or_list<T>(
        &mut self,
        key: &'static str,
        parse: impl Fn(&str) -> Result<T, ValueError>,
    ) -> Vec<T> {
        let Some((pos, v)) = self.entry(key) else {
            return Vec::new();
        };
        let shown = format!("{}.{key}", self.name);
        self.strings(key, &shown, pos, v, "", &parse)
            .unwrap_or_default()
    }

    /// A table of tables (`[section.key.<name>]`, like `proxy.chains`): each entry's name is
    /// converted by `name_of` and its table read by `read` as a nested section named
    /// `section.key.<name>`. Returns, in file order, every entry with a valid name and a table
    /// value, with what `read` produced for it.
    pub(super) fn named_tables<T>(
        &mut self,
        key: &'static str,
        name_of: impl Fn(&str) -> Result<String, ValueError>,
        mut read: impl FnMut(&mut Section<'_, 'a, 't, 'i>) -> Option<T>,
    ) -> Vec<(String, Option<T>)> {
        let mut out = Vec::new();
        for (name, entry_pos, shown, v) in self.named_entries(key, "a table", &name_of) {
            let DeValue::Table(sub) = v.get_ref() else {
                let found = v.get_ref().type_str();
                let text = format!("`{shown}`: expected a table, found {found}");
                self.fail_with(key, entry_pos, ErrorKind::WrongType, text);
                continue;
            };
            let value = self.nested(key, shown, sub, entry_pos, &mut read);
            out.push((name, value));
        }
        out
    }

    /// One nested table (`[section.key]`), read by `read` as a section named `section.key`. None when the key is
    /// absent or not a table (reported).
    pub(super) fn table<T>(
        &mut self,
        key: &'static str,
        mut read: impl FnMut(&mut Section<'_, 'a, 't, 'i>) -> Option<T>,
    ) -> Option<T> {
        let (pos, v) = self.entry(key)?;
        let DeValue::Table(table) = v.get_ref() else {
            self.wrong_type(key, pos, "a table", v.get_ref());
            return None;
        };
        let name = format!("{}.{key}", self.name);
        self.nested(key, name, table, pos, &mut read)
    }

    /// Reads `table` as a nested section named `name` with `read`, then reports its unknown
    /// keys; a problem inside marks `key` as rejected.
    fn nested<T>(
        &mut self,
        key: &'static str,
        name: String,
        table: &'t DeTable<'i>,
        start: Pos,
        read: &mut impl FnMut(&mut Section<'_, 'a, 't, 'i>) -> Option<T>,
    ) -> Option<T> {
        let mut sub = Section {
            walker: &mut *self.walker,
            name,
            table: Some(table),
            failed: Vec::new(),
            asked: Vec::new(),
            nested: true,
            start,
        };
        let value = read(&mut sub);
        sub.check_unknown_nested();
        if !sub.failed.is_empty() {
            self.failed.push(key);
        }
        value
    }

    /// An array of tables (`[[section.key]]`, or an inline array of inline tables). Each table
    /// is read by `read` as a nested section named `section.key[i]`; its unknown keys are
    /// reported after `read` returns. Returns what `read` produced for each table.
    pub(super) fn tables<T>(
        &mut self,
        key: &'static str,
        mut read: impl FnMut(&mut Section<'_, 'a, 't, 'i>) -> Option<T>,
    ) -> Vec<T> {
        let Some((pos, v)) = self.entry(key) else {
            return Vec::new();
        };
        let DeValue::Array(items) = v.get_ref() else {
            self.wrong_type(key, pos, "an array of tables", v.get_ref());
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let item_pos = self.walker.sink.pos(item.span().start);
            let name = if self.name.is_empty() {
                format!("{key}[{i}]")
            } else {
                format!("{}.{key}[{i}]", self.name)
            };
            let DeValue::Table(table) = item.get_ref() else {
                let found = item.get_ref().type_str();
                let text = format!("`{name}`: expected a table, found {found}");
                self.fail_with(key, item_pos, ErrorKind::WrongType, text);
                continue;
            };
            let value = self.nested(key, name, table, item_pos, &mut read);
            out.extend(value);
        }
        out
    }

    /// Reports the keys of a nested table that `read` did not ask for.
    fn check_unknown_nested(&mut self) {
        if let Some(table) = self.table {
            report_unknown_nested(&self.name, table, &self.asked, &mut self.walker.sink);
        }
    }

    /// Reports `low_key > high_key` at `low_key` (or at `high_key` when only that one is
    /// written), unless either value was already rejected.
    pub(super) fn check_not_above(
        &mut self,
        low_key: &'static str,
        low: u128,
        high_key: &'static str,
        high: u128,
    ) {
        if low <= high || self.failed.contains(&low_key) || self.failed.contains(&high_key) {
            return;
        }
        let pos = self
            .key_pos(low_key)
            .or_else(|| self.key_pos(high_key))
            .unwrap_or(Pos::START);
        let name = &self.name;
        let text =
            format!("`{name}.{low_key}` ({low}) must not exceed `{name}.{high_key}` ({high})");
        self.walker.sink.push(pos, ErrorKind::InvalidValue, text);
    }
}

/// A key as TOML would need it written: bare when possible, else quoted.
fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}
