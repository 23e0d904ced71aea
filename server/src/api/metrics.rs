//! `GET /metrics` (outside `/api/v1`, like the health probes): the Prometheus text format, off
//! unless `METRICS_ENABLED`. A scraper presents `METRICS_TOKEN` as a bearer token, or an admin
//! brings a session; anyone else gets the error envelope (401 or 403, also while it is off).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::http::caller::AdminUser;
use crate::state::AppState;

/// The text format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether `parts` carry the configured scrape token (compared in constant time).
fn has_token(parts: &Parts, token: &str) -> bool {
    let presented = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    presented.len() == token.len() && presented.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[utoipa::path(get, path = "/metrics", tag = "health", responses(
    (status = 200, description = "The Prometheus text format", content_type = "text/plain"),
    (status = 401, description = "Neither the scrape token nor a session"),
    (status = 403, description = "A session that is not an admin's"),
    (status = 404, description = "METRICS_ENABLED is off (told to an admin only)")))]
pub async fn metrics(State(state): State<AppState>, mut parts: Parts) -> Result<Response, ApiError> {
    let enabled = state.config.features.metrics_enabled;
    let by_token =
        enabled && state.config.features.metrics_token.as_ref().is_some_and(|t| has_token(&parts, t.expose()));
    if !by_token {
        AdminUser::from_request_parts(&mut parts, &state).await?;
    }
    if !enabled {
        return Err(ApiError::FeatureDisabled("Metrics are not enabled on this server (METRICS_ENABLED)"));
    }
    let jobs = crate::jobs::names();
    let read = state.blocking(move |engine| crate::metrics::read(engine, &jobs)).await??;
    let alerts = crate::alerts::list(&state.engine, &state.config).await?;
    let states: Vec<(String, bool)> = alerts.alerts.into_iter().map(|a| (a.condition, a.state == "alerting")).collect();
    let filesystem = crate::ops::fs::space(&state.config.data_dir);
    let body = crate::metrics::render(&state.engine, &read, &states, filesystem);
    let mut response = body.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(response)
}
