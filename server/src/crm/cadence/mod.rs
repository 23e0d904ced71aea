//! A cadence policy: "keep in touch every N days". The record; its operations and the health
//! computed on every read are [`ops`].

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::length as text;

pub mod ops;

/// Who a cadence policy covers.
pub const CADENCE_SCOPES: &[&str] = &["contact", "circle", "tag"];

/// "Stay in touch every N days": for one contact, or every contact of a circle or tag, counting
/// only the qualifying kinds of activity (any kind when the list is empty).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CadencePolicy {
    /// `contact`, `circle` or `tag`.
    pub scope: String,
    /// The contact id (as text), circle name or tag.
    pub target: String,
    pub interval_days: u32,
    pub qualifying: Vec<String>,
}

impl Record for CadencePolicy {
    const KIND: Kind = kind!("cadence_policy", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if !CADENCE_SCOPES.contains(&self.scope.as_str()) {
            return Err(Invalid::new("scope", "must be contact, circle or tag"));
        }
        if !(1..=3650).contains(&self.interval_days) {
            return Err(Invalid::new("interval_days", "must be 1 to 3650"));
        }
        text("target", &self.target, 1, 100)
    }
}
