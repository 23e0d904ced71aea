//! A relationship: a typed edge between two of the user's contacts. The record, its known
//! types and indexes; the operations and views are [`ops`].

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::length;

pub mod connections;
pub mod edges;
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

/// An edge's statuses: one the user made or accepted, or one inferred and waiting.
pub const STATUSES: &[&str] = &["confirmed", "suggested"];
/// Where an edge came from.
pub const ORIGINS: &[&str] = &["user-confirmed", "household-inferred", "graph-inferred", "imported", "ai-suggested"];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Relationship {
    pub source: u64,
    pub target: u64,
    /// A known token or a custom type.
    pub kind: String,
    /// `normal`, `private` or `secret`: only normal edges are projected into the card.
    pub sensitivity: String,
    pub note: String,
    // The defaults read a JSON body written before these fields (an older account bundle, a
    // merge's undo record) as the user's own confirmed edge.
    /// One of [`STATUSES`]: only confirmed edges are projected into the card and drawn.
    #[serde(default = "defaults::status")]
    pub status: String,
    /// One of [`ORIGINS`].
    #[serde(default = "defaults::origin")]
    pub origin: String,
    /// How sure the inference is, 0 to 1 (1 for the user's own).
    #[serde(default = "defaults::confidence")]
    pub confidence: f64,
    /// A free-form JSON object (`{"kind": "adoptive"}`), as text.
    #[serde(default = "defaults::metadata")]
    pub metadata: String,
}

mod defaults {
    pub fn status() -> String {
        "confirmed".into()
    }
    pub fn origin() -> String {
        "user-confirmed".into()
    }
    pub fn confidence() -> f64 {
        1.0
    }
    pub fn metadata() -> String {
        "{}".into()
    }
}

impl Relationship {
    /// A confirmed edge the user made.
    pub fn confirmed(source: u64, target: u64, kind: String, sensitivity: String, note: String) -> Relationship {
        Relationship {
            source,
            target,
            kind,
            sensitivity,
            note,
            status: "confirmed".into(),
            origin: "user-confirmed".into(),
            confidence: 1.0,
            metadata: "{}".into(),
        }
    }

    pub fn is_confirmed(&self) -> bool {
        self.status == "confirmed"
    }
}

/// An edge as stored before schema version 6 (no status, origin, confidence or metadata).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelationshipV5 {
    pub source: u64,
    pub target: u64,
    pub kind: String,
    pub sensitivity: String,
    pub note: String,
}

/// Migration step 6: stored edges are the user's own, confirmed.
pub fn migrate_edge_status(txn: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::convert_rows::<RelationshipV5, Relationship>(txn, |r| {
        Relationship::confirmed(r.source, r.target, r.kind, r.sensitivity, r.note)
    })
    .map(|_| ())
}

/// The type read from the other end (`parent_of` ↔ `child_of`), itself for a symmetric one;
/// `None` for a custom type, whose inverse is unknown.
pub fn inverse(kind: &str) -> Option<&'static str> {
    if let Some(k) = SYMMETRIC_RELATIONS.iter().find(|k| **k == kind) {
        return Some(k);
    }
    Some(match kind {
        "parent_of" => "child_of",
        "child_of" => "parent_of",
        "mentor_of" => "mentee_of",
        "mentee_of" => "mentor_of",
        "owned_by" => "owns",
        "owns" => "owned_by",
        _ => return None,
    })
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
        if !STATUSES.contains(&self.status.as_str()) {
            return Err(Invalid::new("status", "must be confirmed or suggested"));
        }
        if !ORIGINS.contains(&self.origin.as_str()) {
            return Err(Invalid::new("source", format!("must be one of {}", ORIGINS.join(", "))));
        }
        if !(0.0..=1.0).contains(&self.confidence) {
            return Err(Invalid::new("confidence", "must be between 0 and 1"));
        }
        length("metadata", &self.metadata, 0, 4000)?;
        if !serde_json::from_str::<serde_json::Value>(&self.metadata).is_ok_and(|m| m.is_object()) {
            return Err(Invalid::new("metadata", "must be a JSON object"));
        }
        length("note", &self.note, 0, 1000)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_SOURCE, format!("{:020}", self.source)), (BY_TARGET, format!("{:020}", self.target))]
    }
}
