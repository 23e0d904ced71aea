//! Households, their members, and the address suggestions computed on every read: the
//! operations and views every front door shares (the records and the suggestion rules are in
//! `crm::household`).
//!
//! A household's address is answered in the card's JSContact form (`components`) and, in the same
//! object, as plain fields; either form is accepted on input (plain fields win). Members are
//! contacts of the same user, one live membership per contact and household, with `role`,
//! `since` and `until` kept as sent. A member is named by its membership id or by the contact's
//! vCard UID. Dismissing a suggestion stores its `(address_hash, member_hash)` for good.

use std::collections::HashSet;

use mycorrhizal_engine::{Precondition, Row, UPDATED_INDEX, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::contact::{Contact, INDEX_UID};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::records::BY_CONTACT;
use crate::crm::{Error, Result};
use crate::crm::{
    household::BY_HOUSEHOLD, household::DISMISSED, household::DismissedHouseholdSuggestion, household::Household,
    household::HouseholdAddress, household::HouseholdMember, household::MEMBERSHIP, household::candidates,
    household::members_of,
};

/// An address component in the card's form.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ComponentInput {
    pub kind: String,
    #[serde(default)]
    pub value: String,
}

/// A household address: the card's JSContact form, plain fields, or both (plain fields win).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct AddressInput {
    #[serde(default)]
    pub components: Vec<ComponentInput>,
    /// The address as one text (when it does not split into parts), at most 1000 characters.
    #[schema(max_length = 1000)]
    pub full: Option<String>,
    /// Used as `country` when no country is given.
    #[serde(rename = "countryCode")]
    pub country_code: Option<String>,
    /// At most 200 characters, as are `city`, `region`, `postal_code` and `country`.
    #[schema(max_length = 200)]
    pub street: Option<String>,
    #[schema(max_length = 200)]
    pub city: Option<String>,
    #[schema(max_length = 200)]
    pub region: Option<String>,
    #[serde(alias = "postcode")]
    #[schema(max_length = 200)]
    pub postal_code: Option<String>,
    #[schema(max_length = 200)]
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

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct HouseholdInput {
    /// 1 to 200 characters.
    #[serde(default)]
    #[schema(
        required = true,
        max_length = 200,
        pattern = "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub name: String,
    /// `family_unit`, `roommates` or `other` (the default).
    #[serde(rename = "type")]
    #[schema(
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*(family_unit|roommates|other)?[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub kind: Option<String>,
    pub address: Option<AddressInput>,
    /// At most 5000 characters.
    #[schema(max_length = 5000)]
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

/// An address component in the card's form, as answered.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ComponentView {
    /// `name`, `locality`, `region`, `postcode` or `country`.
    pub kind: String,
    pub value: String,
}

/// A household address as answered: the card's JSContact form and the plain fields together.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AddressView {
    pub components: Vec<ComponentView>,
    pub street: String,
    pub city: String,
    pub region: String,
    pub postal_code: String,
    pub country: String,
    /// The address as one text, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full: Option<String>,
}

impl AddressView {
    /// The address as answered, or `None` (`null`) when there is none.
    pub fn of(a: &HouseholdAddress) -> Option<AddressView> {
        if a.is_empty() {
            return None;
        }
        let card = a.to_card();
        Some(AddressView {
            components: card
                .components
                .iter()
                .map(|c| ComponentView { kind: c.kind.clone(), value: c.value.clone() })
                .collect(),
            street: a.street.clone(),
            city: a.city.clone(),
            region: a.region.clone(),
            postal_code: a.postal_code.clone(),
            country: a.country.clone(),
            full: card.full,
        })
    }
}

/// A household as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HouseholdView {
    pub id: u64,
    pub name: String,
    /// `family_unit`, `roommates` or `other`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `null` when the household has none.
    pub address: Option<AddressView>,
    /// The address on one line, `""` when there is none.
    pub address_line: String,
    pub notes: String,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl HouseholdView {
    pub fn of(row: &Row<Household>) -> HouseholdView {
        let h = &row.body;
        HouseholdView {
            id: row.id,
            name: h.name.clone(),
            kind: h.kind.clone(),
            address: AddressView::of(&h.address),
            address_line: h.address.line(),
            notes: h.notes.clone(),
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// A membership as clients read it, with the member contact named.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = HouseholdMemberView)]
pub struct MemberView {
    pub id: u64,
    pub household_id: u64,
    pub contact_id: u64,
    /// `""` when the contact is gone.
    pub member_vcard_uid: String,
    pub contact_name: String,
    pub role: String,
    /// Free text, as sent.
    pub since: String,
    pub until: String,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl MemberView {
    pub fn of(v: &UserView, row: &Row<HouseholdMember>) -> MemberView {
        let m = &row.body;
        let contact = v.get::<Contact>(m.contact_id).ok();
        MemberView {
            id: row.id,
            household_id: m.household_id,
            contact_id: m.contact_id,
            member_vcard_uid: contact.as_ref().map(|c| c.body.uid.clone()).unwrap_or_default(),
            contact_name: contact.as_ref().map(|c| c.body.name()).unwrap_or_default(),
            role: m.role.clone(),
            since: m.since.clone(),
            until: m.until.clone(),
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// `{message, household}`: a household just created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HouseholdCreated {
    pub message: String,
    pub household: HouseholdView,
}

/// `{message, member}`: a membership just added or changed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberChanged {
    pub message: String,
    pub member: MemberView,
}

/// A household with its members, oldest membership first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HouseholdWithMembers {
    pub household: HouseholdView,
    pub members: Vec<MemberView>,
}

/// A household's members, oldest membership first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberList {
    pub members: Vec<MemberView>,
    pub total: usize,
}

/// One page of households.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HouseholdPage {
    pub households: Vec<HouseholdView>,
    /// All the households the filter matches, across pages.
    pub total: u64,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
    /// With `include_members=true` only: the memberships of the households on this page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<MemberView>>,
}

/// An address suggested for a household, computed on read.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = HouseholdAddressSuggestion)]
pub struct AddressSuggestion {
    pub household_id: u64,
    pub household_name: String,
    /// `members_share_address` or `member_address`.
    pub reason: String,
    pub address: Option<AddressView>,
    pub address_line: String,
    /// The household's own address on one line, `""` when it has none.
    pub current_address_line: String,
    pub member_ids: Vec<u64>,
    pub member_vcard_uids: Vec<String>,
    /// 64 hex digits; with `member_hash`, what a dismissal names.
    pub address_hash: String,
    pub member_hash: String,
}

/// The undismissed address suggestions.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = HouseholdSuggestionList)]
pub struct SuggestionList {
    pub suggestions: Vec<AddressSuggestion>,
    pub total: usize,
}

/// The contact a member input names (`member_vcard_uid` or `contact_id`), which must be the caller's.
pub fn resolve_contact(v: &UserView, uid: Option<&str>, contact_id: Option<u64>) -> Result<u64> {
    let id = match (uid.map(str::trim).filter(|u| !u.is_empty()), contact_id) {
        (_, Some(id)) => id,
        (Some(uid), None) => *v.find::<Contact>(INDEX_UID, &uid.to_lowercase())?.first().ok_or(Error::NotFound)?,
        (None, None) => {
            return Err(Error::invalid("member_vcard_uid", "is required (the contact's UID), or contact_id"));
        }
    };
    v.get::<Contact>(id).map_err(|_| Error::NotFound)?;
    Ok(id)
}

/// The membership a path names: its id, or the member contact's vCard UID.
pub fn resolve_member(v: &UserView, household: u64, member: &str) -> Result<u64> {
    v.get::<Household>(household)?;
    let member = member.trim();
    if let Ok(id) = member.parse::<u64>() {
        let row = v.get::<HouseholdMember>(id)?;
        return if row.body.household_id == household { Ok(id) } else { Err(Error::NotFound) };
    }
    let contact = *v.find::<Contact>(INDEX_UID, &member.to_lowercase())?.first().ok_or(Error::NotFound)?;
    v.find::<HouseholdMember>(MEMBERSHIP, &format!("{household:020}{contact:020}"))?
        .first()
        .copied()
        .ok_or(Error::NotFound)
}

/// What a list of households asks for.
#[derive(Debug, Clone, Default)]
pub struct HouseholdFilter {
    pub include_members: bool,
    pub contact_id: Option<u64>,
    pub member_vcard_uid: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
    pub ascending: bool,
}

/// A page of households (optionally only those a contact is or was a member of), with their
/// members when asked.
pub fn list(v: &UserView, q: &HouseholdFilter) -> Result<HouseholdPage> {
    let (include, limit) = (q.include_members, q.limit);
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let descending = !q.ascending;
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
    let next_cursor = page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default();
    let members = if include {
        let mut members = Vec::new();
        for h in &page.rows {
            members.extend(members_of(v, h.id)?.iter().map(|m| MemberView::of(v, m)));
        }
        Some(members)
    } else {
        None
    };
    Ok(HouseholdPage {
        households: page.rows.iter().map(HouseholdView::of).collect(),
        total,
        next_cursor,
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit,
        members,
    })
}

/// Household `id` with its members.
pub fn get(v: &UserView, id: u64) -> Result<(Row<Household>, HouseholdWithMembers)> {
    let row = v.get::<Household>(id)?;
    let members = members_of(v, id)?.iter().map(|m| MemberView::of(v, m)).collect();
    let body = HouseholdWithMembers { household: HouseholdView::of(&row), members };
    Ok((row, body))
}

/// Household `id`'s members, oldest membership first.
pub fn members(v: &UserView, id: u64) -> Result<MemberList> {
    v.get::<Household>(id)?;
    let members: Vec<MemberView> = members_of(v, id)?.iter().map(|m| MemberView::of(v, m)).collect();
    Ok(MemberList { total: members.len(), members })
}

/// Creates a household (with `id`: replaces household `id` under `pre`).
pub async fn save(scope: &UserScope, id: Option<(u64, Precondition)>, input: HouseholdInput) -> Result<Row<Household>> {
    let household = input.into_household();
    Ok(scope
        .write_async(move |tx| match id {
            None => tx.create(household.clone()),
            Some((id, pre)) => tx.put(id, pre, household.clone()),
        })
        .await?)
}

/// Deletes household `id` and, in the same transaction, its membership rows.
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    Ok(scope
        .write_async(move |tx| {
            tx.delete::<Household>(id, pre)?;
            for member in tx.find::<HouseholdMember>(BY_HOUSEHOLD, &format!("{id:020}"))? {
                tx.delete::<HouseholdMember>(member, Precondition::Any)?;
            }
            Ok(())
        })
        .await?)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct MemberInput {
    /// The contact's vCard UID ...
    pub member_vcard_uid: Option<String>,
    /// ... or its integer id.
    pub contact_id: Option<u64>,
    /// Open vocabulary (`adult`, `child`, `pet`, `roommate`, ...), at most 100 characters.
    #[schema(max_length = 100)]
    pub role: Option<String>,
    /// Free text, kept verbatim (e.g. `2019`, `2019-05`, `--06-01`), at most 100 characters.
    #[schema(max_length = 100)]
    pub since: Option<String>,
    #[schema(max_length = 100)]
    pub until: Option<String>,
}

/// Absent members are left as they are; `""` clears one.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct MemberEdit {
    /// At most 100 characters, as are `since` and `until`.
    #[schema(max_length = 100)]
    pub role: Option<String>,
    #[schema(max_length = 100)]
    pub since: Option<String>,
    #[schema(max_length = 100)]
    pub until: Option<String>,
}

/// Adds the contact `input` names to household `id` (a second live membership is a duplicate).
pub async fn add_member(scope: &UserScope, id: u64, input: MemberInput) -> Result<Row<HouseholdMember>> {
    let reader = scope.clone();
    let uid = input.member_vcard_uid.clone();
    let contact_id = tokio::task::spawn_blocking(move || {
        let v = reader.view()?;
        v.get::<Household>(id)?;
        resolve_contact(&v, uid.as_deref(), input.contact_id)
    })
    .await
    .map_err(Error::internal)??;
    let member = HouseholdMember {
        household_id: id,
        contact_id,
        role: input.role.unwrap_or_default().trim().to_string(),
        since: input.since.unwrap_or_default(),
        until: input.until.unwrap_or_default(),
    };
    Ok(scope
        .write_async(move |tx| {
            tx.get::<Household>(member.household_id)?;
            tx.get::<Contact>(member.contact_id)?;
            tx.create(member.clone())
        })
        .await?)
}

/// The membership `member` (id or contact UID) names in household `id`.
async fn member_id(scope: &UserScope, id: u64, member: String) -> Result<u64> {
    let reader = scope.clone();
    tokio::task::spawn_blocking(move || resolve_member(&reader.view()?, id, &member)).await.map_err(Error::internal)?
}

/// Changes a member's `role`, `since` or `until` (absent: kept; `""`: cleared).
pub async fn edit_member(
    scope: &UserScope,
    id: u64,
    member: String,
    pre: Precondition,
    edit: MemberEdit,
) -> Result<Row<HouseholdMember>> {
    let member = member_id(scope, id, member).await?;
    Ok(scope
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
        .await?)
}

/// Removes a membership.
pub async fn remove_member(scope: &UserScope, id: u64, member: String, pre: Precondition) -> Result<()> {
    let member = member_id(scope, id, member).await?;
    Ok(scope.write_async(move |tx| tx.delete::<HouseholdMember>(member, pre)).await?)
}

/// The undismissed address suggestions of the caller's households (or of one).
pub fn suggestions(v: &UserView, only: Option<u64>) -> Result<SuggestionList> {
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
        for m in members_of(v, h.id)? {
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
            out.push(AddressSuggestion {
                household_id: h.id,
                household_name: h.body.name.clone(),
                reason: s.reason.to_string(),
                address: AddressView::of(&s.address),
                address_line: s.line,
                current_address_line: h.body.address.line(),
                member_vcard_uids: s.members.iter().map(|id| uids.get(id).cloned().unwrap_or_default()).collect(),
                member_ids: s.members,
                address_hash: s.address_hash,
                member_hash: s.member_hash,
            });
        }
    }
    Ok(SuggestionList { total: out.len(), suggestions: out })
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[schema(as = HouseholdDismissInput)]
pub struct DismissInput {
    /// As given by the suggestion: 64 hex digits.
    #[serde(default)]
    #[schema(
        required = true,
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*[0-9a-fA-F]{64}[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub address_hash: String,
    #[serde(default)]
    #[schema(
        required = true,
        pattern = "^[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*[0-9a-fA-F]{64}[\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*$"
    )]
    pub member_hash: String,
}

/// Dismisses a suggestion for good; dismissing twice is not an error.
pub async fn dismiss(scope: &UserScope, input: DismissInput) -> Result<()> {
    let dismissal = DismissedHouseholdSuggestion {
        address_hash: input.address_hash.trim().to_lowercase(),
        member_hash: input.member_hash.trim().to_lowercase(),
    };
    Ok(scope
        .write_async(move |tx| {
            if tx.find::<DismissedHouseholdSuggestion>(DISMISSED, &dismissal.key())?.is_empty() {
                tx.create(dismissal.clone())?;
            }
            Ok(())
        })
        .await?)
}

/// Makes the address of one of household `id`'s current suggestions (named by its hashes, as a
/// dismissal names it) the household's address. The suggestion is computed again here, so only
/// an address the members' cards actually give can be written; a suggestion that no longer
/// stands (a member moved, the household changed) is `NotFound`.
pub async fn adopt_suggestion(
    scope: &UserScope,
    id: u64,
    address_hash: &str,
    member_hash: &str,
) -> Result<Row<Household>> {
    let reader = scope.clone();
    let (address_hash, member_hash) = (address_hash.trim().to_lowercase(), member_hash.trim().to_lowercase());
    let (revision, address) = tokio::task::spawn_blocking(move || -> Result<_> {
        let v = reader.view()?;
        let revision = v.get::<Household>(id)?.meta.revision;
        let found = suggestions(&v, Some(id))?
            .suggestions
            .into_iter()
            .find(|s| s.address_hash == address_hash && s.member_hash == member_hash)
            .ok_or(Error::NotFound)?;
        let a = found.address.ok_or(Error::NotFound)?;
        let address = HouseholdAddress {
            street: a.street,
            city: a.city,
            region: a.region,
            postal_code: a.postal_code,
            country: a.country,
            full: a.full.unwrap_or_default(),
        };
        Ok((revision, address))
    })
    .await
    .map_err(Error::internal)??;
    Ok(scope
        .write_async(move |tx| {
            tx.update::<Household>(id, Precondition::Revision(revision), |h| {
                h.address = address.clone();
                Ok(())
            })
        })
        .await?)
}
