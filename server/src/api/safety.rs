//! The operator's safety net over HTTP (admin session only): run a backup or the restore drill
//! now (recorded as job runs like their schedules). Restores are not offered here: a restore
//! replaces the whole instance and needs the server stopped (`mycorrhizal restore`).

use axum::extract::State;
use mycorrhizal_engine::system::Trigger;

use crate::error::ApiError;
use crate::http::caller::AdminUser;
use crate::integrity::IntegrityReport;
use crate::jobs;
use crate::ops::job_runs::JobRunView;
use crate::state::AppState;

/// Writes a signed backup into `BACKUP_DIR` now and prunes to `BACKUP_KEEP` (job run
/// `scheduled_backup`, trigger `manual`; `skipped` without `BACKUP_DIR`). Emits
/// `backup_completed` or `backup_failed`. The run is the answer, whatever its result.
#[utoipa::path(post, path = "/api/v1/admin/trigger-backup", tag = "admin", responses((status = 200, body = JobRunView)))]
pub async fn trigger_backup(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<JobRunView>, ApiError> {
    Ok(axum::Json(JobRunView::from(&jobs::run(&state, jobs::BACKUP, Trigger::Manual).await?)))
}

/// Drills the newest backup now (job run `restore_drill`; `skipped` when there is none):
/// restores it into a scratch folder and compares it with its manifest. Emits
/// `restore_test_completed` or `backup_failed` (severity `error`).
#[utoipa::path(post, path = "/api/v1/admin/trigger-restore-drill", tag = "admin", responses((status = 200, body = JobRunView)))]
pub async fn trigger_restore_drill(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<JobRunView>, ApiError> {
    Ok(axum::Json(JobRunView::from(&jobs::run(&state, jobs::RESTORE_DRILL, Trigger::Manual).await?)))
}

/// Runs the integrity sweep now and answers its report (also stored, and recorded as job run
/// `db_integrity_check`): storage read back, index entries against live rows, pictures and
/// attachment digests, the change feed, search document counts and every audit chain. Counts
/// and kinds only. Always 200; `status` says `ok`, `failed` or `error`.
#[utoipa::path(get, path = "/api/v1/admin/integrity-check", tag = "admin", responses((status = 200, body = IntegrityReport)))]
pub async fn integrity_check(
    State(state): State<AppState>,
    _admin: AdminUser,
) -> Result<axum::Json<IntegrityReport>, ApiError> {
    Ok(axum::Json(jobs::integrity_now(&state).await.1))
}
