//! Relationship edges at the existing clients' shape (`/relationship-edges`): listed across the
//! book (by contact, status or type, paged), created between two contacts named by vCard UID or
//! id (or a new contact made from a name on the way, a "thin" one), replaced, deleted, accepted
//! when suggested, and suggested by two-hop inference over the confirmed edges (`suggest`).
//! The edges are the same rows `/contacts/{id}/relationships` reads.

use std::collections::{BTreeMap, HashSet};

use mycorrhizal_codecs::projection::FlatInput;
use mycorrhizal_engine::{Precondition, Row, TxUser, UPDATED_INDEX, UserScope, UserView, Walk};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::ops::{RelationshipView, shown};
use super::{BY_SOURCE, Relationship, SYMMETRIC_RELATIONS, inverse, relation_token};
use crate::crm::contact::ops::ContactInput;
use crate::crm::contact::{Contact, INDEX_UID, named, named_by};
use crate::crm::cursor::{decode_cursor, encode_cursor};
use crate::crm::{Error, Result};

/// A contact made from a name while an edge is created (a child, a pet, a friend's partner).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Thin {
    /// 1 to 100 characters: the new contact's first name.
    #[schema(max_length = 100)]
    pub name: String,
    #[schema(max_length = 100)]
    pub gender: Option<String>,
    /// `YYYY-MM-DD`, or `--MM-DD` without a year.
    pub birthday: Option<String>,
}

/// An edge as sent: each end an existing contact (`*_id`: vCard UID, or id as text) or a new
/// one (`*_thin`), never both.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct EdgeInput {
    pub source_id: Option<String>,
    pub source_thin: Option<Thin>,
    pub target_id: Option<String>,
    pub target_thin: Option<Thin>,
    /// A relation token (`parent_of`, `sibling_of`, ...), an everyday word or a custom type.
    #[serde(rename = "type", default)]
    #[schema(required = true)]
    pub kind: String,
    /// `normal` (default), `private` or `secret`.
    pub sensitivity: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub note: Option<String>,
}

/// What a list of edges asks for.
#[derive(Debug, Clone, Default)]
pub struct EdgeFilter {
    /// Edges touching this contact (vCard UID or id).
    pub contact: Option<String>,
    pub status: Option<String>,
    pub kind: Option<String>,
    pub cursor: Option<String>,
    pub limit: usize,
    pub ascending: bool,
}

/// `{relationship_edges, total, next_cursor, limit}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EdgePage {
    pub relationship_edges: Vec<RelationshipView>,
    pub total: u64,
    pub next_cursor: String,
    /// How a client keeps this collection current.
    pub sync: crate::crm::cursor::SyncInfo,
    pub limit: usize,
}

/// `{message, suggested_edges, total}`: the edges one run of the inference added.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Suggested {
    pub message: String,
    pub suggested_edges: Vec<RelationshipView>,
    pub total: u64,
}

fn contact_in_tx(tx: &TxUser<'_, '_>, named: &str) -> Option<u64> {
    named_by(|uid| tx.find::<Contact>(INDEX_UID, uid), |id| tx.get::<Contact>(id).is_ok(), named)
}

fn invalid(field: &str, reason: &str) -> mycorrhizal_engine::Error {
    mycorrhizal_engine::Error::Invalid(mycorrhizal_engine::Invalid::new(field, reason))
}

/// One end of an edge inside the write: the contact named, or a new one made from `thin` (a
/// pet, the owned end of `owns`/`owned_by`, is marked `crm.kind = animal`).
fn end(
    tx: &TxUser<'_, '_>,
    field: &str,
    id: Option<&str>,
    thin: Option<&Thin>,
    animal: bool,
) -> mycorrhizal_engine::Result<u64> {
    match (id.map(str::trim).filter(|i| !i.is_empty()), thin) {
        (Some(_), Some(_)) => Err(invalid(field, "specify either an existing contact or a new one, not both")),
        (None, None) => Err(invalid(field, "must name an existing contact or a new one")),
        (Some(named), None) => contact_in_tx(tx, named).ok_or(mycorrhizal_engine::Error::NotFound),
        (None, Some(thin)) => {
            let name = thin.name.trim();
            if name.is_empty() || name.chars().count() > 100 {
                return Err(invalid(&field.replace("_id", "_thin.name"), "must be 1 to 100 characters"));
            }
            let input = ContactInput {
                gender: thin.gender.clone(),
                card: None,
                typed_card: None,
                dav_card: None,
                crm: animal.then(|| serde_json::json!({ "kind": "animal" })),
                passthrough: None,
                is_favorite: None,
                flat: FlatInput {
                    firstname: name.to_string(),
                    birthday: thin.birthday.clone().unwrap_or_default(),
                    ..FlatInput::default()
                },
            };
            let contact = input.apply(None).map_err(mycorrhizal_engine::Error::Invalid)?;
            Ok(tx.create(contact)?.id)
        }
    }
}

impl EdgeInput {
    /// The edge this input makes, its ends resolved (or created) in `tx`; `kept` is the edge it
    /// replaces, whose status, origin and confidence stay.
    fn edge(&self, tx: &TxUser<'_, '_>, kept: Option<&Relationship>) -> mycorrhizal_engine::Result<Relationship> {
        let kind = relation_token(&self.kind);
        if kind.is_empty() {
            return Err(invalid("type", "is required"));
        }
        let source = end(tx, "source_id", self.source_id.as_deref(), self.source_thin.as_ref(), kind == "owned_by")?;
        let target = end(tx, "target_id", self.target_id.as_deref(), self.target_thin.as_ref(), kind == "owns")?;
        if source == target {
            return Err(invalid("target_id", "source and target must be different contacts"));
        }
        let metadata = match &self.metadata {
            None | Some(Value::Null) => kept.map_or_else(|| "{}".to_string(), |k| k.metadata.clone()),
            Some(m @ Value::Object(_)) => m.to_string(),
            Some(_) => return Err(invalid("metadata", "must be a JSON object")),
        };
        let sensitivity = self.sensitivity.clone().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "normal".into());
        let note = self.note.clone().or_else(|| kept.map(|k| k.note.clone())).unwrap_or_default();
        let mut edge = Relationship::confirmed(source, target, kind, sensitivity.trim().to_string(), note);
        edge.metadata = metadata;
        if let Some(k) = kept {
            (edge.status, edge.origin, edge.confidence) = (k.status.clone(), k.origin.clone(), k.confidence);
        }
        Ok(edge)
    }
}

/// A page of the user's edges, newest change first (or oldest with `ascending`).
pub fn list(v: &UserView, q: &EdgeFilter) -> Result<EdgePage> {
    let contact = match q.contact.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        Some(text) => Some(named(v, text).ok_or(Error::NotFound)?),
        None => None,
    };
    let kind = q.kind.as_deref().map(relation_token).filter(|k| !k.is_empty());
    let keep = |r: &Row<Relationship>| {
        contact.is_none_or(|c| r.body.source == c || r.body.target == c)
            && q.status.as_deref().is_none_or(|s| s.trim().is_empty() || r.body.status == s.trim())
            && kind.as_deref().is_none_or(|k| r.body.kind == k)
    };
    let after = q.cursor.as_deref().filter(|c| !c.trim().is_empty()).map(decode_cursor).transpose()?;
    let walk = Walk {
        index: UPDATED_INDEX,
        from: "",
        to: None,
        after: after.as_ref().map(|(value, id)| (value.as_str(), *id)),
        descending: !q.ascending,
    };
    let page = v.walk::<Relationship>(walk, q.limit, keep)?;
    let total = match (contact, &q.status, &kind) {
        (None, None, None) => v.count::<Relationship>()?,
        _ => v.list::<Relationship>()?.iter().filter(|r| keep(r)).count() as u64,
    };
    Ok(EdgePage {
        relationship_edges: page.rows.iter().map(|r| shown(v, r)).collect::<Result<_>>()?,
        total,
        next_cursor: page.next.as_ref().map(|(value, id)| encode_cursor(value, *id)).unwrap_or_default(),
        sync: crate::crm::cursor::SyncInfo::full_resync(),
        limit: q.limit,
    })
}

/// A new confirmed edge (its ends created first when given as names), in one transaction.
pub async fn create(scope: &UserScope, input: EdgeInput) -> Result<Row<Relationship>> {
    Ok(scope.write_async(move |tx| tx.create(input.edge(tx, None)?)).await?)
}

/// Replaces edge `id`'s ends, type, sensitivity and metadata; its status and origin stay.
pub async fn replace(scope: &UserScope, id: u64, input: EdgeInput) -> Result<Row<Relationship>> {
    Ok(scope
        .write_async(move |tx| {
            let current = tx.get::<Relationship>(id)?;
            let edge = input.edge(tx, Some(&current.body))?;
            tx.put(id, Precondition::Any, edge)
        })
        .await?)
}

/// Deletes edge `id` (also how a suggestion is turned down).
pub async fn delete(scope: &UserScope, id: u64) -> Result<()> {
    Ok(scope.write_async(move |tx| tx.delete::<Relationship>(id, Precondition::Any)).await?)
}

/// Confirms suggested edge `id`; an edge that is not a suggestion is a conflict.
pub async fn accept(scope: &UserScope, id: u64) -> Result<Row<Relationship>> {
    let row = scope
        .write_async(move |tx| {
            if tx.get::<Relationship>(id)?.body.is_confirmed() {
                return Ok(Err(Error::Conflict("Relationship edge is not a pending suggestion".into())));
            }
            Ok(Ok(tx.update::<Relationship>(id, Precondition::Any, |r| {
                r.status = "confirmed".into();
                Ok(())
            })?))
        })
        .await??;
    Ok(row)
}

/// What two steps compose to, with the confidence: A is `first` of X and X is `second` of B
/// gives A is `.0` of B.
fn compose(first: &str, second: &str) -> Option<(&'static str, f64)> {
    match (first, second) {
        ("sibling_of", "sibling_of") => Some(("sibling_of", 0.9)),
        ("parent_of", "sibling_of") => Some(("parent_of", 0.7)),
        ("spouse_of", "parent_of") => Some(("parent_of", 0.5)),
        _ => None,
    }
}

/// One round of two-hop inference over the confirmed, non-secret edges: a sibling's sibling is
/// a sibling, a parent's child's sibling a child, a spouse's child a child. An edge is suggested
/// only between two contacts with no edge yet (either way, any status), so a run never repeats
/// one; a suggestion turned down (deleted) may come back at the next run.
pub async fn suggest(scope: &UserScope) -> Result<Vec<Row<Relationship>>> {
    Ok(scope
        .write_async(|tx| {
            let mut all = Vec::new();
            for id in tx.find_range::<Relationship>(BY_SOURCE, "", "~")? {
                all.push(tx.get::<Relationship>(id)?);
            }
            let linked: HashSet<(u64, u64)> =
                all.iter().map(|r| (r.body.source.min(r.body.target), r.body.source.max(r.body.target))).collect();
            // For each contact X: who is what to X (`is_to`), and what X is to whom (`from_x`).
            let mut is_to: BTreeMap<u64, Vec<(u64, &str)>> = BTreeMap::new();
            for r in all.iter().filter(|r| r.body.is_confirmed() && r.body.sensitivity != "secret") {
                let b = &r.body;
                is_to.entry(b.target).or_default().push((b.source, b.kind.as_str()));
                if let Some(back) = inverse(&b.kind) {
                    is_to.entry(b.source).or_default().push((b.target, back));
                }
            }
            let mut planned: BTreeMap<(u64, u64), (&'static str, f64)> = BTreeMap::new();
            for (x, relatives) in &is_to {
                for (a, first) in relatives {
                    for (b, second_back) in relatives {
                        // X is `second` of B exactly when B is `second_back` of X.
                        let Some(second) = inverse(second_back) else { continue };
                        if a == b || *a == *x || *b == *x {
                            continue;
                        }
                        if let Some((kind, confidence)) = compose(first, second) {
                            let (s, t) =
                                if SYMMETRIC_RELATIONS.contains(&kind) { (*a.min(b), *a.max(b)) } else { (*a, *b) };
                            if !linked.contains(&(s.min(t), s.max(t))) {
                                planned.entry((s, t)).or_insert((kind, confidence));
                            }
                        }
                    }
                }
            }
            let mut made = Vec::new();
            let mut done = HashSet::new();
            for ((s, t), (kind, confidence)) in planned {
                if !done.insert((s.min(t), s.max(t))) {
                    continue;
                }
                let mut edge = Relationship::confirmed(s, t, kind.to_string(), "normal".into(), String::new());
                (edge.status, edge.origin, edge.confidence) = ("suggested".into(), "graph-inferred".into(), confidence);
                made.push(tx.create(edge)?);
            }
            Ok(made)
        })
        .await?)
}
