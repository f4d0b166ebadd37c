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
    /// The whole `KeyValue` message (key and value) of an attribute known when compiling, encoded then: see
    /// [`preset_str!`](crate::preset_str) and [`preset_bool!`](crate::preset_bool). Its `key` is the same key.
    Preset(&'static [u8]),
    /// A number under a key known when compiling, whose bytes up to the number were encoded then: see
    /// [`keyed_i64!`](crate::keyed_i64). Its `key` is the same key.
    KeyedI64(&'static KeyHead, i64),
    /// A string under a key known when compiling (see [`keyed_str!`](crate::keyed_str)).
    KeyedStr(&'static KeyHead, &'a str),
}

/// Bytes a [`KeyHead`] holds at most: a key of up to 58 bytes.
pub const KEY_HEAD_MAX: usize = 64;

/// The bytes of an attribute's `KeyValue` from its key to its value's own tag, for a key known when compiling,
/// encoded then: the key field (tag, length, key), the `AnyValue` field's tag and a byte for its length (put in
/// when the value is known), and the tag of the number or the string in it. Kept in an array of a fixed size, so
/// that a span copies it as a run of a length known when compiling (a few moves, not a call of `memcpy`) and
/// takes the unused end off.
#[derive(Debug, PartialEq)]
pub struct KeyHead {
    bytes: [u8; KEY_HEAD_MAX],
    len: u8,
}

impl KeyHead {
    /// The tag of a string in `AnyValue` (field 1, bytes).
    pub const STRING: u8 = 0x0a;
    /// The tag of a number in `AnyValue` (field 3, varint).
    pub const NUMBER: u8 = 0x18;

    /// The head of `key` for a value whose tag in `AnyValue` is `value_tag` ([`STRING`](Self::STRING) or
    /// [`NUMBER`](Self::NUMBER)).
    pub const fn new(key: &str, value_tag: u8) -> KeyHead {
        let len = 2 + key.len() + 3;
        assert!(
            len <= KEY_HEAD_MAX,
            "a keyed attribute's key is at most 58 bytes"
        );
        let mut bytes = [0u8; KEY_HEAD_MAX];
        bytes[0] = 0x0a;
        bytes[1] = key.len() as u8;
        copy_into(&mut bytes, 2, key.as_bytes());
        bytes[len - 3] = 0x12;
        bytes[len - 1] = value_tag;
        KeyHead {
            bytes,
            len: len as u8,
        }
    }

    /// The whole array (its first [`len`](Self::len) bytes are the head).
    pub(crate) fn padded(&self) -> &[u8; KEY_HEAD_MAX] {
        &self.bytes
    }

    /// Bytes of the head.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.len)
    }
}

/// A value known when compiling, for [`preset_len`] and [`preset`].
#[derive(Clone, Copy, Debug)]
pub enum Const<'a> {
    Str(&'a str),
    Bool(bool),
}

/// Bytes of the `KeyValue` message of `key` and `value` (at most 127: a preset's lengths take a byte each).
pub const fn preset_len(key: &str, value: Const<'_>) -> usize {
    let value_len = match value {
        Const::Str(v) => 2 + v.len(),
        Const::Bool(_) => 2,
    };
    let len = 2 + key.len() + 2 + value_len;
    assert!(len < 0x80, "a preset attribute is under 128 bytes");
    len
}

/// The `KeyValue` message of `key` and `value`, `N` ([`preset_len`]) bytes: `key` (field 1) and the `AnyValue`
/// (field 2) with its string (field 1) or bool (field 2). Evaluated when compiling.
pub const fn preset<const N: usize>(key: &str, value: Const<'_>) -> [u8; N] {
    assert!(N == preset_len(key, value), "N is the preset's length");
    let mut out = [0u8; N];
    out[0] = 0x0a;
    out[1] = key.len() as u8;
    let mut at = 2 + copy_into(&mut out, 2, key.as_bytes());
    match value {
        Const::Str(v) => {
            out[at] = 0x12;
            out[at + 1] = (2 + v.len()) as u8;
            out[at + 2] = 0x0a;
            out[at + 3] = v.len() as u8;
            at += 4;
            copy_into(&mut out, at, v.as_bytes());
        }
        Const::Bool(b) => {
            out[at] = 0x12;
            out[at + 1] = 2;
            out[at + 2] = 0x10;
            out[at + 3] = b as u8;
        }
    }
    out
}

/// Copies `from` into `out` at `at` (when compiling); returns its length.
const fn copy_into(out: &mut [u8], at: usize, from: &[u8]) -> usize {
    let mut i = 0;
    while i < from.len() {
        out[at + i] = from[i];
        i += 1;
    }
    from.len()
}

/// A string attribute whose key and value are known when compiling, its `KeyValue` encoded then: a span takes it
/// as one run of bytes instead of encoding its fields.
#[macro_export]
macro_rules! preset_str {
    ($key:expr, $value:expr) => {
        $crate::preset_attr!($key, $crate::trace::Const::Str($value))
    };
}

/// A bool attribute whose key and value are known when compiling (see [`preset_str!`]).
#[macro_export]
macro_rules! preset_bool {
    ($key:expr, $value:expr) => {
        $crate::preset_attr!($key, $crate::trace::Const::Bool($value))
    };
}

/// A number attribute whose key is known when compiling (its bytes up to the number encoded then, see
/// [`KeyHead`]): `keyed_i64!("crawl.depth", depth)`.
#[macro_export]
macro_rules! keyed_i64 {
    ($key:expr, $value:expr) => {
        $crate::keyed_attr!($key, $crate::trace::KeyHead::NUMBER, KeyedI64, $value)
    };
}

/// A string attribute whose key is known when compiling (see [`keyed_i64!`]): `keyed_str!("url.full", &url)`.
#[macro_export]
macro_rules! keyed_str {
    ($key:expr, $value:expr) => {
        $crate::keyed_attr!($key, $crate::trace::KeyHead::STRING, KeyedStr, $value)
    };
}

/// The attribute of [`keyed_i64!`] and [`keyed_str!`]: the head of `$key` for the value's tag `$tag`, encoded
/// when compiling, and `$value` in the `AttrValue` variant `$variant`.
#[doc(hidden)]
#[macro_export]
macro_rules! keyed_attr {
    ($key:expr, $tag:expr, $variant:ident, $value:expr) => {{
        const KEY: &str = $key;
        const HEAD: $crate::trace::KeyHead = $crate::trace::KeyHead::new(KEY, $tag);
        $crate::trace::Attr {
            key: KEY,
            value: $crate::trace::AttrValue::$variant(&HEAD, $value),
        }
    }};
}

/// The attribute of [`preset_str!`] and [`preset_bool!`]: `$value` a [`Const`](crate::trace::Const).
#[doc(hidden)]
#[macro_export]
macro_rules! preset_attr {
    ($key:expr, $value:expr) => {{
        const KEY: &str = $key;
        const VALUE: $crate::trace::Const<'static> = $value;
        const BYTES: [u8; $crate::trace::preset_len(KEY, VALUE)] =
            $crate::trace::preset(KEY, VALUE);
        $crate::trace::Attr {
            key: KEY,
            value: $crate::trace::AttrValue::Preset(&BYTES),
        }
    }};
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
