//! Extractors for the session-minting routes, placed before the body so they run first:
//! the client-version gate (before any credential work) and the per-IP auth rate limit.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::client::{ClientIp, check_client_version};
use crate::error::ApiError;
use crate::state::AppState;

/// Passes only clients at or above `MIN_CLIENT_VERSION`, and within the auth request rate.
/// Holds the caller's IP for lockout accounting.
pub struct SessionMinting {
    pub ip: std::net::IpAddr,
}

impl FromRequestParts<AppState> for SessionMinting {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        check_client_version(state.config.min_client_version, &parts.headers)?;
        let ip = take_auth_rate(parts, state).await?;
        Ok(SessionMinting { ip })
    }
}

/// The per-IP auth rate limit alone, for the other public auth routes and the web client's
/// sign-in (served by this binary, so never behind the client-version gate). Holds the caller's IP.
pub struct AuthRate {
    pub ip: std::net::IpAddr,
}

impl FromRequestParts<AppState> for AuthRate {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        take_auth_rate(parts, state).await.map(|ip| AuthRate { ip })
    }
}

/// Spends one token of the caller's auth-route budget; returns the caller's IP.
async fn take_auth_rate(parts: &mut Parts, state: &AppState) -> Result<std::net::IpAddr, ApiError> {
    let ClientIp(ip) = ClientIp::from_request_parts(parts, state).await?;
    let limits = &state.auth.limits;
    limits
        .take(format!("auth:ip:{ip}"), limits.auth)
        .map_err(|r| ApiError::RateLimited { retry_after: r.retry_after.as_secs().max(1), locked: false })?;
    Ok(ip)
}
