//! Reminders: day-granular (time of day zeroed on write), once or recurring (weekly, monthly,
//! quarterly, six-monthly, yearly with the calendar rules), completed into a timeline of
//! completions. "Today" is the server clock in `REMINDER_TIMEZONE`.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::Precondition;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::contact::ops::require_contacts;
use crate::crm::records::{Completion, Reminder};
use crate::crm::reminders;
use crate::error::ApiError;
use crate::http::conditional::{if_match, tagged};
use crate::http::json::Json;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/reminders", tag = "reminders", responses((status = 200, description = "`{reminders}`: all, soonest first")))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let today = state.today();
    let list = state
        .read(&user, move |v| {
            Ok(reminders::all(v)?.iter().map(|r| reminders::view(r, Some(today), None)).collect::<Vec<_>>())
        })
        .await?;
    Ok(axum::Json(json!({ "reminders": list })))
}

/// Open reminders due within seven days (overdue included), soonest first; when there are five
/// or fewer of those, the earliest five instead.
#[utoipa::path(get, path = "/api/v1/reminders/upcoming", tag = "reminders", responses((status = 200, description = "`{reminders}` with `contact_name` and `overdue`")))]
pub async fn upcoming(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let today = state.today();
    let list = state.read(&user, move |v| reminders::upcoming_views(v, today)).await?;
    Ok(axum::Json(json!({ "reminders": list })))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "`{reminders}`"), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let list = state
        .read(&user, move |v| {
            require_contacts(v, &[id])?;
            reminders::of_contact(v, id)
        })
        .await?;
    Ok(axum::Json(json!({ "reminders": list })))
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), request_body = reminders::ReminderInput, responses((status = 201, description = "`{message, reminder}`"), (status = 404, description = "No such contact")))]
pub async fn create_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<reminders::ReminderInput>,
) -> Result<Response, ApiError> {
    let row = reminders::create(&state.scope(&user), Some(id), input).await?;
    let body = json!({ "message": "Reminder created", "reminder": reminders::view(&row, Some(state.today()), None) });
    Ok(tagged(&row, None, StatusCode::CREATED, &body))
}

#[utoipa::path(get, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "The reminder, with `ETag`", body = crate::crm::reminders::ReminderView), (status = 404, description = "No such reminder")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let row = state.read(&user, move |v| reminders::get(v, id)).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &reminders::view(&row, Some(state.today()), None)))
}

#[utoipa::path(put, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), request_body = reminders::ReminderInput, responses(
    (status = 200, description = "`{message, reminder}`"), (status = 404, description = "No such reminder or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<reminders::ReminderInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let row = reminders::update(&state.scope(&user), id, pre, input).await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::OK,
        &json!({ "message": "Reminder updated", "reminder": reminders::view(&row, Some(state.today()), None) }),
    ))
}

#[utoipa::path(delete, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such reminder"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    crate::http::conditional::delete_record::<Reminder>(&state, &user, &headers, id, "Reminder deleted").await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CompleteQuery {
    /// `true` to move a recurring reminder on without recording a completion.
    pub skip: Option<String>,
}

/// Completes a reminder: records a completion (the timeline entry) and moves a recurring reminder
/// to its next date after today; a one-off reminder is done and removed.
#[utoipa::path(post, path = "/api/v1/reminders/{id}/complete", tag = "reminders", params(("id" = u64, Path), CompleteQuery), responses(
    (status = 200, description = "`{message, reminder?, completion?}`; `reminder` is the rescheduled one (absent for a one-off)"), (status = 404, description = "No such reminder")))]
pub async fn complete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<CompleteQuery>,
) -> Result<Response, ApiError> {
    let skip = crate::http::params::flag(q.skip.as_deref(), "skip")?;
    let today = state.today();
    let (next, completion) = reminders::complete(&state.scope(&user), id, today, skip).await?;
    let mut body =
        json!({ "message": if next.is_some() { "Reminder completed and rescheduled" } else { "Reminder completed" } });
    if let Some(row) = &next {
        body["reminder"] = reminders::view(row, Some(today), None);
    }
    if let Some(c) = &completion {
        body["completion"] = reminders::completion_view(c);
    }
    Ok((StatusCode::OK, axum::Json(body)).into_response())
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminder-completions", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "`{completions}`, newest first"), (status = 404, description = "No such contact")))]
pub async fn completions(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let list = state
        .read(&user, move |v| {
            require_contacts(v, &[id])?;
            reminders::completions_of(v, id, usize::MAX)
        })
        .await?;
    Ok(axum::Json(json!({ "completions": list })))
}

#[utoipa::path(delete, path = "/api/v1/reminder-completions/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such completion")))]
pub async fn delete_completion(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    state.scope(&user).write_async(move |tx| tx.delete::<Completion>(id, Precondition::Any)).await?;
    Ok(axum::Json(json!({ "message": "Completion deleted" })))
}
