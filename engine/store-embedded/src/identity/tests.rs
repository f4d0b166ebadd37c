use super::*;

#[test]
fn a_new_data_dir_is_inspected_without_being_made_and_claimed_once() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let found = inspect(&dir).unwrap();
    assert_eq!(
        found,
        DirFound {
            state: DirState::New,
            busy: None,
            has_files: false
        }
    );
    assert!(!dir.exists(), "inspecting made the data_dir");
    // A file where the data_dir should be holds no crawl (the path's own problem is reported elsewhere).
    std::fs::write(root.path().join("file"), b"x").unwrap();
    assert_eq!(
        inspect(&root.path().join("file")).unwrap().state,
        DirState::New
    );

    let lock = DirLock::acquire(&dir).unwrap();
    // Only the lock file: still a new data_dir (a start that stopped before it claimed it).
    let found = inspect(&dir).unwrap();
    assert_eq!(found.state, DirState::New);
    assert!(!found.has_files);
    let made = claim(&lock, &Frontier::Embedded).unwrap().unwrap();
    assert_eq!(made.frontier, Frontier::Embedded);
    // Claimed again (the same command run again): the same crawl.
    let again = claim(&lock, &Frontier::Embedded).unwrap().unwrap();
    assert_eq!(again, made);
    let found = inspect(&dir).unwrap();
    assert_eq!(found.state, DirState::Identified(made.clone()));
    assert!(found.has_files);
    // This process holds the lock: to an inspection it is a live holder with its pid and crawl.
    assert_eq!(
        found.busy,
        Some(Holder {
            crawl: Some(made.crawl.clone()),
            data_dir: None,
            pid: Some(std::process::id()),
        })
    );
    drop(lock);
    assert_eq!(inspect(&dir).unwrap().busy, None);
    // Another data_dir gets another crawl.
    let other = DirLock::acquire(&root.path().join("other")).unwrap();
    assert_ne!(
        claim(&other, &Frontier::Embedded).unwrap().unwrap().crawl,
        made.crawl
    );
}

#[test]
fn a_data_dir_of_another_frontier_or_an_unreadable_identity_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let lock = DirLock::acquire(&dir).unwrap();
    let news = Frontier::Redis {
        crawl: "news".into(),
    };
    let made = claim(&lock, &news).unwrap().unwrap();
    let sports = Frontier::Redis {
        crawl: "sports".into(),
    };
    match claim(&lock, &sports) {
        Ok(Err(Refusal::OtherFrontier(f))) => assert_eq!(f, news),
        other => panic!("{other:?}"),
    }
    assert_eq!(claim(&lock, &news).unwrap().unwrap(), made);
    std::fs::write(dir.join("crawl-id"), b"not json").unwrap();
    assert_eq!(inspect(&dir).unwrap().state, DirState::Unreadable);
    assert!(matches!(claim(&lock, &news), Ok(Err(Refusal::Unreadable))));
}

#[test]
fn a_frontier_from_before_crawl_ids_is_adopted_by_its_backend() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("frontier.redb"), b"").unwrap();
    assert_eq!(
        inspect(&dir).unwrap().state,
        DirState::Legacy(crawl_core::config::FrontierBackend::Embedded)
    );
    let lock = DirLock::acquire(&dir).unwrap();
    assert!(matches!(
        claim(&lock, &Frontier::Redis { crawl: "c".into() }),
        Ok(Err(Refusal::OtherBackend(_)))
    ));
    let adopted = claim(&lock, &Frontier::Embedded).unwrap().unwrap();
    assert_eq!(inspect(&dir).unwrap().state, DirState::Identified(adopted));
}
