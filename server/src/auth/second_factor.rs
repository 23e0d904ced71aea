//! The second factor of a sign-in or of a sensitive account change: a TOTP code (moving the
//! replay window forward) or a recovery code (used up), throttled per account.

use serde::Deserialize;
use utoipa::ToSchema;

use super::Error;
use super::records::{Account, Totp};
use super::{AuthUser, accounts, totp};
use crate::keys::binding;
use mycorrhizal_engine::Engine;

use super::Auth;

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
    auth: &Auth,
    engine: &Engine,
    user_id: u64,
    code: &str,
    allow_recovery: bool,
) -> Result<Account, Error> {
    let limits = &auth.limits;
    limits
        .check_totp(user_id)
        .map_err(|r| Error::RateLimited { retry_after: r.retry_after.as_secs().max(1), locked: true })?;
    let code = code.trim().to_string();
    if code.is_empty() {
        return Err(Error::invalid_input("code", "is required"));
    }
    let key = auth.data_key.clone();
    let now = engine.clock().now().as_second().max(0) as u64;
    let outcome = engine
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
            Err(Error::invalid_input("code", "is not valid"))
        }
    }
}

fn enabled(account: &Account) -> bool {
    account.totp.as_ref().is_some_and(|t| t.enabled)
}

/// A new TOTP secret for `user`, sealed in the account but not in force until [`confirm`].
/// Returns the secret in base32 and its `otpauth://` URL (what a QR code carries).
pub async fn setup(auth: &Auth, engine: &Engine, user: &AuthUser) -> Result<(String, String), Error> {
    if enabled(&user.account) {
        return Err(Error::Conflict("Two-factor authentication is already enabled".into()));
    }
    if user.account.oidc_subject.is_some() {
        return Err(Error::Forbidden(
            "This account signs in through single sign-on; use the provider's two-factor settings".into(),
        ));
    }
    let secret = totp::new_secret();
    let sealed = auth.data_key.encrypt(&secret, &sealed_binding(user.id.0)).map_err(Error::internal)?;
    accounts::update(engine, user.id.0, move |a| {
        a.totp = Some(Totp { sealed_secret: sealed.clone(), enabled: false, last_step: 0 });
        Ok(())
    })
    .await?;
    Ok((totp::base32(&secret), totp::otpauth_url(&secret, &user.account.username)))
}

/// Turns two-factor on with a first valid `code`; returns the recovery codes, shown once.
pub async fn confirm(auth: &Auth, engine: &Engine, user: &AuthUser, code: &str) -> Result<Vec<String>, Error> {
    match &user.account.totp {
        Some(t) if !t.enabled => {}
        Some(_) => return Err(Error::Conflict("Two-factor authentication is already enabled".into())),
        None => return Err(Error::Conflict("Run /users/2fa/setup first".into())),
    }
    use_second_factor(auth, engine, user.id.0, code, false).await?;
    let (plain, hashes) = totp::recovery_codes();
    accounts::update(engine, user.id.0, move |a| {
        if let Some(t) = a.totp.as_mut() {
            t.enabled = true;
        }
        a.recovery_codes = hashes.clone();
        Ok(())
    })
    .await?;
    Ok(plain)
}

/// Turns two-factor off, given a valid code (TOTP or recovery).
pub async fn disable(auth: &Auth, engine: &Engine, user: &AuthUser, code: &str) -> Result<(), Error> {
    if !enabled(&user.account) {
        return Err(Error::Conflict("Two-factor authentication is not enabled".into()));
    }
    use_second_factor(auth, engine, user.id.0, code, true).await?;
    accounts::update(engine, user.id.0, |a| {
        a.totp = None;
        a.recovery_codes.clear();
        Ok(())
    })
    .await?;
    Ok(())
}

/// New recovery codes for a live TOTP `code` (not a recovery code); the old set dies.
pub async fn regenerate(auth: &Auth, engine: &Engine, user: &AuthUser, code: &str) -> Result<Vec<String>, Error> {
    if !enabled(&user.account) {
        return Err(Error::Conflict("Two-factor authentication is not enabled".into()));
    }
    use_second_factor(auth, engine, user.id.0, code, false).await?;
    let (plain, hashes) = totp::recovery_codes();
    accounts::update(engine, user.id.0, move |a| {
        a.recovery_codes = hashes.clone();
        Ok(())
    })
    .await?;
    Ok(plain)
}
