//! Life events, gifts and conversation-agenda items over HTTP: each handler extracts, calls one
//! operation of `crm::depth::ops`, and maps the result. Lists are per contact (`entity_id` or
//! `contact_id`) or, without one, the user's most recently updated first.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::{depth::AgendaItem, depth::Gift, depth::LifeEvent};
use crate::crm::{
    depth::ops as depth_ops, depth::ops::AgendaItemCreated, depth::ops::AgendaItemView, depth::ops::AgendaPage,
    depth::ops::ContactRef, depth::ops::DepthFilter, depth::ops::GiftCreated, depth::ops::GiftPage,
    depth::ops::GiftView, depth::ops::LifeEventCreated, depth::ops::LifeEventPage, depth::ops::LifeEventView,
};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// The contact's UID.
    pub entity_id: Option<String>,
    /// Or its integer id.
    pub contact_id: Option<u64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// `desc` or `asc` (the default: `desc`, or `asc` for the agenda).
    #[param(pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

impl ListQuery {
    fn filter(self, ascending_by_default: bool) -> Result<DepthFilter, ApiError> {
        let ascending = match self.order.as_deref() {
            None => ascending_by_default,
            Some("asc") => true,
            Some("desc") => false,
            Some(_) => return Err(ApiError::invalid_input("order", "must be asc or desc")),
        };
        Ok(DepthFilter {
            who: ContactRef { entity_id: self.entity_id, contact_id: self.contact_id },
            limit: params::limit(self.limit.as_deref()),
            ascending,
            cursor: self.cursor,
        })
    }
}

// ---- life events -------------------------------------------------------------------------

async fn life_event(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<LifeEvent>,
) -> Result<(mycorrhizal_engine::Row<LifeEvent>, LifeEventView), ApiError> {
    let today = state.today();
    Ok(state
        .read(user, move |v| {
            let view = LifeEventView::of(v, &row, today);
            Ok((row, view))
        })
        .await?)
}

#[utoipa::path(get, path = "/api/v1/life-events", tag = "depth", params(ListQuery), responses((status = 200, description = "`{life_events, next_cursor, limit}`", body = LifeEventPage), (status = 400, description = "Bad cursor or order, named"), (status = 404, description = "No such contact")))]
pub async fn list_life_events(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<LifeEventPage>, ApiError> {
    let (filter, today) = (q.filter(false)?, state.today());
    let page = state.read(&user, move |v| depth_ops::life_event_page(v, &filter, today)).await?;
    Ok(axum::Json(page))
}

#[utoipa::path(post, path = "/api/v1/life-events", tag = "depth", request_body = crate::crm::bodies::LifeEventBody, responses((status = 201, description = "`{message, life_event}`", body = LifeEventCreated), (status = 400, description = "Invalid, field named"), (status = 404, description = "No such contact")))]
pub async fn create_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<depth_ops::LifeEventInput>,
) -> Result<Tagged<LifeEventCreated>, ApiError> {
    let (who, event) = input.record();
    let row = depth_ops::save(&state.scope(&user), None, who, event).await?;
    let (row, view) = life_event(&state, &user, row).await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        LifeEventCreated { message: "Life event created".into(), life_event: view },
    ))
}

#[utoipa::path(get, path = "/api/v1/life-events/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The life event", body = LifeEventView), (status = 404, description = "No such event")))]
pub async fn get_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<LifeEventView>, ApiError> {
    let row = state.read(&user, move |v| depth_ops::get::<LifeEvent>(v, id)).await?;
    let (row, view) = life_event(&state, &user, row).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, view))
}

#[utoipa::path(put, path = "/api/v1/life-events/{id}", tag = "depth", params(("id" = u64, Path)), request_body = crate::crm::bodies::LifeEventBody, responses((status = 200, description = "The life event", body = LifeEventView), (status = 404, description = "No such event or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<depth_ops::LifeEventInput>,
) -> Result<Tagged<LifeEventView>, ApiError> {
    let pre = if_match(&headers)?;
    let (who, event) = input.record();
    let row = depth_ops::save(&state.scope(&user), Some((id, pre)), who, event).await?;
    let (row, view) = life_event(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::OK, view))
}

#[utoipa::path(delete, path = "/api/v1/life-events/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such event")))]
pub async fn delete_life_event(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    depth_ops::delete::<LifeEvent>(&state.scope(&user), id, if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Life event deleted")))
}

// ---- gifts -------------------------------------------------------------------------------

async fn gift(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<Gift>,
) -> Result<(mycorrhizal_engine::Row<Gift>, GiftView), ApiError> {
    Ok(state
        .read(user, move |v| {
            let view = GiftView::of(v, &row);
            Ok((row, view))
        })
        .await?)
}

#[utoipa::path(get, path = "/api/v1/gifts", tag = "depth", params(ListQuery), responses((status = 200, description = "`{gifts, next_cursor, limit}`", body = GiftPage), (status = 400, description = "Bad cursor or order, named"), (status = 404, description = "No such contact")))]
pub async fn list_gifts(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<GiftPage>, ApiError> {
    let filter = q.filter(false)?;
    let page = state.read(&user, move |v| depth_ops::gift_page(v, &filter)).await?;
    Ok(axum::Json(page))
}

#[utoipa::path(post, path = "/api/v1/gifts", tag = "depth", request_body = crate::crm::bodies::GiftBody, responses((status = 201, description = "`{message, gift}`", body = GiftCreated), (status = 400, description = "Invalid, field named"), (status = 404, description = "No such contact")))]
pub async fn create_gift(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<depth_ops::GiftInput>,
) -> Result<Tagged<GiftCreated>, ApiError> {
    let (who, body) = input.record()?;
    let row = depth_ops::save(&state.scope(&user), None, who, body).await?;
    let (row, view) = gift(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::CREATED, GiftCreated { message: "Gift created".into(), gift: view }))
}

#[utoipa::path(get, path = "/api/v1/gifts/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The gift", body = GiftView), (status = 404, description = "No such gift")))]
pub async fn get_gift(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<GiftView>, ApiError> {
    let row = state.read(&user, move |v| depth_ops::get::<Gift>(v, id)).await?;
    let (row, view) = gift(&state, &user, row).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, view))
}

#[utoipa::path(put, path = "/api/v1/gifts/{id}", tag = "depth", params(("id" = u64, Path)), request_body = crate::crm::bodies::GiftBody, responses((status = 200, description = "The gift", body = GiftView), (status = 404, description = "No such gift or contact"), (status = 412, description = "If-Match is stale")))]
pub async fn update_gift(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<depth_ops::GiftInput>,
) -> Result<Tagged<GiftView>, ApiError> {
    let pre = if_match(&headers)?;
    let (who, body) = input.record()?;
    let row = depth_ops::save(&state.scope(&user), Some((id, pre)), who, body).await?;
    let (row, view) = gift(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::OK, view))
}

#[utoipa::path(delete, path = "/api/v1/gifts/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such gift")))]
pub async fn delete_gift(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    depth_ops::delete::<Gift>(&state.scope(&user), id, if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Gift deleted")))
}

// ---- conversation agenda -----------------------------------------------------------------

async fn agenda(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<AgendaItem>,
) -> Result<(mycorrhizal_engine::Row<AgendaItem>, AgendaItemView), ApiError> {
    Ok(state
        .read(user, move |v| {
            let view = AgendaItemView::of(v, &row);
            Ok((row, view))
        })
        .await?)
}

#[utoipa::path(get, path = "/api/v1/conversation-agenda", tag = "depth", params(ListQuery), responses((status = 200, description = "`{conversation_agenda, next_cursor, limit}`; per contact, open items first", body = AgendaPage), (status = 400, description = "Bad cursor or order, named"), (status = 404, description = "No such contact")))]
pub async fn list_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<AgendaPage>, ApiError> {
    let filter = q.filter(true)?;
    let page = state.read(&user, move |v| depth_ops::agenda_page(v, &filter)).await?;
    Ok(axum::Json(page))
}

#[utoipa::path(post, path = "/api/v1/conversation-agenda", tag = "depth", request_body = crate::crm::bodies::AgendaBody, responses((status = 201, description = "`{message, conversation_agenda}`", body = AgendaItemCreated), (status = 404, description = "No such contact")))]
pub async fn create_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<depth_ops::AgendaInput>,
) -> Result<Tagged<AgendaItemCreated>, ApiError> {
    let (who, item) = input.record();
    let row = depth_ops::save(&state.scope(&user), None, who, item).await?;
    let (row, view) = agenda(&state, &user, row).await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        AgendaItemCreated { message: "Agenda item created".into(), conversation_agenda: view },
    ))
}

#[utoipa::path(get, path = "/api/v1/conversation-agenda/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "The item", body = AgendaItemView), (status = 404, description = "No such item")))]
pub async fn get_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<Tagged<AgendaItemView>, ApiError> {
    let row = state.read(&user, move |v| depth_ops::get::<AgendaItem>(v, id)).await?;
    let (row, view) = agenda(&state, &user, row).await?;
    Ok(tagged(&row, Some(&headers), StatusCode::OK, view))
}

/// Changes the text only; the discussed state is changed by `/discuss`.
#[utoipa::path(put, path = "/api/v1/conversation-agenda/{id}", tag = "depth", params(("id" = u64, Path)), request_body = depth_ops::AgendaEdit, responses((status = 200, description = "The item", body = AgendaItemView), (status = 404, description = "No such item"), (status = 412, description = "If-Match is stale")))]
pub async fn update_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(edit): Json<depth_ops::AgendaEdit>,
) -> Result<Tagged<AgendaItemView>, ApiError> {
    let pre = if_match(&headers)?;
    let row = depth_ops::edit_agenda(&state.scope(&user), id, pre, edit).await?;
    let (row, view) = agenda(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::OK, view))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DiscussInput {
    /// The activity in which it was discussed (must be yours).
    pub activity_id: Option<u64>,
}

#[utoipa::path(patch, path = "/api/v1/conversation-agenda/{id}/discuss", tag = "depth", params(("id" = u64, Path)), request_body = DiscussInput, responses((status = 200, description = "The item with `discussed_at` set", body = AgendaItemView), (status = 404, description = "No such item or activity")))]
pub async fn discuss_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<DiscussInput>,
) -> Result<Tagged<AgendaItemView>, ApiError> {
    let row = depth_ops::discuss(&state.scope(&user), id, input.activity_id).await?;
    let (row, view) = agenda(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::OK, view))
}

#[utoipa::path(delete, path = "/api/v1/conversation-agenda/{id}", tag = "depth", params(("id" = u64, Path)), responses((status = 200, description = "Deleted", body = crate::crm::Message), (status = 404, description = "No such item")))]
pub async fn delete_agenda(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    depth_ops::delete::<AgendaItem>(&state.scope(&user), id, if_match(&headers)?).await?;
    Ok(axum::Json(crate::crm::Message::new("Agenda item deleted")))
}
