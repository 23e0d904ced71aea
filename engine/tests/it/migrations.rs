use mycorrhizal_engine::migrate::MigrationTx;
use mycorrhizal_engine::{Engine, Error, Migration, Options, UserId, migrate, snapshot};
use redb::TableDefinition;

use crate::helpers::Person;

/// A step that rewrites every stored person (in the shape it already has).
fn test_step(txn: &MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    migrate::convert_rows::<Person, Person>(txn, |person| person)?;
    Ok(())
}

fn failing_step(_: &MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    Err(Error::CommitFailed("step refused on purpose".into()))
}

fn with_step(step: fn(&MigrationTx<'_>) -> mycorrhizal_engine::Result<()>, dir: Option<std::path::PathBuf>) -> Options {
    let mut migrations = migrate::steps();
    migrations.push(Migration { version: migrate::latest() + 1, name: "test step", run: step });
    Options { migrations, pre_migration_dir: dir, ..Options::default() }
}

fn seeded() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let (engine, report) = Engine::open(&path, Options::default()).unwrap();
    assert_eq!((report.from, report.to), (0, migrate::latest()));
    assert!(report.snapshot.is_none(), "a brand-new file has nothing to protect");
    engine.user(UserId(1)).create(Person::new("Ada", "ada@example.org")).unwrap();
    engine.shutdown();
    (dir, path)
}

#[test]
fn a_pending_step_runs_after_a_verified_snapshot() {
    let (dir, path) = seeded();
    let (engine, report) = Engine::open(&path, with_step(test_step, None)).unwrap();
    assert_eq!(report.to, migrate::latest() + 1);
    let snap = report.snapshot.expect("snapshot taken before migrating");
    assert_eq!(snap.path.parent().unwrap(), dir.path().join("pre-migration"));
    let manifest = snapshot::verify(&snap.path).expect("snapshot verifies");
    assert_eq!(manifest.schema_version, migrate::latest(), "taken before the step");
    assert_eq!(manifest.tables.get("rec:person"), Some(&1));
    assert_eq!(engine.schema_version(), migrate::latest() + 1);
    // Open again: nothing pending, no new snapshot.
    engine.shutdown();
    drop(engine);
    let (_, again) = Engine::open(&path, with_step(test_step, None)).unwrap();
    assert!(again.steps.is_empty() && again.snapshot.is_none());
}

#[test]
fn an_unwritable_snapshot_target_refuses_to_migrate() {
    let (dir, path) = seeded();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let result = Engine::open(&path, with_step(test_step, Some(blocker.join("snapshots"))));
    assert!(matches!(result, Err(Error::PreMigrationBackupFailed { .. })), "{:?}", result.err());
    // The database was not migrated.
    let (engine, report) = Engine::open(&path, Options::default()).unwrap();
    assert_eq!(report.from, migrate::latest());
    assert_eq!(engine.schema_version(), migrate::latest());
}

#[test]
fn a_schema_newer_than_the_build_refuses_to_open() {
    let (_dir, path) = seeded();
    drop(Engine::open(&path, with_step(test_step, None)).unwrap());
    let result = Engine::open(&path, Options::default());
    assert!(matches!(result, Err(Error::SchemaAhead { .. })), "{:?}", result.err());
}

#[test]
fn a_failed_step_leaves_the_old_version_and_can_be_retried() {
    let (_dir, path) = seeded();
    let result = Engine::open(&path, with_step(failing_step, None));
    assert!(matches!(result, Err(Error::MigrationFailed { .. })), "{:?}", result.err());
    let (engine, report) = Engine::open(&path, with_step(test_step, None)).unwrap();
    assert_eq!(report.from, migrate::latest());
    assert_eq!(engine.schema_version(), migrate::latest() + 1);
    assert_eq!(engine.user(UserId(1)).list::<Person>().unwrap().len(), 1);
}

#[test]
fn a_tampered_snapshot_fails_verification() {
    let (dir, path) = seeded();
    let (engine, _) = Engine::open(&path, Options::default()).unwrap();
    let snap = engine.snapshot(&dir.path().join("backups"), "manual").unwrap();
    snapshot::verify(&snap.path).unwrap();
    let mut bytes = std::fs::read(&snap.path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&snap.path, bytes).unwrap();
    assert!(matches!(snapshot::verify(&snap.path), Err(Error::SnapshotInvalid(_))));
    std::fs::remove_file(snapshot::manifest_path(&snap.path)).unwrap();
    assert!(matches!(snapshot::verify(&snap.path), Err(Error::SnapshotInvalid(_))));
}

#[test]
fn an_lz4_snapshot_verifies_decodes_to_the_same_database_and_refuses_a_changed_byte() {
    let (dir, path) = seeded();
    let (engine, _) = Engine::open(&path, Options::default()).unwrap();
    let out = dir.path().join("backups");
    let snap = engine.snapshot_with(&out, "packed", snapshot::Encoding::Lz4, &mut |_| {}).unwrap();
    assert!(snap.path.to_str().unwrap().ends_with(".redb.lz4"), "{}", snap.path.display());
    assert_eq!(snap.manifest.encoding.as_deref(), Some("lz4"));
    assert_eq!(snapshot::Encoding::of_file(&snap.path).unwrap(), snapshot::Encoding::Lz4);
    snapshot::verify(&snap.path).unwrap();
    assert_eq!(snapshot::schema_of(&snap.path).unwrap(), engine.schema_version());
    // Nothing is left beside it: no partial copy, no scratch file.
    let names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    engine.shutdown();

    // Decoded, it is a database with the same rows.
    let restored = dir.path().join("restored.redb");
    snapshot::materialize(&snap.path, &restored, true).unwrap();
    let (engine, _) = Engine::open(&restored, Options::default()).unwrap();
    assert_eq!(engine.user(UserId(1)).list::<Person>().unwrap().len(), 1);
    engine.shutdown();

    let mut bytes = std::fs::read(&snap.path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&snap.path, bytes).unwrap();
    assert!(matches!(snapshot::verify(&snap.path), Err(Error::SnapshotInvalid(_))));
}

fn crashing_step(_: &MigrationTx<'_>) -> mycorrhizal_engine::Result<()> {
    panic!("the process dies in the middle of the step");
}

#[test]
fn a_step_interrupted_by_a_crash_leaves_the_database_dirty_and_start_up_refuses() {
    let (_dir, path) = seeded();
    let crashed = std::panic::catch_unwind(|| Engine::open(&path, with_step(crashing_step, None)));
    assert!(crashed.is_err(), "the step panicked");
    let result = Engine::open(&path, with_step(test_step, None));
    match result {
        Err(Error::DirtyMigration { version, .. }) => assert_eq!(version, migrate::latest() + 1),
        other => panic!("expected DirtyMigration, got {:?}", other.err()),
    }
}

#[test]
fn the_live_count_backfill_counts_what_is_there() {
    let (_dir, path) = seeded();
    {
        let (engine, _) = Engine::open(&path, Options::default()).unwrap();
        let user = engine.user(UserId(1));
        let second = user.create(Person::new("Bob", "bob@example.org")).unwrap();
        user.delete::<Person>(second.id, mycorrhizal_engine::Precondition::Any).unwrap();
    }
    migrate::rewind_version_for_tests(&path, 1).unwrap();
    {
        // A version-1 database had no live_counts table.
        let db = redb::Database::builder().open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        let counts: TableDefinition<(u64, &str), u64> = TableDefinition::new("live_counts");
        assert!(txn.delete_table(counts).unwrap());
        txn.commit().unwrap();
    }
    let (engine, report) = Engine::open(&path, Options::default()).unwrap();
    assert_eq!(report.steps.iter().map(|s| s.version).collect::<Vec<_>>(), [2]);
    assert_eq!(engine.user(UserId(1)).view().unwrap().count::<Person>().unwrap(), 1, "one live, one tombstone");
}
