//! The schema of the configuration: the sections and keys the reader asks for, in the order asked,
//! so that the keys of a document nobody asked for are its unknown keys. They are reported at
//! their position, with a "did you mean" hint: a close name at the same level, else the same key
//! in other sections.

use toml::de::{DeTable, DeValue};

use super::errors::{ErrorKind, Sink};
use super::validate::closest;

/// The sections asked for, each with the keys asked for in it.
#[derive(Debug, Default)]
pub(super) struct Schema {
    /// In the order they were asked for.
    sections: Vec<(&'static str, Vec<&'static str>)>,
}

impl Schema {
    /// Starts the section `name`: the keys asked for next are its.
    pub(super) fn open(&mut self, name: &'static str) {
        self.sections.push((name, Vec::new()));
    }

    /// Records `key` as a key of the section opened last (nothing before a section is opened).
    pub(super) fn ask(&mut self, key: &'static str) {
        if let Some((_, keys)) = self.sections.last_mut() {
            keys.push(key);
        }
    }

    /// The dotted names of every key asked for so far.
    pub(super) fn dotted_keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (section, keys) in &self.sections {
            for key in keys {
                out.push(format!("{section}.{key}"));
            }
        }
        out
    }

    /// Reports to `sink` every section and key present in `root` that the schema does not know.
    /// A section that is not a table is left alone (reading it reported its type).
    pub(super) fn report_unknown(&self, root: &DeTable<'_>, sink: &mut Sink<'_>) {
        for (k, v) in root.iter() {
            let name: &str = k.get_ref();
            let Some((_, keys)) = self.sections.iter().find(|(s, _)| *s == name) else {
                let pos = sink.pos(k.span().start);
                let hint = self.hint(name, self.sections.iter().map(|(s, _)| *s));
                let what = if v.get_ref().is_table() {
                    "section"
                } else {
                    "key"
                };
                sink.push(
                    pos,
                    ErrorKind::UnknownKey,
                    format!("unknown {what} `{name}`{hint}"),
                );
                continue;
            };
            let DeValue::Table(table) = v.get_ref() else {
                continue;
            };
            for (key, _) in table.iter() {
                let key_name: &str = key.get_ref();
                if keys.contains(&key_name) {
                    continue;
                }
                let pos = sink.pos(key.span().start);
                let hint = self.hint(key_name, keys.iter().copied());
                sink.push(
                    pos,
                    ErrorKind::UnknownKey,
                    format!("unknown key `{name}.{key_name}`{hint}"),
                );
            }
        }
    }

    /// "; did you mean `x`?" from a close name at the same level, else from the same key in
    /// other sections; empty when nothing fits.
    fn hint<'s>(&self, name: &str, same_level: impl Iterator<Item = &'s str>) -> String {
        if let Some(best) = closest(name, same_level) {
            return format!("; did you mean `{best}`?");
        }
        let elsewhere: Vec<String> = self
            .sections
            .iter()
            .filter(|(_, keys)| keys.contains(&name))
            .map(|(section, _)| format!("`{section}.{name}`"))
            .collect();
        if elsewhere.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", elsewhere.join(" or "))
        }
    }
}

/// Reports to `sink` the keys of the nested table `name` (a table inside a section, such as
/// `resolver.doh[0]`) other than those `asked` for, with a close one of them as the hint. The
/// keys of nested tables are not part of the [`Schema`]: each table is checked once read.
pub(super) fn report_unknown_nested(
    name: &str,
    table: &DeTable<'_>,
    asked: &[&str],
    sink: &mut Sink<'_>,
) {
    for (k, _) in table.iter() {
        let key: &str = k.get_ref();
        if asked.contains(&key) {
            continue;
        }
        let pos = sink.pos(k.span().start);
        let hint = closest(key, asked.iter().copied())
            .map(|best| format!("; did you mean `{best}`?"))
            .unwrap_or_default();
        sink.push(
            pos,
            ErrorKind::UnknownKey,
            format!("unknown key `{name}.{key}`{hint}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        let mut s = Schema::default();
        s.open("crawl");
        s.ask("seeds");
        s.ask("max_depth");
        s.open("fetch");
        s.ask("timeout_ms");
        s.open("politeness");
        s.ask("timeout_ms");
        s
    }

    /// The unknown keys of `text` against `schema()`, as `line:col: message`.
    fn unknown(text: &str) -> Vec<String> {
        let root = DeTable::parse(text).unwrap();
        let mut sink = Sink::new("t.toml", text);
        schema().report_unknown(root.get_ref(), &mut sink);
        sink.into_errors()
            .iter()
            .map(|e| {
                assert_eq!(e.kind, ErrorKind::UnknownKey);
                format!("{}:{}: {}", e.line, e.column, e.message)
            })
            .collect()
    }

    #[test]
    fn keys_are_dotted_in_the_order_asked() {
        assert_eq!(
            schema().dotted_keys(),
            [
                "crawl.seeds",
                "crawl.max_depth",
                "fetch.timeout_ms",
                "politeness.timeout_ms"
            ]
        );
        let mut s = Schema::default();
        s.ask("orphan");
        assert!(s.dotted_keys().is_empty(), "a key before any section");
    }

    #[test]
    fn a_known_document_has_no_unknown_keys() {
        let text = "[crawl]\nseeds = []\nmax_depth = 1\n[fetch]\ntimeout_ms = 5\n";
        assert!(unknown(text).is_empty());
        // A known section of the wrong type is left to the reader.
        assert!(unknown("crawl = 1\n").is_empty());
    }

    #[test]
    fn unknown_keys_are_placed_and_hinted() {
        assert_eq!(
            unknown("[crawl]\nseeds = []\n  max_dept = 2\nflux = 1\n"),
            [
                "3:3: unknown key `crawl.max_dept`; did you mean `max_depth`?",
                "4:1: unknown key `crawl.flux`"
            ]
        );
        assert_eq!(
            unknown("[crawll]\n"),
            ["1:2: unknown section `crawll`; did you mean `crawl`?"]
        );
        assert_eq!(
            unknown("timeout_ms = 1\n"),
            [
                "1:1: unknown key `timeout_ms`; did you mean `fetch.timeout_ms` or \
                 `politeness.timeout_ms`?"
            ]
        );
    }

    #[test]
    fn nested_tables_are_checked_against_what_was_asked() {
        let text = "url = \"x\"\nbootstrapp = \"y\"\nquantum = 1\n";
        let table = DeTable::parse(text).unwrap();
        let mut sink = Sink::new("t.toml", text);
        report_unknown_nested(
            "resolver.doh[0]",
            table.get_ref(),
            &["url", "bootstrap"],
            &mut sink,
        );
        let got: Vec<String> = sink.into_errors().iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "t.toml:2:1: unknown key `resolver.doh[0].bootstrapp`; did you mean `bootstrap`?",
                "t.toml:3:1: unknown key `resolver.doh[0].quantum`"
            ]
        );
    }
}
