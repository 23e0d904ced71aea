//! Merges taken back, over many random address books: contacts with random emails and
//! organisations, notes, activities shared between random contacts, random edges (some between
//! the pair, some doubled once merged) and household memberships; a random pair merged, every
//! conflict resolved to the merged side's value, then undone. The database reads exactly as
//! before, row by row (bodies and ids), whatever was attached where. Seeds are fixed: a failure
//! names the one to replay.

use std::collections::BTreeMap;

use mycorrhizal::crm::activity::Activity;
use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::ops as contacts;
use mycorrhizal::crm::duplicate::merge::{self, MergeInput};
use mycorrhizal::crm::household::{Household, HouseholdMember};
use mycorrhizal::crm::note::Note;
use mycorrhizal::crm::relationship::Relationship;
use mycorrhizal_engine::{Clock, Record, UserScope};
use serde_json::{Value, json};

use super::{Domain, input};

/// A small deterministic generator (xorshift), so each seed is one reproducible book.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Every row of the kinds a merge touches: kind -> id -> body.
fn rows(scope: &UserScope) -> BTreeMap<String, BTreeMap<u64, Value>> {
    fn all<R: Record>(view: &mycorrhizal_engine::UserView, out: &mut BTreeMap<String, BTreeMap<u64, Value>>) {
        let rows = view
            .list::<R>()
            .expect("list")
            .into_iter()
            .map(|r| (r.id, serde_json::to_value(&r.body).unwrap()))
            .collect();
        out.insert(R::KIND.name.to_string(), rows);
    }
    let view = scope.view().expect("view");
    let mut out = BTreeMap::new();
    all::<Contact>(&view, &mut out);
    all::<Note>(&view, &mut out);
    all::<Activity>(&view, &mut out);
    all::<Relationship>(&view, &mut out);
    all::<Household>(&view, &mut out);
    all::<HouseholdMember>(&view, &mut out);
    out
}

#[tokio::test]
async fn a_merge_undone_leaves_every_row_as_it_was_over_random_books() {
    for seed in 1..=24u64 {
        let domain = Domain::at("2026-05-01T10:00:00Z");
        let ada = domain.user(1);
        let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let n = 3 + dice.roll(4);
        let mut people = Vec::new();
        for i in 0..n {
            let card = json!({
                "name": { "components": [{ "kind": "given", "value": format!("P{}", dice.roll(3)) }, { "kind": "surname", "value": "Lee" }] },
                "emails": [{ "address": format!("p{}@example.org", dice.roll(4)) }],
                "organizations": [{ "name": format!("Org{}", dice.roll(3)) }],
            });
            let made = contacts::create(&ada, input(json!({ "card": card })))
                .await
                .unwrap_or_else(|e| panic!("seed {seed}, contact {i}: {e}"));
            people.push(made.id);
        }
        let pick = |dice: &mut Dice| people[dice.roll(people.len() as u64) as usize];
        for _ in 0..dice.roll(5) {
            let at = pick(&mut dice);
            mycorrhizal::crm::note::ops::create(
                &ada,
                Some(at),
                input(json!({ "content": "a note" })),
                domain.clock.now(),
            )
            .await
            .unwrap();
        }
        for _ in 0..dice.roll(4) {
            let (a, b) = (pick(&mut dice), pick(&mut dice));
            let ids: Vec<u64> = if a == b { vec![a] } else { vec![a, b] };
            mycorrhizal::crm::activity::ops::save(
                &ada,
                None,
                input(json!({ "title": "Lunch", "date": "2026-04-01", "contact_ids": ids })),
            )
            .await
            .unwrap();
        }
        for _ in 0..dice.roll(6) {
            let (a, b) = (pick(&mut dice), pick(&mut dice));
            if a != b {
                let edge = input(json!({ "target_id": b, "type": "friend_of" }));
                let _ = mycorrhizal::crm::relationship::ops::create(&ada, a, edge).await;
            }
        }
        let house =
            mycorrhizal::crm::household::ops::save(&ada, None, input(json!({ "name": "Home" }))).await.unwrap().id;
        for _ in 0..dice.roll(4) {
            let member = input(json!({ "contact_id": pick(&mut dice) }));
            let _ = mycorrhizal::crm::household::ops::add_member(&ada, house, member).await;
        }

        let keep = pick(&mut dice);
        let gone = loop {
            let other = pick(&mut dice);
            if other != keep {
                break other;
            }
        };
        let before = rows(&ada);
        let preview = merge::preview(&ada, MergeInput { keep_id: keep, merge_id: gone, resolutions: BTreeMap::new() })
            .await
            .unwrap();
        let resolutions =
            preview.resolution.conflicts.iter().map(|c| (c.field.to_string(), c.loser_value.clone())).collect();
        merge::merge(&ada, MergeInput { keep_id: keep, merge_id: gone, resolutions })
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: merge {e}"));
        assert!(ada.get::<Contact>(gone).is_err(), "seed {seed}: merged away");
        merge::undo(&ada, gone).await.unwrap_or_else(|e| panic!("seed {seed}: undo {e}"));
        assert_eq!(rows(&ada), before, "seed {seed}: every row as it was after merging {gone} into {keep}");
    }
}
