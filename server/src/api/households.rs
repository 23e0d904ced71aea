//! Households, their members, and the address suggestions computed on every read, over HTTP:
//! each handler extracts, calls one operation of `crm::household::ops`, and maps the result.
//!
//! A household has a `name`, a `type` (`family_unit`, `roommates` or `other`, the default), an
//! optional `address` and `notes`. Its address is answered in the card's JSContact form
//! (`components` of kinds `name`, `locality`, `region`, `postcode`, `country`, and `full`) and,
//! in the same object, as plain fields (`street`, `city`, `region`, `postal_code`, `country`);
//! either form is accepted on input (plain fields win over components).
//!
//! Members are contacts of the same user, one live membership per contact and household (409
//! otherwise), with `role`, `since` and `until` kept as sent: `since`/`until` are free text a
//! client uses for (partial) dates, never validated as dates. A member route names the member by
//! its membership id or by the contact's vCard UID.
//!
//! Suggestions (see `crm::household::candidates`) come from the card addresses of the
//! current members (no `until`); dismissing one stores its `(address_hash, member_hash)` so it
//! never comes back for that user.

use crate::http::extract::{Path, Query};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::AuthUser;
use crate::crm::Message;
use crate::crm::household::HouseholdMember;
use crate::crm::{
    household::ops as household_ops, household::ops::HouseholdCreated, household::ops::HouseholdFilter,
    household::ops::HouseholdPage, household::ops::HouseholdView, household::ops::HouseholdWithMembers,
    household::ops::MemberChanged, household::ops::MemberList, household::ops::MemberView,
    household::ops::SuggestionList,
};
use crate::error::ApiError;
use crate::http::conditional::{Tagged, if_match, tagged};
use crate::http::json::Json;
use crate::http::params;
use crate::state::AppState;

/// A membership as clients read it, read after its write.
async fn member_shown(
    state: &AppState,
    user: &AuthUser,
    row: mycorrhizal_engine::Row<HouseholdMember>,
) -> Result<(mycorrhizal_engine::Row<HouseholdMember>, MemberView), ApiError> {
    Ok(state.read(user, move |v| Ok((row.clone(), MemberView::of(v, &row)))).await?)
}

// ---- households --------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `true` adds `members`: the membership rows of the households on this page.
    #[param(pattern = "^(true|false)?$")]
    pub include_members: Option<String>,
    /// Only households this contact is or was a member of (by integer id) ...
    pub contact_id: Option<u64>,
    /// ... or by vCard UID.
    pub member_vcard_uid: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, default 25, at most 100.
    pub limit: Option<String>,
    /// `desc` (default, most recently updated first) or `asc`.
    #[param(pattern = "^(asc|desc)$")]
    pub order: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/households", tag = "households", params(ListQuery), responses(
    (status = 200, description = "`{households, total, next_cursor, limit}`, plus `members` with `include_members=true`", body = HouseholdPage),
    (status = 400, description = "Bad cursor, order or flag, named"), (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<HouseholdPage>, ApiError> {
    let filter = HouseholdFilter {
        include_members: params::flag(q.include_members.as_deref(), "include_members")?,
        contact_id: q.contact_id,
        member_vcard_uid: q.member_vcard_uid,
        cursor: q.cursor,
        limit: params::limit(q.limit.as_deref()),
        ascending: params::ascending(q.order.as_deref())?,
    };
    Ok(axum::Json(state.read(&user, move |v| household_ops::list(v, &filter)).await?))
}

#[utoipa::path(post, path = "/api/v1/households", tag = "households", request_body = household_ops::HouseholdInput, responses(
    (status = 201, description = "`{message, household}`", body = HouseholdCreated), (status = 400, description = "Invalid, field named")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<household_ops::HouseholdInput>,
) -> Result<Tagged<HouseholdCreated>, ApiError> {
    let row = household_ops::save(&state.scope(&user), None, input).await?;
    let body = HouseholdCreated { message: "Household created".into(), household: HouseholdView::of(&row) };
    Ok(tagged(&row, None, StatusCode::CREATED, body))
}

/// The household and its members. The `ETag` is the household row's (for `If-Match` on update
/// and delete); it does not cover the members, so there is no 304 here.
#[utoipa::path(get, path = "/api/v1/households/{id}", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{household, members}`", body = HouseholdWithMembers), (status = 404, description = "No such household")))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<Tagged<HouseholdWithMembers>, ApiError> {
    let (row, body) = state.read(&user, move |v| household_ops::get(v, id)).await?;
    Ok(tagged(&row, None, StatusCode::OK, body))
}

/// Replaces the household (name, type, address, notes; an absent address or notes clears it).
#[utoipa::path(put, path = "/api/v1/households/{id}", tag = "households", params(("id" = u64, Path)), request_body = household_ops::HouseholdInput, responses(
    (status = 200, description = "The household", body = HouseholdView), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such household"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<household_ops::HouseholdInput>,
) -> Result<Tagged<HouseholdView>, ApiError> {
    let pre = if_match(&headers)?;
    let row = household_ops::save(&state.scope(&user), Some((id, pre)), input).await?;
    Ok(tagged(&row, None, StatusCode::OK, HouseholdView::of(&row)))
}

/// Deletes the household and, in the same transaction, its membership rows.
#[utoipa::path(delete, path = "/api/v1/households/{id}", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{message}`", body = Message), (status = 404, description = "No such household"),
    (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Message>, ApiError> {
    let pre = if_match(&headers)?;
    household_ops::delete(&state.scope(&user), id, pre).await?;
    Ok(axum::Json(Message::new("Household deleted")))
}

// ---- members -----------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v1/households/{id}/members", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{members, total}`, oldest membership first", body = MemberList), (status = 404, description = "No such household")))]
pub async fn list_members(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<MemberList>, ApiError> {
    Ok(axum::Json(state.read(&user, move |v| household_ops::members(v, id)).await?))
}

#[utoipa::path(post, path = "/api/v1/households/{id}/members", tag = "households", params(("id" = u64, Path)), request_body = crate::crm::bodies::HouseholdMemberBody, responses(
    (status = 201, description = "`{message, member}`", body = MemberChanged), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such household or contact"),
    (status = 409, description = "`ALREADY_EXISTS`: the contact is already a member")))]
pub async fn add_member(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<household_ops::MemberInput>,
) -> Result<Tagged<MemberChanged>, ApiError> {
    let row = household_ops::add_member(&state.scope(&user), id, input).await?;
    let (row, member) = member_shown(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::CREATED, MemberChanged { message: "Member added".into(), member }))
}

/// Changes a member's `role`, `since` or `until` (conditional on the membership's `If-Match`).
#[utoipa::path(patch, path = "/api/v1/households/{id}/members/{member}", tag = "households",
    params(("id" = u64, Path), ("member" = String, Path, description = "Membership id or the contact's vCard UID")),
    request_body = household_ops::MemberEdit, responses(
    (status = 200, description = "`{message, member}`", body = MemberChanged), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such household or member"), (status = 412, description = "If-Match is stale")))]
pub async fn update_member(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path((id, member)): Path<(u64, String)>,
    Json(edit): Json<household_ops::MemberEdit>,
) -> Result<Tagged<MemberChanged>, ApiError> {
    let pre = if_match(&headers)?;
    let row = household_ops::edit_member(&state.scope(&user), id, member, pre, edit).await?;
    let (row, member) = member_shown(&state, &user, row).await?;
    Ok(tagged(&row, None, StatusCode::OK, MemberChanged { message: "Member updated".into(), member }))
}

#[utoipa::path(delete, path = "/api/v1/households/{id}/members/{member}", tag = "households",
    params(("id" = u64, Path), ("member" = String, Path, description = "Membership id or the contact's vCard UID")),
    responses((status = 200, description = "`{message}`", body = Message), (status = 404, description = "No such household or member"),
    (status = 412, description = "If-Match is stale")))]
pub async fn remove_member(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path((id, member)): Path<(u64, String)>,
) -> Result<axum::Json<Message>, ApiError> {
    let pre = if_match(&headers)?;
    household_ops::remove_member(&state.scope(&user), id, member, pre).await?;
    Ok(axum::Json(Message::new("Member removed")))
}

// ---- address suggestions -----------------------------------------------------------------

const SUGGESTIONS: &str = "`{suggestions: [{household_id, household_name, reason, address, address_line, current_address_line, \
member_ids, member_vcard_uids, address_hash, member_hash}], total}`. `reason` is `members_share_address` (two or more \
current members share an address the household does not have) or `member_address` (a member's address, for a \
household without one). Computed on read; dismissed ones are left out";

async fn suggestions_body(
    state: &AppState,
    user: &AuthUser,
    only: Option<u64>,
) -> Result<axum::Json<SuggestionList>, ApiError> {
    Ok(axum::Json(state.read(user, move |v| household_ops::suggestions(v, only)).await?))
}

#[utoipa::path(get, path = "/api/v1/households/suggestions", tag = "households", responses((status = 200, description = SUGGESTIONS, body = SuggestionList)))]
pub async fn list_suggestions(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<SuggestionList>, ApiError> {
    suggestions_body(&state, &user, None).await
}

/// The same as `GET /households/suggestions`, under the path older clients call.
#[utoipa::path(post, path = "/api/v1/households/suggest-addresses", tag = "households", responses((status = 200, description = SUGGESTIONS, body = SuggestionList)))]
pub async fn suggest_addresses(
    State(state): State<AppState>,
    user: AuthUser,
) -> Result<axum::Json<SuggestionList>, ApiError> {
    suggestions_body(&state, &user, None).await
}

#[utoipa::path(get, path = "/api/v1/households/{id}/suggestions", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = SUGGESTIONS, body = SuggestionList), (status = 404, description = "No such household")))]
pub async fn household_suggestions(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<SuggestionList>, ApiError> {
    suggestions_body(&state, &user, Some(id)).await
}

/// Dismisses a suggestion for good (for this user: the same address for the same members is not
/// suggested again, in any household). Dismissing twice is not an error.
#[utoipa::path(post, path = "/api/v1/households/suggestions/dismiss", tag = "households", request_body = household_ops::DismissInput, responses(
    (status = 200, description = "`{message}`", body = Message), (status = 400, description = "A hash is not a 64-character hex hash, named")))]
pub async fn dismiss(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<household_ops::DismissInput>,
) -> Result<axum::Json<Message>, ApiError> {
    household_ops::dismiss(&state.scope(&user), input).await?;
    Ok(axum::Json(Message::new("Suggestion dismissed")))
}
