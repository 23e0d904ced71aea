//! Index backfill. A record kind declares the version of its index set
//! ([`Record::INDEX_VERSION`]); the version its stored entries were derived under is kept per
//! kind in the engine's metadata (`index_version:<kind>`, absent meaning 0). Rows written before a
//! kind gained an index have no entry in it, so [`Engine::ensure_indexes`] brings every registered
//! kind whose stored version differs from the declared one up to date:
//!
//! - first, when any such kind has rows, a verified snapshot of the whole database into the
//!   pre-migration folder, as before a migration step (if it cannot be written, nothing changes);
//! - then, per kind, one write transaction through the writer: the kind's index table emptied,
//!   the entries of every live row derived again with the running code (unique indexes checked),
//!   and the declared version stored. A failure rolls that transaction back: the kind keeps its
//!   old entries and version, and the next start tries again.
//!
//! A stored version above the declared one (an older build opening a newer database) also
//! re-derives: the entries then match the code that maintains them from here on.

use std::time::Instant;

use redb::{ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableError, WriteTransaction};

use crate::record::{Record, Row};
use crate::snapshot::Snapshot;
use crate::tables::{self, META};
use crate::{Engine, Error, Result, codec, meta, migrate, read, tx};

/// A record kind registered for index backfill. Build with [`Indexed::of`].
#[derive(Clone, Copy)]
pub struct Indexed {
    /// The kind's name ([`crate::Kind::name`]).
    pub kind: &'static str,
    /// Its declared [`Record::INDEX_VERSION`].
    pub version: u32,
    records: &'static str,
    rebuild: fn(&WriteTransaction) -> Result<u64>,
    pub(crate) check: fn(&ReadTransaction) -> Result<crate::check::KindCheck>,
}

impl Indexed {
    pub fn of<R: Record>() -> Indexed {
        Indexed {
            kind: R::KIND.name,
            version: R::INDEX_VERSION,
            records: R::KIND.records,
            rebuild: rebuild::<R>,
            check: crate::check::kind::<R>,
        }
    }
}

impl Engine {
    /// Checks storage, the index entries of every kind in `kinds` and the change feed, from one
    /// read transaction (blocking). Here, beside the kinds' registration, so that the check
    /// itself ([`crate::check`]) needs no registry.
    pub fn check(&self, kinds: &[Indexed]) -> Result<crate::check::Report> {
        let txn = self.db().begin_read()?;
        let tables = crate::check::storage(&txn)?;
        let kinds = kinds.iter().map(|k| (k.check)(&txn)).collect::<Result<Vec<_>>>()?;
        Ok(crate::check::Report { tables, kinds, feed: crate::check::feed(&txn)? })
    }
}

/// What [`Engine::ensure_indexes`] did.
#[derive(Debug, Clone, Default)]
pub struct ReindexReport {
    /// The verified snapshot taken first, when some kind had rows to re-index.
    pub snapshot: Option<Snapshot>,
    pub kinds: Vec<KindReindexed>,
}

/// One kind whose index entries were derived again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindReindexed {
    pub kind: &'static str,
    /// The stored index version before.
    pub from: u32,
    pub to: u32,
    /// Live rows whose entries were written.
    pub rows: u64,
    pub duration_ms: u64,
}

fn version_key(kind: &str) -> String {
    format!("index_version:{kind}")
}

/// The index version `kind`'s entries were derived under (0 when never recorded).
pub(crate) fn stored_version(txn: &ReadTransaction, kind: &str) -> Result<u32> {
    match txn.open_table(META) {
        Ok(meta) => Ok(meta.get(version_key(kind).as_str())?.map(|v| meta::decode_u32(v.value())).unwrap_or(0)),
        Err(TableError::TableDoesNotExist(_)) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

fn has_rows(txn: &ReadTransaction, records: &str) -> Result<bool> {
    match txn.open_table(tables::record_table(records)) {
        Ok(table) => Ok(!table.is_empty()?),
        Err(TableError::TableDoesNotExist(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn ensure(engine: &Engine, kinds: &[Indexed]) -> Result<ReindexReport> {
    let mut report = ReindexReport::default();
    let (stale, protect) = {
        let txn = engine.db().begin_read()?;
        let mut stale = Vec::new();
        let mut protect = false;
        for kind in kinds {
            let from = stored_version(&txn, kind.kind)?;
            if from != kind.version {
                protect |= has_rows(&txn, kind.records)?;
                stale.push((*kind, from));
            }
        }
        (stale, protect)
    };
    if stale.is_empty() {
        return Ok(report);
    }
    if protect {
        let label = format!("pre-reindex-v{}", engine.schema_version());
        report.snapshot =
            Some(migrate::verified_snapshot(engine.db(), engine.pre_migration_dir(), &label, engine.clock().now())?);
    }
    for (kind, from) in stale {
        let started = Instant::now();
        tracing::info!(event = "reindex_started", component = "migration", kind = kind.kind, from, to = kind.version);
        let failed = |e: Error| Error::ReindexFailed { kind: kind.kind, version: kind.version, reason: e.to_string() };
        let rows = engine
            .write(move |tx| {
                let txn = tx.txn();
                let rows = (kind.rebuild)(txn)?;
                let mut meta = txn.open_table(META)?;
                meta.insert(version_key(kind.kind).as_str(), kind.version.to_le_bytes().as_slice())?;
                Ok(rows)
            })
            .map_err(failed)?;
        let duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            event = "reindex_completed",
            component = "migration",
            kind = kind.kind,
            from,
            to = kind.version,
            rows,
            duration_ms
        );
        report.kinds.push(KindReindexed { kind: kind.kind, from, to: kind.version, rows, duration_ms });
    }
    Ok(report)
}

/// Empties `R`'s index table and writes the entries of every live row again; returns how many
/// rows were indexed.
fn rebuild<R: Record>(txn: &WriteTransaction) -> Result<u64> {
    txn.delete_table(tables::index_table(R::KIND.index))?;
    let records = txn.open_table(tables::record_table(R::KIND.records))?;
    let mut index = txn.open_table(tables::index_table(R::KIND.index))?;
    let mut rows = 0;
    for entry in records.iter()? {
        let (key, value) = entry?;
        let row: Row<R> = codec::decode(R::KIND.records, value.value())?;
        if row.is_deleted() {
            continue;
        }
        let user = key.value().0;
        for (name, value) in tx::entries_of(&row) {
            if R::UNIQUE.contains(&name) && read::index_ids(&index, user, name, &value)?.iter().any(|id| *id != row.id)
            {
                return Err(Error::Duplicate { index: name });
            }
            index.insert((user, name, value.as_str(), row.id), ())?;
        }
        rows += 1;
    }
    Ok(rows)
}

/// Presents a closed database file as written by an older build, one whose `kind` had no entries
/// in `indexes` yet: those entries removed, the kind's stored index version set to `version`.
/// Test support only.
#[cfg(feature = "test-hooks")]
pub fn rewind_for_tests(path: &std::path::Path, kind: crate::Kind, indexes: &[&str], version: u32) -> Result<()> {
    let db = redb::Database::builder().set_cache_size(crate::SIDE_CACHE_BYTES).open(path)?;
    let txn = db.begin_write()?;
    {
        let mut index = txn.open_table(tables::index_table(kind.index))?;
        index.retain(|(_, name, _, _), ()| !indexes.contains(&name))?;
        let mut meta = txn.open_table(META)?;
        meta.insert(version_key(kind.name).as_str(), version.to_le_bytes().as_slice())?;
    }
    txn.commit()?;
    Ok(())
}
