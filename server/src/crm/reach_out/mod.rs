//! Reach-out suggestions: the `reach_out_scan` job proposes getting in touch with contacts whose
//! cadence is overdue, and with contacts whose organization, job title or address changed (a new
//! job, a move: news worth a message). A suggestion is `pending` or `dismissed` (a user decision
//! the scan never undoes), may link the one-off reminder made when it was accepted, and is
//! hard-deleted. One cursor per user remembers the last audit event the scan has seen.

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalView, Invalid, Kind, Record, TxGlobal, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::BY_CONTACT;

pub mod ops;
pub mod scan;

pub const PENDING: &str = "pending";
pub const DISMISSED: &str = "dismissed";
pub const STATUSES: &[&str] = &[PENDING, DISMISSED];
/// The contact's cadence is overdue.
pub const KIND_CADENCE_OVERDUE: &str = "cadence_overdue";
/// The contact's organization changed.
pub const KIND_ORGANIZATION: &str = "organization";
/// The contact's job title changed.
pub const KIND_TITLE: &str = "title";
/// The contact's (first) address changed.
pub const KIND_ADDRESS: &str = "address";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachOutSuggestion {
    pub contact_id: u64,
    /// Why: `cadence_overdue`, `organization`, `title` or `address`.
    pub kind: String,
    /// `pending` or `dismissed`.
    pub status: String,
    /// The cadence policy found overdue (0 for a field change).
    pub policy_id: u64,
    /// The audit event of the field change, or for a cadence the newest one the scan had seen.
    pub audit_event_id: u64,
    /// The one-off reminder made when the suggestion was accepted.
    pub reminder_id: Option<u64>,
    /// A field change's value before and after (empty for a cadence).
    pub old_value: String,
    pub new_value: String,
}

/// The stored shape before field-change suggestions (schema version 2), for the migration that
/// converts it.
#[derive(Debug, Clone, Deserialize)]
pub struct ReachOutSuggestionV2 {
    pub contact_id: u64,
    pub kind: String,
    pub status: String,
    pub policy_id: u64,
    pub audit_event_id: u64,
    pub reminder_id: Option<u64>,
}

impl From<ReachOutSuggestionV2> for ReachOutSuggestion {
    fn from(old: ReachOutSuggestionV2) -> Self {
        ReachOutSuggestion {
            contact_id: old.contact_id,
            kind: old.kind,
            status: old.status,
            policy_id: old.policy_id,
            audit_event_id: old.audit_event_id,
            reminder_id: old.reminder_id,
            old_value: String::new(),
            new_value: String::new(),
        }
    }
}

/// Migration step 3: stored suggestions gain `old_value` and `new_value`.
pub fn migrate_values(txn: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::convert_rows::<ReachOutSuggestionV2, ReachOutSuggestion>(txn, From::from).map(|_| ())
}

/// The news in one audit event: each of the contact's organization, job title and first address
/// that went from one non-empty value to another, as `(kind, old, new)`. Filling in a blank is
/// data entry, not news, and clearing a value says nothing either.
pub fn field_changes(event: &mycorrhizal_engine::AuditEvent) -> Vec<(&'static str, String, String)> {
    use mycorrhizal_engine::Record as _;
    if event.kind != crate::crm::contact::Contact::KIND.name || event.action != mycorrhizal_engine::Op::Updated {
        return Vec::new();
    }
    let Some(change) = event.changes.iter().find(|c| c.field == "card") else { return Vec::new() };
    // The audit log keeps the field as JSON: a string holding the card's JSON.
    let flat = |text: &str| {
        let card: String = serde_json::from_str(text).ok()?;
        let card: mycorrhizal_codecs::card::Card = serde_json::from_str(&card).ok()?;
        Some(mycorrhizal_codecs::projection::project(&card))
    };
    let (Some(before), Some(after)) = (flat(&change.before), flat(&change.after)) else { return Vec::new() };
    [
        (KIND_ORGANIZATION, before.org, after.org),
        (KIND_TITLE, before.job_title, after.job_title),
        (KIND_ADDRESS, before.address, after.address),
    ]
    .into_iter()
    .map(|(kind, old, new)| (kind, old.trim().to_string(), new.trim().to_string()))
    .filter(|(_, old, new)| !old.is_empty() && !new.is_empty() && old != new)
    .collect()
}

impl Record for ReachOutSuggestion {
    const KIND: Kind = kind!("reach_out_suggestion", hard_delete);

    fn validate(&self) -> Result<(), Invalid> {
        if !STATUSES.contains(&self.status.as_str()) {
            return Err(Invalid::new("status", "must be pending or dismissed"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, format!("{:020}", self.contact_id))]
    }
}

/// Where a user's reach-out scan stopped. One row per user, kept in a global map keyed by user id
/// rather than among the user's records, so that the scan's bookkeeping stays out of the user's
/// audit log and change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReachOutCursor {
    /// The last audit event scanned.
    pub last_audit_event_id: u64,
    /// When overdue contacts were last re-evaluated.
    pub scanned_at: Timestamp,
}

/// The map table holding every user's cursor (key: the user id in decimal). Earlier versions
/// named it without the `map:` prefix (`LEGACY_CURSOR_MAP`), which no snapshot could copy;
/// migration 4 moves it.
pub const CURSOR_MAP: &str = "map:reach_out_cursor";
pub const LEGACY_CURSOR_MAP: &str = "reach_out_cursor";

/// Migration step 4: the cursors move under their prefixed name.
pub fn migrate_cursor_table(step: &mycorrhizal_engine::migrate::MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    mycorrhizal_engine::migrate::rename_map_table(step, LEGACY_CURSOR_MAP, CURSOR_MAP).map(|_| ())
}

/// `user`'s cursor, if the scan has run for them.
pub fn cursor(view: &GlobalView, user: u64) -> mycorrhizal_engine::Result<Option<ReachOutCursor>> {
    Ok(view.map_get(CURSOR_MAP, &user.to_string())?.and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

/// Stores `user`'s cursor.
pub fn store_cursor(tx: &TxGlobal<'_, '_>, user: u64, cursor: &ReachOutCursor) -> mycorrhizal_engine::Result<()> {
    let bytes = serde_json::to_vec(cursor).unwrap_or_default();
    tx.map_put(CURSOR_MAP, &user.to_string(), &bytes)
}

/// Audit events of this kind are the scan's own writes (or decisions on its suggestions) and do
/// not call for a new scan.
pub fn is_own_kind(kind: &str) -> bool {
    kind == ReachOutSuggestion::KIND.name
}
