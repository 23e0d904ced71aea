//! The second factor of a sign-in or of a sensitive account change: a TOTP code (moving the
//! replay window forward) or a recovery code (used up), throttled per account.

use serde::Deserialize;
use utoipa::ToSchema;

use super::keys::binding;
use super::records::{Account, Totp};
use super::totp;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Deserialize, ToSchema)]
pub struct CodeBody {
    /// A TOTP code or a recovery code.
    pub code: String,
}

pub fn sealed_binding(user_id: u64) -> String {
    binding("sys:accounts", user_id, "totp_secret")
}

/// Checks a second factor for `user_id` and consumes it: a TOTP code moves the replay window
/// forward, a recovery code (if `allow_recovery`) is removed. Wrong codes are throttled.
pub async fn use_second_factor(
    state: &AppState,
    user_id: u64,
    code: &str,
    allow_recovery: bool,
) -> Result<Account, ApiError> {
    let limits = &state.auth.limits;
    limits
        .check_totp(user_id)
        .map_err(|r| ApiError::RateLimited { retry_after: r.retry_after.as_secs().max(1), locked: true })?;
    let code = code.trim().to_string();
    if code.is_empty() {
        return Err(ApiError::invalid_input("code", "is required"));
    }
    let key = state.auth.data_key.clone();
    let now = state.engine.clock().now().as_second().max(0) as u64;
    let outcome = state
        .engine
        .write_async(move |tx| {
            let mut account: Account = tx.global().get(user_id)?;
            let Some(totp_state) = account.totp.clone() else {
                return Ok(None);
            };
            let accepted = if allow_recovery && totp::is_recovery_shape(&code) {
                let hash = totp::hash_recovery(&code);
                let before = account.recovery_codes.len();
                account.recovery_codes.retain(|h| *h != hash);
                account.recovery_codes.len() < before
            } else {
                let Some(secret) = key.decrypt(&totp_state.sealed_secret, &sealed_binding(user_id)) else {
                    return Ok(None);
                };
                match totp::verify(&secret, &code, now, totp_state.last_step) {
                    Some(step) => {
                        account.totp = Some(Totp { last_step: step, ..totp_state });
                        true
                    }
                    None => false,
                }
            };
            if !accepted {
                return Ok(None);
            }
            tx.global().put(user_id, &account)?;
            Ok(Some(account))
        })
        .await?;
    match outcome {
        Some(account) => {
            limits.totp_succeeded(user_id);
            Ok(account)
        }
        None => {
            limits.totp_failed(user_id);
            Err(ApiError::invalid_input("code", "is not valid"))
        }
    }
}
