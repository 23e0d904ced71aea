//! Relationships' rules: both ends are the user's own contacts, an edge is reached only
//! through a contact it touches, and deleting either end takes the edge with it.

use mycorrhizal::crm::Error;
use mycorrhizal::crm::contact::ops as contacts;
use mycorrhizal::crm::relationship::Relationship;
use mycorrhizal::crm::relationship::ops::{self, RelationshipInput};
use mycorrhizal_engine::Precondition;
use serde_json::json;

use super::{Domain, input};

fn not_found<T: std::fmt::Debug>(outcome: Result<T, Error>) -> bool {
    matches!(outcome, Err(Error::NotFound | Error::Engine(mycorrhizal_engine::Error::NotFound)))
}

#[tokio::test]
async fn an_edge_joins_two_of_the_users_own_contacts_only() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let (ada, bob) = (domain.user(1), domain.user(2));
    let grace = contacts::create(&ada, input(json!({ "firstname": "Grace" }))).await.unwrap();
    let alan = contacts::create(&ada, input(json!({ "firstname": "Alan" }))).await.unwrap();
    let bobs = contacts::create(&bob, input(json!({ "firstname": "Barbara" }))).await.unwrap();

    // Bob's contact, reached from Ada's scope, is no contact of hers: whichever id it has, a
    // contact of hers with that id is not Barbara.
    let unknown = alan.id.max(grace.id).max(bobs.id) + 1;
    let to_unknown: RelationshipInput = input(json!({ "target_id": unknown, "type": "friend_of" }));
    assert!(not_found(ops::create(&ada, grace.id, to_unknown).await), "a target that is not hers");
    let from_unknown: RelationshipInput = input(json!({ "target_id": grace.id, "type": "friend_of" }));
    assert!(not_found(ops::create(&ada, unknown, from_unknown).await), "a source that is not hers");
    let edge: RelationshipInput = input(json!({ "target_id": alan.id, "type": "sister", "note": "since school" }));
    let made = ops::create(&ada, grace.id, edge).await.expect("both ends are Ada's");
    assert_eq!(made.body.kind, "sibling_of", "an everyday word becomes the relation token");
    assert_eq!(made.body.sensitivity, "normal", "the default sensitivity");
    assert!(bob.get::<Relationship>(made.id).is_err(), "another user cannot read the edge");
}

#[tokio::test]
async fn an_edge_is_changed_only_through_a_contact_it_touches() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let ada = domain.user(1);
    let grace = contacts::create(&ada, input(json!({ "firstname": "Grace" }))).await.unwrap();
    let alan = contacts::create(&ada, input(json!({ "firstname": "Alan" }))).await.unwrap();
    let ines = contacts::create(&ada, input(json!({ "firstname": "Ines" }))).await.unwrap();
    let made = ops::create(&ada, grace.id, input(json!({ "target_id": alan.id, "type": "friend_of" }))).await.unwrap();

    let change: RelationshipInput = input(json!({ "target_id": alan.id, "type": "colleague_of" }));
    assert!(not_found(ops::update(&ada, ines.id, made.id, change).await), "Ines is not on the edge");
    assert!(not_found(ops::delete(&ada, ines.id, made.id).await), "nor can she delete it");
    assert!(ada.get::<Relationship>(made.id).is_ok(), "the edge is untouched");

    let change: RelationshipInput = input(json!({ "target_id": grace.id, "type": "colleague_of" }));
    let turned = ops::update(&ada, alan.id, made.id, change).await.expect("Alan is on the edge");
    assert_eq!(
        (turned.body.source, turned.body.target),
        (alan.id, grace.id),
        "an edge from the contact it is edited through"
    );
    ops::delete(&ada, grace.id, made.id).await.expect("Grace is on the edge");
    assert!(ada.get::<Relationship>(made.id).is_err());
}

#[tokio::test]
async fn deleting_either_end_takes_the_edge_with_it() {
    let domain = Domain::at("2026-05-01T10:00:00Z");
    let ada = domain.user(1);
    let grace = contacts::create(&ada, input(json!({ "firstname": "Grace" }))).await.unwrap();
    let alan = contacts::create(&ada, input(json!({ "firstname": "Alan" }))).await.unwrap();
    let ines = contacts::create(&ada, input(json!({ "firstname": "Ines" }))).await.unwrap();
    let outgoing =
        ops::create(&ada, grace.id, input(json!({ "target_id": alan.id, "type": "friend_of" }))).await.unwrap();
    let incoming =
        ops::create(&ada, ines.id, input(json!({ "target_id": grace.id, "type": "parent_of" }))).await.unwrap();
    let others = ops::create(&ada, alan.id, input(json!({ "target_id": ines.id, "type": "friend_of" }))).await.unwrap();

    contacts::delete(&ada, grace.id, Precondition::Any).await.unwrap();
    assert!(ada.get::<Relationship>(outgoing.id).is_err(), "the edge from the deleted contact went");
    assert!(ada.get::<Relationship>(incoming.id).is_err(), "the edge to the deleted contact went");
    assert!(ada.get::<Relationship>(others.id).is_ok(), "an edge between two others stays");
}
