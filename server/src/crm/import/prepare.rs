//! From an incoming record to a new contact: the UID it is stored under ([`stable_uid`]: the same
//! card always maps to the same contact), the card's own UID kept for exports when it differs,
//! and the contact body. Validation is the contact's own preparation (`Contact::prepare_parsed`),
//! not repeated here; what an update does to an existing contact is `merge`.

use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::projection::project;
use mycorrhizal_codecs::record::NeutralRecord;
use mycorrhizal_engine::Invalid;
use serde_json::{Value, json};

use crate::crm::contact::Contact;

/// Where a card's own UID is kept when it is not exactly our stored UUID (a non-UUID UID, an
/// upper-case or `urn:uuid:` one), so exports give it back as it was.
pub const ORIGINAL_UID_POINTER: &str = "/uid";

/// The stored UID for an incoming card: its own UID when it is a UUID; a UUID derived from its
/// UID when it has another one (so the same card always maps to the same contact); derived from
/// its name, emails and phones when it has none.
pub fn stable_uid(card: &Card) -> String {
    if let Some(uid) = card.uid.as_deref().and_then(stable_uid_of) {
        return uid;
    }
    let flat = project(card);
    let mut key = format!("{}\u{1f}{}", flat.firstname.to_lowercase(), flat.lastname.to_lowercase());
    for e in &flat.emails {
        key.push('\u{1f}');
        key.push_str(&e.to_lowercase());
    }
    for p in &flat.phones {
        key.push('\u{1f}');
        key.push_str(&mycorrhizal_codecs::projection::normalize_phone(&p.value));
    }
    uuid::Uuid::new_v5(&NAMESPACE, key.as_bytes()).to_string()
}

/// The stable UID of a card whose UID is `uid`, when that is not blank (see [`stable_uid`]).
pub fn stable_uid_of(uid: &str) -> Option<String> {
    let uid = uid.trim();
    if uid.is_empty() {
        return None;
    }
    let bare = uid.trim_start_matches("urn:uuid:");
    if let Ok(u) = uuid::Uuid::parse_str(bare) {
        return Some(u.to_string());
    }
    Some(uuid::Uuid::new_v5(&NAMESPACE, uid.as_bytes()).to_string())
}

/// A UID's exact text hashed (UUID v5), case kept: the stored UID of a card whose UUID-shaped
/// UID differs only in case from one another card holds (UIDs are case-sensitive text).
pub fn hashed_uid(uid: &str) -> String {
    uuid::Uuid::new_v5(&NAMESPACE, uid.trim().as_bytes()).to_string()
}

/// The namespace of the UIDs [`stable_uid`] derives.
const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6d79_636f_7272_6869_7a61_6c2d_7569_6400);

/// A new contact from an incoming record (the stable UID, or a fresh one when `uid_taken`), and
/// its card, for [`Contact::prepare_parsed`]. Validation is left to that preparation.
pub fn new_contact(record: NeutralRecord, uid_taken: bool) -> Result<(Contact, Card), Invalid> {
    let NeutralRecord { mut card, crm, mut passthrough, gender } = record;
    let uid = if uid_taken { uuid::Uuid::new_v4().to_string() } else { stable_uid(&card) };
    // The card's own UID comes back on export exactly as it was written (case, `urn:uuid:`).
    if let Some(original) = card.uid.as_deref().map(str::trim).filter(|u| !u.is_empty() && *u != uid && !uid_taken) {
        let props = passthrough.entry("jsContactProps").or_insert_with(|| json!({}));
        if let Value::Object(p) = props {
            p.insert(ORIGINAL_UID_POINTER.into(), Value::String(original.to_string()));
        }
    }
    card.uid = Some(uid.clone());
    let contact = Contact {
        uid,
        card: serde_json::to_string(&card).map_err(|e| Invalid::new("card", e.to_string()))?,
        crm: Value::Object(crm).to_string(),
        passthrough: Value::Object(passthrough).to_string(),
        gender,
        archived: false,
        favorite: false,
        photo: String::new(),
        legacy_birthday: String::new(),
        flat: Default::default(),
        circles: Vec::new(),
        tags: Vec::new(),
        dav_card: String::new(),
        dav_revision: 0,
    };
    Ok((contact, card))
}

#[cfg(test)]
mod tests {
    use mycorrhizal_engine::Prepared;

    use super::*;
    use crate::crm::import::rows_of;

    /// Preparing an imported contact from its card in hand gives the body (derived columns
    /// included) and the creation audit that preparing it from its card text gives.
    #[test]
    fn a_contact_prepared_from_its_parsed_card_is_the_one_prepared_from_its_text() {
        let dirs = [
            concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rfc-cards"),
            concat!(env!("CARGO_MANIFEST_DIR"), "/../codecs/tests/fixtures/vcf"),
        ];
        let mut compared = 0;
        for dir in dirs {
            for path in std::fs::read_dir(dir).expect("fixtures").flatten().map(|e| e.path()) {
                if path.extension().and_then(|e| e.to_str()) != Some("vcf") {
                    continue;
                }
                for row in rows_of(mycorrhizal_codecs::vcard::parse_file(&std::fs::read(&path).expect("read"))) {
                    let Some(record) = &row.record else { continue };
                    let (contact, card) = new_contact(record.clone(), false).expect("contact");
                    let from_text = Prepared::new(contact.clone());
                    let from_card = Prepared::with(contact, |c| c.prepare_parsed(card));
                    match (from_text, from_card) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(
                                serde_json::to_value(a.body()).expect("json"),
                                serde_json::to_value(b.body()).expect("json"),
                                "{}",
                                path.display()
                            );
                            compared += 1;
                        }
                        (Err(a), Err(b)) => assert_eq!((a.field, a.reason), (b.field, b.reason)),
                        (a, b) => panic!("{}: {:?} / {:?}", path.display(), a.is_ok(), b.is_ok()),
                    }
                }
            }
        }
        assert!(compared >= 20, "{compared} contacts compared");
    }
}
