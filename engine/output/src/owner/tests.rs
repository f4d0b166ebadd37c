use super::*;
use crawl_core::ownership::CrawlId;

fn marker(crawl: &str) -> Marker {
    Marker {
        crawl: CrawlId::parse(crawl).unwrap(),
        data_dir: "/c/data".into(),
        pid: std::process::id(),
    }
}

#[test]
fn an_absent_jsonl_is_inspected_without_being_made_then_claimed_and_held() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("out/crawl.jsonl");
    let found = inspect(Output::Jsonl, &jsonl).unwrap();
    assert_eq!(
        found,
        Found {
            marker: MarkerRead::Empty,
            busy: false,
            content: false
        }
    );
    assert!(!dir.path().join("out").exists(), "inspecting made a folder");

    let Taken::Held(mut held) = OwnerLock::take(Output::Jsonl, &jsonl).unwrap() else {
        panic!("not taken");
    };
    assert_eq!(held.marker(), dir.path().join("out/crawl.jsonl.owner"));
    held.write(&marker("a1")).unwrap();
    std::fs::write(&jsonl, b"{}\n").unwrap();
    assert_eq!(
        held.found().unwrap(),
        Found {
            marker: MarkerRead::Marker(marker("a1")),
            busy: false,
            content: true
        }
    );
    // Seen from outside while held: busy, with the holder's marker.
    let found = inspect(Output::Jsonl, &jsonl).unwrap();
    assert!(found.busy);
    assert_eq!(found.marker, MarkerRead::Marker(marker("a1")));
    match OwnerLock::take(Output::Jsonl, &jsonl).unwrap() {
        Taken::Busy(m) => assert_eq!(m, MarkerRead::Marker(marker("a1"))),
        Taken::Held(_) => panic!("taken twice"),
    }
    // Released: the marker stays, naming the crawl that wrote the file.
    drop(held);
    let found = inspect(Output::Jsonl, &jsonl).unwrap();
    assert!(!found.busy);
    assert_eq!(found.marker, MarkerRead::Marker(marker("a1")));
    // A shorter marker replaces a longer one whole.
    let Taken::Held(mut again) = OwnerLock::take(Output::Jsonl, &jsonl).unwrap() else {
        panic!("not taken");
    };
    again.write(&marker("b")).unwrap();
    assert_eq!(
        again.found().unwrap().marker,
        MarkerRead::Marker(marker("b"))
    );
}

#[test]
fn a_warc_folder_holds_something_once_it_has_warc_files() {
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("warc");
    assert!(!inspect(Output::WarcDir, &warc).unwrap().content);
    let Taken::Held(mut held) = OwnerLock::take(Output::WarcDir, &warc).unwrap() else {
        panic!("not taken");
    };
    assert_eq!(held.marker(), warc.join("OWNER"));
    std::fs::write(warc.join("crawl-x.warc.lock"), b"").unwrap();
    assert!(!held.found().unwrap().content, "a lock file is no archive");
    std::fs::write(warc.join("crawl-20260101000000000-00000-h.warc.gz"), b"x").unwrap();
    assert!(held.found().unwrap().content);
    std::fs::write(warc.join("OWNER"), b"garbage").unwrap();
    assert_eq!(held.found().unwrap().marker, MarkerRead::Unreadable);
}
