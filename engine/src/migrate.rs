//! Numbered schema migrations, run at open. Before the first pending step of an existing
//! database, a consistent snapshot is written and verified; if that fails, nothing migrates.
//!
//! A step runs in its own write transaction together with the version bump, so a failed step
//! leaves the database at the previous version. A dirty marker is committed before each step and
//! cleared with its version bump: if the process dies mid-step, the next open refuses to start,
//! because a step may also touch files outside the database.

use std::path::Path;
use std::time::Instant;

use jiff::Timestamp;
use redb::{Database, ReadableDatabase, ReadableTable, WriteTransaction};

use crate::meta::{VERSION_KEY, decode_u32};
use crate::snapshot::{self, Snapshot};
use crate::tables::{self, CHANGES, COUNTERS, JOB_RUNS, LIVE_COUNTS, META, SYSTEM_EVENTS, USER_SEQ};
use crate::{Error, Result, meta};

const DIRTY_KEY: &str = "migration_dirty";

/// One numbered step.
#[derive(Clone, Copy)]
pub struct Migration {
    pub version: u32,
    pub name: &'static str,
    pub run: fn(&MigrationTx<'_>) -> Result<()>,
}

/// The write transaction a migration step runs in, together with its version bump. Steps change
/// stored data through this module's functions on it (e.g. [`convert_rows`]); what it wraps is
/// the engine's own business.
pub struct MigrationTx<'a> {
    txn: &'a WriteTransaction,
}

/// What the migrations of [`crate::Engine::open`] did, for the server's system events.
#[derive(Debug, Clone)]
pub struct MigrationReport {
    pub from: u32,
    pub to: u32,
    /// The verified pre-migration snapshot, when one was taken.
    pub snapshot: Option<Snapshot>,
    pub steps: Vec<StepReport>,
}

#[derive(Debug, Clone)]
pub struct StepReport {
    pub version: u32,
    pub name: &'static str,
    pub duration_ms: u64,
}

/// The engine's own migration steps, in order.
pub fn steps() -> Vec<Migration> {
    vec![
        Migration { version: 1, name: "core tables", run: create_core_tables },
        Migration { version: 2, name: "live row counts", run: count_live_rows },
    ]
}

/// The schema version this build's default steps produce.
pub fn latest() -> u32 {
    steps().last().map(|m| m.version).unwrap_or(0)
}

fn create_core_tables(step: &MigrationTx<'_>) -> Result<()> {
    let txn = step.txn;
    txn.open_table(COUNTERS)?;
    txn.open_table(USER_SEQ)?;
    txn.open_table(CHANGES)?;
    txn.open_table(SYSTEM_EVENTS)?;
    txn.open_table(JOB_RUNS)?;
    Ok(())
}

/// Backfills `live_counts` from the record tables (the write path maintains it from then on).
fn count_live_rows(step: &MigrationTx<'_>) -> Result<()> {
    let txn = step.txn;
    use std::collections::BTreeMap;
    let names: Vec<String> = txn.list_tables()?.map(|h| redb::TableHandle::name(&h).to_string()).collect();
    let mut counts: BTreeMap<(u64, String), u64> = BTreeMap::new();
    for name in names.iter().filter(|n| n.starts_with(tables::RECORD_PREFIX)) {
        let kind = &name[tables::RECORD_PREFIX.len()..];
        let table = txn.open_table(tables::record_table(name))?;
        for entry in table.iter()? {
            let (key, value) = entry?;
            let meta: (u64, crate::record::Meta) = crate::codec::decode(name, value.value())?;
            if meta.1.deleted_at.is_none() {
                *counts.entry((key.value().0, kind.to_string())).or_default() += 1;
            }
        }
    }
    let mut table = txn.open_table(LIVE_COUNTS)?;
    for ((user, kind), count) in counts {
        table.insert((user, kind.as_str()), count)?;
    }
    Ok(())
}

/// For a migration step: re-encodes every stored row of record kind `R` from the body shape
/// `Old` it was written with, through `convert`. Rows are postcard without field names, so a
/// body that gains, loses or reorders a field cannot read its old rows until they are converted.
/// Tombstones are converted too; ids, bookkeeping and index entries stay as they are (a changed
/// index also raises `INDEX_VERSION`). Returns how many rows were converted.
pub fn convert_rows<Old, R>(step: &MigrationTx<'_>, convert: fn(Old) -> R) -> Result<u64>
where
    Old: serde::de::DeserializeOwned,
    R: crate::Record,
{
    let txn = step.txn;
    let mut table = match txn.open_table(tables::record_table(R::KIND.records)) {
        Ok(table) => table,
        Err(e) => return Err(e.into()),
    };
    let mut converted = Vec::new();
    for entry in table.iter()? {
        let (key, value) = entry?;
        let old: crate::Row<Old> = crate::codec::decode(R::KIND.records, value.value())?;
        let row = crate::Row { id: old.id, meta: old.meta, body: convert(old.body) };
        converted.push((key.value(), crate::codec::encode(&row)));
    }
    for (key, bytes) in &converted {
        table.insert(*key, bytes.as_slice())?;
    }
    Ok(converted.len() as u64)
}

/// For a migration step: moves every row of the map-layout table `from` into `to` (created when
/// missing) and deletes `from`; a missing `from` moves nothing. Returns the rows moved.
pub fn rename_map_table(step: &MigrationTx<'_>, from: &str, to: &str) -> Result<u64> {
    let txn = step.txn;
    let rows: Vec<(String, Vec<u8>)> = match txn.open_table(tables::map_table(from)) {
        Ok(table) => table
            .iter()?
            .map(|entry| entry.map(|(k, v)| (k.value().to_string(), v.value().to_vec())))
            .collect::<std::result::Result<_, _>>()?,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    {
        let mut target = txn.open_table(tables::map_table(to))?;
        for (key, value) in &rows {
            target.insert(key.as_str(), value.as_slice())?;
        }
    }
    txn.delete_table(tables::map_table(from))?;
    Ok(rows.len() as u64)
}

/// The schema version recorded in the closed database file at `path` (0 for a new file), read
/// without migrating it: for tests and tools that check what an earlier start left.
pub fn read_version(path: &Path) -> Result<u32> {
    let db = Database::builder().set_cache_size(crate::SIDE_CACHE_BYTES).open(path)?;
    let txn = db.begin_read()?;
    meta::read_version(&txn)
}

fn markers(db: &Database) -> Result<(u32, Option<u32>)> {
    let txn = db.begin_write()?;
    let found = {
        let meta = txn.open_table(META)?;
        let version = meta.get(VERSION_KEY)?.map(|v| decode_u32(v.value())).unwrap_or(0);
        let dirty = meta.get(DIRTY_KEY)?.map(|v| decode_u32(v.value()));
        (version, dirty)
    };
    txn.commit()?;
    Ok(found)
}

fn set_marker(txn: &WriteTransaction, key: &str, value: Option<u32>) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    match value {
        Some(v) => meta.insert(key, v.to_le_bytes().as_slice())?,
        None => meta.remove(key)?,
    };
    Ok(())
}

/// Brings `db` to the newest version in `steps`. `fresh` means the file was just created, so
/// there is nothing to protect with a snapshot.
pub(crate) fn run(
    db: &Database,
    fresh: bool,
    snapshot_dir: &Path,
    steps: &[Migration],
    now: Timestamp,
) -> Result<MigrationReport> {
    let (from, dirty) = markers(db)?;
    if let Some(version) = dirty {
        return Err(Error::DirtyMigration { version, snapshot_dir: snapshot_dir.to_path_buf() });
    }
    let supported = steps.last().map(|m| m.version).unwrap_or(0);
    if from > supported {
        return Err(Error::SchemaAhead { found: from, supported });
    }
    let pending: Vec<&Migration> = steps.iter().filter(|m| m.version > from).collect();
    let mut report = MigrationReport { from, to: from, snapshot: None, steps: Vec::new() };
    if pending.is_empty() {
        return Ok(report);
    }
    if !fresh {
        report.snapshot = Some(pre_migration_snapshot(db, snapshot_dir, from, now)?);
    }
    for step in pending {
        let started = Instant::now();
        tracing::info!(
            event = "migration_step_started",
            component = "migration",
            version = step.version,
            name = step.name
        );
        let txn = db.begin_write()?;
        set_marker(&txn, DIRTY_KEY, Some(step.version))?;
        txn.commit()?;
        let txn = db.begin_write()?;
        let outcome = (step.run)(&MigrationTx { txn: &txn }).and_then(|()| {
            set_marker(&txn, VERSION_KEY, Some(step.version))?;
            set_marker(&txn, DIRTY_KEY, None)
        });
        match outcome {
            Ok(()) => txn.commit()?,
            Err(e) => {
                drop(txn);
                // The step's transaction rolled back: the database is clean at the old version.
                let clear = db.begin_write()?;
                set_marker(&clear, DIRTY_KEY, None)?;
                clear.commit()?;
                return Err(Error::MigrationFailed { version: step.version, name: step.name, reason: e.to_string() });
            }
        }
        let duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            event = "migration_step_completed",
            component = "migration",
            version = step.version,
            name = step.name,
            duration_ms
        );
        report.steps.push(StepReport { version: step.version, name: step.name, duration_ms });
        report.to = step.version;
    }
    Ok(report)
}

fn pre_migration_snapshot(db: &Database, dir: &Path, from: u32, now: Timestamp) -> Result<Snapshot> {
    verified_snapshot(db, dir, &format!("pre-migration-v{from}"), now)
}

/// A snapshot written and verified before a change to existing data (a migration step, an index
/// backfill); any failure is [`Error::PreMigrationBackupFailed`], and the change must not start.
pub(crate) fn verified_snapshot(db: &Database, dir: &Path, label: &str, now: Timestamp) -> Result<Snapshot> {
    let failed = |reason: String| Error::PreMigrationBackupFailed { dir: dir.to_path_buf(), reason };
    let snap = snapshot::write(db, dir, label, now, snapshot::Encoding::Redb, &mut |_| {})
        .map_err(|e| failed(e.to_string()))?;
    snapshot::verify(&snap.path).map_err(|e| failed(e.to_string()))?;
    Ok(snap)
}

/// Rewinds the recorded schema version of a closed database file. Test support only: it lets a
/// test present a real binary with an "older" database.
#[cfg(feature = "test-hooks")]
pub fn rewind_version_for_tests(path: &Path, version: u32) -> Result<std::path::PathBuf> {
    let db = Database::builder().set_cache_size(crate::SIDE_CACHE_BYTES).open(path)?;
    let txn = db.begin_write()?;
    set_marker(&txn, VERSION_KEY, Some(version))?;
    txn.commit()?;
    Ok(path.to_path_buf())
}
