//! Mobile push through Firebase Cloud Messaging's HTTP v1 API, when the instance has a service
//! account (`FCM_SERVICE_ACCOUNT_FILE`): the access token, one send, and the devices each user
//! registered.
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

use jiff::{SignedDuration, Timestamp};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mycorrhizal_engine::{GlobalRecord, Tx, global_tables};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::config::fcm::Fcm;
use crate::crm::{Error, Result};
use crate::state::AppState;

/// The OAuth scope a send needs.
pub const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// `map:` table: user id -> the ids of their devices (postcard `Vec<u64>`).
const DEVICES_TABLE: &str = "map:fcm_devices";
/// Most devices one user may register.
pub const MAX_DEVICES: usize = 20;
/// How long before its expiry a cached access token is renewed.
const RENEW_BEFORE: SignedDuration = SignedDuration::from_secs(300);
/// Most bytes of a notification's body (FCM's whole message is at most 4 KB).
const MAX_BODY: usize = 3000;

// ---------------------------------------------------------------------------------------------
// The client: access token and one send

/// The configured account, its signing key and the cached access token.
pub struct FcmClient {
    config: Fcm,
    key: EncodingKey,
    /// A tokio lock: held across the token request, so concurrent sends make one request.
    token: tokio::sync::Mutex<Option<(String, Timestamp)>>,
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: Option<i64>,
}

impl FcmClient {
    pub fn new(config: Fcm) -> std::result::Result<FcmClient, String> {
        let key = EncodingKey::from_rsa_pem(config.private_key.expose().as_bytes())
            .map_err(|_| "the FCM private key is not an RSA key in PEM".to_string())?;
        Ok(FcmClient { config, key, token: tokio::sync::Mutex::new(None) })
    }

    /// The JWT-bearer grant's assertion, issued at `now`.
    pub fn assertion(&self, now: Timestamp) -> std::result::Result<String, String> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = self.config.private_key_id.clone();
        let claims = Claims {
            iss: &self.config.client_email,
            scope: SCOPE,
            aud: &self.config.token_uri,
            iat: now.as_second(),
            exp: now.as_second() + 3600,
        };
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(|e| format!("cannot sign the FCM assertion: {e}"))
    }

    /// An access token valid at `now`: the cached one, or a new one from the token endpoint.
    pub async fn access_token(&self, http: &reqwest::Client, now: Timestamp) -> std::result::Result<String, String> {
        let mut cached = self.token.lock().await;
        if let Some((token, renew_at)) = cached.as_ref()
            && now < *renew_at
        {
            return Ok(token.clone());
        }
        let assertion = self.assertion(now)?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion.as_str())];
        let response = http
            .post(&self.config.token_uri)
            .form(&form)
            .send()
            .await
            .map_err(|e| format!("cannot reach the FCM token endpoint: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the FCM token endpoint answered {}", status.as_u16()));
        }
        let answer: TokenAnswer =
            response.json().await.map_err(|_| "the FCM token endpoint's answer is not a token".to_string())?;
        let lifetime = SignedDuration::from_secs(answer.expires_in.unwrap_or(3600).clamp(60, 86_400));
        let renew_at = now.checked_add(lifetime - RENEW_BEFORE).unwrap_or(now);
        *cached = Some((answer.access_token.clone(), renew_at));
        Ok(answer.access_token)
    }

    /// Forgets the cached token (FCM refused it).
    pub async fn forget_token(&self) {
        *self.token.lock().await = None;
    }

    /// `{FCM_API_URL}/v1/projects/{project_id}/messages:send`.
    pub fn send_url(&self) -> String {
        format!("{}/v1/projects/{}/messages:send", self.config.api_url, self.config.project_id)
    }
}

/// The send body for one device.
pub fn message(token: &str, title: &str, text: &str, key: &str) -> serde_json::Value {
    let mut end = text.len().min(MAX_BODY);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    serde_json::json!({
        "message": {
            "token": token,
            "notification": { "title": title, "body": &text[..end] },
            "data": { "idempotency_key": key },
        }
    })
}

/// Whether FCM's answer says the token no longer names an installed app.
pub fn unregistered(status: u16, body: &str) -> bool {
    status == 404 || body.contains("\"UNREGISTERED\"")
}

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
pub async fn register(state: &AppState, user: u64, input: FcmDeviceInput) -> Result<(FcmDeviceView, bool)> {
    let token = check_token(&input.token)?;
    let name = check_name(input.name.as_deref())?;
    if state.fcm.is_none() {
        return Err(Error::Conflict("this instance has no FCM service account, so mobile push is off".into()));
    }
    state
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
pub fn list(state: &AppState, user: u64) -> Result<FcmDeviceList> {
    let g = state.engine.global()?;
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
pub async fn unregister(state: &AppState, user: u64, id: u64) -> Result<()> {
    let removed = state.engine.write_async(move |tx| remove_in(tx, user, id)).await?;
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
