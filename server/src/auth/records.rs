//! The account-side records, stored as global (instance-level) rows: accounts, sessions, API
//! tokens, password-reset tokens and device grants. Secrets are never stored in the clear:
//! tokens as SHA-256, passwords as argon2id, the TOTP secret sealed with the data key.

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalRecord, global_tables};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A user account.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Account {
    /// Lowercased, 1-50 characters, no `@`.
    pub username: String,
    /// Lowercased.
    pub email: String,
    /// argon2id PHC string; `None` for SSO-provisioned accounts.
    pub password_hash: Option<String>,
    pub is_admin: bool,
    pub language: String,
    pub date_format: String,
    pub custom_fields: Vec<String>,
    /// Bumping it ends every session of this account.
    pub token_version: u64,
    pub totp: Option<Totp>,
    /// SHA-256 of each unused recovery code.
    pub recovery_codes: Vec<String>,
    pub oidc_subject: Option<String>,
    pub oidc_provider: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Two-factor state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Totp {
    /// The TOTP secret sealed with the data key, bound to this account and field.
    pub sealed_secret: Vec<u8>,
    /// False between setup and confirm.
    pub enabled: bool,
    /// Time step of the last accepted code: a code is never accepted twice.
    pub last_step: u64,
}

impl GlobalRecord for Account {
    global_tables!("accounts");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        let mut keys = vec![("username", self.username.clone()), ("email", self.email.clone())];
        if let (Some(provider), Some(subject)) = (&self.oidc_provider, &self.oidc_subject) {
            keys.push(("oidc", format!("{provider} {subject}")));
        }
        keys
    }
}

/// A server-side session: logging out deletes it, so a replayed cookie is refused.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub user_id: u64,
    pub created_at: Timestamp,
    pub last_seen_at: Timestamp,
    /// Absolute end, whatever the activity.
    pub expires_at: Timestamp,
    /// True for sessions minted through OIDC (logout may redirect to the provider).
    pub sso: bool,
}

impl GlobalRecord for Session {
    global_tables!("sessions");
}

/// What an API token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Full,
    Carddav,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiToken {
    pub user_id: u64,
    pub name: String,
    /// Lowercase hex SHA-256 of the whole plaintext, prefix included.
    pub hash: String,
    pub scope: Scope,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    pub expires_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

impl GlobalRecord for ApiToken {
    global_tables!("api_tokens");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        vec![("hash", self.hash.clone())]
    }
}

/// A single-use password-reset token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResetToken {
    pub user_id: u64,
    pub hash: String,
    pub expires_at: Timestamp,
}

impl GlobalRecord for ResetToken {
    global_tables!("reset_tokens");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        vec![("hash", self.hash.clone())]
    }
}

/// A short-lived, one-time code a logged-in user mints for a native client to exchange for a
/// session of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceGrant {
    pub user_id: u64,
    pub label: String,
    pub hash: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

impl GlobalRecord for DeviceGrant {
    global_tables!("device_grants");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        vec![("hash", self.hash.clone())]
    }
}

/// Lowercase hex SHA-256: how every bearer secret is stored and looked up.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// `n` random bytes as unpadded base64url.
pub fn random_token(n: usize) -> String {
    use base64::Engine as _;
    let mut bytes = vec![0u8; n];
    // The OS random source failing is unrecoverable for a server that mints secrets.
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
