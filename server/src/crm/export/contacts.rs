//! Every live contact of a user, as the exports read them: a page of contacts per read
//! transaction in name order (or only the contacts with one card UID), each contact's picture
//! read on its own, and each contact's record as it leaves the server ([`record_of`]: its
//! original UID, its photo inline, only the chosen sections). What is written for each contact
//! is a [`Render`]'s business (`cards`, `csv`); streaming it is `stream`'s.

use mycorrhizal_codecs::record::{JsonRecord, NeutralRecord};
use mycorrhizal_codecs::vcard::{self, Photo};
use mycorrhizal_engine::{Row, UserScope};
use serde_json::{Map, Value};

use super::sections::Selection;
use super::stream::{Failure, Out};
use super::{Download, ExportError, download};
use crate::crm::contact::{Contact, INDEX_SORT_NAME, INDEX_UID};
use crate::crm::import::ORIGINAL_UID_POINTER;

/// Contacts read per read transaction.
pub const PAGE: usize = 200;

/// What a producer writes for each contact, and around them.
pub trait Render: Send + 'static {
    fn start(&mut self, _out: &mut dyn Out) -> bool {
        true
    }
    /// Whether the contacts' pictures are written (inline); they are read only then.
    fn photos(&self) -> bool {
        true
    }
    /// One contact: its stored row and its record as it leaves the server.
    fn contact(&mut self, row: &Row<Contact>, record: &NeutralRecord, out: &mut dyn Out) -> Result<bool, Failure>;
    fn end(&mut self, _out: &mut dyn Out) -> bool {
        true
    }
}

/// The neutral record of a stored contact as it leaves the server: its own UID (the original
/// one when the import had to replace a non-UUID UID), and its photo inline.
pub fn record_of(row: &Row<Contact>, picture: Option<Vec<u8>>, selection: &Selection) -> NeutralRecord {
    let c = &row.body;
    let mut card = c.parsed_card();
    let (uid, passthrough) = served_parts(c);
    card.uid = Some(uid);
    if let Some(bytes) = picture
        && let Some(media_type) = vcard::sniff(&bytes)
    {
        vcard::put_photo(&mut card, &Photo { media_type: media_type.to_string(), bytes });
    }
    let mut record = NeutralRecord {
        card,
        crm: serde_json::from_str(&c.crm).unwrap_or_default(),
        passthrough,
        gender: c.gender.clone(),
    };
    selection.apply(&mut record);
    record
}

/// [`record_of`] of every section with no picture, its card as the stored JSON reads
/// ([`JsonRecord`]): what the vCard writer starts from, without the stored card read into a
/// `Card` and written out again on the way (most of a CardDAV answer is writing cards).
pub fn json_record_of(row: &Row<Contact>) -> JsonRecord {
    let c = &row.body;
    let mut card: Map<String, Value> = serde_json::from_str(&c.card).unwrap_or_default();
    let (uid, passthrough) = served_parts(c);
    card.insert("uid".into(), Value::String(uid));
    JsonRecord { card, crm: serde_json::from_str(&c.crm).unwrap_or_default(), passthrough, gender: c.gender.clone() }
}

/// The UID a contact leaves the server with (the original one when the import had to replace a
/// non-UUID UID), and its passthrough less the note of that original and the CardDAV resource
/// name (server metadata).
fn served_parts(c: &Contact) -> (String, Map<String, Value>) {
    let mut passthrough: Map<String, Value> = serde_json::from_str(&c.passthrough).unwrap_or_default();
    let original = passthrough
        .get_mut("jsContactProps")
        .and_then(Value::as_object_mut)
        .and_then(|p| p.remove(ORIGINAL_UID_POINTER))
        .and_then(|v| v.as_str().map(str::to_string));
    passthrough.remove(crate::crm::contact::DAV_NAME);
    if passthrough.get("jsContactProps").and_then(Value::as_object).is_some_and(Map::is_empty) {
        passthrough.remove("jsContactProps");
    }
    (original.unwrap_or_else(|| c.uid.clone()), passthrough)
}

/// Streams every live contact (or those with the card UID `only_uid`) through `render`.
pub async fn download_contacts(
    scope: UserScope,
    only_uid: Option<String>,
    selection: Selection,
    mut render: impl Render,
    content_type: &'static str,
    filename: String,
    operation: &'static str,
) -> Result<Download, ExportError> {
    download(content_type, filename, operation, move |out| {
        produce(&scope, only_uid.as_deref(), &selection, &mut render, out)
    })
    .await
}

/// Writes every live contact through `render`, one page per read transaction, in name order.
pub fn produce(
    scope: &UserScope,
    only_uid: Option<&str>,
    selection: &Selection,
    render: &mut dyn Render,
    out: &mut dyn Out,
) -> Result<(), Failure> {
    let mut after: Option<(String, u64)> = None;
    let mut first = true;
    loop {
        let rows: Vec<Row<Contact>> = {
            let view = scope.view().map_err(Failure::database)?;
            match only_uid {
                Some(uid) => {
                    let ids = view.find::<Contact>(INDEX_UID, &uid.to_lowercase()).map_err(Failure::database)?;
                    let mut rows = Vec::new();
                    for id in ids {
                        rows.push(view.get::<Contact>(id).map_err(Failure::database)?);
                    }
                    rows
                }
                None => {
                    let page = view
                        .page::<Contact>(INDEX_SORT_NAME, after.as_ref().map(|(v, id)| (v.as_str(), *id)), PAGE, false)
                        .map_err(Failure::database)?;
                    after = page.next.clone();
                    page.rows
                }
            }
        };
        if first {
            first = false;
            if !render.start(out) {
                return Ok(());
            }
        }
        for row in &rows {
            // A picture is read when its contact is written, from a read of its own: a page's
            // pictures together could be hundreds of megabytes, and memory is to stay flat.
            let picture = if render.photos() && selection.keeps("media") && !row.body.photo.is_empty() {
                scope.view().and_then(|v| v.blob(&row.body.photo)).map_err(Failure::database)?
            } else {
                None
            };
            if !render.contact(row, &record_of(row, picture, selection), out)? {
                return Ok(());
            }
        }
        if only_uid.is_some() || after.is_none() {
            break;
        }
    }
    render.end(out);
    Ok(())
}
