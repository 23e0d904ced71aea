//! The extractors that turn a request into a caller. Handlers take [`AuthUser`] (any
//! authenticated user, session or full-scope API token) or [`AdminUser`] (an admin's session;
//! API tokens refused) as their first argument, so no route can forget to check.
//!
//! Order: the `auth_token` cookie, then `Authorization: Bearer`. A value starting with
//! `mycorrhizal_` is an API token, anything else a session JWT.

use axum::extract::FromRequestParts;
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::request::Parts;

use crate::auth::records::Scope;
use crate::auth::{AuthUser, Via, session};
use crate::error::ApiError;
use crate::state::AppState;

/// The value of cookie `name` on a request, when it has a non-empty one. Cookies are read here,
/// in the HTTP plumbing: the accounts domain is handed their values.
pub fn cookie(parts: &Parts, name: &str) -> Option<String> {
    parts
        .headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| session::read_cookie(h, name).filter(|v| !v.is_empty()).map(str::to_string))
}

/// Ends the request's session (`auth::signin::sign_out`, handed the session it presents and the
/// ID token kept for the provider's sign-out); the cookies that clear sign-in, and the provider's
/// end-session URL for a single sign-on session. Both doors' sign-out.
pub async fn sign_out(state: &AppState, parts: &Parts) -> (Vec<String>, Option<String>) {
    let (token, id_token) = (bearer(parts).ok(), cookie(parts, "id_token"));
    crate::auth::signin::sign_out(&state.auth, &state.engine, state.oidc.as_deref(), token, id_token).await
}

/// The bearer value of a request: cookie first, then the `Authorization` header.
pub fn bearer(parts: &Parts) -> Result<String, ApiError> {
    if let Some(token) = cookie(parts, session::COOKIE) {
        return Ok(token);
    }
    match parts.headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        None => Err(ApiError::Unauthorized("Authorization token required")),
        Some(value) => match value.strip_prefix("Bearer ").map(str::trim) {
            Some(token) if !token.is_empty() => Ok(token.to_string()),
            _ => Err(ApiError::Unauthorized("Authorization header must start with Bearer")),
        },
    }
}

/// Authenticates and applies the per-user API rate limit, accepting any scope.
pub async fn authenticate(parts: &Parts, state: &AppState) -> Result<AuthUser, ApiError> {
    let token = bearer(parts)?;
    let user = state.auth.authenticate(&state.engine, &token).await?;
    if let Some(slot) = parts.extensions.get::<Caller>() {
        slot.0.store(user.id.0, std::sync::atomic::Ordering::Relaxed);
    }
    state
        .auth
        .limits
        .take(format!("api:user:{}", user.id.0), state.auth.limits.api)
        .map_err(|r| ApiError::RateLimited { retry_after: r.retry_after.as_secs().max(1), locked: false })?;
    Ok(user)
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let user = authenticate(parts, state).await?;
        if let Via::ApiToken { scope: Scope::Carddav, .. } = user.via {
            return Err(ApiError::Forbidden("This token is scoped to CardDAV and cannot be used for the API".into()));
        }
        Ok(user)
    }
}

/// Who the request turned out to be, for its log line: set by [`authenticate`] in the slot the
/// request log put into the request (0 while nobody is signed in).
#[derive(Clone, Default)]
pub struct Caller(pub std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Caller {
    pub fn user_id(&self) -> Option<u64> {
        Some(self.0.load(std::sync::atomic::Ordering::Relaxed)).filter(|id| *id != 0)
    }
}

/// An admin signed in with a session (cookie or bearer JWT). API tokens are refused.
#[derive(Debug, Clone)]
pub struct AdminUser(pub AuthUser);

impl FromRequestParts<AppState> for AdminUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let user = authenticate(parts, state).await?;
        if matches!(user.via, Via::ApiToken { .. }) {
            return Err(ApiError::Forbidden("API tokens cannot access admin endpoints".into()));
        }
        if !user.account.is_admin {
            return Err(ApiError::Forbidden("Admin access required".into()));
        }
        Ok(AdminUser(user))
    }
}
