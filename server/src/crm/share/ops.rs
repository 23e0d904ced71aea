//! The operations on contact shares every front door shares: create (the copy cut to the
//! chosen sections, both sides in one transaction), the incoming and outgoing lists, accept
//! (the copy opened as an import preview bound to the share), confirm (that preview applied,
//! then the share accepted on both sides) and decline. Who the other user is (that the account
//! exists, its name) is the caller's to check: accounts are not CRM data.

use std::sync::Arc;

use mycorrhizal_codecs::record::PASSTHROUGH_VCARD_PROPS;
use mycorrhizal_engine::{Engine, Precondition, Row, UPDATED_INDEX, UserId, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::{BY_OTHER, BY_SHARE, ContactShare, PAYLOAD_MAX, PENDING_PER_SENDER};
use crate::crm::contact::{Contact, named};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::export::{Selection, record_of};
use crate::crm::field::{self, FieldDefinition};
use crate::crm::import::{self, CardFile, Categories, Decision, ImportError, ImportResult, Sessions, Source, Stage};
use crate::crm::{Error, Result};

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ShareInput {
    /// The recipient's account id (from `/users/directory`).
    #[serde(default)]
    #[schema(required = true, minimum = 1, maximum = 9223372036854775807_u64)]
    pub to_user_id: u64,
    /// The contact to share: its vCard UID (or `contact_id`).
    pub vcard_uid: Option<String>,
    #[schema(maximum = 9223372036854775807_u64)]
    pub contact_id: Option<u64>,
    /// The card sections the copy holds (at least one): `emails, phones, addresses,
    /// organizations, anniversaries, media, online_services, links, notes, keywords,
    /// related_to, personal_info, speak_to_as, members, languages, custom_fields`. The name is
    /// always included.
    #[serde(default)]
    #[schema(required = true, min_items = 1)]
    pub sections: Vec<String>,
    /// Also the values of private and secret custom fields (with `custom_fields`).
    #[serde(default)]
    pub include_sensitive: bool,
}

/// A share as either side sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ShareView {
    /// The share's id (a UUID), the same for both users.
    pub id: String,
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String)]
    pub updated_at: jiff::Timestamp,
    pub from_user_id: u64,
    pub to_user_id: u64,
    /// The contact's name when it was shared.
    pub contact_display_name: String,
    /// `pending`, `accepted` or `declined`.
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub responded_at: String,
    pub sections: Vec<String>,
    pub include_sensitive: bool,
    /// The sender's side only: the contact shared (while it exists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_id: Option<u64>,
}

impl ShareView {
    pub fn of(me: u64, row: &Row<ContactShare>) -> ShareView {
        let s = &row.body;
        let (from_user_id, to_user_id) = if s.incoming { (s.other_user, me) } else { (me, s.other_user) };
        ShareView {
            id: s.share.clone(),
            created_at: row.meta.created_at,
            updated_at: row.meta.updated_at,
            from_user_id,
            to_user_id,
            contact_display_name: s.contact_display_name.clone(),
            status: s.status.clone(),
            responded_at: s.responded_at.clone(),
            sections: s.sections.clone(),
            include_sensitive: s.include_sensitive,
            contact_id: (!s.incoming && s.contact_id != 0).then_some(s.contact_id),
        }
    }
}

/// A page of one direction's shares, oldest change first (or newest, `order=desc`).
#[derive(Debug, Clone, Serialize)]
pub struct SharePage {
    pub shares: Vec<Row<ContactShare>>,
    pub total: u64,
    pub next_cursor: String,
}

/// The copy of contact `contact` the recipient gets: the chosen sections of its card (its
/// name always), its kind, and the custom fields that go into vCards (with `include_sensitive`,
/// the private and secret ones too); never the sender's circles or anything else of theirs.
fn copy_of(v: &UserView, contact: &Row<Contact>, selection: &Selection, include_sensitive: bool) -> Result<String> {
    let picture = match selection.keeps("media") && !contact.body.photo.is_empty() {
        true => v.blob(&contact.body.photo)?,
        false => None,
    };
    let mut record = record_of(contact, picture, selection);
    let kind = record.crm.get("kind").cloned();
    record.crm = Map::new();
    if let Some(kind) = kind {
        record.crm.insert("kind".into(), kind);
    }
    if include_sensitive && selection.keeps("custom_fields") {
        let values = crate::crm::contact::field_values(&contact.body.crm);
        let mut props: Vec<Value> =
            record.passthrough.get(PASSTHROUGH_VCARD_PROPS).and_then(Value::as_array).cloned().unwrap_or_default();
        for d in field::definitions(v)?.iter().map(|r| &r.body).filter(|d: &&FieldDefinition| !d.projected()) {
            if let (Some(property), Some(value)) = (d.vcard_property(), values.get(&d.key)) {
                let text = field::as_text(value);
                if !text.is_empty() {
                    props.push(
                        json!({ "name": property.to_lowercase(), "params": {}, "type": "unknown", "value": text }),
                    );
                }
            }
        }
        if !props.is_empty() {
            record.passthrough.insert(PASSTHROUGH_VCARD_PROPS.into(), Value::Array(props));
        }
    }
    let card = mycorrhizal_codecs::jscontact::from_neutral(&record);
    Ok(Value::Array(vec![card]).to_string())
}

/// Shares a contact of `from` with user `to` (an account the caller has checked exists): the
/// copy is made now, and both sides are written in one transaction. The sender's side.
pub async fn create(engine: &Engine, from: UserId, to: UserId, input: ShareInput) -> Result<Row<ContactShare>> {
    let chosen: Vec<String> =
        input.sections.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect::<Vec<_>>();
    let scope = engine.user(from);
    let include_sensitive = input.include_sensitive;
    let sections = chosen.join(",");
    // The contact first: whose it is decides whether anything else is worth saying.
    let (contact_id, name, payload) = tokio::task::spawn_blocking(move || -> Result<(u64, String, String)> {
        let v = scope.view()?;
        let id = match (input.vcard_uid.as_deref().map(str::trim).filter(|u| !u.is_empty()), input.contact_id) {
            (_, Some(id)) => named(&v, &id.to_string()),
            (Some(uid), None) => named(&v, uid),
            (None, None) => return Err(Error::invalid("vcard_uid", "is required: the contact's vCard UID")),
        }
        .ok_or(Error::NotFound)?;
        if to == from {
            return Err(Error::invalid("to_user_id", "cannot share a contact with yourself"));
        }
        if sections.is_empty() {
            return Err(Error::invalid("sections", "name at least one section"));
        }
        let selection = Selection::parse(Some(&sections)).map_err(|e| match e {
            crate::crm::export::ExportError::Invalid { field, reason } => Error::invalid(field, reason),
            other => Error::internal(other),
        })?;
        let contact = v.get::<Contact>(id)?;
        let payload = copy_of(&v, &contact, &selection, include_sensitive)?;
        if payload.len() > PAYLOAD_MAX {
            return Err(Error::invalid("sections", "the copy is larger than 12 MB: leave out media (the photo)"));
        }
        Ok((id, contact.body.name(), payload))
    })
    .await
    .map_err(Error::internal)??;
    let share = uuid::Uuid::new_v4().to_string();
    let side = |incoming: bool| ContactShare {
        share: share.clone(),
        incoming,
        other_user: if incoming { from.0 } else { to.0 },
        contact_display_name: name.clone(),
        contact_id: if incoming { 0 } else { contact_id },
        sections: chosen.clone(),
        include_sensitive,
        status: "pending".into(),
        responded_at: String::new(),
        copy: if incoming { ContactShare::copy_name(&share) } else { String::new() },
    };
    let (outgoing, incoming) = (side(false), side(true));
    let outcome = engine
        .write_async(move |tx| {
            let recipient = tx.user(to);
            if recipient.find::<ContactShare>(BY_OTHER, &format!("{}:pending", from.0))?.len() >= PENDING_PER_SENDER {
                return Ok(Err(Error::Conflict(format!(
                    "{PENDING_PER_SENDER} of your shares wait for this user's answer: wait until they answer some"
                ))));
            }
            recipient.put_blob(&incoming.copy, payload.as_bytes())?;
            recipient.create(incoming.clone())?;
            tx.user(from).create(outgoing.clone()).map(Ok)
        })
        .await?;
    outcome
}

/// The user's side of share `id` (its public id).
pub fn side(v: &UserView, id: &str) -> Result<Row<ContactShare>> {
    let id = id.trim().to_lowercase();
    let found = v.find::<ContactShare>(BY_SHARE, &id)?;
    Ok(v.get::<ContactShare>(*found.first().ok_or(Error::NotFound)?)?)
}

/// A page of the shares the user received (`incoming`) or sent, by last change.
pub fn list(v: &UserView, incoming: bool, cursor: Option<&str>, limit: usize, ascending: bool) -> Result<SharePage> {
    let after = cursor.filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let walk = Walk {
        index: UPDATED_INDEX,
        from: "",
        to: None,
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending: !ascending,
    };
    let page = v.walk::<ContactShare>(walk, limit, |r| r.body.incoming == incoming)?;
    let mut total = 0;
    let all = Walk { index: UPDATED_INDEX, from: "", to: None, after: None, descending: false };
    v.walk::<ContactShare>(all, usize::MAX, |r| {
        total += u64::from(r.body.incoming == incoming);
        false
    })?;
    Ok(SharePage {
        shares: page.rows,
        total,
        next_cursor: page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default(),
    })
}

/// The recipient's pending side of share `id`, or why it cannot be answered.
fn pending(v: &UserView, id: &str) -> Result<Row<ContactShare>> {
    let row = side(v, id)?;
    if !row.body.incoming {
        return Err(Error::NotFound);
    }
    if row.body.status != "pending" {
        return Err(Error::Conflict("the share has already been answered".into()));
    }
    Ok(row)
}

/// Opens the copy of pending share `id` as an import preview (duplicates against the
/// recipient's contacts, the merge diff of an update) bound to the share; each call opens a new
/// one. The preview's JSON goes to `out`, as [`import::preview_rows`] writes it. Blocking.
pub fn accept(
    sessions: &Sessions,
    scope: &UserScope,
    id: &str,
    out: impl std::io::Write,
) -> std::result::Result<import::Previewed, ShareError> {
    let (row, payload) = scope
        .view()
        .map_err(Error::from)
        .and_then(|v| {
            let row = pending(&v, id)?;
            let payload = v.blob(&row.body.copy)?.ok_or_else(|| Error::internal("the share's copy is missing"))?;
            Ok((row, payload))
        })
        .map_err(ShareError::Share)?;
    let previewed =
        import::preview_cards(sessions, scope, CardFile::JsContact, &payload, Categories::default(), 1, out)
            .map_err(ShareError::Import)?;
    sessions
        .with(scope.id(), &previewed.session_id, |s| {
            // Only the share's confirm takes it: the import endpoints refuse a share's source.
            s.source = Source::Share;
            s.bound = Some(row.body.share.clone());
            Ok(())
        })
        .map_err(|e| ShareError::Import(e.into()))?;
    Ok(previewed)
}

/// Why answering a share failed: the share's state, or the import's.
#[derive(Debug)]
pub enum ShareError {
    Share(Error),
    Import(ImportError),
}

/// Applies the recipient's decisions on a preview `accept` opened for share `id`, then marks
/// the share accepted on both sides. A repeated confirm answers the first result.
pub async fn confirm(
    engine: &Engine,
    sessions: Arc<Sessions>,
    scope: UserScope,
    id: &str,
    session_id: String,
    decisions: &[Decision],
    bulk: Option<import::Bulk>,
    batch: usize,
) -> std::result::Result<ImportResult, ShareError> {
    let row = scope.view().map_err(|e| ShareError::Share(e.into())).and_then(|v| {
        side(&v, id).map_err(ShareError::Share).and_then(|r| match r.body.incoming {
            true => Ok(r),
            false => Err(ShareError::Share(Error::NotFound)),
        })
    })?;
    let bound = sessions.with(scope.id(), &session_id, |s| Ok(s.bound.clone())).ok().flatten();
    if bound.as_deref() != Some(row.body.share.as_str()) {
        return Err(ShareError::Share(Error::invalid(
            "session_id",
            "is not a preview of this share (accept it again)",
        )));
    }
    let done = sessions.with(scope.id(), &session_id, |s| Ok(matches!(s.stage, Stage::Done(_)))).unwrap_or(false);
    if row.body.status != "pending" {
        // Only a repeat of the confirm that answered it gets an answer: that result again.
        if !done || row.body.status != "accepted" {
            return Err(ShareError::Share(Error::Conflict("the share has already been answered".into())));
        }
        return import::confirm(sessions, scope, session_id, decisions, bulk, &[Source::Share], batch)
            .await
            .map_err(ShareError::Import);
    }
    // One confirm or decline of a share at a time (this process is the only server).
    let _claim = Claim::take(&row.body.share).ok_or_else(|| {
        ShareError::Share(Error::Conflict("the share is being answered: try again in a moment".into()))
    })?;
    // Another answer may have ended just before the claim: what holds is the share as it is now.
    let now = scope.view().map_err(|e| ShareError::Share(e.into()))?;
    if side(&now, id).map_err(ShareError::Share)?.body.status != "pending" {
        return Err(ShareError::Share(Error::Conflict("the share has already been answered".into())));
    }
    let result = import::confirm(sessions, scope.clone(), session_id, decisions, bulk, &[Source::Share], batch)
        .await
        .map_err(ShareError::Import)?;
    // Accepted once the copy is in the book; a confirm that added nothing (every row skipped, or
    // failed) leaves the share waiting, to review again or decline.
    if result.created + result.updated > 0 && !done {
        answer(engine, scope.id(), &row.body.share, "accepted").await.map_err(ShareError::Share)?;
    }
    Ok(result)
}

/// Declines pending share `id`: nothing is imported, and the sender sees the answer.
pub async fn decline(engine: &Engine, scope: &UserScope, id: &str) -> Result<()> {
    let share = pending(&scope.view()?, id)?.body.share;
    let _claim = Claim::take(&share)
        .ok_or_else(|| Error::Conflict("the share is being answered: try again in a moment".into()))?;
    answer(engine, scope.id(), &share, "declined").await
}

/// The shares being answered now, by public id: a confirm and a decline (or two confirms of
/// two previews) of one share never run at once.
static CLAIMED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

struct Claim(String);

impl Claim {
    fn take(share: &str) -> Option<Claim> {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
        if claimed.iter().any(|s| s == share) {
            return None;
        }
        claimed.push(share.to_string());
        Some(Claim(share.to_string()))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        CLAIMED.lock().unwrap_or_else(|p| p.into_inner()).retain(|s| s != &self.0);
    }
}

/// Sets the status of both sides of `share` (the recipient's `me`), in one transaction; the
/// sender's side may be gone with their account.
async fn answer(engine: &Engine, me: UserId, share: &str, status: &'static str) -> Result<()> {
    let share = share.to_string();
    let outcome = engine
        .write_async(move |tx| {
            let now = tx.now().to_string();
            let mine = tx.user(me);
            let Some(id) = mine.find::<ContactShare>(BY_SHARE, &share)?.first().copied() else {
                return Ok(Err(Error::NotFound));
            };
            let row = mine.get::<ContactShare>(id)?;
            if row.body.status != "pending" {
                return Ok(Err(Error::Conflict("the share has already been answered".into())));
            }
            let set = |s: &mut ContactShare| {
                s.status = status.into();
                s.responded_at = now.clone();
                Ok(())
            };
            mine.update::<ContactShare>(id, Precondition::Any, set)?;
            // The copy is not needed once answered: what was accepted is in the book now.
            mine.delete_blob(&row.body.copy)?;
            let sender = tx.user(UserId(row.body.other_user));
            if let Some(theirs) = sender.find::<ContactShare>(BY_SHARE, &share)?.first().copied() {
                sender.update::<ContactShare>(theirs, Precondition::Any, set)?;
            }
            Ok(Ok(()))
        })
        .await?;
    outcome
}
