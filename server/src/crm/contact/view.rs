//! What a contact looks like to a client: the full [`ContactView`] (canonical members,
//! bookkeeping and the flat projection) and the list item [`ContactSummary`]. Every front door
//! and job that shows a contact uses these types, and the OpenAPI document describes them from
//! the same definitions. Rendering only: no reads beyond what the caller passes in.

use jiff::Timestamp;
use mycorrhizal_codecs::projection::{FlatAddress, FlatPhone};
use mycorrhizal_engine::Row;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Contact;

/// The URL of a contact's picture, when it has one.
pub fn photo_url(row: &Row<Contact>) -> Option<String> {
    (!row.body.photo.is_empty()).then(|| format!("/api/v1/contacts/{}/profile_picture", row.id))
}

fn thumbnail(row: &Row<Contact>) -> Option<String> {
    photo_url(row).map(|url| format!("{url}?thumbnail=true"))
}

fn object(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!({}))
}

/// The full contact, as `GET /contacts/{id}` answers it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactView {
    pub id: u64,
    /// vCard UID.
    pub uid: String,
    /// The entity tag without quotes (`e-<id>-<revision>`).
    pub etag: String,
    pub revision: u64,
    pub gender: String,
    /// The neutral record (JSContact-shaped), with confirmed relationships as `relatedTo`.
    #[schema(value_type = Object)]
    pub card: Value,
    /// The CRM envelope (circles, how we met, ...).
    #[schema(value_type = Object)]
    pub crm: Value,
    /// Members kept from imports that have no place in the record.
    #[schema(value_type = Object)]
    pub passthrough: Value,
    pub photo: String,
    pub archived: bool,
    pub is_favorite: bool,
    /// `YYYY-MM-DD`, `--MM-DD`, a legacy text kept as it was, or empty.
    pub birthday: String,
    pub circles: Vec<String>,
    pub tags: Vec<String>,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
    #[schema(value_type = String)]
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_thumbnail: Option<String>,
    // The flat projection of the card.
    pub firstname: String,
    pub lastname: String,
    pub middle_name: String,
    pub prefix: String,
    pub suffix: String,
    pub nickname: String,
    #[serde(rename = "fn")]
    pub full_name: String,
    pub email: String,
    pub phone: String,
    pub org: String,
    pub department: String,
    pub job_title: String,
    pub role: String,
    pub anniversary: String,
    #[schema(value_type = Vec<Object>)]
    pub addresses: Vec<FlatAddress>,
    #[schema(value_type = Vec<Object>)]
    pub phones: Vec<FlatPhone>,
    pub addresses_flat: String,
    pub phones_normalized: String,
    pub sort_name: String,
    /// The first address on one line.
    pub address: String,
    pub emails: Vec<String>,
}

impl ContactView {
    /// The view of `row`, with `related` (uid, vCard relation) projected into the card.
    pub fn of(row: &Row<Contact>, related: &[(String, &'static str)]) -> ContactView {
        let c = &row.body;
        let mut card = object(&c.card);
        if !related.is_empty() {
            let mut list = card["relatedTo"].as_array().cloned().unwrap_or_default();
            for (uid, relation) in related {
                list.push(json!({ "target": format!("urn:uuid:{uid}"), "relations": [relation] }));
            }
            card["relatedTo"] = Value::Array(list);
        }
        let f = c.flat.clone();
        ContactView {
            id: row.id,
            uid: c.uid.clone(),
            etag: row.etag().trim_matches('"').to_string(),
            revision: row.meta.revision,
            gender: c.gender.clone(),
            card,
            crm: object(&c.crm),
            passthrough: object(&c.passthrough),
            photo: c.photo.clone(),
            archived: c.archived,
            is_favorite: c.favorite,
            birthday: c.birthday().to_string(),
            circles: c.circles.clone(),
            tags: c.tags.clone(),
            created_at: row.meta.created_at,
            updated_at: row.meta.updated_at,
            photo_thumbnail: thumbnail(row),
            firstname: f.firstname,
            lastname: f.lastname,
            middle_name: f.middle_name,
            prefix: f.prefix,
            suffix: f.suffix,
            nickname: f.nickname,
            full_name: f.full_name,
            email: f.email,
            phone: f.phone,
            org: f.org,
            department: f.department,
            job_title: f.job_title,
            role: f.role,
            anniversary: f.anniversary,
            addresses: f.addresses,
            phones: f.phones,
            addresses_flat: f.addresses_flat,
            phones_normalized: f.phones_normalized,
            sort_name: f.sort_name,
            address: f.address,
            emails: f.emails,
        }
    }
}

/// A contact in a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactSummary {
    pub id: u64,
    pub uid: String,
    pub revision: u64,
    pub firstname: String,
    pub lastname: String,
    pub nickname: String,
    /// The display name.
    #[serde(rename = "fn")]
    pub name: String,
    pub primary_email: String,
    pub primary_phone: String,
    pub birthday: String,
    pub org: String,
    pub photo: String,
    pub archived: bool,
    pub is_favorite: bool,
    pub circles: Vec<String>,
    #[schema(value_type = String)]
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_thumbnail: Option<String>,
}

impl ContactSummary {
    pub fn of(row: &Row<Contact>) -> ContactSummary {
        let c = &row.body;
        ContactSummary {
            id: row.id,
            uid: c.uid.clone(),
            revision: row.meta.revision,
            firstname: c.flat.firstname.clone(),
            lastname: c.flat.lastname.clone(),
            nickname: c.flat.nickname.clone(),
            name: c.name(),
            primary_email: c.flat.email.clone(),
            primary_phone: c.flat.phone.clone(),
            birthday: c.birthday().to_string(),
            org: c.flat.org.clone(),
            photo: c.photo.clone(),
            archived: c.archived,
            is_favorite: c.favorite,
            circles: c.circles.clone(),
            updated_at: row.meta.updated_at,
            photo_thumbnail: thumbnail(row),
        }
    }
}

/// One page of a contact list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactPage {
    pub contacts: Vec<ContactSummary>,
    /// Opaque; empty on the last page.
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
    /// How many contacts match, over all pages.
    pub total: u64,
    /// With `has_contact_info=true`: how many more would match without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_count: Option<u64>,
}

/// `{message, contact}`: a contact created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactCreated {
    pub message: String,
    pub contact: ContactView,
}

/// `{contacts}`: a handful of contacts (the random pick).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContactSummaries {
    pub contacts: Vec<ContactSummary>,
}

/// `{birthdays}`: upcoming birthdays, soonest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BirthdayList {
    pub birthdays: Vec<BirthdayView>,
}

/// An upcoming birthday.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BirthdayView {
    /// Always `contact`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub contact_id: u64,
    pub name: String,
    /// As stored: `YYYY-MM-DD` or `--MM-DD`.
    pub birthday: String,
    /// The next occurrence, `YYYY-MM-DD`.
    pub date: String,
    pub days_until: i32,
    /// The age on that day, when the year is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age: Option<i16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_thumbnail: Option<String>,
}
