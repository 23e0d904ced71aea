//! The restore drill: proves that the newest backup restores, without touching the instance.
//! It verifies the backup (signature, digest, counts), copies it into a scratch folder, opens the
//! copy as start-up would (an older schema migrates), compares what the opened database holds
//! (live rows per user and kind, each audit chain's head) with the manifest, and walks every
//! user's audit chain. The scratch folder is removed either way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mycorrhizal_engine::{Durability, Engine, Options, SystemClock, UserId};

use super::{DrillFailure as Failure, Error, Signer, list, verify};
use crate::auth::records::Account;
use crate::config::Config;

/// A drill that passed.
#[derive(Debug, Clone)]
pub struct Drill {
    pub backup: PathBuf,
    pub users: usize,
    pub rows: u64,
    pub took: Duration,
}

/// Drills the newest backup in the configured backup folder. `Ok(None)` when there is none.
/// Blocking.
pub fn run(config: &Config, signer: &Signer) -> Result<Option<Drill>, Error> {
    let started = Instant::now();
    let Some(newest) = list(&config.integrity.backups_in(&config.data_dir)).into_iter().next() else {
        return Ok(None);
    };
    let name = newest.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let verified = verify(&newest, signer, config.integrity.backup_allow_unsigned)
        .map_err(|refusal| Error::Refused { name: name.clone(), refusal })?;
    let scratch = config.data_dir.join("restore-drill");
    let outcome = restore_into(&scratch, &newest).and_then(|engine| {
        let checked = check(&engine, verified.manifest.as_ref());
        engine.shutdown();
        checked
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let (users, rows) = outcome.map_err(|reason| Error::Drill { name, reason })?;
    Ok(Some(Drill { backup: newest, users, rows, took: started.elapsed() }))
}

/// Copies the backup into an empty `scratch` and opens it there.
fn restore_into(scratch: &Path, backup: &Path) -> Result<Engine, Failure> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).map_err(|source| Failure::Scratch { path: scratch.to_path_buf(), source })?;
    let copy = scratch.join("mycorrhizal.redb");
    mycorrhizal_engine::snapshot::materialize(backup, &copy, false).map_err(Failure::Copy)?;
    let options = Options {
        pre_migration_dir: Some(scratch.join("pre-migration")),
        migrations: crate::crm::migrations(),
        clock: Arc::new(SystemClock),
        // A scratch copy deleted right after: nothing here needs to survive a crash.
        durability: Durability::None,
        search: None,
        ..Options::default()
    };
    Engine::open(&copy, options).map(|(engine, _)| engine).map_err(Failure::DoesNotOpen)
}

/// Compares the restored copy with its manifest and walks every audit chain; returns the users
/// and live rows it holds.
fn check(engine: &Engine, manifest: Option<&mycorrhizal_engine::snapshot::Manifest>) -> Result<(usize, u64), Failure> {
    let (users, heads) = engine.contents().map_err(Failure::Unreadable)?;
    if let Some(manifest) = manifest {
        if let Some(expected) = &manifest.users {
            let differ = differing(expected, &users);
            if differ > 0 {
                return Err(Failure::RowsDiffer(differ));
            }
        }
        if let Some(expected) = &manifest.audit_heads {
            let differ = differing(expected, &heads);
            if differ > 0 {
                return Err(Failure::AuditHeadsDiffer(differ));
            }
        }
    }
    let accounts = engine.global().and_then(|g| g.list::<Account>()).map_err(Failure::Unreadable)?;
    for (id, _) in &accounts {
        engine.user(UserId(*id)).view().and_then(|v| v.verify_audit()).map_err(Failure::AuditChain)?;
    }
    let rows = users.values().flat_map(|kinds| kinds.values()).sum();
    Ok((accounts.len(), rows))
}

/// How many keys differ between two per-user maps (counts only: no identifiers leave here).
fn differing<V: PartialEq>(a: &std::collections::BTreeMap<u64, V>, b: &std::collections::BTreeMap<u64, V>) -> usize {
    a.keys()
        .chain(b.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| a.get(k) != b.get(k))
        .count()
}
