//! Activities: things done with one or more contacts (a call, a dinner), dated, listed overall
//! or per contact.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use mycorrhizal_engine::{Row, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::activities;
use crate::crm::calendar::{date_range, instant};
use crate::crm::contact::Contact;
use crate::crm::contact::ops::require_contacts;
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::records::{Activity, BY_CONTACT, BY_DATE};
use crate::error::ApiError;
use crate::http::conditional::{if_match, tagged};
use crate::http::json::Json;
use crate::http::params::{self};
use crate::state::AppState;

#[derive(Debug, Deserialize, ToSchema)]
pub struct ActivityInput {
    /// 1 to 200 characters.
    pub title: String,
    pub description: Option<String>,
    pub location: Option<String>,
    /// RFC 3339 instant or `YYYY-MM-DD`.
    pub date: String,
    /// Contacts involved; all must be yours.
    #[serde(default)]
    pub contact_ids: Vec<u64>,
    /// Open vocabulary: `call`, `meal`, `visit`, ...
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub external_ref: Option<String>,
}

fn activity(input: ActivityInput, uuid: String) -> Result<Activity, ApiError> {
    Ok(Activity {
        uuid,
        title: input.title.trim().to_string(),
        description: input.description.unwrap_or_default(),
        location: input.location.unwrap_or_default(),
        date: instant("date", &input.date)?,
        contact_ids: input.contact_ids,
        kind: input.kind.unwrap_or_default(),
        external_ref: input.external_ref.unwrap_or_default(),
    })
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct ActivityQuery {
    /// Case-insensitive substring of title, description or location.
    pub search: Option<String>,
    pub from_date: Option<String>,
    pub to_date: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<String>,
    pub order: Option<String>,
}

fn page(view_: &UserView, contact: Option<u64>, q: &ActivityQuery) -> Result<Value, ApiError> {
    let (lo, hi) = date_range(q.from_date.as_deref(), q.to_date.as_deref())?;
    let limit = params::limit(q.limit.as_deref());
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let (index, from, to) = match contact {
        Some(c) => (
            BY_CONTACT,
            format!("{c:020}{lo:020}"),
            if hi == i64::MAX { format!("{:020}", c + 1) } else { format!("{c:020}{hi:020}") },
        ),
        None => (BY_DATE, format!("{lo:020}"), if hi == i64::MAX { "~".to_string() } else { format!("{hi:020}") }),
    };
    let needle = q.search.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let walk = Walk {
        index,
        from: &from,
        to: Some(&to),
        after: after.as_ref().map(|(v, id)| (v.as_str(), *id)),
        descending: q.order.as_deref() != Some("asc"),
    };
    let found = view_.walk::<Activity>(walk, limit, |r| {
        needle.as_ref().is_none_or(|n| {
            [&r.body.title, &r.body.description, &r.body.location].iter().any(|f| f.to_lowercase().contains(n))
        })
    })?;
    let next = found.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default();
    let items: Vec<Value> = found.rows.iter().map(|r| activities::with_contacts(view_, r)).collect();
    Ok(json!({ "activities": items, "next_cursor": next, "limit": limit }))
}

#[utoipa::path(get, path = "/api/v1/activities", tag = "activities", params(ActivityQuery), responses((status = 200, description = "`{activities, next_cursor, limit}`, newest first")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ActivityQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    Ok(axum::Json(state.blocking(move |_| page(&scope.view()?, None, &q)).await??))
}

#[utoipa::path(get, path = "/api/v1/contacts/{id}/activities", tag = "activities", params(("id" = u64, Path), ActivityQuery), responses((status = 200, description = "`{activities, next_cursor, limit}`"), (status = 404, description = "No such contact")))]
pub async fn list_for_contact(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(q): Query<ActivityQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            require_contacts(&v, &[id])?;
            page(&v, Some(id), &q)
        })
        .await??;
    Ok(axum::Json(body))
}

async fn store(
    state: &AppState,
    user: &AuthUser,
    id: Option<u64>,
    activity: Activity,
    headers: Option<&HeaderMap>,
) -> Result<Row<Activity>, ApiError> {
    let pre = headers.map(if_match).transpose()?.unwrap_or_default();
    let row = state
        .scope(user)
        .write_async(move |tx| {
            for contact in &activity.contact_ids {
                tx.get::<Contact>(*contact)?;
            }
            match id {
                Some(id) => tx.put(id, pre, activity.clone()),
                None => tx.create(activity.clone()),
            }
        })
        .await?;
    Ok(row)
}

#[utoipa::path(post, path = "/api/v1/activities", tag = "activities", request_body = ActivityInput, responses((status = 201, description = "`{message, activity}`"), (status = 404, description = "A contact is not yours")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<ActivityInput>,
) -> Result<Response, ApiError> {
    let activity = activity(input, uuid::Uuid::new_v4().to_string())?;
    let row = store(&state, &user, None, activity, None).await?;
    let body = json!({ "message": "Activity created", "activity": activities::with_contacts(&state.scope(&user).view()?, &row) });
    Ok(tagged(&row, None, StatusCode::CREATED, &body))
}

#[utoipa::path(get, path = "/api/v1/activities/{id}", tag = "activities", params(("id" = u64, Path)), responses((status = 200, description = "The activity with its contacts"), (status = 404, description = "No such activity")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let v = state.scope(&user).view()?;
    let row = v.get::<Activity>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &activities::with_contacts(&v, &row)))
}

#[utoipa::path(put, path = "/api/v1/activities/{id}", tag = "activities", params(("id" = u64, Path)), request_body = ActivityInput, responses(
    (status = 200, description = "The activity"), (status = 404, description = "No such activity, or a contact is not yours"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<ActivityInput>,
) -> Result<Response, ApiError> {
    let current = state.scope(&user).get::<Activity>(id)?;
    let activity = activity(input, current.body.uuid)?;
    let row = store(&state, &user, Some(id), activity, Some(&headers)).await?;
    Ok(tagged(&row, None, StatusCode::OK, &activities::with_contacts(&state.scope(&user).view()?, &row)))
}

#[utoipa::path(delete, path = "/api/v1/activities/{id}", tag = "activities", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such activity"), (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    crate::http::conditional::delete_record::<Activity>(&state, &user, &headers, id, "Activity deleted").await
}
