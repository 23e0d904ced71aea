//! Reminders: day-granular (time of day zeroed on write), once or recurring (weekly, monthly,
//! quarterly, six-monthly, yearly with the calendar rules), completed into a timeline of
//! completions. "Today" is the server clock in `REMINDER_TIMEZONE`.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use mycorrhizal_engine::{Precondition, Row, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::calendar::instant;
use crate::crm::calendar::{self, Recurrence};
use crate::crm::contact::Contact;
use crate::crm::contact::ops::require_contacts;
use crate::crm::records::{BY_DATE, Completion, Reminder};
use crate::crm::reminders;
use crate::error::ApiError;
use crate::http::conditional::{if_match, tagged};
use crate::http::json::Json;
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct ReminderInput {
    /// 1 to 500 characters.
    pub message: String,
    /// The day (RFC 3339 instant or `YYYY-MM-DD`); its time of day is dropped.
    pub remind_at: String,
    /// `once`, `weekly`, `monthly`, `quarterly`, `six-months` or `yearly`.
    pub recurrence: String,
    /// The contact (on the nested route the path wins).
    pub contact_id: Option<u64>,
    pub by_mail: Option<bool>,
    /// Reschedule from the completion day (default) rather than from the due day.
    pub reoccur_from_completion: Option<bool>,
}

fn reminder(input: ReminderInput, contact: Option<u64>) -> Result<Reminder, ApiError> {
    let recurrence = Recurrence::parse(input.recurrence.trim())
        .ok_or_else(|| ApiError::validation("recurrence", format!("must be one of {}", Recurrence::ALL)))?;
    let contact_id = contact.or(input.contact_id).ok_or_else(|| ApiError::validation("contact_id", "is required"))?;
    let day = calendar::day_of(instant("remind_at", &input.remind_at)?);
    Ok(Reminder {
        message: input.message.trim().to_string(),
        remind_at: calendar::midnight(day),
        recurrence,
        anchor_day: day.day(),
        contact_id,
        by_mail: input.by_mail.unwrap_or(false),
        reoccur_from_completion: input.reoccur_from_completion.unwrap_or(true),
        last_sent: None,
    })
}

fn all(v: &UserView) -> Result<Vec<Row<Reminder>>, ApiError> {
    Ok(v.walk::<Reminder>(
        Walk { index: BY_DATE, from: "", to: None, after: None, descending: false },
        usize::MAX,
        |_| true,
    )?
    .rows)
}

#[utoipa::path(get, path = "/api/v1/reminders", tag = "reminders", responses((status = 200, description = "`{reminders}`: all, soonest first")))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let today = state.today();
    let list = state
        .blocking(move |_| {
            Ok::<_, ApiError>(
                all(&scope.view()?)?.iter().map(|r| reminders::view(r, Some(today), None)).collect::<Vec<_>>(),
            )
        })
        .await??;
    Ok(axum::Json(json!({ "reminders": list })))
}

/// Open reminders due within seven days (overdue included), soonest first; when there are five
/// or fewer of those, the earliest five instead.
#[utoipa::path(get, path = "/api/v1/reminders/upcoming", tag = "reminders", responses((status = 200, description = "`{reminders}` with `contact_name` and `overdue`")))]
pub async fn upcoming(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let today = state.today();
    let list = state.blocking(move |_| reminders::upcoming_views(&scope.view()?, today)).await??;
    Ok(axum::Json(json!({ "reminders": list })))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "`{reminders}`"), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let list = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            reminders::of_contact(&v, id)
        })
        .await??;
    Ok(axum::Json(json!({ "reminders": list })))
}

async fn create_with(state: &AppState, user: &AuthUser, reminder: Reminder) -> Result<Response, ApiError> {
    let row = state
        .scope(user)
        .write_async(move |tx| {
            tx.get::<Contact>(reminder.contact_id)?;
            tx.create(reminder.clone())
        })
        .await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        &json!({ "message": "Reminder created", "reminder": reminders::view(&row, Some(state.today()), None) }),
    ))
}

#[utoipa::path(post, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), request_body = ReminderInput, responses((status = 201, description = "`{message, reminder}`"), (status = 404, description = "No such contact")))]
pub async fn create_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<ReminderInput>,
) -> Result<Response, ApiError> {
    let r = reminder(input, Some(id))?;
    create_with(&state, &user, r).await
}

#[utoipa::path(get, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "The reminder, with `ETag`"), (status = 404, description = "No such reminder")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let row = state.scope(&user).get::<Reminder>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &reminders::view(&row, Some(state.today()), None)))
}

#[utoipa::path(put, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), request_body = ReminderInput, responses(
    (status = 200, description = "`{message, reminder}`"), (status = 404, description = "No such reminder or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<ReminderInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let current = state.scope(&user).get::<Reminder>(id)?;
    let mut r = reminder(input, None)?;
    r.last_sent = current.body.last_sent;
    let row = state
        .scope(&user)
        .write_async(move |tx| {
            tx.get::<Contact>(r.contact_id)?;
            tx.put(id, pre, r.clone())
        })
        .await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::OK,
        &json!({ "message": "Reminder updated", "reminder": reminders::view(&row, Some(state.today()), None) }),
    ))
}

#[utoipa::path(delete, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such reminder"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    crate::http::conditional::delete_record::<Reminder>(&state, &user, &headers, id, "Reminder deleted").await
}

#[derive(Debug, Default, Deserialize, IntoParams)]
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
    let (next, completion) = state
        .scope(&user)
        .write_async(move |tx| {
            let current = tx.get::<Reminder>(id)?;
            let r = current.body.clone();
            let completion = if skip {
                None
            } else {
                Some(tx.create(Completion {
                    reminder_id: Some(id),
                    contact_id: r.contact_id,
                    message: r.message.clone(),
                    completed_at: tx.now(),
                })?)
            };
            if r.recurrence == Recurrence::Once {
                tx.delete::<Reminder>(id, Precondition::Any)?;
                return Ok((None, completion));
            }
            let due = calendar::day_of(r.remind_at);
            let mut next = if r.reoccur_from_completion { today.max(due) } else { due };
            loop {
                next = r.recurrence.advance(next, r.anchor_day).unwrap_or(today);
                if next > today {
                    break;
                }
            }
            let row = tx.update::<Reminder>(id, Precondition::Any, |rem| {
                rem.remind_at = calendar::midnight(next);
                Ok(())
            })?;
            Ok((Some(row), completion))
        })
        .await?;
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
    let scope = state.scope(&user);
    let list = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            reminders::completions_of(&v, id, usize::MAX)
        })
        .await??;
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
