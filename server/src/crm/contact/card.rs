//! A contact as a vCard resource of its owner's address book (what CardDAV serves): the name it
//! is served under, finding a contact by that name, the card it reads as (the export's record,
//! photo inline), and a card that arrives under a name becoming a contact through the same
//! operations as the JSON API (`contact::ops` create, update and delete, the picture in the same write), so
//! validation, the audit log and the change feed are theirs. No HTTP here: the DAV front door
//! maps the domain's [`Error`] to statuses and preconditions.
//!
//! Names: a contact is served as `<name>.vcf`, where the name is the card's own UID when that is
//! a safe path segment (letters, digits, `_ . - +`, the set vdirsyncer uses) and maps to the
//! stored UID, else the stored UID. So the resource a client PUT under its card's UID (every
//! client we know of does: DAVx5, iOS, Thunderbird, Evolution, vdirsyncer) keeps its exact name,
//! case included. A client that PUTs a new card under a name unrelated to its UID gets a contact
//! whose stored UID derives from the name (the card's UID is kept for export), so the name still
//! finds it.

use std::sync::Arc;

use mycorrhizal_codecs::record::{Item, NeutralRecord};
use mycorrhizal_codecs::vcard::{self, Photo, Version};
use mycorrhizal_engine::{Lookup, Precondition, Prepared, Row, UserScope, UserView};
use serde_json::{Map, Value};

use crate::crm::contact::ops::{self, ContactInput};
use crate::crm::contact::{Contact, ContactHead, DAV_NAME, INDEX_UID, dav_name_in};
use crate::crm::export::json_record_of;
use crate::crm::import::{ORIGINAL_UID_POINTER, hashed_uid, stable_uid, stable_uid_of};
use crate::crm::{Error, Result, contact::picture as pictures};

/// Whether `name` is served as it is: a non-empty path segment of letters, digits and `_.-+`.
fn href_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'+'))
}

/// Whether a client may create a card under `name` (decoded, without `.vcf`): any text of 1 to
/// 255 bytes but `.` and `..` (a space, `@`, non-ASCII letters, even a newline: it is encoded on
/// the way out).
fn name_allowed(name: &str) -> bool {
    !name.is_empty() && name.len() <= 255 && name != "." && name != ".."
}

/// The stored UID a card UID (or a resource name) maps to (the import's rule).
fn stored_uid(uid: &str) -> String {
    stable_uid_of(uid).unwrap_or_else(|| {
        stable_uid(&mycorrhizal_codecs::card::Card { uid: Some(uid.to_string()), ..Default::default() })
    })
}

/// Whether a card of UID `original` is the one stored under `uid`: its UID's usual mapping, or,
/// for a UUID-shaped UID that another card held in another case, its exact text hashed.
fn maps_to(original: &str, uid: &str) -> bool {
    stored_uid(original) == uid || (is_uuid(original) && hashed_uid(original) == uid)
}

fn is_uuid(text: &str) -> bool {
    uuid::Uuid::parse_str(text.trim().trim_start_matches("urn:uuid:")).is_ok()
}

/// The card's own UID, kept when the stored one had to differ.
fn original_uid(contact: &Contact) -> Option<String> {
    original_uid_in(&contact.passthrough)
}

/// The key the original UID is kept under, quoted as serde_json writes it.
const ORIGINAL_UID_KEY: &str = "\"/uid\"";

/// Of a stored passthrough (a JSON object), only the original UID: the string member
/// [`ORIGINAL_UID_POINTER`] of the object member `jsContactProps`, read without building the
/// rest (every other member is skipped). What is not an object there reads as no UID, as it did
/// when the whole text was parsed.
struct PassthroughUid(Option<String>);

/// `jsContactProps` of [`PassthroughUid`].
struct PropsUid(Option<String>);

/// Reads a JSON object's members, `wanted` by name (the last of equal names wins, as in a
/// parsed object), every other one skipped.
fn members<'de, M: serde::de::MapAccess<'de>, T: serde::Deserialize<'de>>(
    mut map: M,
    wanted: &str,
) -> std::result::Result<Option<T>, M::Error> {
    let mut found = None;
    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
        if key == wanted {
            found = Some(map.next_value::<T>()?);
        } else {
            map.next_value::<serde::de::IgnoredAny>()?;
        }
    }
    Ok(found)
}

impl<'de> serde::Deserialize<'de> for PassthroughUid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = PassthroughUid;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> std::result::Result<Self::Value, M::Error> {
                let props: Option<PropsUid> = members(map, "jsContactProps")?;
                Ok(PassthroughUid(props.and_then(|p| p.0)))
            }
        }
        d.deserialize_map(Visit)
    }
}

impl<'de> serde::Deserialize<'de> for PropsUid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = PropsUid;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> std::result::Result<Self::Value, M::Error> {
                let uid: Option<Option<String>> = members(map, ORIGINAL_UID_POINTER)?;
                Ok(PropsUid(uid.flatten()))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// [`original_uid`] of a stored passthrough text.
fn original_uid_in(passthrough: &str) -> Option<String> {
    // The passthrough is stored as serde_json writes it (keys unescaped), so a text without the
    // pointer's key holds no original UID: most contacts, found without parsing their JSON (a
    // multiget of 1,000 cards asks this once per card, a listing once per contact). A card whose
    // UID is not a UUID (`bench-00001`) keeps it there, and is read for that member alone.
    if !passthrough.contains(ORIGINAL_UID_KEY) {
        return None;
    }
    serde_json::from_str::<PassthroughUid>(passthrough).ok()?.0
}

/// The name contact `contact` is served under (without `.vcf`).
pub fn name_of(contact: &Contact) -> String {
    served_name(&contact.uid, &contact.passthrough)
}

/// [`name_of`] a contact read as its head (a listing of the whole book).
pub fn head_name(head: &ContactHead) -> String {
    served_name(&head.uid, &head.passthrough)
}

fn served_name(uid: &str, passthrough: &str) -> String {
    if let Some(name) = dav_name_in(passthrough) {
        return name;
    }
    usual_name(uid, passthrough)
}

/// The name a contact is served under when no client chose one ([`DAV_NAME`]).
fn usual_name(uid: &str, passthrough: &str) -> String {
    match original_uid_in(passthrough) {
        Some(original) if href_safe(&original) && maps_to(&original, uid) => original,
        _ => uid.to_string(),
    }
}

/// The live contact served under `name`, if any: one index lookup, so the cost does not grow
/// with the address book.
pub fn find(view: &UserView, name: &str) -> Result<Option<Row<Contact>>> {
    find_in(&view.lookup()?, name)
}

/// [`find`] in a [`Lookup`] of contacts, for many names.
fn find_in(contacts: &Lookup<'_, Contact>, name: &str) -> Result<Option<Row<Contact>>> {
    if name.is_empty() {
        return Ok(None);
    }
    let stored = stored_uid(name);
    for id in contacts.find(INDEX_UID, &stored)? {
        let row = contacts.get(id)?;
        if served_as(&row.body.uid, &row.body.passthrough, name, &stored) {
            return Ok(Some(row));
        }
    }
    // A UUID-shaped name another card holds in another case: stored under its exact text.
    if is_uuid(name) {
        let hashed = hashed_uid(name);
        for id in contacts.find(INDEX_UID, &hashed)? {
            let row = contacts.get(id)?;
            if served_as(&row.body.uid, &row.body.passthrough, name, &hashed) {
                return Ok(Some(row));
            }
        }
    }
    Ok(None)
}

/// Whether the contact of stored UID `uid` and passthrough `passthrough` is served under `name`,
/// whose stored UID is `stored`: [`served_name`]` == name`, without hashing `name` again. A
/// multiget asks it of every href, and a name that is not a UUID (`bench-00001`) is hashed
/// (UUID v5) to find its stored UID: the lookup has done that once already.
fn served_as(uid: &str, passthrough: &str, name: &str, stored: &str) -> bool {
    if let Some(chosen) = dav_name_in(passthrough) {
        return chosen == name;
    }
    match original_uid_in(passthrough) {
        // Served under its original UID (`name`) when that maps to the stored one, else under
        // the stored UID.
        Some(original) if original == name => (href_safe(name) && stored == uid) || uid == name,
        // Served under another name, or under the stored UID when the original does not map
        // to it: only the second can be `name`.
        Some(original) => uid == name && !(href_safe(&original) && maps_to(&original, uid)),
        None => uid == name,
    }
}

/// The card of `row` as it leaves the server, in `version`, its picture inline when `view` is
/// given (an address-data request); `None` when it cannot be written (logged by the caller).
pub fn card_text(view: Option<&UserView>, row: &Row<Contact>, version: Version) -> Result<String> {
    let picture = match view {
        Some(view) if !row.body.photo.is_empty() => view.blob(&row.body.photo)?,
        _ => None,
    };
    write_card(row, picture, version)
}

/// The card of `row` in `version` with `picture` inline: the export's record (see
/// [`record_of`](crate::crm::export::record_of), which puts a picture of a known type in as a
/// `data:` URI) with its card as the stored JSON reads ([`json_record_of`]), the picture's
/// bytes spliced into the written text by `vcard::write_json_with_photo` (the same text,
/// without the picture's bytes encoded, decoded and encoded again).
fn write_card(row: &Row<Contact>, picture: Option<Vec<u8>>, version: Version) -> Result<String> {
    if let Some(text) = as_written(row, version) {
        return Ok(text.to_string());
    }
    let photo = picture.and_then(|bytes| vcard::sniff(&bytes).map(|t| Photo { media_type: t.to_string(), bytes }));
    vcard::write_json_with_photo(json_record_of(row), photo.as_ref(), version).map_err(Error::internal)
}

/// The card a CardDAV client wrote for `row`, when it still is the contact's own text (nothing
/// has changed the contact since: its revision is the one the text was stored at) and it is in
/// `version`.
fn as_written(row: &Row<Contact>, version: Version) -> Option<&str> {
    let c = &row.body;
    let current = !c.dav_card.is_empty() && c.dav_revision == row.meta.revision && c.photo.is_empty();
    (current && text_version(&c.dav_card) == Some(version)).then_some(c.dav_card.as_str())
}

/// The card of `row` in `version`, its picture read from `view` and inline.
fn card_with_picture(view: &UserView, row: &Row<Contact>, version: Version) -> Result<String> {
    let picture = match row.body.photo.as_str() {
        "" => None,
        name => view.blob(name)?,
    };
    write_card(row, picture, version)
}

/// [`card_text`] of each of `rows`, pictures inline: the cards of an address-data answer (a
/// query, a first sync). Each card is handed to `then` with its position in `rows` on the
/// thread that wrote it, so what the caller makes of a card (its part of the answer) is shared
/// out too, and what `then` made is handed to `emit`, in order, on the calling thread (until it
/// answers `false`). The cards are written on up to one thread per core from `view` (the
/// request's one read transaction), since writing them is most of such an answer's time.
pub fn card_texts<T: Send>(
    view: &UserView,
    rows: &[&Row<Contact>],
    version: Version,
    then: &(dyn Fn(usize, Result<String>) -> T + Sync),
    emit: &mut dyn FnMut(T) -> bool,
) {
    crate::cpu_pool::across_cores(rows, |at, row| then(at, card_with_picture(view, row, version)), emit);
}

/// A contact found by [`named_cards`]: the name it was asked and found by, its row, and its
/// card when one was asked for (`Err` when it could not be written, for the caller to log).
pub struct Named<'a> {
    pub name: &'a str,
    pub row: &'a Row<Contact>,
    pub card: Option<Result<String>>,
}

/// Each of `names` looked up in `view` ([`find`]; `None` for a name that is not in the book)
/// and handed to `then` with its position and, when `version` is given, its card in that
/// version (picture inline): an addressbook-multiget of 1,000 hrefs. The lookups, the cards
/// and what `then` makes of them all run on up to one thread per core from the request's one
/// read transaction; what `then` made is handed to `emit`, in order, on the calling thread
/// (until it answers `false`). A failed lookup stops it and is the answer.
pub fn named_cards<T: Send>(
    view: &UserView,
    names: &[Option<String>],
    version: Option<Version>,
    then: &(dyn Fn(usize, Option<Named<'_>>) -> T + Sync),
    emit: &mut dyn FnMut(T) -> bool,
) -> Result<()> {
    let contacts = view.lookup::<Contact>()?;
    let each = |at: usize, name: &Option<String>| -> Result<T> {
        let Some(name) = name else { return Ok(then(at, None)) };
        let Some(row) = find_in(&contacts, name)? else { return Ok(then(at, None)) };
        let card = version.map(|version| card_with_picture(view, &row, version));
        Ok(then(at, Some(Named { name, row: &row, card })))
    };
    let mut failed = None;
    crate::cpu_pool::across_cores(names, each, &mut |answer| match answer {
        Ok(answer) => emit(answer),
        Err(e) => {
            failed = Some(e);
            false
        }
    });
    failed.map_or(Ok(()), Err)
}

/// A card that arrived in a request body: its record and its inline photo (taken off the card;
/// it is stored as the contact's picture). A photo the picture store does not take (a type it
/// does not know, such as HEIC or BMP, or one past `pictures::MAX_PHOTO`) stays in the card as
/// the client sent it, so the card reads back with it; the request body's own limit (the book's
/// `max-resource-size`) bounds it.
#[derive(Debug, Clone)]
pub struct Incoming {
    record: NeutralRecord,
    photo: Option<Photo>,
    /// The card's text, when it can be served back as it came ([`verbatim_of`]).
    verbatim: Option<String>,
}

/// The most a card's own text may be to be kept whole beside the contact.
const MAX_VERBATIM: usize = 256 * 1024;

/// `bytes` as a card to keep and serve back as it came: UTF-8, one vCard of version 3.0 or 4.0,
/// no larger than [`MAX_VERBATIM`], and no control character but tab and line ends (a served
/// card never carries one). A card whose picture is stored apart is not kept (`photo`).
fn verbatim_of(bytes: &[u8], photo: bool) -> Option<String> {
    if photo || bytes.len() > MAX_VERBATIM {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    if text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\r' | '\n')) {
        return None;
    }
    text_version(text).map(|_| text.to_string())
}

/// The version a card's text says it is (3.0 or 4.0).
fn text_version(text: &str) -> Option<Version> {
    let line = text.lines().find(|l| l.trim().to_ascii_uppercase().starts_with("VERSION:"))?;
    Version::parse(line.trim()[8..].trim())
}

/// Reads a request body that must hold exactly one vCard; `Err` says why not (the client's
/// `valid-address-data` precondition).
pub fn parse(bytes: &[u8]) -> Result<Incoming> {
    let mut items = vcard::parse_file(bytes);
    if items.len() != 1 {
        return Err(Error::Unreadable(format!("the body must hold exactly one vCard (it holds {})", items.len())));
    }
    match items.remove(0) {
        Item::Problem(p) => Err(Error::Unreadable(p.reason)),
        Item::Record { record, .. } => {
            let mut record = *record;
            let media = record.card.extra.get("media").cloned();
            let photo = match vcard::take_photo(&mut record.card) {
                Some(photo) if pictures::keeps(&photo.bytes) => Some(photo),
                Some(_) => {
                    // Back as it came (its media entry untouched).
                    if let Some(media) = media {
                        record.card.extra.insert("media".into(), media);
                    }
                    None
                }
                None => None,
            };
            let verbatim = verbatim_of(bytes, photo.is_some());
            Ok(Incoming { record, photo, verbatim })
        }
    }
}

/// What a PUT may require of the resource it replaces.
#[derive(Debug, Clone, Copy, Default)]
pub struct PutCondition {
    /// `If-Match`: the resource must exist (and have this revision, unless `Any`).
    pub if_match: Option<Precondition>,
    /// `If-None-Match: *`: the resource must not exist.
    pub if_none_match: bool,
}

/// What a PUT does, decided off the async threads from one read view.
enum Plan {
    /// An edit of contact `id` and what it does to its picture.
    Update { id: u64, pre: Precondition, input: ContactInput, picture: pictures::PictureChange },
    /// A new contact, prepared, with its picture; `stored` is its stored UID.
    Create { prepared: Prepared<Contact>, picture: Option<Arc<Vec<u8>>>, stored: String },
}

/// Stores the card in `body` as the contact served under `name`: an update of the contact found
/// there (through `ops::update`, inside its write transaction), else a new contact (`ops::create`'s
/// two halves); then its picture. Returns the stored row and whether it was created. A body
/// that is not one vCard is [`Error::Unreadable`]; a UID another card holds is
/// [`Error::UidConflict`]; an `If-Match` or `If-None-Match` that does not hold is
/// [`Error::PreconditionFailed`] (a stale revision, the engine's `Conflict`).
///
/// Everything before the write (reading the card, finding the contact, preparing a new one) is
/// one task, so a PUT crosses threads once before the writer, not once per step: under a phone's
/// first sync the writer's batches are as large as the PUTs that reach it in time. The task runs
/// on the request CPU pool ([`crate::cpu_pool`]), below the writer: a writer kept waiting for a
/// core holds up every PUT of its batch.
pub async fn put(
    scope: &UserScope,
    name: &str,
    body: impl AsRef<[u8]> + Send + 'static,
    condition: PutCondition,
) -> Result<(Row<Contact>, bool)> {
    let reader = scope.clone();
    let wanted = name.to_string();
    let plan = crate::cpu_pool::run(move || plan_put(&reader, &wanted, body.as_ref(), condition))
        .await
        .map_err(Error::internal)??;
    match plan {
        Plan::Update { id, pre, input, picture } => {
            Ok((ops::update_with_picture(scope, id, pre, input, picture).await?, false))
        }
        Plan::Create { prepared, picture, stored } => {
            // The picture is stored in the contact's own commit.
            let created = ops::create_prepared_then(scope, prepared, move |tx, row| match &picture {
                Some(bytes) => pictures::put_in(tx, row.id, bytes),
                None => Ok(row),
            });
            match created.await {
                Ok(row) => Ok((row, true)),
                Err(Error::Engine(mycorrhizal_engine::Error::Duplicate { .. })) => {
                    let reader = scope.clone();
                    let holder = tokio::task::spawn_blocking(move || -> Result<Option<String>> {
                        let view = reader.view()?;
                        let id = view.find::<Contact>(INDEX_UID, &stored)?.first().copied();
                        Ok(id.map(|id| view.get::<Contact>(id)).transpose()?.map(|row| name_of(&row.body)))
                    })
                    .await
                    .map_err(Error::internal)??;
                    Err(Error::UidConflict { holder: holder.unwrap_or_default() })
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// [`put`]'s blocking part: the card read, the contact under `name` found, the preconditions and
/// the UID rule checked, and a new contact prepared (validated, its derived columns made).
fn plan_put(scope: &UserScope, name: &str, body: &[u8], condition: PutCondition) -> Result<Plan> {
    let Incoming { record, photo, verbatim } = parse(body)?;
    let view = scope.view()?;
    let existing = find(&view, name)?;
    match (&existing, condition) {
        (Some(_), PutCondition { if_none_match: true, .. }) => return Err(Error::PreconditionFailed),
        (None, PutCondition { if_match: Some(_), .. }) => return Err(Error::PreconditionFailed),
        _ => {}
    }
    let card_uid = record.card.uid.as_deref().map(str::trim).filter(|u| !u.is_empty()).map(str::to_string);
    match existing {
        Some(current) => {
            let original = original_uid(&current.body);
            let uid = card_uid.unwrap_or_else(|| original.clone().unwrap_or_else(|| current.body.uid.clone()));
            if stored_uid(&uid) != current.body.uid && original.as_deref() != Some(uid.as_str()) {
                return Err(Error::UidConflict { holder: name_of(&current.body) });
            }
            let chosen = dav_name_in(&current.body.passthrough);
            let mut input = input_of(record, &current.body.uid, &uid, true, chosen);
            input.dav_card = verbatim.map(|text| (text, current.meta.revision + 1));
            let pre = condition.if_match.unwrap_or(Precondition::Any);
            let picture = picture_change(&view, &current.body, photo)?;
            Ok(Plan::Update { id: current.id, pre, input, picture })
        }
        None => {
            let uid = card_uid.unwrap_or_else(|| name.to_string());
            let mut stored = if stored_uid(&uid) == stored_uid(name) { stored_uid(&uid) } else { stored_uid(name) };
            // Another card holds this UUID in another case (no card is served under `name`):
            // UIDs are case-sensitive, so this one is stored under its exact text.
            if is_uuid(&uid) && uid == name && !view.find::<Contact>(INDEX_UID, &stored)?.is_empty() {
                stored = hashed_uid(&uid);
            }
            if !name_allowed(name) {
                return Err(Error::invalid("href", "a card's name is 1 to 255 bytes, not . or .."));
            }
            let mut input = input_of(record, &stored, &uid, false, None);
            // Served under the client's name as it stands? Else that name is kept with it.
            let passthrough = input.passthrough.as_ref().map(Value::to_string).unwrap_or_default();
            if usual_name(&stored, &passthrough) != name
                && let Some(Value::Object(members)) = input.passthrough.as_mut()
            {
                members.insert(DAV_NAME.into(), Value::String(name.to_string()));
            }
            input.dav_card = verbatim.map(|text| (text, 1));
            let prepared = ops::prepare_create(input)?;
            Ok(Plan::Create { prepared, picture: photo.map(|p| Arc::new(p.bytes)), stored })
        }
    }
}

/// The operations' input for a card stored under UID `stored` whose own UID is `own`. A card
/// from a phone carries no CRM envelope or gender unless it kept ours: what it leaves out is
/// kept (an update), so a phone's edit never wipes the circles the web client set.
fn input_of(record: NeutralRecord, stored: &str, own: &str, update: bool, chosen: Option<String>) -> ContactInput {
    let NeutralRecord { mut card, crm, mut passthrough, gender } = record;
    card.uid = Some(stored.to_string());
    // A card carries no resource name of its own: the server's is kept (or none).
    passthrough.remove(DAV_NAME);
    if let Some(name) = chosen {
        passthrough.insert(DAV_NAME.into(), Value::String(name));
    }
    if own != stored {
        let props = passthrough.entry("jsContactProps").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(props) = props {
            props.insert(ORIGINAL_UID_POINTER.into(), Value::String(own.to_string()));
        }
    }
    ContactInput {
        gender: (!gender.is_empty() || !update).then_some(gender),
        // The card as read, typed: no round trip through a JSON value.
        card: None,
        typed_card: Some(card),
        dav_card: None,
        crm: (!crm.is_empty() || !update).then_some(Value::Object(crm)),
        passthrough: Some(Value::Object(passthrough)),
        is_favorite: None,
        flat: Default::default(),
    }
}

/// What a card's photo does to the stored picture: nothing when it is the picture stored (a
/// phone sends the photo with every edit), else it replaces it; a card without one removes it.
fn picture_change(view: &UserView, current: &Contact, photo: Option<Photo>) -> Result<pictures::PictureChange> {
    use pictures::PictureChange::{Clear, Keep, Set};
    Ok(match photo {
        Some(photo) if !current.photo.is_empty() && view.blob(&current.photo)?.is_some_and(|b| b == photo.bytes) => {
            Keep
        }
        Some(photo) => Set(Arc::new(photo.bytes)),
        None if current.photo.is_empty() => Keep,
        None => Clear,
    })
}

/// Deletes the contact served under `name` (`ops::delete`, with its cascade); `NotFound` when
/// there is none.
pub async fn delete(scope: &UserScope, name: &str, pre: Precondition) -> Result<()> {
    let reader = scope.clone();
    let wanted = name.to_string();
    let row = tokio::task::spawn_blocking(move || find(&reader.view()?, &wanted)).await.map_err(Error::internal)??;
    let row = row.ok_or(Error::NotFound)?;
    ops::delete(scope, row.id, pre).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_cards_own_uid_when_safe() {
        assert!(href_safe("ABCD-1234.x+y_z"));
        assert!(!href_safe("a@b"));
        assert!(!href_safe(""));
        assert!(!href_safe("urn:uuid:1"));
        let upper = "6F9619FF-8B86-D011-B42D-00C04FC964FF";
        assert_eq!(stored_uid(upper), upper.to_lowercase());
        assert_ne!(stored_uid("foo"), stored_uid("bar"));
        assert_eq!(stored_uid(" urn:uuid:6F9619FF-8B86-D011-B42D-00C04FC964FF "), upper.to_lowercase());
        assert_eq!(stored_uid(""), stable_uid(&mycorrhizal_codecs::card::Card::default()));
    }

    /// `served_as` answers what comparing `served_name` with the name does, for names and
    /// stored UIDs that match, differ, differ in case, and originals that map, do not map or
    /// are unsafe in an href.
    #[test]
    fn served_as_is_served_name_compared() {
        let upper = "6F9619FF-8B86-D011-B42D-00C04FC964FF";
        let names = ["bench-00001", "bench-00002", upper, &upper.to_lowercase(), "a@b", "x", ""];
        let mut uids: Vec<String> = names.iter().map(|n| stored_uid(n)).collect();
        uids.extend(names.iter().map(|n| n.to_string()));
        let mut passthroughs = vec![String::new(), "{}".to_string()];
        passthroughs.extend(
            names.iter().map(|n| serde_json::json!({ "jsContactProps": { ORIGINAL_UID_POINTER: n } }).to_string()),
        );
        for uid in &uids {
            for passthrough in &passthroughs {
                for name in names {
                    let stored = stored_uid(name);
                    assert_eq!(
                        served_as(uid, passthrough, name, &stored),
                        served_name(uid, passthrough) == name,
                        "uid {uid:?}, passthrough {passthrough}, name {name:?}"
                    );
                }
            }
        }
    }

    /// The original UID is read from the passthrough as parsing the whole JSON read it.
    #[test]
    fn the_original_uid_is_read_from_the_passthrough_alone() {
        assert_eq!(ORIGINAL_UID_KEY, format!("\"{ORIGINAL_UID_POINTER}\""));
        let whole = |text: &str| -> Option<String> {
            let value: Value = serde_json::from_str(text).ok()?;
            value.get("jsContactProps")?.get(ORIGINAL_UID_POINTER)?.as_str().map(str::to_string)
        };
        for text in [
            "",
            "{}",
            r#"{"jsContactProps":{"/uid":"bench-00001"}}"#,
            r#"{"vCardProps":[["x-custom-field",{},"unknown","1"]],"jsContactProps":{"/x":[1,{"/uid":"no"}],"/uid":"a\"b\u00e9"}}"#,
            r#"{"jsContactProps":{"/uid":7}}"#,
            r#"{"jsContactProps":["/uid"]}"#,
            r#"{"other":{"/uid":"nested"}}"#,
            r#"{"jsContactProps":{"/uid":null}}"#,
            r#"{"jsContactProps":{"/uid":"cut"#,
        ] {
            assert_eq!(original_uid_in(text), whole(text), "{text}");
        }
        assert_eq!(original_uid_in(r#"{"jsContactProps":{"/uid":"a\"b"}}"#).as_deref(), Some("a\"b"));
    }
}
