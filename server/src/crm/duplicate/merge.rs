//! Merging two contacts into one, at the existing clients' shapes: a preview that shows, field by
//! field, what the kept contact will hold and where each value comes from (a field both hold
//! with different values is a conflict the caller resolves), then the merge in one transaction.
//!
//! The kept contact takes: the chosen value of each conflicting field and the other side's value
//! where it has none; every email, phone and address of both (the same one once); both sets of
//! tags and circles; the picture when it has none; favourite when either was. Everything that
//! hung off the merged contact moves to it (`crm::kinds::move_dependents`: notes, activities,
//! reminders and completions, relationships, life events, gifts, agenda items, attachments,
//! household memberships), except what would be doubled or meaningless: an edge between the two
//! (it would join the contact to itself), an edge the kept one has already (a symmetric one in
//! either direction), a second membership
//! of one household, a second cadence, the merged one's reach-out suggestions and duplicate
//! dismissals. Then the merged contact is deleted (404 from then on, removed from CardDAV sync).

use std::collections::BTreeMap;

use mycorrhizal_codecs::card::Card;
use mycorrhizal_codecs::projection::{FlatInput, apply_flat, one_line};
use mycorrhizal_engine::{Precondition, Row, TxUser, UPDATED_INDEX, UserScope};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::DuplicateDismissal;
use crate::crm::cadence::CadencePolicy;
use crate::crm::contact::view::ContactView;
use crate::crm::contact::{Contact, phone_key};
use crate::crm::household::HouseholdMember;
use crate::crm::kinds::Moved;
use crate::crm::reach_out::ReachOutSuggestion;
use crate::crm::records::BY_CONTACT;
use crate::crm::relationship::{BY_SOURCE, BY_TARGET, Relationship, SYMMETRIC_RELATIONS};
use crate::crm::{Error, Result};

/// Which two contacts, and the chosen value of each conflicting field (`field` -> value).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeInput {
    /// The contact that stays.
    pub keep_id: u64,
    /// The contact merged into it (deleted afterwards).
    pub merge_id: u64,
    #[serde(default)]
    pub resolutions: BTreeMap<String, String>,
}

/// A field both contacts hold with different values.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Conflict {
    pub field: &'static str,
    pub label: &'static str,
    pub keeper_value: String,
    pub loser_value: String,
}

/// What the kept contact will hold.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Resolution {
    pub emails: Vec<String>,
    pub phones: Vec<String>,
    pub addresses: Vec<String>,
    pub circles: Vec<String>,
    pub tags: Vec<String>,
    /// Fields with one value (both equal, or one side empty): field -> value.
    #[schema(value_type = Object)]
    pub resolved_scalars: BTreeMap<&'static str, String>,
    pub conflicts: Vec<Conflict>,
    /// Custom fields (none yet): kept for the existing clients' shape.
    pub field_value_conflicts: Vec<Conflict>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MergePreview {
    pub keep_id: u64,
    pub merge_id: u64,
    pub resolution: Resolution,
    /// What moves from the merged contact, by record kind.
    #[schema(value_type = Object)]
    pub association_counts: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Merged {
    pub message: String,
    pub contact: ContactView,
    /// What moved from the merged contact, by record kind.
    #[schema(value_type = Object)]
    pub moved: BTreeMap<&'static str, u64>,
    /// The merged contact's id: `POST /contacts/merge/{undo_id}/undo` takes the merge back.
    pub undo_id: u64,
}

/// The scalar fields a merge resolves: `(field, label, value of a contact)`.
const SCALARS: [(&str, &str); 8] = [
    ("firstname", "First name"),
    ("lastname", "Last name"),
    ("nickname", "Nickname"),
    ("birthday", "Birthday"),
    ("anniversary", "Anniversary"),
    ("organization", "Organization"),
    ("job_title", "Job title"),
    ("gender", "Gender"),
];

fn scalar(c: &Contact, field: &str) -> String {
    let f = &c.flat;
    match field {
        "firstname" => f.firstname.clone(),
        "lastname" => f.lastname.clone(),
        "nickname" => f.nickname.clone(),
        "birthday" => c.birthday().to_string(),
        "anniversary" => f.anniversary.clone(),
        "organization" => f.org.clone(),
        "job_title" => f.job_title.clone(),
        "gender" => c.gender.clone(),
        _ => String::new(),
    }
    .trim()
    .to_string()
}

fn union<T: Clone>(keep: &[T], other: &[T], key: impl Fn(&T) -> String) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for item in keep.iter().chain(other) {
        let k = key(item);
        if k.is_empty() || seen.insert(k) {
            out.push(item.clone());
        }
    }
    out
}

fn email_key(e: &mycorrhizal_codecs::card::Email) -> String {
    e.address.trim().to_lowercase()
}

fn phone_of(p: &mycorrhizal_codecs::card::Phone) -> String {
    phone_key(&p.number).unwrap_or_else(|| p.number.trim().to_string())
}

fn address_key(a: &mycorrhizal_codecs::card::Address) -> String {
    one_line(a).split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn circles_of(c: &Contact) -> Vec<String> {
    c.circles.clone()
}

/// What merging `merge` into `keep` gives, before any choice.
fn resolve(keep: &Contact, merge: &Contact) -> (Resolution, Card) {
    let (a, b) = (keep.parsed_card(), merge.parsed_card());
    let mut card = a.clone();
    card.emails = union(&a.emails, &b.emails, email_key);
    card.phones = union(&a.phones, &b.phones, phone_of);
    card.addresses = union(&a.addresses, &b.addresses, address_key);
    card.keywords = union(&a.keywords, &b.keywords, |k| k.trim().to_lowercase());
    let mut resolved = BTreeMap::new();
    let mut conflicts = Vec::new();
    for (field, label) in SCALARS {
        let (k, m) = (scalar(keep, field), scalar(merge, field));
        if k == m || m.is_empty() {
            if !k.is_empty() {
                resolved.insert(field, k);
            }
        } else if k.is_empty() {
            resolved.insert(field, m);
        } else {
            conflicts.push(Conflict { field, label, keeper_value: k, loser_value: m });
        }
    }
    let circles = union(&circles_of(keep), &circles_of(merge), |c| c.to_lowercase());
    let resolution = Resolution {
        emails: card.emails.iter().map(|e| e.address.clone()).collect(),
        phones: card.phones.iter().map(|p| p.number.clone()).collect(),
        addresses: card.addresses.iter().map(one_line).collect(),
        circles,
        tags: card.keywords.clone(),
        resolved_scalars: resolved,
        conflicts,
        field_value_conflicts: Vec::new(),
    };
    (resolution, card)
}

fn both(v: &TxUser<'_, '_>, input: &MergeInput) -> Result<(Row<Contact>, Row<Contact>)> {
    if input.keep_id == input.merge_id {
        return Err(Error::bad_parameter("merge_id", "must differ from keep_id"));
    }
    let keep = v.get::<Contact>(input.keep_id).map_err(|_| Error::NotFound)?;
    let merge = v.get::<Contact>(input.merge_id).map_err(|_| Error::NotFound)?;
    Ok((keep, merge))
}

/// The existing clients' name of what moves, by record kind.
fn wire_name(kind: &'static str) -> &'static str {
    match kind {
        "note" => "notes",
        "activity" => "activities",
        "reminder" => "reminders",
        "reminder_completion" => "reminder_completions",
        "relationship" => "relationship_edges",
        "household_member" => "household_memberships",
        "life_event" => "life_events",
        "agenda_item" => "conversation_agenda_items",
        "gift" => "gift_items",
        "attachment" => "attachments",
        "cadence_policy" => "cadence_policies",
        "reach_out_suggestion" => "reach_out_suggestions",
        other => other,
    }
}

fn by_wire_name(counts: Vec<(&'static str, u64)>) -> BTreeMap<&'static str, u64> {
    counts.into_iter().map(|(kind, n)| (wire_name(kind), n)).collect()
}

fn counts(tx: &TxUser<'_, '_>, id: u64) -> Result<BTreeMap<&'static str, u64>> {
    Ok(by_wire_name(crate::crm::kinds::count_dependents(tx, id)?))
}

/// The preview of merging `input.merge_id` into `input.keep_id`.
pub async fn preview(scope: &UserScope, input: MergeInput) -> Result<MergePreview> {
    scope
        .write_async(move |tx| {
            // A read inside a write transaction that writes nothing: the registry's lookups take
            // a transaction, and nothing is committed.
            Ok(match both(tx, &input) {
                Ok((keep, merge)) => {
                    let (resolution, _) = resolve(&keep.body, &merge.body);
                    counts(tx, merge.id).map(|association_counts| MergePreview {
                        keep_id: keep.id,
                        merge_id: merge.id,
                        resolution,
                        association_counts,
                    })
                }
                Err(e) => Err(e),
            })
        })
        .await?
}

/// What undoing a merge needs, kept with the user's data (a blob named [`undo_name`]) until the
/// merge is undone: both contacts as they were, what moved (with its revision after, so a change
/// since is seen) and what was set aside.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct MergeUndo {
    keep_id: u64,
    keep_before: String,
    keep_revision: u64,
    /// The picture the kept contact took from the merged one (removed on undo).
    keep_new_photo: Option<String>,
    merge_before: String,
    /// The merged contact's picture: its name and bytes.
    merge_photo: Option<(String, Vec<u8>)>,
    moved: Vec<Moved>,
    removed: Vec<Removed>,
}

/// A row a merge deleted: its kind, id and body (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Removed {
    kind: String,
    id: u64,
    body: String,
    created_at: jiff::Timestamp,
}

/// The blob an undo of merging contact `merged` is kept in.
pub fn undo_name(merged: u64) -> String {
    format!("merge-undo-{merged}")
}

fn json_error(e: serde_json::Error) -> mycorrhizal_engine::Error {
    mycorrhizal_engine::Error::Invalid(mycorrhizal_engine::Invalid::new("body", e.to_string()))
}

/// Merges `input.merge_id` into `input.keep_id` in one transaction (see the module). A conflict
/// without a chosen value is refused naming `resolutions` and the fields. What an undo needs is
/// kept in the same transaction.
pub async fn merge(scope: &UserScope, input: MergeInput) -> Result<(Row<Contact>, BTreeMap<&'static str, u64>)> {
    scope
        .write_async(move |tx| {
            let (keep, merge) = match both(tx, &input) {
                Ok(pair) => pair,
                Err(e) => return Ok(Err(e)),
            };
            let (resolution, mut card) = resolve(&keep.body, &merge.body);
            let open: Vec<&str> = resolution
                .conflicts
                .iter()
                .filter(|c| !input.resolutions.contains_key(c.field))
                .map(|c| c.field)
                .collect();
            if !open.is_empty() {
                return Ok(Err(Error::invalid("resolutions", format!("choose a value for: {}", open.join(", ")))));
            }
            let chosen = |field: &str| -> String {
                input
                    .resolutions
                    .get(field)
                    .cloned()
                    .or_else(|| resolution.resolved_scalars.get(field).cloned())
                    .unwrap_or_default()
            };
            let flat = FlatInput {
                firstname: chosen("firstname"),
                lastname: chosen("lastname"),
                nickname: chosen("nickname"),
                birthday: chosen("birthday"),
                anniversary: chosen("anniversary"),
                org: chosen("organization"),
                job_title: chosen("job_title"),
                ..FlatInput::default()
            };
            if let Err(e) = apply_flat(&mut card, &flat) {
                return Ok(Err(Error::invalid(e.field, e.reason)));
            }
            let card_text = serde_json::to_string(&card).map_err(json_error)?;
            let circles = resolution.circles.clone();
            let gender = chosen("gender");
            let favorite = keep.body.favorite || merge.body.favorite;
            // Custom field values: the kept contact's, and the merged one's where it has none.
            let mut fields = crate::crm::contact::field_values(&merge.body.crm);
            fields.extend(crate::crm::contact::field_values(&keep.body.crm));
            let defs: Vec<_> = crate::crm::field::ops::definitions_in(tx)?.into_iter().map(|d| d.body).collect();
            tx.update::<Contact>(keep.id, Precondition::Any, |c| {
                c.card = card_text.clone();
                c.gender = gender.clone();
                c.favorite = favorite;
                let mut crm: serde_json::Map<String, Value> = serde_json::from_str(&c.crm).unwrap_or_default();
                crm.insert("circles".into(), Value::from(circles.clone()));
                if !fields.is_empty() {
                    crm.insert(crate::crm::field::CRM_FIELDS.into(), Value::Object(fields.clone()));
                }
                c.crm = Value::Object(crm).to_string();
                crate::crm::field::ops::project(c, &defs, &[])
            })?;
            let merge_photo = match merge.body.photo.as_str() {
                "" => None,
                name => tx.blob(name)?.map(|bytes| (name.to_string(), bytes)),
            };
            // The picture, when the kept contact has none.
            let mut keep_new_photo = None;
            if keep.body.photo.is_empty()
                && let Some((_, bytes)) = &merge_photo
            {
                keep_new_photo = Some(crate::crm::contact::picture::put_in(tx, keep.id, bytes)?.body.photo)
                    .filter(|p| !p.is_empty());
            }
            let mut removed = Vec::new();
            let mut moved = set_aside(tx, keep.id, merge.id, &mut removed)?;
            moved.extend(crate::crm::kinds::move_dependents(tx, merge.id, keep.id)?);
            crate::crm::contact::ops::delete_in(tx, merge.id, Precondition::Any)?;
            let kept = tx.get::<Contact>(keep.id)?;
            let counts = by_wire_name(count_moved(&moved));
            let undo = MergeUndo {
                keep_id: keep.id,
                keep_before: serde_json::to_string(&keep.body).map_err(json_error)?,
                keep_revision: kept.meta.revision,
                keep_new_photo,
                merge_before: serde_json::to_string(&merge.body).map_err(json_error)?,
                merge_photo,
                moved,
                removed,
            };
            tx.put_blob(&undo_name(merge.id), &serde_json::to_vec(&undo).map_err(json_error)?)?;
            Ok(Ok((kept, counts)))
        })
        .await?
}

fn count_moved(moved: &[Moved]) -> Vec<(&'static str, u64)> {
    let names: Vec<&'static str> = crate::crm::kinds::all().into_iter().map(|e| e.name).collect();
    let mut counts: Vec<(&'static str, u64)> = Vec::new();
    for m in moved {
        let Some(kind) = names.iter().copied().find(|k| *k == m.kind) else { continue };
        match counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => counts.push((kind, 1)),
        }
    }
    counts
}

/// Deletes row `id` of `R`, keeping its body for an undo.
fn remove<R: mycorrhizal_engine::Record>(
    tx: &TxUser<'_, '_>,
    id: u64,
    removed: &mut Vec<Removed>,
) -> mycorrhizal_engine::Result<()> {
    let row = tx.get::<R>(id)?;
    let body = serde_json::to_string(&row.body).map_err(json_error)?;
    tx.delete::<R>(id, Precondition::Any)?;
    removed.push(Removed { kind: R::KIND.name.to_string(), id, body, created_at: row.meta.created_at });
    Ok(())
}

/// Removes what must not move from `merge` to `keep`: edges between them or that `keep` has
/// already, a membership of a household `keep` belongs to, `merge`'s cadence when `keep` has one
/// (else it moves: returned as moved), its reach-out suggestions and duplicate dismissals.
fn set_aside(
    tx: &TxUser<'_, '_>,
    keep: u64,
    merge: u64,
    removed: &mut Vec<Removed>,
) -> mycorrhizal_engine::Result<Vec<Moved>> {
    let edges = |id: u64| -> mycorrhizal_engine::Result<Vec<Row<Relationship>>> {
        let padded = format!("{id:020}");
        let mut ids = tx.find::<Relationship>(BY_SOURCE, &padded)?;
        ids.extend(tx.find::<Relationship>(BY_TARGET, &padded)?);
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| tx.get::<Relationship>(id)).collect()
    };
    // The edges there will be: the kept contact's, then each of the merged one's as it moves. A
    // symmetric relation (friends, siblings) is one edge whichever way it points.
    let mut present: Vec<(u64, u64, String)> =
        edges(keep)?.into_iter().map(|r| (r.body.source, r.body.target, r.body.kind)).collect();
    for row in edges(merge)? {
        let Relationship { source, target, kind, .. } = row.body.clone();
        let map = |x: u64| if x == merge { keep } else { x };
        let (s, t) = (map(source), map(target));
        let symmetric = SYMMETRIC_RELATIONS.contains(&kind.as_str());
        let doubled = present.contains(&(s, t, kind.clone())) || (symmetric && present.contains(&(t, s, kind.clone())));
        if s == t || doubled {
            remove::<Relationship>(tx, row.id, removed)?;
        } else {
            present.push((s, t, kind));
        }
    }
    let households: Vec<u64> = tx
        .find::<HouseholdMember>(BY_CONTACT, &format!("{keep:020}"))?
        .into_iter()
        .filter_map(|id| tx.get::<HouseholdMember>(id).ok().map(|r| r.body.household_id))
        .collect();
    for id in tx.find::<HouseholdMember>(BY_CONTACT, &format!("{merge:020}"))? {
        if tx.get::<HouseholdMember>(id).is_ok_and(|r| households.contains(&r.body.household_id)) {
            remove::<HouseholdMember>(tx, id, removed)?;
        }
    }
    for id in tx.find::<ReachOutSuggestion>(BY_CONTACT, &format!("{merge:020}"))? {
        remove::<ReachOutSuggestion>(tx, id, removed)?;
    }
    for id in tx.find::<DuplicateDismissal>(BY_CONTACT, &format!("{merge:020}"))? {
        remove::<DuplicateDismissal>(tx, id, removed)?;
    }
    let mut policies = Vec::new();
    for id in tx.find_range::<CadencePolicy>(UPDATED_INDEX, "", "\u{10FFFF}")? {
        if let Ok(row) = tx.get::<CadencePolicy>(id) {
            policies.push(row);
        }
    }
    let target =
        |id: u64| policies.iter().find(|p| p.body.scope == "contact" && p.body.target == id.to_string()).map(|p| p.id);
    let mut moved = Vec::new();
    if let Some(theirs) = target(merge) {
        if target(keep).is_some() {
            remove::<CadencePolicy>(tx, theirs, removed)?;
        } else {
            let before = serde_json::to_string(&tx.get::<CadencePolicy>(theirs)?.body).map_err(json_error)?;
            let row = tx.update::<CadencePolicy>(theirs, Precondition::Any, |p| {
                p.target = keep.to_string();
                Ok(())
            })?;
            moved.push(Moved { kind: "cadence_policy".into(), id: theirs, before, revision: row.meta.revision });
        }
    }
    Ok(moved)
}

/// Undoes the merge that deleted contact `merged`: both contacts and every moved or set-aside
/// record come back exactly (the merged contact at its own id), as long as nothing of it changed
/// since (else `Conflict`, naming what changed). `NotFound` when no such merge is kept.
pub async fn undo(scope: &UserScope, merged: u64) -> Result<u64> {
    scope
        .write_async(move |tx| {
            let Some(bytes) = tx.blob(&undo_name(merged))? else { return Ok(Err(Error::NotFound)) };
            let undo: MergeUndo = serde_json::from_slice(&bytes).map_err(json_error)?;
            let keep = match tx.get::<Contact>(undo.keep_id) {
                Ok(row) => row,
                Err(mycorrhizal_engine::Error::NotFound) => {
                    return Ok(Err(Error::Conflict("The kept contact was deleted since the merge".into())));
                }
                Err(e) => return Err(e),
            };
            if keep.meta.revision != undo.keep_revision {
                return Ok(Err(Error::Conflict(
                    "The kept contact changed since the merge; undo only right after it".into(),
                )));
            }
            for m in &undo.moved {
                let now = crate::crm::kinds::snapshot_of(tx, &m.kind, m.id)?;
                if now.map(|(revision, _)| revision) != Some(m.revision) {
                    return Ok(Err(Error::Conflict(format!(
                        "A {} moved by the merge changed since",
                        m.kind.replace('_', " ")
                    ))));
                }
            }
            if let Some(name) = &undo.keep_new_photo {
                tx.delete_blob(name)?;
            }
            let keep_before: Contact = serde_json::from_str(&undo.keep_before).map_err(json_error)?;
            tx.put::<Contact>(undo.keep_id, Precondition::Revision(undo.keep_revision), keep_before)?;
            let merge_before: Contact = serde_json::from_str(&undo.merge_before).map_err(json_error)?;
            tx.restore::<Contact>(merged, merge_before, None)?;
            if let Some((name, bytes)) = &undo.merge_photo {
                tx.put_blob(name, bytes)?;
            }
            for m in &undo.moved {
                crate::crm::kinds::put_json_of(tx, &m.kind, m.id, m.revision, &m.before)?;
            }
            for r in &undo.removed {
                crate::crm::kinds::restore_json_of(tx, &r.kind, r.id, &r.body, r.created_at)?;
            }
            tx.delete_blob(&undo_name(merged))?;
            Ok(Ok(merged))
        })
        .await?
}
