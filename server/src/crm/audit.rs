//! The user's own audit trail: a CSV export of their events, and undo of an update event, which
//! puts back the fields it changed when the record is still as that update left it (read and
//! written in one transaction). Which kinds can be undone is the kinds registry's word.

use mycorrhizal_engine::AuditEvent;
use mycorrhizal_engine::{Op, UserScope, UserView};
use serde_json::{Value, json};

use super::{Error, Result, kinds};

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

/// The user's audit events as CSV (id, at, kind, record_id, action, revision, changes as JSON,
/// prev_hash, hash), oldest first.
/// Most events one export holds.
pub const MAX_EXPORT: usize = 100_000;

pub fn export_csv(v: &UserView) -> Result<String> {
    let events = v.audit_events(0, MAX_EXPORT + 1)?;
    if events.len() > MAX_EXPORT {
        return Err(crate::crm::Error::bad_parameter(
            "audit",
            format!("more than {MAX_EXPORT} events: too many for one export"),
        ));
    }
    let mut out = String::from("id,at,kind,record_id,action,revision,changes,prev_hash,hash\n");
    for e in events {
        let changes: Vec<Value> =
            e.changes.iter().map(|c| json!({ "field": c.field, "before": c.before, "after": c.after })).collect();
        let action = match e.action {
            Op::Created => "create",
            Op::Updated => "update",
            Op::Deleted => "delete",
        };
        let row = [
            e.seq.to_string(),
            e.at.to_string(),
            e.kind,
            e.record_id.to_string(),
            action.to_string(),
            e.revision.to_string(),
            Value::Array(changes).to_string(),
            e.prev_hash,
            e.hash,
        ];
        out.push_str(&row.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    Ok(out)
}

/// Event `id` of the user's trail.
pub fn event(v: &UserView, id: u64) -> Result<AuditEvent> {
    v.audit_events(id.saturating_sub(1), 1)?.into_iter().find(|e| e.seq == id).ok_or(Error::NotFound)
}

/// Undoes an update event of the user's trail (read with [`event`]). Create and delete events,
/// kinds that cannot be undone, and records changed since are conflicts.
pub async fn undo(scope: &UserScope, event: AuditEvent) -> Result<()> {
    match event.action {
        Op::Updated => {}
        Op::Deleted => return Err(Error::Conflict("Delete events cannot be undone".into())),
        Op::Created => {
            return Err(Error::Conflict("Only update events can be undone; delete the record instead".into()));
        }
    }
    let Some(revert) = kinds::all().into_iter().find(|k| k.name == event.kind).and_then(|k| k.revert) else {
        return Err(Error::Conflict(format!("{} changes cannot be undone", event.kind)));
    };
    let (record, revision, changes) = (event.record_id, event.revision, event.changes);
    scope.write_async(move |tx| revert(tx, record, revision, &changes)).await?
}

/// Walks each of `users`' audit hash chains (the daily integrity pass); returns the events
/// verified and, for each broken chain, `user N: why`.
pub async fn verify_chains(engine: &mycorrhizal_engine::Engine, users: Vec<u64>) -> Result<(u64, Vec<String>)> {
    super::blocking(engine, move |engine| {
        let (mut verified, mut broken) = (0u64, Vec::new());
        for user in users {
            match engine.user(mycorrhizal_engine::UserId(user)).view().and_then(|v| v.verify_audit()) {
                Ok(n) => verified += n,
                Err(e) => broken.push(format!("user {user}: {e}")),
            }
        }
        (verified, broken)
    })
    .await
}

/// One event of `GET /audit`, at the existing clients' shape (`entity_type`, `entity_id`,
/// `operation`, `before_snapshot`) with this server's own members beside it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct AuditEntry {
    pub id: u64,
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String)]
    pub updated_at: jiff::Timestamp,
    /// The record kind (`contact`, `note`, ...; circles and tags are `group`).
    pub entity_type: String,
    /// A contact's vCard UID while it exists; otherwise the record's id, as text.
    pub entity_id: String,
    pub record_id: u64,
    /// `create`, `update` or `delete`.
    pub operation: &'static str,
    /// The record's revision after the change.
    pub revision: u64,
    /// The changed fields' values before, as a JSON object text; absent for a create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_snapshot: Option<String>,
    /// `[{field, before, after}]`, each value as JSON text.
    #[schema(value_type = Vec<Object>)]
    pub changes: Vec<Value>,
}

/// `{audit_events, total}`: `total` is how many are listed.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct AuditList {
    pub audit_events: Vec<AuditEntry>,
    pub total: usize,
}

/// The user's newest `limit` events, of one kind (`entity_type`) and record (`entity_id`: an
/// id, or a contact's vCard UID) when given.
pub fn latest(v: &UserView, entity_type: Option<&str>, entity_id: Option<&str>, limit: usize) -> Result<AuditList> {
    use crate::crm::contact::{Contact, INDEX_UID};
    let kind = entity_type.map(str::trim).filter(|k| !k.is_empty()).map(|k| match k {
        "circle" | "tag" => "group".to_string(),
        other => other.to_string(),
    });
    let record = match entity_id.map(str::trim).filter(|e| !e.is_empty()) {
        None => None,
        Some(text) => Some(match text.parse::<u64>() {
            Ok(id) => id,
            Err(_) => match v.find::<Contact>(INDEX_UID, &text.to_lowercase())?.first() {
                Some(id) => *id,
                None => return Ok(AuditList { audit_events: Vec::new(), total: 0 }),
            },
        }),
    };
    let events = v.latest_audit_events(limit, |e| {
        kind.as_deref().is_none_or(|k| e.kind == k) && record.is_none_or(|r| e.record_id == r)
    })?;
    let audit_events: Vec<AuditEntry> = events
        .into_iter()
        .map(|e| {
            let operation = match e.action {
                Op::Created => "create",
                Op::Updated => "update",
                Op::Deleted => "delete",
            };
            let entity_id = match (e.kind.as_str(), v.get::<Contact>(e.record_id)) {
                ("contact", Ok(row)) => row.body.uid,
                _ => e.record_id.to_string(),
            };
            let before_snapshot = (operation != "create").then(|| {
                let before: serde_json::Map<String, Value> = e
                    .changes
                    .iter()
                    .map(|c| {
                        (c.field.clone(), serde_json::from_str(&c.before).unwrap_or(Value::String(c.before.clone())))
                    })
                    .collect();
                Value::Object(before).to_string()
            });
            AuditEntry {
                id: e.seq,
                created_at: e.at,
                updated_at: e.at,
                entity_type: e.kind.clone(),
                entity_id,
                record_id: e.record_id,
                operation,
                revision: e.revision,
                before_snapshot,
                changes: e
                    .changes
                    .iter()
                    .map(|c| json!({ "field": c.field, "before": c.before, "after": c.after }))
                    .collect(),
            }
        })
        .collect();
    Ok(AuditList { total: audit_events.len(), audit_events })
}
