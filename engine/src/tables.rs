//! Every redb table the engine owns, and the naming convention that lets a snapshot copy them
//! without a registry. A name's prefix fixes its key and value types:
//! `rec:<kind>` records, `idx:<kind>` their secondary indexes, `sys:<name>` system records keyed by
//! a global id, `map:<name>` string-keyed values. The fixed tables below complete the set.
//!
//! Keys start with the user id, so one user's rows are one contiguous range in every user table.

use redb::TableDefinition;

pub const RECORD_PREFIX: &str = "rec:";
pub const INDEX_PREFIX: &str = "idx:";
pub const SYSTEM_PREFIX: &str = "sys:";
pub const MAP_PREFIX: &str = "map:";
/// Tables of map layout written under a name without the prefix by earlier versions (the
/// reach-out scan's cursors), known here so a snapshot of such a database (the one before the
/// migration that renames them) can copy them.
pub const LEGACY_MAP_TABLES: &[&str] = &["reach_out_cursor"];

/// Per-user change feed: `(user_id, seq) -> encoded Change`.
/// `(user_id, seq) -> encoded AuditEvent`; `seq` is the change-feed sequence of the same change.
pub(crate) const AUDIT: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("audit");
/// `user_id -> hash of the newest removed event` (the chain's anchor after retention).
pub(crate) const AUDIT_ANCHORS: TableDefinition<u64, &[u8]> = TableDefinition::new("audit_anchors");
pub const CHANGES: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("changes");
/// Monotonic counters: `"id:<kind>"` (record ids) and `"users"`.
pub const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
/// Live rows per user and record kind: `(user_id, kind) -> count`.
pub const LIVE_COUNTS: TableDefinition<(u64, &str), u64> = TableDefinition::new("live_counts");
/// Last change-feed sequence per user.
pub const USER_SEQ: TableDefinition<u64, u64> = TableDefinition::new("user_seq");
/// Engine metadata: schema version, dirty-migration marker.
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("map:meta");
/// Per-user binary objects (contact pictures): `(user_id, name) -> bytes`. Written in the
/// transaction that names them in a row, so a row never names a missing picture, and part of
/// every snapshot like any other table.
pub const BLOBS: TableDefinition<(u64, &str), &[u8]> = TableDefinition::new("blobs");
/// System events (operational timeline, hard-deleted by retention): `id -> encoded SystemEvent`.
pub const SYSTEM_EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("sys:system_events");
/// Scheduled-job runs: `id -> encoded JobRun`.
pub const JOB_RUNS: TableDefinition<u64, &[u8]> = TableDefinition::new("sys:job_runs");

/// `(user_id, record_id) -> encoded Row` for one record kind.
pub fn record_table(name: &str) -> TableDefinition<'_, (u64, u64), &'static [u8]> {
    TableDefinition::new(name)
}

/// `(user_id, index name, normalized value, record_id) -> ()` for one record kind.
pub fn index_table(name: &str) -> TableDefinition<'_, (u64, &'static str, &'static str, u64), ()> {
    TableDefinition::new(name)
}

/// `id -> encoded value` for a system table (`sys:<name>`).
pub fn system_table(name: &str) -> TableDefinition<'_, u64, &'static [u8]> {
    TableDefinition::new(name)
}

/// `key -> encoded value` for a map table (`map:<name>`).
pub fn map_table(name: &str) -> TableDefinition<'_, &'static str, &'static [u8]> {
    TableDefinition::new(name)
}
