//! Activities as clients read them (with their contacts named), and the per-contact read.

use mycorrhizal_engine::{Row, UserView, Walk};
use serde_json::{Value, json};

use super::Result;
use super::contact::Contact;
use super::records::{Activity, BY_CONTACT};

pub fn view(row: &Row<Activity>, contacts: &[Value]) -> Value {
    let a = &row.body;
    json!({
        "id": row.id,
        "uuid": a.uuid,
        "title": a.title,
        "description": a.description,
        "location": a.location,
        "date": a.date,
        "contact_ids": a.contact_ids,
        "contacts": contacts,
        "type": a.kind,
        "external_ref": a.external_ref,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

/// An activity with its contacts named.
pub fn with_contacts(view_: &UserView, row: &Row<Activity>) -> Value {
    let contacts: Vec<Value> = row
        .body
        .contact_ids
        .iter()
        .filter_map(|id| view_.get::<Contact>(*id).ok())
        .map(|c| json!({ "id": c.id, "uid": c.body.uid, "name": c.body.name() }))
        .collect();
    view(row, &contacts)
}

/// The newest `limit` activities of a contact.
pub fn of_contact(view_: &UserView, contact: u64, limit: usize) -> Result<Vec<Value>> {
    let (from, to) = super::records::contact_range(contact);
    let page = view_.walk::<Activity>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(page.rows.iter().map(|r| with_contacts(view_, r)).collect())
}
