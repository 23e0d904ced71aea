//! Which parts of a card an export includes: the `sections` a request names, and the card
//! members each keeps. Who the card is (its UID, kind and names) is always kept. Reading the
//! contacts and writing them are elsewhere (`contacts`, `cards`).

use mycorrhizal_codecs::record::NeutralRecord;
use serde_json::{Map, Value};

use super::ExportError;

/// The `sections` tokens and the card members each one keeps.
const SECTIONS: &[(&str, &[&str])] = &[
    ("emails", &["emails"]),
    ("phones", &["phones"]),
    ("addresses", &["addresses"]),
    ("organizations", &["organizations", "titles"]),
    ("anniversaries", &["anniversaries"]),
    ("media", &["media"]),
    ("online_services", &["onlineServices"]),
    ("links", &["links"]),
    ("notes", &["notes"]),
    ("keywords", &["keywords"]),
    ("related_to", &["relatedTo"]),
    ("personal_info", &["personalInfo"]),
    ("speak_to_as", &["speakToAs"]),
    ("members", &["members"]),
    ("languages", &["preferredLanguages"]),
    ("custom_fields", &[]),
];

/// Card members every export keeps whatever `sections` says: who the card is.
const ALWAYS: &[&str] = &["uid", "kind", "name", "nicknames", "created", "updated", "language", "prodId"];

/// The sections of a card an export includes.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `None`: everything.
    sections: Option<Vec<&'static str>>,
}

impl Selection {
    /// The `sections` a request names (a comma list; none or blank is everything).
    pub fn parse(text: Option<&str>) -> Result<Selection, ExportError> {
        let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(Selection::default()) };
        let mut chosen = Vec::new();
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let Some((name, _)) = SECTIONS.iter().find(|(name, _)| *name == token) else {
                let known: Vec<&str> = SECTIONS.iter().map(|(n, _)| *n).collect();
                return Err(ExportError::Invalid {
                    field: "sections",
                    reason: format!("unknown section {token:?}; known: {}", known.join(", ")),
                });
            };
            chosen.push(*name);
        }
        Ok(Selection { sections: Some(chosen) })
    }

    pub fn keeps(&self, section: &str) -> bool {
        self.sections.as_ref().is_none_or(|s| s.contains(&section))
    }

    /// Drops the card members of sections not chosen.
    pub fn apply(&self, record: &mut NeutralRecord) {
        let Some(chosen) = &self.sections else { return };
        let kept: Vec<&str> = SECTIONS
            .iter()
            .filter(|(name, _)| chosen.contains(name))
            .flat_map(|(_, members)| members.iter().copied())
            .chain(ALWAYS.iter().copied())
            .collect();
        let Ok(Value::Object(card)) = serde_json::to_value(&record.card) else { return };
        let card: Map<String, Value> = card.into_iter().filter(|(k, _)| kept.contains(&k.as_str())).collect();
        record.card = serde_json::from_value(Value::Object(card)).unwrap_or_default();
        if !chosen.contains(&"custom_fields") {
            record.passthrough.remove(mycorrhizal_codecs::jscontact::PASSTHROUGH_VCARD_PROPS);
        }
    }
}
