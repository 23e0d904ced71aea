//! FCM HTTP v1's client: the service account's access token (the JWT-bearer grant, cached
//! until five minutes before it expires) and the body of one send. Held by `state`; it knows
//! nothing of users or devices (`fcm`), so the shared state does not depend on the operations
//! that take it.

use jiff::{SignedDuration, Timestamp};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use crate::config::fcm::Fcm;

/// The OAuth scope a send needs.
pub const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
/// How long before its expiry a cached access token is renewed.
const RENEW_BEFORE: SignedDuration = SignedDuration::from_secs(300);
/// Most bytes of a notification's body (FCM's whole message is at most 4 KB).
const MAX_BODY: usize = 3000;

/// Why FCM's access token could not be had: a failed attempt's reason (retried).
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the FCM private key is not an RSA key in PEM")]
    NotAnRsaKey,
    #[error("cannot sign the FCM assertion: {0}")]
    Signing(jsonwebtoken::errors::Error),
    #[error("cannot reach the FCM token endpoint: {0}")]
    Unreachable(reqwest::Error),
    #[error("the FCM token endpoint answered {0}")]
    Refused(u16),
    #[error("the FCM token endpoint's answer is not a token")]
    NotAToken,
}

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
    pub fn new(config: Fcm) -> std::result::Result<FcmClient, TokenError> {
        let key =
            EncodingKey::from_rsa_pem(config.private_key.expose().as_bytes()).map_err(|_| TokenError::NotAnRsaKey)?;
        Ok(FcmClient { config, key, token: tokio::sync::Mutex::new(None) })
    }

    /// The JWT-bearer grant's assertion, issued at `now`.
    pub fn assertion(&self, now: Timestamp) -> std::result::Result<String, TokenError> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = self.config.private_key_id.clone();
        let claims = Claims {
            iss: &self.config.client_email,
            scope: SCOPE,
            aud: &self.config.token_uri,
            iat: now.as_second(),
            exp: now.as_second() + 3600,
        };
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(TokenError::Signing)
    }

    /// An access token valid at `now`: the cached one, or a new one from the token endpoint.
    pub async fn access_token(
        &self,
        http: &reqwest::Client,
        now: Timestamp,
    ) -> std::result::Result<String, TokenError> {
        let mut cached = self.token.lock().await;
        if let Some((token, renew_at)) = cached.as_ref()
            && now < *renew_at
        {
            return Ok(token.clone());
        }
        let assertion = self.assertion(now)?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion.as_str())];
        let response = http.post(&self.config.token_uri).form(&form).send().await.map_err(TokenError::Unreachable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(TokenError::Refused(status.as_u16()));
        }
        let answer: TokenAnswer = response.json().await.map_err(|_| TokenError::NotAToken)?;
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
