//! `FCM_SERVICE_ACCOUNT_FILE` and `FCM_API_URL`: mobile push through Firebase Cloud Messaging's
//! HTTP v1 API. The service-account file (the JSON Google's console downloads) is read and
//! checked at boot: its `project_id`, `client_email`, `token_uri` and an RSA `private_key` that
//! signs. A missing, unreadable or incomplete file stops the server naming the variable; the
//! key itself is never shown (`Debug` redacts it).

use std::path::Path;

use serde::Deserialize;

use super::env::Env;
use super::secret::Secret;

/// Where messages are sent unless `FCM_API_URL` says otherwise.
pub const DEFAULT_API_URL: &str = "https://fcm.googleapis.com";

/// A configured FCM service account.
#[derive(Clone)]
pub struct Fcm {
    pub project_id: String,
    /// The account's address: the JWT's `iss`.
    pub client_email: String,
    /// The key's id, sent as the JWT's `kid` when the file has one.
    pub private_key_id: Option<String>,
    /// PEM, PKCS#8 or PKCS#1.
    pub private_key: Secret,
    /// The OAuth 2.0 token endpoint the JWT-bearer grant is posted to (the JWT's `aud`).
    pub token_uri: String,
    /// `FCM_API_URL`: base of `/v1/projects/{project_id}/messages:send`, no trailing slash.
    pub api_url: String,
}

impl std::fmt::Debug for Fcm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fcm")
            .field("project_id", &self.project_id)
            .field("client_email", &self.client_email)
            .field("private_key", &self.private_key)
            .field("token_uri", &self.token_uri)
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct ServiceAccountFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    project_id: Option<String>,
    private_key_id: Option<String>,
    private_key: Option<String>,
    client_email: Option<String>,
    token_uri: Option<String>,
}

/// Reads the FCM configuration, or `None` when `FCM_SERVICE_ACCOUNT_FILE` is unset.
pub fn load(env: &mut Env) -> Option<Fcm> {
    let api_url = env.string_or("FCM_API_URL", DEFAULT_API_URL).trim_end_matches('/').to_string();
    if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
        env.fail("FCM_API_URL", "expected an http or https URL");
        return None;
    }
    let path = env.string("FCM_SERVICE_ACCOUNT_FILE")?;
    match read(Path::new(&path), api_url) {
        Ok(fcm) => Some(fcm),
        Err(reason) => {
            env.fail("FCM_SERVICE_ACCOUNT_FILE", reason);
            None
        }
    }
}

fn read(path: &Path, api_url: String) -> Result<Fcm, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let file: ServiceAccountFile =
        serde_json::from_str(&text).map_err(|e| format!("not a service-account JSON file: {e}"))?;
    if file.kind.as_deref().is_some_and(|k| k != "service_account") {
        return Err("its \"type\" is not \"service_account\"".into());
    }
    let field = |value: Option<String>, name: &str| {
        value.filter(|v| !v.trim().is_empty()).ok_or_else(|| format!("it has no \"{name}\""))
    };
    let project_id = field(file.project_id, "project_id")?;
    if !project_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b':' || b == b'.') {
        return Err("its \"project_id\" is not a project id".into());
    }
    let client_email = field(file.client_email, "client_email")?;
    let private_key = field(file.private_key, "private_key")?;
    jsonwebtoken::EncodingKey::from_rsa_pem(private_key.as_bytes())
        .map_err(|_| "its \"private_key\" is not an RSA private key in PEM".to_string())?;
    let token_uri = field(file.token_uri, "token_uri")?;
    if !(token_uri.starts_with("https://") || token_uri.starts_with("http://")) {
        return Err("its \"token_uri\" is not an http or https URL".into());
    }
    Ok(Fcm {
        project_id,
        client_email,
        private_key_id: file.private_key_id.filter(|k| !k.is_empty()),
        private_key: Secret::new(private_key),
        token_uri,
        api_url,
    })
}
