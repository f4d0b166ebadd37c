//! The endpoints of the control API: method and path pattern, and how a request finds its endpoint (or a 404, or a
//! 405 with the methods the path allows).

/// An endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteId {
    Status,
    Hosts,
    Host,
    AddUrls,
    Pause,
    Resume,
    SetPoliteness,
    ClearPoliteness,
    DropQueue,
    Reload,
    Alerts,
    OpenApi,
}

/// One method and path pattern (`{host}` is the one parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub method: &'static str,
    pub pattern: &'static str,
    pub id: RouteId,
}

/// Every endpoint.
pub const ROUTES: &[Route] = &[
    route("GET", "/v1/status", RouteId::Status),
    route("GET", "/v1/hosts", RouteId::Hosts),
    route("GET", "/v1/hosts/{host}", RouteId::Host),
    route("POST", "/v1/urls", RouteId::AddUrls),
    route("POST", "/v1/pause", RouteId::Pause),
    route("POST", "/v1/resume", RouteId::Resume),
    route("PUT", "/v1/hosts/{host}/politeness", RouteId::SetPoliteness),
    route(
        "DELETE",
        "/v1/hosts/{host}/politeness",
        RouteId::ClearPoliteness,
    ),
    route("DELETE", "/v1/hosts/{host}/queue", RouteId::DropQueue),
    route("POST", "/v1/reload", RouteId::Reload),
    route("POST", "/v1/alerts", RouteId::Alerts),
    route("GET", "/v1/openapi.json", RouteId::OpenApi),
];

const fn route(method: &'static str, pattern: &'static str, id: RouteId) -> Route {
    Route {
        method,
        pattern,
        id,
    }
}

impl RouteId {
    /// True for the endpoints that change something (logged with who asked).
    pub fn is_action(self) -> bool {
        !matches!(
            self,
            RouteId::Status | RouteId::Hosts | RouteId::Host | RouteId::OpenApi
        )
    }

    /// The name of the action in logs.
    pub fn name(self) -> &'static str {
        match self {
            RouteId::Status => "status",
            RouteId::Hosts => "hosts",
            RouteId::Host => "host",
            RouteId::AddUrls => "add_urls",
            RouteId::Pause => "pause",
            RouteId::Resume => "resume",
            RouteId::SetPoliteness => "set_politeness",
            RouteId::ClearPoliteness => "clear_politeness",
            RouteId::DropQueue => "drop_queue",
            RouteId::Reload => "reload",
            RouteId::Alerts => "alerts",
            RouteId::OpenApi => "openapi",
        }
    }
}

/// A request that matched no endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No endpoint has this path.
    NotFound,
    /// The path exists with other methods (the `Allow` header's value).
    MethodNotAllowed(String),
}

/// A request's endpoint and its `{host}` (still percent-encoded), if the pattern has one.
pub fn resolve(method: &str, path: &str) -> Result<(RouteId, Option<String>), Miss> {
    let mut allowed: Vec<&str> = Vec::new();
    for r in ROUTES {
        let Some(param) = match_path(r.pattern, path) else {
            continue;
        };
        if r.method == method {
            return Ok((r.id, param));
        }
        if !allowed.contains(&r.method) {
            allowed.push(r.method);
        }
    }
    if allowed.is_empty() {
        Err(Miss::NotFound)
    } else {
        Err(Miss::MethodNotAllowed(allowed.join(", ")))
    }
}

/// Some(param) when `path` fits `pattern` (param None when the pattern has none).
fn match_path(pattern: &str, path: &str) -> Option<Option<String>> {
    let mut want = pattern.split('/');
    let mut got = path.split('/');
    let mut param = None;
    loop {
        match (want.next(), got.next()) {
            (None, None) => return Some(param),
            (Some("{host}"), Some(seg)) if !seg.is_empty() => param = Some(seg.to_owned()),
            (Some(w), Some(g)) if w == g => {}
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_find_their_endpoint() {
        assert_eq!(resolve("GET", "/v1/status"), Ok((RouteId::Status, None)));
        assert_eq!(
            resolve("GET", "/v1/hosts/example.org"),
            Ok((RouteId::Host, Some("example.org".into())))
        );
        assert_eq!(
            resolve("PUT", "/v1/hosts/a.example:81/politeness"),
            Ok((RouteId::SetPoliteness, Some("a.example:81".into())))
        );
        assert_eq!(
            resolve("DELETE", "/v1/hosts/a.example/queue"),
            Ok((RouteId::DropQueue, Some("a.example".into())))
        );
        assert_eq!(
            resolve("GET", "/v1/openapi.json"),
            Ok((RouteId::OpenApi, None))
        );
        assert_eq!(resolve("POST", "/v1/alerts"), Ok((RouteId::Alerts, None)));
    }

    #[test]
    fn unknown_paths_are_404_and_other_methods_405() {
        for p in [
            "/",
            "/v1",
            "/v1/status/",
            "/v2/status",
            "/v1/hosts//politeness",
            "/v1/hosts/a/b",
        ] {
            assert_eq!(resolve("GET", p), Err(Miss::NotFound), "{p}");
        }
        assert_eq!(
            resolve("POST", "/v1/status"),
            Err(Miss::MethodNotAllowed("GET".into()))
        );
        assert_eq!(
            resolve("GET", "/v1/hosts/a/politeness"),
            Err(Miss::MethodNotAllowed("PUT, DELETE".into()))
        );
        assert_eq!(
            resolve("GET", "/v1/reload"),
            Err(Miss::MethodNotAllowed("POST".into()))
        );
    }

    #[test]
    fn actions_are_the_endpoints_that_change_something() {
        let actions: Vec<&str> = ROUTES
            .iter()
            .filter(|r| r.id.is_action())
            .map(|r| r.method)
            .collect();
        assert!(actions.iter().all(|m| *m != "GET"), "{actions:?}");
        assert_eq!(actions.len(), 8);
    }
}
