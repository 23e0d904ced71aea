//! The operations on external identities and activities every front door and integration
//! shares: list (a contact's, or one system's, by last change), create, replace, delete. A row
//! names its contact by vCard UID (`entity_id`, as the existing clients do) or by id.

use jiff::Timestamp;
use mycorrhizal_engine::{Precondition, Record, Row, UPDATED_INDEX, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::{ExternalActivity, ExternalIdentity};
use crate::crm::contact::{Contact, entity, named};
use crate::crm::cursor::{SyncInfo, decode_cursor, encode_cursor};
use crate::crm::{Error, Result, Stamp};

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ExternalIdentityInput {
    /// The contact's vCard UID (or `contact_id`).
    pub entity_id: Option<String>,
    #[schema(maximum = 9223372036854775807_u64)]
    pub contact_id: Option<u64>,
    /// 1 to 64 characters: `immich`, `paperless`, `seafile`, `nextcloud`, ...
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 64)]
    pub system: String,
    /// 1 to 255 characters: the identifier inside that system.
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub external_id: String,
    /// `http` or `https`, at most 2000 characters.
    #[schema(max_length = 2000)]
    pub url: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
    /// `idle` (default), `syncing`, `synced` or `error`; left out of a replacement, kept.
    #[schema(pattern = "^(|idle|syncing|synced|error)$")]
    pub sync_status: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ExternalActivityInput {
    /// The contact's vCard UID (or `contact_id`).
    pub entity_id: Option<String>,
    #[schema(maximum = 9223372036854775807_u64)]
    pub contact_id: Option<u64>,
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 64)]
    pub source_system: String,
    #[serde(default)]
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub external_id: String,
    /// 1 to 64 characters: `photo-appearance`, ...
    #[serde(rename = "type", default)]
    #[schema(required = true, min_length = 1, max_length = 64)]
    pub kind: String,
    /// RFC 3339.
    #[serde(default)]
    #[schema(required = true, value_type = String, format = DateTime)]
    pub occurred_at: String,
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Map<String, Value>>,
    /// `external` (default) or `user`; left out of a replacement, kept.
    #[schema(pattern = "^(|external|user)$")]
    pub provenance: Option<String>,
    /// `synced` (default) or `pending`; left out of a replacement, kept.
    #[schema(pattern = "^(|synced|pending)$")]
    pub sync_state: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExternalIdentityView {
    pub id: u64,
    /// The contact's vCard UID.
    pub entity_id: String,
    pub contact_id: u64,
    pub system: String,
    pub external_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub url: String,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub sync_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub last_synced_at: Option<Timestamp>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExternalActivityView {
    pub id: u64,
    pub entity_id: String,
    pub contact_id: u64,
    pub source_system: String,
    pub external_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(value_type = String)]
    pub occurred_at: Timestamp,
    #[schema(value_type = Object)]
    pub payload: Value,
    pub provenance: String,
    pub sync_state: String,
    #[serde(flatten)]
    pub stamp: Stamp,
}

fn uid_of(v: &UserView, contact: u64) -> String {
    v.get::<Contact>(contact).map(|c| c.body.uid).unwrap_or_default()
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Map::new()))
}

impl ExternalIdentityView {
    pub fn of(v: &UserView, row: &Row<ExternalIdentity>) -> ExternalIdentityView {
        let i = &row.body;
        ExternalIdentityView {
            id: row.id,
            entity_id: uid_of(v, i.contact_id),
            contact_id: i.contact_id,
            system: i.system.clone(),
            external_id: i.external_id.clone(),
            url: i.url.clone(),
            metadata: json_of(&i.metadata),
            sync_status: i.sync_status.clone(),
            last_synced_at: i.last_synced_at,
            stamp: Stamp::of(row),
        }
    }
}

impl ExternalActivityView {
    pub fn of(v: &UserView, row: &Row<ExternalActivity>) -> ExternalActivityView {
        let a = &row.body;
        ExternalActivityView {
            id: row.id,
            entity_id: uid_of(v, a.contact_id),
            contact_id: a.contact_id,
            source_system: a.source_system.clone(),
            external_id: a.external_id.clone(),
            kind: a.kind.clone(),
            occurred_at: a.occurred_at,
            payload: json_of(&a.payload),
            provenance: a.provenance.clone(),
            sync_state: a.sync_state.clone(),
            stamp: Stamp::of(row),
        }
    }
}

/// A page of rows, `{<collection>, total, next_cursor, limit, sync}` once the door names it.
#[derive(Debug, Clone)]
pub struct Page<R> {
    pub rows: Vec<Row<R>>,
    pub total: u64,
    pub next_cursor: String,
    pub sync: SyncInfo,
}

/// What a list is asked for.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this contact's (vCard UID or id).
    pub contact: Option<String>,
    /// Only this system's.
    pub system: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
    pub ascending: bool,
}

fn list<R: Record>(
    v: &UserView,
    f: &Filter,
    contact_of_row: impl Fn(&R) -> u64,
    system_of_row: impl Fn(&R) -> &str,
) -> Result<Page<R>> {
    let only = match f.contact.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        Some(text) => Some(named(v, text).ok_or(Error::NotFound)?),
        None => None,
    };
    let system = f.system.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let keep = |r: &Row<R>| {
        only.is_none_or(|c| contact_of_row(&r.body) == c) && system.is_none_or(|s| system_of_row(&r.body) == s)
    };
    let after = f.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let walk = Walk {
        index: UPDATED_INDEX,
        from: "",
        to: None,
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending: !f.ascending,
    };
    let page = v.walk::<R>(walk, f.limit, keep)?;
    let mut total = 0;
    v.walk::<R>(Walk { after: None, ..walk }, usize::MAX, |r| {
        total += u64::from(keep(r));
        false
    })?;
    Ok(Page {
        rows: page.rows,
        total,
        next_cursor: page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default(),
        sync: SyncInfo::full_resync(),
    })
}

/// A page of the user's external identities.
pub fn identities(v: &UserView, f: &Filter) -> Result<Page<ExternalIdentity>> {
    list(v, f, |i: &ExternalIdentity| i.contact_id, |i| &i.system)
}

/// A page of the user's external activities (`system` filters on `source_system`).
pub fn activities(v: &UserView, f: &Filter) -> Result<Page<ExternalActivity>> {
    list(v, f, |a: &ExternalActivity| a.contact_id, |a| &a.source_system)
}

fn object_text(value: Option<Map<String, Value>>) -> String {
    Value::Object(value.unwrap_or_default()).to_string()
}

/// Creates an external identity (with `id`: replaces identity `id`), its contact checked in
/// the same transaction. A status left out is `idle`, or kept by a replacement.
pub async fn save_identity(
    scope: &UserScope,
    id: Option<u64>,
    input: ExternalIdentityInput,
) -> Result<Row<ExternalIdentity>> {
    save(scope, id, input, false).await
}

/// Creates an identity that must be its contact's only one in its system (a person of the photo
/// library), checked in the same transaction: 409 when the contact has one already.
pub async fn create_only_identity(scope: &UserScope, input: ExternalIdentityInput) -> Result<Row<ExternalIdentity>> {
    save(scope, None, input, true).await
}

async fn save(
    scope: &UserScope,
    id: Option<u64>,
    input: ExternalIdentityInput,
    only: bool,
) -> Result<Row<ExternalIdentity>> {
    let reader = scope.clone();
    let (uid, cid) = (input.entity_id.clone(), input.contact_id);
    let contact = tokio::task::spawn_blocking(move || entity(&reader.view()?, uid.as_deref(), cid))
        .await
        .map_err(Error::internal)??;
    let status = input.sync_status.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let body = ExternalIdentity {
        contact_id: contact,
        system: input.system.trim().to_string(),
        external_id: input.external_id.trim().to_string(),
        url: input.url.unwrap_or_default().trim().to_string(),
        metadata: object_text(input.metadata),
        sync_status: status.clone().unwrap_or_else(|| "idle".into()),
        last_synced_at: None,
    };
    let system = body.system.clone();
    let saved = scope
        .write_async(move |tx| {
            tx.get::<Contact>(body.contact_id)?;
            if only {
                let contact = format!("{:020}", body.contact_id);
                for other in tx.find::<ExternalIdentity>(crate::crm::records::BY_CONTACT, &contact)? {
                    if tx.get::<ExternalIdentity>(other)?.body.system == body.system {
                        return Ok(None);
                    }
                }
            }
            match id {
                None => tx.create(body.clone()).map(Some),
                Some(id) => {
                    let (body, status) = (body.clone(), status.clone());
                    tx.update::<ExternalIdentity>(id, Precondition::Any, move |current| {
                        let kept = (current.sync_status.clone(), current.last_synced_at);
                        *current = body;
                        current.sync_status = status.unwrap_or(kept.0);
                        current.last_synced_at = kept.1;
                        Ok(())
                    })
                    .map(Some)
                }
            }
        })
        .await?;
    saved.ok_or_else(|| Error::Conflict(format!("The contact is linked in {system} already: unlink it first.")))
}

/// Creates an external activity (with `id`: replaces activity `id`), its contact checked in
/// the same transaction. Provenance and sync state left out are `external` and `synced`, or kept.
pub async fn save_activity(
    scope: &UserScope,
    id: Option<u64>,
    input: ExternalActivityInput,
) -> Result<Row<ExternalActivity>> {
    let occurred_at = crate::crm::calendar::instant_or_blank("occurred_at", Some(&input.occurred_at))?
        .ok_or_else(|| Error::invalid("occurred_at", "is required: an RFC 3339 instant"))?;
    let reader = scope.clone();
    let (uid, cid) = (input.entity_id.clone(), input.contact_id);
    let contact = tokio::task::spawn_blocking(move || entity(&reader.view()?, uid.as_deref(), cid))
        .await
        .map_err(Error::internal)??;
    let given = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let (provenance, sync_state) = (given(input.provenance), given(input.sync_state));
    let body = ExternalActivity {
        contact_id: contact,
        source_system: input.source_system.trim().to_string(),
        external_id: input.external_id.trim().to_string(),
        kind: input.kind.trim().to_string(),
        occurred_at,
        payload: object_text(input.payload),
        provenance: provenance.clone().unwrap_or_else(|| "external".into()),
        sync_state: sync_state.clone().unwrap_or_else(|| "synced".into()),
    };
    Ok(scope
        .write_async(move |tx| {
            tx.get::<Contact>(body.contact_id)?;
            match id {
                None => tx.create(body.clone()),
                Some(id) => {
                    let (body, provenance, sync_state) = (body.clone(), provenance.clone(), sync_state.clone());
                    tx.update::<ExternalActivity>(id, Precondition::Any, move |current| {
                        let kept = (current.provenance.clone(), current.sync_state.clone());
                        *current = body;
                        current.provenance = provenance.unwrap_or(kept.0);
                        current.sync_state = sync_state.unwrap_or(kept.1);
                        Ok(())
                    })
                }
            }
        })
        .await?)
}

pub async fn delete_identity(scope: &UserScope, id: u64) -> Result<()> {
    Ok(scope.write_async(move |tx| tx.delete::<ExternalIdentity>(id, Precondition::Any)).await?)
}

pub async fn delete_activity(scope: &UserScope, id: u64) -> Result<()> {
    Ok(scope.write_async(move |tx| tx.delete::<ExternalActivity>(id, Precondition::Any)).await?)
}

/// A contact's identities, by system.
pub fn of_contact(v: &UserView, contact: u64) -> Result<Vec<Row<ExternalIdentity>>> {
    let mut rows: Vec<Row<ExternalIdentity>> = v
        .find::<ExternalIdentity>(crate::crm::records::BY_CONTACT, &format!("{contact:020}"))?
        .into_iter()
        .filter_map(|id| v.get::<ExternalIdentity>(id).ok())
        .collect();
    rows.sort_by(|a, b| (&a.body.system, &a.body.external_id).cmp(&(&b.body.system, &b.body.external_id)));
    Ok(rows)
}

/// A contact's newest `limit` activities, by when they happened.
pub fn recent_of_contact(v: &UserView, contact: u64, limit: usize) -> Result<Vec<Row<ExternalActivity>>> {
    let (from, to) = crate::crm::records::contact_range(contact);
    let walk =
        Walk { index: crate::crm::records::BY_CONTACT, from: &from, to: Some(&to), after: None, descending: true };
    Ok(v.walk::<ExternalActivity>(walk, limit, |_| true)?.rows)
}

/// The user's identities in `system`, each with its contact (the integrations' sync).
pub fn of_system(v: &UserView, system: &str) -> Result<Vec<Row<ExternalIdentity>>> {
    let walk = Walk { index: UPDATED_INDEX, from: "", to: None, after: None, descending: false };
    Ok(v.walk::<ExternalIdentity>(walk, usize::MAX, |r| r.body.system == system)?.rows)
}

/// The contact's identity in `system` named `external_id`, if linked.
pub fn find_identity(v: &UserView, system: &str, external_id: &str) -> Result<Option<Row<ExternalIdentity>>> {
    let key = format!("{system}\u{1f}{external_id}");
    Ok(v.find::<ExternalIdentity>(super::BY_EXTERNAL_ID, &key)?.first().and_then(|id| v.get(*id).ok()))
}

/// Whether `contact` has an activity of `system` named `external_id` (a photo it appears in).
pub fn has_activity(v: &UserView, system: &str, external_id: &str, contact: u64) -> Result<bool> {
    let key = format!("{system}\u{1f}{external_id}\u{1f}{contact}");
    Ok(!v.find::<ExternalActivity>(super::BY_EXTERNAL_ID, &key)?.is_empty())
}

/// One thing a sync saw: an activity to record for a contact, or to move to its new date.
#[derive(Debug, Clone)]
pub struct Seen {
    pub external_id: String,
    pub kind: String,
    pub occurred_at: Timestamp,
    pub payload: Map<String, Value>,
}

/// Records what a sync of identity `identity` saw, in one transaction: each activity created
/// for the identity's contact (or its date brought up to date), and the identity marked
/// synced with `metadata` merged into its own. Returns how many activities were new.
pub async fn record_sync(
    scope: &UserScope,
    identity: u64,
    seen: Vec<Seen>,
    metadata: Map<String, Value>,
) -> Result<usize> {
    Ok(scope
        .write_async(move |tx| {
            let who = tx.get::<ExternalIdentity>(identity)?;
            let contact = who.body.contact_id;
            let mut created = 0;
            for s in &seen {
                let key = format!("{}\u{1f}{}\u{1f}{contact}", who.body.system, s.external_id);
                match tx.find::<ExternalActivity>(super::BY_EXTERNAL_ID, &key)?.first() {
                    Some(&id) => {
                        let at = s.occurred_at;
                        if tx.get::<ExternalActivity>(id)?.body.occurred_at != at {
                            tx.update::<ExternalActivity>(id, Precondition::Any, move |a| {
                                a.occurred_at = at;
                                Ok(())
                            })?;
                        }
                    }
                    None => {
                        tx.create(ExternalActivity {
                            contact_id: contact,
                            source_system: who.body.system.clone(),
                            external_id: s.external_id.clone(),
                            kind: s.kind.clone(),
                            occurred_at: s.occurred_at,
                            payload: Value::Object(s.payload.clone()).to_string(),
                            provenance: "external".into(),
                            sync_state: "synced".into(),
                        })?;
                        created += 1;
                    }
                }
            }
            let (metadata, now) = (metadata.clone(), tx.now());
            tx.update::<ExternalIdentity>(identity, Precondition::Any, move |i| {
                let mut merged = match serde_json::from_str::<Value>(&i.metadata) {
                    Ok(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                merged.extend(metadata);
                i.metadata = Value::Object(merged).to_string();
                i.sync_status = "synced".into();
                i.last_synced_at = Some(now);
                Ok(())
            })?;
            Ok(created)
        })
        .await?)
}

/// Marks identity `id` as failing to sync (its status `error`).
pub async fn mark_error(scope: &UserScope, id: u64) -> Result<()> {
    scope
        .write_async(move |tx| {
            tx.update::<ExternalIdentity>(id, Precondition::Any, |i| {
                i.sync_status = "error".into();
                Ok(())
            })
            .map(|_| ())
        })
        .await?;
    Ok(())
}
