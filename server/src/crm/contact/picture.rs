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
//! Earlier versions kept them as files under `DATA_DIR/users/<id>/photos/`. [`adopt_files`] moves
//! such files into the database when the data folder is opened, once.

use std::collections::HashSet;
use std::path::Path;

use mycorrhizal_engine::{Engine, Precondition, Row, TxUser, UserId, UserScope};

use crate::crm::Error;
use crate::crm::contact::Contact;

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
        if let PictureChange::Set(bytes) = self {
            if !current.is_empty() {
                tx.put_blob(current, bytes)?;
            }
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

/// Bytes of pictures moved per transaction: memory stays bounded whatever the folder holds.
const ADOPT_BYTES_PER_COMMIT: usize = 32 * 1024 * 1024;

/// What [`adopt_files`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Adopted {
    /// Picture files moved into the database.
    pub moved: usize,
    /// Files no contact named (left by an interrupted write or a failed removal): removed.
    pub removed: usize,
}

/// Moves each user's picture files into the database, then removes them and, once empty, their
/// folder. A file is moved only when a contact of that user names it and it is an image we keep;
/// a file is removed from disk only after the transaction holding its bytes committed, so an
/// interruption at any point loses nothing (the next start moves what is left).
pub fn adopt_files(engine: &Engine, data_dir: &Path) -> mycorrhizal_engine::Result<Adopted> {
    let mut adopted = Adopted::default();
    let Ok(users) = std::fs::read_dir(data_dir.join("users")) else { return Ok(adopted) };
    for entry in users.flatten() {
        let Some(user) = entry.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else { continue };
        let dir = entry.path().join("photos");
        let Ok(files) = std::fs::read_dir(&dir) else { continue };
        let scope = engine.user(UserId(user));
        let named: HashSet<String> =
            scope.view()?.list::<Contact>()?.into_iter().map(|row| row.body.photo).filter(|p| !p.is_empty()).collect();
        let mut pending: Vec<(String, Vec<u8>)> = Vec::new();
        let mut pending_bytes = 0;
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            // A named file that cannot be read now stays for the next start; only a file no
            // contact names, or one that is not an image, is removed.
            let bytes = match named.contains(&name).then(|| std::fs::read(file.path())) {
                Some(Ok(bytes)) => Some(bytes).filter(|b| sniff(b).is_some()),
                Some(Err(e)) => {
                    tracing::warn!(event = "picture_unreadable", user, file = %name, error = %e);
                    continue;
                }
                None => None,
            };
            let Some(bytes) = bytes else {
                if std::fs::remove_file(file.path()).is_ok() {
                    adopted.removed += 1;
                }
                continue;
            };
            pending_bytes += bytes.len();
            pending.push((name, bytes));
            if pending_bytes >= ADOPT_BYTES_PER_COMMIT {
                adopted.moved += commit(engine, user, &dir, std::mem::take(&mut pending))?;
                pending_bytes = 0;
            }
        }
        adopted.moved += commit(engine, user, &dir, pending)?;
        // Only an empty folder goes.
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(adopted)
}

/// Stores one user's pictures in one transaction, then removes their files.
fn commit(
    engine: &Engine,
    user: u64,
    dir: &Path,
    pictures: Vec<(String, Vec<u8>)>,
) -> mycorrhizal_engine::Result<usize> {
    if pictures.is_empty() {
        return Ok(0);
    }
    let pictures = std::sync::Arc::new(pictures);
    let stored = std::sync::Arc::clone(&pictures);
    engine.user(UserId(user)).write(move |tx| {
        for (name, bytes) in stored.iter() {
            tx.put_blob(name, bytes)?;
        }
        Ok(())
    })?;
    for (name, _) in pictures.iter() {
        let _ = std::fs::remove_file(dir.join(name));
    }
    Ok(pictures.len())
}

#[cfg(test)]
mod tests {
    use super::*;

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

        let adopted = adopt_files(&engine, dir.path()).expect("adopt");
        assert_eq!(adopted, Adopted { moved: 1, removed: 2 });
        let view = engine.user(UserId(1)).view().expect("view");
        assert_eq!(view.blob("7.png").expect("blob").as_deref(), Some(PNG));
        assert_eq!(view.get::<Contact>(id).expect("contact").body.photo, "7.png");
        assert_eq!(view.blob("orphan.png").expect("blob"), None);
        assert_eq!(engine.user(UserId(2)).view().expect("view").blob("7.png").expect("blob"), None);
        assert!(!photos.exists(), "the emptied folder goes");
        assert_eq!(adopt_files(&engine, dir.path()).expect("again"), Adopted::default());
    }
}
