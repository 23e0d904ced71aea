//! Relationships between two of the user's contacts: typed edges (known tokens such as
//! `spouse_of`, `parent_of`, `friend_of`, everyday words mapped onto them, or a custom type).
//! Their operations (create, replace, delete from either end), views, and the network graph.

use mycorrhizal_engine::{Precondition, Row, UserScope, UserView};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Result;
use super::contact::Contact;
use super::records::{Activity, BY_SOURCE, BY_TARGET, KNOWN_RELATIONS, Relationship, relation_token};

/// Every live edge touching `contact`, with whether it starts there.
pub fn edges_of(view: &UserView, contact: u64) -> Result<Vec<(Row<Relationship>, bool)>> {
    let padded = format!("{contact:020}");
    let mut out = Vec::new();
    for id in view.find::<Relationship>(BY_SOURCE, &padded)? {
        out.push((view.get::<Relationship>(id)?, true));
    }
    for id in view.find::<Relationship>(BY_TARGET, &padded)? {
        out.push((view.get::<Relationship>(id)?, false));
    }
    Ok(out)
}

pub fn edge_view(row: &Row<Relationship>, source: &Row<Contact>, target: &Row<Contact>) -> Value {
    let r = &row.body;
    json!({
        "id": row.id,
        "source_id": source.body.uid,
        "target_id": target.body.uid,
        "source_contact_id": r.source,
        "target_contact_id": r.target,
        "type": r.kind,
        "custom": !KNOWN_RELATIONS.contains(&r.kind.as_str()),
        "sensitivity": r.sensitivity,
        "note": r.note,
        "status": "confirmed",
        "source": "user-confirmed",
        "revision": row.meta.revision,
        "created_at": row.meta.created_at,
        "updated_at": row.meta.updated_at,
    })
}

/// The composite detail's `relationship_edges` entries.
pub fn detail_edges(view: &UserView, contact: u64) -> Result<Vec<Value>> {
    let me = view.get::<Contact>(contact)?;
    let mut out = Vec::new();
    for (edge, outgoing) in edges_of(view, contact)? {
        let other = view.get::<Contact>(if outgoing { edge.body.target } else { edge.body.source })?;
        let (source, target) = if outgoing { (&me, &other) } else { (&other, &me) };
        out.push(json!({
            "edge": edge_view(&edge, source, target),
            "other_party_contact_id": other.id,
            "other_party_name": other.body.name(),
            "other_party_uid": other.body.uid,
            "display_token": edge.body.kind,
        }));
    }
    Ok(out)
}

/// The edges starting (`outgoing`) or ending at `contact`, with the other party named.
pub fn listed(view: &UserView, contact: u64, outgoing: bool) -> Result<Vec<Value>> {
    let me = view.get::<Contact>(contact)?;
    let mut out = Vec::new();
    for (edge, from_here) in edges_of(view, contact)? {
        if from_here != outgoing {
            continue;
        }
        let other = view.get::<Contact>(if outgoing { edge.body.target } else { edge.body.source })?;
        let (source, target) = if outgoing { (&me, &other) } else { (&other, &me) };
        let mut item = edge_view(&edge, source, target);
        item["other_party_contact_id"] = json!(other.id);
        item["other_party_name"] = json!(other.body.name());
        out.push(item);
    }
    Ok(out)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct RelationshipInput {
    /// The other contact (integer id).
    pub target_id: u64,
    /// A relation token (`spouse_of`, `parent_of`, ...), an everyday word (`sister`), or a custom type.
    #[serde(rename = "type")]
    pub kind: String,
    /// `normal` (default), `private` or `secret`.
    pub sensitivity: Option<String>,
    pub note: Option<String>,
}

impl RelationshipInput {
    fn edge(self, source: u64) -> Relationship {
        Relationship {
            source,
            target: self.target_id,
            kind: relation_token(&self.kind),
            sensitivity: self.sensitivity.unwrap_or_else(|| "normal".into()),
            note: self.note.unwrap_or_default(),
        }
    }
}

/// Creates an edge from `source`; both ends must be the user's contacts.
pub async fn create(scope: &UserScope, source: u64, input: RelationshipInput) -> Result<Row<Relationship>> {
    let edge = input.edge(source);
    Ok(scope
        .write_async(move |tx| {
            tx.get::<Contact>(edge.source)?;
            tx.get::<Contact>(edge.target)?;
            tx.create(edge.clone())
        })
        .await?)
}

/// Replaces edge `rid`, which must touch `contact` (else `NotFound`), as an edge from `contact`.
pub async fn update(scope: &UserScope, contact: u64, rid: u64, input: RelationshipInput) -> Result<Row<Relationship>> {
    let edge = input.edge(contact);
    Ok(scope
        .write_async(move |tx| {
            let current = tx.get::<Relationship>(rid)?;
            if current.body.source != contact && current.body.target != contact {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            tx.get::<Contact>(edge.target)?;
            tx.put(rid, Precondition::Any, edge.clone())
        })
        .await?)
}

/// Deletes edge `rid`, which must touch `contact` (else `NotFound`).
pub async fn delete(scope: &UserScope, contact: u64, rid: u64) -> Result<()> {
    Ok(scope
        .write_async(move |tx| {
            let current = tx.get::<Relationship>(rid)?;
            if current.body.source != contact && current.body.target != contact {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            tx.delete::<Relationship>(rid, Precondition::Any)
        })
        .await?)
}

/// An edge as clients read it, both ends named.
pub fn shown(view: &UserView, row: &Row<Relationship>) -> Result<Value> {
    let (source, target) = (view.get::<Contact>(row.body.source)?, view.get::<Contact>(row.body.target)?);
    Ok(edge_view(row, &source, &target))
}

/// The user's network: contacts joined by relationships, plus activities shared by two or more.
pub fn graph(view: &UserView) -> Result<Value> {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut node = |id: u64, nodes: &mut Vec<Value>| -> Result<()> {
        if seen.insert(id) {
            let c = view.get::<Contact>(id)?;
            nodes.push(json!({ "id": format!("c-{id}"), "type": "contact", "label": c.body.name() }));
        }
        Ok(())
    };
    for edge in view.list::<Relationship>()? {
        node(edge.body.source, &mut nodes)?;
        node(edge.body.target, &mut nodes)?;
        edges.push(json!({ "id": format!("r-{}", edge.id), "source": format!("c-{}", edge.body.source), "target": format!("c-{}", edge.body.target), "type": "relationship", "label": edge.body.kind }));
    }
    for activity in view.list::<Activity>()?.into_iter().filter(|a| a.body.contact_ids.len() >= 2) {
        nodes.push(json!({ "id": format!("a-{}", activity.id), "type": "activity", "label": activity.body.title }));
        for cid in &activity.body.contact_ids {
            if view.get::<Contact>(*cid).is_ok() {
                node(*cid, &mut nodes)?;
                edges.push(json!({ "id": format!("a-{}-c-{cid}", activity.id), "source": format!("a-{}", activity.id), "target": format!("c-{cid}"), "type": "activity", "label": activity.body.title }));
            }
        }
    }
    Ok(json!({ "nodes": nodes, "edges": edges }))
}
