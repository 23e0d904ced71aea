//! Files earlier versions kept beside the database (`DATA_DIR/users/<user>/<folder>/<name>`:
//! contact pictures, attachments), moved into it once, when the data folder is opened. One
//! routine for every kind of file: a kind says which files its records name (and the blob each
//! becomes) and which bytes it keeps.
//!
//! A file is moved only when a record of that user names it and its bytes are kept; a file no
//! record names, or whose bytes are not kept, is removed; a named file that cannot be read stays
//! for the next start. A file is removed from disk only after the transaction holding its bytes
//! committed, so an interruption at any point loses nothing (the next start moves what is left).
//! Memory stays bounded whatever the folder holds ([`BYTES_PER_COMMIT`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use mycorrhizal_engine::{Engine, UserId, UserScope, UserView};
use sha2::{Digest, Sha256};

/// Bytes of files moved per transaction.
const BYTES_PER_COMMIT: usize = 32 * 1024 * 1024;

/// A file a record names: the blob it becomes, and the digest the record holds of it, if any
/// (bytes that differ are moved all the same, with a warning: reads keep refusing them and the
/// integrity check reports them).
pub struct Named {
    pub blob: String,
    pub sha256: Option<String>,
}

/// One kind of legacy file.
pub struct Legacy {
    /// The folder under `DATA_DIR/users/<user>/`.
    pub folder: &'static str,
    /// The files the user's records name, by file name.
    pub named: fn(&UserView) -> mycorrhizal_engine::Result<HashMap<String, Named>>,
    /// Whether a named file's bytes are kept (`false`: the file is removed).
    pub keeps: fn(&[u8]) -> bool,
}

/// What [`adopt`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Adopted {
    /// Files moved into the database.
    pub moved: usize,
    /// Files no record named, or whose bytes were not kept (left by an interrupted write or a
    /// failed removal): removed.
    pub removed: usize,
}

/// Moves every user's files of `legacy` into the database, then removes them and, once empty,
/// their folder.
pub fn adopt(engine: &Engine, data_dir: &Path, legacy: &Legacy) -> mycorrhizal_engine::Result<Adopted> {
    let mut adopted = Adopted::default();
    let Ok(users) = std::fs::read_dir(data_dir.join("users")) else { return Ok(adopted) };
    for entry in users.flatten() {
        let Some(user) = entry.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else { continue };
        let dir = entry.path().join(legacy.folder);
        let Ok(files) = std::fs::read_dir(&dir) else { continue };
        let scope = engine.user(UserId(user));
        let named = (legacy.named)(&scope.view()?)?;
        let mut pending: Vec<(String, String, Vec<u8>)> = Vec::new();
        let mut pending_bytes = 0;
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let bytes = match named.get(&name).map(|_| std::fs::read(file.path())) {
                Some(Ok(bytes)) => Some(bytes).filter(|b| (legacy.keeps)(b)),
                Some(Err(e)) => {
                    tracing::warn!(event = "legacy_file_unreadable", folder = legacy.folder, user, file = %name, error = %e);
                    continue;
                }
                None => None,
            };
            let (Some(bytes), Some(target)) = (bytes, named.get(&name)) else {
                if std::fs::remove_file(file.path()).is_ok() {
                    adopted.removed += 1;
                }
                continue;
            };
            if target.sha256.as_ref().is_some_and(|digest| *digest != hex::encode(Sha256::digest(&bytes))) {
                tracing::warn!(event = "legacy_file_digest_mismatch", folder = legacy.folder, user, file = %name);
            }
            pending_bytes += bytes.len();
            pending.push((name, target.blob.clone(), bytes));
            if pending_bytes >= BYTES_PER_COMMIT {
                adopted.moved += commit(&scope, &dir, std::mem::take(&mut pending))?;
                pending_bytes = 0;
            }
        }
        adopted.moved += commit(&scope, &dir, pending)?;
        // Only an empty folder goes.
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(adopted)
}

/// Stores one user's files as their blobs in one transaction, then removes the files.
fn commit(scope: &UserScope, dir: &Path, files: Vec<(String, String, Vec<u8>)>) -> mycorrhizal_engine::Result<usize> {
    if files.is_empty() {
        return Ok(0);
    }
    let files = Arc::new(files);
    let stored = Arc::clone(&files);
    scope.write(move |tx| {
        for (_, blob, bytes) in stored.iter() {
            tx.put_blob(blob, bytes)?;
        }
        Ok(())
    })?;
    for (name, _, _) in files.iter() {
        let _ = std::fs::remove_file(dir.join(name));
    }
    Ok(files.len())
}
