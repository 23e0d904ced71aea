use std::sync::Arc;

use mycorrhizal_engine::{Error, Op, Precondition, UserId};

use crate::helpers::{Person, fresh, open_in};

const ALICE: UserId = UserId(1);
const BOB: UserId = UserId(2);

#[test]
fn create_update_delete_bump_revision_and_feed_the_change_log() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let row = alice.create(Person::new("Ada Lovelace", "ada@example.org")).unwrap();
    assert_eq!(row.meta.revision, 1);
    assert_eq!(row.body.sort_name, "ada lovelace", "save hook ran");
    assert_eq!(row.etag(), format!("\"e-{}-1\"", row.id));

    let updated = alice.put(row.id, Precondition::Revision(1), Person::new("Ada King", "ada@example.org")).unwrap();
    assert_eq!(updated.meta.revision, 2);
    assert_eq!(updated.meta.created_at, row.meta.created_at);

    let stale = alice.put(row.id, Precondition::Revision(1), Person::new("X", ""));
    assert!(matches!(stale, Err(Error::Conflict { expected: 1, actual: 2 })));

    alice.delete::<Person>(row.id, Precondition::Any).unwrap();
    assert!(matches!(alice.get::<Person>(row.id), Err(Error::NotFound)));
    let tomb = alice.view().unwrap().get_any::<Person>(row.id).unwrap().expect("tombstone kept");
    assert!(tomb.meta.deleted_at.is_some());
    assert_eq!(tomb.meta.revision, 3);

    let feed = alice.view().unwrap().changes_since(0, 100).unwrap();
    let ops: Vec<_> = feed.iter().map(|c| (c.seq, c.op, c.revision)).collect();
    assert_eq!(ops, vec![(1, Op::Created, 1), (2, Op::Updated, 2), (3, Op::Deleted, 3)]);
    assert!(alice.find::<Person>("email", "ada@example.org").unwrap().is_empty(), "tombstones leave indexes");
}

#[test]
fn another_users_ids_are_invisible_and_unwritable() {
    let db = fresh();
    let row = db.engine.user(ALICE).create(Person::new("Ada", "ada@example.org")).unwrap();
    let bob = db.engine.user(BOB);
    assert!(matches!(bob.get::<Person>(row.id), Err(Error::NotFound)));
    assert!(bob.list::<Person>().unwrap().is_empty());
    assert!(bob.find::<Person>("email", "ada@example.org").unwrap().is_empty());
    assert!(matches!(bob.put(row.id, Precondition::Any, Person::new("Eve", "")), Err(Error::NotFound)));
    assert!(matches!(bob.delete::<Person>(row.id, Precondition::Any), Err(Error::NotFound)));
    assert!(bob.view().unwrap().changes_since(0, 10).unwrap().is_empty());
    assert_eq!(db.engine.user(ALICE).get::<Person>(row.id).unwrap().body.name, "Ada");
}

#[test]
fn invalid_records_name_the_field_and_write_nothing() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    match alice.create(Person::new("  ", "")) {
        Err(Error::Invalid(invalid)) => assert_eq!(invalid.field, "name"),
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert!(alice.view().unwrap().changes_since(0, 10).unwrap().is_empty());
}

#[test]
fn unique_index_refuses_a_second_live_row_but_not_after_delete() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let first = alice.create(Person::new("A", "same@example.org")).unwrap();
    assert!(matches!(alice.create(Person::new("B", "SAME@example.org")), Err(Error::Duplicate { index: "email" })));
    // Another user may use the same value.
    db.engine.user(BOB).create(Person::new("B", "same@example.org")).unwrap();
    alice.delete::<Person>(first.id, Precondition::Any).unwrap();
    alice.create(Person::new("C", "same@example.org")).unwrap();
}

#[test]
fn a_failing_change_does_not_poison_its_batch_neighbours() {
    let db = fresh();
    let engine = db.engine.clone();
    let mut handles = Vec::new();
    for i in 0..64u64 {
        let user = engine.user(ALICE);
        handles.push(std::thread::spawn(move || {
            // Every fourth change is invalid; the others must all commit.
            let name = if i % 4 == 0 { String::new() } else { format!("p{i}") };
            user.create(Person::new(&name, "")).map(|row| row.id)
        }));
    }
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 48);
    assert_eq!(engine.user(ALICE).list::<Person>().unwrap().len(), 48);
    assert_eq!(engine.user(ALICE).view().unwrap().changes_since(0, 1000).unwrap().len(), 48);
}

#[test]
fn concurrent_writers_all_commit_and_survive_reopen() {
    let db = fresh();
    let engine = Arc::new(db.engine.clone());
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                for i in 0..20 {
                    engine.user(UserId(t % 2 + 1)).create(Person::new(&format!("n{t}-{i}"), "")).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    engine.shutdown();
    drop(engine);
    let crate::helpers::TestDb { dir, engine } = db;
    drop(engine);
    let reopened = open_in(&dir);
    assert_eq!(reopened.user(ALICE).list::<Person>().unwrap().len(), 160);
    assert_eq!(reopened.user(BOB).list::<Person>().unwrap().len(), 160);
}

#[test]
fn index_pages_walk_in_order_both_ways() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    for name in ["delta", "alpha", "echo", "charlie", "bravo"] {
        alice.create(Person::new(name, "")).unwrap();
    }
    let view = alice.view().unwrap();
    let first = view.page::<Person>("sort_name", None, 2, false).unwrap();
    let names: Vec<_> = first.rows.iter().map(|r| r.body.name.as_str()).collect();
    assert_eq!(names, ["alpha", "bravo"]);
    let (v, id) = first.next.clone().expect("more");
    let second = view.page::<Person>("sort_name", Some((&v, id)), 10, false).unwrap();
    let names: Vec<_> = second.rows.iter().map(|r| r.body.name.as_str()).collect();
    assert_eq!(names, ["charlie", "delta", "echo"]);
    assert!(second.next.is_none());
    let desc = view.page::<Person>("sort_name", None, 3, true).unwrap();
    let names: Vec<_> = desc.rows.iter().map(|r| r.body.name.as_str()).collect();
    assert_eq!(names, ["echo", "delta", "charlie"]);
    let (v, id) = desc.next.clone().expect("more");
    let rest = view.page::<Person>("sort_name", Some((&v, id)), 3, true).unwrap();
    let names: Vec<_> = rest.rows.iter().map(|r| r.body.name.as_str()).collect();
    assert_eq!(names, ["bravo", "alpha"]);
}

#[test]
fn tombstones_are_purged_after_the_cutoff_only() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let a = alice.create(Person::new("a", "")).unwrap();
    let b = alice.create(Person::new("b", "")).unwrap();
    alice.delete::<Person>(a.id, Precondition::Any).unwrap();
    let deleted_at = alice.view().unwrap().get_any::<Person>(a.id).unwrap().unwrap().meta.deleted_at.unwrap();
    let before = deleted_at.checked_sub(jiff::SignedDuration::from_secs(1)).unwrap();
    assert_eq!(alice.write(move |tx| tx.purge_tombstones::<Person>(before)).unwrap(), 0);
    let after = deleted_at.checked_add(jiff::SignedDuration::from_secs(1)).unwrap();
    assert_eq!(alice.write(move |tx| tx.purge_tombstones::<Person>(after)).unwrap(), 1);
    assert!(alice.view().unwrap().get_any::<Person>(a.id).unwrap().is_none());
    assert!(alice.get::<Person>(b.id).is_ok());
}

#[test]
fn walks_stay_inside_a_value_range_and_skip_rows_the_filter_refuses() {
    use mycorrhizal_engine::Walk;
    let db = fresh();
    let alice = db.engine.user(ALICE);
    for name in ["anna", "bert", "bella", "bruno", "carl"] {
        alice.create(Person::new(name, "")).unwrap();
    }
    let view = alice.view().unwrap();
    let b_names = Walk { index: "sort_name", from: "b", to: Some("c"), after: None, descending: false };
    let page = view.walk::<Person>(b_names, 10, |_| true).unwrap();
    let names: Vec<_> = page.rows.iter().map(|r| r.body.name.as_str()).collect();
    assert_eq!(names, ["bella", "bert", "bruno"]);
    let page = view.walk::<Person>(b_names, 1, |r| r.body.name != "bella").unwrap();
    assert_eq!(page.rows[0].body.name, "bert");
    assert!(page.next.is_some(), "bruno remains");
    let recent = view.page::<Person>(mycorrhizal_engine::UPDATED_INDEX, None, 2, true).unwrap();
    let names: Vec<_> = recent.rows.iter().map(|r| r.body.name.as_str()).collect();
    assert_eq!(names, ["carl", "bruno"], "newest first");
}

#[test]
fn every_change_lands_in_a_verifiable_audit_chain_with_field_diffs() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let row = alice.create(Person::new("Ada", "ada@example.org")).unwrap();
    alice.put(row.id, Precondition::Any, Person::new("Ada King", "ada@example.org")).unwrap();
    alice.delete::<Person>(row.id, Precondition::Any).unwrap();
    db.engine.user(BOB).create(Person::new("Bob", "")).unwrap();
    let view = alice.view().unwrap();
    let events = view.audit_events(0, 10).unwrap();
    let actions: Vec<Op> = events.iter().map(|e| e.action).collect();
    assert_eq!(actions, [Op::Created, Op::Updated, Op::Deleted]);
    let update = &events[1];
    let fields: Vec<&str> = update.changes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["name", "sort_name"]);
    assert_eq!((update.changes[0].before.as_str(), update.changes[0].after.as_str()), ("\"Ada\"", "\"Ada King\""));
    assert_eq!(events[1].prev_hash, events[0].hash);
    assert_eq!(view.verify_audit().unwrap(), 3);
    assert_eq!(db.engine.user(BOB).view().unwrap().audit_events(0, 10).unwrap().len(), 1, "chains are per user");
    drop(view);

    // Retention keeps the chain verifiable through its anchor.
    let cutoff = events[2].at;
    let purged = alice.write(move |tx| tx.purge_audit(cutoff)).unwrap();
    assert_eq!(purged, 2);
    assert_eq!(alice.view().unwrap().verify_audit().unwrap(), 1);
}

#[test]
fn a_body_prepared_outside_the_writer_stores_as_a_plain_create_does() {
    use mycorrhizal_engine::Prepared;
    let db = fresh();
    let alice = db.engine.user(ALICE);
    assert_eq!(Prepared::new(Person::new("", "x@example.org")).unwrap_err().field, "name", "validated when prepared");
    let prepared = Prepared::new(Person::new("Ada Lovelace", "ada@example.org")).unwrap();
    assert_eq!(prepared.body().sort_name, "ada lovelace", "save hook ran when prepared");
    let made = alice.write(move |tx| tx.create_prepared(prepared.clone())).unwrap();
    let plain = alice.create(Person::new("Ada Lovelace", "lovelace@example.org")).unwrap();
    assert_eq!((made.meta.revision, &made.body.sort_name), (1, &plain.body.sort_name));
    let view = alice.view().unwrap();
    assert_eq!(view.find::<Person>("sort_name", "ada lovelace").unwrap(), vec![made.id, plain.id], "indexed");
    let events = view.audit_events(0, 10).unwrap();
    assert_eq!(events.len(), 2);
    let fields = |i: usize| events[i].changes.iter().map(|c| c.field.clone()).collect::<Vec<_>>();
    assert_eq!(fields(0), ["email", "name", "sort_name"]);
    assert_eq!(fields(0), fields(1), "the same audit fields");
    assert_eq!(events[0].changes[1], events[1].changes[1]);
    assert_eq!(events[0].changes[0].after, "\"ada@example.org\"");
    assert_eq!(events[0].record_id, made.id);
    assert_eq!(view.verify_audit().unwrap(), 2);
}

/// `create_from` stores a body its caller keeps (a batch the writer may run twice): the body
/// stays the caller's, and the row, its index entries and its audit event are an owned create's.
#[test]
fn a_prepared_body_created_from_a_borrow_stores_as_an_owned_one() {
    use mycorrhizal_engine::Prepared;
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let kept = Prepared::new(Person::new("Grace Hopper", "grace@example.org")).unwrap();
    let owned = Prepared::new(Person::new("Grace Hopper", "hopper@example.org")).unwrap();
    let (borrowed_id, still_held) = alice
        .write(move |tx| {
            let id = tx.create_from(&kept)?;
            Ok((id, kept.body().clone()))
        })
        .unwrap();
    let made = alice.write(move |tx| tx.create_prepared(owned.clone())).unwrap();
    let view = alice.view().unwrap();
    let stored = view.get::<Person>(borrowed_id).unwrap();
    assert_eq!(stored.body, still_held, "stored as prepared, and still the caller's");
    assert_eq!((stored.meta.revision, &stored.body.sort_name), (1, &made.body.sort_name));
    assert_eq!(view.find::<Person>("email", "grace@example.org").unwrap(), vec![borrowed_id], "indexed");
    assert_eq!(view.find::<Person>("sort_name", "grace hopper").unwrap(), vec![borrowed_id, made.id]);
    let events = view.audit_events(0, 10).unwrap();
    assert_eq!(events.len(), 2);
    let fields = |i: usize| events[i].changes.iter().map(|c| c.field.clone()).collect::<Vec<_>>();
    assert_eq!(fields(0), ["email", "name", "sort_name"]);
    assert_eq!(fields(0), fields(1), "the same audit fields");
    assert_eq!(events[0].changes[1..], events[1].changes[1..], "the same values but the email");
    assert_eq!(events[0].changes[0].after, "\"grace@example.org\"");
    assert_eq!(events[0].record_id, borrowed_id);
    assert_eq!(view.verify_audit().unwrap(), 2);
}

/// `create_many_from` (a bulk import's batch) writes what `create_from` would one row at a time:
/// rows, index entries, change feed, live count and audit chain; a row whose unique value is
/// taken (by an existing row, or by an earlier row of the same batch) is refused alone.
#[test]
fn a_batch_of_prepared_bodies_stores_as_rows_created_one_by_one() {
    use mycorrhizal_engine::Prepared;
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let existing = alice.create(Person::new("Ada Lovelace", "ada@example.org")).unwrap();
    let batch: Vec<Prepared<Person>> = [
        ("Zoë Zimmer", "zoe@example.org"),
        ("Ada Again", "ADA@example.org"),
        ("Grace Hopper", "grace@example.org"),
        ("Grace Twice", "grace@example.org"),
        ("Alan Turing", ""),
    ]
    .into_iter()
    .enumerate()
    // Some rows with the writer's share done ahead, some without: the same rows either way.
    .map(|(i, (name, email))| {
        let prepared = Prepared::new(Person::new(name, email)).unwrap();
        if i % 2 == 0 { prepared.ahead() } else { prepared }
    })
    .collect();
    let results = alice
        .write(move |tx| {
            let refs: Vec<&Prepared<Person>> = batch.iter().collect();
            Ok(tx.create_many_from(&refs)?.into_iter().map(|r| r.map_err(|e| e.to_string())).collect::<Vec<_>>())
        })
        .unwrap();
    assert_eq!(results.len(), 5);
    let ids: Vec<u64> = results.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    assert_eq!(ids.len(), 3, "{results:?}");
    assert!(results[1].is_err() && results[3].is_err(), "the taken emails are refused: {results:?}");
    assert_eq!(ids, [existing.id + 1, existing.id + 2, existing.id + 3], "a refused row uses no id");
    let view = alice.view().unwrap();
    assert_eq!(view.find::<Person>("email", "ada@example.org").unwrap(), vec![existing.id]);
    assert_eq!(view.find::<Person>("email", "grace@example.org").unwrap(), vec![ids[1]]);
    assert_eq!(view.find::<Person>("sort_name", "zoë zimmer").unwrap(), vec![ids[0]]);
    assert_eq!(view.find::<Person>("sort_name", "alan turing").unwrap(), vec![ids[2]]);
    assert_eq!(view.get::<Person>(ids[1]).unwrap().body.name, "Grace Hopper");
    assert_eq!(view.count::<Person>().unwrap(), 4);
    let feed = view.changes_since(1, 10).unwrap();
    assert_eq!(
        feed.iter().map(|c| (c.id, c.op, c.revision)).collect::<Vec<_>>(),
        ids.iter().map(|&id| (id, Op::Created, 1)).collect::<Vec<_>>()
    );
    let events = view.audit_events(1, 10).unwrap();
    assert_eq!(events.iter().map(|e| e.record_id).collect::<Vec<_>>(), ids);
    assert_eq!(events[1].changes.iter().find(|c| c.field == "email").unwrap().after, "\"grace@example.org\"");
    assert_eq!(view.verify_audit().unwrap(), 4, "the chain runs on through the batch");
}

#[test]
fn tampering_with_a_stored_audit_event_is_detected() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let row = alice.create(Person::new("Ada", "")).unwrap();
    alice.put(row.id, Precondition::Any, Person::new("Eve", "")).unwrap();
    drop(alice);
    db.engine.shutdown();
    let crate::helpers::TestDb { dir, engine } = db;
    drop(engine);
    {
        let raw = redb::Database::builder().open(dir.path().join("db.redb")).unwrap();
        let txn = raw.begin_write().unwrap();
        {
            use redb::ReadableTable;
            let table_def: redb::TableDefinition<(u64, u64), &[u8]> = redb::TableDefinition::new("audit");
            let mut table = txn.open_table(table_def).unwrap();
            let mut bytes = table.get((1, 2)).unwrap().unwrap().value().to_vec();
            let at = bytes.windows(3).position(|w| w == b"Eve").expect("the new name is in the event");
            bytes[at] = b'A';
            table.insert((1, 2), bytes.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let engine = open_in(&dir);
    let result = engine.user(ALICE).view().unwrap().verify_audit();
    assert!(matches!(result, Err(Error::Corrupt { .. })), "{result:?}");
}

#[test]
fn id_bounds_and_find_range_see_only_the_users_rows() {
    let db = fresh();
    let (alice, bob) = (db.engine.user(ALICE), db.engine.user(BOB));
    assert_eq!(alice.view().unwrap().id_bounds::<Person>().unwrap(), None);
    let a1 = alice.create(Person::new("Cleo", "")).unwrap().id;
    let b1 = bob.create(Person::new("Bea", "")).unwrap().id;
    let a2 = alice.create(Person::new("Abe", "")).unwrap().id;
    let a3 = alice.create(Person::new("Dan", "")).unwrap().id;
    alice.delete::<Person>(a3, Precondition::Any).unwrap();
    let view = alice.view().unwrap();
    assert_eq!(view.id_bounds::<Person>().unwrap(), Some((a1, a3)), "tombstones included");
    assert_eq!(bob.view().unwrap().id_bounds::<Person>().unwrap(), Some((b1, b1)));
    // Live rows only, in index order, bounded by value.
    assert_eq!(view.find_range::<Person>("sort_name", "", None).unwrap(), vec![a2, a1]);
    assert_eq!(view.find_range::<Person>("sort_name", "b", Some("d")).unwrap(), vec![a1]);
    assert_eq!(view.find_range::<Person>("_updated", "", None).unwrap().len(), 2);
    assert!(view.find_range::<Person>("nothing", "", None).unwrap().is_empty());
}

/// A `Lookup` finds and reads as the view's own `find` and `get` do: the user's live rows only,
/// nothing before the kind's tables exist, and it may be shared by threads.
#[test]
fn a_lookup_answers_as_the_views_find_and_get() {
    let db = fresh();
    let (alice, bob) = (db.engine.user(ALICE), db.engine.user(BOB));
    let empty = alice.view().unwrap();
    let none = empty.lookup::<Person>().unwrap();
    assert!(none.find("sort_name", "ada").unwrap().is_empty(), "no table yet");
    assert!(matches!(none.get(1), Err(Error::NotFound)));
    let ada = alice.create(Person::new("Ada", "ada@example.org")).unwrap().id;
    let gone = alice.create(Person::new("Ada", "")).unwrap().id;
    alice.delete::<Person>(gone, Precondition::Any).unwrap();
    let bobs = bob.create(Person::new("Ada", "")).unwrap().id;
    let view = alice.view().unwrap();
    let lookup = view.lookup::<Person>().unwrap();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                assert_eq!(lookup.find("sort_name", "ada").unwrap(), view.find::<Person>("sort_name", "ada").unwrap());
                assert_eq!(lookup.find("sort_name", "ada").unwrap(), vec![ada], "live rows of this user only");
                assert_eq!(lookup.find("email", "ada@example.org").unwrap(), vec![ada]);
                assert_eq!(lookup.get(ada).unwrap().body.name, view.get::<Person>(ada).unwrap().body.name);
                assert!(matches!(lookup.get(gone), Err(Error::NotFound)), "a tombstone is not found");
                assert!(matches!(lookup.get(bobs), Err(Error::NotFound)), "another user's row is not found");
            });
        }
    });
}

#[test]
fn index_values_are_the_users_distinct_live_values_in_order() {
    let db = fresh();
    let (alice, bob) = (db.engine.user(ALICE), db.engine.user(BOB));
    for name in ["Cleo", "Abe", "Abe", "Abel", "Ab"] {
        alice.create(Person::new(name, "")).unwrap();
    }
    bob.create(Person::new("Bea", "")).unwrap();
    let gone = alice.create(Person::new("Dan", "")).unwrap().id;
    alice.delete::<Person>(gone, Precondition::Any).unwrap();
    let view = alice.view().unwrap();
    let all: Vec<String> = view
        .find_range::<Person>("sort_name", "", None)
        .unwrap()
        .iter()
        .map(|id| view.get::<Person>(*id).unwrap().body.sort_name)
        .collect();
    let mut expected = all.clone();
    expected.dedup();
    assert_eq!(expected.len(), 4, "{all:?}");
    // Repeats once, a value that starts another ("ab", "abe", "abel") each on its own, no
    // tombstone, nothing of another user's.
    assert_eq!(view.index_values::<Person>("sort_name").unwrap(), expected);
    assert!(view.index_values::<Person>("nothing").unwrap().is_empty());
    assert!(bob.view().unwrap().index_values::<Person>("email").unwrap().is_empty());
}

#[test]
fn a_transaction_of_many_writes_keeps_every_chain_sequence_count_and_id() {
    // The write path keeps each user's heads (sequence, audit hash, live counts, ids) for the
    // length of a transaction: interleaved users, a purge and a second transaction must agree
    // with what the tables say.
    let db = fresh();
    let ids = db
        .engine
        .write(|tx| {
            let mut ids = Vec::new();
            for i in 0..20 {
                let user = if i % 2 == 0 { ALICE } else { BOB };
                ids.push(tx.user(user).create(Person::new(&format!("P{i}"), ""))?.id);
            }
            tx.user(ALICE).delete::<Person>(ids[0], Precondition::Any)?;
            tx.user(BOB).purge_audit(jiff::Timestamp::MAX)?;
            tx.user(BOB).create(Person::new("After purge", ""))?;
            Ok(ids)
        })
        .unwrap();
    assert_eq!(ids, (1..=20).collect::<Vec<u64>>(), "ids follow each other");
    let next = db.engine.user(ALICE).create(Person::new("Next", "")).unwrap();
    assert_eq!(next.id, 22, "the next transaction continues the counter");
    let (alice, bob) = (db.engine.user(ALICE).view().unwrap(), db.engine.user(BOB).view().unwrap());
    assert_eq!(alice.count::<Person>().unwrap(), 10, "ten created, one deleted, one more");
    assert_eq!(bob.count::<Person>().unwrap(), 11);
    assert_eq!(alice.last_seq().unwrap(), 12);
    assert_eq!(bob.last_seq().unwrap(), 11);
    let seqs: Vec<u64> = alice.changes_since(0, 100).unwrap().iter().map(|c| c.seq).collect();
    assert_eq!(seqs, (1..=12).collect::<Vec<u64>>());
    assert_eq!(alice.verify_audit().unwrap(), 12);
    assert_eq!(bob.verify_audit().unwrap(), 1, "the event after the purge chains to its anchor");
}

/// Holds the engine's writer inside a change (on a thread of its own) until the returned sender
/// is sent to: what is written meanwhile queues behind it and is taken as one batch. Returns once
/// the writer has taken the holding change.
fn hold_writer(
    engine: &mycorrhizal_engine::Engine,
) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<mycorrhizal_engine::Result<()>>) {
    let (entered_tx, entered) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Arc::new(std::sync::Mutex::new(released));
    let engine = engine.clone();
    let holder = std::thread::spawn(move || {
        engine.user(ALICE).write(move |_tx| {
            let _ = entered_tx.send(());
            let _ = released.lock().expect("lock").recv();
            Ok(())
        })
    });
    entered.recv().expect("the writer took the first change");
    (release, holder)
}

#[test]
fn queued_writes_counts_the_changes_waiting_and_in_flight_the_unanswered() {
    let db = fresh();
    let engine = db.engine.clone();
    assert_eq!(engine.queued_writes(), 0);
    // Hold the writer inside a change, then queue five more behind it.
    let (release, holder) = hold_writer(&engine);
    let waiting: Vec<_> = (0..5)
        .map(|n| {
            let engine = engine.clone();
            std::thread::spawn(move || engine.user(ALICE).create(Person::new(&format!("Queued {n}"), "")))
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.queued_writes() < 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(engine.queued_writes(), 5, "five changes wait behind the held one");
    assert_eq!(engine.writes_in_flight(), 6, "the held change is in flight too, though no longer queued");
    release.send(()).expect("release");
    holder.join().expect("holder").expect("held change");
    for w in waiting {
        w.join().expect("writer thread").expect("queued create");
    }
    assert_eq!(engine.queued_writes(), 0, "all taken");
    // The last caller can hear back a moment before the writer counts its batch done.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.writes_in_flight() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(engine.writes_in_flight(), 0, "all answered");
}

/// Gathers names over one transaction and writes them, joined, as one `map:gathered` value.
#[derive(Default)]
struct Names(Vec<String>);

impl mycorrhizal_engine::Gathered for Names {
    fn finish(self: Box<Self>, tx: &mycorrhizal_engine::Tx<'_>) -> mycorrhizal_engine::Result<()> {
        let n = tx.next_counter("id:gathered")?;
        tx.global().map_put("map:gathered", &format!("{n:03}"), self.0.join(",").as_bytes())
    }
}

#[test]
fn what_a_transaction_gathers_is_written_once_before_it_commits_and_a_failed_change_takes_its_share_away() {
    let db = fresh();
    let engine = db.engine.clone();
    // Hold the writer inside a change, so the next three are taken into one batch.
    let (release, holder) = hold_writer(&engine);
    // Queued one after another, so the batch runs them in this order.
    let mut queued = Vec::new();
    for (n, name) in ["ann", "bea", "cid"].into_iter().enumerate() {
        let engine = engine.clone();
        let waiting = engine.clone();
        queued.push(std::thread::spawn(move || {
            engine.write(move |tx| {
                tx.gathered(|names: &mut Names| names.0.push(name.to_string()))?;
                if name == "bea" { Err(Error::NotFound) } else { Ok(()) }
            })
        }));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while waiting.queued_writes() <= n && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    assert_eq!(engine.queued_writes(), 3, "three changes wait behind the held one");
    release.send(()).expect("release");
    holder.join().expect("holder").expect("held change");
    let results: Vec<bool> = queued.into_iter().map(|w| w.join().expect("writer thread").is_ok()).collect();
    assert_eq!(results, [true, false, true]);
    let mut rows = Vec::new();
    engine
        .global()
        .expect("a read")
        .map_scan("map:gathered", "", |key, value| {
            rows.push((key.to_string(), String::from_utf8_lossy(value).into_owned()));
            true
        })
        .expect("scan");
    assert_eq!(
        rows,
        [("001".to_string(), "ann,cid".to_string())],
        "one row for the batch, without the failed change's name"
    );
}

/// An update writes only the index entries that change (`TxUser::store`): whatever it keeps,
/// adds or drops, the index afterwards holds exactly the row's new entries.
#[test]
fn an_update_leaves_exactly_the_rows_new_index_entries() {
    let db = fresh();
    let alice = db.engine.user(ALICE);
    let ada = alice.create(Person::new("Ada", "ada@example.org")).unwrap();
    let bea = alice.create(Person::new("Bea", "bea@example.org")).unwrap();
    let held = |id: u64| {
        let mut entries: Vec<(String, String)> = alice
            .view()
            .unwrap()
            .index_entries::<Person>()
            .unwrap()
            .into_iter()
            .filter(|(_, _, of)| *of == id)
            .map(|(name, value, _)| (name, value))
            .collect();
        entries.sort();
        entries
    };
    let expected = |row: &mycorrhizal_engine::Row<Person>, own: &[(&str, &str)]| {
        let mut entries: Vec<(String, String)> = own.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        let updated = format!("{:020}", row.meta.updated_at.as_microsecond());
        entries.push((mycorrhizal_engine::UPDATED_INDEX.to_string(), updated));
        entries.sort();
        entries
    };

    // The name changes, the e-mail stays.
    let row = alice.put(ada.id, Precondition::Any, Person::new("Ada King", "ada@example.org")).unwrap();
    assert_eq!(held(ada.id), expected(&row, &[("email", "ada@example.org"), ("sort_name", "ada king")]));
    // The e-mail goes, the name stays; the e-mail is free for another row at once.
    let row = alice.put(ada.id, Precondition::Any, Person::new("Ada King", "")).unwrap();
    assert_eq!(held(ada.id), expected(&row, &[("sort_name", "ada king")]));
    let moved = alice.put(bea.id, Precondition::Any, Person::new("Bea", "ada@example.org")).unwrap();
    assert_eq!(held(bea.id), expected(&moved, &[("email", "ada@example.org"), ("sort_name", "bea")]));
    assert_eq!(alice.find::<Person>("email", "ada@example.org").unwrap(), vec![bea.id]);
    assert!(alice.find::<Person>("email", "bea@example.org").unwrap().is_empty());
    // The same body again, and an e-mail taken by another row refused with nothing changed.
    let row = alice.put(ada.id, Precondition::Any, Person::new("Ada King", "")).unwrap();
    assert_eq!(held(ada.id), expected(&row, &[("sort_name", "ada king")]));
    assert!(matches!(
        alice.put(ada.id, Precondition::Any, Person::new("Ada", "ADA@example.org")),
        Err(Error::Duplicate { index: "email" })
    ));
    assert_eq!(held(ada.id), expected(&row, &[("sort_name", "ada king")]));
    // A deletion leaves nothing.
    alice.delete::<Person>(ada.id, Precondition::Any).unwrap();
    assert!(held(ada.id).is_empty());
    assert_eq!(held(bea.id), expected(&moved, &[("email", "ada@example.org"), ("sort_name", "bea")]));
}

#[test]
fn a_deleted_row_is_restored_at_its_own_id_indexed_counted_and_in_the_feed() {
    let db = fresh();
    let alice = db.engine.user(UserId(1));
    let row = alice.create(Person::new("Ada", "ada@example.org")).unwrap();
    alice.delete::<Person>(row.id, Precondition::Any).unwrap();
    assert_eq!(alice.view().unwrap().count::<Person>().unwrap(), 0);
    let back = alice.write(move |tx| tx.restore(row.id, Person::new("Ada", "ada@example.org"), None)).unwrap();
    assert_eq!((back.id, back.meta.revision, back.meta.created_at), (row.id, 3, row.meta.created_at));
    assert_eq!(alice.get::<Person>(row.id).unwrap().body.sort_name, "ada", "prepared like a write");
    assert_eq!(alice.find::<Person>("email", "ada@example.org").unwrap(), vec![row.id], "indexed again");
    assert_eq!(alice.view().unwrap().count::<Person>().unwrap(), 1, "counted again");
    let last = alice.view().unwrap().changes_since(0, 100).unwrap().pop().unwrap();
    assert_eq!((last.id, last.op, last.revision), (row.id, Op::Created, 3));
    // A live row is not restored over, and an id never given out is not made up.
    let twice = alice.write(move |tx| tx.restore(row.id, Person::new("Ada", ""), None));
    assert!(matches!(twice, Err(Error::Duplicate { .. })), "{twice:?}");
    let unknown = alice.write(|tx| tx.restore(999, Person::new("Nobody", ""), None));
    assert!(matches!(unknown, Err(Error::NotFound)), "{unknown:?}");
    // The other user's id space is not touched.
    let bob = db.engine.user(UserId(2));
    assert!(matches!(bob.get::<Person>(row.id), Err(Error::NotFound)));
}
