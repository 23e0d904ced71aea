//! The contact record: the canonical `card` (neutral record), `crm` envelope and `passthrough`
//! members, stored as JSON text so nothing is lost, plus the flat projection derived from the card
//! on every save (the engine's save hook), which lists, sorting and search read without parsing
//! the card.

pub mod briefing;
pub mod bulk;
pub mod card;
pub mod detail;
pub mod list;
pub mod ops;
pub mod pick;
pub mod picture;
mod related;
pub mod view;

use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::projection::{Flat, project};
use mycorrhizal_engine::{Head, Invalid, Kind, Record, SearchDoc, Skipped, kind};
use serde::{Deserialize, Serialize};

/// A contact. The order of the first four fields is also [`ContactHead`]'s.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Contact {
    /// vCard UID (UUID v4), unique per user.
    pub uid: String,
    /// The neutral record, as JSON text.
    pub card: String,
    /// The CRM envelope (circles, how we met, ...), as a JSON object text.
    pub crm: String,
    /// Members carried through unchanged, as a JSON object text.
    pub passthrough: String,
    pub gender: String,
    pub archived: bool,
    pub favorite: bool,
    /// Stored photo file name, or empty.
    pub photo: String,
    /// A flat birthday the card cannot hold, kept as text: one of the spec's shape with no
    /// calendar day (`1990-13-45`), or a legacy value of another shape written before the
    /// shape rule was enforced, kept untouched until a write names the birthday.
    pub legacy_birthday: String,
    /// Derived by the save hook.
    pub flat: Flat,
    /// Derived by the save hook from `crm.circles`.
    pub circles: Vec<String>,
    /// Derived by the save hook from the card's `keywords`.
    pub tags: Vec<String>,
    /// The vCard a CardDAV client last PUT for this contact, as it sent it, served back as it is
    /// to a client reading that vCard version while the contact is still at [`Self::dav_revision`]
    /// (any later change anywhere moves the revision on, and the card is written from the
    /// contact again). Empty when the card held a picture (stored apart) or no client wrote it.
    #[serde(default)]
    pub dav_card: String,
    /// The revision [`Self::dav_card`] is the contact's own text at.
    #[serde(default)]
    pub dav_revision: u64,
}

/// A contact as stored before schema version 8 (no `dav_card`, `dav_revision`); migration 8
/// converts it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContactV7 {
    pub uid: String,
    pub card: String,
    pub crm: String,
    pub passthrough: String,
    pub gender: String,
    pub archived: bool,
    pub favorite: bool,
    pub photo: String,
    pub legacy_birthday: String,
    pub flat: Flat,
    pub circles: Vec<String>,
    pub tags: Vec<String>,
}

impl Record for ContactV7 {
    const KIND: Kind = kind!("contact", soft_delete);
}

impl From<ContactV7> for Contact {
    fn from(c: ContactV7) -> Contact {
        let ContactV7 {
            uid,
            card,
            crm,
            passthrough,
            gender,
            archived,
            favorite,
            photo,
            legacy_birthday,
            flat,
            circles,
            tags,
        } = c;
        Contact {
            uid,
            card,
            crm,
            passthrough,
            gender,
            archived,
            favorite,
            photo,
            legacy_birthday,
            flat,
            circles,
            tags,
            dav_card: String::new(),
            dav_revision: 0,
        }
    }
}

/// Migration step 8: stored contacts gain `dav_card` (empty) and `dav_revision` (0).
pub fn migrate_contact_cards(txn: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::convert_rows::<ContactV7, Contact>(txn, From::from).map(|_| ())
}

/// The first fields of a stored contact, read without the rest ([`UserView::list_heads`]): its
/// stored UID and passthrough, which give the name CardDAV serves it under, for a listing of a
/// whole address book that needs only names and ETags.
///
/// [`UserView::list_heads`]: mycorrhizal_engine::UserView::list_heads
#[derive(Debug, Clone, Deserialize)]
pub struct ContactHead {
    pub uid: String,
    _card: Skipped,
    _crm: Skipped,
    pub passthrough: String,
}

impl Head<Contact> for ContactHead {}

impl From<Contact> for ContactHead {
    fn from(contact: Contact) -> Self {
        ContactHead { uid: contact.uid, _card: Skipped, _crm: Skipped, passthrough: contact.passthrough }
    }
}

/// The passthrough member holding the resource name a CardDAV client created the card under,
/// kept only when the card would not be served under that name otherwise (a name with a space,
/// `@`, non-ASCII letters, or unrelated to the card's UID). Server metadata: left out of exports.
pub const DAV_NAME: &str = "davName";

/// The [`DAV_NAME`] of a stored passthrough text, if it holds one (found without parsing the
/// JSON of the many passthroughs that do not).
pub fn dav_name_in(passthrough: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "davName")]
        dav_name: Option<String>,
    }
    if !passthrough.contains("\"davName\"") {
        return None;
    }
    serde_json::from_str::<Named>(passthrough).ok()?.dav_name.filter(|n| !n.is_empty())
}

pub const INDEX_SORT_NAME: &str = "sort_name";
pub const INDEX_UID: &str = "uid";
pub const INDEX_CIRCLE: &str = "circle";
pub const INDEX_BIRTHDAY: &str = "birthday_md";
pub const INDEX_ARCHIVED: &str = "archived";
pub const INDEX_EMAIL: &str = "email";
pub const INDEX_TAG: &str = "tag";
/// Favourite, non-archived contacts, by sort name: the dashboard's favourites in name order.
pub const INDEX_FAVORITE: &str = "favorite";
/// Every phone's [`phone_key`], for duplicate detection on import.
pub const INDEX_PHONE: &str = "phone";
/// The key of every custom field value the contact holds (`crm.fields`).
pub const INDEX_FIELD: &str = "field";

/// The live contact `text` names: its id, or its vCard UID (how the existing clients name one),
/// read through `find` (the `uid` index) and `exists` (a view's or a transaction's).
pub fn named_by(
    find: impl Fn(&str) -> mycorrhizal_engine::Result<Vec<u64>>,
    exists: impl Fn(u64) -> bool,
    text: &str,
) -> Option<u64> {
    let text = text.trim();
    if let Ok(id) = text.parse::<u64>() {
        return exists(id).then_some(id);
    }
    find(&text.to_lowercase()).ok()?.into_iter().find(|id| exists(*id))
}

/// [`named_by`] in a read.
pub fn named(v: &mycorrhizal_engine::UserView, text: &str) -> Option<u64> {
    named_by(|uid| v.find::<Contact>(INDEX_UID, uid), |id| v.get::<Contact>(id).is_ok(), text)
}

/// The contact a record names by vCard UID (`entity_id`, as the existing clients send it) or by
/// `contact_id`, which must be the user's: 404 otherwise, 400 naming `entity_id` when neither.
pub fn entity(v: &mycorrhizal_engine::UserView, uid: Option<&str>, id: Option<u64>) -> crate::crm::Result<u64> {
    let found = match (uid.map(str::trim).filter(|u| !u.is_empty()), id) {
        (_, Some(id)) => named(v, &id.to_string()),
        (Some(uid), None) => named(v, uid),
        (None, None) => {
            return Err(crate::crm::Error::invalid("entity_id", "is required: the contact's vCard UID"));
        }
    };
    found.ok_or(crate::crm::Error::NotFound)
}

/// The custom field values in a CRM envelope's text (`crm.fields`: key to value).
pub fn field_values(crm: &str) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::from_str::<serde_json::Value>(crm) {
        Ok(serde_json::Value::Object(mut crm)) => match crm.remove(crate::crm::field::CRM_FIELDS) {
            Some(serde_json::Value::Object(fields)) => fields,
            _ => Default::default(),
        },
        _ => Default::default(),
    }
}

/// The comparable form of a phone number: its last nine ASCII digits (so `+44 20 7946 0958` and
/// `020 7946 0958` match), `None` below six digits.
pub fn phone_key(number: &str) -> Option<String> {
    let digits: Vec<char> = number.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 6 {
        return None;
    }
    Some(digits[digits.len().saturating_sub(9)..].iter().collect())
}

/// The digits of a search text written as a phone number with punctuation (`(555) 123-4567`,
/// `555-123`, `+1 555.123`): digits and `+ ( ) - . /` and spaces only, with at least three
/// digits and one of the others. A number is indexed as its digits too, so searching for these
/// finds it however either side is punctuated.
pub fn phone_digits(text: &str) -> Option<String> {
    let text = text.trim();
    let shaped = text.chars().all(|c| c.is_ascii_digit() || "+()-./ \t".contains(c));
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    (shaped && digits.len() >= 3 && digits.len() < text.chars().count()).then_some(digits)
}

impl Contact {
    pub fn parsed_card(&self) -> Card {
        serde_json::from_str(&self.card).unwrap_or_default()
    }

    /// The card, or why it is not one (validation's first step).
    fn card_or_invalid(&self) -> Result<Card, Invalid> {
        serde_json::from_str(&self.card).map_err(|e| Invalid::new("card", e.to_string()))
    }

    /// [`Record::validate`] with the card already parsed.
    fn check(&self, card: &Card) -> Result<(), Invalid> {
        card.validate().map_err(|e| Invalid::new(e.field, e.reason))?;
        for (field, text) in [("crm", &self.crm), ("passthrough", &self.passthrough)] {
            if !serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object()) {
                return Err(Invalid::new(field, "must be a JSON object"));
            }
        }
        if self.gender.chars().count() > 100 {
            return Err(Invalid::new("gender", "at most 100 characters"));
        }
        if uuid_shape(&self.uid).is_none() {
            return Err(Invalid::new("uid", "must be a UUID"));
        }
        Ok(())
    }

    /// [`Record::save_hook`] with the card already parsed: the derived columns.
    fn derive(&mut self, card: Card) {
        self.flat = project(&card);
        self.circles = circles_of(&self.crm);
        let mut tags: Vec<String> =
            card.keywords.into_iter().map(|k| k.trim().to_string()).filter(|k| !k.is_empty()).collect();
        tags.sort();
        tags.dedup();
        self.tags = tags;
    }

    /// [`Record::prepare`] for a caller that holds the card parsed already (an import builds the
    /// card text from it): the same checks and derived columns, without reading the text again.
    pub fn prepare_parsed(&mut self, card: Card) -> Result<(), Invalid> {
        self.check(&card)?;
        self.derive(card);
        Ok(())
    }

    /// The birthday as clients see it: the card's, else the legacy text.
    pub fn birthday(&self) -> &str {
        if self.flat.birthday.is_empty() { &self.legacy_birthday } else { &self.flat.birthday }
    }

    /// The display name.
    pub fn name(&self) -> String {
        if self.flat.full_name.is_empty() { self.flat.firstname.clone() } else { self.flat.full_name.clone() }
    }
}

fn circles_of(crm: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(crm).unwrap_or_default();
    let mut circles: Vec<String> = value["circles"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|c| c.as_str())
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    circles.sort();
    circles.dedup();
    circles
}

impl Record for Contact {
    const KIND: Kind = kind!("contact", soft_delete);
    /// 1: the `favorite` and `phone` indexes; 2: the `field` index.
    const INDEX_VERSION: u32 = 2;
    const UNIQUE: &'static [&'static str] = &[INDEX_UID];
    const AUDIT_SKIP: &'static [&'static str] = &["flat", "circles", "tags", "dav_card", "dav_revision"];

    fn validate(&self) -> Result<(), Invalid> {
        self.check(&self.card_or_invalid()?)
    }

    fn save_hook(&mut self) {
        let card = self.parsed_card();
        self.derive(card);
    }

    /// The card is parsed once for both (an import prepares thousands of contacts).
    fn prepare(&mut self) -> Result<(), Invalid> {
        let card = self.card_or_invalid()?;
        self.check(&card)?;
        self.derive(card);
        Ok(())
    }

    /// Names rank first; the body holds every other searchable member. A phone is also indexed
    /// as its digits, one number, which the index finds by its start (as typed) and by its
    /// ending: `4567` or `5551234567` find `+1 555 123-4567`.
    fn search_doc(&self) -> Option<SearchDoc> {
        let f = &self.flat;
        let mut title = vec![f.full_name.as_str()];
        for part in [&f.firstname, &f.middle_name, &f.lastname, &f.nickname] {
            if !part.is_empty() && !f.full_name.to_lowercase().contains(&part.to_lowercase()) {
                title.push(part);
            }
        }
        let mut body: Vec<String> = f.emails.clone();
        for phone in &f.phones {
            body.push(phone.value.clone());
            let digits: String = phone.value.chars().filter(char::is_ascii_digit).collect();
            // A number with a country code is also found by its national part's start
            // (`555-222` finds `+1 555 222 3333`): its last ten digits.
            if digits.len() > 10 {
                body.push(digits[digits.len() - 10..].to_string());
            }
            body.push(digits);
        }
        body.extend(
            [&f.org, &f.department, &f.job_title, &f.role, &f.addresses_flat]
                .into_iter()
                .filter(|s| !s.is_empty())
                .cloned(),
        );
        body.extend(card_notes(&self.card));
        body.extend(self.circles.iter().cloned());
        body.extend(self.tags.iter().cloned());
        body.extend(field_values(&self.crm).values().map(crate::crm::field::as_text));
        Some(SearchDoc { title: title.join(" "), body: body.join("\n"), hidden: self.archived, contacts: Vec::new() })
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        let mut entries = vec![(INDEX_SORT_NAME, self.flat.sort_name.clone()), (INDEX_UID, self.uid.to_lowercase())];
        entries.extend(self.circles.iter().map(|c| (INDEX_CIRCLE, c.clone())));
        entries.extend(self.tags.iter().map(|t| (INDEX_TAG, t.clone())));
        entries.extend(field_values(&self.crm).into_iter().map(|(key, _)| (INDEX_FIELD, key)));
        entries.extend(self.flat.emails.iter().map(|e| (INDEX_EMAIL, e.to_lowercase())));
        if let Some(md) = month_day(&self.flat.birthday) {
            entries.push((INDEX_BIRTHDAY, md));
        }
        if self.archived {
            entries.push((INDEX_ARCHIVED, "1".into()));
        } else if self.favorite {
            entries.push((INDEX_FAVORITE, self.flat.sort_name.clone()));
        }
        let mut phones: Vec<String> = self.flat.phones.iter().filter_map(|p| phone_key(&p.value)).collect();
        phones.sort();
        phones.dedup();
        entries.extend(phones.into_iter().map(|k| (INDEX_PHONE, k)));
        entries
    }
}

/// The texts of the card's `notes` (a list of `{note}`, or JSContact's map of id to `{note}`),
/// without parsing the rest of the card.
fn card_notes(card: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct NotesOnly {
        #[serde(default)]
        notes: serde_json::Value,
    }
    let notes = serde_json::from_str::<NotesOnly>(card).map(|n| n.notes).unwrap_or_default();
    let items: Vec<&serde_json::Value> = match &notes {
        serde_json::Value::Array(list) => list.iter().collect(),
        serde_json::Value::Object(map) => map.values().collect(),
        _ => Vec::new(),
    };
    items.into_iter().filter_map(|v| v["note"].as_str().map(str::to_string)).collect()
}

/// `MM-DD` of a REST date.
pub fn month_day(date: &str) -> Option<String> {
    let p = mycorrhizal_codecs::dates::parse_rest_date(date)?;
    Some(format!("{:02}-{:02}", p.month?, p.day?))
}

fn uuid_shape(text: &str) -> Option<()> {
    (text.len() == 36
        && text
            .chars()
            .enumerate()
            .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() }))
    .then_some(())
}

#[cfg(test)]
mod tests {
    use mycorrhizal_engine::{Meta, Row, codec};

    use super::*;

    /// The head reads a stored contact's UID and passthrough as the whole row does (the first
    /// fields of `Contact`, in order).
    #[test]
    fn the_head_reads_what_the_contact_holds() {
        let mut contact = crate::crm::import::new_contact(
            serde_json::from_value(serde_json::json!({ "card": { "name": { "full": "Ada Lovelace" }, "notes": [{ "note": "x".repeat(3000) }] } }))
                .expect("record"),
            false,
        )
        .expect("contact")
        .0;
        contact.passthrough = r#"{"jsContactProps":{"x":"y"}}"#.into();
        contact.crm = r#"{"circles":["Friends"]}"#.into();
        let now = jiff::Timestamp::from_second(1_700_000_000).expect("instant");
        let meta = Meta { revision: 2, created_at: now, updated_at: now, deleted_at: None };
        let bytes = codec::encode(&Row { id: 7, meta, body: contact.clone() });
        let head: Row<ContactHead> = codec::decode("rec:contact", &bytes).expect("the head reads");
        assert_eq!((head.id, head.meta), (7, meta));
        assert_eq!((head.body.uid, head.body.passthrough), (contact.uid, contact.passthrough));
    }
}
