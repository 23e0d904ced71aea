//! Operator backups: the backup set, its signature, and checking one.
//!
//! A backup is one consistent snapshot of the database (`mycorrhizal-<UTC time>.rows.lz4`, the
//! engine's record stream of every row, read inside one read transaction; contact pictures and
//! attachments are rows of it) and its `.manifest.json` beside it: format, schema version, the
//! build, when, the file's SHA-256 and size, every table's row count, live rows per user and
//! record kind, and each user's audit chain head. The manifest is signed with HMAC-SHA256 under a key derived from the at-rest key
//! environment (`DATA_ENCRYPTION_KEY` / `DATA_ENCRYPTION_KEY_FILE`, else `JWT_SECRET_KEY`), so
//! verifying needs that same environment, and an altered manifest or file is refused.
//!
//! [`create`] snapshots a running engine; [`create_offline`] a database file no server holds.
//! The command line reaches a running server through the control socket ([`control`]), since
//! redb lets one process open the file. [`restore`] rolls the whole instance back; [`drill`]
//! proves the newest backup restores.

pub mod control;
pub mod drill;

use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::snapshot::{self, Encoding, Manifest, Progress};
use serde_json::json;
use sha2::Sha256;

use crate::config::Config;
use crate::keys::MasterKey;
use crate::ops::events::{Event, emit};

/// Backup files are `<LABEL>-<UTC time>.rows.lz4` (earlier builds wrote `.redb.lz4` and `.redb`).
pub const LABEL: &str = "mycorrhizal";
/// The endings of backup files, this build's first.
pub const BACKUP_EXTENSIONS: [&str; 3] = [".rows.lz4", ".redb.lz4", ".redb"];
const SCHEME: &str = "hmac-sha256";
const PURPOSE: &[u8] = b"mycorrhizal backup manifest signature v1";

/// Why a backup, a drill or a request to the running server did not succeed. Recorded as the
/// `backup_failed` event's message and printed by the command line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("there is no database at {0}")]
    NoDatabase(PathBuf),
    /// A restore into the data folder was cut short (see `ops::fs::RESTORE_MARKER`).
    #[error("{0}")]
    RestoreUnfinished(String),
    /// The signing key cannot be had (the at-rest environment).
    #[error(transparent)]
    Keys(#[from] crate::keys::Error),
    /// The snapshot or its manifest could not be written or read.
    #[error(transparent)]
    Engine(#[from] mycorrhizal_engine::Error),
    /// The backup was written; removing the ones past `BACKUP_KEEP` failed.
    #[error("the backup was written, removing old ones failed: {0}")]
    Prune(std::io::Error),
    /// The newest backup is not accepted (the drill verifies it first).
    #[error("{name}: {refusal}")]
    Refused { name: String, refusal: Refusal },
    /// The drill's restored copy could not be made, does not open or differs from its manifest.
    #[error("{name}: {reason}")]
    Drill { name: String, reason: DrillFailure },
    /// The running server could not be asked, or its backup failed (its words).
    #[error("{0}")]
    Server(String),
    /// The database file is held by a server whose control socket does not answer.
    #[error("{0} (a server holds the database, but its control socket does not answer)")]
    Held(Box<Error>),
    /// The blocking task died.
    #[error("backup task failed: {0}")]
    Task(String),
    /// The backup folder cannot be written (why, and what to do).
    #[error("{0}")]
    Folder(String),
}

/// Why the drill's restored copy failed.
#[derive(Debug, thiserror::Error)]
pub enum DrillFailure {
    #[error("cannot make {}: {source}", path.display())]
    Scratch { path: PathBuf, source: std::io::Error },
    #[error("cannot copy the backup: {0}")]
    Copy(mycorrhizal_engine::Error),
    #[error("the restored copy does not open: {0}")]
    DoesNotOpen(mycorrhizal_engine::Error),
    #[error("the restored copy cannot be read: {0}")]
    Unreadable(mycorrhizal_engine::Error),
    #[error("the restored rows of {0} user(s) differ from the manifest")]
    RowsDiffer(usize),
    #[error("the restored audit chains of {0} user(s) differ from the manifest")]
    AuditHeadsDiffer(usize),
    #[error("a restored audit chain does not verify: {0}")]
    AuditChain(mycorrhizal_engine::Error),
}

/// Signs and checks manifests with the key the at-rest environment derives.
pub struct Signer {
    key: [u8; 32],
    /// The variable the key comes from, named in the signature so a refusal can say which
    /// environment signed a backup.
    source: &'static str,
}

impl Signer {
    pub fn from_config(config: &Config) -> Result<Signer, Error> {
        let master = MasterKey::from_config(config)?;
        Ok(Signer { key: master.subkey(PURPOSE), source: master.source.variable() })
    }

    fn mac(&self, manifest: &Manifest) -> Hmac<Sha256> {
        // HMAC takes a key of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!());
        mac.update(&manifest.signing_bytes());
        mac
    }

    /// Fills the manifest's signature: `hmac-sha256:<key variable>:<hex>`.
    pub fn sign(&self, manifest: &mut Manifest) {
        manifest.signature = None;
        let tag = hex::encode(self.mac(manifest).finalize().into_bytes());
        manifest.signature = Some(format!("{SCHEME}:{}:{tag}", self.source));
    }

    /// Whether the manifest's signature is ours over exactly this manifest (constant time).
    pub fn check(&self, manifest: &Manifest) -> Result<(), Refusal> {
        let Some(signature) = manifest.signature.as_deref() else {
            return Err(Refusal::BadSignature("the manifest is not signed".into()));
        };
        let mut parts = signature.splitn(3, ':');
        let (Some(SCHEME), Some(source), Some(tag)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Refusal::BadSignature(format!("unknown signature form (expected {SCHEME})")));
        };
        let tag = hex::decode(tag).map_err(|_| Refusal::BadSignature("the signature is not hex".into()))?;
        if self.mac(manifest).verify_slice(&tag).is_ok() {
            return Ok(());
        }
        Err(Refusal::BadSignature(if source != self.source {
            format!("signed with a key from {source}, but this environment's key comes from {}", self.source)
        } else {
            format!("the manifest was altered, or signed with another {source} than this environment's")
        }))
    }
}

/// Why a backup is not accepted.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("cannot read the backup: {0}")]
    Unreadable(String),
    #[error("no manifest beside the backup ({0}); set BACKUP_ALLOW_UNSIGNED=1 to accept a backup without one")]
    ManifestMissing(String),
    #[error("the manifest is invalid: {0}")]
    ManifestInvalid(String),
    #[error("the signature does not verify: {0}")]
    BadSignature(String),
    #[error("the backup does not match its manifest: {0}")]
    Mismatch(String),
}

impl Refusal {
    /// The command line's exit code: 3 for a missing manifest, 2 when there is no backup to
    /// read, 1 for a backup that is there and not good.
    pub fn exit_code(&self) -> u8 {
        match self {
            Refusal::ManifestMissing(_) => 3,
            Refusal::Unreadable(_) => 2,
            _ => 1,
        }
    }
}

/// A backup that passed [`verify`].
#[derive(Debug, Clone)]
pub struct Verified {
    pub path: PathBuf,
    /// `None` for a backup without a manifest accepted by `BACKUP_ALLOW_UNSIGNED`.
    pub manifest: Option<Manifest>,
    pub schema_version: u32,
}

/// Checks the backup at `path`: the manifest's signature, then the file against it (digest and
/// size, that redb opens it, schema version, table row counts, per-user row counts and audit
/// heads). Fails closed: a missing manifest is refused unless `allow_unsigned`; a manifest that
/// is present but unsigned or invalid always is. Blocking.
pub fn verify(path: &Path, signer: &Signer, allow_unsigned: bool) -> Result<Verified, Refusal> {
    if !path.is_file() {
        return Err(Refusal::Unreadable(format!("{} is not a file", path.display())));
    }
    let manifest_path = snapshot::manifest_path(path);
    if !manifest_path.exists() {
        if !allow_unsigned {
            return Err(Refusal::ManifestMissing(manifest_path.display().to_string()));
        }
        let schema_version = snapshot::schema_of(path).map_err(|e| Refusal::Mismatch(e.to_string()))?;
        return Ok(Verified { path: path.to_path_buf(), manifest: None, schema_version });
    }
    let manifest = snapshot::read_manifest(path).map_err(|e| Refusal::ManifestInvalid(e.to_string()))?;
    signer.check(&manifest)?;
    snapshot::verify_against(path, &manifest).map_err(|e| Refusal::Mismatch(e.to_string()))?;
    Ok(Verified { path: path.to_path_buf(), schema_version: manifest.schema_version, manifest: Some(manifest) })
}

/// A backup just written.
#[derive(Debug, Clone)]
pub struct Backup {
    pub path: PathBuf,
    pub manifest: Manifest,
}

/// Writes a signed backup of the running engine into `dir` (blocking: call it off the async
/// threads). Writes go on meanwhile; the snapshot is one read transaction, so it holds every
/// write acknowledged before it began.
pub fn create(
    engine: &Engine,
    dir: &Path,
    signer: &Signer,
    progress: &mut dyn FnMut(Progress),
) -> Result<Backup, Error> {
    writable(dir)?;
    let snapshot = engine.snapshot_with(dir, LABEL, Encoding::Rows, progress)?;
    seal(snapshot, signer)
}

/// Writes a signed backup of the database file at `db_path`, which no server has open.
pub fn create_offline(
    db_path: &Path,
    dir: &Path,
    signer: &Signer,
    progress: &mut dyn FnMut(Progress),
) -> Result<Backup, Error> {
    writable(dir)?;
    if let Some(refusal) = crate::ops::fs::unfinished_restore(db_path.parent().unwrap_or(Path::new("."))) {
        return Err(Error::RestoreUnfinished(refusal));
    }
    if !db_path.exists() {
        return Err(Error::NoDatabase(db_path.to_path_buf()));
    }
    let snapshot = snapshot::write_from_file(db_path, dir, LABEL, jiff::Timestamp::now(), Encoding::Rows, progress)?;
    seal(snapshot, signer)
}

/// Whether a backup can be written into `dir` (made when missing), asked before the snapshot:
/// a folder mounted into a container keeps its owner on the host, and the server runs as its
/// own user (uid 7300 in the image), so the refusal says whose folder it is and what to do.
fn writable(dir: &Path) -> Result<(), Error> {
    let probe = dir.join(format!(".mycorrhizal-write-check-{}", std::process::id()));
    let attempt = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&probe, b"")).map(|()| {
        let _ = std::fs::remove_file(&probe);
    });
    match attempt {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            use std::os::unix::fs::MetadataExt as _;
            let owner = std::fs::metadata(dir).map(|m| m.uid().to_string()).unwrap_or_else(|_| "?".into());
            let me = rustix::process::getuid().as_raw();
            Err(Error::Folder(format!(
                "cannot write into {}: permission denied (the folder belongs to uid {owner}, this runs as uid {me}). \
                 A folder mounted from the host keeps the host's owner: on the host, chown {me} it \
                 (`chown 7300:7300 ./backups` for the image), or mount a named volume",
                dir.display()
            )))
        }
        Err(e) => Err(Error::Folder(format!("cannot write into {}: {e}", dir.display()))),
    }
}

fn seal(snapshot: snapshot::Snapshot, signer: &Signer) -> Result<Backup, Error> {
    let mut manifest = snapshot.manifest;
    manifest.build = Some(crate::build_info::LONG_VERSION.to_string());
    signer.sign(&mut manifest);
    snapshot::store_manifest(&snapshot.path, &manifest)?;
    Ok(Backup { path: snapshot.path, manifest })
}

/// Signs a snapshot the engine wrote unsigned (the pre-migration snapshot), so it can be
/// restored like any backup.
pub fn sign_existing(path: &Path, signer: &Signer) -> Result<(), Error> {
    let mut manifest = snapshot::read_manifest(path)?;
    signer.sign(&mut manifest);
    Ok(snapshot::store_manifest(path, &manifest)?)
}

/// The backups in `dir`, newest first.
pub fn list(dir: &Path) -> Vec<PathBuf> {
    let prefix = format!("{LABEL}-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && BACKUP_EXTENSIONS.iter().any(|e| n.ends_with(e)))
        })
        .collect();
    // The names carry their UTC time with fixed widths, so name order is time order.
    found.sort();
    found.reverse();
    found
}

/// Removes all but the newest `keep` backups in `dir` (each file with its manifest); returns
/// how many went.
pub fn prune(dir: &Path, keep: usize) -> std::io::Result<usize> {
    let mut removed = 0;
    for old in list(dir).into_iter().skip(keep) {
        std::fs::remove_file(&old)?;
        let _ = std::fs::remove_file(snapshot::manifest_path(&old));
        removed += 1;
    }
    Ok(removed)
}

/// What a backup event says about it: sizes and counts, never user data.
pub fn detail(backup: &Backup, trigger: &str) -> serde_json::Value {
    let users = backup.manifest.users.as_ref().map(|u| u.len()).unwrap_or(0);
    json!({
        "operation": "operator_backup",
        "trigger": trigger,
        "file": backup.path.file_name().and_then(|n| n.to_str()).unwrap_or_default(),
        "size_bytes": backup.manifest.size,
        "users": users,
        "schema_version": backup.manifest.schema_version,
    })
}

/// Records a backup's outcome as the system event operators and alerting read:
/// `backup_completed` (component `backup`, operation `operator_backup`) or `backup_failed`.
pub async fn record(engine: &Engine, outcome: &Result<Backup, Error>, trigger: &str, duration_ms: u64) {
    let event = match outcome {
        Ok(backup) => Event::info("backup", "backup_completed").detail(detail(backup, trigger)),
        Err(e) => Event::error("backup", "backup_failed", e.to_string())
            .detail(json!({ "operation": "operator_backup", "trigger": trigger })),
    };
    emit(engine, event.duration_ms(duration_ms)).await;
}
