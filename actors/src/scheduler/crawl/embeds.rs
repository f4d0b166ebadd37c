//! Page requisites (`crawl.embeds`) and the per-page link cap: a requisite is queued as an embed job at its page's
//! depth when it is in the requisites' scope (excluded ones are recorded like excluded links), a fetched record of
//! an embed job says `kind: "embed"`, and what the cap cut from a page is counted in a metric and one log line.

use crawl_core::frontier::{Entry, JobKind};
use crawl_core::record::{Record, RecordKind};
use crawl_core::scope::ScopeVerdict;
use crawl_observability::metrics::metrics;
use crawl_observability::redact::redact_url;

/// The job a requisite with this verdict becomes.
pub(super) fn embed_kind(verdict: ScopeVerdict) -> JobKind {
    match verdict {
        ScopeVerdict::InScope => JobKind::Embed,
        other => JobKind::from_verdict(other),
    }
}

/// The record of a fetched URL says what it was fetched as.
pub(super) fn mark_kind(entry: &Entry, record: &mut Record) {
    if entry.kind == JobKind::Embed {
        record.kind = Some(RecordKind::Embed);
    }
}

/// What the per-page cap cut from a page: counted on its record, in `crawl_links_dropped_total` and in one log
/// line.
pub(super) fn links_dropped(url: &str, links: u32, embeds: u32) -> u32 {
    let total = links.saturating_add(embeds);
    if total > 0 {
        metrics().links_dropped("link", u64::from(links));
        metrics().links_dropped("embed", u64::from(embeds));
        tracing::info!(
            url = %redact_url(url),
            links_dropped = links,
            embeds_dropped = embeds,
            "references over the per-page cap dropped"
        );
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::record::Reason;

    #[test]
    fn a_requisite_in_scope_is_an_embed_job_and_its_record_says_so() {
        assert_eq!(embed_kind(ScopeVerdict::InScope), JobKind::Embed);
        assert_eq!(
            embed_kind(ScopeVerdict::OutOfScope),
            JobKind::from_verdict(ScopeVerdict::OutOfScope)
        );
        let mut embed = Entry::page("http://a.test/i.png", 2, None);
        embed.kind = JobKind::Embed;
        let mut r = Record::terminal(&embed.url, 2, None, Reason::Timeout, None);
        mark_kind(&embed, &mut r);
        assert_eq!(r.kind, Some(RecordKind::Embed));
        let page = Entry::page("http://a.test/", 0, None);
        let mut r = Record::terminal(&page.url, 0, None, Reason::Timeout, None);
        mark_kind(&page, &mut r);
        assert_eq!(r.kind, None);
        assert_eq!(links_dropped("http://a.test/", 3, 2), 5);
        assert_eq!(links_dropped("http://a.test/", 0, 0), 0);
        assert_eq!(links_dropped("http://a.test/", u32::MAX, 1), u32::MAX);
    }
}
