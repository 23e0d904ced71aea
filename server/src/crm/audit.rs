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
