//! The neutral record every import format produces and every export format reads: the `card`
//! (JSContact-shaped, see [`crate::card`]), the `crm` envelope (circles, how we met, ...), the
//! `passthrough` members no neutral home holds (so an export gives them back), and `gender`.
//! Parsers report problems per item ([`Problem`]) and never abort a whole file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::card::Card;

/// Where the RFC 9555 `vCard` member's parts live in `passthrough`.
pub const PASSTHROUGH_VCARD_PROPS: &str = "vCardProps";
/// Where JSContact members with no neutral home live in `passthrough`.
pub const PASSTHROUGH_JSCONTACT_PROPS: &str = "jsContactProps";

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NeutralRecord {
    pub card: Card,
    #[serde(default)]
    pub crm: Map<String, Value>,
    #[serde(default)]
    pub passthrough: Map<String, Value>,
    #[serde(default)]
    pub gender: String,
}

/// A [`NeutralRecord`] with its card as the JSON object [`Card`] writes: how a stored contact's
/// card text reads without being read into a [`Card`] and written out again, for the writers
/// that start from that JSON anyway (the vCard and JSContact writers). A card of the neutral
/// form reads the same either way (tested on every fixture card).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonRecord {
    pub card: Map<String, Value>,
    pub crm: Map<String, Value>,
    pub passthrough: Map<String, Value>,
    pub gender: String,
}

impl From<&NeutralRecord> for JsonRecord {
    fn from(record: &NeutralRecord) -> Self {
        let card = match serde_json::to_value(&record.card) {
            Ok(Value::Object(card)) => card,
            _ => Map::new(),
        };
        JsonRecord {
            card,
            crm: record.crm.clone(),
            passthrough: record.passthrough.clone(),
            gender: record.gender.clone(),
        }
    }
}

/// What went wrong with one item of an input file: its 0-based position among the file's items,
/// the 1-based line it starts on (0 when the format has no lines, e.g. JSON), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub index: usize,
    pub line: usize,
    pub reason: String,
}

/// One item of a parsed file: a record (with notes on what was dropped or repaired), or a problem.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Record { record: Box<NeutralRecord>, line: usize, diagnostics: Vec<String> },
    Problem(Problem),
}
