//! The attributes of spans: a key known when compiling and a borrowed value, made into the SDK's `KeyValue` only
//! for spans that are recorded.

use opentelemetry::{Key, KeyValue, StringValue, Value};

/// An attribute of a span: a key and a number, a flag or a string. Plain data (`Copy`, made in `const`s): the
/// SDK's `KeyValue` is made from it only when a recorded span takes it, so a span that is not sampled costs its
/// attributes nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attr<'a> {
    pub key: &'static str,
    pub value: AttrValue<'a>,
}

/// The value of an [`Attr`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AttrValue<'a> {
    I64(i64),
    F64(f64),
    Bool(bool),
    /// A string, copied when a recorded span takes it.
    Str(&'a str),
    /// A string known when compiling (see [`preset_str!`](crate::preset_str)): a recorded span takes it without
    /// a copy.
    Preset(&'static str),
}

impl<'a> Attr<'a> {
    pub fn new(key: &'static str, value: impl Into<AttrValue<'a>>) -> Attr<'a> {
        Attr {
            key,
            value: value.into(),
        }
    }

    /// The SDK's attribute.
    pub fn key_value(&self) -> KeyValue {
        let key = Key::from_static_str(self.key);
        let value = match self.value {
            AttrValue::I64(i) => Value::I64(i),
            AttrValue::F64(f) => Value::F64(f),
            AttrValue::Bool(b) => Value::Bool(b),
            AttrValue::Str(s) => Value::String(StringValue::from(s.to_owned())),
            AttrValue::Preset(s) => Value::String(StringValue::from(s)),
        };
        KeyValue::new(key, value)
    }
}

/// A string attribute whose key and value are known when compiling: `preset_str!("crawl.kind", "page")`. A
/// recorded span takes the value without copying it.
#[macro_export]
macro_rules! preset_str {
    ($key:expr, $value:expr) => {{
        const KEY: &str = $key;
        const VALUE: &str = $value;
        $crate::trace::Attr {
            key: KEY,
            value: $crate::trace::AttrValue::Preset(VALUE),
        }
    }};
}

/// A bool attribute whose key and value are known when compiling: `preset_bool!("net.connection.reused", true)`.
#[macro_export]
macro_rules! preset_bool {
    ($key:expr, $value:expr) => {{
        const KEY: &str = $key;
        const VALUE: bool = $value;
        $crate::trace::Attr {
            key: KEY,
            value: $crate::trace::AttrValue::Bool(VALUE),
        }
    }};
}

/// A number attribute whose key is known when compiling: `keyed_i64!("crawl.depth", depth)`.
#[macro_export]
macro_rules! keyed_i64 {
    ($key:expr, $value:expr) => {{
        const KEY: &str = $key;
        $crate::trace::Attr {
            key: KEY,
            value: $crate::trace::AttrValue::I64($value),
        }
    }};
}

/// A string attribute whose key is known when compiling: `keyed_str!("url.full", &url)`.
#[macro_export]
macro_rules! keyed_str {
    ($key:expr, $value:expr) => {{
        const KEY: &str = $key;
        $crate::trace::Attr {
            key: KEY,
            value: $crate::trace::AttrValue::Str($value),
        }
    }};
}

impl From<i64> for AttrValue<'_> {
    fn from(v: i64) -> Self {
        AttrValue::I64(v)
    }
}

impl From<f64> for AttrValue<'_> {
    fn from(v: f64) -> Self {
        AttrValue::F64(v)
    }
}

impl From<bool> for AttrValue<'_> {
    fn from(v: bool) -> Self {
        AttrValue::Bool(v)
    }
}

impl<'a> From<&'a str> for AttrValue<'a> {
    fn from(v: &'a str) -> Self {
        AttrValue::Str(v)
    }
}

impl<'a> From<&'a String> for AttrValue<'a> {
    fn from(v: &'a String) -> Self {
        AttrValue::Str(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_attribute_becomes_the_sdk_value_of_its_kind() {
        let url = String::from("http://a.test/");
        let cases = [
            (crate::keyed_i64!("crawl.depth", 3), Value::I64(3)),
            (
                crate::keyed_str!("url.full", &url),
                Value::from(url.clone()),
            ),
            (
                crate::preset_str!("crawl.kind", "page"),
                Value::from("page"),
            ),
            (
                crate::preset_bool!("net.connection.reused", true),
                Value::Bool(true),
            ),
            (Attr::new("x.ratio", 0.5), Value::F64(0.5)),
        ];
        for (attr, want) in cases {
            let kv = attr.key_value();
            assert_eq!(kv.key.as_str(), attr.key);
            assert_eq!(kv.value, want, "{}", attr.key);
        }
    }

    #[test]
    fn attributes_are_made_when_compiling() {
        const KIND: Attr<'static> = crate::preset_str!("crawl.kind", "robots");
        const DEPTH: Attr<'static> = crate::keyed_i64!("crawl.depth", 7);
        assert_eq!(KIND.value, AttrValue::Preset("robots"));
        assert_eq!(DEPTH.value, AttrValue::I64(7));
    }
}
