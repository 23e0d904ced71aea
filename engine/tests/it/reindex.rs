//! Index backfill: rows written before a kind's index set changed are found through the new
//! indexes once `ensure_indexes` has run with the kind's new `INDEX_VERSION`.

use mycorrhizal_engine::{Engine, Error, Indexed, Kind, Options, Precondition, Record, UserId, snapshot};
use serde::{Deserialize, Serialize};

use crate::helpers::{Person, open_in};

const ALICE: UserId = UserId(1);
const BOB: UserId = UserId(2);

/// The same stored shape and kind as [`Person`], one index version later: a new `initial` index,
/// and the `email` index dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PersonV1 {
    name: String,
    email: String,
    sort_name: String,
}

impl Record for PersonV1 {
    const KIND: Kind = Person::KIND;
    const INDEX_VERSION: u32 = 1;

    fn save_hook(&mut self) {
        self.sort_name = self.name.to_lowercase();
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![("sort_name", self.sort_name.clone()), ("initial", self.sort_name.chars().take(1).collect())]
    }
}

/// Version 2 makes `initial` unique, which the seeded rows violate.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PersonV2(PersonV1);

impl Record for PersonV2 {
    const KIND: Kind = Person::KIND;
    const INDEX_VERSION: u32 = 2;
    const UNIQUE: &'static [&'static str] = &["initial"];

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        self.0.index_entries()
    }
}

/// Alice: Ada, Alan, Grace (deleted); Bob: Anne. Written under index version 0.
fn seeded() -> (tempfile::TempDir, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_in(&dir);
    let alice = engine.user(ALICE);
    let ada = alice.create(Person::new("Ada", "ada@example.org")).unwrap().id;
    let alan = alice.create(Person::new("Alan", "alan@example.org")).unwrap().id;
    let grace = alice.create(Person::new("Grace", "grace@example.org")).unwrap().id;
    alice.delete::<Person>(grace, Precondition::Any).unwrap();
    let anne = engine.user(BOB).create(Person::new("Anne", "anne@example.org")).unwrap().id;
    engine.shutdown();
    (dir, vec![ada, alan, grace, anne])
}

#[test]
fn rows_written_before_a_new_index_are_found_after_the_backfill() {
    let (dir, ids) = seeded();
    let (ada, alan, anne) = (ids[0], ids[1], ids[3]);
    let engine = open_in(&dir);
    let alice = engine.user(ALICE);
    assert!(alice.find::<PersonV1>("initial", "a").unwrap().is_empty(), "not indexed before the backfill");

    let report = engine.ensure_indexes(&[Indexed::of::<PersonV1>()]).unwrap();
    assert_eq!(report.kinds.len(), 1);
    let done = &report.kinds[0];
    assert_eq!((done.kind, done.from, done.to, done.rows), ("person", 0, 1, 3), "the tombstone is not indexed");
    let snap = report.snapshot.expect("a verified snapshot before rewriting the entries");
    assert_eq!(snap.path.parent().unwrap(), dir.path().join("pre-migration"));
    assert_eq!(snapshot::verify(&snap.path).unwrap().tables.get("rec:person"), Some(&4));

    assert_eq!(alice.find::<PersonV1>("initial", "a").unwrap(), vec![ada, alan]);
    assert!(alice.find::<PersonV1>("initial", "g").unwrap().is_empty());
    assert_eq!(engine.user(BOB).find::<PersonV1>("initial", "a").unwrap(), vec![anne], "per user");
    // The old index set's entries are gone, the engine's own are back.
    assert!(alice.find::<PersonV1>("email", "ada@example.org").unwrap().is_empty());
    let entries = alice.view().unwrap().index_entries::<PersonV1>().unwrap();
    assert_eq!(entries.iter().filter(|(name, _, _)| name == "_updated").count(), 2);
    assert_eq!(entries.len(), 6, "{entries:?}");

    // Writes from here on keep the new index; reopening finds nothing left to do.
    alice
        .put(
            ada,
            Precondition::Any,
            PersonV1 { name: "Beatrix".into(), email: String::new(), sort_name: String::new() },
        )
        .unwrap();
    assert_eq!(alice.find::<PersonV1>("initial", "b").unwrap(), vec![ada]);
    engine.shutdown();
    drop((alice, engine));
    let engine = open_in(&dir);
    let again = engine.ensure_indexes(&[Indexed::of::<PersonV1>()]).unwrap();
    assert!(again.kinds.is_empty() && again.snapshot.is_none());
    assert_eq!(engine.user(ALICE).find::<PersonV1>("initial", "a").unwrap(), vec![alan]);
}

#[test]
fn an_unchanged_index_version_does_nothing() {
    let (dir, _) = seeded();
    let engine = open_in(&dir);
    let report = engine.ensure_indexes(&[Indexed::of::<Person>()]).unwrap();
    assert!(report.kinds.is_empty() && report.snapshot.is_none());
    assert!(!dir.path().join("pre-migration").exists());
}

#[test]
fn a_fresh_database_records_the_version_without_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_in(&dir);
    let report = engine.ensure_indexes(&[Indexed::of::<PersonV1>()]).unwrap();
    assert_eq!(report.kinds.iter().map(|k| (k.from, k.to, k.rows)).collect::<Vec<_>>(), vec![(0, 1, 0)]);
    assert!(report.snapshot.is_none(), "no rows, nothing to protect");
    assert!(engine.ensure_indexes(&[Indexed::of::<PersonV1>()]).unwrap().kinds.is_empty());
}

#[test]
fn a_failed_backfill_keeps_the_old_entries_and_version() {
    let (dir, ids) = seeded();
    let engine = open_in(&dir);
    engine.ensure_indexes(&[Indexed::of::<PersonV1>()]).unwrap();
    // Ada and Alan share the initial the new unique index refuses twice.
    let result = engine.ensure_indexes(&[Indexed::of::<PersonV2>()]);
    assert!(matches!(result, Err(Error::ReindexFailed { kind: "person", version: 2, .. })), "{:?}", result.err());
    assert_eq!(engine.user(ALICE).find::<PersonV1>("initial", "a").unwrap(), vec![ids[0], ids[1]]);
    assert!(engine.ensure_indexes(&[Indexed::of::<PersonV1>()]).unwrap().kinds.is_empty(), "still at version 1");
}

#[test]
fn an_unwritable_snapshot_folder_refuses_the_backfill() {
    let (dir, _) = seeded();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let options = Options { pre_migration_dir: Some(blocker.join("snapshots")), ..Options::default() };
    let (engine, _) = Engine::open(dir.path().join("db.redb"), options).unwrap();
    let result = engine.ensure_indexes(&[Indexed::of::<PersonV1>()]);
    assert!(matches!(result, Err(Error::PreMigrationBackupFailed { .. })), "{:?}", result.err());
    assert!(engine.user(ALICE).find::<PersonV1>("initial", "a").unwrap().is_empty(), "nothing changed");
}
