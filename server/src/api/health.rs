//! Health probes: `/health/live` (no I/O), `/health/ready` (503 while the database, migrations or
//! the data folder is not ready) and `/health` (overall status plus build facts; 503 only when the
//! database cannot be read). Unauthenticated, and they reveal no secrets.

use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use jiff::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::build_info;
use crate::ops::fs;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
pub struct Live {
    /// Always `live`.
    status: &'static str,
}

/// Liveness: the process answers. No I/O.
#[utoipa::path(get, path = "/health/live", tag = "health", responses((status = 200, body = Live)))]
pub async fn live() -> Json<Live> {
    Json(Live { status: "live" })
}

#[derive(Serialize, ToSchema)]
pub struct Check {
    /// `ok` or `failed`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl Check {
    fn from(result: Result<(), String>) -> Check {
        match result {
            Ok(()) => Check { status: "ok", reason: None },
            Err(reason) => Check { status: "failed", reason: Some(reason) },
        }
    }

    fn ok(&self) -> bool {
        self.status == "ok"
    }
}

#[derive(Serialize, ToSchema)]
pub struct ReadyChecks {
    database: Check,
    migrations: Check,
    filesystem: Check,
}

#[derive(Serialize, ToSchema)]
pub struct Ready {
    /// `ready` or `not_ready`.
    status: &'static str,
    checks: ReadyChecks,
}

/// Readiness: the database reads and accepts writes, migrations are applied, the data folder is writable.
#[utoipa::path(get, path = "/health/ready", tag = "health", responses(
    (status = 200, body = Ready, description = "Ready"),
    (status = 503, body = Ready, description = "Not ready: see `checks`"),
))]
pub async fn ready(State(state): State<AppState>) -> (StatusCode, Json<Ready>) {
    let data_dir = state.config.data_dir.clone();
    let probe = state
        .blocking(move |engine| {
            let database = engine
                .check_read()
                .map_err(|e| format!("database read failed: {e}"))
                .and_then(|()| engine.is_writable().then_some(()).ok_or_else(|| "database refuses writes".to_string()));
            let migrations = (engine.schema_version() == crate::crm::schema_version())
                .then_some(())
                .ok_or_else(|| "migrations pending".to_string());
            (database, migrations, fs::probe_writable(&data_dir))
        })
        .await;
    let (database, migrations, filesystem) =
        probe.unwrap_or_else(|e| (Err(e.to_string()), Err("unknown".into()), Err("unknown".into())));
    let checks = ReadyChecks {
        database: Check::from(database),
        migrations: Check::from(migrations),
        filesystem: Check::from(filesystem),
    };
    let ready = checks.database.ok() && checks.migrations.ok() && checks.filesystem.ok();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(Ready { status: if ready { "ready" } else { "not_ready" }, checks }))
}

#[derive(Serialize, ToSchema)]
pub struct DatabaseHealth {
    /// `healthy` or `unhealthy`.
    status: &'static str,
    response_time_ms: f64,
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `healthy`, `degraded` (still 200) or `unhealthy`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    timestamp: Timestamp,
    database: DatabaseHealth,
    version: &'static str,
    commit: &'static str,
    build_date: &'static str,
    /// Constant `v1` while the routes live under `/api/v1`.
    api_contract_version: &'static str,
    /// The oldest supported client version; absent when no floor is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    min_client_version: Option<String>,
    deployment: &'static str,
    capabilities: Vec<&'static str>,
}

/// Overall health with build facts. `degraded` when the database reads but refuses writes, the
/// data folder is not writable, or its disk is past the critical threshold.
#[utoipa::path(get, path = "/health", tag = "health", responses(
    (status = 200, body = Health, description = "Healthy or degraded"),
    (status = 503, body = Health, description = "The database cannot be read"),
))]
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let data_dir = state.config.data_dir.clone();
    let critical = f64::from(state.config.storage.critical_percent);
    let started = Instant::now();
    let probe = state
        .blocking(move |engine| {
            let read = engine.check_read().is_ok();
            let elapsed = started.elapsed().as_secs_f64() * 1000.0;
            let impaired = !engine.is_writable()
                || fs::probe_writable(&data_dir).is_err()
                || fs::usage_percent(&data_dir).is_some_and(|p| p >= critical);
            (read, elapsed, impaired)
        })
        .await;
    let (read, elapsed, impaired) = probe.unwrap_or((false, 0.0, true));
    let status = match (read, impaired) {
        (false, _) => "unhealthy",
        (true, true) => "degraded",
        (true, false) => "healthy",
    };
    let body = Health {
        status,
        timestamp: state.engine.clock().now(),
        database: DatabaseHealth {
            status: if read { "healthy" } else { "unhealthy" },
            response_time_ms: (elapsed * 1000.0).round() / 1000.0,
        },
        version: build_info::VERSION,
        commit: build_info::COMMIT,
        build_date: build_info::BUILD_DATE,
        api_contract_version: build_info::API_CONTRACT_VERSION,
        min_client_version: state.config.min_client_version.map(|v| v.to_string()),
        deployment: "server",
        capabilities: Vec::new(),
    };
    (if read { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }, Json(body))
}
