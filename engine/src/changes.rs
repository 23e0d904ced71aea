//! The per-user change feed: an append-only log `(user_id, seq) -> Change`, written in the same
//! transaction as the change it describes. Search indexing, DAV sync tokens and webhooks follow it.
//! Also what a committed batch hands to whoever follows it at once (`CommitHook`).

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

/// A row a committed write batch touched: its user, the change-feed sequence of its latest
/// change in the batch, and which row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Touched {
    pub user: u64,
    pub seq: u64,
    pub kind: &'static str,
    pub id: u64,
}

/// What the writer tells after each durable commit, before it answers any caller: the rows the
/// batch touched and the users it purged. The full-text index registers one (its read-your-writes
/// overlay depends on hearing of a write before the write is acknowledged), so the writer needs
/// to know nothing of search. A hook must be quick and must not fail: the batch is committed.
pub(crate) trait CommitHook: Send + Sync {
    fn committed(&self, touched: &[Touched], purged: &[u64]);
}
