//! The signed-in user's own account: profile, password, preferences, custom field names and
//! two-factor enrolment.

use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::accounts;
use crate::auth::second_factor::{self, CodeBody};
use crate::auth::view::{
    CurrentUser, DateFormatUpdated, LanguageUpdated, RecoveryCodes, TotpEnabled, TotpSetup, TwoFactorStatus,
};
use crate::auth::{AuthUser, Via};
use crate::crm::Message;
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/users/me", tag = "users", responses((status = 200, body = CurrentUser), (status = 401, description = "Not signed in")))]
pub async fn me(user: AuthUser) -> axum::Json<CurrentUser> {
    axum::Json(CurrentUser::from(user.id.0, &user.account))
}

#[derive(Deserialize, ToSchema)]
pub struct ChangePasswordBody {
    pub current_password: String,
    pub new_password: String,
}

/// Changes the password. Every other session ends; a session caller gets a fresh cookie.
#[utoipa::path(post, path = "/api/v1/users/change-password", tag = "users", request_body = ChangePasswordBody, responses(
    (status = 200, body = Message, description = "Changed"), (status = 400, description = "Wrong current password or weak new one")))]
pub async fn change_password(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<ChangePasswordBody>,
) -> Result<Response, ApiError> {
    let account =
        accounts::change_password(&state.auth, &state.engine, &user, &body.current_password, body.new_password).await?;
    let body = axum::Json(Message::new("Password changed"));
    if matches!(user.via, Via::Session { .. }) {
        let (_, cookie) = state.auth.start_session(&state.engine, user.id.0, &account, false).await?;
        return Ok(([(SET_COOKIE, cookie)], body).into_response());
    }
    Ok(body.into_response())
}

#[derive(Deserialize, ToSchema)]
pub struct LanguageBody {
    #[schema(pattern = "^\\s*(en|de|it|es|fr)\\s*$")]
    pub language: String,
}

#[utoipa::path(patch, path = "/api/v1/users/language", tag = "users", request_body = LanguageBody, responses((status = 200, body = LanguageUpdated)))]
pub async fn set_language(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<LanguageBody>,
) -> Result<axum::Json<LanguageUpdated>, ApiError> {
    let language = accounts::set_language(&state.engine, user.id.0, &body.language).await?;
    Ok(axum::Json(LanguageUpdated { message: "Language updated".into(), language }))
}

#[derive(Deserialize, ToSchema)]
pub struct DateFormatBody {
    #[schema(pattern = "^\\s*(eu|us|iso|ca|eu-hyphen|us-mmm|us-mmmm|eu-mmm|eu-mmmm)\\s*$")]
    pub date_format: String,
}

#[utoipa::path(patch, path = "/api/v1/users/date-format", tag = "users", request_body = DateFormatBody, responses((status = 200, body = DateFormatUpdated)))]
pub async fn set_date_format(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<DateFormatBody>,
) -> Result<axum::Json<DateFormatUpdated>, ApiError> {
    let date_format = accounts::set_date_format(&state.engine, user.id.0, &body.date_format).await?;
    Ok(axum::Json(DateFormatUpdated { message: "Date format updated".into(), date_format }))
}

#[derive(Deserialize, Serialize, ToSchema)]
pub struct CustomFields {
    /// Names of the user's custom contact fields, in display order: at most 100, each listed once
    /// (ignoring ASCII case).
    #[schema(schema_with = crate::crm::schema::field_names)]
    pub custom_fields: Vec<String>,
}

/// `{enabled_contact_fields}`: the contact fields the client shows (`null`: never chosen).
#[derive(Debug, Serialize, ToSchema)]
pub struct EnabledContactFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub enabled_contact_fields: Option<Vec<String>>,
}

/// `{fields}`: the names, in order (`null` resets to the client's default).
#[derive(Debug, Deserialize, ToSchema)]
pub struct EnabledContactFieldsBody {
    #[serde(default)]
    pub fields: Option<Vec<String>>,
}

#[utoipa::path(get, path = "/api/v1/users/enabled-contact-fields", tag = "users", responses((status = 200, body = EnabledContactFields)))]
pub async fn enabled_contact_fields(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<EnabledContactFields>, ApiError> {
    let fields = state.read(&user, crate::crm::client_settings::enabled_contact_fields).await?;
    Ok(axum::Json(EnabledContactFields { message: None, enabled_contact_fields: fields }))
}

#[utoipa::path(patch, path = "/api/v1/users/enabled-contact-fields", tag = "users", request_body = EnabledContactFieldsBody,
    responses((status = 200, body = EnabledContactFields), (status = 400, description = "A name is blank or too long, named")))]
pub async fn set_enabled_contact_fields(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<EnabledContactFieldsBody>,
) -> Result<axum::Json<EnabledContactFields>, ApiError> {
    let fields = crate::crm::client_settings::set_enabled_contact_fields(&state.scope(&user), body.fields).await?;
    Ok(axum::Json(EnabledContactFields {
        message: Some("Enabled contact fields updated".into()),
        enabled_contact_fields: fields,
    }))
}

/// Another user of the instance, as the share picker lists them.
#[derive(Debug, Serialize, ToSchema)]
pub struct DirectoryEntry {
    pub id: u64,
    pub username: String,
}

/// `{users}`: every other user of the instance, by username.
#[derive(Debug, Serialize, ToSchema)]
pub struct Directory {
    pub users: Vec<DirectoryEntry>,
}

#[utoipa::path(get, path = "/api/v1/users/directory", tag = "users", responses((status = 200, body = Directory)))]
pub async fn directory(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Directory>, ApiError> {
    let users = accounts::directory(&state.engine, user.id.0).await?;
    Ok(axum::Json(Directory {
        users: users.into_iter().map(|(id, username)| DirectoryEntry { id, username }).collect(),
    }))
}

#[utoipa::path(get, path = "/api/v1/users/custom-fields", tag = "users", responses((status = 200, body = CustomFields)))]
pub async fn custom_fields(user: AuthUser) -> axum::Json<CustomFields> {
    axum::Json(CustomFields { custom_fields: user.account.custom_fields })
}

#[utoipa::path(patch, path = "/api/v1/users/custom-fields", tag = "users", request_body = CustomFields, responses((status = 200, body = CustomFields)))]
pub async fn set_custom_fields(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CustomFields>,
) -> Result<axum::Json<CustomFields>, ApiError> {
    let names = accounts::set_custom_fields(&state.engine, user.id.0, body.custom_fields).await?;
    Ok(axum::Json(CustomFields { custom_fields: names }))
}

/// Begins TOTP enrolment: a new secret, shown once, effective after `/users/2fa/confirm`.
#[utoipa::path(post, path = "/api/v1/users/2fa/setup", tag = "users", responses(
    (status = 200, body = TotpSetup), (status = 403, description = "Single-sign-on account"), (status = 409, description = "Already enabled")))]
pub async fn totp_setup(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<TotpSetup>, ApiError> {
    let (secret, otpauth_url) = second_factor::setup(&state.auth, &state.engine, &user).await?;
    Ok(axum::Json(TotpSetup { secret, otpauth_url }))
}

#[utoipa::path(post, path = "/api/v1/users/2fa/confirm", tag = "users", request_body = CodeBody, responses(
    (status = 200, body = TotpEnabled, description = "`{message, recovery_codes}`, shown once"), (status = 400, description = "Wrong code"), (status = 409, description = "Not set up, or already on")))]
pub async fn totp_confirm(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CodeBody>,
) -> Result<axum::Json<TotpEnabled>, ApiError> {
    let recovery_codes = second_factor::confirm(&state.auth, &state.engine, &user, &body.code).await?;
    Ok(axum::Json(TotpEnabled { message: "Two-factor authentication enabled".into(), recovery_codes }))
}

#[utoipa::path(post, path = "/api/v1/users/2fa/disable", tag = "users", request_body = CodeBody, responses(
    (status = 200, body = Message, description = "Disabled"), (status = 400, description = "Wrong code"), (status = 409, description = "Not enabled")))]
pub async fn totp_disable(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CodeBody>,
) -> Result<axum::Json<Message>, ApiError> {
    second_factor::disable(&state.auth, &state.engine, &user, &body.code).await?;
    Ok(axum::Json(Message::new("Two-factor authentication disabled")))
}

/// New recovery codes; needs a live TOTP code (not a recovery code). The old set dies.
#[utoipa::path(post, path = "/api/v1/users/2fa/recovery-codes/regenerate", tag = "users", request_body = CodeBody, responses(
    (status = 200, body = RecoveryCodes, description = "`{recovery_codes}`, shown once"), (status = 400, description = "Wrong code"), (status = 409, description = "Not enabled")))]
pub async fn totp_regenerate(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CodeBody>,
) -> Result<axum::Json<RecoveryCodes>, ApiError> {
    let recovery_codes = second_factor::regenerate(&state.auth, &state.engine, &user, &body.code).await?;
    Ok(axum::Json(RecoveryCodes { recovery_codes }))
}

#[utoipa::path(get, path = "/api/v1/users/2fa/status", tag = "users", responses((status = 200, body = TwoFactorStatus)))]
pub async fn totp_status(user: AuthUser) -> axum::Json<TwoFactorStatus> {
    axum::Json(TwoFactorStatus { enabled: user.account.totp.as_ref().is_some_and(|t| t.enabled) })
}
