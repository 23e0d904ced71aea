//! Preferences: what a person likes, dislikes, wears or cannot eat ("favourite food: sushi",
//! "allergy: peanuts", "shirt size: M"), one fact per row, each hanging off one contact with a
//! category, an optional key (the disposition: `favorite`, `like`, `dislike`, `allergy`, or a
//! garment), the value, notes, where it came from and how sensitive it is.

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::{BY_CONTACT, length as text};

pub mod ops;

pub const SOURCES: &[&str] = &["conversation_note", "user", "ai-suggested", "external"];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Preference {
    pub contact_id: u64,
    /// Open vocabulary (`food`, `drink`, `hobby`, `clothing_size`, ...).
    pub category: String,
    pub key: String,
    pub value: String,
    pub notes: String,
    /// One of [`SOURCES`], or empty.
    pub source: String,
    /// 0 to 1, when given.
    pub confidence: Option<f64>,
    /// When the fact was last confirmed (RFC 3339), or empty.
    pub last_confirmed: String,
    /// `normal`, `private` or `secret`.
    pub sensitivity: String,
}

impl Record for Preference {
    const KIND: Kind = kind!("preference", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        text("category", &self.category, 1, 100)?;
        text("key", &self.key, 0, 100)?;
        text("value", &self.value, 1, 1000)?;
        text("notes", &self.notes, 0, 2000)?;
        if !self.source.is_empty() && !SOURCES.contains(&self.source.as_str()) {
            return Err(Invalid::new("source", format!("must be one of {}", SOURCES.join(", "))));
        }
        if self.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return Err(Invalid::new("confidence", "must be between 0 and 1"));
        }
        if !self.last_confirmed.is_empty() && self.last_confirmed.parse::<jiff::Timestamp>().is_err() {
            return Err(Invalid::new("last_confirmed", "must be an RFC 3339 date and time"));
        }
        if !["normal", "private", "secret"].contains(&self.sensitivity.as_str()) {
            return Err(Invalid::new("sensitivity", "must be normal, private or secret"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, format!("{:020}", self.contact_id))]
    }
}
