//! Restoring a backup: a whole-instance rollback with the server stopped.
//!
//! In order: verify the backup (signature, digest, counts); refuse a schema newer than this
//! build; refuse while a server holds the data folder; move the current database and search
//! index aside into `DATA_DIR/replaced-<UTC time>/`; put the backup's database in place (built
//! from its record stream aside, fsynced, renamed; for a backup of this build's schema the
//! search index is built from the same rows at the same time, and every contact's derived
//! columns checked; older backups are decoded); open it as start-up does (older schemas migrate
//! behind their own pre-migration snapshot; a search index still absent is rebuilt from the
//! restored rows); rewrite the contacts whose derived columns were found stale (or, when they
//! were not checked on the way, rebuild every account's); check every user's audit chain. Any failure puts the
//! replaced files back. The replaced data stays aside afterwards (the path is reported) for the
//! operator to remove once satisfied: a restore of the wrong backup must not cost the data it
//! replaced.

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::collections::BTreeMap;

use mycorrhizal_engine::UserId;
use mycorrhizal_engine::{Checked, RowCheck};

use crate::auth::records::Account;
use crate::backup::{Refusal, Signer, Verified};
use crate::config::Config;
use crate::crm::contact::Contact;
use crate::state::AppState;

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    pub backup: Verified,
    /// The schema version after opening (the backup's, or later when it migrated).
    pub schema_version: u32,
    /// Where the replaced database and index went.
    pub replaced: Option<PathBuf>,
    pub search_documents: u64,
    pub contacts_scanned: u64,
    pub contacts_updated: u64,
    pub users: usize,
    /// How long each step took, in order (for the operator's output and the bench).
    pub steps: Vec<(&'static str, std::time::Duration)>,
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{0}")]
    Refused(#[from] Refusal),
    #[error(
        "the server is running on {0} (its database is open); stop it first, then restore (a restore replaces the whole instance)"
    )]
    ServerRunning(String),
    #[error(
        "the backup has schema version {backup}, newer than this build's {supported}; restore it with a newer build"
    )]
    NewerSchema { backup: u32, supported: u32 },
    #[error("restore failed and the previous data is back in place: {0}")]
    Failed(String),
    #[error("restore failed: {0}")]
    Io(String),
}

impl RestoreError {
    /// The command's exit code: a refused backup keeps its own; 4 while the server runs.
    pub fn exit_code(&self) -> u8 {
        match self {
            RestoreError::Refused(refusal) => refusal.exit_code(),
            RestoreError::ServerRunning(_) => 4,
            _ => 1,
        }
    }
}

/// Restores `backup` over the instance `config` names. `config` must have its secret loaded.
pub async fn run(config: &Config, backup: &Path) -> Result<Restored, RestoreError> {
    let data_dir = config.data_dir.clone();
    let db_path = config.database_path();
    if crate::backup::control::server_running(&data_dir) || mycorrhizal_engine::snapshot::in_use(&db_path) {
        return Err(RestoreError::ServerRunning(data_dir.display().to_string()));
    }
    let signer = Signer::from_config(config).map_err(|e| RestoreError::Io(e.to_string()))?;
    let allow_unsigned = config.integrity.backup_allow_unsigned;
    let path = backup.to_path_buf();
    let started = Instant::now();
    let verified = tokio::task::spawn_blocking(move || crate::backup::verify(&path, &signer, allow_unsigned))
        .await
        .map_err(|e| RestoreError::Io(e.to_string()))??;
    let mut steps = vec![("verify", started.elapsed())];
    let supported = crate::crm::schema_version();
    if verified.schema_version > supported {
        return Err(RestoreError::NewerSchema { backup: verified.schema_version, supported });
    }
    // A restore onto a new machine starts from an empty (or missing) data folder.
    std::fs::create_dir_all(&data_dir).map_err(|e| RestoreError::Io(format!("{}: {e}", data_dir.display())))?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    // A new folder each time: a restore run again after one cut short (within the same second,
    // from a script) must not move into the folder that holds the data the first one replaced.
    let aside = (1..)
        .map(|n| data_dir.join(if n == 1 { format!("replaced-{stamp}") } else { format!("replaced-{stamp}-{n}") }))
        .find(|path| !path.exists())
        .expect("a free name");
    // Durable before anything moves, gone only at the end: a restore cut short (a power cut)
    // leaves it, and nothing opens the folder until the operator has finished the restore.
    let marker = data_dir.join(crate::ops::fs::RESTORE_MARKER);
    let advice = format!(
        "run `mycorrhizal restore {}` again, or move what {} holds back into {} and delete this file",
        verified.path.display(),
        aside.display(),
        data_dir.display()
    );
    write_synced(&marker, &advice).map_err(|e| RestoreError::Io(format!("{}: {e}", marker.display())))?;
    let moved = move_aside(&data_dir, &db_path, &aside)
        .and_then(|moved| crate::ops::fs::sync_dir(&data_dir).map(|()| moved))
        .map_err(|e| RestoreError::Io(e.to_string()))?;
    let outcome = bring_back(config, &verified.path, verified.schema_version, &mut steps).await;
    if outcome.is_ok() {
        clear(&marker, &data_dir).map_err(|e| RestoreError::Io(format!("{}: {e}", marker.display())))?;
    }
    match outcome {
        Ok((schema_version, counts)) => Ok(Restored {
            backup: verified,
            schema_version,
            replaced: (!moved.is_empty()).then_some(aside),
            search_documents: counts.search_documents,
            contacts_scanned: counts.contacts_scanned,
            contacts_updated: counts.contacts_updated,
            users: counts.users,
            steps,
        }),
        Err(reason) => {
            let _ = std::fs::remove_file(&db_path);
            let _ = std::fs::remove_file(mycorrhizal_engine::redo_path(&db_path));
            let _ = std::fs::remove_dir_all(data_dir.join("search"));
            for (from, to) in &moved {
                if let Err(e) = std::fs::rename(to, from) {
                    return Err(RestoreError::Failed(format!(
                        "{reason}; moving {} back to {} also failed ({e}): do it by hand",
                        to.display(),
                        from.display()
                    )));
                }
            }
            let _ = std::fs::remove_dir(&aside);
            clear(&marker, &data_dir).map_err(|e| RestoreError::Io(format!("{}: {e}", marker.display())))?;
            Err(RestoreError::Failed(reason))
        }
    }
}

/// Writes `text` to `path` and makes it and its name durable.
fn write_synced(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    std::io::Write::write_all(&mut file, format!("{text}\n").as_bytes())?;
    file.sync_all()?;
    crate::ops::fs::sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Removes the restore's marker, durably.
fn clear(marker: &Path, data_dir: &Path) -> std::io::Result<()> {
    std::fs::remove_file(marker)?;
    crate::ops::fs::sync_dir(data_dir)
}

/// Moves the database, its redo log (after a crash, acknowledged writes the file itself does
/// not hold yet) and the search index into `aside`; returns `(from, to)` of each move.
fn move_aside(data_dir: &Path, db_path: &Path, aside: &Path) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    let mut moved = Vec::new();
    let log = mycorrhizal_engine::redo_path(db_path);
    for from in [db_path.to_path_buf(), log, data_dir.join("search")] {
        if !from.exists() {
            continue;
        }
        std::fs::create_dir_all(aside)?;
        let to = aside.join(from.file_name().unwrap_or_default());
        std::fs::rename(&from, &to)?;
        moved.push((from, to));
    }
    Ok(moved)
}

struct Counts {
    search_documents: u64,
    contacts_scanned: u64,
    contacts_updated: u64,
    users: usize,
}

/// Puts the backup's database in place (built from its record stream, with the search index when
/// its schema is this build's; or decoded) and opens it as start-up does.
async fn bring_back(
    config: &Config,
    backup: &Path,
    schema_version: u32,
    steps: &mut Vec<(&'static str, std::time::Duration)>,
) -> Result<(u32, Counts), String> {
    let db_path = config.database_path();
    let started = Instant::now();
    let partial = config.data_dir.join(".mycorrhizal.redb.restoring");
    // A backup of this build's schema gets its search index built from its rows while the
    // database is built (a record stream); an older one is migrated at open, and indexed then.
    let search = (schema_version == crate::crm::schema_version()).then(|| crate::database::search_options(config));
    let (from, to) = (backup.to_path_buf(), partial.clone());
    // The contacts' derived columns are checked as the index's pass reads the rows.
    let checks = [RowCheck::of::<Contact>(crate::crm::contact::ops::derived_stale)];
    let placed = tokio::task::spawn_blocking(move || mycorrhizal_engine::restore(&from, &to, search.as_ref(), &checks))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot put the backup's database in place: {e}"))?;
    std::fs::rename(&partial, &db_path).map_err(|e| e.to_string())?;
    crate::ops::fs::sync_dir(&config.data_dir).map_err(|e| e.to_string())?;
    let indexed = placed.search_documents.is_some();
    steps.extend(placed.steps);
    steps.push((if indexed { "database and search index built" } else { "database in place" }, started.elapsed()));

    let started = Instant::now();
    let engine = crate::database::open_engine_for_restore(config).await.map_err(|e| format!("{e:#}"))?;
    steps.push((if indexed { "open" } else { "open (search index rebuilt)" }, started.elapsed()));
    let outcome = finish(engine.clone(), config.clone(), placed.checked, steps).await;
    let started = Instant::now();
    engine.shutdown();
    steps.push(("shutdown", started.elapsed()));
    outcome
}

/// Brings the derived contact columns up to date (rewriting the contacts `checked` found stale,
/// or, when the restore did not check them, every account's contacts), then walks every audit
/// chain.
async fn finish(
    engine: mycorrhizal_engine::Engine,
    config: Config,
    checked: Option<BTreeMap<u64, Checked>>,
    steps: &mut Vec<(&'static str, std::time::Duration)>,
) -> Result<(u32, Counts), String> {
    let started = Instant::now();
    crate::database::ready_to_serve(&engine).await.map_err(|e| format!("{e:#}"))?;
    let state = AppState::build(engine.clone(), config).await?;
    let (contacts_scanned, contacts_updated) = match checked {
        Some(mut checked) => {
            let (mut scanned, mut updated) = (0, 0);
            for user in crate::auth::accounts::ids(&engine).await.map_err(|e| e.to_string())? {
                let found = checked.remove(&user).unwrap_or_default();
                scanned += found.scanned;
                updated += crate::crm::contact::ops::rewrite_derived(&engine.user(UserId(user)), found.stale)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            (scanned, updated)
        }
        None => crate::maintenance::rebuild_derived(&engine).await.map_err(|e| e.to_string())?,
    };
    steps.push(("derived columns", started.elapsed()));
    let started = Instant::now();
    let users = state
        .blocking(|engine| {
            let users = engine.global()?.list::<Account>()?;
            for (id, _) in &users {
                engine.user(UserId(*id)).view()?.verify_audit()?;
            }
            engine.search_flush()?;
            Ok::<_, mycorrhizal_engine::Error>(users.len())
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("the restored data does not check: {e}"))?;
    steps.push(("audit chains, search flush", started.elapsed()));
    let search_documents = engine.search_status().map(|s| s.documents).unwrap_or(0);
    Ok((engine.schema_version(), Counts { search_documents, contacts_scanned, contacts_updated, users }))
}
