//! Reminders: day-granular (time of day zeroed on write), once or recurring (weekly, monthly,
//! quarterly, six-monthly, yearly with the calendar rules), completed into a timeline of
//! completions. "Today" is the server clock in `REMINDER_TIMEZONE`.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jiff::civil::Date;
use mycorrhizal_engine::{Precondition, Row, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::common::{if_match, instant, tagged, today};
use super::contacts::{require_contacts, scope};
use crate::auth::AuthUser;
use crate::crm::calendar::{self, Recurrence};
use crate::crm::contact::Contact;
use crate::crm::records::{BY_CONTACT, BY_DATE, Completion, Reminder, contact_range, micros};
use crate::error::ApiError;
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

pub fn view(row: &Row<Reminder>, today: Option<Date>, contact_name: Option<String>) -> Value {
    let r = &row.body;
    let day = calendar::day_of(r.remind_at);
    let mut out = json!({
        "id": row.id,
        "message": r.message,
        "remind_at": r.remind_at,
        "date": day.to_string(),
        "recurrence": r.recurrence,
        "contact_id": r.contact_id,
        "by_mail": r.by_mail,
        "reoccur_from_completion": r.reoccur_from_completion,
        "completed": false,
        "last_sent": r.last_sent,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    });
    if let Some(today) = today {
        out["overdue"] = json!(day < today);
    }
    if let Some(name) = contact_name {
        out["contact_name"] = json!(name);
    }
    out
}

pub fn completion_view(row: &Row<Completion>) -> Value {
    json!({
        "id": row.id,
        "reminder_id": row.body.reminder_id,
        "contact_id": row.body.contact_id,
        "message": row.body.message,
        "completed_at": row.body.completed_at,
        "created_at": row.meta.created_at,
    })
}

/// A contact's reminders, soonest first.
pub fn of_contact(v: &UserView, contact: u64) -> Result<Vec<Value>, ApiError> {
    let (from, to) = contact_range(contact);
    let rows = v.walk::<Reminder>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: false },
        usize::MAX,
        |_| true,
    )?;
    Ok(rows.rows.iter().map(|r| view(r, None, None)).collect())
}

/// A contact's newest `limit` completions.
pub fn completions_of(v: &UserView, contact: u64, limit: usize) -> Result<Vec<Value>, ApiError> {
    let (from, to) = contact_range(contact);
    let rows = v.walk::<Completion>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(rows.rows.iter().map(completion_view).collect())
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
    let scope = scope(&state, &user);
    let today = today(&state);
    let list = state
        .blocking(move |_| {
            Ok::<_, ApiError>(all(&scope.view()?)?.iter().map(|r| view(r, Some(today), None)).collect::<Vec<_>>())
        })
        .await??;
    Ok(axum::Json(json!({ "reminders": list })))
}

/// Open reminders due within seven days (overdue included), soonest first; when there are five
/// or fewer of those, the earliest five instead.
#[utoipa::path(get, path = "/api/v1/reminders/upcoming", tag = "reminders", responses((status = 200, description = "`{reminders}` with `contact_name` and `overdue`")))]
pub async fn upcoming(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let today = today(&state);
    let list = state.blocking(move |_| upcoming_views(&scope.view()?, today)).await??;
    Ok(axum::Json(json!({ "reminders": list })))
}

/// Open reminders due within seven days (overdue included) or, when five or fewer, the earliest
/// five; with `contact_name` and `overdue`.
pub fn upcoming_views(v: &UserView, today: Date) -> Result<Vec<Value>, ApiError> {
    let horizon = today.checked_add(jiff::Span::new().days(7)).unwrap_or(today);
    // A reminder sits at midnight UTC of its day, so those due by the horizon lie below the next
    // day's midnight in the `date` index: walk only that part.
    let below = horizon
        .checked_add(jiff::Span::new().days(1))
        .ok()
        .map(calendar::midnight)
        .filter(|t| t.as_microsecond() > 0)
        .map(micros);
    let walk = Walk { index: BY_DATE, from: "", to: below.as_deref(), after: None, descending: false };
    let due = v.walk::<Reminder>(walk, usize::MAX, |r| calendar::day_of(r.body.remind_at) <= horizon)?.rows;
    let chosen = if due.len() > 5 { due } else { v.walk::<Reminder>(Walk { to: None, ..walk }, 5, |_| true)?.rows };
    let name = |id: u64| v.get::<Contact>(id).map(|c| c.body.name()).ok();
    Ok(chosen.iter().map(|r| view(r, Some(today), name(r.body.contact_id))).collect())
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminders", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "`{reminders}`"), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let list = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            of_contact(&v, id)
        })
        .await??;
    Ok(axum::Json(json!({ "reminders": list })))
}

async fn create_with(state: &AppState, user: &AuthUser, reminder: Reminder) -> Result<Response, ApiError> {
    let row = scope(state, user)
        .write_async(move |tx| {
            tx.get::<Contact>(reminder.contact_id)?;
            tx.create(reminder.clone())
        })
        .await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        &json!({ "message": "Reminder created", "reminder": view(&row, Some(today(state)), None) }),
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
    let row = scope(&state, &user).get::<Reminder>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &view(&row, Some(today(&state)), None)))
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
    let current = scope(&state, &user).get::<Reminder>(id)?;
    let mut r = reminder(input, None)?;
    r.last_sent = current.body.last_sent;
    let row = scope(&state, &user)
        .write_async(move |tx| {
            tx.get::<Contact>(r.contact_id)?;
            tx.put(id, pre, r.clone())
        })
        .await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::OK,
        &json!({ "message": "Reminder updated", "reminder": view(&row, Some(today(&state)), None) }),
    ))
}

#[utoipa::path(delete, path = "/api/v1/reminders/{id}", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such reminder"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    super::common::delete_record::<Reminder>(&state, &user, &headers, id, "Reminder deleted").await
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
    let skip = super::common::flag(q.skip.as_deref(), "skip")?;
    let today = today(&state);
    let (next, completion) = scope(&state, &user)
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
        body["reminder"] = view(row, Some(today), None);
    }
    if let Some(c) = &completion {
        body["completion"] = completion_view(c);
    }
    Ok((StatusCode::OK, axum::Json(body)).into_response())
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/reminder-completions", tag = "reminders", params(("id" = u64, Path)), responses((status = 200, description = "`{completions}`, newest first"), (status = 404, description = "No such contact")))]
pub async fn completions(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = scope(&state, &user);
    let list = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            completions_of(&v, id, usize::MAX)
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
    scope(&state, &user).write_async(move |tx| tx.delete::<Completion>(id, Precondition::Any)).await?;
    Ok(axum::Json(json!({ "message": "Completion deleted" })))
}
