//! Duplicate contacts: the scan that pairs the contacts that are probably one person, and the
//! record that dismisses a pair for good. The scan and its rules are [`ops`].

pub mod merge;
pub mod ops;

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::BY_CONTACT;

/// A dismissal's pair, `<low>:<high>` (unique per user).
pub const PAIR: &str = "pair";

/// "These two are not one person": the pair is left out of every scan from now on. Deleted with
/// either contact.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DuplicateDismissal {
    /// The smaller contact id of the pair.
    pub low: u64,
    pub high: u64,
}

impl DuplicateDismissal {
    pub fn of(a: u64, b: u64) -> DuplicateDismissal {
        DuplicateDismissal { low: a.min(b), high: a.max(b) }
    }

    pub fn key(&self) -> String {
        pair_key(self.low, self.high)
    }
}

pub fn pair_key(low: u64, high: u64) -> String {
    format!("{low:020}:{high:020}")
}

impl Record for DuplicateDismissal {
    const KIND: Kind = kind!("duplicate_dismissal", hard_delete);
    const UNIQUE: &'static [&'static str] = &[PAIR];

    fn validate(&self) -> Result<(), Invalid> {
        if self.low == self.high {
            return Err(Invalid::new("pair", "must name two different contacts"));
        }
        Ok(())
    }

    /// The smaller id first, whatever order it came in (a bundle's import remaps both).
    fn save_hook(&mut self) {
        if self.low > self.high {
            std::mem::swap(&mut self.low, &mut self.high);
        }
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(PAIR, self.key()), (BY_CONTACT, format!("{:020}", self.low)), (BY_CONTACT, format!("{:020}", self.high))]
    }
}
