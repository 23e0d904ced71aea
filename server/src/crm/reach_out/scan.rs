//! The reach-out scan of one user: reads the user's cursor (`last_audit_event_id`), scans the
//! audit events after it in bounded batches and, when there are new events (other than the
//! scan's own bookkeeping), on the first run, or when the last evaluation is a day old,
//! re-evaluates overdue cadences (the same rule as `/cadence-policies/overdue`). Each overdue
//! contact without a suggestion gets a `pending` one; a contact that already has one, pending or
//! dismissed, gets nothing new (a dismissal is never undone). A pending suggestion whose contact
//! is no longer overdue is removed. The cursor then advances.
//!
//! When it runs (hourly, for every account) is the scheduler's table (`jobs`), not this file's.

use jiff::Timestamp;
use mycorrhizal_engine::{Engine, Precondition, Row, TxUser, UserId};

use super::{KIND_CADENCE_OVERDUE, PENDING, ReachOutCursor, ReachOutSuggestion};
use crate::crm::contact::Contact;
use crate::crm::records::BY_CONTACT;
use crate::crm::{Result, blocking};

/// Audit events read per batch.
const AUDIT_BATCH: usize = 500;
/// A contact also becomes overdue by time passing alone, with no audit event: without new
/// events, overdue contacts are still re-evaluated this often.
const REEVALUATE_HOURS: i64 = 24;

/// Scans one user's audit events and cadences at `now`; returns the suggestions created,
/// updated and removed.
pub async fn scan(engine: &Engine, user: UserId, now: Timestamp) -> Result<u64> {
    let Some(plan) = blocking(engine, move |engine| plan(engine, user, now)).await?? else { return Ok(0) };
    let changed = engine
        .write_async(move |tx| {
            let changed = apply(&tx.user(user), &plan)?;
            let cursor = ReachOutCursor { last_audit_event_id: plan.last_seen, scanned_at: now };
            super::store_cursor(&tx.global(), user.0, &cursor)?;
            Ok(changed)
        })
        .await?;
    Ok(changed)
}

/// What one user's pass will write.
struct Plan {
    /// The newest audit event scanned.
    last_seen: u64,
    /// Overdue contacts with the policy found overdue (the most overdue one per contact).
    overdue: Vec<(u64, u64)>,
    /// Pending cadence suggestions whose contact is no longer overdue.
    stale: Vec<u64>,
    /// Field changes seen in the new audit events: `(contact, kind, old, new, audit event)`.
    changes: Vec<(u64, &'static str, String, String, u64)>,
}

fn plan(engine: &Engine, user: UserId, now: Timestamp) -> Result<Option<Plan>> {
    let cursor = super::cursor(&engine.global()?, user.0)?;
    let v = engine.user(user).view()?;
    let mut last_seen = cursor.as_ref().map(|c| c.last_audit_event_id).unwrap_or(0);
    let mut fresh = false;
    let mut changes = Vec::new();
    loop {
        let batch = v.audit_events(last_seen, AUDIT_BATCH)?;
        for event in &batch {
            fresh |= !super::is_own_kind(&event.kind);
            last_seen = last_seen.max(event.seq);
            for (kind, old, new) in super::field_changes(event) {
                changes.push((event.record_id, kind, old, new, event.seq));
            }
        }
        if batch.len() < AUDIT_BATCH {
            break;
        }
    }
    let due = cursor.as_ref().is_none_or(|c| now.duration_since(c.scanned_at).as_hours() >= REEVALUATE_HOURS);
    if !fresh && !due {
        return Ok(None);
    }
    let mut overdue: Vec<(u64, u64)> = Vec::new();
    for item in crate::crm::cadence::ops::overdue(&v, now)? {
        let (contact, policy) = (item.contact_id, item.policy.id);
        if !overdue.iter().any(|(c, _)| *c == contact) {
            overdue.push((contact, policy));
        }
    }
    let stale = v
        .list::<ReachOutSuggestion>()?
        .into_iter()
        .filter(|s| {
            s.body.kind == KIND_CADENCE_OVERDUE
                && s.body.status == PENDING
                && !overdue.iter().any(|(c, _)| *c == s.body.contact_id)
        })
        .map(|s| s.id)
        .collect();
    Ok(Some(Plan { last_seen, overdue, stale, changes }))
}

/// Writes one user's suggestions, re-checking each row inside the transaction (the user may have
/// dismissed a suggestion or deleted a contact since the plan was made).
fn apply(tx: &TxUser<'_, '_>, plan: &Plan) -> mycorrhizal_engine::Result<u64> {
    let mut changed = 0;
    let of_contact = |contact: u64| -> mycorrhizal_engine::Result<Vec<Row<ReachOutSuggestion>>> {
        let mut rows = Vec::new();
        for id in tx.find::<ReachOutSuggestion>(BY_CONTACT, &format!("{contact:020}"))? {
            rows.push(tx.get::<ReachOutSuggestion>(id)?);
        }
        Ok(rows)
    };
    for &(contact, policy) in &plan.overdue {
        if tx.get::<Contact>(contact).is_err()
            || of_contact(contact)?.iter().any(|s| s.body.kind == KIND_CADENCE_OVERDUE)
        {
            continue;
        }
        tx.create(ReachOutSuggestion {
            contact_id: contact,
            kind: KIND_CADENCE_OVERDUE.to_string(),
            status: PENDING.to_string(),
            policy_id: policy,
            audit_event_id: plan.last_seen,
            reminder_id: None,
            old_value: String::new(),
            new_value: String::new(),
        })?;
        changed += 1;
    }
    // A field change: nothing new when a suggestion for the same value exists (pending, or
    // dismissed: never resurfaced); a pending one of the same kind follows the newer value (from
    // its first old value); else a new pending suggestion.
    for (contact, kind, old, new, event) in &plan.changes {
        if tx.get::<Contact>(*contact).is_err() {
            continue;
        }
        let existing = of_contact(*contact)?;
        let same_kind = || existing.iter().filter(|s| s.body.kind == *kind);
        if same_kind().any(|s| s.body.new_value.eq_ignore_ascii_case(new)) {
            continue;
        }
        if let Some(pending) = same_kind().find(|s| s.body.status == PENDING) {
            let (new, event) = (new.clone(), *event);
            tx.update::<ReachOutSuggestion>(pending.id, Precondition::Any, move |s| {
                s.new_value = new;
                s.audit_event_id = event;
                Ok(())
            })?;
        } else {
            tx.create(ReachOutSuggestion {
                contact_id: *contact,
                kind: kind.to_string(),
                status: PENDING.to_string(),
                policy_id: 0,
                audit_event_id: *event,
                reminder_id: None,
                old_value: old.clone(),
                new_value: new.clone(),
            })?;
        }
        changed += 1;
    }
    for &id in &plan.stale {
        if tx.get::<ReachOutSuggestion>(id).is_ok_and(|s| s.body.status == PENDING) {
            tx.delete::<ReachOutSuggestion>(id, Precondition::Any)?;
            changed += 1;
        }
    }
    Ok(changed)
}
