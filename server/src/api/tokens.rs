//! API tokens: `mycorrhizal_<random>` bearer secrets for scripts and sync clients, shown once,
//! stored as SHA-256. Two path families reach the same operations on the caller's own tokens:
//! `/api-tokens` (any signed-in user) and `/admin/api-tokens` (admin session).

use crate::http::extract::Path;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::auth::AuthUser;
use crate::auth::tokens::{self, Minted, NewToken, TokenCreated, TokenList, TokensRevoked};
use crate::crm::Message;
use crate::error::ApiError;
use crate::http::caller::AdminUser;
use crate::http::json::Json;
use crate::state::AppState;

fn created(minted: Minted) -> Response {
    (StatusCode::CREATED, axum::Json(TokenCreated { view: minted.view, token: minted.plaintext })).into_response()
}

async fn create_for(state: &AppState, user: &AuthUser, body: NewToken) -> Result<Response, ApiError> {
    Ok(created(tokens::create(&state.engine, user.id.0, body).await?))
}

async fn list_for(state: &AppState, user_id: u64) -> Result<axum::Json<TokenList>, ApiError> {
    Ok(axum::Json(TokenList { tokens: tokens::list(&state.engine, user_id).await? }))
}

/// Revokes the caller's token `id`; another user's id is not found.
async fn revoke_for(state: &AppState, user_id: u64, id: u64) -> Result<axum::Json<Message>, ApiError> {
    tokens::revoke(&state.engine, user_id, id).await?;
    Ok(axum::Json(Message::new("Token revoked")))
}

#[utoipa::path(get, path = "/api/v1/api-tokens", tag = "tokens", responses((status = 200, body = TokenList)))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<TokenList>, ApiError> {
    list_for(&state, user.id.0).await
}

#[utoipa::path(post, path = "/api/v1/api-tokens", tag = "tokens", request_body = NewToken, responses((status = 201, body = TokenCreated, description = "TokenView plus `token`, shown only here")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<NewToken>,
) -> Result<Response, ApiError> {
    create_for(&state, &user, body).await
}

#[utoipa::path(delete, path = "/api/v1/api-tokens/{id}", tag = "tokens", params(("id" = u64, Path)), responses((status = 200, body = Message, description = "Revoked"), (status = 404, description = "No such token of yours")))]
pub async fn revoke(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    revoke_for(&state, user.id.0, id).await
}

/// Replaces a token in place: the old one dies at once, the new plaintext is shown once.
#[utoipa::path(post, path = "/api/v1/api-tokens/{id}/rotate", tag = "tokens", params(("id" = u64, Path)), responses(
    (status = 201, body = TokenCreated, description = "The new token"), (status = 404, description = "No such token of yours"), (status = 409, description = "Already revoked")))]
pub async fn rotate(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<Response, ApiError> {
    Ok(created(tokens::rotate(&state.engine, user.id.0, id).await?))
}

/// Revokes all of the caller's tokens, including the one used for this call.
#[utoipa::path(post, path = "/api/v1/api-tokens/revoke-all", tag = "tokens", responses((status = 200, body = TokensRevoked)))]
pub async fn revoke_all(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<TokensRevoked>, ApiError> {
    let revoked = tokens::revoke_all(&state.engine, user.id.0).await?;
    Ok(axum::Json(TokensRevoked { revoked }))
}

#[utoipa::path(get, path = "/api/v1/admin/api-tokens", tag = "tokens", responses((status = 200, body = TokenList, description = "The caller's own tokens"), (status = 403, description = "Not an admin session")))]
pub async fn admin_list(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
) -> Result<axum::Json<TokenList>, ApiError> {
    list_for(&state, user.id.0).await
}

#[utoipa::path(post, path = "/api/v1/admin/api-tokens", tag = "tokens", request_body = NewToken, responses((status = 201, body = TokenCreated, description = "TokenView plus `token`"), (status = 403, description = "Not an admin session")))]
pub async fn admin_create(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    Json(body): Json<NewToken>,
) -> Result<Response, ApiError> {
    create_for(&state, &user, body).await
}

#[utoipa::path(delete, path = "/api/v1/admin/api-tokens/{id}", tag = "tokens", params(("id" = u64, Path)), responses((status = 200, body = Message, description = "Revoked"), (status = 403, description = "Not an admin session")))]
pub async fn admin_revoke(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    revoke_for(&state, user.id.0, id).await
}
