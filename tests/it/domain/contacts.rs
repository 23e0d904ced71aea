//! The contact's rules: what makes one valid, how an edit merges over the stored card, and
//! what a delete takes with it.

use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::ops::{self, ContactInput};
use mycorrhizal::crm::note::Note;
use mycorrhizal::crm::{Error, note};
use mycorrhizal_engine::Precondition;
use serde_json::json;

use super::{Domain, input};

fn invalid_field(e: Error) -> String {
    match e {
        Error::Invalid { field, .. } => field,
        Error::Engine(mycorrhizal_engine::Error::Invalid(invalid)) => invalid.field,
        other => panic!("not a validation error: {other:?}"),
    }
}

#[tokio::test]
async fn a_contact_needs_a_first_name_whatever_else_it_has() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let ada = domain.user(1);
    let nameless: ContactInput = input(json!({ "nickname": "Amazing", "email": "grace@navy.mil", "org": "Navy" }));
    assert_eq!(invalid_field(ops::create(&ada, nameless).await.unwrap_err()), "card.name");
    let named: ContactInput = input(json!({ "firstname": "Grace", "lastname": "Hopper" }));
    let row = ops::create(&ada, named).await.expect("a first name is enough");
    assert_eq!(row.body.name(), "Grace Hopper");
}

#[tokio::test]
async fn a_birthday_must_be_a_date_with_or_without_a_year() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let ada = domain.user(1);
    for bad in ["31.02.1990", "tomorrow", "1990/12/09"] {
        let given: ContactInput = input(json!({ "firstname": "Typo", "birthday": bad }));
        assert_eq!(invalid_field(ops::create(&ada, given).await.unwrap_err()), "birthday", "{bad}");
    }
    for good in ["1906-12-09", "--12-09"] {
        let given: ContactInput = input(json!({ "firstname": "Grace", "birthday": good }));
        ops::create(&ada, given).await.unwrap_or_else(|e| panic!("{good}: {e}"));
    }
}

#[tokio::test]
async fn an_edit_keeps_what_its_input_leaves_out() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let ada = domain.user(1);
    let made: ContactInput =
        input(json!({ "firstname": "Grace", "lastname": "Hopper", "email": "g@navy.mil", "is_favorite": true }));
    let row = ops::create(&ada, made).await.unwrap();
    domain.clock.set("2026-05-02T08:00:00Z".parse().unwrap());
    let edit: ContactInput = input(json!({ "org": "Yale" }));
    let edited = ops::update(&ada, row.id, Precondition::Revision(row.meta.revision), edit).await.unwrap();
    assert_eq!(edited.meta.created_at, row.meta.created_at);
    assert_eq!(edited.meta.updated_at.to_string(), "2026-05-02T08:00:00Z", "updated on the clock's day");
    assert_eq!(edited.body.name(), "Grace Hopper", "the name stays");
    assert!(edited.body.favorite, "the flag stays");
    assert_eq!(edited.body.uid, row.body.uid, "the uid stays");
    assert_eq!(edited.meta.revision, row.meta.revision + 1);
    let stale: ContactInput = input(json!({ "org": "Harvard" }));
    let refused = ops::update(&ada, row.id, Precondition::Revision(row.meta.revision), stale).await;
    assert!(matches!(refused, Err(Error::Engine(mycorrhizal_engine::Error::Conflict { .. }))), "{refused:?}");
}

#[tokio::test]
async fn deleting_a_contact_takes_its_notes_and_leaves_other_users_alone() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let (ada, bob) = (domain.user(1), domain.user(2));
    let grace = ops::create(&ada, input(json!({ "firstname": "Grace" }))).await.unwrap();
    let now = domain.engine.clock().now();
    let about = note::ops::create(&ada, Some(grace.id), input(json!({ "content": "met at the conference" })), now);
    let about = about.await.unwrap();
    let unassigned = note::ops::create(&ada, None, input(json!({ "content": "ideas" })), now).await.unwrap();
    let bobs = ops::create(&bob, input(json!({ "firstname": "Grace" }))).await.unwrap();

    ops::delete(&ada, grace.id, Precondition::Any).await.unwrap();
    assert!(ada.get::<Contact>(grace.id).is_err(), "the contact is gone");
    assert!(ada.get::<Note>(about.id).is_err(), "its note went with it");
    assert!(ada.get::<Note>(unassigned.id).is_ok(), "an unassigned note stays");
    assert!(bob.get::<Contact>(bobs.id).is_ok(), "another user's contact stays");
}
