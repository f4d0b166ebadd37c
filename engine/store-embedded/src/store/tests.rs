mod contract;
mod operator;
mod schedule;

use super::*;
use crawl_core::frontier::{Discovered, JobKind};

#[test]
fn leftover_of_an_interrupted_creation_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("frontier.redb.creating"), vec![0u8; 73728]).unwrap();
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    assert!(f.recover().unwrap().fresh);
    assert!(!dir.path().join("frontier.redb.creating").exists());
}

#[test]
fn second_open_of_same_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _f = EmbeddedFrontier::open(dir.path()).unwrap();
    let err = EmbeddedFrontier::open(dir.path()).unwrap_err();
    assert!(matches!(err, FrontierError::Locked(_)), "{err}");
}

/// The error `recover` gives for a store whose meta table holds only `key = value`.
fn refusal(key: &str, value: u64) -> String {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::create(dir.path().join("frontier.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META).unwrap().insert(key, value).unwrap();
        txn.commit().unwrap();
    }
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    f.recover().unwrap_err().to_string()
}

#[test]
fn a_store_of_an_older_format_is_refused_clearly() {
    let err = refusal(key::OLD_NEXT_SEQ, 5);
    assert!(err.contains("older crawl-engine"), "{err}");
    let err = refusal(key::FORMAT, 2);
    assert!(
        err.contains("format 2") && err.contains("new data_dir"),
        "{err}"
    );
}

#[test]
fn filter_is_rebuilt_in_the_background_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        discover(
            &mut f,
            (0..1000)
                .map(|i| page(format!("http://a/{i}"), None))
                .collect(),
        );
    }
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    let rec = f.recover().unwrap();
    assert_eq!(rec.counters.known, 1000);
    assert!(f.rebuild.is_some());
    while f.idle_work() {}
    assert!(f.rebuild.is_none());
    assert!(f.bloom.may_contain(url_fp("http://a/999")));
}

fn page(url: String, parent: Option<(UrlRef, String)>) -> Discovered {
    Discovered {
        url,
        host: "a".into(),
        depth: 1,
        parent,
        redirect_chain: vec![],
        kind: JobKind::Page,
    }
}

fn discover(f: &mut EmbeddedFrontier, urls: Vec<Discovered>) -> Committed {
    f.commit(Batch {
        discovered: urls,
        ..Batch::default()
    })
    .unwrap()
}

#[test]
fn known_urls_are_found_in_runs_after_reopen_and_runs_merge_by_size() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000u64;
    let url = |i: u64| format!("http://a/p/{i}");
    let parent_ref;
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        let first = discover(&mut f, vec![page("http://a/".into(), None)]);
        parent_ref = first.added[0].entry.id;
        for batch in 0..3 {
            let urls = (batch * n..(batch + 1) * n)
                .map(|i| page(url(i), Some((parent_ref, "http://a/".into()))))
                .collect();
            let c = discover(&mut f, urls);
            assert_eq!(c.added.len() as u64, n);
            // 1 + 20,000 pairs flushed; two runs of about equal size merge; a run more than twice as large as
            // the new one stays.
            let expected = [vec![n + 1], vec![2 * n + 1], vec![2 * n + 1, n]];
            assert_eq!(f.index.counts(), expected[batch as usize]);
        }
        let c = discover(
            &mut f,
            (3 * n..3 * n + 500).map(|i| page(url(i), None)).collect(),
        );
        assert_eq!(c.added.len(), 500);
        assert_eq!(
            f.index.counts(),
            vec![2 * n + 1, n],
            "500 pairs stay in memory"
        );
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.unwrap().file_name().into_string().ok())
            .filter(|n| n.ends_with(".run"))
            .collect();
        assert_eq!(files.len(), 2, "merged-away runs are deleted: {files:?}");
    }
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    let rec = f.recover().unwrap();
    assert_eq!(rec.counters.known, 3 * n + 501);
    assert_eq!(f.index.counts(), vec![2 * n + 1, n]);
    assert_eq!(
        f.index.in_memory(),
        500,
        "only the rows after the runs are read back"
    );
    // Before the filter is rebuilt every link is looked up: in memory (the rows after the runs, read back), then
    // in the runs.
    for i in [0, 1, n - 1, n, 2 * n + 7, 3 * n - 1, 3 * n, 3 * n + 499] {
        assert!(f.is_known(&url(i)).unwrap(), "{i}");
    }
    assert!(!f.is_known(&url(3 * n + 500)).unwrap());
    let again: Vec<_> = (0..3 * n + 501).map(|i| page(url(i), None)).collect();
    let c = discover(&mut f, again);
    assert_eq!((c.added.len(), c.duplicates), (1, 3 * n + 500));
    assert_eq!(c.added[0].entry.url, url(3 * n + 500));
    // The queue still gives each URL with its parent, read through the parent's row.
    let got = f.next_urls(host_fp("a"), None, 3).unwrap();
    assert_eq!(got[0].url, "http://a/");
    assert_eq!(got[1].url, url(0));
    assert_eq!(got[1].parent.as_deref(), Some("http://a/"));
    assert_eq!(got[1].parent_ref, Some(parent_ref));
    while f.idle_work() {}
    assert!(f.bloom.may_contain(url_fp(&url(2 * n))));
    // The rebuilt filter holds the fingerprints of both runs and of the pairs in memory.
    for i in (0..3 * n + 500).step_by(7) {
        assert!(f.bloom.may_contain(url_fp(&url(i))), "{i}");
    }
}

#[test]
fn a_url_sharing_a_fingerprint_with_another_is_still_new() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    f.recover().unwrap();
    let c = discover(&mut f, vec![page("http://a/1".into(), None)]);
    let row = c.added[0].entry.id.key;
    // Make the index say that http://a/2's fingerprint belongs to http://a/1's row too.
    f.index.add(url_fp("http://a/2"), row);
    f.index.settle(None);
    f.bloom.insert(url_fp("http://a/2"));
    assert!(!f.is_known("http://a/2").unwrap());
    let c = discover(&mut f, vec![page("http://a/2".into(), None)]);
    assert_eq!((c.added.len(), c.duplicates), (1, 0));
    assert!(f.is_known("http://a/2").unwrap() && f.is_known("http://a/1").unwrap());
    let c = discover(&mut f, vec![page("http://a/2".into(), None)]);
    assert_eq!((c.added.len(), c.duplicates), (0, 1));
}

#[test]
fn stray_run_files_are_removed_and_a_missing_listed_run_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        let urls = (0..crate::known::FLUSH_AT)
            .map(|i| page(format!("http://a/{i}"), None))
            .collect();
        discover(&mut f, urls);
        assert_eq!(f.index.counts(), vec![crate::known::FLUSH_AT as u64]);
    }
    // A run written for a commit that never happened, and a half-written one.
    std::fs::write(dir.path().join("fp-9.run"), b"left by a crash").unwrap();
    std::fs::write(dir.path().join("fp-10.run.tmp"), b"half").unwrap();
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        assert!(!dir.path().join("fp-9.run").exists());
        assert!(!dir.path().join("fp-10.run.tmp").exists());
        assert!(f.is_known("http://a/77").unwrap());
    }
    std::fs::remove_file(crate::fpruns::run_path(dir.path(), 1)).unwrap();
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    let err = f.recover().unwrap_err().to_string();
    assert!(err.contains("fp-1.run"), "{err}");
}

#[test]
fn a_commit_that_fails_leaves_no_url_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    f.recover().unwrap();
    let urls = || {
        (0..crate::known::FLUSH_AT)
            .map(|i| page(format!("http://a/{i}"), None))
            .collect()
    };
    // The run this commit has to write cannot be created: the commit fails.
    let blocker = dir.path().join("fp-1.run.tmp");
    std::fs::create_dir(&blocker).unwrap();
    let err = f
        .commit(Batch {
            discovered: urls(),
            ..Batch::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("fp-1.run.tmp"), "{err}");
    assert!(
        !f.is_known("http://a/5").unwrap(),
        "nothing of it is stored"
    );
    std::fs::remove_dir(&blocker).unwrap();
    let c = discover(&mut f, urls());
    assert_eq!(c.added.len(), crate::known::FLUSH_AT);
    assert_eq!(f.index.counts(), vec![crate::known::FLUSH_AT as u64]);
    assert!(f.is_known("http://a/5").unwrap());
}
