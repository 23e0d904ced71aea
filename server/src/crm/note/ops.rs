//! Notes: free text with a date, about one contact or unassigned. Their operations (create,
//! replace with the stored date kept when none is given, page through a contact's or the
//! unassigned ones) and the typed [`NoteView`] every front door shows.

use jiff::Timestamp;
use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::calendar::{date_range, instant};
use crate::crm::contact::Contact;
use crate::crm::contact::ops::require_contacts;
use crate::crm::cursor::{DatedFilter, decode_cursor, encode_cursor};
use crate::crm::{Error, Result};
use crate::crm::{note::Note, records::BY_CONTACT};

/// A note as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoteView {
    pub id: u64,
    /// `id` again, under the name the existing clients read.
    #[serde(rename = "ID")]
    pub legacy_id: u64,
    pub content: String,
    #[schema(value_type = String)]
    pub date: Timestamp,
    pub contact_id: Option<u64>,
    /// `revision`, `etag`, `created_at`, `updated_at`.
    #[serde(flatten)]
    pub stamp: crate::crm::Stamp,
}

impl NoteView {
    pub fn of(row: &Row<Note>) -> NoteView {
        NoteView {
            id: row.id,
            legacy_id: row.id,
            content: row.body.content.clone(),
            date: row.body.date,
            contact_id: row.body.contact_id,
            stamp: crate::crm::Stamp::of(row),
        }
    }
}

/// `{message, note}`: a note created or replaced.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NoteSaved {
    pub message: String,
    pub note: NoteView,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NoteInput {
    /// 1 to 5000 characters.
    #[schema(min_length = 1, max_length = 5000, pattern = r"\S")]
    pub content: String,
    /// RFC 3339 instant or `YYYY-MM-DD`; default now (on update: the stored date).
    #[schema(value_type = Option<crate::crm::schema::DayOrInstantOrBlank>)]
    pub date: Option<String>,
    /// The contact it is about; absent or null for an unassigned note.
    pub contact_id: Option<u64>,
}

impl NoteInput {
    /// The note this input makes about `contact`; `date` defaults to `fallback`.
    fn note(&self, contact: Option<u64>, fallback: Timestamp) -> Result<Note> {
        crate::crm::records::check_id("contact_id", self.contact_id)?;
        let date = match self.date.as_deref() {
            Some(d) if !d.trim().is_empty() => instant("date", d)?,
            _ => fallback,
        };
        Ok(Note { content: self.content.clone(), date, contact_id: contact })
    }
}

/// Creates a note about `contact` (which must be the user's), dated now unless the input says.
pub async fn create(scope: &UserScope, contact: Option<u64>, input: NoteInput, now: Timestamp) -> Result<Row<Note>> {
    let note = input.note(contact, now)?;
    Ok(scope
        .write_async(move |tx| {
            if let Some(contact) = note.contact_id {
                tx.get::<Contact>(contact)?;
            }
            tx.create(note.clone())
        })
        .await?)
}

/// Replaces note `id` whole (leaving `contact_id` out unassigns it); without a date the stored
/// one stays. Read and written in one transaction.
pub async fn update(scope: &UserScope, id: u64, pre: Precondition, input: NoteInput) -> Result<Row<Note>> {
    // The date is checked before the transaction so its error names the field.
    if let Some(d) = input.date.as_deref().filter(|d| !d.trim().is_empty()) {
        instant("date", d)?;
    }
    Ok(scope
        .write_async(move |tx| {
            if let Some(contact) = input.contact_id {
                tx.get::<Contact>(contact)?;
            }
            let input = input.clone();
            tx.update::<Note>(id, pre, move |current| {
                let next = input
                    .note(input.contact_id, current.date)
                    .map_err(|e| mycorrhizal_engine::Invalid::new("date", e.to_string()))?;
                *current = next;
                Ok(())
            })
        })
        .await?)
}

/// One page of notes.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotePage {
    pub notes: Vec<NoteView>,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
    /// Only for the unassigned notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
}

/// A page of contact `contact`'s notes (`None`: the unassigned ones, with their total).
pub fn page(view: &UserView, contact: Option<u64>, f: &DatedFilter) -> Result<NotePage> {
    if let Some(id) = contact {
        require_contacts(view, &[id])?;
    }
    let contact = contact.unwrap_or(0);
    let (lo, hi) = date_range(f.from_date.as_deref(), f.to_date.as_deref())?;
    let after = f.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let from = format!("{contact:020}{lo:020}");
    let to = if hi == i64::MAX { format!("{:020}", contact + 1) } else { format!("{contact:020}{hi:020}") };
    let needle = f.search.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let walk = Walk {
        index: BY_CONTACT,
        from: &from,
        to: Some(&to),
        after: after.as_ref().map(|(v, id)| (v.as_str(), *id)),
        descending: !f.ascending,
    };
    let keep = |r: &Row<Note>| needle.as_ref().is_none_or(|n| r.body.content.to_lowercase().contains(n));
    let found = view.walk::<Note>(walk, f.limit, keep)?;
    let total = if contact == 0 {
        Some(view.walk::<Note>(Walk { after: None, ..walk }, usize::MAX, keep)?.rows.len())
    } else {
        None
    };
    Ok(NotePage {
        notes: found.rows.iter().map(NoteView::of).collect(),
        next_cursor: found.next.as_ref().map(|(v, id)| encode_cursor(v, *id)).unwrap_or_default(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit: f.limit,
        total,
    })
}

/// Note `id`.
pub fn get(view: &UserView, id: u64) -> Result<Row<Note>> {
    view.get::<Note>(id).map_err(Error::from)
}

/// The newest `limit` notes of a contact.
pub fn of_contact(v: &UserView, contact: u64, limit: usize) -> Result<Vec<NoteView>> {
    let (from, to) = crate::crm::records::contact_range(contact);
    let page = v.walk::<Note>(
        Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true },
        limit,
        |_| true,
    )?;
    Ok(page.rows.iter().map(NoteView::of).collect())
}

/// Removes note `id` when `pre` holds.
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    crate::crm::records::delete::<Note>(scope, id, pre).await
}
