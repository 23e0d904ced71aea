//! Relationship edges as clients read them, and the edges that touch one contact.

use mycorrhizal_engine::{Row, UserView};
use serde_json::{Value, json};

use super::Result;
use super::contact::Contact;
use super::records::{BY_SOURCE, BY_TARGET, KNOWN_RELATIONS, Relationship};

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
