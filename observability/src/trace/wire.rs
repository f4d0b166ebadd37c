//! The OTLP protobuf encoding of spans, written straight from the engine's span records (no intermediate message
//! structs): `ExportTraceServiceRequest { resource_spans: [ResourceSpans { resource, scope_spans: [ScopeSpans {
//! scope, spans }] }] }` with field numbers from opentelemetry-proto's `trace.proto`, `common.proto` and
//! `resource.proto`. Each span is encoded once, when it ends, into the pending batch; an export only puts the
//! resource and scope header in front.

use super::{Attr, AttrValue, KEY_HEAD_MAX, KeyHead};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// `Span.kind` INTERNAL.
const KIND_INTERNAL: u64 = 1;
/// `Status.code` ERROR.
const STATUS_ERROR: u64 = 2;
/// `Span.flags`: the W3C sampled flag, and bit 8 (the parent's remoteness is known: it is not remote).
const FLAGS: u32 = 0x101;

#[inline]
fn key(field: u32, wire: u8) -> u64 {
    (u64::from(field) << 3) | u64::from(wire)
}

#[inline]
fn varint_len(v: u64) -> usize {
    // 7 bits a byte; 0 still takes one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Size of a length-delimited field whose content is `len` bytes (tag + length + content).
#[inline]
fn len_field(field: u32, len: usize) -> usize {
    varint_len(key(field, LEN)) + varint_len(len as u64) + len
}

#[inline]
fn put_len(buf: &mut Vec<u8>, field: u32, len: usize) {
    put_varint(buf, key(field, LEN));
    put_varint(buf, len as u64);
}

/// Writes `bytes` as field `field`: tag and length as two fixed bytes when each takes one (the usual short field),
/// else as varints. Inlined whole: it is on every span's path (its name, each preset attribute).
#[inline(always)]
fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    if field < 16 && bytes.len() < 0x80 {
        buf.extend_from_slice(&[key_byte(field, LEN), bytes.len() as u8]);
    } else {
        put_len(buf, field, bytes.len());
    }
    buf.extend_from_slice(bytes);
}

#[inline]
fn put_fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    put_varint(buf, key(field, FIXED64));
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Content size of the `AnyValue` of an attribute.
#[inline]
fn any_len(v: &AttrValue<'_>) -> usize {
    match v {
        AttrValue::Bool(_) => 2,
        AttrValue::I64(i) | AttrValue::KeyedI64(_, i) => 1 + varint_len(*i as u64),
        AttrValue::F64(_) => 9,
        AttrValue::Str(s) | AttrValue::KeyedStr(_, s) => len_field(1, s.len()),
        // Written whole by `put_attr`, never as a value.
        AttrValue::Preset(_) => 0,
    }
}

#[inline]
fn put_any(buf: &mut Vec<u8>, v: &AttrValue<'_>) {
    match v {
        AttrValue::Bool(b) => {
            put_varint(buf, key(2, VARINT));
            buf.push(u8::from(*b));
        }
        AttrValue::I64(i) | AttrValue::KeyedI64(_, i) => {
            put_varint(buf, key(3, VARINT));
            put_varint(buf, *i as u64);
        }
        AttrValue::F64(f) => put_fixed64(buf, 4, f.to_bits()),
        AttrValue::Str(s) | AttrValue::KeyedStr(_, s) => put_bytes(buf, 1, s.as_bytes()),
        AttrValue::Preset(_) => {}
    }
}

/// Writes `a` as field `field` (a repeated `KeyValue`). Inlined whole into the loops over attributes: as a call of
/// its own, saving and restoring registers took a fifth of an attribute's instructions.
#[inline(always)]
pub(crate) fn put_attr(buf: &mut Vec<u8>, field: u32, a: &Attr<'_>) {
    let done = match a.value {
        AttrValue::Preset(kv) => {
            put_bytes(buf, field, kv);
            true
        }
        AttrValue::KeyedI64(head, i) => put_keyed_i64(buf, field, head, i),
        AttrValue::KeyedStr(head, s) => put_keyed_str(buf, field, head, s),
        _ => put_attr_short(buf, field, a),
    };
    if !done {
        put_attr_fields(buf, field, a);
    }
}

/// A number under a [`KeyHead`] (see [`put_keyed`]); false (nothing written) when its tags and lengths do not
/// all take one byte.
#[inline(always)]
fn put_keyed_i64(buf: &mut Vec<u8>, field: u32, head: &KeyHead, i: i64) -> bool {
    let mut value = [0u8; 10];
    let n = varint_into(&mut value, i as u64);
    // The whole array: inlined, a copy of a length fixed when compiling.
    put_keyed(buf, field, head, (1 + n, &[]), (&value[..], n))
}

/// A string under a [`KeyHead`] (see [`put_keyed_i64`]).
#[inline(always)]
fn put_keyed_str(buf: &mut Vec<u8>, field: u32, head: &KeyHead, s: &str) -> bool {
    let s = s.as_bytes();
    put_keyed(
        buf,
        field,
        head,
        (2 + s.len(), &[s.len() as u8]),
        (s, s.len()),
    )
}

/// Writes an attribute of a [`KeyHead`] as field `field`: the `KeyValue`'s tag and length, the head (with the
/// `AnyValue`'s length, `any_len`, put in), the bytes of `after` (a string's length), then the first `len` bytes
/// of `value` (a number's whole array, a copy of a length fixed when compiling, then the unused end taken off; a
/// string's bytes). False (nothing written) when a tag or a length takes more than a byte.
#[inline(always)]
fn put_keyed(
    buf: &mut Vec<u8>,
    field: u32,
    head: &KeyHead,
    (any_len, after): (usize, &[u8]),
    (value, len): (&[u8], usize),
) -> bool {
    let head_len = head.len();
    let kv_len = head_len + after.len() + len;
    if field >= 16 || kv_len >= 0x80 {
        return false;
    }
    buf.reserve(2 + KEY_HEAD_MAX + after.len() + value.len());
    buf.extend_from_slice(&[key_byte(field, LEN), kv_len as u8]);
    let at = buf.len();
    buf.extend_from_slice(head.padded());
    buf.truncate(at + head_len);
    buf[at + head_len - 2] = any_len as u8;
    buf.extend_from_slice(after);
    let end = buf.len() + len;
    buf.extend_from_slice(value);
    buf.truncate(end);
    true
}

/// The common attribute, a number, a flag or a string whose tags and lengths all take one byte (field < 16, the
/// whole `KeyValue` under 128 bytes), written as a few runs of bytes rather than field by field (each value type
/// its own runs, so that only the key and a string's bytes are copies of a length known at run time); false
/// (nothing written) for any other.
#[inline(always)]
fn put_attr_short(buf: &mut Vec<u8>, field: u32, a: &Attr<'_>) -> bool {
    let key = a.key.as_bytes();
    if field >= 16 {
        return false;
    }
    // The `KeyValue`'s tag and length, then its key field (tag, length, bytes).
    let head = |buf: &mut Vec<u8>, value_len: usize| {
        let kv_len = 2 + key.len() + 2 + value_len;
        buf.reserve(2 + kv_len);
        buf.extend_from_slice(&[
            key_byte(field, LEN),
            kv_len as u8,
            key_byte(1, LEN),
            key.len() as u8,
        ]);
        buf.extend_from_slice(key);
    };
    // Every length below is at most the `KeyValue`'s, checked under 128, so one byte holds each.
    let fits = |value_len: usize| 2 + key.len() + 2 + value_len < 0x80;
    match a.value {
        AttrValue::Str(s) => {
            let value = s.as_bytes();
            let value_len = 2 + value.len();
            if !fits(value_len) {
                return false;
            }
            head(buf, value_len);
            buf.extend_from_slice(&[
                key_byte(2, LEN),
                value_len as u8,
                key_byte(1, LEN),
                value.len() as u8,
            ]);
            buf.extend_from_slice(value);
        }
        AttrValue::Bool(b) => {
            if !fits(2) {
                return false;
            }
            head(buf, 2);
            buf.extend_from_slice(&[key_byte(2, LEN), 2, key_byte(2, VARINT), u8::from(b)]);
        }
        AttrValue::I64(i) => {
            let mut value = [0u8; 13];
            let n = varint_into(&mut value[3..], i as u64);
            let value_len = 1 + n;
            if !fits(value_len) {
                return false;
            }
            value[..3].copy_from_slice(&[key_byte(2, LEN), value_len as u8, key_byte(3, VARINT)]);
            head(buf, value_len);
            // All 13 bytes (a copy of a length fixed when compiling: a few moves, where the varint's own length
            // made it a call of `memcpy`), then the unused end taken off.
            let end = buf.len() + 3 + n;
            buf.extend_from_slice(&value);
            buf.truncate(end);
        }
        _ => return false,
    }
    true
}

/// [`put_attr`] field by field, for any attribute.
#[inline(never)]
fn put_attr_fields(buf: &mut Vec<u8>, field: u32, a: &Attr<'_>) {
    let value_len = any_len(&a.value);
    put_len(
        buf,
        field,
        len_field(1, a.key.len()) + len_field(2, value_len),
    );
    put_bytes(buf, 1, a.key.as_bytes());
    put_len(buf, 2, value_len);
    put_any(buf, &a.value);
}

/// A tag that takes one byte (`field` < 16).
#[inline]
fn key_byte(field: u32, wire: u8) -> u8 {
    key(field, wire) as u8
}

/// Writes `v` as a varint at the front of `out` (at least 10 bytes); returns its length.
#[inline]
fn varint_into(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    while v >= 0x80 && n < 9 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    n + 1
}

/// One finished span, as the engine keeps it.
#[derive(Debug)]
pub(crate) struct SpanRef<'a> {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// None for the root.
    pub parent: Option<[u8; 8]>,
    pub name: &'a str,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Attributes already encoded (a run of `Span.attributes` fields: what a root or an open span collected).
    pub encoded: &'a [u8],
    /// Attributes still to encode (after `encoded`).
    pub attributes: &'a [Attr<'a>],
    /// The error status message (`Some("")` is an error without a message).
    pub error: Option<&'a str>,
}

/// `ScopeSpans.spans` is field 2.
const SPANS_FIELD: u32 = 2;

#[cfg(test)]
impl SpanRef<'static> {
    /// A span of the tests: the trace id `trace` repeated, the span id `n` in its first two bytes, no parent, no
    /// attributes.
    pub(crate) fn numbered(trace: u8, n: u16) -> SpanRef<'static> {
        let mut span_id = [0; 8];
        span_id[..2].copy_from_slice(&n.to_be_bytes());
        SpanRef {
            trace_id: [trace; 16],
            span_id,
            parent: None,
            name: "s",
            start_ns: 1,
            end_ns: 2,
            encoded: &[],
            attributes: &[],
            error: None,
        }
    }
}

fn status_len(message: &str) -> usize {
    let msg = if message.is_empty() {
        0
    } else {
        len_field(2, message.len())
    };
    msg + 2
}

/// The tag of `Span.flags` (field 16, fixed 32 bits): two bytes.
const FLAGS_TAG: [u8; 2] = {
    let tag = (16 << 3) | FIXED32 as u32;
    [(tag as u8 & 0x7f) | 0x80, (tag >> 7) as u8]
};

/// `Span.attributes` is field 9.
pub(crate) const ATTRIBUTES_FIELD: u32 = 9;

/// The bytes in front of a span's name: its trace id, its span id and (for a child) its parent's, each a field of
/// fixed size (a tag and a length, then the bytes), at these offsets.
const IDS_LEN: usize = 2 * 3 + 16 + 8 + 8;
const TRACE_ID_AT: usize = 2;
const SPAN_ID_AT: usize = TRACE_ID_AT + 16 + 2;
const PARENT_AT: usize = SPAN_ID_AT + 8 + 2;
/// A root's ids: no parent's field.
const ROOT_IDS_LEN: usize = PARENT_AT - 2;
/// The kind, start and end fields after the name.
const TIMES_LEN: usize = 20;
/// The flags field at the end.
const FLAGS_LEN: usize = 6;

/// The room [`encode_span`] makes for `s` before it writes: the span's fields of fixed size, its name, its encoded
/// attributes, about 48 bytes an attribute still to encode and a status.
fn encode_room(s: &SpanRef<'_>) -> usize {
    IDS_LEN + 4 + s.name.len() + TIMES_LEN + s.encoded.len() + 48 * s.attributes.len() + 8
}

/// Appends the `Span` message of `s` (its content: no tag, no length) to `out`, in one pass: only the lengths of
/// attribute values are computed ahead, so a span is encoded without walking its attributes twice, and may be
/// encoded outside the lock of the batch it goes to. The fields of fixed size are laid out in arrays and
/// appended as runs, not one by one.
#[inline(always)]
fn encode_span(out: &mut Vec<u8>, s: &SpanRef<'_>) {
    let mut ids = [0u8; IDS_LEN];
    ids[..TRACE_ID_AT].copy_from_slice(&[key_byte(1, LEN), 16]);
    ids[TRACE_ID_AT..TRACE_ID_AT + 16].copy_from_slice(&s.trace_id);
    ids[SPAN_ID_AT - 2..SPAN_ID_AT].copy_from_slice(&[key_byte(2, LEN), 8]);
    ids[SPAN_ID_AT..SPAN_ID_AT + 8].copy_from_slice(&s.span_id);
    let mut times = [0u8; TIMES_LEN];
    times[..3].copy_from_slice(&[
        key_byte(6, VARINT),
        KIND_INTERNAL as u8,
        key_byte(7, FIXED64),
    ]);
    times[3..11].copy_from_slice(&s.start_ns.to_le_bytes());
    times[11] = key_byte(8, FIXED64);
    times[12..20].copy_from_slice(&s.end_ns.to_le_bytes());
    out.reserve(encode_room(s));
    // A run of one of two lengths fixed when compiling (a root has no parent), not of a length known at run time.
    match &s.parent {
        Some(p) => {
            ids[PARENT_AT - 2..PARENT_AT].copy_from_slice(&[key_byte(4, LEN), 8]);
            ids[PARENT_AT..PARENT_AT + 8].copy_from_slice(p);
            out.extend_from_slice(&ids);
        }
        None => out.extend_from_slice(&ids[..ROOT_IDS_LEN]),
    }
    put_bytes(out, 5, s.name.as_bytes());
    out.extend_from_slice(&times);
    if !s.encoded.is_empty() {
        out.extend_from_slice(s.encoded);
    }
    for a in s.attributes {
        put_attr(out, ATTRIBUTES_FIELD, a);
    }
    if let Some(m) = s.error {
        put_len(out, 15, status_len(m));
        if !m.is_empty() {
            put_bytes(out, 2, m.as_bytes());
        }
        out.extend_from_slice(&[key(3, VARINT) as u8, STATUS_ERROR as u8]);
    }
    let f = FLAGS.to_le_bytes();
    let flags: [u8; FLAGS_LEN] = [FLAGS_TAG[0], FLAGS_TAG[1], f[0], f[1], f[2], f[3]];
    out.extend_from_slice(&flags);
}

/// Bytes of the length prefix [`put_span`] leaves room for: what a span of 128 to 16,383 bytes needs.
const LEN_ROOM: usize = 2;

/// The length of `s`'s `Span` message when it is known without encoding it: when every attribute is already
/// encoded (a root, an open span that ended, a span without attributes). None when some are still to encode.
fn known_len(s: &SpanRef<'_>) -> Option<usize> {
    if !s.attributes.is_empty() {
        return None;
    }
    let ids = if s.parent.is_some() {
        IDS_LEN
    } else {
        ROOT_IDS_LEN
    };
    let status = s.error.map_or(0, |m| len_field(15, status_len(m)));
    Some(ids + len_field(5, s.name.len()) + TIMES_LEN + s.encoded.len() + status + FLAGS_LEN)
}

/// Appends `s` to `buf` as one element of `ScopeSpans.spans` (tag, length, message), encoded in place. A span
/// whose length is known ahead ([`known_len`]) gets it written first; any other is encoded after room for a
/// two-byte length, and moved only when its length takes one byte or three (instead of every span being encoded
/// elsewhere and copied in). Returns where in `buf` the message starts (after its tag and length).
pub(crate) fn put_span(buf: &mut Vec<u8>, s: &SpanRef<'_>) -> usize {
    buf.push(key_byte(SPANS_FIELD, LEN));
    let known = known_len(s);
    match known {
        Some(len) => put_varint(buf, len as u64),
        None => buf.extend_from_slice(&[0; LEN_ROOM]),
    }
    let start = buf.len();
    // One call, inlined: a call of its own cost the span its registers saved and restored twice.
    encode_span(buf, s);
    if let Some(len) = known {
        debug_assert_eq!(
            buf.len() - start,
            len,
            "the span's length as computed ahead"
        );
        return start;
    }
    let at = start - LEN_ROOM;
    let len = buf.len() - start;
    let mut head = [0u8; 10];
    let n = varint_into(&mut head, len as u64);
    if n < LEN_ROOM {
        buf.copy_within(at + LEN_ROOM.., at + n);
        buf.truncate(at + n + len);
    } else if n > LEN_ROOM {
        buf.resize(at + n + len, 0);
        buf.copy_within(at + LEN_ROOM..at + LEN_ROOM + len, at + n);
    }
    buf[at..at + n].copy_from_slice(&head[..n]);
    at + n
}

/// A child span without attributes, encoded once for several traces (a group commit's span in each of its
/// records' traces): [`put_span`]'s output with the ids left to be put in for each trace.
#[derive(Debug)]
pub(crate) struct Template {
    bytes: Vec<u8>,
    /// Where the span's ids start in `bytes` (after the field's tag and length).
    ids_at: usize,
}

impl Template {
    /// The child span `name` from `start_ns` to `end_ns`.
    pub(crate) fn new(name: &str, start_ns: u64, end_ns: u64) -> Template {
        let s = SpanRef {
            trace_id: [0; 16],
            span_id: [0; 8],
            parent: Some([0; 8]),
            name,
            start_ns,
            end_ns,
            encoded: &[],
            attributes: &[],
            error: None,
        };
        // Room for the span at once (its tag, a length of up to three bytes, and the room the encoder makes), not
        // grown from nothing nor grown again by the encoder.
        let mut bytes = Vec::with_capacity(4 + encode_room(&s));
        let ids_at = put_span(&mut bytes, &s);
        Template { bytes, ids_at }
    }

    /// Appends the span of trace `trace_id`, with id `span_id` and parent `parent`, to `buf` (what [`put_span`]
    /// writes for it).
    pub(crate) fn put(
        &self,
        buf: &mut Vec<u8>,
        trace_id: &[u8; 16],
        span_id: &[u8; 8],
        parent: &[u8; 8],
    ) {
        let at = buf.len() + self.ids_at;
        buf.extend_from_slice(&self.bytes);
        // The ids' fields as `encode_span` lays them out.
        buf[at + TRACE_ID_AT..at + TRACE_ID_AT + 16].copy_from_slice(trace_id);
        buf[at + SPAN_ID_AT..at + SPAN_ID_AT + 8].copy_from_slice(span_id);
        buf[at + PARENT_AT..at + PARENT_AT + 8].copy_from_slice(parent);
    }
}

/// What goes in front of every batch's spans: the resource and the instrumentation scope.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    /// `ResourceSpans.resource` (field 1), encoded whole.
    resource: Vec<u8>,
    /// `ScopeSpans.scope` (field 1), encoded whole.
    scope: Vec<u8>,
}

impl Header {
    pub(crate) fn new(resource: &[Attr<'_>], scope_name: &str) -> Header {
        let mut attrs = Vec::new();
        for a in resource {
            put_attr(&mut attrs, 1, a);
        }
        let mut r = Vec::with_capacity(attrs.len() + 4);
        put_bytes(&mut r, 1, &attrs);
        let mut scope_msg = Vec::new();
        put_bytes(&mut scope_msg, 1, scope_name.as_bytes());
        let mut s = Vec::with_capacity(scope_msg.len() + 4);
        put_bytes(&mut s, 1, &scope_msg);
        Header {
            resource: r,
            scope: s,
        }
    }

    /// What goes before `spans` bytes of spans (a run of [`put_span`] output) in their
    /// `ExportTraceServiceRequest`: the request is this followed by the spans.
    pub(crate) fn prefix(&self, spans: usize) -> Vec<u8> {
        let scope_spans = self.scope.len() + spans;
        let resource_spans = self.resource.len() + len_field(2, scope_spans);
        let mut out = Vec::with_capacity(self.resource.len() + self.scope.len() + 12);
        put_len(&mut out, 1, resource_spans);
        out.extend_from_slice(&self.resource);
        put_len(&mut out, 2, scope_spans);
        out.extend_from_slice(&self.scope);
        out
    }

    /// The whole `ExportTraceServiceRequest` of `spans`.
    #[cfg(test)]
    pub(crate) fn request(&self, spans: &[u8]) -> Vec<u8> {
        let mut out = self.prefix(spans.len());
        out.extend_from_slice(spans);
        out
    }
}

#[cfg(test)]
mod tests;
