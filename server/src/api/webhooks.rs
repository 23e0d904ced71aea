//! Webhooks over HTTP: each handler extracts, calls one operation of `notify::webhooks`, and
//! maps the result. The secret appears only in the answers of create and rotate.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::http::extract::{Path, Query};
use crate::http::json::Json;
use crate::notify::webhook_ops as webhooks;
use crate::notify::webhooks::{
    DeliveryList, DeliveryView, EventList, WebhookInput, WebhookList, WebhookView, WebhookWithSecret,
};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/webhooks/events", tag = "webhooks", responses((status = 200, description = "Every event a webhook may subscribe to", body = EventList)))]
pub async fn events(_user: AuthUser) -> axum::Json<EventList> {
    axum::Json(webhooks::events())
}

#[utoipa::path(get, path = "/api/v1/webhooks", tag = "webhooks", responses((status = 200, description = "Your webhooks", body = WebhookList)))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<WebhookList>, ApiError> {
    let (s, user_id) = (state.notify.clone(), user.id.0);
    Ok(axum::Json(state.blocking(move |_| webhooks::list(&s, user_id)).await??))
}

#[utoipa::path(post, path = "/api/v1/webhooks", tag = "webhooks", request_body = WebhookInput, responses(
    (status = 201, description = "The webhook and its secret, shown only here", body = WebhookWithSecret),
    (status = 400, description = "Invalid URL (or a private address refused by WEBHOOK_BLOCK_PRIVATE_URLS) or events; field named"),
    (status = 409, description = "You have the most webhooks allowed (20)")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<WebhookInput>,
) -> Result<(StatusCode, axum::Json<WebhookWithSecret>), ApiError> {
    Ok((StatusCode::CREATED, axum::Json(webhooks::create(&state.notify, user.id.0, input).await?)))
}

#[utoipa::path(get, path = "/api/v1/webhooks/{id}", tag = "webhooks", params(("id" = u64, Path)), responses((status = 200, description = "The webhook", body = WebhookView), (status = 404, description = "No such webhook of yours")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<WebhookView>, ApiError> {
    let (s, user_id) = (state.notify.clone(), user.id.0);
    Ok(axum::Json(state.blocking(move |_| webhooks::get(&s, user_id, id)).await??))
}

#[utoipa::path(patch, path = "/api/v1/webhooks/{id}", tag = "webhooks", params(("id" = u64, Path)), request_body = WebhookInput, responses(
    (status = 200, description = "The webhook", body = WebhookView), (status = 400, description = "Invalid value; field named"), (status = 404, description = "No such webhook of yours")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<WebhookInput>,
) -> Result<axum::Json<WebhookView>, ApiError> {
    Ok(axum::Json(webhooks::update(&state.notify, user.id.0, id, input).await?))
}

#[utoipa::path(delete, path = "/api/v1/webhooks/{id}", tag = "webhooks", params(("id" = u64, Path)), responses((status = 200, body = crate::crm::Message), (status = 404, description = "No such webhook of yours")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    webhooks::delete(&state.notify, user.id.0, id).await?;
    Ok(axum::Json(crate::crm::Message::new("Webhook deleted")))
}

#[utoipa::path(post, path = "/api/v1/webhooks/{id}/rotate-secret", tag = "webhooks", params(("id" = u64, Path)), responses(
    (status = 200, description = "The webhook and its new secret, shown only here; the old one no longer signs", body = WebhookWithSecret),
    (status = 404, description = "No such webhook of yours")))]
pub async fn rotate_secret(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<WebhookWithSecret>, ApiError> {
    Ok(axum::Json(webhooks::rotate_secret(&state.notify, user.id.0, id).await?))
}

#[utoipa::path(post, path = "/api/v1/webhooks/{id}/test", tag = "webhooks", params(("id" = u64, Path)), responses(
    (status = 202, description = "A `test` event queued to this webhook", body = DeliveryView), (status = 404, description = "No such webhook of yours")))]
pub async fn test(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<(StatusCode, axum::Json<DeliveryView>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(webhooks::send_test(&state.notify, user.id.0, id).await?)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// Most deliveries returned, newest first (default 50, 1 to 500).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
}

#[utoipa::path(get, path = "/api/v1/webhooks/{id}/deliveries", tag = "webhooks", params(("id" = u64, Path), DeliveryQuery), responses(
    (status = 200, description = "The webhook's deliveries, newest first: status (pending, delivered, failed), will_retry, attempts, last answer", body = DeliveryList),
    (status = 404, description = "No such webhook of yours")))]
pub async fn deliveries(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Query(query): Query<DeliveryQuery>,
) -> Result<axum::Json<DeliveryList>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::invalid_input("limit", "must be 1 to 500"));
    }
    Ok(axum::Json(webhooks::deliveries(&state.notify, user.id.0, id, limit as usize).await?))
}

#[utoipa::path(post, path = "/api/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", tag = "webhooks", params(("id" = u64, Path), ("delivery_id" = u64, Path)), responses(
    (status = 202, description = "A new delivery of the same envelope (same event id), queued", body = DeliveryView),
    (status = 404, description = "No such webhook or delivery of yours")))]
pub async fn redeliver(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, delivery_id)): Path<(u64, u64)>,
) -> Result<(StatusCode, axum::Json<DeliveryView>), ApiError> {
    Ok((StatusCode::ACCEPTED, axum::Json(webhooks::redeliver(&state.notify, user.id.0, id, delivery_id).await?)))
}
