//! The redo log: a write acknowledged before the process is killed (SIGKILL, no shutdown, no
//! checkpoint) is in the database when it opens again, with its indexes, change feed and audit
//! chain. The killed process is this test binary run again as a child.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use mycorrhizal_engine::{Checkpoints, redo_holds_writes, redo_path, snapshot};
use mycorrhizal_engine::{Engine, Indexed, Options, Precondition, UserId};

use crate::helpers::Person;

const ALICE: UserId = UserId(1);
const BOB: UserId = UserId(2);
const CHILD: &str = "MYC_REDO_CHILD_DIR";
const TEST: &str = "redo::acknowledged_writes_survive_a_kill_between_checkpoints";

/// Checkpoints that never come while the child runs: every acknowledged write is in the log only.
fn kept_log() -> Options {
    let never = Duration::from_secs(3600);
    Options { checkpoints: Checkpoints { idle: never, every: never, bytes: u64::MAX }, ..Options::default() }
}

/// The child: creates, updates and deletes rows of two users, printing each acknowledged one,
/// until it is killed.
fn child(dir: &str) {
    let (engine, _) = Engine::open(std::path::Path::new(dir).join("db.redb"), kept_log()).expect("open");
    let mut out = std::io::stdout().lock();
    for n in 0u64.. {
        let user = if n % 3 == 0 { BOB } else { ALICE };
        let scope = engine.user(user);
        let row = scope.create(Person::new(&format!("Person {n}"), &format!("p{n}@example.org"))).expect("create");
        // Every fifth is renamed, every seventh deleted: the log must carry updates and removals.
        if n % 5 == 0 {
            scope
                .put(
                    row.id,
                    Precondition::Revision(1),
                    Person::new(&format!("Renamed {n}"), &format!("r{n}@example.org")),
                )
                .expect("put");
            writeln!(out, "renamed {} {} {n}", user.0, row.id).expect("stdout");
        } else if n % 7 == 0 {
            scope.delete::<Person>(row.id, Precondition::Any).expect("delete");
            writeln!(out, "deleted {} {} {n}", user.0, row.id).expect("stdout");
        } else {
            writeln!(out, "created {} {} {n}", user.0, row.id).expect("stdout");
        }
        out.flush().expect("stdout");
    }
}

#[test]
fn acknowledged_writes_survive_a_kill_between_checkpoints() {
    if let Ok(dir) = std::env::var(CHILD) {
        child(&dir);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut process = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let lines = BufReader::new(process.stdout.take().expect("stdout"));
    let mut acknowledged = Vec::new();
    for line in lines.lines() {
        let line = line.expect("line");
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [what, user, id, n] = fields[..] {
            acknowledged.push((
                what.to_string(),
                user.parse::<u64>().unwrap(),
                id.parse::<u64>().unwrap(),
                n.parse::<u64>().unwrap(),
            ));
        }
        if acknowledged.len() >= 300 {
            break;
        }
    }
    process.kill().expect("kill");
    process.wait().expect("wait");
    assert_eq!(acknowledged.len(), 300, "the child wrote before it was killed");
    let log = std::fs::metadata(redo_path(&dir.path().join("db.redb"))).expect("the redo log").len();
    assert!(log > 16, "the acknowledged writes were in the log only ({log} bytes)");

    // A backup taken with the server stopped holds them too (the log is replayed first): taken
    // from a copy of the killed files, so the replay at open below is checked as well.
    let copy = tempfile::tempdir().expect("tempdir");
    std::fs::copy(dir.path().join("db.redb"), copy.path().join("db.redb")).unwrap();
    std::fs::copy(redo_path(&dir.path().join("db.redb")), redo_path(&copy.path().join("db.redb"))).unwrap();
    let snapshot = snapshot::write_from_file(
        &copy.path().join("db.redb"),
        copy.path(),
        "offline",
        jiff::Timestamp::now(),
        snapshot::Encoding::Rows,
        &mut |_| {},
    )
    .expect("offline snapshot");
    let (engine, _) = Engine::open(dir.path().join("db.redb"), Options::default()).expect("reopen");
    let recovered = engine.recovered().clone();
    assert!(recovered.batches >= 300, "every acknowledged write was replayed: {recovered:?}");
    for user in [ALICE, BOB] {
        let live = engine.user(user).list::<Person>().unwrap().len() as u64;
        let backed_up = snapshot.manifest.users.as_ref().and_then(|u| u.get(&user.0)?.get("person").copied());
        assert_eq!(backed_up, Some(live), "the offline backup holds what the replay brought back for {user:?}");
    }
    for (what, user, id, n) in &acknowledged {
        let scope = engine.user(UserId(*user));
        match what.as_str() {
            "created" => {
                let row = scope.get::<Person>(*id).unwrap_or_else(|e| panic!("row {id} of write {n}: {e}"));
                assert_eq!(row.body.name, format!("Person {n}"));
                assert_eq!(scope.find::<Person>("email", &format!("p{n}@example.org")).unwrap(), vec![*id]);
            }
            "renamed" => {
                let row = scope.get::<Person>(*id).unwrap();
                assert_eq!((row.body.name.as_str(), row.meta.revision), (format!("Renamed {n}").as_str(), 2));
                assert!(scope.find::<Person>("email", &format!("p{n}@example.org")).unwrap().is_empty());
                assert_eq!(scope.find::<Person>("email", &format!("r{n}@example.org")).unwrap(), vec![*id]);
            }
            "deleted" => {
                let tomb = scope.view().unwrap().get_any::<Person>(*id).unwrap().expect("tombstone");
                assert!(tomb.meta.deleted_at.is_some(), "row {id} deleted");
            }
            other => panic!("unexpected line {other}"),
        }
    }
    // Indexes, feed heads and audit chains agree with the rows, as after any clean run.
    let report = engine.check(&[Indexed::of::<Person>()]).unwrap();
    let person = &report.kinds[0];
    assert_eq!((person.missing_entries, person.dangling_entries), (0, 0), "{person:?}");
    assert_eq!(report.feed.users_past_head, 0);
    for user in [ALICE, BOB] {
        engine.user(user).view().unwrap().verify_audit().unwrap_or_else(|e| panic!("audit chain of {user:?}: {e}"));
    }
    // The engine goes on writing after the replay, and a clean close leaves the log empty.
    let next = engine.user(ALICE).create(Person::new("After", "after@example.org")).unwrap();
    engine.shutdown();
    drop(engine);
    let (engine, _) = Engine::open(dir.path().join("db.redb"), Options::default()).expect("reopen");
    assert_eq!(engine.recovered().batches, 0, "a clean close checkpoints");
    assert_eq!(engine.user(ALICE).get::<Person>(next.id).unwrap().body.name, "After");
}

#[test]
fn a_log_of_another_database_refuses_the_open_or_is_set_aside_when_asked_never_replayed() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (engine, _) = Engine::open(a.path().join("db.redb"), kept_log()).unwrap();
    engine.user(ALICE).create(Person::new("Only in A", "a@example.org")).unwrap();
    // A's log, with a write A's database file does not hold durably, next to B's database.
    std::fs::copy(redo_path(&a.path().join("db.redb")), b.path().join("log")).unwrap();
    drop(engine);
    let (engine, _) = Engine::open(b.path().join("db.redb"), Options::default()).unwrap();
    drop(engine);
    std::fs::rename(b.path().join("log"), redo_path(&b.path().join("db.redb"))).unwrap();
    let refused = Engine::open(b.path().join("db.redb"), Options::default()).map(|_| ());
    assert!(matches!(refused, Err(mycorrhizal_engine::Error::RedoUnreplayable { .. })), "{refused:?}");
    let set_aside = Options { unreplayable: mycorrhizal_engine::Unreplayable::SetAside, ..Options::default() };
    let (engine, _) = Engine::open(b.path().join("db.redb"), set_aside).unwrap();
    assert_eq!(engine.recovered().batches, 0);
    assert!(engine.recovered().set_aside.is_some());
    assert!(engine.user(ALICE).list::<Person>().unwrap().is_empty(), "nothing of A's reached B");
    let aside: Vec<_> = std::fs::read_dir(b.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.contains("orphan"))
        .collect();
    assert_eq!(aside.len(), 1, "the foreign log was kept aside: {aside:?}");
}

#[test]
fn a_pause_in_the_writes_brings_a_checkpoint_and_empties_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path().join("db.redb"), Options::default()).unwrap();
    let row = engine.user(ALICE).create(Person::new("Ada", "ada@example.org")).unwrap();
    // The idle checkpoint comes 100 ms after the last batch; allow a slow machine 30 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while redo_holds_writes(&dir.path().join("db.redb")) {
        assert!(std::time::Instant::now() < deadline, "no checkpoint after the writes paused");
        std::thread::sleep(Duration::from_millis(20));
    }
    // What the checkpoint wrote is in the file itself: a copy of the file alone holds the row.
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(dir.path().join("db.redb"), copy.path().join("db.redb")).unwrap();
    let (opened, _) = Engine::open(copy.path().join("db.redb"), Options::default()).unwrap();
    assert_eq!(opened.recovered().batches, 0);
    assert_eq!(opened.user(ALICE).get::<Person>(row.id).unwrap().body.name, "Ada");
}

#[test]
fn a_log_past_its_share_of_the_page_cache_is_checkpointed_while_the_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    // No idle or timed checkpoint: only the size of the log brings one.
    let options = Options { cache_bytes: 1 << 20, ..kept_log() };
    let (engine, _) = Engine::open(dir.path().join("db.redb"), options).unwrap();
    let about = "x".repeat(8 << 10);
    for n in 0..300 {
        engine.user(ALICE).create(Person::new(&format!("{n} {about}"), &format!("p{n}@example.org"))).unwrap();
    }
    // 300 rows of 8 KiB logged 2.4 MB: checkpointed at a sixteenth of the 1 MiB cache each
    // time, the log's file never held more than that and the zeros written ahead of it.
    let log = std::fs::metadata(redo_path(&dir.path().join("db.redb"))).unwrap().len();
    assert!(log <= 256 << 10, "the log grew to {log} bytes");
    assert_eq!(engine.user(ALICE).list::<Person>().unwrap().len(), 300);
}
