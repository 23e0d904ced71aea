//! State-machine property test: random create/update/delete/reopen for two users against an
//! in-memory model. After every step: same visible rows, revisions strictly increasing, indexes
//! equal to a recomputation, change feed complete, and no cross-user visibility.

use std::collections::BTreeMap;

use mycorrhizal_engine::{Error, Op, Precondition, Record, UserId};
use proptest::prelude::*;

use crate::helpers::{Person, fresh, open_in};

#[derive(Debug, Clone)]
enum Step {
    Create {
        user: u8,
        name: String,
        email: u8,
    },
    Update {
        user: u8,
        pick: usize,
        name: String,
        email: u8,
    },
    Delete {
        user: u8,
        pick: usize,
    },
    /// Update or delete using the other user's id: must be NotFound and change nothing.
    Trespass {
        user: u8,
        pick: usize,
    },
    Reopen,
}

fn step() -> impl Strategy<Value = Step> {
    let name = "[a-z]{1,6}";
    prop_oneof![
        4 => (0..2u8, name, 0..6u8).prop_map(|(user, name, email)| Step::Create { user, name, email }),
        3 => (0..2u8, any::<usize>(), name, 0..6u8).prop_map(|(user, pick, name, email)| Step::Update { user, pick, name, email }),
        2 => (0..2u8, any::<usize>()).prop_map(|(user, pick)| Step::Delete { user, pick }),
        1 => (0..2u8, any::<usize>()).prop_map(|(user, pick)| Step::Trespass { user, pick }),
        1 => Just(Step::Reopen),
    ]
}

/// Email `0` means none; otherwise a small pool so the unique index is exercised.
fn email(n: u8) -> String {
    if n == 0 { String::new() } else { format!("p{n}@example.org") }
}

#[derive(Default)]
struct Model {
    /// Per user: id -> (body, revision).
    rows: [BTreeMap<u64, (Person, u64)>; 2],
    /// Per user: the expected change log (kind, id, op, revision).
    feed: [Vec<(u64, Op, u64)>; 2],
}

impl Model {
    fn email_taken(&self, user: usize, email: &str, except: Option<u64>) -> bool {
        !email.is_empty() && self.rows[user].iter().any(|(id, (p, _))| Some(*id) != except && p.email == email)
    }

    fn pick(&self, user: usize, pick: usize) -> Option<u64> {
        let ids: Vec<_> = self.rows[user].keys().copied().collect();
        (!ids.is_empty()).then(|| ids[pick % ids.len()])
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_the_model(steps in proptest::collection::vec(step(), 1..40)) {
        let mut db = fresh();
        let mut model = Model::default();
        for step in steps {
            match step {
                Step::Create { user, name, email: e } => {
                    let u = user as usize;
                    let p = Person::new(&name, &email(e));
                    let result = db.engine.user(UserId(u as u64 + 1)).create(p.clone());
                    if model.email_taken(u, &p.email, None) {
                        prop_assert!(matches!(result, Err(Error::Duplicate { .. })), "expected a duplicate");
                    } else {
                        let row = result.unwrap();
                        prop_assert_eq!(row.meta.revision, 1);
                        let mut stored = p;
                        stored.save_hook();
                        model.rows[u].insert(row.id, (stored, 1));
                        model.feed[u].push((row.id, Op::Created, 1));
                    }
                }
                Step::Update { user, pick, name, email: e } => {
                    let u = user as usize;
                    let Some(id) = model.pick(u, pick) else { continue };
                    let p = Person::new(&name, &email(e));
                    let rev = model.rows[u][&id].1;
                    let result = db.engine.user(UserId(u as u64 + 1)).put(id, Precondition::Revision(rev), p.clone());
                    if model.email_taken(u, &p.email, Some(id)) {
                        prop_assert!(matches!(result, Err(Error::Duplicate { .. })), "expected a duplicate");
                    } else {
                        let row = result.unwrap();
                        prop_assert_eq!(row.meta.revision, rev + 1, "revision strictly increases by one");
                        let mut stored = p;
                        stored.save_hook();
                        model.rows[u].insert(id, (stored, rev + 1));
                        model.feed[u].push((id, Op::Updated, rev + 1));
                    }
                }
                Step::Delete { user, pick } => {
                    let u = user as usize;
                    let Some(id) = model.pick(u, pick) else { continue };
                    db.engine.user(UserId(u as u64 + 1)).delete::<Person>(id, Precondition::Any).unwrap();
                    let (_, rev) = model.rows[u].remove(&id).unwrap();
                    model.feed[u].push((id, Op::Deleted, rev + 1));
                }
                Step::Trespass { user, pick } => {
                    let u = user as usize;
                    let Some(id) = model.pick(1 - u, pick) else { continue };
                    let me = db.engine.user(UserId(u as u64 + 1));
                    prop_assert!(matches!(me.get::<Person>(id), Err(Error::NotFound)));
                    prop_assert!(matches!(me.put(id, Precondition::Any, Person::new("x", "")), Err(Error::NotFound)));
                    prop_assert!(matches!(me.delete::<Person>(id, Precondition::Any), Err(Error::NotFound)));
                }
                Step::Reopen => {
                    db.engine.shutdown();
                    let dir = db.dir;
                    drop(db.engine);
                    let engine = open_in(&dir);
                    db = crate::helpers::TestDb { dir, engine };
                }
            }
            check(&db, &model)?;
        }
    }
}

fn check(db: &crate::helpers::TestDb, model: &Model) -> Result<(), TestCaseError> {
    for u in 0..2 {
        let view = db.engine.user(UserId(u as u64 + 1)).view().unwrap();
        let rows = view.list::<Person>().unwrap();
        let visible: BTreeMap<u64, (Person, u64)> =
            rows.iter().map(|r| (r.id, (r.body.clone(), r.meta.revision))).collect();
        prop_assert_eq!(&visible, &model.rows[u]);
        prop_assert_eq!(
            view.count::<Person>().unwrap(),
            model.rows[u].len() as u64,
            "live count kept by the write path"
        );

        let mut expected_index: Vec<(String, String, u64)> = rows
            .iter()
            .flat_map(|r| {
                let mut entries = r.body.index_entries();
                entries
                    .push((mycorrhizal_engine::UPDATED_INDEX, format!("{:020}", r.meta.updated_at.as_microsecond())));
                entries.into_iter().map(move |(n, v)| (n.to_string(), v, r.id))
            })
            .collect();
        expected_index.sort();
        prop_assert_eq!(view.index_entries::<Person>().unwrap(), expected_index);

        let feed: Vec<(u64, Op, u64)> =
            view.changes_since(0, usize::MAX).unwrap().iter().map(|c| (c.id, c.op, c.revision)).collect();
        prop_assert_eq!(&feed, &model.feed[u]);
        let seqs: Vec<u64> = view.changes_since(0, usize::MAX).unwrap().iter().map(|c| c.seq).collect();
        prop_assert_eq!(seqs, (1..=model.feed[u].len() as u64).collect::<Vec<_>>());
        prop_assert_eq!(view.last_seq().unwrap(), model.feed[u].len() as u64);

        for other in model.rows[1 - u].keys() {
            prop_assert!(matches!(view.get::<Person>(*other), Err(Error::NotFound)));
        }
    }
    Ok(())
}
