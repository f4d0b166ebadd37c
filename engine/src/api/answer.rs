//! Answers of the control API: JSON bodies with their status, and the error answer every failure takes
//! (`{"error": {"code", "message", "field"?}}`).

use super::dto::{ErrorBody, ErrorDto};
use super::ops::OpsError;
use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use http::{Response, StatusCode};
use http_body_util::Full;
use serde::Serialize;

/// The body type of every answer.
pub type Body = Full<Bytes>;

const JSON: &str = "application/json";

/// An answer that is an error: its status, code, message and the request field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorAnswer {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// The `Allow` header of a 405.
    pub allow: Option<String>,
}

impl ErrorAnswer {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ErrorAnswer {
        ErrorAnswer {
            status,
            code,
            message: message.into(),
            field: None,
            allow: None,
        }
    }

    /// A 400.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> ErrorAnswer {
        ErrorAnswer::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A 400 naming the field at fault.
    pub fn field(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ErrorAnswer {
        ErrorAnswer {
            field: Some(field.into()),
            ..ErrorAnswer::bad_request(code, message)
        }
    }

    /// The 401: no detail at all, whatever was wrong.
    pub fn unauthorized() -> ErrorAnswer {
        ErrorAnswer::new(StatusCode::UNAUTHORIZED, "unauthorized", "unauthorized")
    }

    /// The answer.
    pub fn response(&self) -> Response<Body> {
        let dto = ErrorDto {
            error: ErrorBody {
                code: self.code.to_owned(),
                message: self.message.clone(),
                field: self.field.clone(),
            },
        };
        let mut r = json(self.status, &dto);
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(allow) = self
            .allow
            .as_deref()
            .and_then(|a| HeaderValue::from_str(a).ok())
        {
            r.headers_mut().insert(ALLOW, allow);
        }
        r
    }
}

impl From<OpsError> for ErrorAnswer {
    fn from(e: OpsError) -> ErrorAnswer {
        let status = e.status();
        let code = e.code();
        match e {
            OpsError::Invalid { field, message } => ErrorAnswer {
                field: Some(field),
                ..ErrorAnswer::new(status, code, message)
            },
            other => ErrorAnswer::new(status, code, other.to_string()),
        }
    }
}

/// `value` as a JSON answer with `status`.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => raw_json(status, Bytes::from(bytes)),
        Err(e) => {
            let text = format!(
                r#"{{"error":{{"code":"internal","message":{}}}}}"#,
                serde_json::Value::String(format!("cannot encode the answer: {e}"))
            );
            raw_json(StatusCode::INTERNAL_SERVER_ERROR, Bytes::from(text))
        }
    }
}

/// A JSON text as the answer.
pub fn raw_json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    async fn body_of(r: Response<Body>) -> serde_json::Value {
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn errors_are_json_with_their_headers() {
        let r = ErrorAnswer::unauthorized().response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers()[WWW_AUTHENTICATE], "Bearer");
        assert_eq!(r.headers()[CONTENT_TYPE], JSON);
        assert_eq!(
            body_of(r).await,
            serde_json::json!({"error": {"code": "unauthorized", "message": "unauthorized"}})
        );
        let mut e = ErrorAnswer::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "no");
        e.allow = Some("GET".into());
        let r = e.response();
        assert_eq!(r.headers()[ALLOW], "GET");
        let r = ErrorAnswer::field("invalid_type", "urls[1]", "expected a string").response();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(body_of(r).await["error"]["field"], "urls[1]");
    }

    #[test]
    fn ops_errors_keep_their_status_and_field() {
        let e = ErrorAnswer::from(OpsError::Invalid {
            field: "depth".into(),
            message: "too deep".into(),
        });
        assert_eq!(
            (e.status, e.code, e.field.as_deref(), e.message.as_str()),
            (
                StatusCode::BAD_REQUEST,
                "invalid",
                Some("depth"),
                "too deep"
            )
        );
        let e = ErrorAnswer::from(OpsError::Unsupported);
        assert_eq!((e.status.as_u16(), e.code), (501, "not_implemented"));
    }
}
