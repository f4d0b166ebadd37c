//! The hand-written encoding decodes, with opentelemetry-proto's generated messages, to the spans it was given.

use super::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message as _;

fn attrs(big: &str) -> Vec<Attr<'_>> {
    vec![
        Attr::new("url.full", "http://a.test/é?x=1"),
        Attr::new("crawl.depth", 3_i64),
        Attr::new("crawl.negative", -7_i64),
        Attr::new("dns.polluted", false),
        Attr::new("ratio", 0.25),
        Attr::new("big", big),
    ]
}

#[test]
fn spans_decode_to_what_was_encoded() {
    let header = Header::new(
        &[
            Attr::new("service.name", "crawl-engine"),
            Attr::new("service.version", "0.1.0"),
            Attr::new("process.pid", 42_i64),
        ],
        "crawl-engine",
    );
    let big = "x".repeat(300);
    let attributes = attrs(&big);
    // The first three as a root keeps them (encoded as they were set), the rest given when the span ends.
    let mut encoded = Vec::new();
    for a in &attributes[..3] {
        put_attr(&mut encoded, ATTRIBUTES_FIELD, a);
    }
    let mut spans = Vec::new();
    let root = SpanRef {
        trace_id: [7; 16],
        span_id: [1; 8],
        parent: None,
        name: "crawl.url",
        start_ns: 1_700_000_000_000_000_000,
        end_ns: 1_700_000_000_123_456_789,
        encoded: &encoded,
        attributes: &attributes[3..],
        error: Some("connection refused"),
    };
    put_span(&mut spans, &root);
    let child = SpanRef {
        trace_id: [7; 16],
        span_id: [2; 8],
        parent: Some([1; 8]),
        name: "parse",
        start_ns: 5,
        end_ns: 0,
        encoded: &[],
        attributes: &[],
        error: Some(""),
    };
    put_span(&mut spans, &child);
    let plain = SpanRef {
        error: None,
        span_id: [3; 8],
        ..child
    };
    put_span(&mut spans, &plain);

    let req =
        ExportTraceServiceRequest::decode(header.request(&spans).as_slice()).expect("decodes");
    assert_eq!(req.resource_spans.len(), 1);
    let rs = &req.resource_spans[0];
    let resource = rs.resource.as_ref().expect("resource");
    assert_eq!(resource.attributes.len(), 3);
    assert_eq!(resource.attributes[0].key, "service.name");
    assert_eq!(
        resource.attributes[2]
            .value
            .as_ref()
            .and_then(|v| v.value.clone()),
        Some(any_value::Value::IntValue(42))
    );
    assert_eq!(rs.scope_spans.len(), 1);
    let ss = &rs.scope_spans[0];
    assert_eq!(ss.scope.as_ref().expect("scope").name, "crawl-engine");
    assert_eq!(ss.spans.len(), 3);

    let r = &ss.spans[0];
    assert_eq!(r.trace_id, vec![7; 16]);
    assert_eq!(r.span_id, vec![1; 8]);
    assert!(r.parent_span_id.is_empty());
    assert_eq!(r.name, "crawl.url");
    assert_eq!(r.kind, 1);
    assert_eq!(r.start_time_unix_nano, 1_700_000_000_000_000_000);
    assert_eq!(r.end_time_unix_nano, 1_700_000_000_123_456_789);
    assert_eq!(r.flags, 0x101);
    let status = r.status.as_ref().expect("status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert_eq!(status.message, "connection refused");
    let got: Vec<_> = r
        .attributes
        .iter()
        .map(|kv| {
            (
                kv.key.as_str(),
                kv.value.as_ref().and_then(|v| v.value.clone()),
            )
        })
        .collect();
    use any_value::Value as V;
    assert_eq!(
        got[0],
        (
            "url.full",
            Some(V::StringValue("http://a.test/é?x=1".into()))
        )
    );
    assert_eq!(got[1], ("crawl.depth", Some(V::IntValue(3))));
    assert_eq!(got[2], ("crawl.negative", Some(V::IntValue(-7))));
    assert_eq!(got[3], ("dns.polluted", Some(V::BoolValue(false))));
    assert_eq!(got[4], ("ratio", Some(V::DoubleValue(0.25))));
    assert_eq!(got[5], ("big", Some(V::StringValue("x".repeat(300)))));
    assert_eq!(got.len(), 6);

    let c = &ss.spans[1];
    assert_eq!(c.parent_span_id, vec![1; 8]);
    assert_eq!(c.name, "parse");
    assert!(c.attributes.is_empty());
    let status = c.status.as_ref().expect("status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(status.message.is_empty());
    assert!(ss.spans[2].status.is_none());
}

#[test]
fn varint_sizes_match_the_encoding() {
    for v in [
        0,
        1,
        127,
        128,
        16_383,
        16_384,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let mut buf = Vec::new();
        put_varint(&mut buf, v);
        assert_eq!(buf.len(), varint_len(v), "{v}");
    }
}

#[test]
fn attribute_shortcuts_write_the_general_encoding_at_every_length_edge() {
    let key = |n: usize| "k".repeat(n);
    let keys: Vec<String> = [1, 8, 20, 60, 99, 100, 101, 127, 128]
        .into_iter()
        .map(key)
        .collect();
    let values: Vec<String> = [
        0, 1, 58, 59, 60, 61, 111, 118, 119, 120, 121, 126, 127, 128, 200,
    ]
    .into_iter()
    .map(|n| "v".repeat(n))
    .collect();
    let mut cases = Vec::new();
    for k in &keys {
        for v in [i64::MIN, -1, 0, 1, 127, 128, 300, i64::MAX] {
            cases.push(Attr::new(k, v));
        }
        cases.push(Attr::new(k, true));
        cases.push(Attr::new(k, false));
        cases.push(Attr::new(k, -0.5));
        if k.len() <= 60 {
            for v in &values {
                cases.push(Attr::new(k, v));
            }
        }
    }
    for field in [1, 9, 15, 16] {
        for kv in &cases {
            let (mut fast, mut general) = (Vec::new(), Vec::new());
            let short = put_attr_short(&mut fast, field, kv);
            if !short {
                assert!(
                    fast.is_empty(),
                    "nothing written when the shortcut is not taken"
                );
                put_attr(&mut fast, field, kv);
            }
            put_attr_fields(&mut general, field, kv);
            assert_eq!(fast, general, "field {field}, {kv:?}");
            // The shortcut is taken for every attribute whose tag and lengths all fit one byte.
            let fits =
                field < 16 && general.len() < 2 + 0x80 && !matches!(kv.value, AttrValue::F64(_));
            assert_eq!(short, fits, "field {field}, {kv:?}");
        }
    }
    // And the result decodes as the attribute it was.
    let mut msg = Vec::new();
    for kv in &cases {
        put_attr(&mut msg, 1, kv);
    }
    let decoded = opentelemetry_proto::tonic::common::v1::KeyValueList::decode(msg.as_slice())
        .expect("decodes");
    assert_eq!(decoded.values.len(), cases.len());
    for (d, kv) in decoded.values.iter().zip(&cases) {
        assert_eq!(d.key, kv.key);
        let v = d.value.as_ref().and_then(|v| v.value.clone());
        let want = match kv.value {
            AttrValue::I64(i) => any_value::Value::IntValue(i),
            AttrValue::Bool(b) => any_value::Value::BoolValue(b),
            AttrValue::F64(f) => any_value::Value::DoubleValue(f),
            AttrValue::Str(s) => any_value::Value::StringValue(s.to_owned()),
            AttrValue::Preset(_) | AttrValue::KeyedI64(..) | AttrValue::KeyedStr(..) => {
                unreachable!("the cases are given, not preset")
            }
        };
        assert_eq!(v, Some(want));
    }
}

/// The tag's and length's bytes in front of one `put_span` output, and the message length they give.
fn framing(one: &[u8]) -> (usize, usize) {
    let (mut len, mut i, mut shift) = (0usize, 1, 0);
    loop {
        let b = one[i];
        len |= usize::from(b & 0x7f) << shift;
        i += 1;
        shift += 7;
        if b < 0x80 {
            return (i, len);
        }
    }
}

/// The length of a span message is written in front of it, computed ahead when every attribute is already
/// encoded and after the span is encoded in place otherwise: spans whose length takes one, two or three bytes,
/// around each edge, decode whole and in order, and each prefix is the shortest varint, both ways.
#[test]
fn in_place_lengths_fit_every_size_class() {
    for ahead in [false, true] {
        lengths_fit_every_size_class(ahead);
    }
}

fn lengths_fit_every_size_class(ahead: bool) {
    let header = Header::new(&[Attr::new("service.name", "t")], "t");
    let one = |fill: usize| {
        let value = "v".repeat(fill);
        let attributes = [Attr::new("v", &value)];
        let mut encoded = Vec::new();
        if ahead {
            put_attr(&mut encoded, ATTRIBUTES_FIELD, &attributes[0]);
        }
        let span = SpanRef {
            trace_id: [9; 16],
            span_id: [4; 8],
            parent: Some([5; 8]),
            name: "n",
            start_ns: 1,
            end_ns: 2,
            encoded: &encoded,
            attributes: if ahead { &[] } else { &attributes },
            // A failed span, with a status message of one length or another.
            error: ahead.then_some(if fill.is_multiple_of(2) {
                "e"
            } else {
                "long error"
            }),
        };
        assert_eq!(known_len(&span).is_some(), ahead);
        let mut out = Vec::new();
        let at = put_span(&mut out, &span);
        assert_eq!(
            at,
            framing(&out).0,
            "the message starts after its tag and length"
        );
        out
    };
    let (_, base) = framing(&one(0));
    let mut all = Vec::new();
    let mut fills = Vec::new();
    let mut lengths = Vec::new();
    for target in [127, 128, 16_383, 16_384, 70_000] {
        for fill in target - base - 8..=target - base {
            let out = one(fill);
            let (head, len) = framing(&out);
            assert_eq!(out[0], key_byte(SPANS_FIELD, LEN));
            assert_eq!(head + len, out.len(), "the prefix gives the whole message");
            assert_eq!(
                head - 1,
                varint_len(len as u64),
                "the shortest length prefix"
            );
            all.extend_from_slice(&out);
            fills.push(fill);
            lengths.push(len);
        }
    }
    for edge in [127, 128, 16_383, 16_384] {
        assert!(
            lengths.iter().any(|l| l.abs_diff(edge) <= 2),
            "a span of about {edge} bytes: {lengths:?}"
        );
    }
    assert!(lengths.iter().any(|l| *l > 16_384 * 4));
    let req = ExportTraceServiceRequest::decode(header.request(&all).as_slice()).expect("decodes");
    let spans = &req.resource_spans[0].scope_spans[0].spans;
    assert_eq!(spans.len(), fills.len());
    for (span, fill) in spans.iter().zip(&fills) {
        assert_eq!(span.name, "n");
        assert_eq!(span.parent_span_id, [5; 8]);
        let value = span.attributes[0]
            .value
            .as_ref()
            .and_then(|v| v.value.clone());
        assert_eq!(
            value,
            Some(any_value::Value::StringValue("v".repeat(*fill)))
        );
        let status = span.status.as_ref().map(|s| (s.code, s.message.clone()));
        let want = ahead.then(|| {
            let m = if fill.is_multiple_of(2) {
                "e"
            } else {
                "long error"
            };
            (StatusCode::Error as i32, m.to_owned())
        });
        assert_eq!(status, want);
    }
}

/// A span encoded once for several traces writes, for each, exactly what encoding that trace's span would.
#[test]
fn a_template_puts_what_put_span_writes() {
    for name in ["frontier.commit", &"n".repeat(200)] {
        let template = Template::new(name, 1_700_000_000_000_000_000, 1_700_000_000_000_000_042);
        let mut got = vec![0xaa];
        let mut want = vec![0xaa];
        for i in 0..3u8 {
            let (trace_id, span_id, parent) = ([i; 16], [i + 10; 8], [i + 20; 8]);
            template.put(&mut got, &trace_id, &span_id, &parent);
            put_span(
                &mut want,
                &SpanRef {
                    trace_id,
                    span_id,
                    parent: Some(parent),
                    name,
                    start_ns: 1_700_000_000_000_000_000,
                    end_ns: 1_700_000_000_000_000_042,
                    encoded: &[],
                    attributes: &[],
                    error: None,
                },
            );
        }
        assert_eq!(got, want, "{name}");
    }
}

/// A span's name is written with a one-byte length when it is shorter than 128 bytes and field by field when it
/// is not; a root (no parent) and a child decode with their names and ids either way.
#[test]
fn names_of_every_length_class_decode_for_roots_and_children() {
    let header = Header::new(&[], "t");
    let names: Vec<String> = [0, 1, 127, 128, 300]
        .iter()
        .map(|n| "s".repeat(*n))
        .collect();
    let mut all = Vec::new();
    let mut expected = Vec::new();
    for name in &names {
        for parent in [None, Some([5; 8])] {
            put_span(
                &mut all,
                &SpanRef {
                    trace_id: [9; 16],
                    span_id: [4; 8],
                    parent,
                    name,
                    start_ns: 1,
                    end_ns: 2,
                    encoded: &[],
                    attributes: &[],
                    error: None,
                },
            );
            expected.push((name.clone(), parent.map_or(Vec::new(), |p| p.to_vec())));
        }
    }
    let req = ExportTraceServiceRequest::decode(header.request(&all).as_slice()).expect("decodes");
    let got: Vec<(String, Vec<u8>)> = req.resource_spans[0].scope_spans[0]
        .spans
        .iter()
        .map(|s| (s.name.clone(), s.parent_span_id.clone()))
        .collect();
    assert_eq!(got, expected);
    for s in &req.resource_spans[0].scope_spans[0].spans {
        assert_eq!(s.trace_id, [9; 16]);
        assert_eq!(s.span_id, [4; 8]);
    }
}

/// An attribute encoded when compiling is written as the same bytes as the one encoded when it is given, for the
/// spans' field and the resource's.
#[test]
fn presets_encode_as_their_attributes_do() {
    let cases = [
        (
            crate::preset_str!("crawl.kind", "page"),
            Attr::new("crawl.kind", "page"),
        ),
        (crate::preset_str!("k", ""), Attr::new("k", "")),
        (crate::preset_str!("", "v"), Attr::new("", "v")),
        (
            crate::preset_str!("network.protocol.version", "HTTP/1.1"),
            Attr::new("network.protocol.version", "HTTP/1.1"),
        ),
        (
            crate::preset_bool!("net.connection.reused", true),
            Attr::new("net.connection.reused", true),
        ),
        (crate::preset_bool!("b", false), Attr::new("b", false)),
    ];
    for (preset, given) in cases {
        assert_eq!(preset.key, given.key);
        for field in [1, ATTRIBUTES_FIELD] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            put_attr(&mut a, field, &preset);
            put_attr(&mut b, field, &given);
            assert_eq!(a, b, "{given:?} as field {field}");
        }
    }
    // The longest preset: a `KeyValue` of 127 bytes (a longer one does not compile).
    let long = crate::preset_str!(
        "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
        "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
    );
    let AttrValue::Preset(kv) = long.value else {
        panic!("a preset");
    };
    assert_eq!(kv.len(), 127);
    let mut a = Vec::new();
    put_attr(&mut a, ATTRIBUTES_FIELD, &long);
    let mut b = Vec::new();
    let value = "v".repeat(61);
    put_attr(
        &mut b,
        ATTRIBUTES_FIELD,
        &Attr::new(long.key, value.as_str()),
    );
    assert_eq!(a, b);
}

/// An attribute whose key was encoded when compiling ([`KeyHead`]) is written as the same bytes as the one given
/// whole, for the spans' field, the resource's and a field past 15 (written field by field), with keys up to the
/// longest a head holds, numbers of every varint length and strings on either side of the `KeyValue`'s 128 bytes.
#[test]
fn keyed_attributes_encode_as_their_attributes_do() {
    // The heads' value tags are the wire's.
    assert_eq!(KeyHead::NUMBER, key_byte(3, VARINT));
    assert_eq!(KeyHead::STRING, key_byte(1, LEN));
    let keys: Vec<String> = [0, 1, 9, 23, 57, 58]
        .into_iter()
        .map(|n| "k".repeat(n))
        .collect();
    let strings: Vec<String> = [0, 1, 20, 57, 58, 59, 60, 61, 62, 63, 64, 120, 127, 128, 300]
        .into_iter()
        .map(|n| "v".repeat(n))
        .collect();
    let numbers = [
        i64::MIN,
        -1,
        0,
        1,
        127,
        128,
        16_383,
        16_384,
        4_000,
        i64::MAX,
    ];
    let mut checked = 0;
    for key in &keys {
        let key: &'static str = Box::leak(key.clone().into_boxed_str());
        let number_head: &'static KeyHead = Box::leak(Box::new(KeyHead::new(key, KeyHead::NUMBER)));
        let string_head: &'static KeyHead = Box::leak(Box::new(KeyHead::new(key, KeyHead::STRING)));
        let mut cases: Vec<(Attr<'_>, Attr<'_>)> = numbers
            .iter()
            .map(|&n| {
                let keyed = Attr {
                    key,
                    value: AttrValue::KeyedI64(number_head, n),
                };
                (keyed, Attr::new(key, n))
            })
            .collect();
        for v in &strings {
            let keyed = Attr {
                key,
                value: AttrValue::KeyedStr(string_head, v),
            };
            cases.push((keyed, Attr::new(key, v)));
        }
        for (keyed, given) in &cases {
            for field in [1, ATTRIBUTES_FIELD, 15, 16, 20] {
                // Written after other bytes, as in a span, and with room to spare or none.
                for room in [0, 512] {
                    let (mut a, mut b) = (Vec::with_capacity(room), Vec::with_capacity(room));
                    a.extend_from_slice(b"xyz");
                    b.extend_from_slice(b"xyz");
                    put_attr(&mut a, field, keyed);
                    put_attr(&mut b, field, given);
                    assert_eq!(a, b, "{given:?} as field {field}");
                    // The keyed way is taken for every attribute whose tags and lengths all fit one byte (the
                    // general one writes the same bytes).
                    let fits = field < 16 && b.len() - 3 < 2 + 0x80;
                    let mut keyed_way = Vec::new();
                    let taken = match keyed.value {
                        AttrValue::KeyedI64(head, i) => {
                            put_keyed_i64(&mut keyed_way, field, head, i)
                        }
                        AttrValue::KeyedStr(head, s) => {
                            put_keyed_str(&mut keyed_way, field, head, s)
                        }
                        _ => unreachable!("the cases are keyed"),
                    };
                    assert_eq!(taken, fits, "{given:?} as field {field}");
                    assert_eq!(
                        keyed_way.is_empty(),
                        !fits,
                        "nothing written when not taken"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(
        checked,
        keys.len() * (numbers.len() + strings.len()) * 5 * 2
    );
    // The macros make the same heads.
    let depth = crate::keyed_i64!("crawl.depth", 3);
    let url = crate::keyed_str!("url.full", "http://a.test/");
    for (keyed, given) in [
        (depth, Attr::new("crawl.depth", 3i64)),
        (url, Attr::new("url.full", "http://a.test/")),
    ] {
        assert_eq!(keyed.key, given.key);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        put_attr(&mut a, ATTRIBUTES_FIELD, &keyed);
        put_attr(&mut b, ATTRIBUTES_FIELD, &given);
        assert_eq!(a, b);
    }
}
