//! The HTTP layer against a recording [`CrawlOps`]: routing, the token, limits, errors naming fields, reloads.

use super::*;
use crate::api::dto::{
    ActionDto, AddUrlsDto, CountersDto, CrawlState, DropDto, HostDto, OperatorDto, RatesDto,
    RobotsState, StatusDto, Target, UrlAnswerDto, UrlResult,
};
use crate::api::ops::{BoxFuture, HostSort};
use crawl_core::config::Secret;
use crawl_core::control::alerts::{ActionKind, AlertAction};
use crawl_core::control::{Change, HostMatch, OperatorState};
use http_body_util::{BodyExt as _, Full};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const TOKEN: &str = "t0ken-t0ken-t0ken-t0ken";

/// A crawl that records every call and answers from what the test set.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
    /// The answer of every call but status and host; None = a canned success.
    fail_with: Mutex<Option<OpsError>>,
    /// Calls never answer (a blocked crawl).
    stall: bool,
    /// `[[api.alert_actions]]`.
    actions: Vec<AlertAction>,
}

impl Recorder {
    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn reply<T: Send + 'static>(&self, ok: T) -> BoxFuture<Result<T, OpsError>> {
        let failure = self.fail_with.lock().unwrap().clone();
        let stall = self.stall;
        Box::pin(async move {
            if stall {
                std::future::pending::<()>().await;
            }
            match failure {
                Some(e) => Err(e),
                None => Ok(ok),
            }
        })
    }
}

fn action(changed: bool, target: Target) -> ActionDto {
    ActionDto {
        changed,
        target,
        durable: true,
    }
}

fn host_dto(host: &str) -> HostDto {
    HostDto {
        host: host.to_owned(),
        queued: Some(3),
        in_flight: 1,
        next_allowed_in_ms: None,
        backoff_level: 0,
        paused: false,
        paused_by: None,
        politeness: None,
        robots: RobotsState::Allowed,
        errors: Default::default(),
        shard: None,
        owner: None,
    }
}

impl CrawlOps for Recorder {
    fn status(&self) -> BoxFuture<Result<StatusDto, OpsError>> {
        self.record("status".into());
        self.reply(StatusDto {
            process: "test/1".into(),
            state: CrawlState::Running,
            paused: false,
            waiting_for: None,
            counters: CountersDto {
                fetched: 7,
                ..CountersDto::default()
            },
            rates: RatesDto { pages_per_s: 1.5 },
            operator: OperatorDto::default(),
            processes: Vec::new(),
            processes_error: None,
            config: serde_json::json!({}),
            sinks: Vec::new(),
        })
    }

    fn hosts(&self, sort: HostSort, limit: usize) -> BoxFuture<Result<Vec<HostDto>, OpsError>> {
        self.record(format!("hosts {sort} {limit}"));
        self.reply(vec![host_dto("a.example")])
    }

    fn host(&self, host: String) -> BoxFuture<Result<Option<HostDto>, OpsError>> {
        self.record(format!("host {host}"));
        let known = host == "a.example";
        self.reply(known.then(|| host_dto(&host)))
    }

    fn add_urls(
        &self,
        req: AddUrlsDto,
        by: Requester,
    ) -> BoxFuture<Result<Vec<UrlAnswerDto>, OpsError>> {
        self.record(format!(
            "add {} depth={} force={} by {by}",
            req.urls.join(","),
            req.depth,
            req.force
        ));
        self.reply(
            req.urls
                .iter()
                .map(|u| UrlAnswerDto {
                    url: u.clone(),
                    canonical: Some(u.clone()),
                    result: UrlResult::Queued,
                    reason: None,
                })
                .collect(),
        )
    }

    fn pause(
        &self,
        host: Option<HostMatch>,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        self.record(format!("pause {host:?} by {by}"));
        let t = if host.is_some() {
            Target::Host
        } else {
            Target::Crawl
        };
        self.reply(action(true, t))
    }

    fn resume(
        &self,
        host: Option<HostMatch>,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        self.record(format!("resume {host:?} by {by}"));
        let t = if host.is_some() {
            Target::Host
        } else {
            Target::Crawl
        };
        self.reply(action(false, t))
    }

    fn politeness(
        &self,
        host: HostMatch,
        p: PolitenessDto,
        by: Requester,
    ) -> BoxFuture<Result<ActionDto, OpsError>> {
        self.record(format!(
            "politeness {host} {:?} {:?} {:?} by {by}",
            p.delay_ms, p.concurrency, p.expires_s
        ));
        self.reply(action(true, Target::Host))
    }

    fn drop_queue(&self, host: HostMatch, by: Requester) -> BoxFuture<Result<DropDto, OpsError>> {
        self.record(format!("drop {host} by {by}"));
        self.reply(DropDto {
            requested: true,
            queued: Some(12),
        })
    }

    fn operator(&self) -> BoxFuture<Result<OperatorState, OpsError>> {
        self.record("operator".into());
        self.reply(OperatorState::default())
    }

    fn operate(&self, change: Change) -> BoxFuture<Result<bool, OpsError>> {
        let host = change.host().map(ToString::to_string);
        self.record(format!("{} {host:?} by {}", change.name(), change.by()));
        self.reply(true)
    }

    fn alert_actions(&self) -> Vec<AlertAction> {
        self.actions.clone()
    }
}

fn peer() -> SocketAddr {
    "127.0.0.1:5000".parse().unwrap()
}

struct Answer {
    status: u16,
    headers: http::HeaderMap,
    json: serde_json::Value,
}

fn request(method: &str, path: &str, body: &str, token: Option<&str>) -> Request<Full<Bytes>> {
    let mut b = Request::builder().method(method).uri(path);
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
}

async fn send(api: &Api, req: Request<Full<Bytes>>) -> Answer {
    let r = api.handle(req, peer()).await;
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    let json =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {bytes:?}"));
    Answer {
        status,
        headers,
        json,
    }
}

fn api_with(ops: Arc<Recorder>, auth: Auth) -> Api {
    Api::new(ops, None, auth, 1024)
}

fn open_api() -> (Arc<Recorder>, Api) {
    let ops = Arc::new(Recorder::default());
    (ops.clone(), api_with(ops, Auth::open()))
}

#[tokio::test]
async fn every_endpoint_reaches_its_call() {
    let (ops, api) = open_api();
    let a = send(&api, request("GET", "/v1/status", "", None)).await;
    assert_eq!(
        (a.status, a.json["counters"]["fetched"].as_u64()),
        (200, Some(7))
    );
    assert_eq!(a.headers["content-type"], "application/json");
    let a = send(
        &api,
        request("GET", "/v1/hosts?sort=name&limit=3", "", None),
    )
    .await;
    assert_eq!(
        (a.status, a.json["hosts"][0]["host"].as_str()),
        (200, Some("a.example"))
    );
    let a = send(&api, request("GET", "/v1/hosts/A.Example", "", None)).await;
    assert_eq!((a.status, a.json["queued"].as_u64()), (200, Some(3)));
    let a = send(&api, request("GET", "/v1/hosts/b.example", "", None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (404, Some("unknown_host"))
    );
    let a = send(
        &api,
        request(
            "POST",
            "/v1/urls",
            r#"{"urls": ["http://a.example/x"], "depth": 2}"#,
            None,
        ),
    )
    .await;
    assert_eq!(
        (a.status, a.json["urls"][0]["result"].as_str()),
        (200, Some("queued"))
    );
    let a = send(&api, request("POST", "/v1/pause", "", None)).await;
    assert_eq!((a.status, a.json["target"].as_str()), (200, Some("crawl")));
    let a = send(
        &api,
        request("POST", "/v1/resume", r#"{"host": "a.example:8080"}"#, None),
    )
    .await;
    assert_eq!(
        (
            a.status,
            a.json["target"].as_str(),
            a.json["changed"].as_bool()
        ),
        (200, Some("host"), Some(false))
    );
    let a = send(
        &api,
        request(
            "PUT",
            "/v1/hosts/a.example/politeness",
            r#"{"delay_ms": 500, "expires_s": 60}"#,
            None,
        ),
    )
    .await;
    assert_eq!(a.status, 200);
    let a = send(
        &api,
        request("DELETE", "/v1/hosts/a.example/politeness", "", None),
    )
    .await;
    assert_eq!(a.status, 200);
    let a = send(
        &api,
        request("DELETE", "/v1/hosts/%5B%3A%3A1%5D:81/queue", "", None),
    )
    .await;
    assert_eq!((a.status, a.json["queued"].as_u64()), (200, Some(12)));
    let by = "by api 127.0.0.1:5000";
    assert_eq!(
        ops.calls(),
        [
            "status".to_owned(),
            "hosts name 3".to_owned(),
            "host a.example".to_owned(),
            "host b.example".to_owned(),
            format!("add http://a.example/x depth=2 force=false {by}"),
            format!("pause None {by}"),
            format!(
                "resume Some(HostMatch {{ host: \"a.example\", port: Some(8080), subdomains: false }}) {by}"
            ),
            format!("politeness a.example Some(500) None Some(60) {by}"),
            format!("politeness a.example None None None {by}"),
            format!("drop [::1]:81 {by}"),
        ]
    );
}

#[tokio::test]
async fn the_openapi_document_is_served() {
    let (_, api) = open_api();
    let a = send(&api, request("GET", "/v1/openapi.json", "", None)).await;
    assert_eq!((a.status, a.json["openapi"].as_str()), (200, Some("3.1.0")));
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_with_allow() {
    let (ops, api) = open_api();
    let a = send(&api, request("GET", "/v1/nothing", "", None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    let a = send(&api, request("DELETE", "/v1/status", "", None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    assert_eq!(a.headers["allow"], "GET");
    let a = send(&api, request("POST", "/v1/hosts/a.example/queue", "", None)).await;
    assert_eq!(a.headers["allow"], "DELETE");
    assert!(ops.calls().is_empty());
}

#[tokio::test]
async fn bad_bodies_are_400_naming_the_field() {
    let (ops, api) = open_api();
    let cases = [
        (
            "POST",
            "/v1/pause",
            r#"{"host": 5}"#,
            "invalid_type",
            Some("host"),
        ),
        (
            "POST",
            "/v1/pause",
            r#"{"host": "a/b"}"#,
            "invalid",
            Some("host"),
        ),
        (
            "POST",
            "/v1/pause",
            r#"{"hots": "a"}"#,
            "unknown_field",
            Some("hots"),
        ),
        ("POST", "/v1/pause", r#"{"host": "#, "malformed_json", None),
        (
            "POST",
            "/v1/urls",
            r#"{"urls": ["http://a.example/", 7]}"#,
            "invalid_type",
            Some("urls[1]"),
        ),
        (
            "POST",
            "/v1/urls",
            r#"{"urls": [], "depth": 1}"#,
            "invalid",
            Some("urls"),
        ),
        (
            "POST",
            "/v1/urls",
            r#"["http://a.example/"]"#,
            "invalid_body",
            None,
        ),
        (
            "PUT",
            "/v1/hosts/a.example/politeness",
            r#"{"concurrency": 0}"#,
            "invalid",
            Some("concurrency"),
        ),
        (
            "PUT",
            "/v1/hosts/a.example/politeness",
            r#"{"delay_ms": "1s"}"#,
            "invalid_type",
            Some("delay_ms"),
        ),
        (
            "PUT",
            "/v1/hosts/a%2Fb/politeness",
            r#"{"delay_ms": 1}"#,
            "invalid",
            Some("host"),
        ),
        ("GET", "/v1/hosts?sort=size", "", "invalid", Some("sort")),
        ("GET", "/v1/hosts?limit=10001", "", "invalid", Some("limit")),
    ];
    for (method, path, body, code, field) in cases {
        let a = send(&api, request(method, path, body, None)).await;
        assert_eq!(a.status, 400, "{method} {path} {body}: {}", a.json);
        assert_eq!(
            a.json["error"]["code"].as_str(),
            Some(code),
            "{body}: {}",
            a.json
        );
        assert_eq!(
            a.json["error"]["field"].as_str(),
            field,
            "{body}: {}",
            a.json
        );
        assert!(
            a.json["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    assert!(ops.calls().is_empty(), "{:?}", ops.calls());
}

#[tokio::test]
async fn bodies_above_the_cap_are_413() {
    let (ops, api) = open_api();
    let big = format!(r#"{{"urls": ["{}"]}}"#, "x".repeat(2000));
    let a = send(&api, request("POST", "/v1/urls", &big, None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (413, Some("payload_too_large"))
    );
    // Declared too large: refused before the body is read.
    let mut req = request("POST", "/v1/pause", "{}", None);
    req.headers_mut()
        .insert("content-length", http::HeaderValue::from_static("5000"));
    assert_eq!(send(&api, req).await.status, 413);
    assert!(ops.calls().is_empty());
}

static COMPARES: AtomicUsize = AtomicUsize::new(0);

fn counting_compare(a: &[u8], b: &[u8]) -> bool {
    COMPARES.fetch_add(1, Ordering::SeqCst);
    crate::api::auth::constant_time_eq(a, b)
}

#[tokio::test]
async fn a_token_is_checked_in_constant_time_before_anything_else() {
    let ops = Arc::new(Recorder::default());
    let api = api_with(
        ops.clone(),
        Auth::bearer_with(Secret::new(TOKEN), counting_compare),
    );
    let before = COMPARES.load(Ordering::SeqCst);
    for (path, token) in [
        ("/v1/status", None),
        ("/v1/status", Some("t0ken-t0ken-t0ken-t0keX")),
        ("/v1/nothing", Some("short")),
        ("/v1/openapi.json", None),
    ] {
        let a = send(&api, request("GET", path, "", token)).await;
        assert_eq!(a.status, 401, "{path}");
        assert_eq!(a.headers["www-authenticate"], "Bearer");
        assert_eq!(
            a.json,
            serde_json::json!({"error": {"code": "unauthorized", "message": "unauthorized"}})
        );
    }
    // Only requests that carry a bearer token get compared.
    assert_eq!(COMPARES.load(Ordering::SeqCst) - before, 2);
    let a = send(&api, request("GET", "/v1/status", "", Some(TOKEN))).await;
    assert_eq!(a.status, 200);
    assert_eq!(COMPARES.load(Ordering::SeqCst) - before, 3);
    let a = send(
        &api,
        request("POST", "/v1/pause", r#"{"host": 1}"#, Some(TOKEN)),
    )
    .await;
    assert_eq!(a.status, 400);
    assert_eq!(ops.calls(), ["status"]);
}

#[tokio::test]
async fn crawl_errors_keep_their_status() {
    let (ops, api) = open_api();
    for (e, status, code) in [
        (OpsError::Unsupported, 501, "not_implemented"),
        (OpsError::Busy, 503, "busy"),
        (OpsError::Ended, 503, "ended"),
        (OpsError::NotFound, 404, "not_found"),
        (OpsError::Internal("store failed".into()), 500, "internal"),
        (
            OpsError::Invalid {
                field: "urls[0]".into(),
                message: "not http".into(),
            },
            400,
            "invalid",
        ),
    ] {
        *ops.fail_with.lock().unwrap() = Some(e);
        let a = send(&api, request("POST", "/v1/pause", "{}", None)).await;
        assert_eq!(
            (a.status, a.json["error"]["code"].as_str()),
            (status, Some(code))
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_crawl_that_does_not_answer_is_503_busy() {
    let ops = Arc::new(Recorder {
        stall: true,
        ..Recorder::default()
    });
    let api =
        api_with(ops, Auth::open()).with_timeouts(Duration::from_secs(2), Duration::from_secs(30));
    let a = send(&api, request("GET", "/v1/status", "", None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (503, Some("busy"))
    );
}

/// A body that never ends.
struct Endless;

impl http_body::Body for Endless {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Pending
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_past_its_deadline_is_408() {
    let (ops, api) = open_api();
    let api = api.with_timeouts(Duration::from_secs(2), Duration::from_secs(5));
    let req = Request::builder()
        .method("POST")
        .uri("/v1/pause")
        .body(Endless)
        .unwrap();
    let r = api.handle(req, peer()).await;
    assert_eq!(r.status().as_u16(), 408);
    assert!(ops.calls().is_empty());
}

#[tokio::test]
async fn reloads_answer_with_their_outcome() {
    let ops = Arc::new(Recorder::default());
    let (handle, mut rx) = ReloadHandle::channel();
    let api = Api::new(ops, Some(handle), Auth::open(), 1024);
    let outcomes = vec![
        ReloadOutcome::Applied(vec!["politeness.min_delay_ms"]),
        ReloadOutcome::Invalid("a.toml:1:1: bad\na.toml:2:1: worse".into()),
        ReloadOutcome::Rejected("reload rejected: frontier.data_dir cannot change".into()),
        ReloadOutcome::NoFile,
    ];
    let served = tokio::spawn(async move {
        let mut causes = Vec::new();
        for o in outcomes {
            let Some(crate::reload::ReloadRequest::Reload { cause, reply }) = rx.recv().await
            else {
                panic!("not a reload");
            };
            causes.push(cause);
            reply.send(o).unwrap();
        }
        causes
    });
    let a = send(&api, request("POST", "/v1/reload", "", None)).await;
    assert_eq!(
        (a.status, a.json.clone()),
        (
            200,
            serde_json::json!({"outcome": "applied", "changed": ["politeness.min_delay_ms"]})
        )
    );
    let a = send(&api, request("POST", "/v1/reload", "", None)).await;
    assert_eq!(
        (a.status, a.json.clone()),
        (
            422,
            serde_json::json!({"outcome": "invalid", "errors": ["a.toml:1:1: bad", "a.toml:2:1: worse"]})
        )
    );
    let a = send(&api, request("POST", "/v1/reload", "", None)).await;
    assert_eq!(
        (a.status, a.json["outcome"].as_str()),
        (422, Some("rejected"))
    );
    let a = send(&api, request("POST", "/v1/reload", "", None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (409, Some("no_file"))
    );
    let causes = served.await.unwrap();
    assert_eq!(
        causes[0],
        ReloadCause::Api {
            peer: "127.0.0.1:5000".into()
        }
    );
    // The reload task gone: the crawl has ended.
    let a = send(&api, request("POST", "/v1/reload", "", None)).await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (503, Some("ended"))
    );
}

const STORM_FIRING: &str = r#"{"version":"4","status":"firing","receiver":"crawl-engine","alerts":[
    {"status":"firing","labels":{"alertname":"Crawl429Storm","host_group":"a.example","severity":"warning"},
     "fingerprint":"5f1e"}]}"#;

#[tokio::test]
async fn alerts_take_their_actions_and_answer_what_became_of_each() {
    let ops = Arc::new(Recorder {
        actions: vec![AlertAction {
            alert: "Crawl429Storm".into(),
            labels: Default::default(),
            action: ActionKind::PauseHost,
            host_label: "host_group".into(),
        }],
        ..Recorder::default()
    });
    let api = Api::new(
        ops.clone(),
        None,
        Auth::bearer_with(Secret::new(TOKEN), crate::api::auth::constant_time_eq),
        1024,
    );
    // The token first, as everywhere.
    let a = send(&api, request("POST", "/v1/alerts", STORM_FIRING, None)).await;
    assert_eq!(a.status, 401);
    assert!(ops.calls().is_empty());
    let a = send(
        &api,
        request("POST", "/v1/alerts", STORM_FIRING, Some(TOKEN)),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(
        a.json,
        serde_json::json!({"actions": [{
            "alert": "Crawl429Storm",
            "fingerprint": "5f1e",
            "action": "pause_host",
            "result": "applied",
            "detail": "paused host *.a.example until the alert resolves"
        }]})
    );
    assert_eq!(
        ops.calls(),
        [
            "operator".to_owned(),
            "pause Some(\"*.a.example\") by alert Crawl429Storm".to_owned()
        ]
    );
    // Bad bodies are 400 naming the problem; nothing is asked of the crawl.
    for (body, code) in [
        ("{\"version\": \"4\", ", "malformed_json"),
        ("{\"version\": \"4\"}", "invalid_body"),
        (
            "{\"version\": \"3\", \"alerts\": []}",
            "unsupported_version",
        ),
        ("[]", "invalid_body"),
    ] {
        let a = send(&api, request("POST", "/v1/alerts", body, Some(TOKEN))).await;
        assert_eq!(
            (a.status, a.json["error"]["code"].as_str()),
            (400, Some(code)),
            "{body}: {}",
            a.json
        );
    }
    assert_eq!(ops.calls().len(), 2);
    // A crawl that has ended: 503, which Alertmanager retries.
    *ops.fail_with.lock().unwrap() = Some(OpsError::Ended);
    let a = send(
        &api,
        request("POST", "/v1/alerts", STORM_FIRING, Some(TOKEN)),
    )
    .await;
    assert_eq!(
        (a.status, a.json["error"]["code"].as_str()),
        (503, Some("ended"))
    );
}
