//! Attachments: files kept with a contact (at most [`MAX_ATTACHMENT`] each, within a per-user
//! quota), the bytes in `DATA_DIR/users/<user>/attachments/<id>` (fsynced before the answer) and
//! the row with their digest in the database; read back only when the bytes still match, and
//! removed from disk with the row or the contact. Not here: multipart parsing and response
//! headers (the front door's).

use std::path::{Path, PathBuf};

use mycorrhizal_engine::{Precondition, Row, UserScope, UserView, Walk};
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::contact::Contact;
use super::contact::ops::require_contacts;
use super::depth::Attachment;
use super::records::BY_CONTACT;
use super::{Error, Result};

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

fn file_of(dir: &Path, id: u64) -> PathBuf {
    dir.join(id.to_string())
}

/// Keeps `file` with contact `contact`: checks its size and the user's `quota`, writes the row,
/// then the bytes (fsynced); if the bytes cannot be stored the row is taken back. Blocking: call
/// it off the async threads.
pub fn store(scope: &UserScope, dir: &Path, contact: u64, file: NewFile, quota: u64) -> Result<AttachmentView> {
    if file.bytes.len() > MAX_ATTACHMENT {
        return Err(Error::invalid("file", "must be at most 25 MB"));
    }
    let view = scope.view()?;
    let uid = view.get::<Contact>(contact)?.body.uid;
    let used: u64 = view.list::<Attachment>()?.iter().map(|a| a.body.size_bytes).sum();
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
    let row = scope.write(move |tx| tx.get::<Contact>(contact).and_then(|_| tx.create(record.clone())))?;
    let written =
        std::fs::create_dir_all(dir).and_then(|_| crate::ops::fs::write_whole(dir, &row.id.to_string(), &file.bytes));
    if let Err(e) = written {
        // The row without its bytes would be a lie: take it back.
        let id = row.id;
        let _ = scope.write(move |tx| tx.delete::<Attachment>(id, Precondition::Any));
        return Err(Error::internal(e));
    }
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
pub fn read(scope: &UserScope, dir: &Path, id: u64) -> Result<(Row<Attachment>, Vec<u8>)> {
    let row = scope.get::<Attachment>(id)?;
    let bytes = std::fs::read(file_of(dir, id)).map_err(|_| Error::NotFound)?;
    if hex::encode(Sha256::digest(&bytes)) != row.body.sha256 {
        return Err(Error::internal(format!("attachment {id} does not match its recorded digest")));
    }
    Ok((row, bytes))
}

/// Deletes attachment `id`, then its bytes.
pub async fn delete(scope: &UserScope, dir: &Path, id: u64) -> Result<()> {
    scope.write_async(move |tx| tx.delete::<Attachment>(id, Precondition::Any)).await?;
    // A file already gone is fine: the row was what counted.
    let _ = std::fs::remove_file(file_of(dir, id));
    Ok(())
}
