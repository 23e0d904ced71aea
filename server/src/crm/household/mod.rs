//! Households: a named group of contacts living together (a family unit, roommates, ...) with an
//! address, their membership rows (`since`/`until` kept as given, never validated as dates), and
//! the address suggestions computed on every read from the members' own addresses. Only the
//! dismissal of a suggestion is stored, keyed by `(user, address_hash, member_hash)`.

use mycorrhizal_codecs::card::{Address, Component};
use mycorrhizal_codecs::projection::one_line;
use mycorrhizal_engine::{Invalid, Kind, Record, Row, UserView, kind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::crm::Result;
use crate::crm::{records::BY_CONTACT, records::length as text};

pub mod ops;

/// What a household is; `other` when the client does not say.
pub const HOUSEHOLD_TYPES: &[&str] = &["family_unit", "roommates", "other"];

/// Index of membership rows by household: `{household:020}`.
pub const BY_HOUSEHOLD: &str = "household";
/// One live membership per (household, contact): `{household:020}{contact:020}`. Named after the
/// input field a duplicate comes from, since the engine's 409 names the index.
pub const MEMBERSHIP: &str = "member_vcard_uid";
/// Index of dismissals: `{address_hash}:{member_hash}`.
pub const DISMISSED: &str = "dismissed";

/// A household's address: the fields a person expects, plus one free text for an address that
/// does not split (a card address with only `full`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HouseholdAddress {
    pub street: String,
    pub city: String,
    pub region: String,
    pub postal_code: String,
    pub country: String,
    pub full: String,
}

impl HouseholdAddress {
    pub fn is_empty(&self) -> bool {
        self.line().is_empty()
    }

    /// The JSContact form (`components` with the kinds the contact projection reads).
    pub fn to_card(&self) -> Address {
        let components = [
            ("name", &self.street),
            ("locality", &self.city),
            ("region", &self.region),
            ("postcode", &self.postal_code),
            ("country", &self.country),
        ]
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(kind, v)| Component { kind: kind.into(), value: v.trim().into(), ..Component::default() })
        .collect();
        let full = Some(self.full.trim().to_string()).filter(|f| !f.is_empty());
        Address { components, full, ..Address::default() }
    }

    /// From a contact's card address (other component kinds are not kept).
    pub fn from_card(a: &Address) -> Self {
        let get = |kind: &str| mycorrhizal_codecs::card::component(&a.components, kind).unwrap_or("").to_string();
        HouseholdAddress {
            street: get("name"),
            city: get("locality"),
            region: get("region"),
            postal_code: get("postcode"),
            country: get("country"),
            full: a.full.clone().unwrap_or_default(),
        }
    }

    /// On one line, as a contact's flat `address`: `street, city, region postal, country`, or
    /// the free text.
    pub fn line(&self) -> String {
        one_line(&self.to_card())
    }
}

/// An address line reduced to what identifies it: case, spacing and empty parts ignored.
pub fn normalize(line: &str) -> String {
    line.split(',')
        .map(|part| part.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
        .to_lowercase()
}

/// Hex SHA-256 of the normalized address line.
pub fn address_hash(line: &str) -> String {
    hex::encode(Sha256::digest(normalize(line).as_bytes()))
}

/// Hex SHA-256 of the member contact ids, sorted, joined by commas (`3,7`).
pub fn member_hash(members: &[u64]) -> String {
    let mut ids = members.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let text = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Household {
    pub name: String,
    /// `family_unit`, `roommates` or `other`.
    pub kind: String,
    pub address: HouseholdAddress,
    pub notes: String,
}

impl Record for Household {
    const KIND: Kind = kind!("household", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        text("name", &self.name, 1, 200)?;
        if !HOUSEHOLD_TYPES.contains(&self.kind.as_str()) {
            return Err(Invalid::new("type", format!("must be one of {}", HOUSEHOLD_TYPES.join(", "))));
        }
        let a = &self.address;
        for (field, value) in [
            ("address.street", &a.street),
            ("address.city", &a.city),
            ("address.region", &a.region),
            ("address.postal_code", &a.postal_code),
            ("address.country", &a.country),
        ] {
            text(field, value, 0, 200)?;
        }
        text("address.full", &a.full, 0, 1000)?;
        text("notes", &self.notes, 0, 5000)
    }
}

/// A contact's membership of a household, over a period given as free text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HouseholdMember {
    pub household_id: u64,
    pub contact_id: u64,
    /// Open vocabulary (`adult`, `child`, `pet`, `roommate`, ...).
    pub role: String,
    /// Partial-date-compatible text, kept exactly as sent (not validated as a date).
    pub since: String,
    pub until: String,
}

impl HouseholdMember {
    /// A member who has not left (no `until`): the members address suggestions consider.
    pub fn is_current(&self) -> bool {
        self.until.trim().is_empty()
    }
}

impl Record for HouseholdMember {
    const KIND: Kind = kind!("household_member", soft_delete);
    const UNIQUE: &'static [&'static str] = &[MEMBERSHIP];

    fn validate(&self) -> Result<(), Invalid> {
        text("role", &self.role, 0, 100)?;
        // Bounded in length only: any text a client keeps as a (partial) date is accepted.
        if self.since.chars().count() > 100 {
            return Err(Invalid::new("since", "at most 100 characters"));
        }
        if self.until.chars().count() > 100 {
            return Err(Invalid::new("until", "at most 100 characters"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![
            (BY_HOUSEHOLD, format!("{:020}", self.household_id)),
            (BY_CONTACT, format!("{:020}", self.contact_id)),
            (MEMBERSHIP, format!("{:020}{:020}", self.household_id, self.contact_id)),
        ]
    }
}

/// "Do not suggest this address for these members again."
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DismissedHouseholdSuggestion {
    pub address_hash: String,
    pub member_hash: String,
}

impl DismissedHouseholdSuggestion {
    pub fn key(&self) -> String {
        format!("{}:{}", self.address_hash, self.member_hash)
    }
}

fn sha256_hex(field: &str, value: &str) -> Result<(), Invalid> {
    if value.len() == 64 && value.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
        Ok(())
    } else {
        Err(Invalid::new(field, "must be the 64-character hex hash of a suggestion"))
    }
}

impl Record for DismissedHouseholdSuggestion {
    const KIND: Kind = kind!("household_suggestion_dismissal", hard_delete);
    const UNIQUE: &'static [&'static str] = &[DISMISSED];

    fn validate(&self) -> Result<(), Invalid> {
        sha256_hex("address_hash", &self.address_hash)?;
        sha256_hex("member_hash", &self.member_hash)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(DISMISSED, self.key())]
    }
}

/// One address a household could take, and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// `members_share_address` (two or more current members hold it) or `member_address` (one
    /// member of a household without an address holds it).
    pub reason: &'static str,
    pub address: HouseholdAddress,
    pub line: String,
    /// The holders' contact ids, ascending.
    pub members: Vec<u64>,
    pub address_hash: String,
    pub member_hash: String,
}

/// The address suggestions for one household, given its address and each current member's
/// addresses (contact id, its card addresses). The rules:
/// - an address held by two or more current members that is not the household's is suggested;
/// - when the household has no address, every address a current member holds is suggested.
///
/// Most holders first, then by line. Dismissals are applied by the caller.
pub fn candidates(household: &HouseholdAddress, members: &[(u64, Vec<HouseholdAddress>)]) -> Vec<Candidate> {
    let own = normalize(&household.line());
    // normalized line -> (first form seen, holders)
    let mut seen: Vec<(String, HouseholdAddress, String, Vec<u64>)> = Vec::new();
    for (contact, addresses) in members {
        for address in addresses {
            let line = address.line();
            let key = normalize(&line);
            if key.is_empty() {
                continue;
            }
            match seen.iter_mut().find(|(k, ..)| *k == key) {
                Some((_, _, _, holders)) => {
                    if !holders.contains(contact) {
                        holders.push(*contact);
                    }
                }
                None => seen.push((key, address.clone(), line, vec![*contact])),
            }
        }
    }
    let mut out: Vec<Candidate> = seen
        .into_iter()
        .filter(|(key, _, _, holders)| *key != own && (holders.len() >= 2 || own.is_empty()))
        .map(|(_, address, line, mut holders)| {
            holders.sort_unstable();
            Candidate {
                reason: if holders.len() >= 2 { "members_share_address" } else { "member_address" },
                address_hash: address_hash(&line),
                member_hash: member_hash(&holders),
                address,
                line,
                members: holders,
            }
        })
        .collect();
    out.sort_by(|a, b| b.members.len().cmp(&a.members.len()).then_with(|| a.line.cmp(&b.line)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(street: &str, city: &str) -> HouseholdAddress {
        HouseholdAddress { street: street.into(), city: city.into(), ..HouseholdAddress::default() }
    }

    #[test]
    fn hashes_ignore_case_spacing_and_member_order() {
        assert_eq!(address_hash("1 Main St,  Springfield"), address_hash("1 main st, springfield "));
        assert_ne!(address_hash("1 Main St, Springfield"), address_hash("2 Main St, Springfield"));
        assert_eq!(member_hash(&[7, 3]), member_hash(&[3, 7]));
        assert_eq!(address_hash("x").len(), 64);
    }

    #[test]
    fn a_shared_address_is_suggested_unless_the_household_has_it() {
        let members = vec![(1, vec![at("1 Main St", "Springfield")]), (2, vec![at("1 main st", "SPRINGFIELD")])];
        let found = candidates(&HouseholdAddress::default(), &members);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].reason, found[0].members.clone()), ("members_share_address", vec![1, 2]));
        assert!(candidates(&at("1 Main St", "Springfield"), &members).is_empty());
        assert_eq!(candidates(&at("9 Elm Rd", "Shelbyville"), &members).len(), 1);
    }

    #[test]
    fn a_lone_member_address_is_suggested_only_to_a_household_without_one() {
        let members = vec![(1, vec![at("1 Main St", "Springfield")]), (2, vec![])];
        let found = candidates(&HouseholdAddress::default(), &members);
        assert_eq!((found.len(), found[0].reason), (1, "member_address"));
        assert!(candidates(&at("9 Elm Rd", "Shelbyville"), &members).is_empty());
        assert!(candidates(&HouseholdAddress::default(), &[(1, vec![]), (2, vec![])]).is_empty());
    }

    #[test]
    fn free_text_and_structured_addresses_compare_by_their_line() {
        let full = HouseholdAddress { full: "1 Main St, Springfield".into(), ..HouseholdAddress::default() };
        assert_eq!(normalize(&full.line()), normalize(&at("1 Main St", "Springfield").line()));
    }
}

/// The membership rows of a household, oldest first.
pub fn members_of(v: &UserView, household: u64) -> Result<Vec<Row<HouseholdMember>>> {
    let mut rows = Vec::new();
    for id in v.find::<HouseholdMember>(BY_HOUSEHOLD, &format!("{household:020}"))? {
        if let Ok(row) = v.get::<HouseholdMember>(id) {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The contact ids of a household's members (every membership row, current or past), or 404
/// when the household is not the caller's.
pub fn member_contacts(v: &UserView, household: u64) -> Result<Vec<u64>> {
    v.get::<Household>(household)?;
    let mut ids: Vec<u64> = members_of(v, household)?.into_iter().map(|m| m.body.contact_id).collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}
