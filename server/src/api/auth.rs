//! Public authentication routes: register, login (with the 2FA second step), logout, password
//! strength, password reset, and the device-grant exchange for native clients.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::response::{AppendHeaders, IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::auth::accounts::NewAccount;
use crate::auth::records::Account;
use crate::auth::second_factor::CodeBody;
use crate::auth::signin::{self, SignIn};
use crate::auth::view::{AccountCreated, DeviceGrantCreated, LoginAnswer, SecondFactorRequired, SignedIn, SignedOut};
use crate::auth::{AuthUser, devices, password};
use crate::crm::Message;
use crate::error::ApiError;
use crate::http::gate::{AuthRate, SessionMinting};
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
    (status = 201, body = AccountCreated, description = "Created"), (status = 400, body = crate::error::ErrorBody),
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
    let (id, _) = signin::register(&state.auth, &state.engine, new).await?;
    let body = AccountCreated { message: "Account created".into(), id };
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
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
    (headers, axum::Json(SignedIn::of(account))).into_response()
}

/// Signs in. With two-factor on, answers `{two_factor_required: true}` and a short-lived
/// `2fa_pending` cookie instead of a session.
#[utoipa::path(post, path = "/api/v1/login", tag = "auth", request_body = LoginBody, responses(
    (status = 200, body = LoginAnswer, description = "Signed in (auth_token cookie) or 2FA required"), (status = 401, description = "Invalid credentials"),
    (status = 403, description = "Client not supported"), (status = 429, description = "Locked out or throttled")))]
pub async fn login(
    State(state): State<AppState>,
    gate: SessionMinting,
    Json(body): Json<LoginBody>,
) -> Result<Response, ApiError> {
    let identifier = body.identifier.filter(|i| !i.trim().is_empty()).or(body.email).unwrap_or_default();
    match signin::with_password(&state.auth, &state.engine, &identifier, body.password, gate.ip).await? {
        SignIn::Session { account, cookie } => Ok(signed_in(&account, vec![cookie])),
        SignIn::SecondFactor { pending_cookie } => {
            let body = LoginAnswer::SecondFactorRequired(SecondFactorRequired { two_factor_required: true });
            Ok(([(SET_COOKIE, pending_cookie)], axum::Json(body)).into_response())
        }
    }
}

/// Completes a two-factor sign-in started by `/login`.
#[utoipa::path(post, path = "/api/v1/login/2fa", tag = "auth", request_body = CodeBody, responses(
    (status = 200, body = SignedIn, description = "Signed in"), (status = 400, description = "Wrong code"), (status = 401, description = "No pending sign-in"),
    (status = 429, description = "Too many wrong codes")))]
pub async fn login_2fa(
    State(state): State<AppState>,
    _gate: SessionMinting,
    parts: Parts,
    Json(body): Json<CodeBody>,
) -> Result<Response, ApiError> {
    let (account, cookies) = signin::with_second_factor(
        &state.auth,
        &state.engine,
        crate::http::caller::cookie(&parts, crate::auth::session::PENDING_COOKIE),
        &body.code,
    )
    .await?;
    Ok(signed_in(&account, cookies))
}

/// Ends the caller's session on the server and clears the cookies. No authentication needed.
#[utoipa::path(post, path = "/api/v1/logout", tag = "auth", responses((status = 200, body = SignedOut, description = "`{message, redirect_url?}`; `redirect_url` only for SSO sessions whose provider has an end-session endpoint")))]
pub async fn logout(State(state): State<AppState>, parts: Parts) -> Response {
    let (cookies, redirect_url) = crate::http::caller::sign_out(&state, &parts).await;
    let body = SignedOut { message: "Logged out".into(), redirect_url };
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
#[utoipa::path(post, path = "/api/v1/password-reset/request", tag = "auth", request_body = ResetRequestBody, responses((status = 200, body = Message, description = "Always the same message")))]
pub async fn password_reset_request(
    State(state): State<AppState>,
    _rate: AuthRate,
    Json(body): Json<ResetRequestBody>,
) -> Result<axum::Json<Message>, ApiError> {
    signin::request_reset(&state.auth, &state.engine, &body.email).await?;
    Ok(axum::Json(Message::new(RESET_MESSAGE)))
}

#[derive(Deserialize, ToSchema)]
pub struct ResetConfirmBody {
    pub token: String,
    pub password: String,
}

/// Applies a reset token: same effect as an admin reset (every session and API token ends).
#[utoipa::path(post, path = "/api/v1/password-reset/confirm", tag = "auth", request_body = ResetConfirmBody, responses(
    (status = 200, body = Message, description = "Password changed"), (status = 400, description = "Invalid or expired token, or weak password")))]
pub async fn password_reset_confirm(
    State(state): State<AppState>,
    _rate: AuthRate,
    Json(body): Json<ResetConfirmBody>,
) -> Result<axum::Json<Message>, ApiError> {
    signin::confirm_reset(&state.auth, &state.engine, &body.token, body.password).await?;
    Ok(axum::Json(Message::new("Password changed; please sign in again")))
}

#[derive(Deserialize, ToSchema)]
pub struct GrantBody {
    /// Names the device: 1 to 100 characters, not blank.
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub label: String,
}

/// Mints a one-time device code (10 minutes) that a native client exchanges for its own session.
#[utoipa::path(post, path = "/api/v1/auth/device/grants", tag = "auth", request_body = GrantBody, responses(
    (status = 201, body = DeviceGrantCreated, description = "`{id, label, token, created_at, expires_at}`; the token is shown once"), (status = 401, description = "Not signed in"),
    (status = 403, description = "Not a browser session: API tokens and device sessions cannot mint grants")))]
pub async fn create_device_grant(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<GrantBody>,
) -> Result<Response, ApiError> {
    let body = devices::mint(&state.engine, &user, &body.label).await?;
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct DeviceSessionBody {
    pub device_token: String,
}

/// Exchanges a one-time device code for a session (the cookie is always `Secure`).
#[utoipa::path(post, path = "/api/v1/auth/device/session", tag = "auth", request_body = DeviceSessionBody, responses(
    (status = 200, body = SignedIn, description = "Signed in"), (status = 401, description = "Unknown, used, revoked or expired code"),
    (status = 403, description = "Client not supported")))]
pub async fn device_session(
    State(state): State<AppState>,
    _gate: SessionMinting,
    Json(body): Json<DeviceSessionBody>,
) -> Result<Response, ApiError> {
    let (account, cookie) = devices::exchange(&state.auth, &state.engine, &body.device_token).await?;
    Ok(signed_in(&account, vec![cookie]))
}
