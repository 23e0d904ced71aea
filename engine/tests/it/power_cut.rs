//! Power cuts (#55 part 6): the engine's files cut as a power failure leaves them, every byte
//! written before each file's last sync and nothing after (`PowerCut`, LazyFS's "clear cache"
//! fault simulated in process). However the cut falls among group commits, checkpoints and the
//! redo log's truncation, the engine opens again with every write it acknowledged, its indexes
//! and audit chains whole; and a write reported as failed never comes back, even when the failed
//! sync had reached the disk.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mycorrhizal_engine::{Checkpoints, Engine, Indexed, Options, PowerCut, Precondition, UserId};

use crate::helpers::Person;

/// What a writer was told, in the order it was told.
#[derive(Debug, Clone)]
enum Ack {
    Created { user: u64, id: u64, n: u64 },
    Renamed { user: u64, id: u64, n: u64 },
    Deleted { user: u64, id: u64 },
}

/// Checkpoints often, so that cuts fall before, inside and after them and the log's truncation.
fn watched(cut: &Arc<PowerCut>) -> Options {
    Options {
        power_cut: Some(cut.clone()),
        checkpoints: Checkpoints { idle: Duration::from_millis(3), every: Duration::from_millis(25), bytes: 64 * 1024 },
        ..Options::default()
    }
}

/// Opens the files a cut left in `folder` and checks every write acknowledged before it; a row
/// whose later rename or delete was only asked for (not yet acknowledged) may show it.
fn check_after(folder: &Path, acked: &[Ack], asked_delete: &HashSet<u64>) -> u64 {
    let (engine, _) = Engine::open(folder.join("db.redb"), Options::default())
        .unwrap_or_else(|e| panic!("{} opens after the cut: {e}", folder.display()));
    let deleted: HashSet<u64> =
        acked.iter().filter_map(|a| if let Ack::Deleted { id, .. } = a { Some(*id) } else { None }).collect();
    let renamed: HashSet<u64> =
        acked.iter().filter_map(|a| if let Ack::Renamed { id, .. } = a { Some(*id) } else { None }).collect();
    for ack in acked {
        match *ack {
            Ack::Created { user, id, n } => {
                let view = engine.user(UserId(user)).view().expect("view");
                let row =
                    view.get_any::<Person>(id).expect("read").unwrap_or_else(|| panic!("row {id} (write {n}) lost"));
                if deleted.contains(&id) {
                    continue;
                }
                if row.meta.deleted_at.is_some() {
                    assert!(asked_delete.contains(&id), "row {id} deleted, never asked");
                    continue;
                }
                if !renamed.contains(&id) && row.meta.revision == 1 {
                    assert_eq!(row.body.name, format!("Person {n}"));
                }
            }
            Ack::Renamed { user, id, n } => {
                let row = engine.user(UserId(user)).view().expect("view").get_any::<Person>(id).expect("read");
                let row = row.unwrap_or_else(|| panic!("renamed row {id} lost"));
                assert!(row.meta.revision >= 2, "the rename of {id} (write {n}) lost");
                if row.meta.deleted_at.is_none() {
                    assert_eq!(row.body.name, format!("Renamed {n}"));
                }
            }
            Ack::Deleted { user, id } => {
                let row = engine.user(UserId(user)).view().expect("view").get_any::<Person>(id).expect("read");
                assert!(row.and_then(|r| r.meta.deleted_at).is_some(), "the delete of {id} lost");
            }
        }
    }
    let report = engine.check(&[Indexed::of::<Person>()]).expect("check");
    let person = &report.kinds[0];
    assert_eq!((person.missing_entries, person.dangling_entries), (0, 0), "{person:?}");
    assert_eq!(report.feed.users_past_head, 0);
    for user in [1, 2, 3, 4] {
        engine.user(UserId(user)).view().expect("view").verify_audit().expect("audit chain");
    }
    let replayed = engine.recovered().batches;
    engine.shutdown();
    replayed
}

/// Four writers (a CardDAV client's PUT stream each: creates, renames, deletes) while the power
/// is cut forty times; each cut's files open with everything acknowledged before it.
#[test]
fn every_acknowledged_write_survives_a_power_cut_wherever_it_falls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cut = PowerCut::new();
    let (engine, _) = Engine::open(dir.path().join("db.redb"), watched(&cut)).expect("open");
    let acked: Arc<Mutex<Vec<Ack>>> = Arc::default();
    let asked_delete: Arc<Mutex<HashSet<u64>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Set for some cuts: the writers pause, the writer falls idle and checkpoints, and the cut
    // finds the log empty (however busy the machine, which decides where the other cuts fall).
    let paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (1..=4u64)
        .map(|user| {
            let (engine, acked, asked_delete, stop, paused) =
                (engine.clone(), acked.clone(), asked_delete.clone(), stop.clone(), paused.clone());
            std::thread::spawn(move || {
                let scope = engine.user(UserId(user));
                for n in (user * 1_000_000).. {
                    while paused.load(std::sync::atomic::Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        break;
                    }
                    let row = scope
                        .create(Person::new(&format!("Person {n}"), &format!("p{n}@example.org")))
                        .expect("create");
                    acked.lock().unwrap().push(Ack::Created { user, id: row.id, n });
                    if n % 5 == 0 {
                        let renamed = Person::new(&format!("Renamed {n}"), &format!("r{n}@example.org"));
                        scope.put(row.id, Precondition::Revision(1), renamed).expect("rename");
                        acked.lock().unwrap().push(Ack::Renamed { user, id: row.id, n });
                    } else if n % 7 == 0 {
                        asked_delete.lock().unwrap().insert(row.id);
                        scope.delete::<Person>(row.id, Precondition::Any).expect("delete");
                        acked.lock().unwrap().push(Ack::Deleted { user, id: row.id });
                    }
                }
            })
        })
        .collect();
    let mut cuts = Vec::new();
    let started = Instant::now();
    for k in 0..40 {
        std::thread::sleep(Duration::from_millis(if k % 4 == 0 { 9 } else { 2 }));
        // What was acknowledged before the cut: all of it must be there after.
        let quiet = k % 8 == 7;
        if quiet {
            paused.store(true, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(150));
        }
        let before = acked.lock().unwrap().clone();
        let folder = dir.path().join(format!("cut-{k}"));
        cut.cut(&folder).expect("cut");
        paused.store(false, std::sync::atomic::Ordering::SeqCst);
        cuts.push((folder, before));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for w in writers {
        w.join().expect("writer");
    }
    engine.shutdown();
    let asked_delete = asked_delete.lock().unwrap().clone();
    let mut replayed = 0;
    for (folder, before) in &cuts {
        if check_after(folder, before, &asked_delete) > 0 {
            replayed += 1;
        }
    }
    let writes = acked.lock().unwrap().len();
    assert!(writes > 200, "{writes} writes in {:?}", started.elapsed());
    assert!(replayed > 0, "some cuts fell between checkpoints, so their writes came back from the log");
    assert!(replayed < cuts.len(), "some cuts fell right after a checkpoint, the log empty");
}

/// A write whose redo record reached the disk though every sync of it reported failure (the
/// worst failed fsync) is reported failed, and no power cut afterwards brings it back.
#[test]
fn a_write_reported_failed_never_comes_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cut = PowerCut::new();
    let never = Duration::from_secs(3600);
    let options = Options { checkpoints: Checkpoints { idle: never, every: never, bytes: u64::MAX }, ..watched(&cut) };
    let (engine, _) = Engine::open(dir.path().join("db.redb"), options).expect("open");
    let scope = engine.user(UserId(1));
    let kept = scope.create(Person::new("Kept", "kept@example.org")).expect("create");
    // The record's sync, the blanking's sync, the truncation's sync: all fail after writing.
    cut.fail_next_syncs(1);
    let failed = scope.create(Person::new("Failed", "failed@example.org"));
    assert!(failed.is_err(), "the write whose sync failed is reported failed: {failed:?}");
    cut.cut(&dir.path().join("after")).expect("cut");
    cut.fail_next_syncs(3);
    let failed_twice = scope.create(Person::new("Failed twice", "twice@example.org"));
    assert!(failed_twice.is_err());
    cut.cut(&dir.path().join("after-all-failed")).expect("cut");
    drop(engine);
    for folder in ["after", "after-all-failed"] {
        let (engine, _) = Engine::open(dir.path().join(folder).join("db.redb"), Options::default()).expect("open");
        let scope = engine.user(UserId(1));
        assert_eq!(scope.get::<Person>(kept.id).expect("kept").body.name, "Kept", "{folder}");
        let names: Vec<String> = scope.list::<Person>().expect("list").into_iter().map(|r| r.body.name).collect();
        assert_eq!(names, ["Kept"], "{folder}: only the acknowledged write is there");
    }
}
