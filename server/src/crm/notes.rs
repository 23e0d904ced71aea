//! Notes as clients read them, and the reads the contact page and timeline share.

use mycorrhizal_engine::{Row, UserView, Walk};
use serde_json::{Value, json};

use super::Result;
use super::records::{BY_CONTACT, Note};

pub fn view(row: &Row<Note>) -> Value {
    json!({
        "id": row.id,
        "content": row.body.content,
        "date": row.body.date,
        "contact_id": row.body.contact_id,
        "revision": row.meta.revision,
        "etag": row.etag().trim_matches('"'),
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

/// The newest `limit` notes of a contact.
pub fn of_contact(view: &UserView, contact: u64, limit: usize) -> Result<Vec<Value>> {
    let (from, to) = super::records::contact_range(contact);
    let page = view.walk::<Note>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(page.rows.iter().map(view_fn).collect())
}

pub fn view_fn(row: &Row<Note>) -> Value {
    view(row)
}
