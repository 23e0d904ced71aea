//! Opening the data folder: the engine over `DATA_DIR` with the server's record kinds, search
//! sources and migrations (run behind a verified, signed pre-migration snapshot, each step
//! recorded as a system event), then the files earlier versions kept beside the database moved
//! into it. Every command that opens the database (the server, `backup`, `restore`, `import`,
//! `bundle`) comes through here.

use std::time::Instant;

use anyhow::Context;
use mycorrhizal_engine::{Engine, MigrationReport, Options, SearchOptions};
use serde_json::json;

use crate::config::Config;
use crate::ops::events::{Event, emit};
use crate::{backup, crm, ops};

/// Opens the engine for `config`, migrating behind a verified snapshot, and records what happened.
/// Refused while a restore's marker says one was cut short (`ops::fs::RESTORE_MARKER`).
pub async fn open_engine(config: &Config) -> anyhow::Result<Engine> {
    if let Some(refusal) = ops::fs::unfinished_restore(&config.data_dir) {
        anyhow::bail!(refusal);
    }
    open_engine_for_restore(config).await
}

/// [`open_engine`] without the check of a restore's marker: for the restore itself.
pub(crate) async fn open_engine_for_restore(config: &Config) -> anyhow::Result<Engine> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create DATA_DIR {}", config.data_dir.display()))?;
    if let Some(fs_type) = ops::fs::network_filesystem(&config.data_dir) {
        tracing::warn!(
            event = "network_filesystem",
            component = "app",
            fs_type = %fs_type,
            "the database is on a network filesystem ({fs_type}); this risks corruption: keep DATA_DIR on local disk"
        );
    }
    let path = config.database_path();
    let options = Options {
        pre_migration_dir: Some(config.pre_migration_dir.clone()),
        search: Some(search_options(config)),
        migrations: crm::migrations(),
        cache_bytes: config.db_cache_bytes,
        unreplayable: if config.features.redo_log_set_aside {
            mycorrhizal_engine::Unreplayable::SetAside
        } else {
            mycorrhizal_engine::Unreplayable::Refuse
        },
        ..Options::default()
    };
    let started_at = jiff::Timestamp::now();
    let started = Instant::now();
    let opened = tokio::task::spawn_blocking(move || Engine::open(path, options)).await?;
    let (engine, report) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            tracing::error!(event = "migration_failed", component = "migration", error = %e);
            // Only a failure of the migration itself is the timeline's (a database another
            // process holds, say, is not).
            use mycorrhizal_engine::Error as E;
            if matches!(
                e,
                E::SchemaAhead { .. }
                    | E::DirtyMigration { .. }
                    | E::PreMigrationBackupFailed { .. }
                    | E::MigrationFailed { .. }
                    | E::ReindexFailed { .. }
            ) {
                remember_failure(&config.data_dir, started_at, &e.to_string());
            }
            return Err(anyhow::Error::new(e).context("cannot open the database"));
        }
    };
    record_remembered_failure(&engine, &config.data_dir).await;
    if let Some(aside) = engine.recovered().set_aside.clone() {
        let name = aside.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let detail = json!({ "operation": "redo_replay", "kept": name });
        let message = "a redo log that could not be replayed was set aside (REDO_LOG_SET_ASIDE): acknowledged writes may be missing";
        emit(&engine, Event::error("database", "redo_set_aside", message).detail(detail)).await;
    }
    record_migration(&engine, &report, started_at, started.elapsed().as_millis() as u64).await;
    if let Some(snapshot) = &report.snapshot {
        // Signed like an operator backup, so `mycorrhizal restore` takes it for a rollback.
        let signed = backup::Signer::from_config(config).and_then(|s| backup::sign_existing(&snapshot.path, &s));
        if let Err(e) = signed {
            tracing::warn!(event = "pre_migration_snapshot_unsigned", component = "migration", error = %e);
        }
    }
    adopt_files(&engine, &config.data_dir).await;
    Ok(engine)
}

/// What the server needs before it serves, beyond what every command's `open_engine` does: the
/// index entries of every record kind whose index set changed since this database was last
/// served (`Record::INDEX_VERSION`; see the engine's `reindex`), each backfill recorded in the
/// system timeline, and a pending side an earlier version wrote moved to the outbox's index by
/// lane. Fails (refusing boot) when either cannot be done.
pub async fn ready_to_serve(engine: &Engine) -> anyhow::Result<()> {
    let handle = engine.clone();
    let report = tokio::task::spawn_blocking(move || handle.ensure_indexes(&crm::record_kinds()))
        .await
        .context("index backfill")?
        .map_err(|e| {
            tracing::error!(event = "reindex_failed", component = "migration", error = %e);
            anyhow::Error::new(e).context("cannot bring the indexes up to date")
        })?;
    if let Some(snapshot) = &report.snapshot {
        let detail = json!({ "operation": "pre_reindex_snapshot", "tables": snapshot.manifest.tables.len(), "size_bytes": snapshot.manifest.size });
        emit(engine, Event::info("migration", "backup_completed").detail(detail)).await;
    }
    for kind in report.kinds.iter().filter(|k| k.rows > 0) {
        let detail = json!({ "kind": kind.kind, "from_version": kind.from, "to_version": kind.to, "rows": kind.rows });
        emit(engine, Event::info("migration", "index_backfilled").detail(detail).duration_ms(kind.duration_ms)).await;
    }
    crate::outbox::adopt_pending(engine).await.context("cannot read the outbox")?;
    Ok(())
}

/// A failed open is remembered beside the database (which may not be writable then) and put in
/// the timeline as `migration_failed` once it opens again.
const FAILED_OPEN: &str = "migration-failed.json";

fn remember_failure(data_dir: &std::path::Path, at: jiff::Timestamp, error: &str) {
    let note = json!({ "at": at, "error": crate::ops::events::sanitise(error) });
    if let Err(e) = ops::fs::write_whole(data_dir, FAILED_OPEN, note.to_string().as_bytes()) {
        tracing::warn!(event = "migration_failure_not_remembered", component = "migration", error = %e);
    }
}

async fn record_remembered_failure(engine: &Engine, data_dir: &std::path::Path) {
    let path = data_dir.join(FAILED_OPEN);
    let Ok(text) = std::fs::read_to_string(&path) else { return };
    let note: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let error = note["error"].as_str().unwrap_or("the database could not be opened").to_string();
    let mut event = Event::error("migration", "migration_failed", error);
    if let Some(at) = note["at"].as_str().and_then(|t| t.parse().ok()) {
        event = event.at(at);
    }
    emit(engine, event).await;
    if let Err(e) = std::fs::remove_file(&path) {
        tracing::warn!(event = "migration_failure_not_forgotten", component = "migration", error = %e);
    }
}

/// How the server runs its search index (`DATA_DIR/search`, the searchable kinds, the commit
/// interval and writer memory the configuration sets).
pub fn search_options(config: &Config) -> SearchOptions {
    let mut search = SearchOptions::new(config.data_dir.join("search"), crm::search_sources());
    search.commit_interval = std::time::Duration::from_millis(config.search_commit_interval_ms);
    search.writer_memory = config.search_writer_bytes;
    search
}

/// Moves contact pictures and attachments an earlier version kept as files into the database
/// (see [`crm::contact::picture`], [`crm::attachment`]); a no-op once done. Should it fail (a full
/// disk), the server still starts: the files stay where they are and the next start moves them.
async fn adopt_files(engine: &Engine, data_dir: &std::path::Path) {
    let kinds =
        [("attachments", &crm::attachment::ops::LEGACY_FILES), ("pictures", &crm::contact::picture::LEGACY_FILES)];
    for (what, legacy) in kinds {
        let (engine, dir) = (engine.clone(), data_dir.to_path_buf());
        let adopted = tokio::task::spawn_blocking(move || crm::legacy_files::adopt(&engine, &dir, legacy)).await;
        match adopted.map_err(|e| e.to_string()).and_then(|done| done.map_err(|e| e.to_string())) {
            Ok(adopted) if adopted.moved > 0 || adopted.removed > 0 => tracing::info!(
                event = format!("{what}_adopted"),
                component = "migration",
                moved = adopted.moved,
                removed = adopted.removed,
                "{what} moved from files into the database"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(event = format!("{what}_adoption_failed"), component = "migration", error = %e),
        }
    }
}

async fn record_migration(engine: &Engine, report: &MigrationReport, at: jiff::Timestamp, ms: u64) {
    if report.steps.is_empty() {
        return;
    }
    let versions = json!({ "from_version": report.from, "to_version": report.to });
    emit(engine, Event::info("migration", "migration_started").detail(versions.clone()).at(at)).await;
    if let Some(snapshot) = &report.snapshot {
        let detail = json!({ "operation": "pre_migration_snapshot", "tables": snapshot.manifest.tables.len(), "size_bytes": snapshot.manifest.size });
        emit(engine, Event::info("migration", "backup_completed").detail(detail).at(at)).await;
    }
    emit(engine, Event::info("migration", "migration_completed").detail(versions).duration_ms(ms)).await;
}
