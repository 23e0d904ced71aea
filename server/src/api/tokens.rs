//! API tokens: `mycorrhizal_<random>` bearer secrets for scripts and sync clients, shown once,
//! stored as SHA-256. Two path families reach the same operations on the caller's own tokens:
//! `/api-tokens` (any signed-in user) and `/admin/api-tokens` (admin session).

use crate::http::extract::Path;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::extract::AdminUser;
use crate::auth::records::{ApiToken, Scope, random_token, sha256_hex};
use crate::auth::{AuthUser, TOKEN_PREFIX, accounts};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

#[derive(Deserialize, ToSchema)]
pub struct NewToken {
    pub name: String,
    /// 1 to 365, default 90. There is no never-expiring token.
    pub expires_in_days: Option<i64>,
    /// `full` (default) or `carddav`.
    #[schema(value_type = Option<String>)]
    pub scope: Option<Scope>,
}

/// A token as listed: never the secret.
#[derive(Serialize, ToSchema)]
pub struct TokenView {
    pub id: u64,
    pub name: String,
    #[schema(value_type = String)]
    pub scope: Scope,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<Timestamp>,
}

impl TokenView {
    fn from(id: u64, t: &ApiToken) -> Self {
        TokenView {
            id,
            name: t.name.clone(),
            scope: t.scope,
            created_at: t.created_at,
            last_used_at: t.last_used_at,
            expires_at: t.expires_at,
            revoked_at: t.revoked_at,
        }
    }
}

fn created(id: u64, token: &ApiToken, plaintext: String) -> Response {
    let mut body = serde_json::to_value(TokenView::from(id, token)).unwrap_or_default();
    body["token"] = json!(plaintext);
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

fn mint(
    user_id: u64,
    name: String,
    scope: Scope,
    lifetime: SignedDuration,
    now: Timestamp,
) -> Result<(ApiToken, String), ApiError> {
    let plaintext = format!("{TOKEN_PREFIX}{}", random_token(32));
    let token = ApiToken {
        user_id,
        name,
        hash: sha256_hex(&plaintext),
        scope,
        created_at: now,
        last_used_at: None,
        expires_at: now.checked_add(lifetime).map_err(ApiError::internal)?,
        revoked_at: None,
    };
    Ok((token, plaintext))
}

async fn create_for(state: &AppState, user: &AuthUser, body: NewToken) -> Result<Response, ApiError> {
    let name = body.name.trim().to_string();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::validation("name", "must be 1 to 100 characters"));
    }
    let days = body.expires_in_days.unwrap_or(90);
    if !(1..=365).contains(&days) {
        return Err(ApiError::validation("expires_in_days", "must be 1 to 365"));
    }
    let (token, plaintext) = mint(
        user.id.0,
        name,
        body.scope.unwrap_or(Scope::Full),
        SignedDuration::from_hours(days * 24),
        state.engine.clock().now(),
    )?;
    let stored = token.clone();
    let id = state.engine.write_async(move |tx| tx.global().insert(&stored)).await?;
    Ok(created(id, &token, plaintext))
}

async fn list_for(state: &AppState, user_id: u64) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let tokens: Vec<TokenView> = state
        .engine
        .global()?
        .list::<ApiToken>()?
        .iter()
        .filter(|(_, t)| t.user_id == user_id)
        .map(|(id, t)| TokenView::from(*id, t))
        .collect();
    Ok(axum::Json(json!({ "tokens": tokens })))
}

/// Revokes the caller's token `id`; another user's id is not found.
async fn revoke_for(state: &AppState, user_id: u64, id: u64) -> Result<axum::Json<serde_json::Value>, ApiError> {
    state
        .engine
        .write_async(move |tx| {
            let mut token: ApiToken = tx.global().get(id)?;
            if token.user_id != user_id {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            if token.revoked_at.is_none() {
                token.revoked_at = Some(tx.now());
                tx.global().put(id, &token)?;
            }
            Ok(())
        })
        .await?;
    Ok(axum::Json(json!({ "message": "Token revoked" })))
}

#[utoipa::path(get, path = "/api/v1/api-tokens", tag = "tokens", responses((status = 200, description = "`{tokens: [TokenView]}`")))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<serde_json::Value>, ApiError> {
    list_for(&state, user.id.0).await
}

#[utoipa::path(post, path = "/api/v1/api-tokens", tag = "tokens", request_body = NewToken, responses((status = 201, description = "TokenView plus `token`, shown only here")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<NewToken>,
) -> Result<Response, ApiError> {
    create_for(&state, &user, body).await
}

#[utoipa::path(delete, path = "/api/v1/api-tokens/{id}", tag = "tokens", params(("id" = u64, Path)), responses((status = 200, description = "Revoked"), (status = 404, description = "No such token of yours")))]
pub async fn revoke(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    revoke_for(&state, user.id.0, id).await
}

/// Replaces a token in place: the old one dies at once, the new plaintext is shown once.
#[utoipa::path(post, path = "/api/v1/api-tokens/{id}/rotate", tag = "tokens", params(("id" = u64, Path)), responses(
    (status = 201, description = "The new token"), (status = 404, description = "No such token of yours"), (status = 409, description = "Already revoked")))]
pub async fn rotate(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<Response, ApiError> {
    let user_id = user.id.0;
    let now = state.engine.clock().now();
    let outcome = state
        .engine
        .write_async(move |tx| {
            let mut old: ApiToken = tx.global().get(id)?;
            if old.user_id != user_id {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            if old.revoked_at.is_some() {
                return Ok(Err(ApiError::Conflict("This token is revoked; create a new one".into())));
            }
            let lifetime = old.expires_at.duration_since(old.created_at);
            let minted = mint(user_id, old.name.clone(), old.scope, lifetime, now);
            let (token, plaintext) = match minted {
                Ok(m) => m,
                Err(e) => return Ok(Err(e)),
            };
            old.revoked_at = Some(now);
            tx.global().put(id, &old)?;
            let new_id = tx.global().insert(&token)?;
            Ok(Ok((new_id, token, plaintext)))
        })
        .await??;
    let (new_id, token, plaintext) = outcome;
    Ok(created(new_id, &token, plaintext))
}

/// Revokes all of the caller's tokens, including the one used for this call.
#[utoipa::path(post, path = "/api/v1/api-tokens/revoke-all", tag = "tokens", responses((status = 200, description = "`{revoked: n}`")))]
pub async fn revoke_all(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let user_id = user.id.0;
    let revoked = state.engine.write_async(move |tx| accounts::revoke_tokens_of(tx, user_id, tx.now())).await?;
    Ok(axum::Json(json!({ "revoked": revoked })))
}

#[utoipa::path(get, path = "/api/v1/admin/api-tokens", tag = "tokens", responses((status = 200, description = "The caller's own tokens"), (status = 403, description = "Not an admin session")))]
pub async fn admin_list(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    list_for(&state, user.id.0).await
}

#[utoipa::path(post, path = "/api/v1/admin/api-tokens", tag = "tokens", request_body = NewToken, responses((status = 201, description = "TokenView plus `token`"), (status = 403, description = "Not an admin session")))]
pub async fn admin_create(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    Json(body): Json<NewToken>,
) -> Result<Response, ApiError> {
    create_for(&state, &user, body).await
}

#[utoipa::path(delete, path = "/api/v1/admin/api-tokens/{id}", tag = "tokens", params(("id" = u64, Path)), responses((status = 200, description = "Revoked"), (status = 403, description = "Not an admin session")))]
pub async fn admin_revoke(
    State(state): State<AppState>,
    AdminUser(user): AdminUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    revoke_for(&state, user.id.0, id).await
}
