//! The caller's audit trail: a CSV export of their own events, and undo of an update event
//! (only while the record has not changed since; delete and create events are refused).

use axum::extract::{Path, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::audit::AuditEvent;
use mycorrhizal_engine::{Op, Precondition, Record, UserScope};
use serde_json::{Value, json};

use crate::auth::AuthUser;
use crate::crm::contact::Contact;
use crate::crm::depth::{AgendaItem, Gift, LifeEvent};
use crate::crm::households::{Household, HouseholdMember};
use crate::crm::records::{Activity, Completion, Note, Relationship, Reminder};
use crate::error::ApiError;
use crate::state::AppState;

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

/// The caller's audit events as CSV, oldest first.
#[utoipa::path(get, path = "/api/v1/audit/export", tag = "audit", responses((status = 200, description = "text/csv: id, at, kind, record_id, action, revision, changes (JSON), prev_hash, hash")))]
pub async fn export(State(state): State<AppState>, user: AuthUser) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let csv = state
        .blocking(move |_| {
            let events = scope.view()?.audit_events(0, usize::MAX)?;
            let mut out = String::from("id,at,kind,record_id,action,revision,changes,prev_hash,hash\n");
            for e in events {
                let changes: Vec<Value> = e
                    .changes
                    .iter()
                    .map(|c| json!({ "field": c.field, "before": c.before, "after": c.after }))
                    .collect();
                let action = match e.action {
                    Op::Created => "create",
                    Op::Updated => "update",
                    Op::Deleted => "delete",
                };
                let row = [
                    e.seq.to_string(),
                    e.at.to_string(),
                    e.kind,
                    e.record_id.to_string(),
                    action.to_string(),
                    e.revision.to_string(),
                    Value::Array(changes).to_string(),
                    e.prev_hash,
                    e.hash,
                ];
                out.push_str(&row.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
                out.push('\n');
            }
            Ok::<_, ApiError>(out)
        })
        .await?
        .map_err(|e| {
            tracing::error!(event = "export_failed", component = "audit", error = %e);
            e
        })?;
    Ok(([(CONTENT_TYPE, "text/csv; charset=utf-8"), (CONTENT_DISPOSITION, "attachment; filename=\"audit.csv\"")], csv)
        .into_response())
}

/// Puts back the fields an update changed, if the record is still as that update left it.
async fn revert<R: Record>(scope: &UserScope, event: AuditEvent) -> Result<(), ApiError> {
    let current = scope.get::<R>(event.record_id)?;
    if current.meta.revision != event.revision {
        return Err(ApiError::Conflict("The record changed after this event; undo only the latest change".into()));
    }
    let mut body = serde_json::to_value(&current.body).map_err(ApiError::internal)?;
    for change in &event.changes {
        body[&change.field] = serde_json::from_str(&change.before).map_err(ApiError::internal)?;
    }
    let restored: R = serde_json::from_value(body).map_err(ApiError::internal)?;
    let (id, revision) = (event.record_id, event.revision);
    scope.write_async(move |tx| tx.put(id, Precondition::Revision(revision), restored.clone())).await?;
    Ok(())
}

#[utoipa::path(post, path = "/api/v1/audit/{id}/undo", tag = "audit", params(("id" = u64, Path)), responses(
    (status = 200, description = "Reverted"), (status = 404, description = "No such event of yours"), (status = 409, description = "Not an update event, or the record changed since")))]
pub async fn undo(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let event = scope
        .view()?
        .audit_events(id.saturating_sub(1), 1)?
        .into_iter()
        .find(|e| e.seq == id)
        .ok_or(ApiError::NotFound)?;
    match event.action {
        Op::Updated => {}
        Op::Deleted => return Err(ApiError::Conflict("Delete events cannot be undone".into())),
        Op::Created => {
            return Err(ApiError::Conflict("Only update events can be undone; delete the record instead".into()));
        }
    }
    match event.kind.as_str() {
        "contact" => revert::<Contact>(&scope, event).await?,
        "note" => revert::<Note>(&scope, event).await?,
        "activity" => revert::<Activity>(&scope, event).await?,
        "reminder" => revert::<Reminder>(&scope, event).await?,
        "reminder_completion" => revert::<Completion>(&scope, event).await?,
        "relationship" => revert::<Relationship>(&scope, event).await?,
        "life_event" => revert::<LifeEvent>(&scope, event).await?,
        "gift" => revert::<Gift>(&scope, event).await?,
        "agenda_item" => revert::<AgendaItem>(&scope, event).await?,
        "household" => revert::<Household>(&scope, event).await?,
        "household_member" => revert::<HouseholdMember>(&scope, event).await?,
        other => return Err(ApiError::Conflict(format!("{other} changes cannot be undone"))),
    }
    Ok(axum::Json(json!({ "message": "Change undone" })))
}
