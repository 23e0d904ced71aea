//! An imported card's inline photo: kept with its row when it is a picture we keep (the rules are
//! `crm::contact::picture`), and, when the row is written, named afresh and stored as the user's blob in
//! the transaction that gives it to a contact. Where a contact's own picture comes from
//! otherwise (an upload) is `crm::contact::picture`.

use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::vcard::Photo;

use crate::crm::contact::picture as pictures;

/// Takes a card's inline photo off it: the photo when it is a picture we keep, else `None` with
/// a diagnostic saying it was left out.
pub fn inline_photo(card: &mut Card, diagnostics: &mut Vec<String>) -> Option<Photo> {
    let photo = mycorrhizal_codecs::vcard::take_photo(card)?;
    if pictures::keeps(&photo.bytes) {
        Some(photo)
    } else {
        diagnostics.push("the inline photo is not a JPEG, PNG, GIF or WebP of at most 10 MB; left out".into());
        None
    }
}

/// A picture an op brings: the name a contact will know it by (fresh, so it never replaces a
/// picture another contact names) and its bytes, stored as the user's blob in the transaction
/// that gives it to a contact, and only then.
#[derive(Debug, Clone)]
pub struct Picture {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Picture {
    /// The picture of an imported photo, named by a fresh UUID and the image type; `None` when
    /// the bytes are not an image we keep (the preview checked them already). The UUID is
    /// time-ordered (v7), so an import's pictures are appended to the blob table in key order
    /// rather than scattered over it.
    pub fn of(photo: Photo) -> Option<Picture> {
        let (_, ext) = pictures::sniff(&photo.bytes)?;
        Some(Picture { name: format!("{}.{ext}", uuid::Uuid::now_v7().simple()), bytes: photo.bytes })
    }
}
