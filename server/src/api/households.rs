//! Households, their members, and the address suggestions computed on every read.
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
//! Suggestions (see [`crate::crm::households::candidates`]) come from the card addresses of the
//! current members (no `until`); dismissing one stores its `(address_hash, member_hash)` so it
//! never comes back for that user.

use std::collections::HashSet;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use mycorrhizal_engine::{Precondition, Row, UPDATED_INDEX, UserView, Walk};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::auth::AuthUser;
use crate::crm::contact::{Contact, INDEX_UID};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::households;
use crate::crm::households::{
    BY_HOUSEHOLD, DISMISSED, DismissedHouseholdSuggestion, Household, HouseholdAddress, HouseholdMember, MEMBERSHIP,
    candidates,
};
use crate::crm::records::BY_CONTACT;
use crate::error::ApiError;
use crate::http::conditional::{if_match, tagged};
use crate::http::json::Json;
use crate::http::params::{self};
use crate::state::AppState;

// ---- shapes ------------------------------------------------------------------------------

/// An address component in the card's form.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ComponentInput {
    pub kind: String,
    #[serde(default)]
    pub value: String,
}

/// A household address: the card's JSContact form, plain fields, or both (plain fields win).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AddressInput {
    #[serde(default)]
    pub components: Vec<ComponentInput>,
    /// The address as one text (when it does not split into parts).
    pub full: Option<String>,
    /// Used as `country` when no country is given.
    #[serde(rename = "countryCode")]
    pub country_code: Option<String>,
    pub street: Option<String>,
    pub city: Option<String>,
    pub region: Option<String>,
    #[serde(alias = "postcode")]
    pub postal_code: Option<String>,
    pub country: Option<String>,
}

impl AddressInput {
    fn into_address(self) -> HouseholdAddress {
        let part = |kind: &str| {
            self.components.iter().find(|c| c.kind == kind).map(|c| c.value.trim().to_string()).unwrap_or_default()
        };
        let pick = |plain: &Option<String>, kind: &str| match plain {
            Some(value) => value.trim().to_string(),
            None => part(kind),
        };
        let mut country = pick(&self.country, "country");
        if country.is_empty() {
            country = self.country_code.as_deref().unwrap_or("").trim().to_string();
        }
        HouseholdAddress {
            street: pick(&self.street, "name"),
            city: pick(&self.city, "locality"),
            region: pick(&self.region, "region"),
            postal_code: pick(&self.postal_code, "postcode"),
            country,
            full: self.full.as_deref().unwrap_or("").trim().to_string(),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct HouseholdInput {
    /// 1 to 200 characters.
    #[serde(default)]
    pub name: String,
    /// `family_unit`, `roommates` or `other` (the default).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub address: Option<AddressInput>,
    pub notes: Option<String>,
}

impl HouseholdInput {
    fn into_household(self) -> Household {
        Household {
            name: self.name.trim().to_string(),
            kind: self.kind.map(|k| k.trim().to_string()).filter(|k| !k.is_empty()).unwrap_or_else(|| "other".into()),
            address: self.address.map(AddressInput::into_address).unwrap_or_default(),
            notes: self.notes.unwrap_or_default(),
        }
    }
}

/// The address as answered, or `null` when there is none.
pub fn address_view(a: &HouseholdAddress) -> Value {
    if a.is_empty() {
        return Value::Null;
    }
    let card = a.to_card();
    let components: Vec<Value> = card.components.iter().map(|c| json!({ "kind": c.kind, "value": c.value })).collect();
    let mut out = json!({
        "components": components,
        "street": a.street,
        "city": a.city,
        "region": a.region,
        "postal_code": a.postal_code,
        "country": a.country,
    });
    if let Some(full) = card.full {
        out["full"] = json!(full);
    }
    out
}

pub fn household_view(row: &Row<Household>) -> Value {
    let h = &row.body;
    json!({
        "id": row.id,
        "name": h.name,
        "type": h.kind,
        "address": address_view(&h.address),
        "address_line": h.address.line(),
        "notes": h.notes,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

pub fn member_view(v: &UserView, row: &Row<HouseholdMember>) -> Value {
    let m = &row.body;
    let contact = v.get::<Contact>(m.contact_id).ok();
    json!({
        "id": row.id,
        "household_id": m.household_id,
        "contact_id": m.contact_id,
        "member_vcard_uid": contact.as_ref().map(|c| c.body.uid.clone()).unwrap_or_default(),
        "contact_name": contact.as_ref().map(|c| c.body.name()).unwrap_or_default(),
        "role": m.role,
        "since": m.since,
        "until": m.until,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

/// The contact a member input names (`member_vcard_uid` or `contact_id`), which must be the caller's.
fn resolve_contact(v: &UserView, uid: Option<&str>, contact_id: Option<u64>) -> Result<u64, ApiError> {
    let id = match (uid.map(str::trim).filter(|u| !u.is_empty()), contact_id) {
        (_, Some(id)) => id,
        (Some(uid), None) => *v.find::<Contact>(INDEX_UID, &uid.to_lowercase())?.first().ok_or(ApiError::NotFound)?,
        (None, None) => {
            return Err(ApiError::validation("member_vcard_uid", "is required (the contact's UID), or contact_id"));
        }
    };
    v.get::<Contact>(id).map_err(|_| ApiError::NotFound)?;
    Ok(id)
}

/// The membership a path names: its id, or the member contact's vCard UID.
fn resolve_member(v: &UserView, household: u64, member: &str) -> Result<u64, ApiError> {
    v.get::<Household>(household)?;
    let member = member.trim();
    if let Ok(id) = member.parse::<u64>() {
        let row = v.get::<HouseholdMember>(id)?;
        return if row.body.household_id == household { Ok(id) } else { Err(ApiError::NotFound) };
    }
    let contact = *v.find::<Contact>(INDEX_UID, &member.to_lowercase())?.first().ok_or(ApiError::NotFound)?;
    v.find::<HouseholdMember>(MEMBERSHIP, &format!("{household:020}{contact:020}"))?
        .first()
        .copied()
        .ok_or(ApiError::NotFound)
}

// ---- households --------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct ListQuery {
    /// `true` adds `members`: the membership rows of the households on this page.
    pub include_members: Option<String>,
    /// Only households this contact is or was a member of (by integer id) ...
    pub contact_id: Option<u64>,
    /// ... or by vCard UID.
    pub member_vcard_uid: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<String>,
    /// `desc` (default, most recently updated first) or `asc`.
    pub order: Option<String>,
}

fn list_households(v: &UserView, q: &ListQuery) -> Result<Value, ApiError> {
    let include = params::flag(q.include_members.as_deref(), "include_members")?;
    let limit = params::limit(q.limit.as_deref());
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let descending = q.order.as_deref() != Some("asc");
    let only: Option<HashSet<u64>> =
        match (q.member_vcard_uid.as_deref().filter(|u| !u.trim().is_empty()), q.contact_id) {
            (None, None) => None,
            (uid, id) => {
                let contact = resolve_contact(v, uid, id)?;
                let mut households = HashSet::new();
                for m in v.find::<HouseholdMember>(BY_CONTACT, &format!("{contact:020}"))? {
                    if let Ok(row) = v.get::<HouseholdMember>(m) {
                        households.insert(row.body.household_id);
                    }
                }
                Some(households)
            }
        };
    let walk = Walk {
        index: UPDATED_INDEX,
        from: "",
        to: None,
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending,
    };
    let page = v.walk::<Household>(walk, limit, |r| only.as_ref().is_none_or(|set| set.contains(&r.id)))?;
    let total = match &only {
        Some(set) => set.iter().filter(|id| v.get::<Household>(**id).is_ok()).count() as u64,
        None => v.count::<Household>()?,
    };
    let next = page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default();
    let mut body = json!({
        "households": page.rows.iter().map(household_view).collect::<Vec<_>>(),
        "total": total,
        "next_cursor": next,
        "limit": limit,
    });
    if include {
        let mut members = Vec::new();
        for h in &page.rows {
            members.extend(households::members_of(v, h.id)?.iter().map(|m| member_view(v, m)));
        }
        body["members"] = json!(members);
    }
    Ok(body)
}

#[utoipa::path(get, path = "/api/v1/households", tag = "households", params(ListQuery), responses(
    (status = 200, description = "`{households, total, next_cursor, limit}`, plus `members` with `include_members=true`"),
    (status = 400, description = "Bad cursor or flag, named"), (status = 404, description = "No such contact")))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Query(q): Query<ListQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(&user);
    let body = state.blocking(move |_| list_households(&scope.view()?, &q)).await??;
    Ok(axum::Json(body))
}

#[utoipa::path(post, path = "/api/v1/households", tag = "households", request_body = HouseholdInput, responses(
    (status = 201, description = "`{message, household}`"), (status = 400, description = "Invalid, field named")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<HouseholdInput>,
) -> Result<Response, ApiError> {
    let household = input.into_household();
    let row = state.scope(&user).write_async(move |tx| tx.create(household.clone())).await?;
    Ok(tagged(
        &row,
        None,
        StatusCode::CREATED,
        &json!({ "message": "Household created", "household": household_view(&row) }),
    ))
}

/// The household and its members. The `ETag` is the household row's (for `If-Match` on update
/// and delete); it does not cover the members, so there is no 304 here.
#[utoipa::path(get, path = "/api/v1/households/{id}", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{household, members}`"), (status = 404, description = "No such household")))]
pub async fn get(State(state): State<AppState>, user: AuthUser, Path(id): Path<u64>) -> Result<Response, ApiError> {
    let v = state.scope(&user).view()?;
    let row = v.get::<Household>(id)?;
    let members: Vec<Value> = households::members_of(&v, id)?.iter().map(|m| member_view(&v, m)).collect();
    Ok(tagged(&row, None, StatusCode::OK, &json!({ "household": household_view(&row), "members": members })))
}

/// Replaces the household (name, type, address, notes; an absent address or notes clears it).
#[utoipa::path(put, path = "/api/v1/households/{id}", tag = "households", params(("id" = u64, Path)), request_body = HouseholdInput, responses(
    (status = 200, description = "The household"), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such household"), (status = 412, description = "If-Match is stale")))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(input): Json<HouseholdInput>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let household = input.into_household();
    let row = state.scope(&user).write_async(move |tx| tx.put(id, pre, household.clone())).await?;
    Ok(tagged(&row, None, StatusCode::OK, &household_view(&row)))
}

/// Deletes the household and, in the same transaction, its membership rows.
#[utoipa::path(delete, path = "/api/v1/households/{id}", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{message}`"), (status = 404, description = "No such household"),
    (status = 412, description = "If-Match is stale")))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let pre = if_match(&headers)?;
    state
        .scope(&user)
        .write_async(move |tx| {
            tx.delete::<Household>(id, pre)?;
            for member in tx.find::<HouseholdMember>(BY_HOUSEHOLD, &format!("{id:020}"))? {
                tx.delete::<HouseholdMember>(member, Precondition::Any)?;
            }
            Ok(())
        })
        .await?;
    Ok(axum::Json(json!({ "message": "Household deleted" })))
}

// ---- members -----------------------------------------------------------------------------

#[derive(Debug, Deserialize, ToSchema)]
pub struct MemberInput {
    /// The contact's vCard UID ...
    pub member_vcard_uid: Option<String>,
    /// ... or its integer id.
    pub contact_id: Option<u64>,
    /// Open vocabulary (`adult`, `child`, `pet`, `roommate`, ...).
    pub role: Option<String>,
    /// Free text, kept verbatim (e.g. `2019`, `2019-05`, `--06-01`).
    pub since: Option<String>,
    pub until: Option<String>,
}

/// Absent members are left as they are; `""` clears one.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct MemberEdit {
    pub role: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/households/{id}/members", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = "`{members, total}`, oldest membership first"), (status = 404, description = "No such household")))]
pub async fn list_members(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    let v = state.scope(&user).view()?;
    v.get::<Household>(id)?;
    let members: Vec<Value> = households::members_of(&v, id)?.iter().map(|m| member_view(&v, m)).collect();
    Ok(axum::Json(json!({ "total": members.len(), "members": members })))
}

#[utoipa::path(post, path = "/api/v1/households/{id}/members", tag = "households", params(("id" = u64, Path)), request_body = MemberInput, responses(
    (status = 201, description = "`{message, member}`"), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such household or contact"),
    (status = 409, description = "`ALREADY_EXISTS`: the contact is already a member")))]
pub async fn add_member(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
    Json(input): Json<MemberInput>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&user);
    let v = scope.view()?;
    v.get::<Household>(id)?;
    let contact_id = resolve_contact(&v, input.member_vcard_uid.as_deref(), input.contact_id)?;
    let member = HouseholdMember {
        household_id: id,
        contact_id,
        role: input.role.unwrap_or_default().trim().to_string(),
        since: input.since.unwrap_or_default(),
        until: input.until.unwrap_or_default(),
    };
    let row = scope
        .write_async(move |tx| {
            tx.get::<Household>(member.household_id)?;
            tx.get::<Contact>(member.contact_id)?;
            tx.create(member.clone())
        })
        .await?;
    let body = json!({ "message": "Member added", "member": member_view(&scope.view()?, &row) });
    Ok(tagged(&row, None, StatusCode::CREATED, &body))
}

/// Changes a member's `role`, `since` or `until` (conditional on the membership's `If-Match`).
#[utoipa::path(patch, path = "/api/v1/households/{id}/members/{member}", tag = "households",
    params(("id" = u64, Path), ("member" = String, Path, description = "Membership id or the contact's vCard UID")),
    request_body = MemberEdit, responses(
    (status = 200, description = "`{message, member}`"), (status = 400, description = "Invalid, field named"),
    (status = 404, description = "No such household or member"), (status = 412, description = "If-Match is stale")))]
pub async fn update_member(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path((id, member)): Path<(u64, String)>,
    Json(edit): Json<MemberEdit>,
) -> Result<Response, ApiError> {
    let pre = if_match(&headers)?;
    let scope = state.scope(&user);
    let member = resolve_member(&scope.view()?, id, &member)?;
    let row = scope
        .write_async(move |tx| {
            tx.update::<HouseholdMember>(member, pre, |m| {
                if let Some(role) = &edit.role {
                    m.role = role.trim().to_string();
                }
                if let Some(since) = &edit.since {
                    m.since = since.clone();
                }
                if let Some(until) = &edit.until {
                    m.until = until.clone();
                }
                Ok(())
            })
        })
        .await?;
    let body = json!({ "message": "Member updated", "member": member_view(&scope.view()?, &row) });
    Ok(tagged(&row, None, StatusCode::OK, &body))
}

#[utoipa::path(delete, path = "/api/v1/households/{id}/members/{member}", tag = "households",
    params(("id" = u64, Path), ("member" = String, Path, description = "Membership id or the contact's vCard UID")),
    responses((status = 200, description = "`{message}`"), (status = 404, description = "No such household or member"),
    (status = 412, description = "If-Match is stale")))]
pub async fn remove_member(
    State(state): State<AppState>,
    user: AuthUser,
    headers: HeaderMap,
    Path((id, member)): Path<(u64, String)>,
) -> Result<axum::Json<Value>, ApiError> {
    let pre = if_match(&headers)?;
    let scope = state.scope(&user);
    let member = resolve_member(&scope.view()?, id, &member)?;
    scope.write_async(move |tx| tx.delete::<HouseholdMember>(member, pre)).await?;
    Ok(axum::Json(json!({ "message": "Member removed" })))
}

// ---- address suggestions -----------------------------------------------------------------

/// The undismissed address suggestions of the caller's households (or of one).
pub fn suggestions(v: &UserView, only: Option<u64>) -> Result<Vec<Value>, ApiError> {
    let dismissed: HashSet<String> =
        v.list::<DismissedHouseholdSuggestion>()?.into_iter().map(|r| r.body.key()).collect();
    let households = match only {
        Some(id) => vec![v.get::<Household>(id)?],
        None => v.list::<Household>()?,
    };
    let mut out = Vec::new();
    for h in households {
        let mut members = Vec::new();
        let mut uids = std::collections::HashMap::new();
        for m in households::members_of(v, h.id)? {
            if !m.body.is_current() {
                continue;
            }
            let Ok(c) = v.get::<Contact>(m.body.contact_id) else { continue };
            let addresses = c.body.parsed_card().addresses.iter().map(HouseholdAddress::from_card).collect();
            uids.insert(c.id, c.body.uid.clone());
            members.push((c.id, addresses));
        }
        for s in candidates(&h.body.address, &members) {
            if dismissed.contains(&format!("{}:{}", s.address_hash, s.member_hash)) {
                continue;
            }
            out.push(json!({
                "household_id": h.id,
                "household_name": h.body.name,
                "reason": s.reason,
                "address": address_view(&s.address),
                "address_line": s.line,
                "current_address_line": h.body.address.line(),
                "member_ids": s.members,
                "member_vcard_uids": s.members.iter().map(|id| uids.get(id).cloned().unwrap_or_default()).collect::<Vec<_>>(),
                "address_hash": s.address_hash,
                "member_hash": s.member_hash,
            }));
        }
    }
    Ok(out)
}

const SUGGESTIONS: &str = "`{suggestions: [{household_id, household_name, reason, address, address_line, current_address_line, \
member_ids, member_vcard_uids, address_hash, member_hash}], total}`. `reason` is `members_share_address` (two or more \
current members share an address the household does not have) or `member_address` (a member's address, for a \
household without one). Computed on read; dismissed ones are left out";

async fn suggestions_body(state: &AppState, user: &AuthUser, only: Option<u64>) -> Result<axum::Json<Value>, ApiError> {
    let scope = state.scope(user);
    let items = state.blocking(move |_| suggestions(&scope.view()?, only)).await??;
    Ok(axum::Json(json!({ "total": items.len(), "suggestions": items })))
}

#[utoipa::path(get, path = "/api/v1/households/suggestions", tag = "households", responses((status = 200, description = SUGGESTIONS)))]
pub async fn list_suggestions(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    suggestions_body(&state, &user, None).await
}

/// The same as `GET /households/suggestions`, under the path older clients call.
#[utoipa::path(post, path = "/api/v1/households/suggest-addresses", tag = "households", responses((status = 200, description = SUGGESTIONS)))]
pub async fn suggest_addresses(State(state): State<AppState>, user: AuthUser) -> Result<axum::Json<Value>, ApiError> {
    suggestions_body(&state, &user, None).await
}

#[utoipa::path(get, path = "/api/v1/households/{id}/suggestions", tag = "households", params(("id" = u64, Path)), responses(
    (status = 200, description = SUGGESTIONS), (status = 404, description = "No such household")))]
pub async fn household_suggestions(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<u64>,
) -> Result<axum::Json<Value>, ApiError> {
    suggestions_body(&state, &user, Some(id)).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct DismissInput {
    /// As given by the suggestion.
    #[serde(default)]
    pub address_hash: String,
    #[serde(default)]
    pub member_hash: String,
}

/// Dismisses a suggestion for good (for this user: the same address for the same members is not
/// suggested again, in any household). Dismissing twice is not an error.
#[utoipa::path(post, path = "/api/v1/households/suggestions/dismiss", tag = "households", request_body = DismissInput, responses(
    (status = 200, description = "`{message}`"), (status = 400, description = "A hash is not a 64-character hex hash, named")))]
pub async fn dismiss(
    State(state): State<AppState>,
    user: AuthUser,
    Json(input): Json<DismissInput>,
) -> Result<axum::Json<Value>, ApiError> {
    let dismissal = DismissedHouseholdSuggestion {
        address_hash: input.address_hash.trim().to_lowercase(),
        member_hash: input.member_hash.trim().to_lowercase(),
    };
    state
        .scope(&user)
        .write_async(move |tx| {
            if tx.find::<DismissedHouseholdSuggestion>(DISMISSED, &dismissal.key())?.is_empty() {
                tx.create(dismissal.clone())?;
            }
            Ok(())
        })
        .await?;
    Ok(axum::Json(json!({ "message": "Suggestion dismissed" })))
}
