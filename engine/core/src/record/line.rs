//! A record's JSONL line, written field by field: the bytes serde_json writes for [`Record`] (field order, `null`
//! for absent values, the fields skipped when empty, serde_json's string escapes), without its serializer's
//! per-value machinery. serde_json stays the reader, and the tests hold the two writers byte for byte.

use super::RecordLocation;
use super::{DnsInfo, Reason, Record, RecordKind};

/// Appends `s` as a JSON string: `"` and `\` escaped, control characters as serde_json writes them (`\b`, `\t`,
/// `\n`, `\f`, `\r`, else `\u00xx`), everything else (DEL and non-ASCII included) as it is.
fn put_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Eight bytes at a time up to the first that needs an escape (most strings have none).
    let clean = bytes
        .chunks_exact(8)
        .take_while(|c| {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            !needs_escape(u64::from_le_bytes(word))
        })
        .count()
        * 8;
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate().skip(clean) {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0d => out.extend_from_slice(b"\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Whether any of the eight bytes of `w` is below 0x20, `"` or `\\`: the has-a-byte-less-than and has-a-zero-byte
/// word tests, each exact as a yes or no (a borrow only starts at a byte that matches), on bytes below 0x80.
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let ascii = !w & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20);
    let quote = (w ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES);
    let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    (below_space | quote | backslash) & ascii != 0
}

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn put_num(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn put_opt_num(out: &mut Vec<u8>, n: Option<impl itoa::Integer>) {
    match n {
        Some(n) => put_num(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

fn put_bool(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

fn put_list(out: &mut Vec<u8>, items: &[String]) {
    out.push(b'[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_str(out, s);
    }
    out.push(b']');
}

fn put_dns(out: &mut Vec<u8>, d: &DnsInfo) {
    out.extend_from_slice(b"{\"source\":");
    put_str(out, &d.source);
    out.extend_from_slice(b",\"addresses\":");
    put_list(out, &d.addresses);
    out.extend_from_slice(b",\"polluted\":");
    put_bool(out, d.polluted);
    out.extend_from_slice(b",\"rules\":");
    put_list(out, &d.rules);
    out.push(b'}');
}

fn put_warc(out: &mut Vec<u8>, w: &RecordLocation) {
    out.extend_from_slice(b"{\"file\":");
    put_str(out, &w.file);
    out.extend_from_slice(b",\"offset\":");
    put_num(out, w.offset);
    out.extend_from_slice(b",\"length\":");
    put_num(out, w.length);
    out.push(b'}');
}

/// Appends `r` as one JSON object (no newline).
pub(super) fn write(out: &mut Vec<u8>, r: &Record) {
    out.extend_from_slice(b"{\"url\":");
    put_str(out, &r.url);
    out.extend_from_slice(b",\"outcome\":");
    put_str(out, r.outcome.as_str());
    out.extend_from_slice(b",\"reason\":");
    put_opt_str(out, r.reason.map(Reason::as_str));
    out.extend_from_slice(b",\"status\":");
    put_opt_num(out, r.status);
    out.extend_from_slice(b",\"depth\":");
    put_num(out, r.depth);
    out.extend_from_slice(b",\"parent\":");
    put_opt_str(out, r.parent.as_deref());
    out.extend_from_slice(b",\"redirect_to\":");
    put_opt_str(out, r.redirect_to.as_deref());
    out.extend_from_slice(b",\"content_type\":");
    put_opt_str(out, r.content_type.as_deref());
    out.extend_from_slice(b",\"content_length\":");
    put_opt_num(out, r.content_length);
    out.extend_from_slice(b",\"links\":");
    put_opt_num(out, r.links);
    out.extend_from_slice(b",\"fetched_at\":");
    put_str(out, &r.fetched_at);
    out.extend_from_slice(b",\"elapsed_ms\":");
    put_opt_num(out, r.elapsed_ms);
    out.extend_from_slice(b",\"attempts\":");
    put_num(out, r.attempts);
    out.extend_from_slice(b",\"http_version\":");
    put_opt_str(out, r.http_version.as_deref());
    if r.noindex {
        out.extend_from_slice(b",\"noindex\":true");
    }
    out.extend_from_slice(b",\"error\":");
    put_opt_str(out, r.error.as_deref());
    out.extend_from_slice(b",\"dns\":");
    match &r.dns {
        Some(d) => put_dns(out, d),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"proxy\":");
    put_opt_str(out, r.proxy.as_deref());
    out.extend_from_slice(b",\"trace_id\":");
    put_opt_str(out, r.trace_id.as_deref());
    // Fields left out when absent.
    for (name, value) in [
        (&b",\"record_id\":"[..], &r.record_id),
        (b",\"title\":", &r.title),
        (b",\"digest\":", &r.digest),
    ] {
        if let Some(v) = value {
            out.extend_from_slice(name);
            put_str(out, v);
        }
    }
    if r.links_dropped != 0 {
        out.extend_from_slice(b",\"links_dropped\":");
        put_num(out, r.links_dropped);
    }
    if let Some(kind) = r.kind {
        out.extend_from_slice(match kind {
            RecordKind::Embed => b",\"kind\":\"embed\"",
        });
    }
    if let Some(v) = &r.revisit {
        out.extend_from_slice(b",\"visit\":");
        put_num(out, v.visit);
        out.extend_from_slice(b",\"changed\":");
        match v.changed {
            Some(b) => put_bool(out, b),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"previous_fetched_at\":");
        put_opt_str(out, v.previous_fetched_at.as_deref());
        out.extend_from_slice(b",\"next_due_at\":");
        put_opt_str(out, v.next_due_at.as_deref());
    }
    if let Some(w) = &r.warc {
        out.extend_from_slice(b",\"warc\":");
        put_warc(out, w);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests;
