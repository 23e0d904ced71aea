//! Reminders: day-granular (time of day zeroed on write), once or recurring (weekly, monthly,
//! quarterly, six-monthly, yearly with the calendar rules), completed into a timeline of
//! completions. "Today" is the server clock in `REMINDER_TIMEZONE`.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::contact::ops::require_contacts;
use crate::crm::{
    reminder::ops as reminders, reminder::ops::CompletionList, reminder::ops::ReminderCompleted,
    reminder::ops::ReminderList, reminder::ops::ReminderSaved, reminder::ops::ReminderView,
};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/reminders", tag = "reminders", responses((status = 200, body = ReminderList, description = "`{reminders}`: all, soonest first")))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ReminderList>, ApiError> {
    let today = state.today();
    let reminders = state
        .read(&user, move |v| Ok(reminders::all(v)?.iter().map(|r| ReminderView::of(r, Some(today), None)).collect()))
        .await?;
    Ok(axum::Json(ReminderList { reminders }))
}

/// Open reminders due within seven days (overdue included), soonest first; when there are five
/// or fewer of those, the earliest five instead.
#[utoipa::path(get, path = "/api/v1/reminders/upcoming", tag = "reminders", responses((status = 200, body = ReminderList, description = "`{reminders}` with `contact_name` and `overdue`")))]
pub async fn upcoming(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<ReminderList>, ApiError> {
    let today = state.today();
    let reminders = state.read(&user, move |v| reminders::upcoming_views(v, today)).await?;
    Ok(axum::Json(ReminderList { reminders }))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, body = ReminderList), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<ReminderList>, ApiError> {
    let reminders = state
        .read(&user, move |v| {
            require_contacts(v, &[id])?;
            reminders::of_contact(v, id)
        })
        .await?;
    Ok(axum::Json(ReminderList { reminders }))
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), request_body = reminders::ReminderInput, responses((status = 201, body = ReminderSaved), (status = 404, description = "No such contact")))]
pub async fn create_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<reminders::ReminderInput>,
) -> Result<Tagged<ReminderSaved>, ApiError> {
    let row = reminders::create(&state.scope(&user), Some(id), input).await?;
    let reminder = ReminderView::of(&row, Some(state.today()), None);
    let body = ReminderSaved { message: "Reminder created".into(), reminder };
    Ok(tagged(&row, None, StatusCode::CREATED, body))
}

#[utoipa::path(get, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "The reminder, with `ETag`", body = crate::crm::reminder::ops::ReminderView), (status = 404, description = "No such reminder")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<ReminderView>, ApiError> {
    let row = state.read(&user, move |v| reminders::get(v, id)).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, ReminderView::of(&row, Some(state.today()), None)))
}

#[utoipa::path(put, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), request_body = reminders::ReminderInput, responses(
    (status = 200, body = ReminderSaved), (status = 404, description = "No such reminder or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<reminders::ReminderInput>,
) -> Result<Tagged<ReminderSaved>, ApiError> {
    let pre = if_match(&headers)?;
    let row = reminders::update(&state.scope(&user), id, pre, input).await?;
    let reminder = ReminderView::of(&row, Some(state.today()), None);
    Ok(tagged(&row, None, StatusCode::OK, ReminderSaved { message: "Reminder updated".into(), reminder }))
}

#[utoipa::path(delete, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such reminder"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    crate::crm::reminder::ops::delete(&state.scope(&user), id, crate::http::conditional::if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Reminder deleted")))
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
    (status = 200, body = ReminderCompleted, description = "`{message, reminder?, completion?}`; `reminder` is the rescheduled one (absent for a one-off)"), (status = 404, description = "No such reminder")))]
pub async fn complete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<CompleteQuery>,
) -> Result<axum::Json<ReminderCompleted>, ApiError> {
    let skip = crate::http::params::flag(q.skip.as_deref(), "skip")?;
    Ok(axum::Json(reminders::complete_view(&state.scope(&user), id, state.today(), skip).await?))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminder-completions", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, body = CompletionList, description = "`{completions}`, newest first"), (status = 404, description = "No such contact")))]
pub async fn completions(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<CompletionList>, ApiError> {
    let completions = state
        .read(&user, move |v| {
            require_contacts(v, &[id])?;
            reminders::completions_of(v, id, usize::MAX)
        })
        .await?;
    Ok(axum::Json(CompletionList { completions }))
}

#[utoipa::path(delete, path = "/api/v1/reminder-completions/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, body = Message, description = "Deleted"), (status = 404, description = "No such completion")))]
pub async fn delete_completion(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    reminders::delete_completion(&state.scope(&user), id).await?;
    Ok(axum::Json(Message::new("Completion deleted")))
}
