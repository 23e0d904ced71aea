//! Consistent snapshots: every table read inside one read transaction and stored as a file,
//! with a manifest beside it (schema version, per-table row counts, sha256 and size of the file).
//! The one mechanism behind the pre-migration snapshot, operator backups, restores and the
//! restore drill. Copying the live file instead is unsafe.
//!
//! A snapshot is stored in one of three [`Encoding`]s:
//!
//! - the redb file itself (pre-migration snapshots, restorable by copying the file back): the
//!   rows copied in key order (redb packs an ascending load into full pages) without a sync per
//!   commit; the finished file is synced once;
//! - the rows as a record stream ([`crate::rows`]) in one standard LZ4 frame (operator backups,
//!   manifest format 2): no B-tree is built and nothing committed while the backup runs; the
//!   rows are read, compressed on two threads and written at once. Restoring one builds the redb
//!   file from the stream, inserting in key order in one transaction;
//! - that redb file as one LZ4 frame (operator backups written before the record stream, still
//!   verified and restored).
//!
//! The digest is of the stored bytes, so checking it never needs the copy decoded.
//!
//! The manifest also records what the snapshot holds per user (live rows per record kind and the
//! head of each audit hash chain), recomputed from the file by [`verify`], and a `signature`
//! member that the server fills for operator backups (the engine knows no keys; an unsigned
//! pre-migration snapshot leaves it empty), so signed and unsigned manifests share one format.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use redb::backends::FileBackend;
use redb::{
    Database, Key, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    StorageBackend, TableDefinition, TableHandle, Value, WriteTransaction,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tables::{
    self, BLOBS, CHANGES, COUNTERS, INDEX_PREFIX, LIVE_COUNTS, MAP_PREFIX, RECORD_PREFIX, SYSTEM_PREFIX, USER_SEQ,
};
use crate::{Error, Result, meta};

/// The page cache of a database built from a record stream (a snapshot materialized, a restore):
/// the build writes every page once, and a cache this size keeps the B-trees' right-hand edges
/// and a good run of dirty pages.
pub(crate) const BUILD_CACHE_BYTES: usize = 256 << 20;

/// The manifest format of snapshots stored as a redb file (plain or as one LZ4 frame).
pub const MANIFEST_FORMAT: &str = "mycorrhizal-snapshot/1";
/// The manifest format of snapshots stored as a record stream ([`Encoding::Rows`]): a build
/// that knows only the first refuses them rather than misreading them.
pub const MANIFEST_FORMAT_ROWS: &str = "mycorrhizal-snapshot/2";

/// The page cache of the copy being written: enough for the right-hand edge of every table and
/// a few megabytes of dirty pages; the copy streams through it.
const COPY_CACHE_BYTES: usize = 64 << 20;

/// How a snapshot's file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The redb file itself (`<label>-<time>.redb`): copying it back restores it.
    Redb,
    /// The redb file as one LZ4 frame (`<label>-<time>.redb.lz4`); `lz4 -d` decodes it.
    /// Operator backups before the record stream; still verified and restored.
    Lz4,
    /// The rows themselves as a record stream ([`crate::rows`]) in one LZ4 frame
    /// (`<label>-<time>.rows.lz4`): operator backups. Restoring one builds a redb file from it.
    Rows,
}

impl Encoding {
    fn extension(self) -> &'static str {
        match self {
            Encoding::Redb => "redb",
            Encoding::Lz4 => "redb.lz4",
            Encoding::Rows => "rows.lz4",
        }
    }

    /// Its name in a manifest (`None` for the plain file, as manifests before it said nothing).
    fn name(self) -> Option<String> {
        match self {
            Encoding::Redb => None,
            Encoding::Lz4 => Some("lz4".into()),
            Encoding::Rows => Some("rows-lz4".into()),
        }
    }

    /// The manifest format a snapshot in this encoding is written with.
    fn format(self) -> &'static str {
        match self {
            Encoding::Redb | Encoding::Lz4 => MANIFEST_FORMAT,
            Encoding::Rows => MANIFEST_FORMAT_ROWS,
        }
    }

    /// The encoding of the snapshot file at `path`, from its first bytes (for an LZ4 frame, the
    /// first bytes it decodes to).
    pub fn of_file(path: &Path) -> Result<Encoding> {
        let mut magic = [0u8; 4];
        let mut file = File::open(path)?;
        let n = crate::frame::read_full(&mut file, &mut magic)?;
        if n < 4 || magic != crate::frame::LZ4_MAGIC {
            return Ok(Encoding::Redb);
        }
        let mut first = [0u8; crate::rows::MAGIC.len()];
        let mut decoded = lz4_flex::frame::FrameDecoder::new(BufReader::new(File::open(path)?));
        let n = crate::frame::read_full(&mut decoded, &mut first).unwrap_or(0);
        Ok(if n == first.len() && first == crate::rows::MAGIC { Encoding::Rows } else { Encoding::Lz4 })
    }
}

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
    /// The build that wrote it (operator backups), e.g. `0.1.0 (abc1234)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// Live rows per user and record kind (`None` in manifests written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<BTreeMap<u64, BTreeMap<String, u64>>>,
    /// Each user's audit-chain head (newest event hash, or the anchor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_heads: Option<BTreeMap<u64, String>>,
    /// How the file is stored: absent for the redb file itself, `lz4` for one LZ4 frame of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// The signature over the rest of the manifest (operator backups); `None` when unsigned.
    #[serde(default)]
    pub signature: Option<String>,
}

impl Manifest {
    /// The bytes a signature covers: the manifest as JSON with `signature` left out.
    pub fn signing_bytes(&self) -> Vec<u8> {
        let unsigned = Manifest { signature: None, ..self.clone() };
        // A struct of strings, numbers and maps always serializes.
        serde_json::to_vec(&unsigned).unwrap_or_default()
    }
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

/// Writes a consistent snapshot of the database file at `db_path` into `dir`, for when no engine
/// has it open (the backup command with the server stopped). Opened read-only: nothing is
/// migrated, and a running server's lock makes it fail with [`Error::Storage`] saying so.
pub fn write_from_file(
    db_path: &Path,
    dir: &Path,
    label: &str,
    now: Timestamp,
    encoding: Encoding,
    progress: &mut dyn FnMut(Progress),
) -> Result<Snapshot> {
    if crate::redo::holds_writes(db_path) {
        // A crash left acknowledged writes in the redo log only: replayed first (a writable
        // open, as start-up does), so the snapshot holds them.
        let db = Database::builder().open(db_path)?;
        crate::redo::open(&db, db_path, crate::redo::Checkpoints::default(), crate::redo::Unreplayable::Refuse)?;
        return write(&db, dir, label, now, encoding, progress);
    }
    match Database::builder().open_read_only(db_path) {
        Ok(db) => write(&db, dir, label, now, encoding, progress),
        // A file left by a crash needs redb's repair, which only a writable open does; nothing
        // is migrated by it.
        Err(redb::DatabaseError::RepairAborted) => {
            write(&Database::builder().open(db_path)?, dir, label, now, encoding, progress)
        }
        Err(e) => Err(e.into()),
    }
}

/// How far a snapshot's copy has come: rows copied of the rows there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub rows_copied: u64,
    pub rows_total: u64,
}

/// Rows copied between two progress reports.
const PROGRESS_EVERY: u64 = 20_000;

/// Whether another process holds the database file at `path` open for writing (a running
/// server). A missing file is not in use.
pub fn in_use(path: &Path) -> bool {
    path.exists() && matches!(Database::builder().open_read_only(path), Err(redb::DatabaseError::DatabaseAlreadyOpen))
}

/// The schema version of the snapshot file at `path` (either encoding), opened read-only.
pub fn schema_of(path: &Path) -> Result<u32> {
    let encoding = Encoding::of_file(path)?;
    if encoding == Encoding::Rows {
        // The stream is read whole: a file without a manifest is checked as far as it can be.
        let mut decoded = crate::frame::Decoded::open(path)?;
        return Ok(crate::rows::read(&mut decoded, &mut crate::rows::Discard)?.schema_version);
    }
    let (db, _scratch) = open_snapshot(path, encoding)?;
    let read = db.begin_read()?;
    meta::read_version(&read)
}

/// Opens the snapshot at `path` read-only; an LZ4 snapshot is decoded into a scratch file first
/// (beside it, or in the temporary folder when its folder is read-only), removed when the
/// returned guard drops.
fn open_snapshot(path: &Path, encoding: Encoding) -> Result<(ReadOnlyDatabase, Option<Scratch>)> {
    let cannot = |e: &dyn std::fmt::Display| Error::SnapshotInvalid(format!("redb cannot open the snapshot: {e}"));
    let (file, scratch) = match encoding {
        Encoding::Redb => (path.to_path_buf(), None),
        Encoding::Rows => return Err(Error::SnapshotInvalid("a record stream is not a redb file".into())),
        Encoding::Lz4 => {
            let scratch = Scratch::beside(path)?;
            decode(path, &scratch.0).map_err(|e| cannot(&e))?;
            (scratch.0.clone(), Some(scratch))
        }
    };
    let db =
        Database::builder().set_cache_size(crate::SIDE_CACHE_BYTES).open_read_only(&file).map_err(|e| cannot(&e))?;
    Ok((db, scratch))
}

/// A file removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    /// A fresh scratch name beside `path`, or in the temporary folder when that folder is not
    /// writable.
    fn beside(path: &Path) -> Result<Scratch> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let name = format!(
            ".{}.{}-{}.scratch",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("snapshot"),
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let near = path.parent().unwrap_or(Path::new(".")).join(&name);
        match File::create(&near) {
            Ok(_) => Ok(Scratch(near)),
            Err(_) => {
                let far = std::env::temp_dir().join(&name);
                File::create(&far)?;
                Ok(Scratch(far))
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Writes the redb file the snapshot at `from` holds to `to`: copied, decoded from LZ4, or built
/// from a record stream; synced when `sync` (a restore), left to the page cache when not (a check
/// that removes it after).
pub fn materialize(from: &Path, to: &Path, sync: bool) -> Result<()> {
    match Encoding::of_file(from)? {
        Encoding::Redb => {
            fs::copy(from, to)?;
        }
        Encoding::Lz4 => decode(from, to)?,
        Encoding::Rows => build(from, to)?,
    }
    if sync {
        File::open(to)?.sync_all()?;
    }
    Ok(())
}

/// Builds the redb file `to` from the record stream at `from`: one write transaction inserting
/// every table's rows in key order (each row checked as it is read), committed once, without a
/// sync (the caller syncs the finished file when it must survive a crash).
fn build(from: &Path, to: &Path) -> Result<()> {
    let file = fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(to)?;
    let db =
        Database::builder().set_cache_size(BUILD_CACHE_BYTES).create_with_backend(Unsynced(FileBackend::new(file)?))?;
    crate::rows::fill(&mut crate::frame::Decoded::open(from)?, &db, &mut crate::rows::Discard)?;
    db.close()?;
    Ok(())
}

/// Decodes the LZ4 frame at `from` into the file `to`. A redb file is about half free pages,
/// all zeros: those are left as holes (read back as zeros), so the decoded file costs the disk
/// only its used pages.
fn decode(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::FileExt;
    const BLOCK: usize = 4096;
    let invalid = |e: io::Error| Error::SnapshotInvalid(format!("the LZ4 frame does not decode: {e}"));
    let mut frames = lz4_flex::frame::FrameDecoder::new(BufReader::with_capacity(1 << 20, File::open(from)?));
    let out = File::create(to)?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut at = 0u64;
    loop {
        // Fill the chunk (the decoder hands out a block at a time).
        let mut filled = 0;
        while filled < chunk.len() {
            match frames.read(&mut chunk[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(invalid(e)),
            }
        }
        if filled == 0 {
            break;
        }
        for (i, block) in chunk[..filled].chunks(BLOCK).enumerate() {
            if block.iter().any(|&b| b != 0) {
                out.write_all_at(block, at + (i * BLOCK) as u64)?;
            }
        }
        at += filled as u64;
    }
    out.set_len(at)?;
    Ok(())
}

/// Writes a consistent snapshot of `db` into `dir` as `<label>-<UTC time>.redb` (or
/// `.redb.lz4`, by `encoding`).
pub(crate) fn write(
    db: &impl ReadableDatabase,
    dir: &Path,
    label: &str,
    now: Timestamp,
    encoding: Encoding,
    progress: &mut dyn FnMut(Progress),
) -> Result<Snapshot> {
    fs::create_dir_all(dir)?;
    let stamp = now.strftime("%Y%m%dT%H%M%S%.6fZ").to_string();
    let file = format!("{label}-{stamp}.{}", encoding.extension());
    let path = dir.join(&file);
    let partial = dir.join(format!(".{file}.partial"));
    let _ = fs::remove_file(&partial);
    let written = write_partial(db, dir, &partial, encoding, progress);
    let (schema_version, tables, users, audit_heads, sha256, size) = match written {
        Ok(written) => written,
        Err(e) => {
            let _ = fs::remove_file(&partial);
            return Err(e);
        }
    };
    let manifest = Manifest {
        format: encoding.format().into(),
        file: file.clone(),
        created_at: now,
        schema_version,
        tables,
        sha256,
        size,
        build: None,
        users: Some(users),
        audit_heads: Some(audit_heads),
        encoding: encoding.name(),
        signature: None,
    };
    let manifest_path = manifest_path(&path);
    store_manifest(&path, &manifest)?;
    fs::rename(&partial, &path)?;
    File::open(dir)?.sync_all()?;
    Ok(Snapshot { path, manifest_path, manifest })
}

type Written = (u32, BTreeMap<String, u64>, BTreeMap<u64, BTreeMap<String, u64>>, BTreeMap<u64, String>, String, u64);

/// The copy, encoded and synced at `partial`: schema version, table counts, contents, digest
/// and size.
fn write_partial(
    db: &impl ReadableDatabase,
    dir: &Path,
    partial: &Path,
    encoding: Encoding,
    progress: &mut dyn FnMut(Progress),
) -> Result<Written> {
    let read = db.begin_read()?;
    let schema_version = meta::read_version(&read)?;
    let (users, audit_heads) = contents(&read)?;
    let (tables, (sha256, size)) = match encoding {
        Encoding::Redb => {
            let tables = copy_into(&read, partial, progress)?;
            drop(read);
            File::open(partial)?.sync_all()?;
            (tables, digest(partial)?)
        }
        Encoding::Lz4 => {
            let scratch = Scratch::beside(&dir.join("copy"))?;
            let tables = copy_into(&read, &scratch.0, progress)?;
            drop(read);
            (tables, encode(&scratch.0, partial)?)
        }
        Encoding::Rows => {
            // Read, compressed and written at once: no copy is built, nothing is committed.
            let mut frame = crate::frame::FrameWriter::create(partial)?;
            let tables = crate::rows::write(&read, &mut frame, &mut |rows_copied, rows_total| {
                progress(Progress { rows_copied, rows_total })
            })?;
            drop(read);
            (tables, frame.finish()?)
        }
    };
    Ok((schema_version, tables, users, audit_heads, sha256, size))
}

/// Copies every table of `read` into a new redb file at `path`, without syncing it: the caller
/// syncs the file once (a plain snapshot) or reads it back into the encoded one.
fn copy_into(read: &ReadTransaction, path: &Path, progress: &mut dyn FnMut(Progress)) -> Result<BTreeMap<String, u64>> {
    let file = fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    let backend = Unsynced(FileBackend::new(file)?);
    let copy = Database::builder().set_cache_size(COPY_CACHE_BYTES).create_with_backend(backend)?;
    let write = copy.begin_write()?;
    let tables = copy_all(read, &write, progress)?;
    write.commit()?;
    copy.close()?;
    Ok(tables)
}

/// A file backend whose syncs do nothing: for a copy that is synced once when it is complete.
#[derive(Debug)]
pub(crate) struct Unsynced(pub(crate) FileBackend);

impl StorageBackend for Unsynced {
    fn len(&self) -> std::result::Result<u64, io::Error> {
        self.0.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::result::Result<(), io::Error> {
        self.0.read(offset, out)
    }

    fn set_len(&self, len: u64) -> std::result::Result<(), io::Error> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> std::result::Result<(), io::Error> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::result::Result<(), io::Error> {
        self.0.write(offset, data)
    }

    fn close(&self) -> std::result::Result<(), io::Error> {
        self.0.close()
    }
}

/// Encodes the redb file at `from` as one LZ4 frame at `to`, synced; returns the encoded bytes'
/// SHA-256 and size, taken as they are written. The frame is the standard one (`lz4 -d` reads
/// it) with independent 256 KB blocks and no content checksum (the manifest's SHA-256 covers
/// the stored bytes); its blocks are compressed on up to two threads, written in order.
fn encode(from: &Path, to: &Path) -> Result<(String, u64)> {
    let mut frame = crate::frame::FrameWriter::create(to)?;
    io::copy(&mut BufReader::with_capacity(1 << 20, File::open(from)?), &mut frame)?;
    Ok(frame.finish()?)
}

/// Checks a snapshot against its manifest: digest, size, that redb opens it, schema version,
/// every table's row count, and (when recorded) every user's live rows and audit-chain head.
/// Returns the manifest when all hold.
pub fn verify(path: &Path) -> Result<Manifest> {
    let manifest = read_manifest(path)?;
    verify_against(path, &manifest)?;
    Ok(manifest)
}

/// Reads and parses `<path>.manifest.json`, nothing more (a signature is checked before trusting it).
pub fn read_manifest(path: &Path) -> Result<Manifest> {
    let manifest_path = manifest_path(path);
    let text = fs::read(&manifest_path)
        .map_err(|e| Error::SnapshotInvalid(format!("manifest {}: {e}", manifest_path.display())))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| Error::SnapshotInvalid(format!("manifest {}: {e}", manifest_path.display())))?;
    if manifest.format != MANIFEST_FORMAT && manifest.format != MANIFEST_FORMAT_ROWS {
        return Err(Error::SnapshotInvalid(format!("unknown manifest format {}", manifest.format)));
    }
    Ok(manifest)
}

/// Writes `manifest` beside the snapshot at `path` durably (write aside, fsync, rename).
pub fn store_manifest(path: &Path, manifest: &Manifest) -> Result<()> {
    write_durably(&manifest_path(path), &serde_json::to_vec_pretty(manifest).map_err(io_other)?)
}

/// Checks the snapshot file at `path` against `manifest` (see [`verify`]).
pub fn verify_against(path: &Path, manifest: &Manifest) -> Result<()> {
    let encoding = Encoding::of_file(path)?;
    if encoding == Encoding::Rows {
        return verify_rows(path, manifest);
    }
    if manifest.format != MANIFEST_FORMAT {
        return Err(Error::SnapshotInvalid(format!(
            "a {} manifest, but the file is not a record stream",
            manifest.format
        )));
    }
    // An LZ4 snapshot is read once here, hashing it and noting its blocks; the checks below then
    // decode only the blocks they touch, with no decoded copy on disk.
    let index = match encoding {
        Encoding::Lz4 => Some(crate::frame::FrameIndex::scan(path)?),
        Encoding::Redb | Encoding::Rows => None,
    };
    let (sha256, size) = match &index {
        Some(index) => (index.sha256.clone(), index.size),
        None => digest(path)?,
    };
    if sha256 != manifest.sha256 || size != manifest.size {
        return Err(Error::SnapshotInvalid("file digest does not match the manifest".into()));
    }
    if encoding.name() != manifest.encoding {
        return Err(Error::SnapshotInvalid("the file's encoding differs from the manifest's".into()));
    }
    let pages = match &index {
        Some(index) => {
            index.pages(path).map_err(|e| Error::SnapshotInvalid(format!("the LZ4 frame does not decode: {e}")))?
        }
        None => None,
    };
    let (db, _scratch) = match pages {
        Some(pages) => {
            let db = Database::builder()
                .set_cache_size(crate::SIDE_CACHE_BYTES)
                .open_read_only_with_backend(pages)
                .map_err(|e| Error::SnapshotInvalid(format!("redb cannot open the snapshot: {e}")))?;
            (db, None)
        }
        // A frame this reader cannot address block by block (none this program writes) is
        // decoded whole into a scratch file.
        None => open_snapshot(path, encoding)?,
    };
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
    let (users, heads) = contents(&read)?;
    if manifest.users.as_ref().is_some_and(|expected| *expected != users) {
        return Err(Error::SnapshotInvalid("per-user row counts differ from the manifest".into()));
    }
    if manifest.audit_heads.as_ref().is_some_and(|expected| *expected != heads) {
        return Err(Error::SnapshotInvalid("audit-chain heads differ from the manifest".into()));
    }
    Ok(())
}

/// [`verify_against`] for a record stream: one pass over the file hashes it, decodes the frame and
/// reads every record (each checked: well-formed for its table, keys in order, counts that add
/// up), then the digest, schema version, row counts, live rows per user and audit heads are
/// compared with the manifest.
fn verify_rows(path: &Path, manifest: &Manifest) -> Result<()> {
    let mut decoded = crate::frame::Decoded::open(path)?;
    let read = crate::rows::read(&mut decoded, &mut crate::rows::Discard);
    let (sha256, size) = decoded.finish()?;
    // A changed byte is named as such, whatever the stream made of it.
    if sha256 != manifest.sha256 || size != manifest.size {
        return Err(Error::SnapshotInvalid("file digest does not match the manifest".into()));
    }
    if manifest.format != MANIFEST_FORMAT_ROWS || manifest.encoding != Encoding::Rows.name() {
        return Err(Error::SnapshotInvalid("the file's encoding differs from the manifest's".into()));
    }
    let summary = read?;
    if summary.schema_version != manifest.schema_version {
        return Err(Error::SnapshotInvalid(format!(
            "schema version {} differs from the manifest's {}",
            summary.schema_version, manifest.schema_version
        )));
    }
    if summary.tables != manifest.tables {
        return Err(Error::SnapshotInvalid("table row counts differ from the manifest".into()));
    }
    if manifest.users.as_ref().is_some_and(|expected| *expected != summary.users) {
        return Err(Error::SnapshotInvalid("per-user row counts differ from the manifest".into()));
    }
    if manifest.audit_heads.as_ref().is_some_and(|expected| *expected != summary.audit_heads) {
        return Err(Error::SnapshotInvalid("audit-chain heads differ from the manifest".into()));
    }
    Ok(())
}

/// Per user: live rows by record kind, and the audit-chain head.
pub type Contents = (BTreeMap<u64, BTreeMap<String, u64>>, BTreeMap<u64, String>);

pub(crate) fn contents(read: &ReadTransaction) -> Result<Contents> {
    let mut users: BTreeMap<u64, BTreeMap<String, u64>> = BTreeMap::new();
    match read.open_table(LIVE_COUNTS) {
        Ok(table) => {
            for entry in table.iter()? {
                let (key, count) = entry?;
                let (user, kind) = key.value();
                users.entry(user).or_default().insert(kind.to_string(), count.value());
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    Ok((users, crate::audit::heads(read)?))
}

/// Counts copied rows and reports them every [`PROGRESS_EVERY`].
struct Copied<'p> {
    progress: &'p mut dyn FnMut(Progress),
    rows_copied: u64,
    rows_total: u64,
}

impl Copied<'_> {
    fn row(&mut self) {
        self.rows_copied += 1;
        if self.rows_copied % PROGRESS_EVERY == 0 {
            (self.progress)(Progress { rows_copied: self.rows_copied, rows_total: self.rows_total });
        }
    }
}

fn copy_all(
    read: &ReadTransaction,
    write: &WriteTransaction,
    progress: &mut dyn FnMut(Progress),
) -> Result<BTreeMap<String, u64>> {
    let mut rows_total = 0;
    for handle in read.list_tables()? {
        rows_total += read.open_untyped_table(handle)?.len()?;
    }
    let mut copied = Copied { progress, rows_copied: 0, rows_total };
    let c = &mut copied;
    let mut counts = BTreeMap::new();
    for handle in read.list_tables()? {
        let name = handle.name().to_string();
        let rows = match name.as_str() {
            n if n.starts_with(RECORD_PREFIX) => copy(read, write, tables::record_table(n), c)?,
            n if n.starts_with(INDEX_PREFIX) => copy(read, write, tables::index_table(n), c)?,
            n if n.starts_with(SYSTEM_PREFIX) => copy(read, write, tables::system_table(n), c)?,
            n if n.starts_with(MAP_PREFIX) || tables::LEGACY_MAP_TABLES.contains(&n) => {
                copy(read, write, tables::map_table(n), c)?
            }
            n if n == CHANGES.name() => copy(read, write, CHANGES, c)?,
            n if n == BLOBS.name() => copy(read, write, BLOBS, c)?,
            n if n == COUNTERS.name() => copy(read, write, COUNTERS, c)?,
            n if n == USER_SEQ.name() => copy(read, write, USER_SEQ, c)?,
            n if n == LIVE_COUNTS.name() => copy(read, write, LIVE_COUNTS, c)?,
            n if n == crate::tables::AUDIT.name() => copy(read, write, crate::tables::AUDIT, c)?,
            n if n == crate::tables::AUDIT_ANCHORS.name() => copy(read, write, crate::tables::AUDIT_ANCHORS, c)?,
            other => {
                return Err(Error::SnapshotInvalid(format!("no layout known for table {other}")));
            }
        };
        counts.insert(name, rows);
    }
    (copied.progress)(Progress { rows_copied: copied.rows_copied, rows_total });
    Ok(counts)
}

fn copy<K: Key + 'static, V: Value + 'static>(
    read: &ReadTransaction,
    write: &WriteTransaction,
    definition: TableDefinition<K, V>,
    copied: &mut Copied<'_>,
) -> Result<u64> {
    let source = read.open_table(definition)?;
    let mut target = write.open_table(definition)?;
    let mut rows = 0;
    for entry in source.iter()? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
        rows += 1;
        copied.row();
    }
    Ok(rows)
}

/// The SHA-256 (hex) and size of the file at `path`, as a manifest records them.
pub fn digest(path: &Path) -> Result<(String, u64)> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A database of 400 blobs of 12 KB each (pseudo-random, so LZ4 cannot shrink them): a file
    /// of many frame blocks.
    fn database(dir: &Path) -> Database {
        let db = Database::create(dir.join("live.redb")).unwrap();
        let write = db.begin_write().unwrap();
        {
            let mut blobs = write.open_table(BLOBS).unwrap();
            let mut noise = 0x9E37_79B9_7F4A_7C15u64;
            for id in 0..400u64 {
                let bytes: Vec<u8> = (0..12_000)
                    .map(|_| {
                        noise ^= noise << 13;
                        noise ^= noise >> 7;
                        noise ^= noise << 17;
                        (noise >> 24) as u8
                    })
                    .collect();
                blobs.insert((1, format!("{id}.jpg").as_str()), bytes.as_slice()).unwrap();
            }
        }
        write.commit().unwrap();
        db
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    #[test]
    fn an_lz4_snapshot_verifies_block_by_block_and_decodes_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let snapshot = write(&db, &dir.path().join("out"), "t", now(), Encoding::Lz4, &mut |_| {}).unwrap();
        assert_eq!(snapshot.manifest.tables.get("blobs"), Some(&400));
        // Many blocks, each independent: the check reads it without decoding it to disk.
        let index = crate::frame::FrameIndex::scan(&snapshot.path).unwrap();
        assert!(index.pages(&snapshot.path).unwrap().is_some(), "random access is possible");
        verify(&snapshot.path).unwrap();
        // Decoded whole (a restore), it is the same database.
        let decoded = dir.path().join("decoded.redb");
        materialize(&snapshot.path, &decoded, true).unwrap();
        let copy = Database::builder().open_read_only(&decoded).unwrap();
        let read = copy.begin_read().unwrap();
        let (original, restored) = (db.begin_read().unwrap(), read);
        let (a, b) = (original.open_table(BLOBS).unwrap(), restored.open_table(BLOBS).unwrap());
        assert_eq!(a.len().unwrap(), b.len().unwrap());
        for (x, y) in a.iter().unwrap().zip(b.iter().unwrap()) {
            let ((xk, xv), (yk, yv)) = (x.unwrap(), y.unwrap());
            assert_eq!((xk.value(), xv.value()), (yk.value(), yv.value()));
        }
    }

    #[test]
    fn a_snapshot_in_the_earlier_frame_form_still_verifies() {
        // Before: one frame of 4 MB blocks with a content checksum, written by lz4_flex's encoder.
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let plain = write(&db, &dir.path().join("plain"), "t", now(), Encoding::Redb, &mut |_| {}).unwrap();
        let old = dir.path().join("old.redb.lz4");
        let info =
            lz4_flex::frame::FrameInfo::new().block_size(lz4_flex::frame::BlockSize::Max4MB).content_checksum(true);
        let mut frame = lz4_flex::frame::FrameEncoder::with_frame_info(info, File::create(&old).unwrap());
        io::copy(&mut File::open(&plain.path).unwrap(), &mut frame).unwrap();
        frame.finish().unwrap();
        let (sha256, size) = digest(&old).unwrap();
        let manifest =
            Manifest { file: "old.redb.lz4".into(), sha256, size, encoding: Some("lz4".into()), ..plain.manifest };
        store_manifest(&old, &manifest).unwrap();
        verify(&old).unwrap();
    }

    /// Every row of every table of two databases, as stored bytes, compared table by table.
    fn same_rows(a: &impl ReadableDatabase, b: &impl ReadableDatabase) {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        crate::rows::write(&a.begin_read().unwrap(), &mut x, &mut |_, _| {}).unwrap();
        crate::rows::write(&b.begin_read().unwrap(), &mut y, &mut |_, _| {}).unwrap();
        assert!(x == y, "the two databases hold different rows");
    }

    #[test]
    fn a_record_stream_snapshot_verifies_and_builds_the_same_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let snapshot = write(&db, &dir.path().join("out"), "t", now(), Encoding::Rows, &mut |_| {}).unwrap();
        assert!(snapshot.path.to_str().unwrap().ends_with(".rows.lz4"));
        assert_eq!(snapshot.manifest.format, MANIFEST_FORMAT_ROWS);
        assert_eq!(snapshot.manifest.encoding.as_deref(), Some("rows-lz4"));
        assert_eq!(Encoding::of_file(&snapshot.path).unwrap(), Encoding::Rows);
        assert_eq!(snapshot.manifest.tables.get("blobs"), Some(&400));
        assert_eq!(verify(&snapshot.path).unwrap(), snapshot.manifest);
        assert_eq!(schema_of(&snapshot.path).unwrap(), 0);
        let built = dir.path().join("built.redb");
        materialize(&snapshot.path, &built, true).unwrap();
        same_rows(&db, &Database::builder().open_read_only(&built).unwrap());
        // `lz4 -d` (here lz4_flex's own decoder) gives the stream back.
        let mut stream = Vec::new();
        lz4_flex::frame::FrameDecoder::new(File::open(&snapshot.path).unwrap()).read_to_end(&mut stream).unwrap();
        assert_eq!(crate::rows::check_bytes(&stream).unwrap().tables, snapshot.manifest.tables);
    }

    #[test]
    fn a_record_stream_is_refused_when_it_differs_from_its_manifest_or_claims_the_old_format() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let snapshot = write(&db, &dir.path().join("out"), "t", now(), Encoding::Rows, &mut |_| {}).unwrap();
        let mut counts = snapshot.manifest.clone();
        counts.tables.insert("blobs".into(), 399);
        let refused = verify_against(&snapshot.path, &counts).unwrap_err();
        assert!(refused.to_string().contains("row counts"), "{refused}");
        let old = Manifest { format: MANIFEST_FORMAT.into(), ..snapshot.manifest.clone() };
        assert!(verify_against(&snapshot.path, &old).is_err());
        let mut heads = snapshot.manifest.clone();
        heads.audit_heads = Some(BTreeMap::from([(1, "not the head".to_string())]));
        assert!(verify_against(&snapshot.path, &heads).unwrap_err().to_string().contains("audit"));
        // The same rows and counts, but one byte of the stream changed: the digest says so.
        let mut bytes = fs::read(&snapshot.path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
        fs::write(&snapshot.path, &bytes).unwrap();
        assert!(verify(&snapshot.path).unwrap_err().to_string().contains("digest"));
    }

    #[test]
    fn a_snapshot_in_the_redb_frame_form_still_verifies_and_restores() {
        // Operator backups before the record stream: the redb file as one LZ4 frame.
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let snapshot = write(&db, &dir.path().join("out"), "t", now(), Encoding::Lz4, &mut |_| {}).unwrap();
        assert_eq!(snapshot.manifest.format, MANIFEST_FORMAT);
        assert_eq!(Encoding::of_file(&snapshot.path).unwrap(), Encoding::Lz4);
        verify(&snapshot.path).unwrap();
        let restored = dir.path().join("restored.redb");
        materialize(&snapshot.path, &restored, true).unwrap();
        same_rows(&db, &Database::builder().open_read_only(&restored).unwrap());
    }

    #[test]
    fn a_changed_byte_fails_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let db = database(dir.path());
        let snapshot = write(&db, &dir.path().join("out"), "t", now(), Encoding::Lz4, &mut |_| {}).unwrap();
        let mut bytes = fs::read(&snapshot.path).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
        fs::write(&snapshot.path, &bytes).unwrap();
        let refused = verify(&snapshot.path).unwrap_err();
        assert!(refused.to_string().contains("digest"), "{refused}");
    }
}
