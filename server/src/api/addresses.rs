//! Address suggestions over HTTP (`/contacts/address-suggestions`), each handler one call of
//! `crm::address_suggestions`: the scan (read only) and applying one of its suggestions.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::AuthUser;
use crate::crm::address_suggestions::{self as ops, AddressApplyInput, AddressSuggestionList};
use crate::error::ApiError;
use crate::http::json::Json;
use crate::state::AppState;

/// `{message, contact_vcard_uid}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AddressApplied {
    pub message: String,
    pub contact_vcard_uid: String,
}

#[utoipa::path(post, path = "/api/v1/contacts/address-suggestions", tag = "contacts", responses(
    (status = 200, body = AddressSuggestionList, description = "Each address a contact probably shares with a spouse, parent, child, roommate or household and lacks; nothing is written")))]
pub async fn scan(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<AddressSuggestionList>, ApiError> {
    Ok(axum::Json(state.read(&user, ops::suggestions).await?))
}

#[utoipa::path(post, path = "/api/v1/contacts/address-suggestions/apply", tag = "contacts", request_body = AddressApplyInput, responses(
    (status = 200, body = AddressApplied), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such contact or source"),
    (status = 409, description = "The contact has the address already, or the suggestion no longer holds")))]
pub async fn apply(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<AddressApplyInput>,
) -> Result<axum::Json<AddressApplied>, ApiError> {
    let contact_vcard_uid = ops::apply(&state.scope(&user), input).await?;
    Ok(axum::Json(AddressApplied { message: "Address added to contact".into(), contact_vcard_uid }))
}
