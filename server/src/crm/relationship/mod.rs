//! A relationship: a typed edge between two of the user's contacts. The record, its known
//! types and indexes; the operations and views are [`ops`].

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::length;

pub mod ops;

/// Relation types clients know; anything else is kept as a custom type.
pub const KNOWN_RELATIONS: &[&str] = &[
    "parent_of",
    "child_of",
    "spouse_of",
    "sibling_of",
    "friend_of",
    "roommate_of",
    "coworker_of",
    "partner_of",
    "co_parent_of",
    "mentor_of",
    "mentee_of",
    "owned_by",
    "owns",
    "gets_along_with",
    "conflicts_with",
    "related_to",
];

/// Relation types that hold both ways: either end "is" the relation.
pub const SYMMETRIC_RELATIONS: &[&str] = &[
    "spouse_of",
    "sibling_of",
    "friend_of",
    "roommate_of",
    "coworker_of",
    "partner_of",
    "co_parent_of",
    "gets_along_with",
    "conflicts_with",
    "related_to",
];

/// Common words mapped to their relation type.
pub fn relation_token(text: &str) -> String {
    let t = text.trim().to_lowercase().replace([' ', '-'], "_");
    let mapped = match t.as_str() {
        "spouse" | "husband" | "wife" => "spouse_of",
        "parent" | "mother" | "father" => "parent_of",
        "child" | "son" | "daughter" => "child_of",
        "sibling" | "brother" | "sister" => "sibling_of",
        "friend" => "friend_of",
        "colleague" | "coworker" => "coworker_of",
        "partner" => "partner_of",
        "roommate" => "roommate_of",
        "mentor" => "mentor_of",
        "mentee" => "mentee_of",
        other => other,
    };
    mapped.to_string()
}

pub const BY_SOURCE: &str = "source";
pub const BY_TARGET: &str = "target";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Relationship {
    pub source: u64,
    pub target: u64,
    /// A known token or a custom type.
    pub kind: String,
    /// `normal`, `private` or `secret`: only normal edges are projected into the card.
    pub sensitivity: String,
    pub note: String,
}

impl Record for Relationship {
    // A join row: deleting it (or either contact) removes it outright.
    const KIND: Kind = kind!("relationship", hard_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if self.kind.is_empty()
            || self.kind.chars().count() > 50
            || !self.kind.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            return Err(Invalid::new("type", "must be 1 to 50 letters, digits or underscores"));
        }
        if !["normal", "private", "secret"].contains(&self.sensitivity.as_str()) {
            return Err(Invalid::new("sensitivity", "must be normal, private or secret"));
        }
        if self.source == self.target {
            return Err(Invalid::new("target_id", "a contact cannot be related to itself"));
        }
        length("note", &self.note, 0, 1000)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_SOURCE, format!("{:020}", self.source)), (BY_TARGET, format!("{:020}", self.target))]
    }
}
