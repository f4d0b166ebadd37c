//! A fetch made ready for the archive (WARC) in the parser's thread: its `request` and `response` records are
//! encoded and compressed here, so that the one thread that owns the archive only appends bytes.

use crate::protocol::RawResponse;
use crate::protocol::{Archived, Job, JobResult};
use crawl_output::warc::{
    Capture, HttpHeaders, HttpVersion, Prepared, PriorCapture, RequestHead, ResponseHead,
    Truncation,
};

/// The archive's gzip level: fast, since every fetched body goes through it.
pub const ARCHIVE_LEVEL: u32 = 1;

/// Encodes the fetch of `job` as it was received (headers as sent and received, the body still in its
/// Content-Encoding). A `304 Not Modified` to a conditional request is a server-not-modified revisit; on a revisit
/// of the URL its last capture goes along, for the writer to make an unchanged payload a revisit of it. An answer
/// that cannot be written as an HTTP message is not archived (logged).
pub fn prepare(job: &Job, resp: &RawResponse, level: u32) -> Option<Prepared> {
    let version = match resp.version {
        http::Version::HTTP_09 => HttpVersion::Http09,
        http::Version::HTTP_10 => HttpVersion::Http10,
        http::Version::HTTP_2 => HttpVersion::Http2,
        http::Version::HTTP_3 => HttpVersion::Http3,
        _ => HttpVersion::Http11,
    };
    let headers = |map: &http::HeaderMap| -> HttpHeaders {
        map.iter()
            .map(|(n, v)| (n.as_str().as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    let request = match RequestHead::new(
        "GET",
        &job.entry.url,
        version,
        &headers(&resp.request_headers),
    ) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::debug!(url = %job.entry.url, error = %e, "request not archived");
            None
        }
    };
    let response = ResponseHead::new(version, resp.status, headers(&resp.headers));
    let capture = Capture {
        url: &job.entry.url,
        date: resp.sent_at,
        // Through a proxy the address is the proxy's, not the server's.
        ip: resp
            .remote_addr
            .filter(|_| resp.proxy.as_deref().is_none_or(|p| p == "direct"))
            .map(|a| a.ip()),
        request: request.as_ref(),
        response: &response,
        body: &resp.body,
        truncated: resp.truncated.then_some(Truncation::Length),
    };
    // A revisit: the URL's last full capture, which an unchanged payload or a 304 refers to.
    let prior = job
        .entry
        .prior
        .as_deref()
        .and_then(|p| p.capture.as_ref())
        .map(PriorCapture::of);
    let prepared = if resp.status == 304 && resp.conditional {
        Prepared::not_modified(&capture, prior, level)
    } else {
        Prepared::new(&capture, level).map(|p| p.with_prior(prior))
    };
    match prepared {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(url = %job.entry.url, error = %e, "fetch not archived");
            None
        }
    }
}

/// What goes to the archive with a job's result: the prepared records and a page's outlinks (links and
/// requisites).
pub fn archived(prepared: Prepared, result: &JobResult) -> Archived {
    let outlinks = match result {
        JobResult::Page(p) => p
            .links
            .iter()
            .chain(&p.embeds)
            .map(|l| l.url.clone())
            .collect(),
        _ => Vec::new(),
    };
    Archived { prepared, outlinks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::logic::tests::{job, resp};
    use crawl_core::frontier::JobKind;
    use crawl_core::recrawl::{Capture, Prior};
    use crawl_output::warc::{PayloadDedup, RecordType, WarcWriter, WarcWriterConfig};

    /// A revisit of `url` whose last capture had the payload `body`.
    fn revisit(url: &str, body: &[u8]) -> Job {
        let mut j = job(url, JobKind::Page, 0);
        j.entry.prior = Some(Box::new(Prior {
            visits: 1,
            fetched_at_ms: 1_796_190_000_250,
            validators: Default::default(),
            capture: Some(Capture {
                fetched_at_ms: 1_796_190_000_250,
                digest: crawl_core::recrawl::DigestKey::of(
                    &crawl_output::warc::Sha1::of(body).label(),
                ),
            }),
            interval_ds: 36_000,
        }));
        j
    }

    #[test]
    fn a_revisit_is_archived_against_the_prior_capture() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = WarcWriterConfig::new(dir.path(), "t");
        cfg.hostname = Some("h".into());
        let mut w = WarcWriter::open(cfg, None).unwrap();
        let mut dedup = PayloadDedup::new(16);
        let url = "http://a.test/p";
        let body = "<html>same</html>";

        let mut not_modified = resp(304, &[("etag", "\"v1\"")], "");
        not_modified.conditional = true;
        let p = prepare(&revisit(url, body.as_bytes()), &not_modified, 1).unwrap();
        assert!(p.is_not_modified());
        let written = w.append_prepared(p, Some(&mut dedup)).unwrap();
        assert_eq!(written.response.kind, RecordType::Revisit);

        // A 304 that answered no conditional request is archived as what it is: a response.
        let unexpected = resp(304, &[], "");
        let p = prepare(&job(url, JobKind::Page, 0), &unexpected, 1).unwrap();
        assert!(!p.is_not_modified());
        let written = w.append_prepared(p, Some(&mut dedup)).unwrap();
        assert_eq!(written.response.kind, RecordType::Response);

        // An unchanged 200 refers to the prior capture though the table never saw it.
        let same = resp(200, &[("content-type", "text/html")], body);
        let p = prepare(&revisit(url, body.as_bytes()), &same, 1).unwrap();
        let written = w.append_prepared(p, Some(&mut dedup)).unwrap();
        assert_eq!(written.response.kind, RecordType::Revisit);
        assert_eq!(
            written.response.payload_digest.map(|d| d.label()),
            Some(crawl_output::warc::Sha1::of(body.as_bytes()).label())
        );
        // A changed one is archived in full.
        let changed = resp(200, &[("content-type", "text/html")], "<html>new</html>");
        let p = prepare(&revisit(url, body.as_bytes()), &changed, 1).unwrap();
        let written = w.append_prepared(p, Some(&mut dedup)).unwrap();
        assert_eq!(written.response.kind, RecordType::Response);
    }
}
