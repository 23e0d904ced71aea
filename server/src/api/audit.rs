//! The caller's audit trail over HTTP: the CSV export and undo, both `crm::audit`'s.

use crate::http::extract::Path;
use axum::extract::State;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use crate::auth::AuthUser;
use crate::crm::audit;
use crate::error::ApiError;
use crate::state::AppState;

/// The caller's audit events as CSV, oldest first.
#[utoipa::path(get, path = "/api/v1/audit/export", tag = "audit", responses((status = 200, description = "text/csv: id, at, kind, record_id, action, revision, changes (JSON), prev_hash, hash")))]
pub async fn export(State(state): State<AppState>, user: AuthUser) -> Result<Response, ApiError> {
    match state.read(&user, audit::export_csv).await {
        Ok(csv) => Ok((
            [(CONTENT_TYPE, "text/csv; charset=utf-8"), (CONTENT_DISPOSITION, "attachment; filename=\"audit.csv\"")],
            csv,
        )
            .into_response()),
        // A refused request keeps the field's envelope; a failure is the export's nested 500.
        Err(e @ (crate::crm::Error::Invalid { .. } | crate::crm::Error::BadParameter { .. })) => Err(e.into()),
        Err(e) => {
            tracing::error!(event = "export_failed", component = "audit", operation = "export:audit", error = %e);
            Ok(super::export::export_failure("export:audit", "database"))
        }
    }
}

#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only events of this kind (`contact`, `note`, ...; `circle` and `tag` name `group`).
    pub entity_type: Option<String>,
    /// Only events of this record: its id, or a contact's vCard UID.
    pub entity_id: Option<String>,
    /// How many, newest first: 1 to 500, otherwise 100.
    pub limit: Option<String>,
}

/// The caller's own audit trail, newest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditQuery), responses(
    (status = 200, body = audit::AuditList, description = "`{audit_events, total}`; `total` is how many are listed")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    crate::http::extract::Query(q): crate::http::extract::Query<AuditQuery>,
) -> Result<axum::Json<audit::AuditList>, ApiError> {
    let limit = q
        .limit
        .as_deref()
        .and_then(|l| l.trim().parse::<usize>().ok())
        .filter(|l| (1..=500).contains(l))
        .unwrap_or(100);
    let list =
        state.read(&user, move |v| audit::latest(v, q.entity_type.as_deref(), q.entity_id.as_deref(), limit)).await?;
    Ok(axum::Json(list))
}

#[utoipa::path(post, path = "/api/v1/audit/{id}/undo", tag = "audit", params(("id" = u64, Path)), responses(
    (status = 200, body = crate::crm::Message, description = "Reverted"), (status = 404, description = "No such event of yours"), (status = 409, description = "Not an update event, or the record changed since")))]
pub async fn undo(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    let event = state.read(&user, move |v| audit::event(v, id)).await?;
    audit::undo(&state.scope(&user), event).await?;
    Ok(axum::Json(crate::crm::Message::new("Change undone")))
}
