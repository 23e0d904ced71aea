//! Attachments: files kept with a contact (at most [`MAX_ATTACHMENT`] each, within a per-user
//! quota). The bytes are the user's blob `attachment-<id>` ([`blob_name`]), written in the
//! transaction that creates the row with their digest: a row never names missing bytes, deleting
//! the row or its contact removes them in the same commit, a user's purge takes them, and
//! snapshots (backups) carry them. They are read back only when they still match the digest.
//! Not here: multipart parsing and response headers (the front door's).
//!
//! Earlier versions kept the bytes as files under `DATA_DIR/users/<user>/attachments/<id>`;
//! [`LEGACY_FILES`] says how such files move into the database when the data folder is opened.

use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::crm::attachment::Attachment;
use crate::crm::contact::Contact;
use crate::crm::contact::ops::require_contacts;
use crate::crm::legacy_files::{Legacy, Named};
use crate::crm::records::BY_CONTACT;
use crate::crm::{Error, Result};

/// The largest attachment.
pub const MAX_ATTACHMENT: usize = 25 * 1024 * 1024;

/// Content types a browser may show inline; everything else downloads.
pub const INLINE: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf", "text/plain"];

/// An attachment as clients read it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttachmentView {
    pub id: u64,
    pub contact_id: u64,
    pub contact_vcard_uid: String,
    pub original_name: String,
    pub content_type: String,
    pub size_bytes: u64,
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String)]
    pub updated_at: jiff::Timestamp,
}

impl AttachmentView {
    pub fn of(row: &Row<Attachment>, uid: &str) -> AttachmentView {
        AttachmentView {
            id: row.id,
            contact_id: row.body.contact_id,
            contact_vcard_uid: uid.to_string(),
            original_name: row.body.original_name.clone(),
            content_type: row.body.content_type.clone(),
            size_bytes: row.body.size_bytes,
            created_at: row.meta.created_at,
            updated_at: row.meta.updated_at,
        }
    }
}

/// A file name safe to echo in a header: no path, quotes or control characters.
pub fn clean_name(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base.chars().filter(|c| !c.is_control() && *c != '"').take(255).collect();
    if cleaned.trim().is_empty() { "attachment".into() } else { cleaned }
}

/// A file to keep with a contact.
pub struct NewFile {
    pub name: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

pub use crate::crm::attachment::blob_name;

/// Bytes attachment rows of this user already account for (live rows only).
pub fn used_bytes(view: &UserView) -> Result<u64> {
    Ok(view.list::<Attachment>()?.iter().map(|a| a.body.size_bytes).sum())
}

/// `{attachment}`: a file stored.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttachmentStored {
    pub attachment: AttachmentView,
}

/// `{total, attachments}`: a contact's files.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AttachmentList {
    pub total: usize,
    pub attachments: Vec<AttachmentView>,
}

/// Keeps `file` with contact `contact`: checks its size and the user's `quota`, then writes the
/// row and its bytes in one commit. Blocking: call it off the async threads.
pub fn store(scope: &UserScope, contact: u64, file: NewFile, quota: u64) -> Result<AttachmentView> {
    if file.bytes.len() > MAX_ATTACHMENT {
        return Err(Error::invalid("file", "must be at most 25 MB"));
    }
    let view = scope.view()?;
    let uid = view.get::<Contact>(contact)?.body.uid;
    let used = used_bytes(&view)?;
    drop(view);
    if used + file.bytes.len() as u64 > quota {
        return Err(Error::invalid(
            "file",
            format!("would exceed your attachment quota of {} MB", quota / 1024 / 1024),
        ));
    }
    let record = Attachment {
        contact_id: contact,
        original_name: clean_name(&file.name),
        content_type: file.content_type.to_ascii_lowercase(),
        size_bytes: file.bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&file.bytes)),
    };
    let bytes = file.bytes;
    let row = scope.write(move |tx| {
        tx.get::<Contact>(contact)?;
        let row = tx.create(record.clone())?;
        tx.put_blob(&blob_name(row.id), &bytes)?;
        Ok(row)
    })?;
    Ok(AttachmentView::of(&row, &uid))
}

/// Contact `contact`'s attachments, oldest first.
pub fn list(v: &UserView, contact: u64) -> Result<Vec<AttachmentView>> {
    require_contacts(v, &[contact])?;
    let uid = v.get::<Contact>(contact)?.body.uid;
    let (from, to) = (format!("{contact:020}"), format!("{:020}", contact + 1));
    let walk = Walk { index: BY_CONTACT, from: &from, to: Some(&to), after: None, descending: false };
    Ok(v.walk::<Attachment>(walk, usize::MAX, |_| true)?.rows.iter().map(|r| AttachmentView::of(r, &uid)).collect())
}

/// Attachment `id` and its bytes, which must still match the recorded digest. Blocking.
pub fn read(scope: &UserScope, id: u64) -> Result<(Row<Attachment>, Vec<u8>)> {
    let view = scope.view()?;
    let row = view.get::<Attachment>(id)?;
    let bytes = bytes_of(&view, &row)?;
    Ok((row, bytes))
}

/// The bytes of attachment `row`, in `view`, checked against its digest.
pub fn bytes_of(view: &UserView, row: &Row<Attachment>) -> Result<Vec<u8>> {
    let id = row.id;
    let bytes =
        view.blob(&blob_name(id))?.ok_or_else(|| Error::internal(format!("attachment {id} has no stored bytes")))?;
    if hex::encode(Sha256::digest(&bytes)) != row.body.sha256 {
        return Err(Error::internal(format!("attachment {id} does not match its recorded digest")));
    }
    Ok(bytes)
}

/// Deletes attachment `id` and its bytes, in one commit.
pub async fn delete(scope: &UserScope, id: u64) -> Result<()> {
    scope
        .write_async(move |tx| {
            tx.delete::<Attachment>(id, Precondition::Any)?;
            tx.delete_blob(&blob_name(id))?;
            Ok(())
        })
        .await?;
    Ok(())
}

/// Attachment files earlier versions kept (`DATA_DIR/users/<user>/attachments/<id>`): a file
/// is the blob of the live attachment row with its id ([`crate::crm::legacy_files`]).
pub const LEGACY_FILES: Legacy = Legacy {
    folder: "attachments",
    named: |view| {
        let rows = view.list::<Attachment>()?;
        Ok(rows
            .into_iter()
            .map(|row| (row.id.to_string(), Named { blob: blob_name(row.id), sha256: Some(row.body.sha256) }))
            .collect())
    },
    keeps: |_| true,
};
