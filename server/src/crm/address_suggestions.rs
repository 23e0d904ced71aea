//! Address suggestions: an address a contact probably shares with someone close, which the
//! contact's card does not have yet. A spouse's, parent's, child's or roommate's address is
//! offered to the other (confirmed edges that are not secret), and a household's address to each
//! of its members; archived contacts neither give nor get one. The scan writes nothing; applying
//! one derives it again from the data as it is then, and adds it to the card.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mycorrhizal_codecs::card::Address;
use mycorrhizal_engine::{Precondition, Row, UserScope, UserView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::contact::{Contact, named};
use super::household::{Household, HouseholdMember};
use super::relationship::{Relationship, inverse};
use super::{Error, Result};

/// The edge types that suggest living at one address.
pub const COHABITING: &[&str] = &["parent_of", "child_of", "spouse_of", "roommate_of"];

/// One suggestion: the address, who would get it and where it comes from.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactAddressSuggestion {
    /// Who would get the address.
    pub contact_vcard_uid: String,
    pub contact_id: u64,
    pub contact_name: String,
    /// `relationship` or `household`.
    pub source_kind: &'static str,
    /// The other contact's vCard UID, or the household's id.
    pub source_id: String,
    pub source_name: String,
    /// What the source contact is to this one (`spouse_of`, `parent_of`, ...); relationships only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation_type: Option<String>,
    /// The address as a card holds it (`components`, `full`, `contexts`).
    #[schema(value_type = Object)]
    pub address: Address,
    /// The address normalised (on one line, lower case, letters, digits and single spaces):
    /// what tells two writings of one address from two addresses.
    pub address_key: String,
}

/// `{suggestions, total}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AddressSuggestionList {
    pub suggestions: Vec<ContactAddressSuggestion>,
    pub total: usize,
}

/// Which suggestion to apply, as the scan named it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct AddressApplyInput {
    #[serde(default)]
    #[schema(required = true, min_length = 1)]
    pub contact_vcard_uid: String,
    /// `relationship` or `household`.
    #[serde(default)]
    #[schema(required = true, pattern = "^(relationship|household)$")]
    pub source_kind: String,
    #[serde(default)]
    #[schema(required = true, min_length = 1)]
    pub source_id: String,
    #[serde(default)]
    #[schema(required = true, min_length = 1)]
    pub address_key: String,
}

fn normalized(text: &str) -> String {
    let kept: String = text.chars().filter(|c| c.is_alphanumeric() || c.is_whitespace()).collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// The key of an address: the address on one line (`street, city, region postcode, country`,
/// or its free text when it has no parts), lower case, letters, digits and single spaces. A
/// card written as parts and one written as text (a flat `address`) then compare equal.
pub fn address_key(a: &Address) -> String {
    normalized(&mycorrhizal_codecs::projection::one_line(a))
}

/// Every suggestion before de-duplication: one per (recipient, address, source). Only the
/// contacts at an end of a cohabiting edge or in a household with an address are read.
fn candidates(v: &UserView) -> Result<Vec<ContactAddressSuggestion>> {
    let edges: Vec<Row<Relationship>> = v
        .list::<Relationship>()?
        .into_iter()
        .filter(|e| {
            e.body.is_confirmed() && e.body.sensitivity != "secret" && COHABITING.contains(&e.body.kind.as_str())
        })
        .collect();
    let households: Vec<Row<Household>> =
        v.list::<Household>()?.into_iter().filter(|h| !h.body.address.is_empty()).collect();
    let mut members: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    if !households.is_empty() {
        for m in v.list::<HouseholdMember>()? {
            members.entry(m.body.household_id).or_default().push(m.body.contact_id);
        }
    }
    let involved: BTreeSet<u64> = edges
        .iter()
        .flat_map(|e| [e.body.source, e.body.target])
        .chain(households.iter().flat_map(|h| members.get(&h.id).into_iter().flatten().copied()))
        .collect();
    let contacts: HashMap<u64, Row<Contact>> = involved
        .into_iter()
        .filter_map(|id| v.get::<Contact>(id).ok())
        .filter(|c| !c.body.archived)
        .map(|c| (c.id, c))
        .collect();
    let cards: HashMap<u64, Vec<Address>> =
        contacts.iter().map(|(id, c)| (*id, c.body.parsed_card().addresses)).collect();
    let has: HashMap<u64, BTreeSet<String>> =
        cards.iter().map(|(id, list)| (*id, list.iter().map(address_key).collect())).collect();
    let mut out = Vec::new();
    let mut offer =
        |to: u64, address: &Address, kind: &'static str, source_id: String, source_name: String, relation| {
            let key = address_key(address);
            let (Some(contact), Some(held)) = (contacts.get(&to), has.get(&to)) else { return };
            if key.is_empty() || held.contains(&key) {
                return;
            }
            out.push(ContactAddressSuggestion {
                contact_vcard_uid: contact.body.uid.clone(),
                contact_id: to,
                contact_name: contact.body.name(),
                source_kind: kind,
                source_id,
                source_name,
                relation_type: relation,
                address: Address { pref: None, ..address.clone() },
                address_key: key,
            });
        };
    for edge in &edges {
        let e = &edge.body;
        // `source` is `kind` of `target`: seen from the source, the target is the inverse.
        for (from, to, relation) in
            [(e.source, e.target, Some(e.kind.clone())), (e.target, e.source, inverse(&e.kind).map(String::from))]
        {
            let Some(giver) = contacts.get(&from) else { continue };
            for address in cards.get(&from).into_iter().flatten() {
                offer(to, address, "relationship", giver.body.uid.clone(), giver.body.name(), relation.clone());
            }
        }
    }
    for household in &households {
        let address = household.body.address.to_card();
        for member in members.get(&household.id).into_iter().flatten() {
            offer(*member, &address, "household", household.id.to_string(), household.body.name.clone(), None);
        }
    }
    Ok(out)
}

/// The scan: each address a contact probably shares and lacks, once per contact and address
/// (a relationship's source before a household's), by contact name.
pub fn suggestions(v: &UserView) -> Result<AddressSuggestionList> {
    let mut all = candidates(v)?;
    // A person's address before a household's: it says who the address comes from.
    let key = |s: &ContactAddressSuggestion| {
        (
            s.contact_name.to_lowercase(),
            s.contact_id,
            s.address_key.clone(),
            s.source_kind == "household",
            s.source_id.clone(),
        )
    };
    all.sort_by_key(key);
    all.dedup_by(|b, a| a.contact_id == b.contact_id && a.address_key == b.address_key);
    Ok(AddressSuggestionList { total: all.len(), suggestions: all })
}

/// Adds the address a suggestion names to its contact's card, derived again from the data as
/// it is now; returns the contact's UID. 409 when it no longer holds.
pub async fn apply(scope: &UserScope, input: AddressApplyInput) -> Result<String> {
    let reader = scope.clone();
    let derived = tokio::task::spawn_blocking(move || -> Result<(u64, Address, u64)> {
        let v = reader.view()?;
        for (field, value) in [
            ("contact_vcard_uid", &input.contact_vcard_uid),
            ("source_id", &input.source_id),
            ("address_key", &input.address_key),
        ] {
            if value.trim().is_empty() {
                return Err(Error::invalid(field, "is required (as the scan named it)"));
            }
        }
        if !matches!(input.source_kind.as_str(), "relationship" | "household") {
            return Err(Error::invalid("source_kind", "must be relationship or household"));
        }
        let contact = named(&v, input.contact_vcard_uid.trim()).ok_or(Error::NotFound)?;
        // The source as the scan names it: a contact by its vCard UID, a household by its id.
        let source = match input.source_kind.as_str() {
            "relationship" => {
                let id = named(&v, input.source_id.trim()).ok_or(Error::NotFound)?;
                v.get::<Contact>(id)?.body.uid
            }
            _ => {
                let id = input.source_id.trim().parse::<u64>().map_err(|_| Error::NotFound)?;
                v.get::<Household>(id)?;
                id.to_string()
            }
        };
        let row = v.get::<Contact>(contact)?;
        if row.body.parsed_card().addresses.iter().any(|a| address_key(a) == input.address_key) {
            return Err(Error::Conflict("the contact already has this address".into()));
        }
        let found = candidates(&v)?.into_iter().find(|s| {
            s.contact_id == contact
                && s.source_kind == input.source_kind
                && s.source_id == source
                && s.address_key == input.address_key
        });
        let found = found.ok_or_else(|| {
            Error::Conflict("the suggestion no longer holds (the link or the address changed): scan again".into())
        })?;
        Ok((contact, found.address, row.meta.revision))
    });
    let (contact_id, address, revision) = derived.await.map_err(Error::internal)??;
    let row = scope
        .write_async(move |tx| {
            let address = address.clone();
            tx.update::<Contact>(contact_id, Precondition::Revision(revision), move |c| {
                let mut card = c.parsed_card();
                card.addresses.push(address);
                c.card = serde_json::to_string(&card)
                    .map_err(|e| mycorrhizal_engine::Invalid::new("card", e.to_string()))?;
                Ok(())
            })
        })
        .await
        .map_err(|e| match e {
            mycorrhizal_engine::Error::Conflict { .. } => {
                Error::Conflict("the contact changed while the address was added: scan again".into())
            }
            other => other.into(),
        })?;
    Ok(row.body.uid)
}
