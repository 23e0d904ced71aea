//! Life events, gifts and conversation-agenda items: per-contact records named by the contact's
//! UID (`entity_id`) or integer id (`contact_id`). Lists are per contact or, without one, the
//! user's most recently updated first.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use jiff::Timestamp;
use mycorrhizal_codecs::dates::Partial;
use mycorrhizal_engine::{Precondition, Record, Row, UPDATED_INDEX, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::calendar::instant;
use crate::crm::contact::{Contact, INDEX_UID};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::depth::{AgendaItem, Gift, LifeEvent};
use crate::crm::depth_views;
use crate::crm::records::BY_CONTACT;
use crate::error::ApiError;
use crate::http::conditional::{if_match, tagged};
use crate::http::json::Json;
use crate::http::params::{self};
use crate::state::AppState;

/// The contact an input names, which must be the caller's.
fn resolve(v: &UserView, entity_id: Option<&str>, contact_id: Option<u64>) -> Result<u64, ApiError> {
    let id = match (entity_id.filter(|e| !e.is_empty()), contact_id) {
        (_, Some(id)) => id,
        (Some(uid), None) => {
            *v.find::<Contact>(INDEX_UID, &uid.trim().to_lowercase())?.first().ok_or(ApiError::NotFound)?
        }
        (None, None) => {
            return Err(ApiError::validation("entity_id", "is required (the contact's UID), or contact_id"));
        }
    };
    v.get::<Contact>(id).map_err(|_| ApiError::NotFound)?;
    Ok(id)
}

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct ListQuery {
    /// The contact's UID.
    pub entity_id: Option<String>,
    /// Or its integer id.
    pub contact_id: Option<u64>,
    pub cursor: Option<String>,
    pub limit: Option<String>,
    /// `desc` (default) or `asc`.
    pub order: Option<String>,
}

fn list_rows<R: Record>(
    v: &UserView,
    q: &ListQuery,
    key: &str,
    render: impl Fn(&Row<R>) -> Value,
) -> Result<Value, ApiError> {
    let limit = params::limit(q.limit.as_deref());
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let descending = q.order.as_deref() != Some("asc");
    let contact = match (&q.entity_id, q.contact_id) {
        (None, None) => None,
        (e, c) => Some(resolve(v, e.as_deref(), c)?),
    };
    let bounds = contact.map(|c| (format!("{c:020}"), format!("{:020}", c + 1)));
    let walk = match &bounds {
        Some((from, to)) => Walk { index: BY_CONTACT, from, to: Some(to), after: None, descending },
        None => Walk { index: UPDATED_INDEX, from: "", to: None, after: None, descending },
    };
    let walk = Walk { after: after.as_ref().map(|(v, id)| (v.as_str(), *id)), ..walk };
    let page = v.walk::<R>(walk, limit, |_| true)?;
    let next = page.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default();
    let items: Vec<Value> = page.rows.iter().map(render).collect();
    Ok(json!({ key: items, "next_cursor": next, "limit": limit }))
}

// ---- life events -------------------------------------------------------------------------

#[derive(Debug, Deserialize, ToSchema)]
pub struct LifeEventInput {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub category: String,
    /// `{year?, month?, day?}`, any subset.
    #[schema(value_type = Object)]
    #[serde(default)]
    pub date: Partial,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub related_entity_ids: Vec<String>,
    #[serde(default)]
    pub remind: bool,
}

fn life_event(v: &UserView, input: LifeEventInput) -> Result<LifeEvent, ApiError> {
    let contact_id = resolve(v, input.entity_id.as_deref(), input.contact_id)?;
    Ok(LifeEvent {
        contact_id,
        kind: input.kind.trim().to_string(),
        category: input.category,
        date: input.date.into(),
        description: input.description,
        related: input.related_entity_ids,
        remind: input.remind,
    })
}

#[utoipa::path(get, path = "/api/v1/life-events", tag = "depth", params(ListQuery), responses((status = 200, description = "`{life_events, next_cursor, limit}`"), (status = 404, description = "No such contact")))]
pub async fn list_life_events(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let (scope, today) = (state.scope(&user), state.today());
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            list_rows::<LifeEvent>(&v, &q, "life_events", |r| depth_views::life_event_view(&v, r, today))
        })
        .await??;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/life-events", tag = "depth", request_body = LifeEventInput, responses((status = 201, description = "`{message, life_event}`"), (status = 400, description = "Invalid, field named"), (status = 404, description = "No such contact")))]
pub async fn create_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<LifeEventInput>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let event = life_event(&scope.view()?, input)?;
    let row =
        scope.write_async(move |tx| tx.get::<Contact>(event.contact_id).and_then(|_| tx.create(event.clone()))).await?;
    let body = json!({ "message": "Life event created", "life_event": depth_views::life_event_view(&scope.view()?, &row, state.today()) });
    Ok(tagged(&row, None, StatusCode::CREATED, &body))
}

#[utoipa::path(get, path = "/api/v1/life-events/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The life event"), (status = 404, description = "No such event")))]
pub async fn get_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let v = state.scope(&user).view()?;
    let row = v.get::<LifeEvent>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &depth_views::life_event_view(&v, &row, state.today())))
}

#[utoipa::path(put, path = "/api/v1/life-events/{id}", tag = "depth", params(("id" = u64, Path)), request_body = LifeEventInput, responses((status = 200, description = "The life event"), (status = 404, description = "No such event or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<LifeEventInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let scope = state.scope(&user);
    let event = life_event(&scope.view()?, input)?;
    let row = scope
        .write_async(move |tx| tx.get::<Contact>(event.contact_id).and_then(|_| tx.put(id, pre, event.clone())))
        .await?;
    Ok(tagged(&row, None, StatusCode::OK, &depth_views::life_event_view(&scope.view()?, &row, state.today())))
}

#[utoipa::path(delete, path = "/api/v1/life-events/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such event")))]
pub async fn delete_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    crate::http::conditional::delete_record::<LifeEvent>(&state, &user, &headers, id, "Life event deleted").await
}

// ---- gifts -------------------------------------------------------------------------------

#[derive(Debug, Deserialize, ToSchema)]
pub struct GiftInput {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
    pub description: String,
    /// `idea` (default), `purchased`, `given` or `received`.
    pub status: Option<String>,
    pub occasion: Option<String>,
    pub url: Option<String>,
    pub notes: Option<String>,
    /// RFC 3339 instant or `YYYY-MM-DD`; absent for an idea.
    pub date: Option<String>,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
}

fn gift(v: &UserView, input: GiftInput) -> Result<Gift, ApiError> {
    let contact_id = resolve(v, input.entity_id.as_deref(), input.contact_id)?;
    let date: Option<Timestamp> =
        input.date.as_deref().filter(|d| !d.trim().is_empty()).map(|d| instant("date", d)).transpose()?;
    Ok(Gift {
        contact_id,
        status: input.status.unwrap_or_else(|| "idea".into()),
        occasion: input.occasion.unwrap_or_default(),
        description: input.description,
        url: input.url.unwrap_or_default(),
        notes: input.notes.unwrap_or_default(),
        date,
        value_cents: input.value_cents,
        currency: input.currency.map(|c| c.trim().to_uppercase()),
    })
}

#[utoipa::path(get, path = "/api/v1/gifts", tag = "depth", params(ListQuery), responses((status = 200, description = "`{gifts, next_cursor, limit}`")))]
pub async fn list_gifts(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            list_rows::<Gift>(&v, &q, "gifts", |r| depth_views::gift_view(&v, r))
        })
        .await??;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/gifts", tag = "depth", request_body = GiftInput, responses((status = 201, description = "`{message, gift}`"), (status = 400, description = "Invalid, field named"), (status = 404, description = "No such contact")))]
pub async fn create_gift(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<GiftInput>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let gift = gift(&scope.view()?, input)?;
    let row =
        scope.write_async(move |tx| tx.get::<Contact>(gift.contact_id).and_then(|_| tx.create(gift.clone()))).await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        &json!({ "message": "Gift created", "gift": depth_views::gift_view(&scope.view()?, &row) }),
    ))
}

#[utoipa::path(get, path = "/api/v1/gifts/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The gift"), (status = 404, description = "No such gift")))]
pub async fn get_gift(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let v = state.scope(&user).view()?;
    let row = v.get::<Gift>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &depth_views::gift_view(&v, &row)))
}

#[utoipa::path(put, path = "/api/v1/gifts/{id}", tag = "depth", params(("id" = u64, Path)), request_body = GiftInput, responses((status = 200, description = "The gift"), (status = 404, description = "No such gift or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update_gift(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<GiftInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let scope = state.scope(&user);
    let gift = gift(&scope.view()?, input)?;
    let row = scope
        .write_async(move |tx| tx.get::<Contact>(gift.contact_id).and_then(|_| tx.put(id, pre, gift.clone())))
        .await?;
    Ok(tagged(&row, None, StatusCode::OK, &depth_views::gift_view(&scope.view()?, &row)))
}

#[utoipa::path(delete, path = "/api/v1/gifts/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such gift")))]
pub async fn delete_gift(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    crate::http::conditional::delete_record::<Gift>(&state, &user, &headers, id, "Gift deleted").await
}

// ---- conversation agenda -----------------------------------------------------------------

#[derive(Debug, Deserialize, ToSchema)]
pub struct AgendaInput {
    pub entity_id: Option<String>,
    pub contact_id: Option<u64>,
    pub content: String,
    pub reference_url: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/conversation-agenda", tag = "depth", params(ListQuery), responses((status = 200, description = "`{conversation_agenda, next_cursor, limit}`; per contact, open items first")))]
pub async fn list_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let q = ListQuery { order: q.order.clone().or_else(|| Some("asc".into())), ..q };
    let body = state
        .blocking(move |_| {
            let v = scope.view()?;
            list_rows::<AgendaItem>(&v, &q, "conversation_agenda", |r| depth_views::agenda_view(&v, r))
        })
        .await??;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/conversation-agenda", tag = "depth", request_body = AgendaInput, responses((status = 201, description = "`{message, conversation_agenda}`"), (status = 404, description = "No such contact")))]
pub async fn create_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<AgendaInput>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let contact_id = resolve(&scope.view()?, input.entity_id.as_deref(), input.contact_id)?;
    let item = AgendaItem {
        contact_id,
        content: input.content,
        reference_url: input.reference_url.unwrap_or_default(),
        discussed_at: None,
        activity_id: None,
    };
    let row =
        scope.write_async(move |tx| tx.get::<Contact>(item.contact_id).and_then(|_| tx.create(item.clone()))).await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        &json!({ "message": "Agenda item created", "conversation_agenda": depth_views::agenda_view(&scope.view()?, &row) }),
    ))
}

#[utoipa::path(get, path = "/api/v1/conversation-agenda/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The item"), (status = 404, description = "No such item")))]
pub async fn get_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Response, ApiError> {
    let v = state.scope(&user).view()?;
    let row = v.get::<AgendaItem>(id)?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, &depth_views::agenda_view(&v, &row)))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AgendaEdit {
    pub content: String,
    pub reference_url: Option<String>,
}

/// Changes the text only; the discussed state is changed by `/discuss`.
#[utoipa::path(put, path = "/api/v1/conversation-agenda/{id}", tag = "depth", params(("id" = u64, Path)), request_body = AgendaEdit, responses((status = 200, description = "The item"), (status = 404, description = "No such item"), (status = 412, description = "If-Match is stale")))]
pub async fn update_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(edit): Json<AgendaEdit>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let scope = state.scope(&user);
    let row = scope
        .write_async(move |tx| {
            tx.update::<AgendaItem>(id, pre, |item| {
                item.content = edit.content.clone();
                item.reference_url = edit.reference_url.clone().unwrap_or_default();
                Ok(())
            })
        })
        .await?;
    Ok(tagged(&row, None, StatusCode::OK, &depth_views::agenda_view(&scope.view()?, &row)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DiscussInput {
    /// The activity in which it was discussed (must be yours).
    pub activity_id: Option<u64>,
}

#[utoipa::path(patch, path = "/api/v1/conversation-agenda/{id}/discuss", tag = "depth", params(("id" = u64, Path)), request_body = DiscussInput, responses((status = 200, description = "The item with `discussed_at` set"), (status = 404, description = "No such item or activity")))]
pub async fn discuss_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<DiscussInput>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let row = scope
        .write_async(move |tx| {
            if let Some(activity) = input.activity_id {
                tx.get::<crate::crm::records::Activity>(activity)?;
            }
            let now = tx.now();
            tx.update::<AgendaItem>(id, Precondition::Any, |item| {
                item.discussed_at = Some(item.discussed_at.unwrap_or(now));
                item.activity_id = input.activity_id.or(item.activity_id);
                Ok(())
            })
        })
        .await?;
    Ok(tagged(&row, None, StatusCode::OK, &depth_views::agenda_view(&scope.view()?, &row)))
}

#[utoipa::path(delete, path = "/api/v1/conversation-agenda/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted"), (status = 404, description = "No such item")))]
pub async fn delete_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    crate::http::conditional::delete_record::<AgendaItem>(&state, &user, &headers, id, "Agenda item deleted").await
}
