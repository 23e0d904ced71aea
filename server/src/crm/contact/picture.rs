//! Contact pictures: which images are kept (JPEG, PNG, GIF or WebP, recognised by content, at
//! most [`MAX_PHOTO`]), how a contact's picture is stored, read and replaced, and where pictures
//! of earlier versions are moved from. Receiving the bytes (a multipart upload, a fetched URL, a
//! card's inline photo) is the callers' business; the rules are here.
//!
//! Pictures live in the database as the user's blobs, named by the contact's `photo` field,
//! written in the transaction that names them (see `TxUser::put_blob`): a contact never names a
//! missing picture, deleting a contact removes its picture in the same commit, and backups
//! (snapshots) carry them.
//!
//! Earlier versions kept them as files under `DATA_DIR/users/<id>/photos/`. [`LEGACY_FILES`] moves
//! such files into the database when the data folder is opened, once.

use mycorrhizal_engine::{Precondition, Row, TxUser, UserScope};

use crate::crm::Error;
use crate::crm::contact::Contact;
use crate::crm::legacy_files::{Legacy, Named};

/// The largest picture kept, in bytes.
pub const MAX_PHOTO: usize = 10 * 1024 * 1024;

/// The image type of `bytes` by its signature, as (media type, file extension); SVG and
/// everything else is refused.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    match bytes {
        [0xFF, 0xD8, 0xFF, ..] => Some(("image/jpeg", "jpg")),
        [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, ..] => Some(("image/png", "png")),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some(("image/gif", "gif")),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some(("image/webp", "webp")),
        _ => None,
    }
}

/// Whether `bytes` are a picture we keep: an image type [`sniff`] knows, at most [`MAX_PHOTO`].
pub fn keeps(bytes: &[u8]) -> bool {
    bytes.len() <= MAX_PHOTO && sniff(bytes).is_some()
}

/// Makes `bytes` contact `id`'s picture and returns the contact. The picture is named by the
/// contact (`<id>.<ext>`, the name clients know); the bytes and the name land in one commit, and
/// a picture the contact had under another name (an imported one) is removed in the same commit.
/// Bytes past [`MAX_PHOTO`] or of no image type kept are the `photo` field's [`Error::Invalid`].
pub async fn store<B>(scope: &UserScope, id: u64, bytes: B) -> crate::crm::Result<Row<Contact>>
where
    B: AsRef<[u8]> + Send + Sync + 'static,
{
    if bytes.as_ref().len() > MAX_PHOTO {
        return Err(Error::invalid("photo", "must be at most 10 MB"));
    }
    sniff(bytes.as_ref()).ok_or_else(|| Error::invalid("photo", "must be a JPEG, PNG, GIF or WebP image"))?;
    let bytes = std::sync::Arc::new(bytes);
    let row = scope.write_async(move |tx| put_in(tx, id, (*bytes).as_ref())).await?;
    Ok(row)
}

/// [`store`] inside the caller's write transaction, for bytes the caller checked with
/// [`keeps`] (a card created with its photo stores both in one commit). Bytes that are not a
/// picture we keep change nothing.
pub fn put_in(tx: &TxUser<'_, '_>, id: u64, bytes: &[u8]) -> mycorrhizal_engine::Result<Row<Contact>> {
    let Some((_, ext)) = sniff(bytes).filter(|_| bytes.len() <= MAX_PHOTO) else { return tx.get::<Contact>(id) };
    let name = format!("{id}.{ext}");
    tx.put_blob(&name, bytes)?;
    let mut previous = String::new();
    let row = tx.update::<Contact>(id, Precondition::Any, |c| {
        previous = std::mem::replace(&mut c.photo, name.clone());
        Ok(())
    })?;
    if !previous.is_empty() && previous != name {
        tx.delete_blob(&previous)?;
    }
    Ok(row)
}

/// What an edit does to the contact's picture when the picture rides in the contact's own update
/// (a CardDAV PUT whose card carries, changes or drops its photo): one commit, one revision.
#[derive(Debug, Clone)]
pub enum PictureChange {
    /// The picture stays as stored.
    Keep,
    /// These bytes become the picture (checked with [`keeps`]; other bytes change nothing).
    Set(std::sync::Arc<Vec<u8>>),
    /// The contact has no picture any more.
    Clear,
}

impl PictureChange {
    /// The picture name contact `id` gets, or `None` when it keeps its own.
    pub fn name(&self, id: u64) -> Option<String> {
        match self {
            PictureChange::Keep => None,
            PictureChange::Set(bytes) => {
                sniff(bytes).filter(|_| bytes.len() <= MAX_PHOTO).map(|(_, ext)| format!("{id}.{ext}"))
            }
            PictureChange::Clear => Some(String::new()),
        }
    }

    /// After the update that renamed the picture from `previous` to `current`, inside its
    /// transaction: writes the new bytes and removes the blob no contact names any more.
    pub fn store(&self, tx: &TxUser<'_, '_>, previous: &str, current: &str) -> mycorrhizal_engine::Result<()> {
        if let PictureChange::Set(bytes) = self
            && !current.is_empty()
        {
            tx.put_blob(current, bytes)?;
        }
        if !previous.is_empty() && previous != current {
            tx.delete_blob(previous)?;
        }
        Ok(())
    }
}

/// Contact `id`'s picture as (media type, bytes); `None` when it has none, or none we can serve.
/// A contact that does not exist is the engine's `NotFound`.
pub fn read(scope: &UserScope, id: u64) -> mycorrhizal_engine::Result<Option<(&'static str, Vec<u8>)>> {
    let view = scope.view()?;
    let row = view.get::<Contact>(id)?;
    if row.body.photo.is_empty() {
        return Ok(None);
    }
    let Some(bytes) = view.blob(&row.body.photo)? else { return Ok(None) };
    Ok(sniff(&bytes).map(|(mime, _)| (mime, bytes)))
}

/// Picture files earlier versions kept (`DATA_DIR/users/<user>/photos/<name>`): a file a
/// contact names is its picture's blob, if it is an image ([`crate::crm::legacy_files`]).
pub const LEGACY_FILES: Legacy = Legacy {
    folder: "photos",
    named: |view| {
        let contacts = view.list::<Contact>()?;
        let named = contacts.into_iter().map(|row| row.body.photo).filter(|p| !p.is_empty());
        Ok(named.map(|photo| (photo.clone(), Named { blob: photo, sha256: None })).collect())
    },
    keeps: |bytes| sniff(bytes).is_some(),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crm::legacy_files::{Adopted, adopt};
    use mycorrhizal_engine::{Engine, UserId};

    #[test]
    fn images_are_recognised_by_content() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]).map(|s| s.0), Some("image/jpeg"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest").map(|s| s.0), Some("image/png"));
        assert_eq!(sniff(b"GIF89a...").map(|s| s.0), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 ").map(|s| s.0), Some("image/webp"));
        assert_eq!(sniff(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), None);
        assert_eq!(sniff(b""), None);
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

    fn contact_with_photo(engine: &Engine, user: u64, photo: &str) -> u64 {
        let mut contact = crate::crm::import::new_contact(
            serde_json::from_value(serde_json::json!({ "card": { "name": { "full": "Ada Lovelace" } } }))
                .expect("record"),
            false,
        )
        .expect("contact")
        .0;
        contact.photo = photo.to_string();
        engine.user(UserId(user)).create(contact).expect("create").id
    }

    /// Files a contact names move into the database and leave the disk; files nobody names and
    /// partial writes are removed; another user's contact naming the same file name gets nothing
    /// of this user's; a second run finds nothing to do.
    #[test]
    fn picture_files_of_earlier_versions_move_into_the_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = mycorrhizal_engine::Engine::open(dir.path().join("db.redb"), Default::default()).expect("open").0;
        let id = contact_with_photo(&engine, 1, "7.png");
        contact_with_photo(&engine, 2, "7.png");
        let photos = dir.path().join("users").join("1").join("photos");
        std::fs::create_dir_all(&photos).expect("mkdir");
        std::fs::write(photos.join("7.png"), PNG).expect("write");
        std::fs::write(photos.join("orphan.png"), PNG).expect("write");
        std::fs::write(photos.join(".x.png.partial"), b"half").expect("write");
        std::fs::create_dir_all(dir.path().join("users").join("not-a-user")).expect("mkdir");

        let adopted = adopt(&engine, dir.path(), &LEGACY_FILES).expect("adopt");
        assert_eq!(adopted, Adopted { moved: 1, removed: 2 });
        let view = engine.user(UserId(1)).view().expect("view");
        assert_eq!(view.blob("7.png").expect("blob").as_deref(), Some(PNG));
        assert_eq!(view.get::<Contact>(id).expect("contact").body.photo, "7.png");
        assert_eq!(view.blob("orphan.png").expect("blob"), None);
        assert_eq!(engine.user(UserId(2)).view().expect("view").blob("7.png").expect("blob"), None);
        assert!(!photos.exists(), "the emptied folder goes");
        assert_eq!(adopt(&engine, dir.path(), &LEGACY_FILES).expect("again"), Adopted::default());
    }
}
