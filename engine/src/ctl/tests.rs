use super::*;
use crate::cli::CtlAction;

#[test]
fn actions_become_requests() {
    let r = request_of(&CtlAction::Status).unwrap();
    assert_eq!(
        (r.method, r.path.as_str(), r.body),
        (Method::GET, "/v1/status", None)
    );
    let r = request_of(&CtlAction::Hosts {
        sort: "in_flight".into(),
        limit: 5,
    })
    .unwrap();
    assert_eq!(r.path, "/v1/hosts?sort=in_flight&limit=5");
    let r = request_of(&CtlAction::Host {
        host: "[::1]:8080".into(),
    })
    .unwrap();
    assert_eq!(r.path, "/v1/hosts/%5B::1%5D:8080");
    let r = request_of(&CtlAction::Add {
        urls: vec!["http://a.example/".into()],
        depth: 1,
        force: true,
    })
    .unwrap();
    assert_eq!(
        (r.method, r.body.as_deref()),
        (
            Method::POST,
            Some(r#"{"urls":["http://a.example/"],"depth":1,"force":true}"#)
        )
    );
    let r = request_of(&CtlAction::Pause { host: None }).unwrap();
    assert_eq!(
        (r.path.as_str(), r.body.as_deref()),
        ("/v1/pause", Some(r#"{"host":null}"#))
    );
    let politeness = |delay_ms, clear| CtlAction::Politeness {
        host: "a.example".into(),
        delay_ms,
        concurrency: None,
        expires_s: None,
        clear,
    };
    let r = request_of(&politeness(Some(500), false)).unwrap();
    assert_eq!(
        (r.method, r.path.as_str(), r.body.as_deref()),
        (
            Method::PUT,
            "/v1/hosts/a.example/politeness",
            Some(r#"{"delay_ms":500,"concurrency":null,"expires_s":null}"#)
        )
    );
    let r = request_of(&politeness(None, true)).unwrap();
    assert_eq!((r.method, r.body), (Method::DELETE, None));
    let e = request_of(&politeness(None, false)).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let r = request_of(&CtlAction::Drop {
        host: "a.example".into(),
    })
    .unwrap();
    assert_eq!(
        (r.method, r.path.as_str()),
        (Method::DELETE, "/v1/hosts/a.example/queue")
    );
    let r = request_of(&CtlAction::Reload).unwrap();
    assert_eq!((r.method, r.path.as_str()), (Method::POST, "/v1/reload"));
}

#[test]
fn failures_are_one_line_with_the_code() {
    let req = request_of(&CtlAction::Pause { host: None }).unwrap();
    let body = br#"{"error":{"code":"invalid_type","message":"`host`: bad","field":"host"}}"#;
    assert_eq!(
        failure(&req, StatusCode::BAD_REQUEST, body),
        "ctl: POST /v1/pause: invalid_type (400) [host]: `host`: bad"
    );
    let m = failure(&req, StatusCode::UNAUTHORIZED, b"{}");
    assert!(
        m.contains("unauthorized (401)") && m.contains("--token-file"),
        "{m}"
    );
    let reload = request_of(&CtlAction::Reload).unwrap();
    assert_eq!(
        failure(
            &reload,
            StatusCode::UNPROCESSABLE_ENTITY,
            br#"{"outcome":"invalid","errors":["a","b"]}"#
        ),
        "ctl: POST /v1/reload: reload invalid (422): a; b"
    );
    assert_eq!(
        failure(&req, StatusCode::BAD_GATEWAY, b"<html>"),
        "ctl: POST /v1/pause: HTTP 502"
    );
    assert!(!m.contains('\n'));
}

#[test]
fn tables_are_aligned() {
    let t = render::table(&[
        vec!["HOST".into(), "QUEUED".into()],
        vec!["a.example".into(), "3".into()],
    ]);
    assert_eq!(t, "HOST       QUEUED\na.example  3\n");
    let status = br#"{"process":"h/1","state":"running","paused":false,"waiting_for":null,
        "counters":{"fetched":3,"failed":0,"excluded":0,"queued":2,"in_flight":1,"hosts":1,"known":5,"retries":0,
        "bytes":0,"resumed":0,"restarts":0},"rates":{"pages_per_s":1.5},
        "operator":{"paused_hosts":[],"politeness":{}},"processes":[],"config":{}}"#;
    let text = render::answer(&CtlAction::Status, status);
    assert!(text.starts_with("state         running\n"), "{text}");
    assert!(text.contains("pages/s       1.50\n"), "{text}");
    let shared = br#"{"process":"h-a","state":"running","paused":false,"waiting_for":null,
        "counters":{"fetched":3,"failed":0,"excluded":0,"queued":2,"in_flight":1,"hosts":1,"known":5,"retries":0,
        "bytes":0,"resumed":0,"restarts":0},"rates":{"pages_per_s":1.5},"operator":{"paused_hosts":[],"politeness":{}},
        "processes":[{"id":"h-a","hosts_owned":null,"shards":9,"last_seen_ms":0,"this_process":true},
        {"id":"h-b","hosts_owned":null,"shards":7,"last_seen_ms":120,"this_process":false}],
        "processes_error":null,"config":{}}"#;
    let text = render::answer(&CtlAction::Status, shared);
    assert!(
        text.contains("process h-a   shards 9 last_seen_ms 0 (this one)\n"),
        "{text}"
    );
    assert!(
        text.contains("process h-b   shards 7 last_seen_ms 120\n"),
        "{text}"
    );
    // An answer this version cannot read is shown as it came.
    assert_eq!(
        render::answer(&CtlAction::Status, b"{\"x\":1}"),
        "{\"x\":1}\n"
    );
    let reload = render::answer(
        &CtlAction::Reload,
        br#"{"outcome":"applied","changed":["politeness.min_delay_ms"]}"#,
    );
    assert_eq!(reload, "config reloaded: politeness.min_delay_ms\n");
}
