//! The subscription feed's secret: whether there is one, a new one (shown once; the old URL stops
//! working), and ending it. The feed itself is served at `/ical/<file>` by the DAV front door.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::ical_feed as feed;
use crate::error::ApiError;
use crate::state::AppState;

/// Whether the caller has a subscription feed.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedStatus {
    pub enabled: bool,
}

/// A new feed URL (its path on this server), shown only here.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedCreated {
    pub message: String,
    /// `/ical/<user>-<secret>.ics`.
    pub path: String,
}

#[utoipa::path(get, path = "/api/v1/ical-feed", tag = "users", responses((status = 200, description = "Whether a feed exists", body = FeedStatus)))]
pub async fn status(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<FeedStatus>, ApiError> {
    let enabled = state.read(&user, feed::enabled).await?;
    Ok(axum::Json(FeedStatus { enabled }))
}

#[utoipa::path(post, path = "/api/v1/ical-feed", tag = "users", responses((status = 201, description = "A new secret URL; any earlier one stops working", body = FeedCreated)))]
pub async fn rotate(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<(StatusCode, axum::Json<FeedCreated>), ApiError> {
    let file = feed::rotate(&state.scope(&user)).await?;
    let body = FeedCreated { message: "Feed created".into(), path: format!("/ical/{file}") };
    Ok((StatusCode::CREATED, axum::Json(body)))
}

#[utoipa::path(delete, path = "/api/v1/ical-feed", tag = "users", responses((status = 200, description = "The feed's URL no longer works", body = crate::crm::Message)))]
pub async fn revoke(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<crate::crm::Message>, ApiError> {
    feed::revoke(&state.scope(&user)).await?;
    Ok(axum::Json(crate::crm::Message::new("Feed revoked")))
}
