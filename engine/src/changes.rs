//! The per-user change feed: an append-only log `(user_id, seq) -> Change`, written in the same
//! transaction as the change it describes. Search indexing, DAV sync tokens and webhooks follow it.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// What happened to a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Created,
    Updated,
    /// Soft- or hard-deleted; the feed entry is the tombstone sync clients see.
    Deleted,
}

/// One entry of a user's change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Per-user sequence number, starting at 1, without gaps.
    pub seq: u64,
    /// Record kind name (e.g. `contact`).
    pub kind: String,
    pub id: u64,
    pub op: Op,
    /// The row's revision after the change.
    pub revision: u64,
    #[serde(with = "crate::codec::micros")]
    pub at: Timestamp,
}
