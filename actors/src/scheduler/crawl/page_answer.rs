//! A page's answer as a record, and what it leads to: a redirect target to follow (within the loop and length
//! limits), the requisites and links of a 2xx page, or nothing more (an error body, a non-2xx answer, a redirect
//! given up on).

use super::embeds;
use crate::protocol::{FoundLink, PageOutcome};
use crawl_core::frontier::Entry;
use crawl_core::record::{Outcome, Reason, Record, now_rfc3339};

/// What a recorded answer leads to.
#[derive(Debug, PartialEq)]
pub(super) enum Then {
    /// Nothing more.
    Done,
    /// A redirect to follow, with the chain that led to it (this URL last).
    Follow(FoundLink, Vec<String>),
    /// The requisites and links of a 2xx page.
    Admit {
        embeds: Vec<FoundLink>,
        links: Vec<FoundLink>,
    },
}

/// The record of `entry`'s answer `out` (not throttled, or out of retries), and what it leads to. Redirect chains
/// longer than `max_redirects` or back to a URL of the chain are recorded failed.
pub(super) fn record(entry: &Entry, out: PageOutcome, max_redirects: u32) -> (Record, Then) {
    let mut record = Record {
        url: entry.url.clone(),
        outcome: Outcome::Fetched,
        reason: None,
        status: Some(out.status),
        depth: entry.depth,
        parent: entry.parent.clone(),
        redirect_to: None,
        content_type: out.content_type,
        content_length: Some(out.content_length),
        links: Some(out.links_found),
        fetched_at: now_rfc3339(),
        elapsed_ms: Some(out.elapsed_ms),
        attempts: entry.tries(),
        http_version: Some(out.http_version),
        noindex: out.noindex,
        error: None,
        dns: None,
        proxy: out.proxy,
        trace_id: None,
        record_id: None,
        title: out.title,
        digest: out.digest,
        links_dropped: embeds::links_dropped(&entry.url, out.links_dropped, out.embeds_dropped),
        kind: None,
        revisit: None,
        warc: None,
    };
    if let Some((reason, detail)) = out.body_error {
        record.outcome = reason.outcome();
        record.reason = Some(reason);
        record.error = Some(detail);
        record.links = None;
        return (record, Then::Done);
    }
    if (300..400).contains(&out.status) {
        let then = match out.redirect_to {
            Some(Ok(target)) => {
                record.redirect_to = Some(target.url.clone());
                let mut chain = entry.redirect_chain.clone();
                chain.push(entry.url.clone());
                if chain.contains(&target.url) {
                    record.outcome = Outcome::Failed;
                    record.reason = Some(Reason::RedirectLoop);
                    record.error = Some(format!("redirect loop back to {}", target.url));
                    Then::Done
                } else if chain.len() as u32 > max_redirects {
                    record.outcome = Outcome::Failed;
                    record.reason = Some(Reason::TooManyRedirects);
                    record.error = Some(format!("more than {max_redirects} redirects"));
                    Then::Done
                } else {
                    Then::Follow(target, chain)
                }
            }
            Some(Err(unusable)) => {
                record.error = Some(unusable.to_string());
                Then::Done
            }
            None => Then::Done,
        };
        return (record, then);
    }
    let then = if (200..300).contains(&out.status) {
        Then::Admit {
            embeds: out.embeds,
            links: out.links,
        }
    } else {
        Then::Done
    };
    (record, then)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RedirectError;
    use crawl_core::canon::CanonError;
    use crawl_core::scope::ScopeVerdict;

    fn found(url: &str) -> FoundLink {
        FoundLink {
            url: url.to_owned(),
            host: "a.test".into(),
            verdict: ScopeVerdict::InScope,
        }
    }

    fn answer(status: u16) -> PageOutcome {
        PageOutcome {
            status,
            http_version: "HTTP/1.1".into(),
            content_length: 12,
            elapsed_ms: 7,
            ..PageOutcome::default()
        }
    }

    fn redirect_to(url: &str) -> PageOutcome {
        PageOutcome {
            redirect_to: Some(Ok(found(url))),
            ..answer(301)
        }
    }

    #[test]
    fn a_2xx_page_is_fetched_and_leads_to_its_requisites_and_links() {
        let entry = Entry::page("http://a.test/", 1, Some("http://a.test/up".into()));
        let out = PageOutcome {
            links_found: 1,
            links: vec![found("http://a.test/l")],
            embeds: vec![found("http://a.test/e.png")],
            links_dropped: 2,
            ..answer(200)
        };
        let (r, then) = record(&entry, out, 2);
        assert_eq!(
            (r.outcome, r.status, r.depth),
            (Outcome::Fetched, Some(200), 1)
        );
        assert_eq!(r.parent.as_deref(), Some("http://a.test/up"));
        assert_eq!(
            (r.links, r.links_dropped, r.elapsed_ms),
            (Some(1), 2, Some(7))
        );
        assert_eq!(
            then,
            Then::Admit {
                embeds: vec![found("http://a.test/e.png")],
                links: vec![found("http://a.test/l")]
            }
        );
        let (r, then) = record(&entry, answer(404), 2);
        assert_eq!((r.outcome, r.status), (Outcome::Fetched, Some(404)));
        assert_eq!(then, Then::Done, "links of non-2xx pages are not followed");
    }

    #[test]
    fn redirects_are_followed_until_a_loop_or_the_limit() {
        let mut entry = Entry::page("http://a.test/b", 0, None);
        entry.redirect_chain = vec!["http://a.test/a".into()];
        let (r, then) = record(&entry, redirect_to("http://a.test/c"), 2);
        assert_eq!(r.redirect_to.as_deref(), Some("http://a.test/c"));
        assert_eq!(
            then,
            Then::Follow(
                found("http://a.test/c"),
                vec!["http://a.test/a".into(), "http://a.test/b".into()]
            )
        );
        let (r, then) = record(&entry, redirect_to("http://a.test/a"), 2);
        assert_eq!(
            (r.outcome, r.reason),
            (Outcome::Failed, Some(Reason::RedirectLoop))
        );
        assert_eq!(then, Then::Done);
        let (r, then) = record(&entry, redirect_to("http://a.test/c"), 1);
        assert_eq!(r.reason, Some(Reason::TooManyRedirects));
        assert_eq!(r.error.as_deref(), Some("more than 1 redirects"));
        assert_eq!(then, Then::Done);
        let unusable = PageOutcome {
            redirect_to: Some(Err(RedirectError::unusable("http://", CanonError::NoHost))),
            ..answer(302)
        };
        let (r, then) = record(&entry, unusable, 2);
        assert_eq!(
            (r.outcome, r.error.as_deref(), r.redirect_to),
            (
                Outcome::Fetched,
                Some("unusable Location \"http://\": url has no host"),
                None
            )
        );
        assert_eq!(then, Then::Done);
    }

    #[test]
    fn a_body_error_makes_the_record_fail_without_links() {
        let entry = Entry::page("http://a.test/", 0, None);
        let out = PageOutcome {
            body_error: Some((Reason::TooLarge, "over 1 MiB".into())),
            links: vec![found("http://a.test/l")],
            ..answer(200)
        };
        let (r, then) = record(&entry, out, 2);
        assert_eq!(r.reason, Some(Reason::TooLarge));
        assert_eq!(r.outcome, Reason::TooLarge.outcome());
        assert_eq!((r.links, r.error.as_deref()), (None, Some("over 1 MiB")));
        assert_eq!(then, Then::Done);
    }
}
