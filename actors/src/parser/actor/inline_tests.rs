//! [`Parser::try_inline`] as a fetcher calls it, with the scheduler and the supervisor standing in as recorders: a
//! small page is parsed and its end sent at once; with the bound at 0, a larger body, or a URL marked to freeze the
//! parser it is handed back untouched for the parser threads; a panic is contained and told to both as a parser's.

use super::*;
use crate::parser::logic::tests::{HTML, job, resp, settings};
use crate::recorder::{Recorder, Seen, until};
use crawl_core::frontier::JobKind;
use std::sync::Mutex;

/// A fetcher's parser with `inline_max_bytes` and `faults`, and what it sends.
fn parser(inline_max_bytes: usize, faults: &str) -> (Parser, Arc<Mutex<Seen>>) {
    let (addr, seen) = Recorder::start_new();
    let mut s = settings(None, 100);
    s.inline_max_bytes = inline_max_bytes;
    let p = Parser::new(
        crate::live::Live::new(s),
        addr.clone().recipient(),
        addr.recipient(),
        Faults::parse(faults).unwrap(),
        Arc::new(PoolRestarts::new(
            Duration::from_millis(1),
            Duration::from_millis(2),
        )),
        Arc::new(Busy::default()),
    );
    (p, seen)
}

fn page(url: &str, body: &str) -> Parse {
    Parse {
        job: job(url, JobKind::Page, 0),
        response: resp(200, &[("content-type", "text/html")], body),
        page_url: None,
        dns: None,
    }
}

/// Waits until the recorder holds `done` job ends and `failed` failures (or a few seconds pass).
async fn settle(seen: &Arc<Mutex<Seen>>, done: usize, failed: usize) {
    until(|| {
        let s = seen.lock().unwrap();
        s.done.len() >= done && s.failed.len() >= failed
    })
    .await;
}

#[actix_rt::test]
async fn a_small_page_is_parsed_on_the_calling_thread_and_its_end_sent() {
    let (p, seen) = parser(4096, "");
    assert!(
        p.try_inline(page("http://a.test/", HTML)).is_none(),
        "taken"
    );
    settle(&seen, 1, 0).await;
    let s = seen.lock().unwrap();
    assert_eq!(s.done.len(), 1);
    assert_eq!(s.done[0].url, "http://a.test/");
    match &s.done[0].result {
        JobResult::Page(out) => {
            assert_eq!(out.title.as_deref(), Some("Home page"));
            assert_eq!(out.links.len(), 3, "{:?}", out.links);
        }
        other => panic!("not a page: {other:?}"),
    }
    assert!(s.failed.is_empty());
}

#[actix_rt::test]
async fn what_is_not_for_the_fetchers_thread_is_handed_back_untouched() {
    let frozen = "http://a.test/mark/frozen";
    for (bound, faults, url) in [
        // The bound 0 turns inline parsing off altogether: not even the fault hook runs on this thread.
        (0, "parser:/", "http://a.test/"),
        (HTML.len() - 1, "", "http://a.test/"),
        (4096, "parser/freeze:/mark/frozen", frozen),
    ] {
        let (p, seen) = parser(bound, faults);
        let back = p
            .try_inline(page(url, HTML))
            .unwrap_or_else(|| panic!("parsed inline with bound {bound}, faults {faults:?}"));
        assert_eq!(back.job.entry.url, url);
        assert_eq!(back.response.body, HTML.as_bytes());
        settle(&seen, 0, 0).await;
        let s = seen.lock().unwrap();
        assert!(s.done.is_empty() && s.failed.is_empty(), "nothing sent");
    }
}

#[actix_rt::test]
async fn a_panic_inline_is_contained_and_told_as_a_parsers() {
    let (p, seen) = parser(4096, "parser:/poison/");
    assert!(p.try_inline(page("http://a.test/poison/1", HTML)).is_none());
    settle(&seen, 1, 1).await;
    {
        let s = seen.lock().unwrap();
        assert!(
            matches!(
                &s.done[..],
                [JobDone {
                    result: JobResult::Panicked {
                        stage: "parser",
                        ..
                    },
                    ..
                }]
            ),
            "{:?}",
            s.done.iter().map(|d| &d.result).collect::<Vec<_>>()
        );
        assert_eq!(s.failed.len(), 1);
        assert_eq!(s.failed[0].child, ChildId::Parser);
    }
    // The same parser goes on with the next page.
    assert!(p.try_inline(page("http://a.test/", HTML)).is_none());
    settle(&seen, 2, 1).await;
    assert!(matches!(
        seen.lock().unwrap().done[1].result,
        JobResult::Page(_)
    ));
}
