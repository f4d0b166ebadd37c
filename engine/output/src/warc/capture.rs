//! What the crawler archives for a URL, and how each becomes records: a request/response pair, a revisit (of a
//! payload already archived, or a `304 Not Modified`), and the metadata record with a page's outlinks.

use std::net::IpAddr;
use std::time::SystemTime;

use super::WarcError;
use super::digest::{Digest, Sha1};
use super::http::{RequestHead, ResponseHead};
use super::record::{RecordId, RecordType, Truncation, WarcFields, strip_userinfo};

/// `Content-Type` of a response (and revisit) block.
pub const HTTP_RESPONSE: &str = "application/http;msgtype=response";
/// `Content-Type` of a request block.
pub const HTTP_REQUEST: &str = "application/http;msgtype=request";
/// `Content-Type` of warcinfo and metadata blocks.
pub const WARC_FIELDS: &str = "application/warc-fields";
/// `WARC-Profile` of a revisit whose payload has the digest of one archived before.
pub const IDENTICAL_PAYLOAD_PROFILE: &str =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
/// `WARC-Profile` of a revisit the server answered `304 Not Modified` to a conditional request.
pub const SERVER_NOT_MODIFIED_PROFILE: &str =
    "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

/// One fetch of a URL (a page, robots.txt or a sitemap alike).
#[derive(Debug, Clone, Copy)]
pub struct Capture<'a> {
    /// The URL fetched; its userinfo is removed before it is written.
    pub url: &'a str,
    /// When the fetch began.
    pub date: SystemTime,
    /// The server's address, when known (not when a proxy resolved the name).
    pub ip: Option<IpAddr>,
    /// The request sent; `None` writes the response alone.
    pub request: Option<&'a RequestHead>,
    pub response: &'a ResponseHead,
    /// The entity body as received: transfer coding removed, content coding (gzip, br, zstd, ...) kept.
    pub body: &'a [u8],
    /// Set when `body` stops short of what the server sent (e.g. at the crawler's size limit).
    pub truncated: Option<Truncation>,
}

/// A capture written as a `revisit` record, with the response's headers as its block (no body): its payload is
/// identical to one already archived, or the server said it did not change (`304 Not Modified`).
#[derive(Debug, Clone, Copy)]
pub struct Revisit<'a> {
    pub url: &'a str,
    pub date: SystemTime,
    pub ip: Option<IpAddr>,
    pub request: Option<&'a RequestHead>,
    pub response: &'a ResponseHead,
    /// Why it is a revisit: its profile and `WARC-Payload-Digest`.
    pub of: RevisitOf,
    /// The earlier record it refers to, when known.
    pub refers_to: Option<&'a RefersTo>,
}

/// Why a capture is written as a revisit (its `WARC-Profile`), with the digest of the payload it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisitOf {
    /// identical-payload-digest: the payload's digest (`WARC-Payload-Digest`, which the profile requires) equals
    /// that of a payload archived before.
    IdenticalPayload(Digest),
    /// server-not-modified: a `304 Not Modified` answer. WARC 1.1 defines its payload as the content the validators
    /// were taken from, whose digest the crawl does not keep (only a comparison key): no `WARC-Payload-Digest`.
    NotModified,
}

impl RevisitOf {
    /// The `WARC-Profile` URI.
    pub fn profile(self) -> &'static str {
        match self {
            RevisitOf::IdenticalPayload(_) => IDENTICAL_PAYLOAD_PROFILE,
            RevisitOf::NotModified => SERVER_NOT_MODIFIED_PROFILE,
        }
    }

    fn payload_digest(self) -> Option<Digest> {
        match self {
            RevisitOf::IdenticalPayload(d) => Some(d),
            RevisitOf::NotModified => None,
        }
    }
}

/// The earlier capture a revisit refers to: `WARC-Refers-To` (when its record id is known: not for a capture of an
/// earlier run), `WARC-Refers-To-Target-URI` and `WARC-Refers-To-Date`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefersTo {
    pub record_id: Option<RecordId>,
    pub target_uri: String,
    /// As `WARC-Date` writes it.
    pub date: String,
}

/// The URL's last full capture as the crawl remembers it across runs (from its store): what an unchanged payload
/// or a `304` refers to when the writer's own table does not know the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorCapture {
    /// Its `WARC-Date`, to the millisecond the store keeps.
    pub date: String,
    /// The comparison key of its payload digest (the store keeps 8 bytes, not the digest).
    pub key: crawl_core::recrawl::DigestKey,
}

impl PriorCapture {
    /// The capture a frontier entry's prior visit names.
    pub fn of(c: &crawl_core::recrawl::Capture) -> PriorCapture {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(c.fetched_at_ms);
        PriorCapture {
            date: humantime::format_rfc3339_millis(at).to_string(),
            key: c.digest,
        }
    }

    /// True when a payload of digest `d` is the one captured then (the odds of a false match are 2^-64).
    pub fn matches(&self, d: &Digest) -> bool {
        crawl_core::recrawl::DigestKey::of(&d.label()) == self.key
    }
}

/// Where a payload was first archived: what a revisit refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisitTarget {
    pub record_id: RecordId,
    /// `WARC-Target-URI` of that record.
    pub target_uri: String,
    /// `WARC-Date` of that record, as written.
    pub date: String,
    pub payload_digest: Digest,
}

impl RevisitTarget {
    /// What a revisit of this record refers to.
    pub fn refers_to(&self) -> RefersTo {
        RefersTo {
            record_id: Some(self.record_id.clone()),
            target_uri: self.target_uri.clone(),
            date: self.date.clone(),
        }
    }
}

/// A page's metadata: its outlinks (one `outlink: URL` line each, Heritrix style) and further named fields.
#[derive(Debug, Clone, Copy)]
pub struct Metadata<'a> {
    pub url: &'a str,
    pub date: SystemTime,
    /// The response (or revisit) record the metadata describes: `WARC-Concurrent-To` and `WARC-Refers-To`.
    pub about: &'a RecordId,
    /// Outlinks; userinfo is removed, and a link holding whitespace or control characters is left out.
    pub outlinks: &'a [String],
    /// Further `name: value` lines after the outlinks.
    pub fields: &'a [(String, String)],
}

/// A fetch made ready for archiving away from the writer: its records are serialised and compressed where the
/// fetch is handled (e.g. a parser thread), so the one thread that owns the [`super::WarcWriter`] only chooses
/// between them and a `revisit` ([`super::WarcWriter::append_prepared`]) and appends bytes.
#[derive(Debug)]
pub struct Prepared {
    pub(super) url: String,
    pub(super) date: SystemTime,
    pub(super) ip: Option<IpAddr>,
    pub(super) request: Option<RequestHead>,
    pub(super) response: ResponseHead,
    pub(super) digest: Digest,
    /// A whole, non-empty payload (only those are deduplicated).
    pub(super) eligible: bool,
    /// The URL's last full capture, from the store (a revisit of the URL).
    pub(super) prior: Option<PriorCapture>,
    /// A `304 Not Modified`: `records` hold its revisit.
    pub(super) not_modified: bool,
    pub(super) records: Vec<Encoded>,
}

impl Prepared {
    /// Encodes the capture's `response` (and `request`) records with gzip at `level`.
    pub fn new(c: &Capture<'_>, level: u32) -> Result<Prepared, WarcError> {
        let digest = Sha1::of(c.body);
        let records = encode_capture(c, digest, level)?;
        Ok(Prepared {
            url: c.url.to_owned(),
            date: c.date,
            ip: c.ip,
            request: c.request.cloned(),
            response: c.response.clone(),
            digest,
            eligible: !c.body.is_empty() && c.truncated.is_none(),
            prior: None,
            not_modified: false,
            records,
        })
    }

    /// A `304 Not Modified` answer to a conditional request: a `revisit` record (profile server-not-modified,
    /// the response's headers as block) and the `request` record. It refers to `prior`, the URL's last full
    /// capture, when known (by URI and date; the writer adds `WARC-Refers-To` when it knows that record's id).
    pub fn not_modified(
        c: &Capture<'_>,
        prior: Option<PriorCapture>,
        level: u32,
    ) -> Result<Prepared, WarcError> {
        let refers = prior.map(|p| RefersTo {
            record_id: None,
            target_uri: strip_userinfo(c.url).into_owned(),
            date: p.date,
        });
        let revisit = Revisit {
            url: c.url,
            date: c.date,
            ip: c.ip,
            request: c.request,
            response: c.response,
            of: RevisitOf::NotModified,
            refers_to: refers.as_ref(),
        };
        let records = encode_revisit(&revisit, level)?;
        Ok(Prepared {
            url: c.url.to_owned(),
            date: c.date,
            ip: c.ip,
            request: c.request.cloned(),
            response: c.response.clone(),
            digest: Sha1::of(b""),
            eligible: false,
            prior: None,
            not_modified: true,
            records,
        })
    }

    /// The URL's last full capture (from the store, handed over with the revisit's entry): when the payload has
    /// its digest, the writer archives a revisit of it even if its own table (filled in this process) does not
    /// know it.
    pub fn with_prior(mut self, prior: Option<PriorCapture>) -> Prepared {
        self.prior = prior;
        self
    }

    /// Whether this is a `304 Not Modified`, archived as a server-not-modified revisit.
    pub fn is_not_modified(&self) -> bool {
        self.not_modified
    }

    /// The URL fetched.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// When the fetch began.
    pub fn date(&self) -> SystemTime {
        self.date
    }

    /// The payload's digest (`WARC-Payload-Digest`).
    pub fn payload_digest(&self) -> Digest {
        self.digest
    }

    /// Bytes the full records take (compressed).
    pub fn len(&self) -> usize {
        self.records.iter().map(|r| r.member.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// A record serialised into its own gzip member, not yet written to a file.
#[derive(Debug)]
pub(super) struct Encoded {
    pub id: RecordId,
    pub kind: RecordType,
    pub date: String,
    pub payload_digest: Option<Digest>,
    pub member: Vec<u8>,
}

/// Serialises `fields` + `Content-Type`, digests and `Content-Length` + the block (given in parts) into one gzip
/// member. `payload` is the block's payload (digested for `WARC-Payload-Digest`) when the record has one.
pub(super) fn encode(
    kind: RecordType,
    id: RecordId,
    mut fields: WarcFields,
    content_type: &str,
    block: &[&[u8]],
    payload_digest: Option<Digest>,
    level: u32,
) -> Result<Encoded, WarcError> {
    let mut h = Sha1::new();
    let mut len = 0u64;
    for part in block {
        h.update(part);
        len += part.len() as u64;
    }
    fields.push("Content-Type", content_type)?;
    fields.push("WARC-Block-Digest", h.finish().label())?;
    if let Some(d) = payload_digest {
        fields.push("WARC-Payload-Digest", d.label())?;
    }
    let date = fields.get("WARC-Date").unwrap_or_default().to_string();
    let head = fields.encode(len);
    let mut parts: Vec<&[u8]> = Vec::with_capacity(block.len() + 2);
    parts.push(&head);
    parts.extend_from_slice(block);
    parts.push(b"\r\n\r\n");
    let member = gzip_member(&parts, level)?;
    Ok(Encoded {
        id,
        kind,
        date,
        payload_digest,
        member,
    })
}

fn common_fields(
    kind: RecordType,
    id: &RecordId,
    date: SystemTime,
    url: &str,
    ip: Option<IpAddr>,
    protocol: Option<&str>,
) -> Result<WarcFields, WarcError> {
    let mut f = WarcFields::new(kind, id, date);
    f.push_uri("WARC-Target-URI", url)?;
    if let Some(ip) = ip {
        f.push("WARC-IP-Address", ip.to_string())?;
    }
    if let Some(p) = protocol {
        f.push("WARC-Protocol", p)?;
    }
    Ok(f)
}

/// The request record of a pair, linked to `response_id`.
fn encode_request(
    req: &RequestHead,
    id: RecordId,
    response_id: &RecordId,
    url: &str,
    date: SystemTime,
    ip: Option<IpAddr>,
    level: u32,
) -> Result<Encoded, WarcError> {
    let protocol = req.version().warc_protocol();
    let mut f = common_fields(RecordType::Request, &id, date, url, ip, protocol)?;
    f.push("WARC-Concurrent-To", response_id.as_str())?;
    let head = req.to_bytes()?;
    // A GET has no body: the payload is empty.
    encode(
        RecordType::Request,
        id,
        f,
        HTTP_REQUEST,
        &[&head],
        Some(Sha1::of(b"")),
        level,
    )
}

/// The response record (and request record, when given) of a capture, response first as Heritrix writes them.
pub(super) fn encode_capture(
    c: &Capture<'_>,
    payload_digest: Digest,
    level: u32,
) -> Result<Vec<Encoded>, WarcError> {
    let id = RecordId::random()?;
    let req_id = c.request.map(|_| RecordId::random()).transpose()?;
    let protocol = c.response.version.warc_protocol();
    let mut f = common_fields(RecordType::Response, &id, c.date, c.url, c.ip, protocol)?;
    if let Some(r) = &req_id {
        f.push("WARC-Concurrent-To", r.as_str())?;
    }
    if let Some(t) = c.truncated {
        f.push("WARC-Truncated", t.as_str())?;
    }
    let head = c.response.to_archived_bytes()?;
    let mut out = vec![encode(
        RecordType::Response,
        id.clone(),
        f,
        HTTP_RESPONSE,
        &[&head, c.body],
        Some(payload_digest),
        level,
    )?];
    if let (Some(req), Some(req_id)) = (c.request, req_id) {
        out.push(encode_request(
            req, req_id, &id, c.url, c.date, c.ip, level,
        )?);
    }
    Ok(out)
}

/// The revisit record (and request record, when given). No `WARC-Truncated`: WARC 1.1 asks for `length` on an
/// identical-digest revisit, but warcio writes its own revisits without it and reads a revisit's block as headers
/// only either way.
pub(super) fn encode_revisit(r: &Revisit<'_>, level: u32) -> Result<Vec<Encoded>, WarcError> {
    let id = RecordId::random()?;
    let req_id = r.request.map(|_| RecordId::random()).transpose()?;
    let protocol = r.response.version.warc_protocol();
    let mut f = common_fields(RecordType::Revisit, &id, r.date, r.url, r.ip, protocol)?;
    if let Some(q) = &req_id {
        f.push("WARC-Concurrent-To", q.as_str())?;
    }
    f.push("WARC-Profile", r.of.profile())?;
    if let Some(to) = r.refers_to {
        if let Some(id) = &to.record_id {
            f.push("WARC-Refers-To", id.as_str())?;
        }
        f.push_uri("WARC-Refers-To-Target-URI", &to.target_uri)?;
        f.push("WARC-Refers-To-Date", to.date.as_str())?;
    }
    let head = r.response.to_archived_bytes()?;
    let mut out = vec![encode(
        RecordType::Revisit,
        id.clone(),
        f,
        HTTP_RESPONSE,
        &[&head],
        r.of.payload_digest(),
        level,
    )?];
    if let (Some(req), Some(req_id)) = (r.request, req_id) {
        out.push(encode_request(
            req, req_id, &id, r.url, r.date, r.ip, level,
        )?);
    }
    Ok(out)
}

/// The metadata record of a page.
pub(super) fn encode_metadata(m: &Metadata<'_>, level: u32) -> Result<Encoded, WarcError> {
    let id = RecordId::random()?;
    let mut f = WarcFields::new(RecordType::Metadata, &id, m.date);
    f.push_uri("WARC-Target-URI", m.url)?;
    f.push("WARC-Concurrent-To", m.about.as_str())?;
    f.push("WARC-Refers-To", m.about.as_str())?;
    let mut block = Vec::with_capacity(64 * (m.outlinks.len() + m.fields.len()));
    for link in m.outlinks {
        let link = strip_userinfo(link);
        if link.is_empty() || link.chars().any(|c| c.is_whitespace() || c.is_control()) {
            continue;
        }
        block.extend_from_slice(b"outlink: ");
        block.extend_from_slice(link.as_bytes());
        block.extend_from_slice(b"\r\n");
    }
    for (name, value) in m.fields {
        block.extend_from_slice(&warc_fields_line(name, value)?);
    }
    encode(
        RecordType::Metadata,
        id,
        f,
        WARC_FIELDS,
        &[&block],
        None,
        level,
    )
}

/// One `name: value` line of an `application/warc-fields` block.
pub(super) fn warc_fields_line(name: &str, value: &str) -> Result<Vec<u8>, WarcError> {
    let ok = !name.is_empty()
        && !name
            .chars()
            .any(|c| c == ':' || c.is_whitespace() || c.is_control())
        && !value.chars().any(|c| c.is_control());
    if !ok {
        return Err(WarcError::InvalidField(format!("{name}: {value:?}")));
    }
    Ok(format!("{name}: {value}\r\n").into_bytes())
}

thread_local! {
    /// One deflate state per thread and level, reset between members: a new compressor per record would allocate
    /// and clear its tables (hundreds of KiB) every time.
    static DEFLATE: std::cell::RefCell<Option<(u32, flate2::Compress)>> = const { std::cell::RefCell::new(None) };
}

/// The gzip header of every member: no name, no time, unknown OS.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Members smaller than this are stored without compression: a request record gains little from it, and a
/// deflate state costs a reset of its tables per member.
const STORED_BELOW: usize = 1024;

/// `parts` as one gzip member (RFC 1952) at `level`.
pub(super) fn gzip_member(parts: &[&[u8]], level: u32) -> Result<Vec<u8>, WarcError> {
    let size: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(size / 3 + 64);
    out.extend_from_slice(&GZIP_HEADER);
    let mut crc = flate2::Crc::new();
    if size < STORED_BELOW
        && let Ok(len) = u16::try_from(size)
    {
        // One final stored deflate block (RFC 1951 3.2.4): header bits, LEN, NLEN, the bytes.
        out.push(1);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        for p in parts {
            crc.update(p);
            out.extend_from_slice(p);
        }
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        return Ok(out);
    }
    DEFLATE.with(|cell| -> Result<(), WarcError> {
        let mut slot = cell.borrow_mut();
        match slot.as_mut() {
            Some((l, c)) if *l == level => c.reset(),
            _ => {
                *slot = Some((
                    level,
                    flate2::Compress::new(flate2::Compression::new(level), false),
                ))
            }
        }
        let Some((_, c)) = slot.as_mut() else {
            return Err(WarcError::Failed);
        };
        for p in parts {
            crc.update(p);
            deflate_into(c, p, &mut out, flate2::FlushCompress::None)?;
        }
        deflate_into(c, &[], &mut out, flate2::FlushCompress::Finish)
    })?;
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    Ok(out)
}

/// Feeds `input` to the deflate state, growing `out` as needed; with `Finish`, until the stream ends.
fn deflate_into(
    c: &mut flate2::Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: flate2::FlushCompress,
) -> Result<(), WarcError> {
    let finish = flush == flate2::FlushCompress::Finish;
    loop {
        if out.capacity() - out.len() < 1024 {
            out.reserve(out.capacity().max(4096));
        }
        let before = c.total_in();
        let status = c
            .compress_vec(input, out, flush)
            .map_err(|e| WarcError::Encode(std::io::Error::other(e)))?;
        let used = usize::try_from(c.total_in() - before).unwrap_or(input.len());
        input = &input[used.min(input.len())..];
        if finish {
            if status == flate2::Status::StreamEnd {
                return Ok(());
            }
        } else if input.is_empty() {
            return Ok(());
        }
    }
}
