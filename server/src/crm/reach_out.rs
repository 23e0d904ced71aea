//! Reach-out suggestions: the `reach_out_scan` job proposes getting in touch with contacts whose
//! cadence is overdue. A suggestion is `pending` or `dismissed` (a user decision the scan never
//! undoes), may link the one-off reminder made when it was accepted, and is hard-deleted. One
//! cursor per user remembers the last audit event the scan has seen.

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalView, Invalid, Kind, Record, TxGlobal, kind};
use serde::{Deserialize, Serialize};

use super::records::BY_CONTACT;

pub const PENDING: &str = "pending";
pub const DISMISSED: &str = "dismissed";
pub const STATUSES: &[&str] = &[PENDING, DISMISSED];
/// The only kind the scan proposes so far: the contact's cadence is overdue.
pub const KIND_CADENCE_OVERDUE: &str = "cadence_overdue";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachOutSuggestion {
    pub contact_id: u64,
    /// Why: `cadence_overdue`.
    pub kind: String,
    /// `pending` or `dismissed`.
    pub status: String,
    /// The cadence policy found overdue.
    pub policy_id: u64,
    /// The newest audit event the scan had seen when it proposed this.
    pub audit_event_id: u64,
    /// The one-off reminder made when the suggestion was accepted.
    pub reminder_id: Option<u64>,
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

/// The `map:<name>` table holding every user's cursor (key: the user id in decimal).
pub const CURSOR_MAP: &str = "reach_out_cursor";

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
