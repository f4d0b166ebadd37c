use super::*;
use crate::config::FrontierBackend;
use std::time::{Duration, UNIX_EPOCH};

fn id(s: &str) -> CrawlId {
    CrawlId::parse(s).unwrap()
}

fn marker(crawl: &str, data_dir: &str, pid: u32) -> MarkerRead {
    MarkerRead::Marker(Marker {
        crawl: id(crawl),
        data_dir: data_dir.into(),
        pid,
    })
}

fn found(marker: MarkerRead, busy: bool, content: bool) -> Found {
    Found {
        marker,
        busy,
        content,
    }
}

fn ours(crawl: Option<&str>, established: bool) -> Ours {
    Ours {
        crawl: crawl.map(id),
        established,
    }
}

#[test]
fn a_crawl_id_is_short_plain_text() {
    assert_eq!(id("3f9a-b_c.1").as_str(), "3f9a-b_c.1");
    for bad in ["", "a b", "a/b", "é", &"x".repeat(65)] {
        assert!(CrawlId::parse(bad).is_none(), "{bad:?}");
    }
    let err = serde_json::from_str::<Marker>(r#"{"crawl":"a b","data_dir":"d","pid":1}"#);
    assert!(err.is_err());
}

#[test]
fn markers_and_identities_read_back_and_an_empty_marker_is_none() {
    let m = Marker {
        crawl: id("abc"),
        data_dir: "/c/data".into(),
        pid: 42,
    };
    let bytes = m.to_bytes();
    assert!(bytes.ends_with(b"}\n"));
    assert_eq!(Marker::read(&bytes), MarkerRead::Marker(m.clone()));
    assert_eq!(Marker::read(b""), MarkerRead::Empty);
    assert_eq!(Marker::read(b" \n"), MarkerRead::Empty);
    assert_eq!(Marker::read(b"{\"crawl\":"), MarkerRead::Unreadable);
    assert_eq!(MarkerRead::Empty.holder(), None);
    assert_eq!(MarkerRead::Unreadable.holder(), Some(Holder::default()));
    assert_eq!(
        MarkerRead::Marker(m).holder().unwrap().to_string(),
        "pid 42, crawl abc, data_dir /c/data"
    );
    assert_eq!(Holder::default().to_string(), "no readable marker");

    let redis = Identity {
        crawl: id("abc"),
        frontier: Frontier::Redis {
            crawl: "news".into(),
        },
    };
    let text = String::from_utf8(redis.to_bytes()).unwrap();
    assert_eq!(
        text,
        "{\"crawl\":\"abc\",\"backend\":\"redis\",\"redis_crawl\":\"news\"}\n"
    );
    assert_eq!(Identity::read(text.as_bytes()), Some(redis));
    let embedded = Identity {
        crawl: id("d"),
        frontier: Frontier::Embedded,
    };
    assert_eq!(Identity::read(&embedded.to_bytes()), Some(embedded));
    assert_eq!(Identity::read(b"garbage"), None);
}

#[test]
fn the_same_crawl_resumes_its_own_output() {
    let me = ours(Some("me"), true);
    let d = decide(&me, &found(marker("me", "/c/data", 7), false, true), false);
    assert_eq!(d, Decision::Resume);
    // Even with nothing left in it: the writer then says what is missing against its checkpoint.
    let d = decide(&me, &found(marker("me", "/c/data", 7), false, false), false);
    assert_eq!(d, Decision::Resume);
}

#[test]
fn another_crawls_output_is_refused_while_it_holds_something_and_claimed_once_empty() {
    let me = ours(Some("me"), true);
    let theirs = marker("them", "/other/data", 9);
    let d = decide(&me, &found(theirs.clone(), false, true), false);
    assert_eq!(
        d,
        Decision::Refuse(Refusal::Foreign(Holder {
            crawl: Some(id("them")),
            data_dir: Some("/other/data".into()),
            pid: Some(9),
        }))
    );
    // A new crawl (no id yet) is "another crawl" to every marker.
    let d = decide(
        &ours(None, false),
        &found(theirs.clone(), false, true),
        false,
    );
    assert!(matches!(d, Decision::Refuse(Refusal::Foreign(_))), "{d:?}");
    // The output was deleted and only the marker is left: nothing of that crawl to protect.
    assert_eq!(
        decide(&me, &found(theirs, false, false), false),
        Decision::Claim
    );
    // An unreadable marker names no crawl: another crawl's all the same.
    assert_eq!(
        decide(&me, &found(MarkerRead::Unreadable, false, true), false),
        Decision::Refuse(Refusal::Foreign(Holder::default()))
    );
}

#[test]
fn a_live_holder_is_refused_whatever_the_marker_and_fresh_say() {
    for fresh in [false, true] {
        for (m, content) in [
            (marker("me", "/c/data", 5), true),
            (marker("them", "/o", 6), false),
            (MarkerRead::Empty, false),
        ] {
            let d = decide(
                &ours(Some("me"), true),
                &found(m.clone(), true, content),
                fresh,
            );
            assert_eq!(
                d,
                Decision::Refuse(Refusal::Busy(m.holder().unwrap_or_default())),
                "{m:?} fresh {fresh}"
            );
        }
    }
}

#[test]
fn unmarked_content_without_a_checkpoint_is_an_orphan_and_is_adopted_only_by_an_older_frontier() {
    let unmarked = found(MarkerRead::Empty, false, true);
    assert_eq!(
        decide(&ours(None, false), &unmarked, false),
        Decision::Refuse(Refusal::Orphan)
    );
    // A frontier from before markers existed wrote its outputs without them.
    assert_eq!(decide(&ours(None, true), &unmarked, false), Decision::Adopt);
    assert_eq!(
        decide(&ours(Some("me"), true), &unmarked, false),
        Decision::Adopt
    );
    // Nothing there at all: a new crawl claims it.
    assert_eq!(
        decide(
            &ours(None, false),
            &found(MarkerRead::Empty, false, false),
            false
        ),
        Decision::Claim
    );
}

#[test]
fn fresh_moves_aside_whatever_holds_something_and_claims_the_rest() {
    for m in [
        MarkerRead::Empty,
        marker("me", "/c/data", 1),
        marker("them", "/o", 2),
        MarkerRead::Unreadable,
    ] {
        assert_eq!(
            decide(
                &ours(Some("me"), true),
                &found(m.clone(), false, true),
                true
            ),
            Decision::MoveAside,
            "{m:?}"
        );
        assert_eq!(
            decide(&ours(None, false), &found(m.clone(), false, false), true),
            Decision::Claim,
            "{m:?}"
        );
    }
}

fn dir(state: DirState, busy: Option<Holder>, has_files: bool) -> DirFound {
    DirFound {
        state,
        busy,
        has_files,
    }
}

#[test]
fn the_data_dir_tells_who_this_crawl_is_and_refuses_another_frontier() {
    let news = Frontier::Redis {
        crawl: "news".into(),
    };
    let identified = |f: Frontier| {
        dir(
            DirState::Identified(Identity {
                crawl: id("me"),
                frontier: f,
            }),
            None,
            true,
        )
    };
    let found = identified(Frontier::Embedded);
    let d = decide_data_dir(&found, &Frontier::Embedded, false);
    assert_eq!(d, Decision::Resume);
    assert_eq!(Ours::of(&found, &d), ours(Some("me"), true));
    // A spool of the Redis crawl "news" is never replayed into another crawl, nor an embedded frontier read
    // as a Redis process's data_dir.
    let sports = Frontier::Redis {
        crawl: "sports".into(),
    };
    assert_eq!(
        decide_data_dir(&identified(news.clone()), &sports, false),
        Decision::Refuse(Refusal::OtherFrontier(news.clone()))
    );
    assert_eq!(
        decide_data_dir(&identified(news.clone()), &news, false),
        Decision::Resume
    );
    assert_eq!(
        decide_data_dir(&found, &news, false),
        Decision::Refuse(Refusal::OtherFrontier(Frontier::Embedded))
    );
    // From before crawl ids: adopted by its own backend.
    let legacy = dir(DirState::Legacy(FrontierBackend::Embedded), None, true);
    let d = decide_data_dir(&legacy, &Frontier::Embedded, false);
    assert_eq!(d, Decision::Adopt);
    assert_eq!(Ours::of(&legacy, &d), ours(None, true));
    assert_eq!(
        decide_data_dir(&legacy, &news, false),
        Decision::Refuse(Refusal::OtherBackend(FrontierBackend::Embedded))
    );
    let new = dir(DirState::New, None, false);
    let d = decide_data_dir(&new, &Frontier::Embedded, false);
    assert_eq!(d, Decision::Claim);
    assert_eq!(Ours::of(&new, &d), ours(None, false));
    assert_eq!(
        decide_data_dir(
            &dir(DirState::Unreadable, None, true),
            &Frontier::Embedded,
            false
        ),
        Decision::Refuse(Refusal::Unreadable)
    );
}

#[test]
fn a_busy_data_dir_is_refused_and_fresh_moves_one_with_files_aside() {
    let holder = Holder {
        crawl: Some(id("me")),
        data_dir: None,
        pid: Some(77),
    };
    let identity = DirState::Identified(Identity {
        crawl: id("me"),
        frontier: Frontier::Embedded,
    });
    for fresh in [false, true] {
        let busy = dir(identity.clone(), Some(holder.clone()), true);
        assert_eq!(
            decide_data_dir(&busy, &Frontier::Embedded, fresh),
            Decision::Refuse(Refusal::Busy(holder.clone()))
        );
        // Judging the other outputs, the busy data_dir's crawl is still this crawl: no second complaint.
        let d = decide_data_dir(&busy, &Frontier::Embedded, fresh);
        assert_eq!(Ours::of(&busy, &d), ours(Some("me"), true));
    }
    let found = dir(identity, None, true);
    let d = decide_data_dir(&found, &Frontier::Embedded, true);
    assert_eq!(d, Decision::MoveAside);
    assert_eq!(Ours::of(&found, &d), ours(None, false));
    // Another frontier's data_dir is moved aside too: --fresh starts over whatever was there.
    let other = Frontier::Redis { crawl: "x".into() };
    assert_eq!(decide_data_dir(&found, &other, true), Decision::MoveAside);
    // An empty data_dir (a start that was refused) is simply claimed.
    assert_eq!(
        decide_data_dir(&dir(DirState::New, None, false), &Frontier::Embedded, true),
        Decision::Claim
    );
}

fn start_over(paths: &[&str]) -> StartOver {
    StartOver {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    }
}

#[test]
fn start_over_names_every_path_or_fresh() {
    assert_eq!(
        start_over(&["/c/warc"]).to_string(),
        "to start over, delete /c/warc, or run with --fresh to move it aside"
    );
    assert_eq!(
        start_over(&["/c/data", "/c/crawl.jsonl", "/c/warc"]).to_string(),
        "to start over, delete /c/data, /c/crawl.jsonl and /c/warc, or run with --fresh to move them aside"
    );
    assert_eq!(
        start_over(&[]).to_string(),
        "to start over, run with --fresh"
    );
}

#[test]
fn refusals_name_the_key_the_path_and_the_holder() {
    let holder = Holder {
        crawl: Some(id("a1")),
        data_dir: Some("/a/data".into()),
        pid: Some(4242),
    };
    let e = OwnershipError::new(
        Output::Jsonl,
        "/c/crawl.jsonl",
        Refusal::Busy(holder.clone()),
        "/b/data",
        &Frontier::Embedded,
        start_over(&["/c/crawl.jsonl"]),
    );
    assert_eq!(
        e.to_string(),
        "output.jsonl: /c/crawl.jsonl is in use by another crawl-engine process (pid 4242, crawl a1, data_dir \
         /a/data); stop it, or give this crawl its own output.jsonl"
    );
    assert_eq!(e.output(), Output::Jsonl);

    let e = OwnershipError::new(
        Output::WarcDir,
        "/c/warc",
        Refusal::Foreign(holder.clone()),
        "/b/data",
        &Frontier::Embedded,
        start_over(&["/b/data", "/c/warc"]),
    );
    let text = e.to_string();
    assert!(
        text.starts_with(
            "output.warc_dir: /c/warc belongs to another crawl (pid 4242, crawl a1, data_dir /a/data); give this \
             crawl its own output.warc_dir, or to start over, delete /b/data and /c/warc, or run with --fresh"
        ),
        "{text}"
    );
    // The same data_dir path with another crawl in it: the earlier crawl there was deleted.
    let e = OwnershipError::new(
        Output::WarcDir,
        "/c/warc",
        Refusal::Foreign(holder),
        "/a/data",
        &Frontier::Embedded,
        start_over(&["/c/warc"]),
    );
    assert!(
        e.to_string().contains(
            "belongs to an earlier crawl (crawl a1) whose frontier.data_dir /a/data was deleted or replaced since"
        ),
        "{e}"
    );

    let e = OwnershipError::new(
        Output::Jsonl,
        "/c/crawl.jsonl",
        Refusal::Orphan,
        "/c/data",
        &Frontier::Embedded,
        start_over(&["/c/crawl.jsonl", "/c/warc"]),
    );
    let text = e.to_string();
    assert!(
        text.starts_with(
            "output.jsonl: /c/crawl.jsonl holds records that no crawl in frontier.data_dir /c/data wrote"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("delete /c/crawl.jsonl and /c/warc, or run with --fresh to move them aside"),
        "{text}"
    );

    let e = OwnershipError::new(
        Output::DataDir,
        "/c/data",
        Refusal::OtherFrontier(Frontier::Redis {
            crawl: "news".into(),
        }),
        "/c/data",
        &Frontier::Embedded,
        start_over(&["/c/data"]),
    );
    assert!(
        e.to_string().starts_with(
            "frontier.data_dir: /c/data holds a process of the Redis crawl \"news\" (backend = \"redis\"), but \
             this config's frontier is the embedded frontier"
        ),
        "{e}"
    );
    assert_eq!(e.output(), Output::DataDir);
}

#[test]
fn markers_sit_beside_or_inside_their_output() {
    use std::path::Path;
    assert_eq!(
        Output::Jsonl.marker(Path::new("/c/crawl.jsonl")),
        Path::new("/c/crawl.jsonl.owner")
    );
    assert_eq!(
        Output::WarcDir.marker(Path::new("/c/warc")),
        Path::new("/c/warc/OWNER")
    );
    assert_eq!(
        Output::DataDir.marker(Path::new("/c/data")),
        Path::new("/c/data/crawl-id")
    );
}

#[test]
fn an_old_output_moves_beside_itself_with_a_utc_timestamp() {
    use std::path::Path;
    let at = UNIX_EPOCH + Duration::from_secs(1_796_276_400);
    assert_eq!(
        aside_path(Path::new("/c/crawl.jsonl"), at, 0).unwrap(),
        Path::new("/c/crawl.jsonl.20261203T054000Z")
    );
    assert_eq!(
        aside_path(Path::new("data"), at, 2).unwrap(),
        Path::new("data.20261203T054000Z-3")
    );
    assert!(aside_path(Path::new("/"), at, 0).is_none());
}
