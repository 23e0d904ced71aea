//! The operations that change contacts, each one function every front door calls: create, edit
//! (the merge of an input over the stored contact, applied inside the write transaction so a
//! concurrent change such as a picture upload is never overwritten), delete with its cascade,
//! and the archive/favourite toggles.

use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::projection::{FlatInput, apply_flat};
use mycorrhizal_engine::{Invalid, Precondition, Prepared, Row, TxUser, UserScope, UserView};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Contact;
use crate::crm::contact::picture::PictureChange;
use crate::crm::{Error, Result, kinds};

/// The body of create and update: a card (with optional `crm` and `passthrough`), or flat fields
/// only (`firstname`, `lastname`, `email`, `phone`, `birthday`, ...), which map into the card.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ContactInput {
    pub gender: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub card: Option<Value>,
    /// A card a front door has read already (a CardDAV PUT's vCard), taken instead of `card`
    /// without a round trip through a JSON value. Never part of a request body.
    #[serde(skip)]
    pub typed_card: Option<Card>,
    /// The vCard text a CardDAV PUT carried and the revision the contact will have once it is
    /// stored ([`Contact::dav_card`]). Never part of a request body; any other write leaves it
    /// out, and the contact's card is then written from the contact.
    #[serde(skip)]
    pub dav_card: Option<(String, u64)>,
    #[schema(value_type = Option<Object>)]
    pub crm: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub passthrough: Option<Value>,
    pub is_favorite: Option<bool>,
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub flat: FlatInput,
}

fn parse_card(value: Value) -> std::result::Result<Card, Invalid> {
    serde_path_to_error::deserialize::<_, Card>(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "card".to_string() } else { format!("card.{path}") };
        Invalid::new(field, e.inner().to_string())
    })
}

/// [`object`] for the passthrough: the resource name a CardDAV client created the card under
/// ([`super::DAV_NAME`]) is kept when a new passthrough leaves it out, so an edit elsewhere never
/// moves the card under the client that made it.
fn passthrough_object(value: Option<Value>, existing: Option<&str>) -> std::result::Result<String, Invalid> {
    match (value, existing.and_then(super::dav_name_in)) {
        (Some(Value::Object(mut members)), Some(name)) if !members.contains_key(super::DAV_NAME) => {
            members.insert(super::DAV_NAME.into(), Value::String(name));
            Ok(Value::Object(members).to_string())
        }
        (value, _) => object("passthrough", value, existing),
    }
}

fn object(field: &str, value: Option<Value>, existing: Option<&str>) -> std::result::Result<String, Invalid> {
    match value {
        Some(v @ Value::Object(_)) => Ok(v.to_string()),
        Some(Value::Null) | None => Ok(existing.unwrap_or("{}").to_string()),
        Some(_) => Err(Invalid::new(field, "must be a JSON object")),
    }
}

/// [`object`] for the CRM envelope: custom field values (`fields`), which change through their
/// own route, are kept when a new envelope leaves them out (a client that knows nothing of them).
fn crm_object(value: Option<Value>, existing: Option<&str>) -> std::result::Result<String, Invalid> {
    let key = crate::crm::field::CRM_FIELDS;
    match value {
        Some(Value::Object(mut crm)) if !crm.contains_key(key) => {
            let kept = existing.map(super::field_values).unwrap_or_default();
            if !kept.is_empty() {
                crm.insert(key.into(), Value::Object(kept));
            }
            Ok(Value::Object(crm).to_string())
        }
        other => object("crm", other, existing),
    }
}

fn valid_uuid(text: &str) -> Option<String> {
    let text = text.trim().trim_start_matches("urn:uuid:").to_lowercase();
    uuid::Uuid::parse_str(&text).ok().map(|u| u.to_string())
}

impl ContactInput {
    /// The stored contact this input makes, over `existing` for an edit. A new card replaces the
    /// old one whole; flat fields apply onto whichever card results; what the input leaves out
    /// (picture, archive flag, uid) is kept.
    pub fn apply(self, existing: Option<&Contact>) -> std::result::Result<Contact, Invalid> {
        self.apply_parsed(existing).map(|(contact, _)| contact)
    }

    /// [`ContactInput::apply`], with the card the contact's text was written from (so preparing
    /// it need not read the text again: [`Contact::prepare_parsed`]).
    pub fn apply_parsed(self, existing: Option<&Contact>) -> std::result::Result<(Contact, Card), Invalid> {
        let mut card = match (self.typed_card, self.card) {
            (Some(card), _) => card,
            (None, Some(value)) => parse_card(value)?,
            (None, None) => existing.map(Contact::parsed_card).unwrap_or_default(),
        };
        let legacy = apply_flat(&mut card, &self.flat).map_err(|e| Invalid::new(e.field, e.reason))?;
        let uid = existing
            .map(|c| c.uid.clone())
            .or_else(|| card.uid.as_deref().and_then(valid_uuid))
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        card.uid = Some(uid.clone());
        card.validate().map_err(|e| Invalid::new(e.field, e.reason))?;
        let legacy_birthday = match legacy {
            Some(text) => text,
            None if self.flat.birthday.is_empty() => existing.map(|c| c.legacy_birthday.clone()).unwrap_or_default(),
            None => String::new(),
        };
        let (dav_card, dav_revision) = self.dav_card.unwrap_or_default();
        let contact = Contact {
            dav_card,
            dav_revision,
            uid,
            card: serde_json::to_string(&card).map_err(|e| Invalid::new("card", e.to_string()))?,
            crm: crm_object(self.crm, existing.map(|c| c.crm.as_str()))?,
            passthrough: passthrough_object(self.passthrough, existing.map(|c| c.passthrough.as_str()))?,
            gender: self.gender.or_else(|| existing.map(|c| c.gender.clone())).unwrap_or_default(),
            archived: existing.is_some_and(|c| c.archived),
            favorite: self.is_favorite.unwrap_or(existing.is_some_and(|c| c.favorite)),
            photo: existing.map(|c| c.photo.clone()).unwrap_or_default(),
            legacy_birthday,
            flat: Default::default(),
            circles: Vec::new(),
            tags: Vec::new(),
        };
        Ok((contact, card))
    }
}

/// Creates a contact from `input` (409 material: a card UID the user already has).
///
/// The contact is prepared here, on the caller's thread (its derived columns from the card in
/// hand, its validation and the audit trail's field list), so the single writer only stores it:
/// under bulk writes (a phone's first CardDAV sync of thousands of cards) the writer is the one
/// serial stage, and this work used to run in it for every card.
pub async fn create(scope: &UserScope, input: ContactInput) -> Result<Row<Contact>> {
    create_then(scope, input, |_, row| Ok(row)).await
}

/// [`create`], then `then` on the new row in the same transaction (a card's picture stored with
/// the contact: one commit, one revision's worth of writer time, not two).
pub async fn create_then(
    scope: &UserScope,
    input: ContactInput,
    then: impl Fn(&TxUser<'_, '_>, Row<Contact>) -> mycorrhizal_engine::Result<Row<Contact>> + Send + 'static,
) -> Result<Row<Contact>> {
    create_prepared_then(scope, prepare_create(input)?, then).await
}

/// [`create`]'s first half, which needs no transaction: the contact `input` makes, validated,
/// with its derived columns and audit list (for a caller already off the async threads, such
/// as a CardDAV PUT that read its card there).
pub fn prepare_create(input: ContactInput) -> Result<Prepared<Contact>> {
    let (contact, card) = input.apply_parsed(None)?;
    Ok(Prepared::with(contact, |c| c.prepare_parsed(card))?)
}

/// [`create_then`]'s second half: stores a contact from [`prepare_create`], then `then` on the
/// new row in the same transaction.
pub async fn create_prepared_then(
    scope: &UserScope,
    prepared: Prepared<Contact>,
    then: impl Fn(&TxUser<'_, '_>, Row<Contact>) -> mycorrhizal_engine::Result<Row<Contact>> + Send + 'static,
) -> Result<Row<Contact>> {
    Ok(scope
        .write_async(move |tx| {
            let row = tx.create_prepared(prepared.clone())?;
            then(tx, row)
        })
        .await?)
}

/// Applies `input` over the stored contact `id`, read and written in one write transaction:
/// nothing committed between the read and the write (a picture upload, a toggle) is lost.
pub async fn update(scope: &UserScope, id: u64, pre: Precondition, input: ContactInput) -> Result<Row<Contact>> {
    update_with_picture(scope, id, pre, input, PictureChange::Keep).await
}

/// [`update`] with a change of the contact's picture in the same update: one transaction and
/// one revision under `pre`, so a sync client never sees the new card with the old picture.
pub async fn update_with_picture(
    scope: &UserScope,
    id: u64,
    pre: Precondition,
    input: ContactInput,
    picture: PictureChange,
) -> Result<Row<Contact>> {
    Ok(scope
        .write_async(move |tx| {
            let (input, name) = (input.clone(), picture.name(id));
            let mut previous = String::new();
            let row = tx.update::<Contact>(id, pre, |current| {
                let mut next = input.apply(Some(current))?;
                if let Some(name) = &name {
                    previous = std::mem::replace(&mut next.photo, name.clone());
                }
                *current = next;
                Ok(())
            })?;
            if name.is_some() {
                picture.store(tx, &previous, &row.body.photo)?;
            }
            Ok(row)
        })
        .await?)
}

/// Which flag a toggle sets.
#[derive(Debug, Clone, Copy)]
pub enum Flag {
    Archived,
    Favorite,
}

/// Sets or clears the archived or favourite flag.
pub async fn set_flag(scope: &UserScope, id: u64, flag: Flag, on: bool) -> Result<Row<Contact>> {
    Ok(scope
        .write_async(move |tx| {
            tx.update::<Contact>(id, Precondition::Any, |c| {
                match flag {
                    Flag::Archived => c.archived = on,
                    Flag::Favorite => c.favorite = on,
                }
                Ok(())
            })
        })
        .await?)
}

/// Soft-deletes a contact (its tombstone stays for sync) and, in the same transaction, its
/// picture, its attachments' bytes and everything that hangs off it (see
/// [`kinds::cascade_contact`]).
pub async fn delete(scope: &UserScope, id: u64, pre: Precondition) -> Result<()> {
    scope.write_async(move |tx| delete_in(tx, id, pre)).await?;
    Ok(())
}

pub(crate) fn delete_in(tx: &TxUser<'_, '_>, id: u64, pre: Precondition) -> mycorrhizal_engine::Result<()> {
    let picture = tx.get::<Contact>(id)?.body.photo;
    tx.delete::<Contact>(id, pre)?;
    if !picture.is_empty() {
        tx.delete_blob(&picture)?;
    }
    kinds::cascade_contact(tx, id)
}

/// The ids a request names must all be this user's live contacts.
pub fn require_contacts(view: &UserView, ids: &[u64]) -> Result<()> {
    for id in ids {
        view.get::<Contact>(*id).map_err(|_| Error::NotFound)?;
    }
    Ok(())
}

/// What [`rebuild_derived`] did for one user.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rebuilt {
    pub scanned: u64,
    pub updated: u64,
}

/// Whether the contact's derived columns differ from what this build's save hook computes from
/// its card (the row needs rewriting).
pub fn derived_stale(contact: &Contact) -> bool {
    let mut fresh = contact.clone();
    mycorrhizal_engine::Record::save_hook(&mut fresh);
    fresh.flat != contact.flat || fresh.circles != contact.circles || fresh.tags != contact.tags
}

/// Recomputes the user's contacts' derived columns from their cards (the save hook), writing only
/// the rows whose projection changed, 500 to a transaction; a second run changes nothing.
pub async fn rebuild_derived(scope: &UserScope) -> Result<Rebuilt> {
    let reader = scope.clone();
    let rows = tokio::task::spawn_blocking(move || reader.list::<Contact>()).await.map_err(Error::internal)??;
    let scanned = rows.len() as u64;
    let stale: Vec<u64> = rows.into_iter().filter(|row| derived_stale(&row.body)).map(|row| row.id).collect();
    let updated = rewrite_derived(scope, stale).await?;
    Ok(Rebuilt { scanned, updated })
}

/// Rewrites the contacts `ids` (found stale by [`derived_stale`], e.g. while a restore read its
/// backup), so their derived columns are recomputed, 500 to a transaction; returns how many.
pub async fn rewrite_derived(scope: &UserScope, stale: Vec<u64>) -> Result<u64> {
    for chunk in stale.chunks(500) {
        let ids = chunk.to_vec();
        scope
            .write_async(move |tx| {
                for id in &ids {
                    tx.update::<Contact>(*id, Precondition::Any, |_| Ok(()))?;
                }
                Ok(())
            })
            .await?;
    }
    Ok(stale.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: serde_json::Value) -> ContactInput {
        serde_json::from_value(json).expect("input")
    }

    #[test]
    fn a_legacy_birthday_stays_until_a_write_names_the_birthday() {
        let stored = input(serde_json::json!({ "firstname": "Bea" })).apply(None).expect("contact");
        let legacy = Contact { legacy_birthday: "sometime in May".into(), ..stored };
        let edited =
            input(serde_json::json!({ "firstname": "Bea", "lastname": "Arthur" })).apply(Some(&legacy)).expect("edit");
        assert_eq!(edited.legacy_birthday, "sometime in May", "an edit that does not name it keeps it");
        let refused = input(serde_json::json!({ "birthday": "sometime in June" })).apply(Some(&legacy));
        assert_eq!(refused.err().map(|e| e.field), Some("birthday".to_string()), "a new one must have the shape");
        let replaced = input(serde_json::json!({ "birthday": "--05-01" })).apply(Some(&legacy)).expect("edit");
        assert_eq!(replaced.legacy_birthday, "");
    }
}
