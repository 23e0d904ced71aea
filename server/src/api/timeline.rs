//! The operator's console over JSON (admin session only): the event timeline, each subsystem's
//! health, the job runs and each job's health, failures gathered by cause, and the alerts. Each handler
//! reads one `ops::` operation; the bounds and their 400s are the operation's.

use axum::extract::State;

use mycorrhizal_engine::system::Trigger;

use crate::alerts::AlertList;
use crate::error::ApiError;
use crate::http::caller::AdminUser;
use crate::http::extract::Query;
use crate::jobs;
use crate::ops::job_runs::{self, JobHealthList, JobRunView, RunPage, RunQuery};
use crate::ops::timeline::{self, Aggregation, AggregationQuery, EventPage, EventQuery, SubsystemList};
use crate::state::AppState;
use crate::status::SystemStatus;
use axum::Json;

/// The system-event timeline, newest `occurred_at` first, with the number matching.
#[utoipa::path(get, path = "/api/v1/admin/system-events", tag = "admin", params(EventQuery), responses(
    (status = 200, body = EventPage), (status = 400, description = "A filter out of its bounds"), (status = 403, description = "Not an admin session")))]
pub async fn system_events(
    State(state): State<AppState>,
    _admin: AdminUser,
    Query(query): Query<EventQuery>,
) -> Result<Json<EventPage>, ApiError> {
    Ok(Json(timeline::events(&state.engine, query).await?))
}

/// Each subsystem's health, folded from its events, in a fixed order.
#[utoipa::path(get, path = "/api/v1/admin/subsystem-health", tag = "admin", responses(
    (status = 200, body = SubsystemList), (status = 403, description = "Not an admin session")))]
pub async fn subsystem_health(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<Json<SubsystemList>, ApiError> {
    Ok(Json(timeline::subsystems(&state.engine).await?))
}

/// Job runs, newest first, with the number matching.
#[utoipa::path(get, path = "/api/v1/admin/job-runs", tag = "admin", params(RunQuery), responses(
    (status = 200, body = RunPage), (status = 400, description = "A filter out of its bounds"), (status = 403, description = "Not an admin session")))]
pub async fn job_runs(
    State(state): State<AppState>,
    _admin: AdminUser,
    Query(query): Query<RunQuery>,
) -> Result<Json<RunPage>, ApiError> {
    Ok(Json(job_runs::list(&state.engine, query).await?))
}

/// Each job's health (every job of the scheduler's table), folded from its runs.
#[utoipa::path(get, path = "/api/v1/admin/job-runs/health", tag = "admin", responses(
    (status = 200, body = JobHealthList), (status = 403, description = "Not an admin session")))]
pub async fn job_health(State(state): State<AppState>, _admin: AdminUser) -> Result<Json<JobHealthList>, ApiError> {
    Ok(Json(job_runs::health(&state.engine, jobs::names()).await?))
}

/// Failure events of the last `window_hours`, in buckets by component and cause.
#[utoipa::path(get, path = "/api/v1/admin/error-aggregation", tag = "admin", params(AggregationQuery), responses(
    (status = 200, body = Aggregation), (status = 400, description = "window_hours out of 1..168"), (status = 403, description = "Not an admin session")))]
pub async fn error_aggregation(
    State(state): State<AppState>,
    _admin: AdminUser,
    Query(query): Query<AggregationQuery>,
) -> Result<Json<Aggregation>, ApiError> {
    Ok(Json(timeline::aggregate(&state.engine, query).await?))
}

/// Every alert condition's state (`ok`, `alerting` or `disabled`, since when, what is wrong,
/// whether its telling is still pending) and the newest transitions.
#[utoipa::path(get, path = "/api/v1/admin/alerts", tag = "admin", responses(
    (status = 200, body = AlertList), (status = 403, description = "Not an admin session")))]
pub async fn alerts(State(state): State<AppState>, _admin: AdminUser) -> Result<Json<AlertList>, ApiError> {
    Ok(Json(crate::alerts::list(&state.engine, &state.config).await?))
}

/// Evaluates every alert condition now (job run `alert_evaluation`, trigger `manual`): raises
/// and recoveries are told as on schedule. The run is the answer.
#[utoipa::path(post, path = "/api/v1/admin/trigger-alerts", tag = "admin", responses(
    (status = 200, body = JobRunView), (status = 403, description = "Not an admin session")))]
pub async fn trigger_alerts(State(state): State<AppState>, _admin: AdminUser) -> Result<Json<JobRunView>, ApiError> {
    Ok(Json(JobRunView::from(&jobs::run(&state, jobs::ALERTS, Trigger::Manual).await?)))
}

/// Every facet an operator checks in one answer: overall health, the deep health of each part,
/// version and uptime, migrations, the configuration's warnings and features, the database
/// files, storage with its growth and tier, and the release check.
#[utoipa::path(get, path = "/api/v1/admin/system-status", tag = "admin", responses(
    (status = 200, body = SystemStatus), (status = 403, description = "Not an admin session")))]
pub async fn system_status(State(state): State<AppState>, _admin: AdminUser) -> Result<Json<SystemStatus>, ApiError> {
    Ok(Json(crate::status::system_status(&state, jobs::activity(&state.config)).await?))
}
