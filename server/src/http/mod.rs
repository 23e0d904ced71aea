//! HTTP plumbing: the router with its middleware stack, fallbacks that keep the error envelope
//! for unknown paths and wrong methods, and the per-request log line.

pub mod json;
pub mod request_id;

use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::Response;

use crate::error::ApiError;
use crate::state::AppState;

/// Largest request body accepted anywhere (routes that take uploads raise their own).
pub const BODY_LIMIT: usize = 10 * 1024 * 1024;

/// The whole application: every route, the fallbacks, and the middleware.
pub fn app(state: AppState) -> Router {
    crate::api::router()
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(log_request))
        .layer(middleware::from_fn(request_id::middleware))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// One JSON line per request with the spec's log keys.
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route =
        request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()).unwrap_or_else(|| "unmatched".into());
    let request_id = request_id::current().unwrap_or_default();
    let response = next.run(request).await;
    let status = response.status();
    let result = if status.is_server_error() { "failure" } else { "success" };
    tracing::info!(
        event = "http_request",
        component = "http",
        operation = %format!("{method} {route}"),
        status = status.as_u16(),
        duration_ms = started.elapsed().as_millis() as u64,
        result,
        request_id = %request_id,
        correlation_id = %request_id,
    );
    response
}
