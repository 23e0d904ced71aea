//! Acting on many contacts at once (`POST /contacts/bulk`), at the existing clients' shape: add or
//! remove a circle or a tag, archive, unarchive, favourite, unfavourite or delete a selection,
//! in one transaction, each contact changed with its own audit entry. A contact of the selection
//! that is not the caller's (or not there any more) is reported and the rest goes on.

use mycorrhizal_codecs::card::Card;
use mycorrhizal_engine::{Invalid, Precondition, TxUser, UserScope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{Contact, INDEX_UID};
use crate::crm::groups::{Group, NAME_MAX, ops::name_of};
use crate::crm::{Error, Result};

/// Most contacts one request acts on.
pub const MAX_SELECTION: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    AddCircle,
    RemoveCircle,
    AddTag,
    RemoveTag,
    Archive,
    Unarchive,
    Favorite,
    Unfavorite,
    Delete,
}

/// Which contacts, what to do, and the circle or tag it names.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkInput {
    pub action: Action,
    /// The contacts by vCard UID (the existing clients' way), 1 to 500 with `ids`.
    #[serde(default)]
    pub vcard_uids: Vec<String>,
    /// The contacts by id.
    #[serde(default)]
    pub ids: Vec<u64>,
    /// The circle's name, for `add_circle` and `remove_circle`.
    pub circle: Option<String>,
    /// The tag, for `add_tag` and `remove_tag`.
    pub tag: Option<String>,
    /// The circle by id (`GET /circles`), instead of `circle`.
    #[schema(maximum = 9223372036854775807_u64)]
    pub circle_id: Option<u64>,
    /// The tag by id (`GET /tags`), instead of `tag`.
    #[schema(maximum = 9223372036854775807_u64)]
    pub tag_id: Option<u64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkFailure {
    /// The UID (or the id, as text) that was named.
    pub vcard_uid: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkResult {
    pub action: Action,
    pub total: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub failures: Vec<BulkFailure>,
}

fn label(field: &str, value: Option<&str>) -> Result<String> {
    let value = value.map(str::trim).unwrap_or("");
    if value.is_empty() || value.chars().count() > NAME_MAX {
        return Err(Error::invalid(field, format!("is required for this action: 1 to {NAME_MAX} characters")));
    }
    Ok(value.to_string())
}

fn with_circles(crm: &str, change: impl FnOnce(&mut Vec<Value>)) -> std::result::Result<String, Invalid> {
    let mut value: serde_json::Map<String, Value> =
        serde_json::from_str(crm).map_err(|e| Invalid::new("crm", e.to_string()))?;
    let mut circles = value.get("circles").and_then(Value::as_array).cloned().unwrap_or_default();
    change(&mut circles);
    value.insert("circles".into(), Value::Array(circles));
    Ok(Value::Object(value).to_string())
}

fn with_card(card: &str, change: impl FnOnce(&mut Card)) -> std::result::Result<String, Invalid> {
    let mut parsed: Card = serde_json::from_str(card).map_err(|e| Invalid::new("card", e.to_string()))?;
    change(&mut parsed);
    serde_json::to_string(&parsed).map_err(|e| Invalid::new("card", e.to_string()))
}

/// Applies `action` to contact `id` inside `tx`.
fn apply(tx: &TxUser<'_, '_>, id: u64, action: Action, name: &str) -> mycorrhizal_engine::Result<()> {
    let same = |v: &Value| v.as_str().is_some_and(|c| c.trim().eq_ignore_ascii_case(name));
    match action {
        Action::Delete => crate::crm::contact::ops::delete_in(tx, id, Precondition::Any),
        _ => tx
            .update::<Contact>(id, Precondition::Any, |c| {
                match action {
                    Action::AddCircle => {
                        c.crm = with_circles(&c.crm, |list| {
                            if !list.iter().any(same) {
                                list.push(Value::from(name));
                            }
                        })?;
                    }
                    Action::RemoveCircle => c.crm = with_circles(&c.crm, |list| list.retain(|v| !same(v)))?,
                    Action::AddTag => {
                        c.card = with_card(&c.card, |card| {
                            if !card.keywords.iter().any(|k| k.trim().eq_ignore_ascii_case(name)) {
                                card.keywords.push(name.to_string());
                            }
                        })?;
                    }
                    Action::RemoveTag => {
                        c.card =
                            with_card(&c.card, |card| card.keywords.retain(|k| !k.trim().eq_ignore_ascii_case(name)))?;
                    }
                    Action::Archive => c.archived = true,
                    Action::Unarchive => c.archived = false,
                    Action::Favorite => c.favorite = true,
                    Action::Unfavorite => c.favorite = false,
                    Action::Delete => {}
                }
                Ok(())
            })
            .map(|_| ()),
    }
}

/// Acts on the selection in one transaction.
pub async fn run(scope: &UserScope, input: BulkInput) -> Result<BulkResult> {
    if input.ids.iter().any(|id| *id > i64::MAX as u64) {
        return Err(Error::invalid("ids", "an id is a whole number up to 9223372036854775807"));
    }
    let count = input.vcard_uids.len() + input.ids.len();
    if count == 0 || count > MAX_SELECTION {
        return Err(Error::invalid("vcard_uids", format!("name 1 to {MAX_SELECTION} contacts")));
    }
    let by_id = match input.action {
        Action::AddCircle | Action::RemoveCircle => input.circle_id.map(|id| (Group::Circle, id, "circle_id")),
        Action::AddTag | Action::RemoveTag => input.tag_id.map(|id| (Group::Tag, id, "tag_id")),
        _ => None,
    };
    let named_group = match by_id {
        Some((group, id, field)) => {
            let reader = scope.clone();
            let found = tokio::task::spawn_blocking(move || name_of(&reader.view()?, group, id))
                .await
                .map_err(Error::internal)?;
            Some(found.map_err(|_| Error::invalid(field, "names no circle or tag of yours"))?)
        }
        None => None,
    };
    let name = match input.action {
        Action::AddCircle | Action::RemoveCircle => {
            label("circle", named_group.as_deref().or(input.circle.as_deref()))?
        }
        Action::AddTag | Action::RemoveTag => label("tag", named_group.as_deref().or(input.tag.as_deref()))?,
        _ => String::new(),
    };
    let action = input.action;
    let mut named: Vec<(String, Option<String>, Option<u64>)> = Vec::new();
    for uid in input.vcard_uids {
        let key = uid.trim().to_lowercase();
        if !named.iter().any(|(k, ..)| *k == key) {
            named.push((key.clone(), Some(key), None));
        }
    }
    for id in input.ids {
        let key = id.to_string();
        if !named.iter().any(|(k, ..)| *k == key) {
            named.push((key, None, Some(id)));
        }
    }
    Ok(scope
        .write_async(move |tx| {
            let mut failures = Vec::new();
            let mut succeeded = 0;
            for (shown, uid, id) in &named {
                let found = match (uid, id) {
                    (Some(uid), _) => {
                        tx.find::<Contact>(INDEX_UID, uid)?.into_iter().find(|id| tx.get::<Contact>(*id).is_ok())
                    }
                    (None, Some(id)) => tx.get::<Contact>(*id).ok().map(|_| *id),
                    (None, None) => None,
                };
                let Some(found) = found else {
                    failures.push(BulkFailure {
                        vcard_uid: shown.clone(),
                        reason: "contact not found or not owned".into(),
                    });
                    continue;
                };
                match apply(tx, found, action, &name) {
                    Ok(()) => succeeded += 1,
                    Err(mycorrhizal_engine::Error::Invalid(invalid)) => {
                        failures.push(BulkFailure { vcard_uid: shown.clone(), reason: invalid.to_string() })
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(BulkResult { action, total: named.len() as u64, succeeded, failed: failures.len() as u64, failures })
        })
        .await?)
}
