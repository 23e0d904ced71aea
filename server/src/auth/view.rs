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
