//! The operations on preferences every front door shares: list (all, or one contact's, newest
//! change first), create, replace, delete. A preference names its contact by vCard UID
//! (`entity_id`, as the existing clients do) or by id.

use mycorrhizal_engine::{Precondition, Row, TxUser, UPDATED_INDEX, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Preference;
use crate::crm::contact::{Contact, entity, named};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::records::BY_CONTACT;
use crate::crm::{Error, Result, Stamp};

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct PreferenceInput {
    /// The contact's vCard UID (or `contact_id`).
    pub entity_id: Option<String>,
    #[schema(maximum = 9223372036854775807_u64)]
    pub contact_id: Option<u64>,
    /// 1 to 100 characters: `food`, `drink`, `hobby`, `clothing_size`, ...
    #[serde(default)]
    #[schema(required = true, max_length = 100)]
    pub category: String,
    #[schema(max_length = 100)]
    pub key: Option<String>,
    /// 1 to 1000 characters.
    #[serde(default)]
    #[schema(required = true, max_length = 1000)]
    pub value: String,
    #[schema(max_length = 2000)]
    pub notes: Option<String>,
    /// `conversation_note`, `user`, `ai-suggested` or `external`.
    pub source: Option<String>,
    pub confidence: Option<f64>,
    /// RFC 3339.
    pub last_confirmed: Option<String>,
    /// `normal` (default), `private` or `secret`.
    pub sensitivity: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PreferenceView {
    pub id: u64,
    /// The contact's vCard UID.
    pub entity_id: String,
    pub contact_id: u64,
    pub category: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub key: String,
    pub value: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub notes: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last_confirmed: String,
    pub sensitivity: String,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl PreferenceView {
    pub fn of(v: &UserView, row: &Row<Preference>) -> PreferenceView {
        let p = &row.body;
        PreferenceView {
            id: row.id,
            entity_id: v.get::<Contact>(p.contact_id).map(|c| c.body.uid).unwrap_or_default(),
            contact_id: p.contact_id,
            category: p.category.clone(),
            key: p.key.clone(),
            value: p.value.clone(),
            notes: p.notes.clone(),
            source: p.source.clone(),
            confidence: p.confidence,
            last_confirmed: p.last_confirmed.clone(),
            sensitivity: p.sensitivity.clone(),
            stamp: Stamp::of(row),
        }
    }
}

/// `{preferences, total, next_cursor, limit}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PreferencePage {
    pub preferences: Vec<PreferenceView>,
    pub total: u64,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// A page of the user's preferences (only contact `entity`'s when given), newest change first.
pub fn list(
    v: &UserView,
    entity: Option<&str>,
    cursor: Option<&str>,
    limit: usize,
    ascending: bool,
) -> Result<PreferencePage> {
    let only = match entity.map(str::trim).filter(|e| !e.is_empty()) {
        Some(text) => Some(named(v, text).ok_or(Error::NotFound)?),
        None => None,
    };
    let after = cursor.filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let walk = Walk {
        index: UPDATED_INDEX,
        from: "",
        to: None,
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending: !ascending,
    };
    let keep = |r: &Row<Preference>| only.is_none_or(|c| r.body.contact_id == c);
    let page = v.walk::<Preference>(walk, limit, keep)?;
    let total = match only {
        None => v.count::<Preference>()?,
        Some(c) => v.count_where::<Preference>(crate::crm::records::BY_CONTACT, &format!("{c:020}"))?,
    };
    Ok(PreferencePage {
        preferences: page.rows.iter().map(|r| PreferenceView::of(v, r)).collect(),
        total,
        next_cursor: page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit,
    })
}

/// Creates a preference (with `id`: replaces preference `id`), its contact checked in the same
/// transaction.
pub async fn save(scope: &UserScope, id: Option<u64>, input: PreferenceInput) -> Result<Row<Preference>> {
    let reader = scope.clone();
    let (uid, cid) = (input.entity_id.clone(), input.contact_id);
    let contact = tokio::task::spawn_blocking(move || entity(&reader.view()?, uid.as_deref(), cid))
        .await
        .map_err(Error::internal)??;
    let body = Preference {
        contact_id: contact,
        category: input.category.trim().to_string(),
        key: input.key.unwrap_or_default().trim().to_string(),
        value: input.value.trim().to_string(),
        notes: input.notes.unwrap_or_default(),
        source: input.source.unwrap_or_default().trim().to_string(),
        confidence: input.confidence,
        last_confirmed: input.last_confirmed.unwrap_or_default().trim().to_string(),
        sensitivity: input.sensitivity.filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "normal".into()),
    };
    Ok(scope
        .write_async(move |tx| {
            tx.get::<Contact>(body.contact_id)?;
            let (row, before) = match id {
                None => (tx.create(body.clone())?, None),
                Some(id) => {
                    let before = tx.get::<Preference>(id)?.body;
                    (tx.put(id, Precondition::Any, body.clone())?, Some(before))
                }
            };
            let mut dropped = Vec::new();
            match before {
                Some(b) if b.contact_id != body.contact_id => project_hobbies(tx, b.contact_id, &[b.value])?,
                Some(b) => dropped.push(b.value),
                None => {}
            }
            project_hobbies(tx, body.contact_id, &dropped)?;
            Ok(row)
        })
        .await?)
}

pub async fn delete(scope: &UserScope, id: u64) -> Result<()> {
    Ok(scope
        .write_async(move |tx| {
            let gone = tx.get::<Preference>(id)?.body;
            tx.delete::<Preference>(id, Precondition::Any)?;
            project_hobbies(tx, gone.contact_id, &[gone.value])
        })
        .await?)
}

/// Keeps a contact's card in step with its hobbies: each `hobby` preference of normal
/// sensitivity is a `personalInfo` entry of kind `hobby` (so vCard and JSContact carry it), and
/// an entry whose value only a preference changed or deleted just now held (`dropped`) goes.
/// Hobbies the card had of its own (from an import) stay.
fn project_hobbies(tx: &TxUser<'_, '_>, contact: u64, dropped: &[String]) -> mycorrhizal_engine::Result<()> {
    let key = |s: &str| s.trim().to_lowercase();
    let mut hobbies: Vec<String> = Vec::new();
    for id in tx.find::<Preference>(BY_CONTACT, &format!("{contact:020}"))? {
        let p = tx.get::<Preference>(id)?.body;
        if p.category == "hobby" && p.sensitivity == "normal" && !hobbies.iter().any(|h| key(h) == key(&p.value)) {
            hobbies.push(p.value);
        }
    }
    let Ok(row) = tx.get::<Contact>(contact) else { return Ok(()) };
    let mut card = row.body.parsed_card();
    let mut info: Vec<Value> = card.extra.get("personalInfo").and_then(Value::as_array).cloned().unwrap_or_default();
    let is_hobby = |i: &Value| i.get("kind").and_then(Value::as_str) == Some("hobby");
    let value_of = |i: &Value| i.get("value").and_then(Value::as_str).map(key).unwrap_or_default();
    let before = info.len();
    info.retain(|i| {
        !(is_hobby(i)
            && dropped.iter().any(|d| key(d) == value_of(i))
            && !hobbies.iter().any(|h| key(h) == value_of(i)))
    });
    let mut changed = info.len() != before;
    for h in &hobbies {
        if !info.iter().any(|i| is_hobby(i) && value_of(i) == key(h)) {
            info.push(json!({ "kind": "hobby", "value": h }));
            changed = true;
        }
    }
    if !changed {
        return Ok(());
    }
    if info.is_empty() {
        card.extra.remove("personalInfo");
    } else {
        card.extra.insert("personalInfo".into(), Value::Array(info));
    }
    tx.update::<Contact>(contact, Precondition::Any, move |c| {
        c.card = serde_json::to_string(&card).map_err(|e| mycorrhizal_engine::Invalid::new("card", e.to_string()))?;
        Ok(())
    })
    .map(|_| ())
}
