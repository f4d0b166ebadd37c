//! URLs an operator adds to the running crawl (control API): each is judged like a link (scope, filters, depth,
//! traps, robots.txt when its rules are known) and staged; the answer waits for the group commit that makes it
//! durable, which tells queued (new) from known. With `force`, known URLs that are done are queued again through
//! the store ([`crawl_core::frontier::FrontierStore::refetch`]) before the answer goes.
//!
//! A request is identified by a token the caller chose; answers come back through [`Adds::take_answers`].

use crate::protocol::{UrlAnswer, UrlVerdict};
use crawl_core::frontier::{Added, Discovered};
use std::collections::HashSet;

/// One request waiting for its answer.
#[derive(Debug)]
struct Waiter {
    token: u64,
    answers: Vec<UrlAnswer>,
    /// Answers that wait for the commit: (index in `answers`, canonical URL).
    pending: Vec<(usize, String)>,
    /// Queue known URLs again.
    force: bool,
    /// With `force`: what to ask the store to queue again (canonical URL, host, depth), by index.
    refetch: Vec<(usize, Discovered)>,
    /// The store was asked to queue `refetch` again.
    asked: bool,
}

/// Requests waiting for commits and re-fetches.
#[derive(Debug, Default)]
pub(super) struct Adds {
    /// Staged, not committed yet.
    staged: Vec<Waiter>,
    /// In the commit in flight.
    committing: Vec<Waiter>,
    /// Waiting for the store to queue known URLs again.
    refetching: Vec<Waiter>,
    /// Answered.
    ready: Vec<(u64, Vec<UrlAnswer>)>,
}

impl Adds {
    /// A request whose URLs were judged: `answers` holds a verdict for each URL (Queued for those staged, to be
    /// settled by the commit), `staged` the (index, canonical URL, what was staged) of the ones that wait.
    pub fn add(
        &mut self,
        token: u64,
        answers: Vec<UrlAnswer>,
        staged: Vec<(usize, Discovered)>,
        force: bool,
    ) {
        let w = Waiter {
            token,
            answers,
            pending: staged.iter().map(|(i, d)| (*i, d.url.clone())).collect(),
            force,
            refetch: if force { staged } else { Vec::new() },
            asked: false,
        };
        if w.pending.is_empty() {
            self.ready.push((w.token, w.answers));
        } else {
            self.staged.push(w);
        }
    }

    /// The staged requests went into the commit now in flight.
    pub fn committing(&mut self) {
        self.committing.append(&mut self.staged);
    }

    /// The commit in flight landed; `added` are the URLs it queued (new ones). The others were known: answered
    /// so, or, with `force`, to be queued again ([`take_refetch`](Self::take_refetch)).
    pub fn committed(&mut self, added: &[Added]) {
        let new: HashSet<&str> = added.iter().map(|a| a.entry.url.as_str()).collect();
        for mut w in std::mem::take(&mut self.committing) {
            let mut known = HashSet::new();
            for (i, url) in &w.pending {
                let v = if new.contains(url.as_str()) {
                    UrlVerdict::Queued
                } else {
                    known.insert(*i);
                    UrlVerdict::Known
                };
                w.answers[*i].verdict = v;
            }
            w.pending.clear();
            w.refetch.retain(|(i, _)| known.contains(i));
            if w.force && !w.refetch.is_empty() {
                self.refetching.push(w);
            } else {
                self.ready.push((w.token, w.answers));
            }
        }
    }

    /// The commit in flight failed: its requests are answered with `error` (the crawl stops on a failed commit).
    pub fn failed(&mut self, error: &str) {
        for mut w in std::mem::take(&mut self.committing) {
            for (i, _) in &w.pending {
                w.answers[*i].verdict = UrlVerdict::Invalid(format!("not queued: {error}"));
            }
            self.ready.push((w.token, w.answers));
        }
    }

    /// Known URLs to queue again, by request token (each request's once).
    pub fn take_refetch(&mut self) -> Vec<(u64, Vec<Discovered>)> {
        self.refetching
            .iter_mut()
            .filter(|w| !w.asked)
            .map(|w| {
                w.asked = true;
                (w.token, w.refetch.iter().map(|(_, d)| d.clone()).collect())
            })
            .collect()
    }

    /// The store queued `queued` again for request `token` (Err: it could not): those are answered queued, the
    /// rest stay known (pending already).
    pub fn refetched(&mut self, token: u64, queued: Result<&[Added], String>) {
        let Some(at) = self.refetching.iter().position(|w| w.token == token) else {
            return;
        };
        let mut w = self.refetching.swap_remove(at);
        match queued {
            Ok(queued) => {
                let again: HashSet<&str> = queued.iter().map(|a| a.entry.url.as_str()).collect();
                for (i, d) in &w.refetch {
                    if again.contains(d.url.as_str()) {
                        w.answers[*i].verdict = UrlVerdict::Queued;
                    }
                }
            }
            Err(e) => {
                for (i, _) in &w.refetch {
                    w.answers[*i].verdict = UrlVerdict::Invalid(format!("not queued again: {e}"));
                }
            }
        }
        self.ready.push((w.token, w.answers));
    }

    /// Requests answered, by token.
    pub fn take_answers(&mut self) -> Vec<(u64, Vec<UrlAnswer>)> {
        std::mem::take(&mut self.ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crawl_core::frontier::{Entry, JobKind};

    fn answer(url: &str, v: UrlVerdict) -> UrlAnswer {
        UrlAnswer {
            url: url.into(),
            canonical: Some(url.into()),
            verdict: v,
        }
    }

    fn staged(url: &str) -> Discovered {
        Discovered {
            url: url.into(),
            host: "a.test".into(),
            depth: 0,
            parent: None,
            redirect_chain: Vec::new(),
            kind: JobKind::Page,
        }
    }

    fn added(url: &str) -> Added {
        Added {
            entry: Entry::page(url, 0, None),
            host: "a.test".into(),
        }
    }

    #[test]
    fn the_commit_tells_queued_from_known() {
        let mut a = Adds::default();
        let answers = vec![
            answer("http://a.test/new", UrlVerdict::Queued),
            answer(
                "http://b.test/",
                UrlVerdict::Excluded(crawl_core::record::Reason::Scope),
            ),
            answer("http://a.test/old", UrlVerdict::Queued),
        ];
        a.add(
            7,
            answers,
            vec![
                (0, staged("http://a.test/new")),
                (2, staged("http://a.test/old")),
            ],
            false,
        );
        assert!(a.take_answers().is_empty(), "waits for its commit");
        a.committed(&[]);
        assert!(
            a.take_answers().is_empty(),
            "a commit that did not carry it"
        );
        a.committing();
        a.committed(&[added("http://a.test/new")]);
        let got = a.take_answers();
        assert_eq!(got.len(), 1);
        let (token, answers) = &got[0];
        assert_eq!(*token, 7);
        let v: Vec<_> = answers.iter().map(|a| a.verdict.clone()).collect();
        assert_eq!(
            v,
            [
                UrlVerdict::Queued,
                UrlVerdict::Excluded(crawl_core::record::Reason::Scope),
                UrlVerdict::Known
            ]
        );
        assert!(a.staged.is_empty() && a.committing.is_empty() && a.refetching.is_empty());
    }

    #[test]
    fn force_queues_known_urls_again_through_the_store() {
        let mut a = Adds::default();
        a.add(
            1,
            vec![
                answer("http://a.test/done", UrlVerdict::Queued),
                answer("http://a.test/pending", UrlVerdict::Queued),
            ],
            vec![
                (0, staged("http://a.test/done")),
                (1, staged("http://a.test/pending")),
            ],
            true,
        );
        a.committing();
        a.committed(&[]);
        let asks = a.take_refetch();
        assert_eq!(asks.len(), 1);
        assert_eq!(asks[0].1.len(), 2);
        assert!(a.take_refetch().is_empty(), "asked once");
        a.refetched(1, Ok(&[added("http://a.test/done")]));
        let got = a.take_answers();
        let v: Vec<_> = got[0].1.iter().map(|a| a.verdict.clone()).collect();
        assert_eq!(v, [UrlVerdict::Queued, UrlVerdict::Known]);
        // Nothing staged: answered at once.
        a.add(
            2,
            vec![answer("x", UrlVerdict::Invalid("bad".into()))],
            Vec::new(),
            true,
        );
        assert_eq!(a.take_answers().len(), 1);
    }
}
