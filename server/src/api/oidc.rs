//! Single sign-on routes: `/auth/oidc/config` (what the login page shows), `/auth/oidc/login`
//! (redirect to the provider) and `/auth/oidc/callback` (the redirect target). Without OIDC
//! configured, login and callback answer 404.
//!
//! The callback's rules (the state check, the code exchange, linking or provisioning the account,
//! the session) are `auth::signin::with_provider`; this file turns its outcome into cookies and a
//! redirect. Linking order on the callback: (a) an account already linked to this provider subject; (b) an
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
use crate::auth::signin::{self, PROVIDER_COOKIES, ProviderReturn, ProviderSignIn};
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
    let android = crate::http::caller::cookie(&parts, "oidc_client").as_deref() == Some("android");
    let back = ProviderReturn { code: query.code, state: query.state, error: query.error };
    let outcome = signin::with_provider(
        &state.auth,
        &state.engine,
        &oidc,
        |name| crate::http::caller::cookie(&parts, name),
        back,
    )
    .await?;
    let mut cookies: Vec<String> = PROVIDER_COOKIES.iter().map(|n| short_cookie(&state, n, "", 0, false)).collect();
    let frontend = state.config.auth.frontend_url.as_deref().unwrap_or_default().trim_end_matches('/');
    let location = match outcome {
        ProviderSignIn::Refused(code) if android => format!("mycorrhizal://oidc/callback?error={code}"),
        ProviderSignIn::Refused(code) => format!("{frontend}/login?error={code}"),
        ProviderSignIn::Session { token, cookies: set, .. } => {
            cookies.extend(set);
            if android { format!("mycorrhizal://oidc/callback?token={token}") } else { format!("{frontend}/") }
        }
    };
    Ok(redirect(&location, cookies))
}
