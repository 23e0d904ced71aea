//! Reach-out suggestions made by the `reach_out_scan` job for contacts whose cadence is overdue
//! or whose organization, title or address changed: list them, accept one (a one-off reminder for the contact, linked to the suggestion), dismiss
//! one (never resurfaced by a later scan) or delete one (removed outright).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use mycorrhizal_engine::{Precondition, Row, UserView};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::common::{instant, today};
use super::contacts::{scope, summary};
use crate::auth::AuthUser;
use crate::crm::calendar::{self, Recurrence};
use crate::crm::contact::Contact;
use crate::crm::depth::CadencePolicy;
use crate::crm::reach_out::{DISMISSED, PENDING, ReachOutSuggestion};
use crate::crm::records::Reminder;
use crate::error::ApiError;
use crate::state::AppState;

/// An accepted suggestion's reminder falls this many days after today unless the body names a day.
pub const DEFAULT_ACCEPT_DAYS: i64 = 1;

/// The reminder text of an accepted suggestion when the user gives none: who, and the news.
fn default_message(name: &str, s: &ReachOutSuggestion) -> String {
    use crate::crm::reach_out::{KIND_ADDRESS, KIND_ORGANIZATION, KIND_TITLE};
    let name = name.trim();
    match s.kind.as_str() {
        KIND_ORGANIZATION => format!("Reach out to {name}: now at {}", s.new_value),
        KIND_TITLE => format!("Reach out to {name}: now {}", s.new_value),
        KIND_ADDRESS => format!("Reach out to {name}: moved to {}", s.new_value),
        _ => format!("Reach out to {name}"),
    }
}

/// A suggestion as clients see it, with the contact's name and the cadence health computed now.
pub fn view(v: &UserView, row: &Row<ReachOutSuggestion>, now: Timestamp) -> Value {
    let s = &row.body;
    let contact = v.get::<Contact>(s.contact_id).ok();
    let mut out = json!({
        "id": row.id,
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
        "revision": row.meta.revision,
        "contact_id": s.contact_id,
        "contact_vcard_uid": contact.as_ref().map(|c| c.body.uid.clone()).unwrap_or_default(),
        "contact_name": contact.as_ref().map(|c| c.body.name()).unwrap_or_default(),
        "kind": s.kind,
        "old_value": s.old_value,
        "new_value": s.new_value,
        "audit_event_id": s.audit_event_id,
        "status": s.status,
        "policy_id": s.policy_id,
    });
    if let Some(reminder) = s.reminder_id {
        out["reminder_id"] = json!(reminder);
    }
    if let Some(thumb) = contact.as_ref().and_then(|c| summary(c).get("photo_thumbnail").cloned()) {
        out["photo_thumbnail"] = thumb;
    }
    if let Some(health) =
        v.get::<CadencePolicy>(s.policy_id).ok().and_then(|p| super::cadence::health(v, &p, s.contact_id, now).ok())
    {
        out["health"] = health;
    }
    out
}

/// Suggestions with `status` (`None` for all), most overdue first, then oldest first.
pub fn views(v: &UserView, status: Option<&str>, now: Timestamp) -> Result<Vec<Value>, ApiError> {
    let mut out: Vec<Value> = v
        .list::<ReachOutSuggestion>()?
        .iter()
        .filter(|r| status.is_none_or(|s| r.body.status == s))
        .map(|r| view(v, r, now))
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s["health"]["overdue_by"].as_i64().unwrap_or(0)));
    Ok(out)
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct ListQuery {
    /// `pending` (default), `dismissed` or `all`.
    pub status: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/reach-out-suggestions", tag = "reach-out", params(ListQuery), responses(
    (status = 200, description = "`{suggestions, total}`: pending ones unless `status` says otherwise, most overdue first"),
    (status = 400, description = "Unknown status")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let status = match q.status.as_deref().map(str::trim) {
        None | Some("") | Some(PENDING) => Some(PENDING),
        Some(DISMISSED) => Some(DISMISSED),
        Some("all") => None,
        Some(_) => return Err(ApiError::validation("status", "must be pending, dismissed or all")),
    };
    let scope = scope(&state, &user);
    let now = state.engine.clock().now();
    let list = state.blocking(move |_| views(&scope.view()?, status, now)).await??;
    Ok(axum::Json(json!({ "total": list.len(), "suggestions": list })))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AcceptInput {
    /// The reminder's day (RFC 3339 instant or `YYYY-MM-DD`); default tomorrow.
    pub remind_at: Option<String>,
    /// The reminder's text, 1 to 500 characters; default "Reach out to <name>".
    pub message: Option<String>,
}

enum Accepted {
    Done(Box<(Row<ReachOutSuggestion>, Row<Reminder>)>),
    Dismissed,
    HasReminder,
}

/// Creates a one-off reminder for the suggestion's contact and links it. The body is optional.
#[utoipa::path(post, path = "/api/v1/reach-out-suggestions/{id}/accept", tag = "reach-out", params(("id" = u64, Path)), request_body = AcceptInput, responses(
    (status = 201, description = "`{message, suggestion, reminder}`"), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such suggestion"), (status = 409, description = "Dismissed, or already accepted with a live reminder")))]
pub async fn accept(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let input: AcceptInput = if body.iter().all(u8::is_ascii_whitespace) {
        AcceptInput::default()
    } else {
        crate::http::json::parse(&body)?
    };
    let today = today(&state);
    let day = match input.remind_at.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        Some(text) => calendar::day_of(instant("remind_at", text)?),
        None => today.checked_add(jiff::Span::new().days(DEFAULT_ACCEPT_DAYS)).unwrap_or(today),
    };
    let message = input.message.map(|m| m.trim().to_string());
    let scope = scope(&state, &user);
    let outcome = scope
        .write_async(move |tx| {
            let s = tx.get::<ReachOutSuggestion>(id)?;
            if s.body.status == DISMISSED {
                return Ok(Accepted::Dismissed);
            }
            if s.body.reminder_id.is_some_and(|r| tx.get::<Reminder>(r).is_ok()) {
                return Ok(Accepted::HasReminder);
            }
            let contact = tx.get::<Contact>(s.body.contact_id)?;
            let text = message
                .clone()
                .unwrap_or_else(|| default_message(&contact.body.name(), &s.body).chars().take(500).collect());
            let reminder = tx.create(Reminder {
                message: text,
                remind_at: calendar::midnight(day),
                recurrence: Recurrence::Once,
                anchor_day: day.day(),
                contact_id: s.body.contact_id,
                by_mail: false,
                reoccur_from_completion: true,
                last_sent: None,
            })?;
            let linked = tx.update::<ReachOutSuggestion>(id, Precondition::Any, |b| {
                b.reminder_id = Some(reminder.id);
                Ok(())
            })?;
            Ok(Accepted::Done(Box::new((linked, reminder))))
        })
        .await?;
    let (suggestion, reminder) = match outcome {
        Accepted::Done(rows) => *rows,
        Accepted::Dismissed => return Err(ApiError::Conflict("This suggestion was dismissed".into())),
        Accepted::HasReminder => return Err(ApiError::Conflict("This suggestion already has a reminder".into())),
    };
    let now = state.engine.clock().now();
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            let name = v.get::<Contact>(reminder.body.contact_id).map(|c| c.body.name()).ok();
            Ok::<_, ApiError>(json!({
                "message": "Reminder created",
                "suggestion": view(&v, &suggestion, now),
                "reminder": super::reminders::view(&reminder, Some(today), name),
            }))
        })
        .await??;
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// Marks the suggestion dismissed; later scans leave the contact alone. Idempotent; no body.
#[utoipa::path(post, path = "/api/v1/reach-out-suggestions/{id}/dismiss", tag = "reach-out", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{message, suggestion}`"), (status = 404, description = "No such suggestion")))]
pub async fn dismiss(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let row = scope
        .write_async(move |tx| {
            let s = tx.get::<ReachOutSuggestion>(id)?;
            if s.body.status == DISMISSED {
                return Ok(s);
            }
            tx.update::<ReachOutSuggestion>(id, Precondition::Any, |b| {
                b.status = DISMISSED.to_string();
                Ok(())
            })
        })
        .await?;
    let now = state.engine.clock().now();
    let suggestion = state.blocking(move |_| Ok::<_, ApiError>(view(&scope.view()?, &row, now))).await??;
    Ok(axum::Json(json!({ "message": "Suggestion dismissed", "suggestion": suggestion })))
}

/// Removes the suggestion outright (a later scan may propose the contact again). A linked
/// reminder stays.
#[utoipa::path(delete, path = "/api/v1/reach-out-suggestions/{id}", tag = "reach-out", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{message}`"), (status = 404, description = "No such suggestion"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    super::common::delete_record::<ReachOutSuggestion>(&state, &user, &headers, id, "Suggestion deleted").await
}
