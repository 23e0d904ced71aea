//! HTTP plumbing: the router with its middleware stack, fallbacks that keep the error envelope
//! for unknown paths and wrong methods, and the per-request log line.

pub mod caller;
pub mod client;
pub mod conditional;
pub mod extract;
pub mod gate;
pub mod json;
pub mod params;
pub mod request_id;
pub mod upload;

use std::time::Instant;

use axum::Router;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::response::Response;

use crate::auth::limits::Rate;
use crate::error::ApiError;
use crate::state::AppState;
use client::client_ip;

/// Largest request body accepted anywhere (routes that take uploads raise their own).
pub const BODY_LIMIT: usize = 10 * 1024 * 1024;

/// The body limit of a route that raises [`BODY_LIMIT`], so its 413 names the limit in force.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// The layers that give one route a body limit of `bytes`: axum's, and the [`BodyLimit`] its
/// JSON extractor reports in a 413.
pub fn body_limit<S: Clone + Send + Sync + 'static>(
    route: axum::routing::MethodRouter<S>,
    bytes: usize,
) -> axum::routing::MethodRouter<S> {
    route
        .layer::<_, std::convert::Infallible>(DefaultBodyLimit::max(bytes))
        .layer::<_, std::convert::Infallible>(axum::Extension(BodyLimit(bytes)))
}

/// What the composition root tells the shared stack about its front doors, so the plumbing
/// imports none of them: the per-IP rate buckets beyond the API's, and the page a browser gets
/// for a path nobody serves.
#[derive(Clone, Copy)]
pub struct Doors {
    /// `(bucket name, whether a path is the door's, its per-IP rate from the configuration)`.
    pub buckets: &'static [(&'static str, fn(&str) -> bool, fn(&crate::config::Config) -> Rate)],
    /// For a browser's request of an unknown `path` (with its `Accept-Language`): the door's
    /// own "not found" page, or `None` for the JSON envelope.
    pub not_found_page: fn(&str, Option<&str>) -> Option<Response>,
}

/// The front doors' routes wrapped in what every request gets: the fallbacks that keep the error
/// envelope, the body limit, the per-IP rates, the request log and the request id.
pub fn serve(routes: Router<AppState>, state: AppState, doors: Doors) -> Router {
    routes
        .fallback(move |request: Request| not_found(request, doors))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn_with_state((state.clone(), doors), rate_limit))
        .layer(middleware::from_fn(log_request))
        .layer(middleware::from_fn(request_id::middleware))
        .with_state(state)
}

/// The per-client-IP rates: the API's and each door's bucket (the API's per-user bucket is in the
/// auth extractor).
async fn rate_limit(State((state, doors)): State<(AppState, Doors)>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let bucket = if path.starts_with("/api/") {
        Some(("api", state.auth.limits.api))
    } else {
        doors.buckets.iter().find(|(_, owns, _)| owns(path)).map(|(name, _, rate)| (*name, rate(&state.config)))
    };
    if let Some((name, rate)) = bucket {
        let peer = client::socket_peer(request.extensions());
        let ip = client_ip(peer, request.headers(), &state.config.trusted_proxies);
        if let Err(refusal) = state.auth.limits.take(format!("{name}:ip:{ip}"), rate) {
            return ApiError::RateLimited { retry_after: refusal.retry_after.as_secs().max(1), locked: false }
                .into_response();
        }
    }
    next.run(request).await
}

/// A path nobody serves: the error envelope, or for a browser asking for a page, the owning
/// door's "not found" page.
async fn not_found(request: Request, doors: Doors) -> Response {
    let headers = request.headers();
    let wants_html = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"));
    if wants_html {
        let lang = headers.get(axum::http::header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
        if let Some(page) = (doors.not_found_page)(request.uri().path(), lang) {
            return page;
        }
    }
    ApiError::NotFound.into_response()
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// One JSON line per request with the spec's log keys (and the signed-in user's id, once the
/// handler authenticated one), and the request counted for `/metrics` under its route template.
async fn log_request(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route =
        request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()).unwrap_or_else(|| "unmatched".into());
    let request_id = crate::ops::correlation::current().unwrap_or_default();
    let caller = caller::Caller::default();
    request.extensions_mut().insert(caller.clone());
    let response = next.run(request).await;
    let status = response.status();
    let took = started.elapsed();
    let result = if status.is_server_error() { "failure" } else { "success" };
    tracing::info!(
        event = "http_request",
        component = "http",
        operation = %format!("{method} {route}"),
        status = status.as_u16(),
        duration_ms = took.as_millis() as u64,
        result,
        request_id = %request_id,
        correlation_id = %request_id,
        user_id = caller.user_id(),
    );
    crate::metrics::observe_http(&route, method.as_str(), status.as_u16(), took);
    response
}
