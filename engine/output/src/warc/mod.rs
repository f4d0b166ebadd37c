//! WARC 1.1 archiving of what the crawler fetches.
//!
//! A [`WarcWriter`] appends records to `PREFIX-TIMESTAMP-SERIAL-HOST.warc.gz` files (TIMESTAMP 14 or 17 digits
//! UTC, SERIAL 5 digits, as IIPC tools name them), one gzip member per record, each file starting with a
//! `warcinfo` record and rotated before it would pass `max_bytes`. Every append returns the records'
//! [`RecordLocation`]s (file, member offset, member length) for the output record to point to.
//!
//! # Records
//! - A fetch ([`Capture`]; pages, robots.txt and sitemaps alike) becomes a `response` record and, when the
//!   request is given, a `request` record, written response first and linked both ways by `WARC-Concurrent-To`.
//!   Both carry `WARC-Target-URI` (userinfo removed), `WARC-Date` (microseconds), `WARC-IP-Address` when known,
//!   a random `WARC-Record-ID`, `Content-Type: application/http;msgtype=...`, `WARC-Block-Digest` and
//!   `WARC-Payload-Digest` (`sha1:` + base32), and `WARC-Protocol: h2`/`h3` when the message travelled on HTTP/2
//!   or HTTP/3. A body cut at the crawler's limit adds `WARC-Truncated`.
//! - A fetch whose payload is already archived becomes a `revisit` ([`Revisit`], profile
//!   identical-payload-digest) holding the response's headers only; [`PayloadDedup`] is a bounded table of
//!   payloads archived so far for [`WarcWriter::append_capture_dedup`]. A revisit of a URL whose last capture
//!   the crawl remembers from an earlier run ([`PriorCapture`], handed over by the store) is also one when the
//!   table does not know the payload: it refers to that capture by `WARC-Refers-To-Target-URI` and
//!   `WARC-Refers-To-Date` only (the record id of an earlier run is not kept).
//! - A `304 Not Modified` to a conditional request becomes a `revisit` with the server-not-modified profile
//!   ([`Prepared::not_modified`]): the 304's status line and headers as block and the refers-to fields (URI and
//!   date) of the capture its validators came from, when it is known; no `WARC-Payload-Digest` (that capture's
//!   digest is not kept, only a comparison key) and no `WARC-Refers-To`.
//! - A page's outlinks go in a `metadata` record ([`Metadata`], `application/warc-fields`, `outlink: URL` lines)
//!   that refers to its response.
//!
//! # The stored HTTP message and transfer coding
//! The response block is the response as received: status line, headers, then the body still in its
//! Content-Encoding. The HTTP client removes chunked transfer coding, so the body is stored **de-chunked**, and
//! then `chunked` is removed from `Transfer-Encoding` (the header is dropped when no other coding remains).
//! That is what Heritrix's HTTP/2-capable fetcher (FetchHTTP2) does when its client has decoded the transfer
//! coding: it removes `Transfer-Encoding` from the recorded headers. Keeping the header would mislead readers:
//! warcio's `content_stream()` de-chunks whenever the header says `chunked`, and only falls back to the raw bytes
//! when the first chunk-size line fails to parse, so a de-chunked body that happens to start like a chunk size
//! would be mangled. (Heritrix's HTTP/1.1 fetcher records raw socket bytes, so its records keep chunked framing
//! and the header together; either way header and stored bytes agree.)
//!
//! `WARC-Payload-Digest` is the SHA-1 of the entity body exactly as stored: after de-chunking, before any content
//! decoding. `warcio check` recomputes it over the block bytes that follow the HTTP header section, without
//! de-chunking or decoding, so the two agree. `WARC-Block-Digest` covers the whole block (header section and
//! body). An HTTP/2 or HTTP/3 response is written as an HTTP/1.1 message: `HTTP/1.1 CODE REASON` with the
//! canonical reason phrase, header names as received (lowercase on HTTP/2).
//!
//! # Secrets
//! URL userinfo never reaches a file: it is removed from `WARC-Target-URI`, `WARC-Refers-To-Target-URI`, the
//! request's `Host` and `Referer`, and outlinks; `Authorization` and `Proxy-Authorization` are not written.
//!
//! # Durability
//! Appends are buffered. [`WarcWriter::sync`] writes and fsyncs them and returns a [`WarcCheckpoint`] (file name
//! and length) for the caller to commit with the state that references the records. [`WarcWriter::open`] with
//! that checkpoint cuts whatever lies beyond it (records never committed, a gzip member torn by `kill -9`) and
//! continues in that file; without one it scans the newest file and cuts after its last whole member.
//!
//! # Layout
//! - [`record`]: record types, ids, dates, named fields, serialisation, and a minimal reader.
//! - [`http`]: the HTTP/1.1-style request and response messages stored in blocks.
//! - [`digest`]: SHA-1 and base32 labels.
//! - [`capture`]: captures, revisits and metadata, and how each becomes records.
//! - [`dedup`]: the bounded payload table for revisits.
//! - [`writer`]: files, rotation, sync, checkpoints and repair; `naming` holds the file names, the host name
//!   and the directory lock.
//! - [`reader`]: walks a file's gzip members.

pub mod capture;
pub mod dedup;
pub mod digest;
pub mod http;
mod naming;
pub mod reader;
pub mod record;
pub mod writer;

#[cfg(test)]
mod tests;

pub use capture::{
    Capture, Metadata, Prepared, PriorCapture, RefersTo, Revisit, RevisitOf, RevisitTarget,
};
pub use crawl_core::record::RecordLocation;
pub use dedup::PayloadDedup;
pub use digest::{Digest, Sha1};
pub use http::{HttpHeaders, HttpVersion, RequestHead, ResponseHead};
pub use naming::machine_hostname;
pub use record::{RecordId, RecordType, Truncation};
pub use writer::{
    CaptureWritten, DEFAULT_MAX_BYTES, FileTimestamp, OpenReport, WarcCheckpoint, WarcWriter,
    WarcWriterConfig, WrittenRecord,
};

/// Errors of the WARC writer.
#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    #[error("warc {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("warc checkpoint {file}: {detail}")]
    CheckpointMismatch { file: String, detail: String },
    #[error("warc directory busy: {path} is locked by another writer with this prefix and host")]
    Busy { path: String },
    #[error("warc config: {0}")]
    Config(String),
    #[error("warc field not writable: {0}")]
    InvalidField(String),
    #[error("http message not writable: {0}")]
    InvalidMessage(String),
    #[error("warc record malformed: {0}")]
    Malformed(String),
    #[error("warc record compression: {0}")]
    Encode(std::io::Error),
    #[error("no random bytes for a record id")]
    Random,
    #[error("warc writer failed earlier; reopen it from the last checkpoint")]
    Failed,
}

impl WarcError {
    /// Whether reopening the writer (from its last checkpoint) may clear the error.
    pub fn needs_reopen(&self) -> bool {
        matches!(self, WarcError::Io { .. } | WarcError::Failed)
    }
}
