//! Relationships between two of the user's contacts: typed edges (known tokens such as
//! `spouse_of`, `parent_of`, `friend_of`, everyday words mapped onto them, or a custom type).
//! Their operations (create, replace, delete from either end), views, and the network graph.

use jiff::Timestamp;
use mycorrhizal_engine::{Precondition, Row, UserScope, UserView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::crm::Result;
use crate::crm::contact::Contact;
use crate::crm::{
    activity::Activity, relationship::BY_SOURCE, relationship::BY_TARGET, relationship::KNOWN_RELATIONS,
    relationship::Relationship, relationship::relation_token,
};

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

/// A relationship edge as clients read it, both ends named by UID and by integer id.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelationshipView {
    pub id: u64,
    /// The source contact's UID.
    pub source_id: String,
    /// The target contact's UID.
    pub target_id: String,
    pub source_contact_id: u64,
    pub target_contact_id: u64,
    /// The relation token (`spouse_of`, `friend_of`, ...) or a custom type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Whether the type is not one of the known tokens.
    pub custom: bool,
    /// `normal`, `private` or `secret`.
    pub sensitivity: String,
    pub note: String,
    /// `confirmed`, or `suggested` (inferred, waiting for an accept).
    pub status: String,
    /// Where it came from: `user-confirmed`, `household-inferred`, `graph-inferred`, ...
    pub source: String,
    /// Whether it reads one way only (`parent_of`); a symmetric type (`sibling_of`) does not.
    pub directional: bool,
    /// 0 to 1.
    pub confidence: f64,
    /// A free-form object.
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
    pub revision: u64,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
    #[schema(value_type = String)]
    pub updated_at: Timestamp,
}

impl RelationshipView {
    pub fn of(row: &Row<Relationship>, source: &Row<Contact>, target: &Row<Contact>) -> RelationshipView {
        let r = &row.body;
        RelationshipView {
            id: row.id,
            source_id: source.body.uid.clone(),
            target_id: target.body.uid.clone(),
            source_contact_id: r.source,
            target_contact_id: r.target,
            kind: r.kind.clone(),
            custom: !KNOWN_RELATIONS.contains(&r.kind.as_str()),
            sensitivity: r.sensitivity.clone(),
            note: r.note.clone(),
            status: r.status.clone(),
            source: r.origin.clone(),
            directional: !crate::crm::relationship::SYMMETRIC_RELATIONS.contains(&r.kind.as_str()),
            confidence: r.confidence,
            metadata: serde_json::from_str(&r.metadata).unwrap_or_else(|_| serde_json::json!({})),
            revision: row.meta.revision,
            created_at: row.meta.created_at,
            updated_at: row.meta.updated_at,
        }
    }
}

/// An edge in a contact's list: the edge with the other party named.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ListedRelationship {
    #[serde(flatten)]
    pub edge: RelationshipView,
    pub other_party_contact_id: u64,
    pub other_party_name: String,
}

/// `{relationships}`: the edges starting or ending at a contact.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RelationshipList {
    pub relationships: Vec<ListedRelationship>,
}

/// An entry of the contact page's `relationship_edges`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DetailEdge {
    pub edge: RelationshipView,
    pub other_party_contact_id: u64,
    pub other_party_name: String,
    pub other_party_uid: String,
    /// The edge's type as stored.
    pub display_token: String,
}

/// The composite detail's `relationship_edges` entries.
pub fn detail_edges(view: &UserView, contact: u64) -> Result<Vec<DetailEdge>> {
    let me = view.get::<Contact>(contact)?;
    let mut out = Vec::new();
    for (edge, outgoing) in edges_of(view, contact)? {
        let other = view.get::<Contact>(if outgoing { edge.body.target } else { edge.body.source })?;
        let (source, target) = if outgoing { (&me, &other) } else { (&other, &me) };
        out.push(DetailEdge {
            edge: RelationshipView::of(&edge, source, target),
            other_party_contact_id: other.id,
            other_party_name: other.body.name(),
            other_party_uid: other.body.uid.clone(),
            display_token: edge.body.kind.clone(),
        });
    }
    Ok(out)
}

/// The edges starting (`outgoing`) or ending at `contact`, with the other party named.
pub fn listed(view: &UserView, contact: u64, outgoing: bool) -> Result<RelationshipList> {
    let me = view.get::<Contact>(contact)?;
    let mut relationships = Vec::new();
    for (edge, from_here) in edges_of(view, contact)? {
        if from_here != outgoing {
            continue;
        }
        let other = view.get::<Contact>(if outgoing { edge.body.target } else { edge.body.source })?;
        let (source, target) = if outgoing { (&me, &other) } else { (&other, &me) };
        relationships.push(ListedRelationship {
            edge: RelationshipView::of(&edge, source, target),
            other_party_contact_id: other.id,
            other_party_name: other.body.name(),
        });
    }
    Ok(RelationshipList { relationships })
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
        Relationship::confirmed(
            source,
            self.target_id,
            relation_token(&self.kind),
            self.sensitivity.unwrap_or_else(|| "normal".into()),
            self.note.unwrap_or_default(),
        )
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
            // What the user does not edit here stays: an accepted suggestion's origin, its metadata.
            let kept = Relationship {
                status: current.body.status,
                origin: current.body.origin,
                confidence: current.body.confidence,
                metadata: current.body.metadata,
                ..edge.clone()
            };
            tx.put(rid, Precondition::Any, kept)
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
pub fn shown(view: &UserView, row: &Row<Relationship>) -> Result<RelationshipView> {
    let (source, target) = (view.get::<Contact>(row.body.source)?, view.get::<Contact>(row.body.target)?);
    Ok(RelationshipView::of(row, &source, &target))
}

/// A node of the graph: a contact (`c-<id>`) or an activity (`a-<id>`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GraphNode {
    pub id: String,
    /// `contact` or `activity`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The contact's name or the activity's title.
    pub label: String,
}

/// An edge of the graph: a relationship (`r-<id>`) between two contacts, or an activity's link
/// to one of its contacts (`a-<id>-c-<id>`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GraphEdge {
    pub id: String,
    /// The node it starts at.
    pub source: String,
    /// The node it ends at.
    pub target: String,
    /// `relationship` or `activity`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The relation token or the activity's title.
    pub label: String,
}

/// `{nodes, edges}`: the user's network.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

/// The user's network: contacts joined by confirmed relationships, plus activities shared by two
/// or more; with `everyone`, also every active contact with neither (the existing clients build
/// their circle view and contact picker from the nodes).
pub fn graph(view: &UserView, everyone: bool) -> Result<Graph> {
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut node = |id: u64, nodes: &mut Vec<GraphNode>| -> Result<()> {
        if seen.insert(id) {
            let c = view.get::<Contact>(id)?;
            nodes.push(GraphNode { id: format!("c-{id}"), kind: "contact".into(), label: c.body.name() });
        }
        Ok(())
    };
    for edge in view.list::<Relationship>()?.into_iter().filter(|e| e.body.is_confirmed()) {
        node(edge.body.source, &mut nodes)?;
        node(edge.body.target, &mut nodes)?;
        edges.push(GraphEdge {
            id: format!("r-{}", edge.id),
            source: format!("c-{}", edge.body.source),
            target: format!("c-{}", edge.body.target),
            kind: "relationship".into(),
            label: edge.body.kind.clone(),
        });
    }
    for activity in view.list::<Activity>()?.into_iter().filter(|a| a.body.contact_ids.len() >= 2) {
        let title = &activity.body.title;
        nodes.push(GraphNode { id: format!("a-{}", activity.id), kind: "activity".into(), label: title.clone() });
        for cid in &activity.body.contact_ids {
            if view.get::<Contact>(*cid).is_ok() {
                node(*cid, &mut nodes)?;
                edges.push(GraphEdge {
                    id: format!("a-{}-c-{cid}", activity.id),
                    source: format!("a-{}", activity.id),
                    target: format!("c-{cid}"),
                    kind: "activity".into(),
                    label: title.clone(),
                });
            }
        }
    }
    if everyone {
        for c in view.list::<Contact>()? {
            if !c.body.archived && seen.insert(c.id) {
                nodes.push(GraphNode { id: format!("c-{}", c.id), kind: "contact".into(), label: c.body.name() });
            }
        }
    }
    Ok(Graph { nodes, edges })
}
