//! Single sign-on routes: `/auth/oidc/config` (what the login page shows), `/auth/oidc/login`
//! (redirect to the provider) and `/auth/oidc/callback` (the redirect target). Without OIDC
//! configured, login and callback answer 404.
//!
//! Linking order on the callback: (a) an account already linked to this provider subject; (b) an
//! account with the same verified email (an unverified email counts only with
//! `OIDC_TRUST_EMAIL`), which is then linked and keeps its password; (c) a new password-less account
//! when `OIDC_AUTO_PROVISION` is on. Otherwise the user is sent back with an error code.

use crate::http::extract::Query;
use axum::extract::State;
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{AppendHeaders, IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use crate::auth::accounts::{self, NewAccount};
use crate::auth::oidc::Identity;
use crate::auth::records::{Account, random_token};
use crate::auth::session;
use crate::error::ApiError;
use crate::state::AppState;

const CALLBACK_PATH: &str = "/api/v1/auth/oidc/callback";

#[utoipa::path(get, path = "/api/v1/auth/oidc/config", tag = "auth", responses((status = 200, description = "`{enabled, registration_disabled, provider_name?}`")))]
pub async fn config(State(state): State<AppState>) -> axum::Json<serde_json::Value> {
    let provider = state
        .oidc
        .as_ref()
        .and_then(|o| reqwest::Url::parse(&o.config.provider_url).ok())
        .and_then(|u| u.host_str().map(str::to_string));
    axum::Json(json!({
        "enabled": state.oidc.is_some(),
        "registration_disabled": state.config.auth.disable_registration,
        "provider_name": provider,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LoginQuery {
    /// `android` for the native client's deep-link flow.
    pub client: Option<String>,
}

fn short_cookie(state: &AppState, name: &str, value: &str, max_age: i64, secure: bool) -> String {
    let mut cookie = format!("{name}={value}; Path={CALLBACK_PATH}; Max-Age={max_age}; HttpOnly; SameSite=Lax");
    if secure || state.config.auth.cookie_secure {
        cookie.push_str("; Secure");
    }
    cookie
}

fn redirect(location: &str, cookies: Vec<String>) -> Response {
    let mut response =
        (StatusCode::FOUND, AppendHeaders(cookies.into_iter().map(|c| (SET_COOKIE, c)).collect::<Vec<_>>()))
            .into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// Sends the browser to the provider with state, nonce and a PKCE challenge.
#[utoipa::path(get, path = "/api/v1/auth/oidc/login", tag = "auth", params(LoginQuery), responses(
    (status = 302, description = "To the provider"), (status = 404, description = "Single sign-on is not configured")))]
pub async fn login(State(state): State<AppState>, Query(query): Query<LoginQuery>) -> Result<Response, ApiError> {
    let oidc = state.oidc.clone().ok_or(ApiError::FeatureDisabled("Single sign-on is not configured"))?;
    let start = oidc.start(|| random_token(24)).await.map_err(|e| {
        tracing::warn!(event = "oidc_failed", component = "auth", error = %e);
        ApiError::External("The single sign-on provider is unreachable".into())
    })?;
    let mut cookies = vec![
        short_cookie(&state, "oidc_state", &start.state, 600, false),
        short_cookie(&state, "oidc_nonce", &start.nonce, 600, false),
        short_cookie(&state, "oidc_pkce", &start.verifier, 600, false),
    ];
    if query.client.as_deref() == Some("android") {
        cookies.push(short_cookie(&state, "oidc_client", "android", 600, true));
    }
    Ok(redirect(&start.redirect, cookies))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
}

/// The provider's redirect target: verifies, links or provisions, and signs in.
#[utoipa::path(get, path = "/api/v1/auth/oidc/callback", tag = "auth", params(CallbackQuery), responses(
    (status = 302, description = "Signed in (to the app), or back to the login page with `error`"), (status = 404, description = "Single sign-on is not configured")))]
pub async fn callback(
    State(state): State<AppState>,
    parts: Parts,
    Query(query): Query<CallbackQuery>,
) -> Result<Response, ApiError> {
    let oidc = state.oidc.clone().ok_or(ApiError::FeatureDisabled("Single sign-on is not configured"))?;
    let cookie = |name: &str| {
        parts
            .headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|h| session::read_cookie(h, name).map(str::to_string))
    };
    let android = cookie("oidc_client").as_deref() == Some("android");
    let frontend = state.config.auth.frontend_url.clone().unwrap_or_default();
    let frontend = frontend.trim_end_matches('/').to_string();
    let clear: Vec<String> = ["oidc_state", "oidc_nonce", "oidc_pkce", "oidc_client"]
        .iter()
        .map(|n| short_cookie(&state, n, "", 0, false))
        .collect();
    let fail = |code: &str| {
        tracing::info!(event = "oidc_login_failed", component = "auth", reason = code);
        let location = if android {
            format!("mycorrhizal://oidc/callback?error={code}")
        } else {
            format!("{frontend}/login?error={code}")
        };
        Ok(redirect(&location, clear.clone()))
    };
    if query.error.is_some() {
        return fail("oidc_denied");
    }
    let (Some(code), Some(returned_state)) = (query.code, query.state) else { return fail("oidc_error") };
    let (Some(expected_state), Some(nonce), Some(verifier)) =
        (cookie("oidc_state"), cookie("oidc_nonce"), cookie("oidc_pkce"))
    else {
        return fail("oidc_error");
    };
    if returned_state != expected_state {
        return fail("oidc_error");
    }
    let (identity, id_token) = match oidc.finish(&code, &verifier, &nonce).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(event = "oidc_failed", component = "auth", error = %e);
            return fail("oidc_error");
        }
    };
    let issuer = oidc.config.provider_url.trim_end_matches('/').to_string();
    let (user_id, account) = match link(&state, &issuer, &identity).await? {
        Ok(found) => found,
        Err(code) => return fail(code),
    };
    let (jwt, session_cookie) = state.auth.start_session(&state.engine, user_id, &account, true).await?;
    let mut cookies = clear.clone();
    cookies.push(session_cookie);
    cookies.push(state.auth.cookies.cookie("id_token", &id_token, state.auth.session_lifetime.as_secs()));
    tracing::info!(event = "oidc_login_succeeded", component = "auth", user_id);
    let location = if android { format!("mycorrhizal://oidc/callback?token={jwt}") } else { format!("{frontend}/") };
    Ok(redirect(&location, cookies))
}

/// Finds or creates the account for a verified identity; `Err(code)` for the login page.
async fn link(
    state: &AppState,
    issuer: &str,
    identity: &Identity,
) -> Result<Result<(u64, Account), &'static str>, ApiError> {
    let subject_key = format!("{issuer} {}", identity.sub);
    let view = state.engine.global()?;
    if let Some(found) = view.find::<Account>("oidc", &subject_key)? {
        return Ok(Ok(found));
    }
    let email = identity.email.as_deref().map(|e| e.trim().to_lowercase()).filter(|e| !e.is_empty());
    let email_usable = identity.email_verified == Some(true) || state.config.auth.oidc_trust_email;
    if let Some(email) = email.as_deref().filter(|_| email_usable)
        && let Some((id, _)) = view.find::<Account>("email", email)?
    {
        drop(view);
        let (provider, subject) = (issuer.to_string(), identity.sub.clone());
        let account = state
            .engine
            .write_async(move |tx| {
                let mut account: Account = tx.global().get(id)?;
                account.oidc_provider = Some(provider.clone());
                account.oidc_subject = Some(subject.clone());
                account.updated_at = tx.now();
                tx.global().put(id, &account)?;
                Ok(account)
            })
            .await?;
        return Ok(Ok((id, account)));
    }
    drop(view);
    if !state.config.auth.oidc_auto_provision {
        return Ok(Err("oidc_no_account"));
    }
    let Some(email) = email else { return Ok(Err("oidc_no_email")) };
    if !email_usable {
        return Ok(Err("oidc_no_account"));
    }
    let base = identity
        .preferred_username
        .clone()
        .or_else(|| email.split('@').next().map(str::to_string))
        .unwrap_or_else(|| "user".into())
        .to_lowercase()
        .replace(['@', ' '], "-");
    let base: String = base.chars().take(40).collect();
    for attempt in 0..20 {
        let username = if attempt == 0 { base.clone() } else { format!("{base}-{attempt}") };
        let new = NewAccount {
            username,
            email: email.clone(),
            password: None,
            language: None,
            oidc: Some((issuer.to_string(), identity.sub.clone())),
            is_admin: false,
        };
        match accounts::create(state, new).await {
            Ok(created) => return Ok(Ok(created)),
            Err(ApiError::AlreadyExists { field }) if field == "username" => continue,
            Err(ApiError::AlreadyExists { .. }) => return Ok(Err("oidc_no_account")),
            Err(e) => return Err(e),
        }
    }
    Ok(Err("oidc_error"))
}
