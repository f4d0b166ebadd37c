//! Tests of the embedded frontier's own behaviour (the shared contract is in `contract.rs`).

use super::*;
use crate::frontier::JobKind;

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

#[test]
fn a_store_of_the_first_format_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::create(dir.path().join("frontier.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            meta.insert(key::OLD_NEXT_SEQ, 5).unwrap();
        }
        txn.commit().unwrap();
    }
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    let err = f.recover().unwrap_err().to_string();
    assert!(err.contains("older crawl-engine"), "{err}");
}

#[test]
fn filter_is_rebuilt_in_the_background_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
        f.recover().unwrap();
        let discovered = (0..1000)
            .map(|i| super::super::Discovered {
                url: format!("http://a/{i}"),
                host: "a".into(),
                depth: 0,
                parent: None,
                redirect_chain: vec![],
                kind: JobKind::Page,
            })
            .collect();
        f.commit(Batch {
            discovered,
            ..Batch::default()
        })
        .unwrap();
    }
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    let rec = f.recover().unwrap();
    assert_eq!(rec.counters.known, 1000);
    assert!(f.rebuild.is_some());
    while f.idle_work() {}
    assert!(f.rebuild.is_none());
    assert!(f.bloom.may_contain(url_fp("http://a/999")));
}

fn page(url: &str, parent: Option<&super::super::Added>) -> super::super::Discovered {
    super::super::Discovered {
        url: url.into(),
        host: "a".into(),
        depth: 0,
        parent: parent.map(|p| (p.entry.id, p.entry.url.clone())),
        redirect_chain: vec![],
        kind: JobKind::Page,
    }
}

#[test]
fn logged_urls_are_found_after_reopen_and_after_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_fp("a");
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap().merging_at(4);
        f.recover().unwrap();
        let c = f
            .commit(Batch {
                discovered: vec![page("http://a/1", None)],
                ..Batch::default()
            })
            .unwrap();
        let c2 = f
            .commit(Batch {
                discovered: vec![page("http://a/2", Some(&c.added[0]))],
                ..Batch::default()
            })
            .unwrap();
        assert_eq!(c2.added.len(), 1);
        assert_eq!(f.staged.len(), 2);
    }
    // Reopened with two URLs in the log: the log is read back, dedup and lookups go through it.
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap().merging_at(4);
    f.recover().unwrap();
    assert_eq!(f.staged.len(), 2);
    assert!(f.is_known("http://a/2").unwrap());
    assert!(!f.is_known("http://a/3").unwrap());
    let c = f
        .commit(Batch {
            discovered: vec![page("http://a/1", None), page("http://a/2", None)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!((c.added.len(), c.duplicates), (0, 2));
    let queued = f.next_urls(host, None, 10).unwrap();
    let got: Vec<_> = queued
        .iter()
        .map(|e| (e.url.as_str(), e.parent.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![("http://a/1", None), ("http://a/2", Some("http://a/1"))]
    );
    // Two more make four: this commit moves the log into the URL table and drops it.
    let c = f
        .commit(Batch {
            discovered: vec![page("http://a/3", None), page("http://a/4", None)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!(c.added.len(), 2);
    assert_eq!(f.staged.len(), 0);
    {
        let txn = f.db.begin_read().unwrap();
        assert!(open_log(&txn).unwrap().is_none(), "the log is dropped");
        assert_eq!(txn.open_table(URLS).unwrap().iter().unwrap().count(), 4);
    }
    drop(f);
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap().merging_at(4);
    assert_eq!(f.recover().unwrap().counters.known, 4);
    assert_eq!(f.staged.len(), 0);
    let c = f
        .commit(Batch {
            discovered: vec![page("http://a/2", None), page("http://a/5", None)],
            ..Batch::default()
        })
        .unwrap();
    assert_eq!((c.added.len(), c.duplicates), (1, 1));
    let urls: Vec<_> = f
        .next_urls(host, None, 10)
        .unwrap()
        .into_iter()
        .map(|e| (e.url, e.parent))
        .collect();
    assert_eq!(urls.len(), 5);
    assert_eq!(urls[1], ("http://a/2".into(), Some("http://a/1".into())));
    assert_eq!(urls[4].0, "http://a/5");
}

#[test]
fn a_store_of_the_format_before_the_log_is_read() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut f = EmbeddedFrontier::open(dir.path()).unwrap().merging_at(1);
        f.recover().unwrap();
        f.commit(Batch {
            discovered: vec![page("http://a/1", None)],
            ..Batch::default()
        })
        .unwrap();
        // What the previous format left: the same tables, no log, format 2.
        let txn = f.db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert(key::FORMAT, FORMAT_NO_LOG)
            .unwrap();
        txn.commit().unwrap();
    }
    let mut f = EmbeddedFrontier::open(dir.path()).unwrap();
    assert_eq!(f.recover().unwrap().counters.known, 1);
    assert!(f.is_known("http://a/1").unwrap());
}
