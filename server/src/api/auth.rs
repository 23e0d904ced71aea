//! Public authentication routes: register, login (with the 2FA second step), logout, password
//! strength, password reset, and the device-grant exchange for native clients.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::response::{AppendHeaders, IntoResponse, Response};
use jiff::SignedDuration;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::accounts::NewAccount;
use crate::auth::gate::{AuthRate, SessionMinting};
use crate::auth::records::{Account, DeviceGrant, random_token, sha256_hex};
use crate::auth::second_factor::CodeBody;
use crate::auth::signin::{self, SignIn};
use crate::auth::{AuthUser, Via, password};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

#[derive(Deserialize, ToSchema)]
pub struct RegisterBody {
    pub username: String,
    pub email: String,
    pub password: String,
    pub language: Option<String>,
}

/// Creates an account; the first account on a fresh instance is an admin.
#[utoipa::path(post, path = "/api/v1/register", tag = "auth", request_body = RegisterBody, responses(
    (status = 201, description = "Created"), (status = 400, body = crate::error::ErrorBody),
    (status = 403, description = "Registration disabled or client not supported"), (status = 409, description = "Username or email taken")))]
pub async fn register(
    State(state): State<AppState>,
    _gate: SessionMinting,
    Json(body): Json<RegisterBody>,
) -> Result<Response, ApiError> {
    let new = NewAccount {
        username: body.username,
        email: body.email,
        password: Some(body.password),
        language: body.language,
        oidc: None,
        is_admin: false,
    };
    let (id, _) = signin::register(&state, new).await?;
    Ok((StatusCode::CREATED, axum::Json(json!({ "message": "Account created", "id": id }))).into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct LoginBody {
    /// Username or email (contains `@`).
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1)]
    pub identifier: Option<String>,
    /// Legacy alias used when `identifier` is empty.
    #[serde(default)]
    #[schema(deprecated)]
    pub email: Option<String>,
    pub password: String,
}

fn signed_in(account: &Account, cookies: Vec<String>) -> Response {
    let headers = AppendHeaders(cookies.into_iter().map(|c| (SET_COOKIE, c)).collect::<Vec<_>>());
    (headers, axum::Json(json!({ "language": account.language, "date_format": account.date_format }))).into_response()
}

/// Signs in. With two-factor on, answers `{two_factor_required: true}` and a short-lived
/// `2fa_pending` cookie instead of a session.
#[utoipa::path(post, path = "/api/v1/login", tag = "auth", request_body = LoginBody, responses(
    (status = 200, description = "Signed in (auth_token cookie) or 2FA required"), (status = 401, description = "Invalid credentials"),
    (status = 403, description = "Client not supported"), (status = 429, description = "Locked out or throttled")))]
pub async fn login(
    State(state): State<AppState>,
    gate: SessionMinting,
    Json(body): Json<LoginBody>,
) -> Result<Response, ApiError> {
    let identifier = body.identifier.filter(|i| !i.trim().is_empty()).or(body.email).unwrap_or_default();
    match signin::with_password(&state, &identifier, body.password, gate.ip).await? {
        SignIn::Session { account, cookie } => Ok(signed_in(&account, vec![cookie])),
        SignIn::SecondFactor { pending_cookie } => {
            Ok(([(SET_COOKIE, pending_cookie)], axum::Json(json!({ "two_factor_required": true }))).into_response())
        }
    }
}

/// Completes a two-factor sign-in started by `/login`.
#[utoipa::path(post, path = "/api/v1/login/2fa", tag = "auth", request_body = CodeBody, responses(
    (status = 200, description = "Signed in"), (status = 400, description = "Wrong code"), (status = 401, description = "No pending sign-in"),
    (status = 429, description = "Too many wrong codes")))]
pub async fn login_2fa(
    State(state): State<AppState>,
    _gate: SessionMinting,
    parts: Parts,
    Json(body): Json<CodeBody>,
) -> Result<Response, ApiError> {
    let (account, cookies) = signin::with_second_factor(&state, &parts, &body.code).await?;
    Ok(signed_in(&account, cookies))
}

/// Ends the caller's session on the server and clears the cookies. No authentication needed.
#[utoipa::path(post, path = "/api/v1/logout", tag = "auth", responses((status = 200, description = "`{message, redirect_url?}`; `redirect_url` only for SSO sessions whose provider has an end-session endpoint")))]
pub async fn logout(State(state): State<AppState>, parts: Parts) -> Response {
    let (cookies, redirect_url) = signin::sign_out(&state, &parts).await;
    let mut body = json!({ "message": "Logged out" });
    if let Some(url) = redirect_url {
        body["redirect_url"] = json!(url);
    }
    (AppendHeaders(cookies.into_iter().map(|c| (SET_COOKIE, c)).collect::<Vec<_>>()), axum::Json(body)).into_response()
}

#[derive(Deserialize, ToSchema)]
pub struct PasswordBody {
    pub password: String,
}

/// Judges a password offline, without registering.
#[utoipa::path(post, path = "/api/v1/check-password-strength", tag = "auth", request_body = PasswordBody, responses((status = 200, body = password::Strength)))]
pub async fn check_password_strength(
    _rate: AuthRate,
    Json(body): Json<PasswordBody>,
) -> axum::Json<password::Strength> {
    axum::Json(password::strength(&body.password, &[]))
}

#[derive(Deserialize, ToSchema)]
pub struct ResetRequestBody {
    pub email: String,
}

const RESET_MESSAGE: &str = "If an account exists for that email, a reset link has been sent.";

/// Sends a single-use reset link. Answers the same whether or not the account exists.
#[utoipa::path(post, path = "/api/v1/password-reset/request", tag = "auth", request_body = ResetRequestBody, responses((status = 200, description = "Always the same message")))]
pub async fn password_reset_request(
    State(state): State<AppState>,
    _rate: AuthRate,
    Json(body): Json<ResetRequestBody>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    signin::request_reset(&state, &body.email).await?;
    Ok(axum::Json(json!({ "message": RESET_MESSAGE })))
}

#[derive(Deserialize, ToSchema)]
pub struct ResetConfirmBody {
    pub token: String,
    pub password: String,
}

/// Applies a reset token: same effect as an admin reset (every session and API token ends).
#[utoipa::path(post, path = "/api/v1/password-reset/confirm", tag = "auth", request_body = ResetConfirmBody, responses(
    (status = 200, description = "Password changed"), (status = 400, description = "Invalid or expired token, or weak password")))]
pub async fn password_reset_confirm(
    State(state): State<AppState>,
    _rate: AuthRate,
    Json(body): Json<ResetConfirmBody>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    signin::confirm_reset(&state, &body.token, body.password).await?;
    Ok(axum::Json(json!({ "message": "Password changed; please sign in again" })))
}

#[derive(Deserialize, ToSchema)]
pub struct GrantBody {
    /// Names the device: 1 to 100 characters, not blank.
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub label: String,
}

const GRANT_LIFETIME: SignedDuration = SignedDuration::from_mins(10);

/// Mints a one-time device code (10 minutes) that a native client exchanges for its own session.
#[utoipa::path(post, path = "/api/v1/auth/device/grants", tag = "auth", request_body = GrantBody, responses(
    (status = 201, description = "`{id, label, token, created_at, expires_at}`; the token is shown once"), (status = 401, description = "Not signed in"),
    (status = 403, description = "Not a browser session: API tokens and device sessions cannot mint grants")))]
pub async fn create_device_grant(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<GrantBody>,
) -> Result<Response, ApiError> {
    if !matches!(user.via, Via::Session { .. }) {
        return Err(ApiError::Forbidden("Device grants are minted from a signed-in session".into()));
    }
    let label = body.label.trim().to_string();
    if label.is_empty() || label.chars().count() > 100 {
        return Err(ApiError::validation("label", "must be 1 to 100 characters"));
    }
    let token = random_token(32);
    let now = state.engine.clock().now();
    let grant = DeviceGrant {
        user_id: user.id.0,
        label: label.clone(),
        hash: sha256_hex(&token),
        created_at: now,
        expires_at: now.checked_add(GRANT_LIFETIME).map_err(ApiError::internal)?,
        used_at: None,
        revoked_at: None,
    };
    let expires_at = grant.expires_at;
    let id = state.engine.write_async(move |tx| tx.global().insert(&grant)).await?;
    let body = json!({ "id": id, "label": label, "token": token, "created_at": now, "expires_at": expires_at });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct DeviceSessionBody {
    pub device_token: String,
}

/// Exchanges a one-time device code for a session (the cookie is always `Secure`).
#[utoipa::path(post, path = "/api/v1/auth/device/session", tag = "auth", request_body = DeviceSessionBody, responses(
    (status = 200, description = "Signed in"), (status = 401, description = "Unknown, used, revoked or expired code"),
    (status = 403, description = "Client not supported")))]
pub async fn device_session(
    State(state): State<AppState>,
    _gate: SessionMinting,
    Json(body): Json<DeviceSessionBody>,
) -> Result<Response, ApiError> {
    let hash = sha256_hex(body.device_token.trim());
    let claimed = state
        .engine
        .write_async(move |tx| {
            let Some(id) = tx.global().lookup::<DeviceGrant>("hash", &hash)? else {
                return Ok(None);
            };
            let mut grant: DeviceGrant = tx.global().get(id)?;
            if grant.used_at.is_some() || grant.revoked_at.is_some() || grant.expires_at <= tx.now() {
                return Ok(None);
            }
            grant.used_at = Some(tx.now());
            tx.global().put(id, &grant)?;
            Ok(Some(grant.user_id))
        })
        .await?;
    let user_id = claimed.ok_or(ApiError::InvalidCredentials)?;
    let account: Account = state.engine.global()?.get(user_id).map_err(|_| ApiError::InvalidCredentials)?;
    let (_, cookie) = state.auth.start_session(&state.engine, user_id, &account, false).await?;
    let cookie = if cookie.contains("; Secure") { cookie } else { format!("{cookie}; Secure") };
    Ok(signed_in(&account, vec![cookie]))
}
