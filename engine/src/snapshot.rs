//! Consistent snapshots: every table copied inside one read transaction into a new redb file,
//! then renamed into place, with a manifest beside it (schema version, per-table row counts,
//! sha256 and size of the file). The one mechanism behind the pre-migration snapshot and, later,
//! operator backups, restores and the restore drill. Copying the live file instead is unsafe.
//!
//! The manifest has a `signature` member, empty until signing lands, so that signed and unsigned
//! manifests share one format.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use redb::{
    Database, Key, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    TableHandle, Value, WriteTransaction,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tables::{
    self, BLOBS, CHANGES, COUNTERS, INDEX_PREFIX, LIVE_COUNTS, MAP_PREFIX, RECORD_PREFIX, SYSTEM_PREFIX, USER_SEQ,
};
use crate::{Error, Result, meta};

pub const MANIFEST_FORMAT: &str = "mycorrhizal-snapshot/1";

/// What a snapshot holds, written as `<file>.manifest.json` beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    /// File name of the snapshot, relative to the manifest.
    pub file: String,
    pub created_at: Timestamp,
    pub schema_version: u32,
    /// Row count of every table.
    pub tables: BTreeMap<String, u64>,
    pub sha256: String,
    pub size: u64,
    /// Reserved for the signature over the manifest (operator backups); `None` when unsigned.
    #[serde(default)]
    pub signature: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub path: PathBuf,
    pub manifest_path: PathBuf,
    pub manifest: Manifest,
}

/// `<snapshot>.manifest.json`.
pub fn manifest_path(snapshot: &Path) -> PathBuf {
    let mut name = snapshot.as_os_str().to_os_string();
    name.push(".manifest.json");
    PathBuf::from(name)
}

/// Writes a consistent snapshot of `db` into `dir` as `<label>-<UTC time>.redb`.
pub(crate) fn write(db: &Database, dir: &Path, label: &str, now: Timestamp) -> Result<Snapshot> {
    fs::create_dir_all(dir)?;
    let stamp = now.strftime("%Y%m%dT%H%M%S%.6fZ").to_string();
    let file = format!("{label}-{stamp}.redb");
    let path = dir.join(&file);
    let partial = dir.join(format!(".{file}.partial"));
    let _ = fs::remove_file(&partial);
    let read = db.begin_read()?;
    let schema_version = meta::read_version(&read)?;
    let tables = {
        let copy = Database::builder().set_cache_size(crate::SIDE_CACHE_BYTES).create(&partial)?;
        let write = copy.begin_write()?;
        let tables = copy_all(&read, &write)?;
        write.commit()?;
        tables
    };
    drop(read);
    let (sha256, size) = digest(&partial)?;
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        file: file.clone(),
        created_at: now,
        schema_version,
        tables,
        sha256,
        size,
        signature: None,
    };
    let manifest_path = manifest_path(&path);
    write_durably(&manifest_path, &serde_json::to_vec_pretty(&manifest).map_err(io_other)?)?;
    fs::rename(&partial, &path)?;
    File::open(dir)?.sync_all()?;
    Ok(Snapshot { path, manifest_path, manifest })
}

/// Checks a snapshot against its manifest: digest, size, that redb opens it, schema version and
/// every table's row count. Returns the manifest when all hold.
pub fn verify(path: &Path) -> Result<Manifest> {
    let manifest_path = manifest_path(path);
    let text = fs::read(&manifest_path)
        .map_err(|e| Error::SnapshotInvalid(format!("manifest {}: {e}", manifest_path.display())))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| Error::SnapshotInvalid(format!("manifest {}: {e}", manifest_path.display())))?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(Error::SnapshotInvalid(format!("unknown manifest format {}", manifest.format)));
    }
    let (sha256, size) = digest(path)?;
    if sha256 != manifest.sha256 || size != manifest.size {
        return Err(Error::SnapshotInvalid("file digest does not match the manifest".into()));
    }
    let db = Database::builder()
        .set_cache_size(crate::SIDE_CACHE_BYTES)
        .open_read_only(path)
        .map_err(|e| Error::SnapshotInvalid(format!("redb cannot open the snapshot: {e}")))?;
    let read = db.begin_read()?;
    let version = meta::read_version(&read)?;
    if version != manifest.schema_version {
        return Err(Error::SnapshotInvalid(format!(
            "schema version {version} differs from the manifest's {}",
            manifest.schema_version
        )));
    }
    let mut counts = BTreeMap::new();
    for handle in read.list_tables()? {
        let name = handle.name().to_string();
        counts.insert(name, read.open_untyped_table(handle)?.len()?);
    }
    if counts != manifest.tables {
        return Err(Error::SnapshotInvalid("table row counts differ from the manifest".into()));
    }
    Ok(manifest)
}

fn copy_all(read: &ReadTransaction, write: &WriteTransaction) -> Result<BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    for handle in read.list_tables()? {
        let name = handle.name().to_string();
        let rows = match name.as_str() {
            n if n.starts_with(RECORD_PREFIX) => copy(read, write, tables::record_table(n))?,
            n if n.starts_with(INDEX_PREFIX) => copy(read, write, tables::index_table(n))?,
            n if n.starts_with(SYSTEM_PREFIX) => copy(read, write, tables::system_table(n))?,
            n if n.starts_with(MAP_PREFIX) => copy(read, write, tables::map_table(n))?,
            n if n == CHANGES.name() => copy(read, write, CHANGES)?,
            n if n == BLOBS.name() => copy(read, write, BLOBS)?,
            n if n == COUNTERS.name() => copy(read, write, COUNTERS)?,
            n if n == USER_SEQ.name() => copy(read, write, USER_SEQ)?,
            n if n == LIVE_COUNTS.name() => copy(read, write, LIVE_COUNTS)?,
            n if n == crate::audit::AUDIT.name() => copy(read, write, crate::audit::AUDIT)?,
            n if n == crate::audit::AUDIT_ANCHORS.name() => copy(read, write, crate::audit::AUDIT_ANCHORS)?,
            other => {
                return Err(Error::SnapshotInvalid(format!("no layout known for table {other}")));
            }
        };
        counts.insert(name, rows);
    }
    Ok(counts)
}

fn copy<K: Key + 'static, V: Value + 'static>(
    read: &ReadTransaction,
    write: &WriteTransaction,
    definition: TableDefinition<K, V>,
) -> Result<u64> {
    let source = read.open_table(definition)?;
    let mut target = write.open_table(definition)?;
    let mut rows = 0;
    for entry in source.iter()? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
        rows += 1;
    }
    Ok(rows)
}

fn digest(path: &Path) -> Result<(String, u64)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), size))
}

fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let partial = path.with_extension("partial");
    let mut file = File::create(&partial)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::rename(&partial, path)?;
    Ok(())
}

fn io_other(e: impl std::fmt::Display) -> Error {
    Error::Io(std::io::Error::other(e.to_string()))
}
