//! The signed-in account as clients see it, shared by every front door that shows it.

use serde::Serialize;
use utoipa::ToSchema;

use super::records::Account;

/// The current user as clients see it.
#[derive(Serialize, ToSchema)]
pub struct CurrentUser {
    pub id: u64,
    pub username: String,
    pub email: String,
    pub language: String,
    pub date_format: String,
    pub is_admin: bool,
    pub two_factor_enabled: bool,
    pub sso: bool,
    pub custom_fields: Vec<String>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
}

impl CurrentUser {
    pub fn from(id: u64, a: &Account) -> Self {
        CurrentUser {
            id,
            username: a.username.clone(),
            email: a.email.clone(),
            language: a.language.clone(),
            date_format: a.date_format.clone(),
            is_admin: a.is_admin,
            two_factor_enabled: a.totp.as_ref().is_some_and(|t| t.enabled),
            sso: a.oidc_subject.is_some(),
            custom_fields: a.custom_fields.clone(),
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// `{message, id}`: the account registration created.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountCreated {
    pub message: String,
    pub id: u64,
}

/// `{language, date_format}`: signed in (the session is in the `auth_token` cookie).
#[derive(Debug, Serialize, ToSchema)]
pub struct SignedIn {
    pub language: String,
    pub date_format: String,
}

impl SignedIn {
    pub fn of(a: &Account) -> SignedIn {
        SignedIn { language: a.language.clone(), date_format: a.date_format.clone() }
    }
}

/// `{two_factor_required: true}`: the password was right and a second factor is due (the
/// short-lived `2fa_pending` cookie carries the half-done sign-in to `/login/2fa`).
#[derive(Debug, Serialize, ToSchema)]
pub struct SecondFactorRequired {
    pub two_factor_required: bool,
}

/// What a correct password answers: signed in, or a second factor required.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LoginAnswer {
    SignedIn(SignedIn),
    SecondFactorRequired(SecondFactorRequired),
}

/// `{message, redirect_url?}`: signed out; `redirect_url` only for an SSO session whose provider
/// has an end-session endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct SignedOut {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_url: Option<String>,
}

/// A one-time device code, shown only here.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceGrantCreated {
    pub id: u64,
    pub label: String,
    /// The code the native client exchanges at `/auth/device/session`; shown once.
    pub token: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: jiff::Timestamp,
}

/// `{message, language}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LanguageUpdated {
    pub message: String,
    pub language: String,
}

/// `{message, date_format}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DateFormatUpdated {
    pub message: String,
    pub date_format: String,
}

/// A new TOTP secret (base32) and its `otpauth://` URL, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpSetup {
    pub secret: String,
    pub otpauth_url: String,
}

/// `{message, recovery_codes}`: two-factor is on; the codes are shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpEnabled {
    pub message: String,
    pub recovery_codes: Vec<String>,
}

/// A fresh set of recovery codes, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodes {
    pub recovery_codes: Vec<String>,
}

/// Whether two-factor sign-in is on.
#[derive(Debug, Serialize, ToSchema)]
pub struct TwoFactorStatus {
    pub enabled: bool,
}

/// A page of accounts, for the admin.
#[derive(Serialize, ToSchema)]
pub struct UserPage {
    pub users: Vec<CurrentUser>,
    /// Accounts in all.
    pub total: usize,
    /// This page (1-based).
    pub page: usize,
    pub limit: usize,
}

/// How this instance signs in: `provider_name` is the SSO provider's host (null without SSO).
#[derive(Debug, Serialize, ToSchema)]
pub struct OidcConfig {
    pub enabled: bool,
    pub registration_disabled: bool,
    pub provider_name: Option<String>,
}
