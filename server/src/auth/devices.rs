//! Device grants: a signed-in browser mints a one-time code (ten minutes) that a native client
//! exchanges for a session of its own.

use jiff::SignedDuration;

use super::records::{Account, DeviceGrant, random_token, sha256_hex};
use super::view::DeviceGrantCreated;
use super::{AuthUser, Error, Via};
use mycorrhizal_engine::Engine;

use super::Auth;

const GRANT_LIFETIME: SignedDuration = SignedDuration::from_mins(10);

/// Mints a code labelled `label` (1 to 100 characters, not blank) for `user`, who must be signed
/// in with a browser session: API tokens and device sessions cannot mint grants.
pub async fn mint(engine: &Engine, user: &AuthUser, label: &str) -> Result<DeviceGrantCreated, Error> {
    if !matches!(user.via, Via::Session { .. }) {
        return Err(Error::Forbidden("Device grants are minted from a signed-in session".into()));
    }
    let label = label.trim().to_string();
    if label.is_empty() || label.chars().count() > 100 {
        return Err(Error::validation("label", "must be 1 to 100 characters"));
    }
    let token = random_token(32);
    let now = engine.clock().now();
    let grant = DeviceGrant {
        user_id: user.id.0,
        label: label.clone(),
        hash: sha256_hex(&token),
        created_at: now,
        expires_at: now.checked_add(GRANT_LIFETIME).map_err(Error::internal)?,
        used_at: None,
        revoked_at: None,
    };
    let expires_at = grant.expires_at;
    let id = engine.write_async(move |tx| tx.global().insert(&grant)).await?;
    Ok(DeviceGrantCreated { id, label, token, created_at: now, expires_at })
}

/// Claims the code `device_token` (once, unexpired, unrevoked) and starts a session for its
/// account; returns the account and the session cookie (always `Secure`).
pub async fn exchange(auth: &Auth, engine: &Engine, device_token: &str) -> Result<(Account, String), Error> {
    let hash = sha256_hex(device_token.trim());
    let claimed = engine
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
    let user_id = claimed.ok_or(Error::InvalidCredentials)?;
    let account: Account = crate::crm::blocking(engine, move |engine| engine.global()?.get(user_id))
        .await?
        .map_err(|_| Error::InvalidCredentials)?;
    let (_, cookie) = auth.start_session(engine, user_id, &account, false).await?;
    let cookie = if cookie.contains("; Secure") { cookie } else { format!("{cookie}; Secure") };
    Ok((account, cookie))
}
