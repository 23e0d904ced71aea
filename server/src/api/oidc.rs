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
use utoipa::IntoParams;

use crate::auth::records::random_token;
use crate::auth::session;
use crate::error::ApiError;
use crate::state::AppState;

const CALLBACK_PATH: &str = "/api/v1/auth/oidc/callback";

#[utoipa::path(get, path = "/api/v1/auth/oidc/config", tag = "auth", responses((status = 200, body = crate::auth::view::OidcConfig)))]
pub async fn config(State(state): State<AppState>) -> axum::Json<crate::auth::view::OidcConfig> {
    let provider = state
        .oidc
        .as_ref()
        .and_then(|o| reqwest::Url::parse(&o.config.provider_url).ok())
        .and_then(|u| u.host_str().map(str::to_string));
    axum::Json(crate::auth::view::OidcConfig {
        enabled: state.oidc.is_some(),
        registration_disabled: state.config.auth.disable_registration,
        provider_name: provider,
    })
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
    let (user_id, account) = match crate::auth::accounts::link_identity(&state, &issuer, &identity).await? {
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
