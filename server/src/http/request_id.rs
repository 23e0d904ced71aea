//! `X-Request-ID`: the client's when it sent a sane one, otherwise a new UUID v4; echoed on every
//! response. The id is also the request's correlation id, reachable from anywhere in the
//! request's task (error bodies, system events) through `ops::correlation::current`.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

pub const HEADER: &str = "x-request-id";

/// Accepts a client id of 1-128 visible ASCII characters; anything else is replaced.
fn acceptable(value: &HeaderValue) -> Option<String> {
    let text = value.to_str().ok()?;
    let ok = !text.is_empty() && text.len() <= 128 && text.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| text.to_string())
}

pub async fn middleware(mut request: Request, next: Next) -> Response {
    let id = request.headers().get(HEADER).and_then(acceptable).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if let Ok(value) = HeaderValue::from_str(&id) {
        request.headers_mut().insert(HEADER, value.clone());
        let mut response = crate::ops::correlation::within(id, next.run(request)).await;
        response.headers_mut().insert(HEADER, value);
        response
    } else {
        next.run(request).await
    }
}
