//! The scheduler's part of page requisites (`crawl.embeds`) and of the per-page link cap: requisites are staged as
//! embed jobs at their page's depth (excluded ones are recorded like excluded links), fetched records of embed jobs
//! say `kind: "embed"`, and what the cap cut from a page is counted in a metric and one log line.

use super::*;
use crawl_core::record::RecordKind;

impl Crawl {
    /// Stages a page requisite found by `parent` (or a requisite's redirect target): an embed job when it is in the
    /// requisites' scope, else recorded without a fetch like an excluded link. The depth is the page's own.
    pub(super) fn admit_embed(
        &mut self,
        link: FoundLink,
        depth: u32,
        parent: Option<&Entry>,
        chain: Vec<String>,
    ) {
        let kind = match link.verdict {
            ScopeVerdict::InScope => JobKind::Embed,
            other => JobKind::from_verdict(other),
        };
        self.stage_discovered(link, depth, parent, chain, kind);
    }

    /// Stages a redirect target: a requisite's stays a requisite (same depth either way).
    pub(super) fn admit_target(&mut self, target: FoundLink, entry: &Entry, chain: Vec<String>) {
        if entry.kind == JobKind::Embed {
            self.admit_embed(target, entry.depth, Some(entry), chain);
        } else {
            self.admit(target, entry.depth, Some(entry), chain);
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
}
