//! Mobile push through Firebase Cloud Messaging's HTTP v1 API, when the instance has a service
//! account (`FCM_SERVICE_ACCOUNT_FILE`): the access token and one send (`fcm_client`, which
//! `state` holds), and the devices each user registered (here).
//!
//! - **Access token** (OAuth 2.0 JWT-bearer grant, RFC 7523): an RS256 JWT signed with the
//!   account's private key (`iss` the account's address, `scope` firebase.messaging, `aud` its
//!   `token_uri`, one hour) is POSTed to `token_uri` as
//!   `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`. The answer's
//!   `access_token` is kept in memory until five minutes before its `expires_in` runs out (by
//!   the server clock), so one token serves every send of the hour; a 401 from FCM drops it.
//! - **Send**: `POST {FCM_API_URL}/v1/projects/{project_id}/messages:send` with
//!   `{"message": {"token", "notification": {"title", "body"}, "data": {"idempotency_key"}}}`.
//!   FCM's answer `404` or error code `UNREGISTERED` means the app was uninstalled or the token
//!   replaced: the device is removed, as a push service's 410 removes a browser.
//! - **Devices**: a registration token belongs to one user (`sys:fcm_devices`, its SHA-256 the
//!   unique key, so registering it again replaces it, whoever had it: the phone belongs to
//!   whoever signed in on it last); each user's device ids are kept in `map:fcm_devices` so a
//!   notification's fan-out reads one value, never a scan. The token is never shown again.
//!
//! What it does not do: queueing (`channels::fan_out`) and the attempt's outcome (`deliver`,
//! `outbox`).

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalRecord, Tx, global_tables};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::notifier::Notifier;
use crate::crm::{Error, Result};

/// `map:` table: user id -> the ids of their devices (postcard `Vec<u64>`).
const DEVICES_TABLE: &str = "map:fcm_devices";
/// Most devices one user may register.
pub const MAX_DEVICES: usize = 20;

// ---------------------------------------------------------------------------------------------
// Devices

/// One registered device, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FcmDevice {
    pub user_id: u64,
    /// The app's FCM registration token.
    pub token: String,
    pub name: String,
    pub created_at: Timestamp,
}

impl GlobalRecord for FcmDevice {
    global_tables!("fcm_devices");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        vec![("token", token_digest(&self.token))]
    }
}

fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A device as its owner sees it (never its token).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FcmDeviceView {
    pub id: u64,
    pub name: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FcmDeviceList {
    pub devices: Vec<FcmDeviceView>,
}

/// A device registration: the app's FCM registration token and a name to tell it by.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FcmDeviceInput {
    /// The registration token `FirebaseMessaging.getToken()` gives the app.
    #[schema(pattern = r"^[A-Za-z0-9_:.-]{16,4096}$")]
    pub token: String,
    /// Shown in your device list ("Pixel 8"); at most 100 characters.
    #[schema(max_length = 100)]
    pub name: Option<String>,
}

fn view(id: u64, d: &FcmDevice) -> FcmDeviceView {
    FcmDeviceView { id, name: d.name.clone(), created_at: d.created_at }
}

/// The ids of `user`'s devices.
pub fn devices_of(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<Vec<u64>> {
    match tx.global().map_get(DEVICES_TABLE, &user.to_string())? {
        Some(bytes) => mycorrhizal_engine::codec::decode(DEVICES_TABLE, &bytes),
        None => Ok(Vec::new()),
    }
}

fn write_devices(tx: &Tx<'_>, user: u64, ids: &[u64]) -> mycorrhizal_engine::Result<()> {
    if ids.is_empty() {
        tx.global().map_remove(DEVICES_TABLE, &user.to_string())?;
        return Ok(());
    }
    tx.global().map_put(DEVICES_TABLE, &user.to_string(), &mycorrhizal_engine::codec::encode(&ids.to_vec()))
}

fn check_token(token: &str) -> Result<String> {
    let token = token.trim();
    let ok = (16..=4096).contains(&token.len())
        && token.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'.' | b'-'));
    if !ok {
        return Err(Error::invalid("token", "must be an FCM registration token: 16 to 4096 of A-Z a-z 0-9 _ : . -"));
    }
    Ok(token.to_string())
}

fn check_name(name: Option<&str>) -> Result<String> {
    let name = name.unwrap_or("").trim();
    if name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(Error::invalid("name", "must be at most 100 characters, no control characters"));
    }
    Ok(if name.is_empty() { "Mobile device".to_string() } else { name.to_string() })
}

/// Registers a device for the caller (replacing an earlier registration of the same token,
/// whoever made it). Returns it and whether it is new. Refused when the instance has no FCM
/// service account.
pub async fn register(notifier: &Notifier, user: u64, input: FcmDeviceInput) -> Result<(FcmDeviceView, bool)> {
    let token = check_token(&input.token)?;
    let name = check_name(input.name.as_deref())?;
    if notifier.fcm.is_none() {
        return Err(Error::Conflict("this instance has no FCM service account, so mobile push is off".into()));
    }
    notifier
        .engine
        .write_async(move |tx| {
            let g = tx.global();
            let device = FcmDevice { user_id: user, token: token.clone(), name: name.clone(), created_at: tx.now() };
            let mut mine = devices_of(tx, user)?;
            if let Some(id) = g.lookup::<FcmDevice>("token", &token_digest(&token))? {
                let old: FcmDevice = g.get(id)?;
                if old.user_id != user {
                    // The phone changed hands: it leaves the other user's list.
                    let mut theirs = devices_of(tx, old.user_id)?;
                    theirs.retain(|d| *d != id);
                    write_devices(tx, old.user_id, &theirs)?;
                    mine.push(id);
                    write_devices(tx, user, &mine)?;
                }
                g.put(id, &device)?;
                return Ok(Ok((view(id, &device), false)));
            }
            if mine.len() >= MAX_DEVICES {
                return Ok(Err(Error::Conflict(format!("at most {MAX_DEVICES} devices per user"))));
            }
            let id = g.insert(&device)?;
            mine.push(id);
            write_devices(tx, user, &mine)?;
            Ok(Ok((view(id, &device), true)))
        })
        .await?
}

/// The caller's devices.
pub fn list(notifier: &Notifier, user: u64) -> Result<FcmDeviceList> {
    let g = notifier.engine.global()?;
    let ids: Vec<u64> = match g.map_get(DEVICES_TABLE, &user.to_string())? {
        Some(bytes) => mycorrhizal_engine::codec::decode(DEVICES_TABLE, &bytes)?,
        None => Vec::new(),
    };
    let mut devices = Vec::new();
    for id in ids {
        match g.get::<FcmDevice>(id) {
            Ok(d) if d.user_id == user => devices.push(view(id, &d)),
            Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(FcmDeviceList { devices })
}

/// Removes `user`'s device `id` inside `tx`; false when it is not theirs.
pub fn remove_in(tx: &Tx<'_>, user: u64, id: u64) -> mycorrhizal_engine::Result<bool> {
    match tx.global().get::<FcmDevice>(id) {
        Ok(d) if d.user_id == user => {}
        Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => return Ok(false),
        Err(e) => return Err(e),
    }
    tx.global().delete::<FcmDevice>(id)?;
    let mut mine = devices_of(tx, user)?;
    mine.retain(|d| *d != id);
    write_devices(tx, user, &mine)?;
    Ok(true)
}

/// Removes the caller's device `id` (404 when it is not theirs).
pub async fn unregister(notifier: &Notifier, user: u64, id: u64) -> Result<()> {
    let removed = notifier.engine.write_async(move |tx| remove_in(tx, user, id)).await?;
    if removed { Ok(()) } else { Err(Error::NotFound) }
}

/// Removes every device of `user` (an account's deletion, or the channel cleared). Returns how
/// many rows went.
pub(crate) fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    let mut removed = 0;
    for (id, d) in tx.global().list::<FcmDevice>()? {
        if d.user_id == user {
            tx.global().delete::<FcmDevice>(id)?;
            removed += 1;
        }
    }
    removed += u64::from(tx.global().map_remove(DEVICES_TABLE, &user.to_string())?);
    Ok(removed)
}
