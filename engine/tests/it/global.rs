use mycorrhizal_engine::{Error, GlobalRecord, UserId, global_tables};
use serde::{Deserialize, Serialize};

use crate::helpers::{Person, fresh};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Member {
    name: String,
    email: String,
}

impl GlobalRecord for Member {
    global_tables!("test_members");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        vec![("name", self.name.clone()), ("email", self.email.clone())]
    }
}

fn member(name: &str, email: &str) -> Member {
    Member { name: name.into(), email: email.into() }
}

#[test]
fn global_records_keep_their_unique_keys_through_updates_and_deletes() {
    let db = fresh();
    let id = db.engine.write(|tx| tx.global().insert(&member("ada", "ada@example.org"))).unwrap();
    let dup = db.engine.write(|tx| tx.global().insert(&member("ada", "other@example.org")));
    assert!(matches!(dup, Err(Error::Duplicate { index: "name" })));
    db.engine.write(move |tx| tx.global().put(id, &member("ada", "new@example.org"))).unwrap();
    let view = db.engine.global().unwrap();
    assert_eq!(view.lookup::<Member>("email", "new@example.org").unwrap(), Some(id));
    assert_eq!(view.lookup::<Member>("email", "ada@example.org").unwrap(), None, "the old key is released");
    drop(view);
    db.engine.write(|tx| tx.global().insert(&member("bob", "ada@example.org"))).unwrap();
    db.engine.write(move |tx| tx.global().delete::<Member>(id)).unwrap();
    assert!(db.engine.global().unwrap().find::<Member>("name", "ada").unwrap().is_none());
    db.engine.write(|tx| tx.global().insert(&member("ada", "again@example.org"))).unwrap();
}

#[test]
fn purging_a_user_removes_only_that_users_rows_indexes_and_feed() {
    let db = fresh();
    for user in [1, 2] {
        let scope = db.engine.user(UserId(user));
        scope.create(Person::new("Ada", "ada@example.org")).unwrap();
        scope.create(Person::new("Bob", "bob@example.org")).unwrap();
    }
    let removed = db.engine.write(|tx| tx.purge_user(UserId(1))).unwrap();
    assert_eq!(removed, 2);
    let gone = db.engine.user(UserId(1)).view().unwrap();
    assert!(gone.scan::<Person>().unwrap().is_empty());
    assert!(gone.index_entries::<Person>().unwrap().is_empty());
    assert!(gone.changes_since(0, 10).unwrap().is_empty());
    let kept = db.engine.user(UserId(2)).view().unwrap();
    assert_eq!(kept.list::<Person>().unwrap().len(), 2);
    assert_eq!(kept.index_entries::<Person>().unwrap().len(), 6, "sort_name, email and _updated of two rows");
    assert_eq!(kept.changes_since(0, 10).unwrap().len(), 2);
}

/// Blobs (contact pictures) belong to one user: another user's view of the same name is empty,
/// they go with a purge of their user only, and a snapshot carries them.
#[test]
fn blobs_are_per_user_go_with_their_user_and_are_in_snapshots() {
    let db = fresh();
    let picture: Vec<u8> = vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3];
    for user in [1, 2] {
        let bytes = picture.iter().map(|b| b.wrapping_add(user as u8)).collect::<Vec<_>>();
        db.engine.user(UserId(user)).write(move |tx| tx.put_blob("a.jpg", &bytes)).unwrap();
    }
    let one = db.engine.user(UserId(1)).view().unwrap();
    assert_eq!(one.blob("a.jpg").unwrap(), Some(picture.iter().map(|b| b.wrapping_add(1)).collect()));
    assert_eq!(one.blob("b.jpg").unwrap(), None);
    assert_eq!(one.blob_names().unwrap(), vec!["a.jpg".to_string()]);
    drop(one);
    assert_eq!(db.engine.user(UserId(3)).view().unwrap().blob("a.jpg").unwrap(), None, "a user without blobs");
    let snapshot = db.engine.snapshot(&db.dir.path().join("snapshots"), "test").unwrap();
    assert_eq!(snapshot.manifest.tables.get("blobs"), Some(&2));
    let copy = mycorrhizal_engine::Engine::open(&snapshot.path, mycorrhizal_engine::Options::default()).unwrap().0;
    assert_eq!(copy.user(UserId(2)).view().unwrap().blob("a.jpg").unwrap().map(|b| b.len()), Some(picture.len()));
    drop(copy);

    db.engine.write(|tx| tx.purge_user(UserId(1))).unwrap();
    assert_eq!(db.engine.user(UserId(1)).view().unwrap().blob("a.jpg").unwrap(), None);
    assert!(db.engine.user(UserId(1)).view().unwrap().blob_names().unwrap().is_empty());
    assert!(db.engine.user(UserId(2)).view().unwrap().blob("a.jpg").unwrap().is_some(), "the other user keeps theirs");
    let deleted = db.engine.user(UserId(2)).write(|tx| tx.delete_blob("a.jpg")).unwrap();
    assert!(deleted);
    assert!(!db.engine.user(UserId(2)).write(|tx| tx.delete_blob("a.jpg")).unwrap(), "already gone");
}

#[test]
fn a_global_scan_visits_rows_in_id_order_and_stops_when_told() {
    let db = fresh();
    let empty = db.engine.global().unwrap();
    let mut seen = 0;
    empty
        .scan::<Member>(|_, _| {
            seen += 1;
            true
        })
        .unwrap();
    assert_eq!(seen, 0, "a table never written is empty, not an error");
    drop(empty);
    let mut ids = Vec::new();
    for n in ["c", "a", "d", "b"] {
        let m = member(n, &format!("{n}@example.org"));
        ids.push(db.engine.write(move |tx| tx.global().insert(&m)).unwrap());
    }
    let view = db.engine.global().unwrap();
    let mut all = Vec::new();
    view.scan::<Member>(|id, m| {
        all.push((id, m.name));
        true
    })
    .unwrap();
    let names: Vec<&str> = all.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["c", "a", "d", "b"], "insertion ids ascend, so id order is insertion order");
    assert_eq!(all.iter().map(|(id, _)| *id).collect::<Vec<_>>(), ids);
    let mut first_two = Vec::new();
    view.scan::<Member>(|id, _| {
        first_two.push(id);
        first_two.len() < 2
    })
    .unwrap();
    assert_eq!(first_two, ids[..2], "the scan stops at the first false");
}
