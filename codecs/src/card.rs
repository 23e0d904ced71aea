//! The neutral contact record (`card`): JSContact-shaped (RFC 9553 member names, camelCase),
//! with `contexts` as a list of strings as existing clients send it. The members the server reads
//! are typed; every other member, and every unknown member inside the typed ones, is kept as
//! JSON and written back unchanged, so nothing a client or an import sent is lost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dates::Partial;

/// Members not typed here, kept verbatim.
pub type Extra = BTreeMap<String, Value>;

fn is_empty<T>(v: &[T]) -> bool {
    v.is_empty()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub nicknames: Vec<Nickname>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub organizations: Vec<Organization>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub titles: Vec<Title>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub emails: Vec<Email>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub phones: Vec<Phone>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub addresses: Vec<Address>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub anniversaries: Vec<Anniversary>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub related_to: Vec<Related>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Name {
    #[serde(default, skip_serializing_if = "is_empty")]
    pub components: Vec<Component>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A name or address component: `{kind, value, phonetic?}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Component {
    pub kind: String,
    pub value: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Nickname {
    pub name: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub units: Vec<Unit>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Unit {
    pub name: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Title {
    pub name: String,
    /// `title` or `role`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Email {
    pub address: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub contexts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pref: Option<u32>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Phone {
    pub number: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub contexts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pref: Option<u32>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Address {
    #[serde(default, skip_serializing_if = "is_empty")]
    pub components: Vec<Component>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub contexts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pref: Option<u32>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Anniversary {
    /// `birth`, `death` or `wedding`.
    pub kind: String,
    pub date: AnniversaryDate,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnniversaryDate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Related {
    pub target: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub relations: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Why a card was refused: the field path and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardError {
    pub field: String,
    pub reason: String,
}

/// Longest text the server accepts in one card member.
pub const MAX_TEXT: usize = 10_000;

impl Card {
    /// The given (first) name, or the first word of the full name.
    pub fn given(&self) -> Option<&str> {
        let name = self.name.as_ref()?;
        component(&name.components, "given").or_else(|| name.full.as_deref().and_then(|f| f.split_whitespace().next()))
    }

    /// Checks what the server relies on: a name to show, and sane sizes.
    pub fn validate(&self) -> Result<(), CardError> {
        if self.given().is_none_or(|g| g.trim().is_empty()) {
            return Err(CardError {
                field: "card.name".into(),
                reason: "a first name is required (a name component of kind \"given\", or name.full)".into(),
            });
        }
        let texts = self
            .emails
            .iter()
            .map(|e| ("card.emails", e.address.as_str()))
            .chain(self.phones.iter().map(|p| ("card.phones", p.number.as_str())))
            .chain(self.keywords.iter().map(|k| ("card.keywords", k.as_str())));
        for (field, text) in texts {
            if text.len() > MAX_TEXT {
                return Err(CardError { field: field.into(), reason: format!("longer than {MAX_TEXT} bytes") });
            }
        }
        for (i, a) in self.anniversaries.iter().enumerate() {
            // A year of more than four digits has no vCard form: written as 4.0's `YYYYMMDD`
            // it read back as another date (`181520110`: year 1815, month 20).
            if let Some(p) = a.date.partial
                && (p.year.is_some_and(|y| !(0..=9999).contains(&y))
                    || p.month.is_some_and(|m| !(1..=12).contains(&m))
                    || p.day.is_some_and(|d| !(1..=31).contains(&d)))
            {
                return Err(CardError {
                    field: format!("card.anniversaries[{i}].date.partial"),
                    reason: "year must be 0-9999, month 1-12 and day 1-31".into(),
                });
            }
        }
        Ok(())
    }
}

/// The value of the first component of `kind`.
pub fn component<'a>(components: &'a [Component], kind: &str) -> Option<&'a str> {
    components.iter().find(|c| c.kind == kind).map(|c| c.value.as_str()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_members_survive_a_round_trip() {
        let text = r#"{"name":{"components":[{"kind":"given","value":"Ada","phonetic":"a-da"}],"isOrdered":true},
            "emails":[{"address":"ada@example.org","contexts":["home"],"label":"main"}],
            "speakToAs":{"pronouns":[{"pronouns":"she/her"}]},"localizations":{"fr":{"x":1}}}"#;
        let card: Card = serde_json::from_str(text).unwrap();
        let back: Value = serde_json::to_value(&card).unwrap();
        let original: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, original);
        assert_eq!(card.given(), Some("Ada"));
    }

    #[test]
    fn a_card_needs_a_first_name() {
        let nameless: Card = serde_json::from_str(r#"{"emails":[{"address":"x@example.org"}]}"#).unwrap();
        assert_eq!(nameless.validate().unwrap_err().field, "card.name");
        let full: Card = serde_json::from_str(r#"{"name":{"full":"Grace Hopper"}}"#).unwrap();
        assert!(full.validate().is_ok());
        assert_eq!(full.given(), Some("Grace"));
    }
}
