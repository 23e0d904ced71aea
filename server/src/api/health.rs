//! Health probes: `/health/live` (no I/O), `/health/ready` (503 while the database, migrations or
//! the data folder is not ready) and `/health` (overall status plus build facts; 503 only when the
//! database cannot be read). Unauthenticated, and they reveal no secrets. What they answer is
//! assembled by `ops::health`.

use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::ops::health::{self, Health, Live, Probe, Ready};
use crate::state::AppState;

/// Liveness: the process answers. No I/O.
#[utoipa::path(get, path = "/health/live", tag = "health", responses((status = 200, body = Live)))]
pub async fn live() -> Json<Live> {
    Json(health::live())
}

/// Readiness: the database reads and accepts writes, migrations are applied, the data folder is writable.
#[utoipa::path(get, path = "/health/ready", tag = "health", responses(
    (status = 200, body = Ready, description = "Ready"),
    (status = 503, body = Ready, description = "Not ready: see `checks`"),
))]
pub async fn ready(State(state): State<AppState>) -> (StatusCode, Json<Ready>) {
    let probe = Probe::of(&state.config);
    let ready =
        state.blocking(move |engine| probe.ready(engine)).await.unwrap_or_else(|e| Ready::unknown(e.to_string()));
    (if ready.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }, Json(ready))
}

/// Overall health with build facts. `degraded` when the database reads but refuses writes, the
/// data folder is not writable, its disk is past the critical threshold, or an outside system
/// the configuration names did not answer when last probed (every 30 s, in the background;
/// which one, only the admin's system status says).
#[utoipa::path(get, path = "/health", tag = "health", responses(
    (status = 200, body = Health, description = "Healthy or degraded"),
    (status = 503, body = Health, description = "The database cannot be read"),
))]
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let (probe, started) = (Probe::of(&state.config), Instant::now());
    let fallback = probe.clone();
    let health = state
        .blocking(move |engine| probe.health(engine, started))
        .await
        .unwrap_or_else(|_| fallback.unknown(state.engine.clock().now()));
    // The last answers only (refreshed in the background): a slow provider never slows the probe.
    let reach = state.reach.last_known();
    let health = health.with_integrations(reach.into_values().map(|r| r.reason));
    (if health.readable() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }, Json(health))
}
