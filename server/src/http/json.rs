//! The JSON body extractor. Unlike axum's, a body that cannot be read answers with the spec's
//! envelope naming the field (`INVALID_INPUT`, `details.field`): wrong content type -> `body`,
//! malformed JSON -> `body` with line and column, a wrong type or a missing member -> its path.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON request body of type `T`.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .is_some_and(|mime| mime == "application/json" || mime.ends_with("+json"));
        if !is_json {
            return Err(ApiError::invalid_input("body", "Content-Type must be application/json"));
        }
        let limit = request.extensions().get::<super::BodyLimit>().map_or(super::BODY_LIMIT, |l| l.0);
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge { limit }
            } else {
                ApiError::invalid_input("body", "the request body could not be read")
            }
        })?;
        parse(&bytes).map(Json)
    }
}

/// A 200 response whose body is JSON already serialized (for bodies too large to build as a tree).
pub fn json_bytes(body: Vec<u8>) -> axum::response::Response {
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

/// Parses JSON bytes into `T`, naming the failing field. A number written with a zero fraction
/// (`3.0`) is an integer to JSON Schema, so it is read as one where an integer is expected.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match parse_exact(bytes) {
        Err(ApiError::InvalidInput { reason, .. }) if reason.starts_with("invalid type: floating point") => {
            let mut value: serde_json::Value =
                serde_json::from_slice(bytes).map_err(|e| ApiError::invalid_input("body", e.to_string()))?;
            integral_floats_as_integers(&mut value);
            parse_exact(&serde_json::to_vec(&value).unwrap_or_default())
        }
        other => other,
    }
}

fn integral_floats_as_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15) {
                *n = if f < 0.0 { (f as i64).into() } else { (f as u64).into() };
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(members) => members.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

fn parse_exact<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let inner = err.inner();
        let path = err.path().to_string();
        let message = inner.to_string();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::invalid_input("body", format!("malformed JSON: {message}"));
        }
        // serde reports a missing member on its parent; name the member itself.
        let field = match missing_field(&message) {
            Some(name) if path == "." => name.to_string(),
            Some(name) => format!("{path}.{name}"),
            None if path == "." => "body".to_string(),
            None => path,
        };
        ApiError::invalid_input(field, strip_position(&message))
    })?;
    deserializer.end().map_err(|e| ApiError::invalid_input("body", format!("malformed JSON: {e}")))?;
    Ok(value)
}

fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

/// serde_json appends " at line L column C"; the field name says more to a client.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        inner: Inner,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        count: u32,
    }

    fn field(bytes: &str) -> String {
        match parse::<Body>(bytes.as_bytes()) {
            Err(ApiError::InvalidInput { field, .. }) => field,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field("{\"name\": 5, \"inner\": {\"count\": 1}}"), "name");
        assert_eq!(field("{\"name\": \"x\", \"inner\": {\"count\": -1}}"), "inner.count");
        assert_eq!(field("{\"inner\": {\"count\": 1}}"), "name");
        assert_eq!(field("{\"name\": \"x\", \"inner\": {}}"), "inner.count");
        assert_eq!(field("{\"name\": "), "body");
        assert_eq!(field("[]"), "body");
        assert_eq!(field("{\"name\": \"x\", \"inner\": {\"count\": 1}} trailing"), "body");
    }

    async fn post(content_type: &str, body: &'static str) -> (u16, serde_json::Value) {
        use tower::ServiceExt;
        let app =
            axum::Router::new().route("/echo", axum::routing::post(|Json(body): Json<Body>| async move { body.name }));
        let app = app.layer(axum::extract::DefaultBodyLimit::max(64));
        let request = axum::http::Request::post("/echo")
            .header("content-type", content_type)
            .body(axum::body::Body::from(body))
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
    }

    #[tokio::test]
    async fn a_route_answers_unreadable_bodies_with_the_envelope() {
        let (status, body) = post("application/json", "{\"name\": 1, \"inner\": {\"count\": 1}}").await;
        assert_eq!(status, 400);
        assert_eq!(body["code"], "INVALID_INPUT");
        assert_eq!(body["details"]["field"], "name");
        let (status, body) = post("application/json", "{not json").await;
        assert_eq!((status, body["details"]["field"].as_str()), (400, Some("body")));
        let (status, body) = post("text/plain", "{}").await;
        assert_eq!((status, body["details"]["field"].as_str()), (400, Some("body")));
        let (status, body) = post(
            "application/json",
            "{\"name\": \"0123456789012345678901234567890123456789012345678901234567890123456789\"}",
        )
        .await;
        assert_eq!((status, body["code"].as_str()), (413, Some("PAYLOAD_TOO_LARGE")));
    }
}
