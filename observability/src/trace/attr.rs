//! The attributes of spans: borrowed keys and values, encoded when they are given ([`super::wire`]).

/// An attribute of a span: a key and a number, a flag or a string, all borrowed. A span's attributes are encoded
/// into OTLP protobuf when they are given (a child span's when it ends, a root's as they are set), so nothing of
/// them is kept, allocated or dropped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attr<'a> {
    pub key: &'a str,
    pub value: AttrValue<'a>,
}

/// The value of an [`Attr`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AttrValue<'a> {
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(&'a str),
}

impl<'a> Attr<'a> {
    pub fn new(key: &'a str, value: impl Into<AttrValue<'a>>) -> Attr<'a> {
        Attr {
            key,
            value: value.into(),
        }
    }
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
