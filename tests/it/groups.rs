//! Circles and tags as entities against the real binary: ids for names already on contacts,
//! empty groups created, members added and removed by vCard UID or id (409 twice), renamed and
//! deleted on every contact at once, paged A to Z, named by id in a bulk action, and another
//! user's group or contact never reachable.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Client, Instance, json_of};

async fn contact(client: &Client, name: &str, circles: Value, tags: Value) -> (u64, String) {
    let body = json!({ "card": { "name": { "full": name }, "keywords": tags }, "crm": { "circles": circles } });
    let c = json_of(client.post("/api/v1/contacts", body).await, 201).await;
    (c["contact"]["id"].as_u64().unwrap(), c["contact"]["uid"].as_str().unwrap().to_string())
}

fn names(list: &Value) -> Vec<(String, u64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap().to_string(), g["count"].as_u64().unwrap()))
        .collect()
}

#[tokio::test]
async fn circles_have_ids_members_and_one_name_each() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (a, a_uid) = contact(&ada, "Ann", json!(["Climbing"]), json!([])).await;
    let (b, b_uid) = contact(&ada, "Ben", json!(["Climbing", "Work"]), json!([])).await;

    // Names already on contacts have rows (and ids) at the first list.
    let list = json_of(ada.get("/api/v1/circles?include_members=true").await, 200).await;
    assert_eq!(names(&list["circles"]), [("Climbing".into(), 2), ("Work".into(), 1)]);
    assert_eq!(list["total"], 2);
    assert_eq!(list["next_cursor"], "");
    let climbing = list["circles"][0]["id"].as_u64().unwrap();
    let mut members: Vec<(u64, String)> = list["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["circle_id"] == climbing)
        .map(|m| (m["contact_id"].as_u64().unwrap(), m["member_vcard_uid"].as_str().unwrap().to_string()))
        .collect();
    members.sort();
    assert_eq!(members, [(a, a_uid.clone()), (b, b_uid.clone())]);
    let again = json_of(ada.get("/api/v1/circles").await, 200).await;
    assert_eq!(again["circles"][0]["id"], climbing, "the id is stable");
    assert!(again.get("members").is_none());

    // An empty circle exists on its own; its name is taken once.
    let created = json_of(ada.post("/api/v1/circles", json!({ "name": " Book club " })).await, 201).await;
    assert_eq!(created["circle"]["name"], "Book club");
    assert_eq!(created["circle"]["count"], 0);
    let club = created["circle"]["id"].as_u64().unwrap();
    let dup = json_of(ada.post("/api/v1/circles", json!({ "name": "Book club" })).await, 409).await;
    assert_eq!((dup["code"].as_str(), dup["details"]["field"].as_str()), (Some("ALREADY_EXISTS"), Some("name")));
    json_of(ada.post("/api/v1/circles", json!({ "name": "  " })).await, 400).await;
    json_of(ada.post("/api/v1/circles", json!({ "name": "x".repeat(201) })).await, 400).await;

    // Members by UID or id; twice is a conflict; the contact carries the circle.
    let added =
        json_of(ada.post(&format!("/api/v1/circles/{club}/members"), json!({ "member_vcard_uid": a_uid })).await, 201)
            .await;
    assert_eq!(added["member"]["circle_id"], club);
    assert_eq!(added["member"]["contact_id"], a);
    json_of(ada.post(&format!("/api/v1/circles/{club}/members"), json!({ "member_vcard_uid": a_uid })).await, 409)
        .await;
    json_of(ada.post(&format!("/api/v1/circles/{club}/members"), json!({ "contact_id": b })).await, 201).await;
    json_of(ada.post(&format!("/api/v1/circles/{club}/members"), json!({})).await, 400).await;
    json_of(
        ada.post(
            &format!("/api/v1/circles/{club}/members"),
            json!({ "member_vcard_uid": "1b4e28ba-2fa1-4d2e-8a9b-1c2d3e4f5a6b" }),
        )
        .await,
        404,
    )
    .await;
    let filtered = json_of(ada.get("/api/v1/contacts?circle=Book%20club").await, 200).await;
    assert_eq!(filtered["total"], 2);
    let detail = json_of(ada.get(&format!("/api/v1/circles/{club}")).await, 200).await;
    assert_eq!(detail["circle"]["count"], 2);
    assert_eq!(detail["members"].as_array().unwrap().len(), 2);
    json_of(ada.send(Method::DELETE, &format!("/api/v1/circles/{club}/members/{b}"), json!({})).await, 200).await;
    json_of(ada.send(Method::DELETE, &format!("/api/v1/circles/{club}/members/{b}"), json!({})).await, 404).await;

    // Rename by id (or, as before, by name) reaches every contact; another circle's name is refused.
    let renamed =
        json_of(ada.send(Method::PUT, &format!("/api/v1/circles/{club}"), json!({ "name": "Readers" })).await, 200)
            .await;
    assert_eq!((renamed["id"].as_u64(), renamed["name"].as_str()), (Some(club), Some("Readers")));
    assert_eq!(renamed["contacts_updated"], 1);
    let card = json_of(ada.get(&format!("/api/v1/contacts/{a}")).await, 200).await;
    let mut circles: Vec<Value> = card["crm"]["circles"].as_array().unwrap().clone();
    circles.sort_by_key(|c| c.to_string());
    assert_eq!(circles, [json!("Climbing"), json!("Readers")]);
    json_of(ada.send(Method::PUT, &format!("/api/v1/circles/{club}"), json!({ "name": "Work" })).await, 409).await;
    let by_name = json_of(ada.send(Method::PUT, "/api/v1/circles/Work", json!({ "name": "Office" })).await, 200).await;
    assert_eq!(by_name["contacts_updated"], 1);

    // Paged A to Z with a cursor.
    let first = json_of(ada.get("/api/v1/circles?limit=2").await, 200).await;
    assert_eq!(names(&first["circles"]).len(), 2);
    assert_eq!(first["limit"], 2);
    assert_eq!(first["total"], 3);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = json_of(ada.get(&format!("/api/v1/circles?limit=2&cursor={cursor}")).await, 200).await;
    assert_eq!(names(&second["circles"]), [("Readers".into(), 1)]);
    assert_eq!(second["next_cursor"], "");

    // A bulk action names a circle by id.
    let bulk = json!({ "action": "add_circle", "ids": [b], "circle_id": club });
    assert_eq!(json_of(ada.post("/api/v1/contacts/bulk", bulk).await, 200).await["succeeded"], 1);
    assert_eq!(json_of(ada.get(&format!("/api/v1/circles/{club}")).await, 200).await["circle"]["count"], 2);

    // Delete removes it from everyone.
    let gone = json_of(ada.send(Method::DELETE, &format!("/api/v1/circles/{club}"), json!({})).await, 200).await;
    assert_eq!(gone["contacts_updated"], 2);
    json_of(ada.get(&format!("/api/v1/circles/{club}")).await, 404).await;
    assert_eq!(json_of(ada.get("/api/v1/contacts?circle=Readers").await, 200).await["total"], 0);

    // Another user reaches none of it, and cannot add Ada's contact to a circle of theirs.
    let bob = server.sign_up("bob").await;
    json_of(bob.get(&format!("/api/v1/circles/{climbing}")).await, 404).await;
    json_of(bob.send(Method::PUT, &format!("/api/v1/circles/{climbing}"), json!({ "name": "Mine" })).await, 404).await;
    json_of(bob.send(Method::DELETE, &format!("/api/v1/circles/{climbing}"), json!({})).await, 404).await;
    json_of(bob.post(&format!("/api/v1/circles/{climbing}/members"), json!({ "contact_id": a })).await, 404).await;
    let own = json_of(bob.post("/api/v1/circles", json!({ "name": "Climbing" })).await, 201).await["circle"]["id"]
        .as_u64()
        .unwrap();
    json_of(bob.post(&format!("/api/v1/circles/{own}/members"), json!({ "member_vcard_uid": a_uid })).await, 404).await;
    json_of(bob.post(&format!("/api/v1/circles/{own}/members"), json!({ "contact_id": a })).await, 404).await;
    let bulk = json!({ "action": "add_circle", "ids": [a], "circle_id": climbing });
    json_of(bob.post("/api/v1/contacts/bulk", bulk).await, 400).await;
    assert_eq!(names(&json_of(ada.get("/api/v1/circles").await, 200).await["circles"])[0], ("Climbing".into(), 2));
}

#[tokio::test]
async fn tags_are_entities_whose_taggings_are_the_cards_keywords() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (a, a_uid) = contact(&ada, "Ann", json!([]), json!(["vegan"])).await;
    let created = json_of(ada.post("/api/v1/tags", json!({ "name": "early bird" })).await, 201).await;
    let early = created["tag"]["id"].as_u64().unwrap();
    let tagged =
        json_of(ada.post(&format!("/api/v1/tags/{early}/contacts"), json!({ "contact_vcard_uid": a_uid })).await, 201)
            .await;
    assert_eq!(tagged["tagging"]["tag_id"], early);
    assert_eq!(tagged["tagging"]["contact_vcard_uid"], a_uid.as_str());
    json_of(ada.post(&format!("/api/v1/tags/{early}/contacts"), json!({ "contact_id": a })).await, 409).await;
    let card = json_of(ada.get(&format!("/api/v1/contacts/{a}")).await, 200).await;
    let mut keywords: Vec<String> =
        card["card"]["keywords"].as_array().unwrap().iter().map(|k| k.as_str().unwrap().to_string()).collect();
    keywords.sort();
    assert_eq!(keywords, ["early bird", "vegan"], "a tag is a card keyword (vCard CATEGORIES)");
    let list = json_of(ada.get("/api/v1/tags?include_contacts=true").await, 200).await;
    assert_eq!(names(&list["tags"]), [("early bird".into(), 1), ("vegan".into(), 1)]);
    assert_eq!(list["contacts"].as_array().unwrap().len(), 2);
    assert!(list["contacts"].as_array().unwrap().iter().all(|t| t["contact_id"] == a && t.get("circle_id").is_none()));
    let detail = json_of(ada.get(&format!("/api/v1/tags/{early}")).await, 200).await;
    assert_eq!(detail["contacts"][0]["contact_vcard_uid"], a_uid.as_str());
    json_of(ada.send(Method::DELETE, &format!("/api/v1/tags/{early}/contacts/{a_uid}"), json!({})).await, 200).await;
    assert_eq!(json_of(ada.get("/api/v1/contacts?tag=early%20bird").await, 200).await["total"], 0);
    assert_eq!(
        json_of(ada.get(&format!("/api/v1/tags/{early}")).await, 200).await["tag"]["count"],
        0,
        "an empty tag stays until deleted"
    );
    json_of(ada.send(Method::DELETE, &format!("/api/v1/tags/{early}"), json!({})).await, 200).await;
    json_of(ada.send(Method::DELETE, &format!("/api/v1/tags/{early}"), json!({})).await, 404).await;
    let bob = server.sign_up("bob").await;
    let vegan = list["tags"][1]["id"].as_u64().unwrap();
    json_of(bob.get(&format!("/api/v1/tags/{vegan}")).await, 404).await;
    json_of(bob.post(&format!("/api/v1/tags/{vegan}/contacts"), json!({ "contact_id": a })).await, 404).await;
    assert_eq!(json_of(bob.get("/api/v1/tags").await, 200).await["tags"], json!([]));
}
