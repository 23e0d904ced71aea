//! The duplicate scan and dismissals over HTTP: pairs by email, phone, name and close names with
//! a shared organisation, best first and paged; a pair dismissed for good; another user sees and
//! dismisses nothing of it.

use serde_json::{Value, json};

use crate::helpers::{Client, Instance};

async fn contact(client: &Client, given: &str, surname: &str, extra: Value) -> (u64, String) {
    let mut card = json!({ "name": { "components": [{ "kind": "given", "value": given }, { "kind": "surname", "value": surname }] } });
    if let (Value::Object(card), Value::Object(extra)) = (&mut card, extra) {
        card.extend(extra);
    }
    let made = client.post("/api/v1/contacts", json!({ "card": card })).await;
    assert_eq!(made.status(), 201);
    let made: Value = made.json().await.unwrap();
    (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string())
}

fn summary(page: &Value) -> Vec<(u64, u64, Vec<String>, f64)> {
    page["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let reasons = p["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect();
            (p["a"]["id"].as_u64().unwrap(), p["b"]["id"].as_u64().unwrap(), reasons, p["confidence"].as_f64().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn the_scan_pairs_probable_doubles_best_first_and_a_dismissed_pair_stays_away() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, ann_uid) = contact(
        &ada,
        "Ann",
        "Lee",
        json!({ "emails": [{ "address": "ann@example.org" }], "phones": [{ "number": "+44 20 7946 0958" }] }),
    )
    .await;
    let (ann2, _) = contact(&ada, "Ann", "Lee", json!({ "emails": [{ "address": "ANN@example.org" }] })).await;
    let (anne, _) = contact(&ada, "Anne", "Lee", json!({ "phones": [{ "number": "020 7946 0958" }] })).await;
    let (jon, jon_uid) = contact(&ada, "Jon", "Smith", json!({ "organizations": [{ "name": "Acme" }] })).await;
    let (john, _) = contact(&ada, "John", "Smith", json!({ "organizations": [{ "name": "ACME" }] })).await;
    let (jon2, jon2_uid) = contact(&ada, "Jon", "Smith", json!({})).await;
    contact(&ada, "Bo", "Ray", json!({})).await;

    let page: Value = ada.get("/api/v1/contacts/duplicates").await.json().await.unwrap();
    assert_eq!(page["total"], 4, "{page}");
    let found = summary(&page);
    let expect = |a: u64, b: u64, reasons: &[&str], confidence: f64| {
        (a, b, reasons.iter().map(|r| r.to_string()).collect::<Vec<_>>(), confidence)
    };
    assert_eq!(
        found,
        vec![
            expect(ann, ann2, &["email", "name"], 0.90),
            expect(ann, anne, &["phone"], 0.75),
            expect(jon, john, &["similar_name_organization"], 0.60),
            expect(jon, jon2, &["name"], 0.50),
        ],
        "{page}"
    );
    assert_eq!(page["pairs"][0]["a"]["fn"], "Ann Lee", "contact summaries: {page}");

    let second: Value = ada.get("/api/v1/contacts/duplicates?page=2&limit=3").await.json().await.unwrap();
    assert_eq!((second["total"].as_u64(), second["pairs"].as_array().unwrap().len()), (Some(4), 1), "{second}");
    let refused = ada.get("/api/v1/contacts/duplicates?limit=0").await;
    assert_eq!(refused.status(), 400);
    assert_eq!(refused.json::<Value>().await.unwrap()["details"]["field"], "limit");

    // Not one person: dismissed for good, twice is fine.
    for _ in 0..2 {
        let dismissed =
            ada.post("/api/v1/contacts/duplicates/dismiss", json!({ "uid_a": jon_uid, "uid_b": jon2_uid })).await;
        assert_eq!(dismissed.status(), 200);
    }
    let page: Value = ada.get("/api/v1/contacts/duplicates").await.json().await.unwrap();
    assert_eq!(page["total"], 3, "{page}");
    assert!(!summary(&page).iter().any(|(a, b, ..)| (*a, *b) == (jon, jon2)));
    let same = ada.post("/api/v1/contacts/duplicates/dismiss", json!({ "uid_a": jon_uid, "uid_b": jon_uid })).await;
    assert_eq!(same.status(), 404);

    // A deleted contact's pairs go with it.
    assert_eq!(ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{ann2}"), json!({})).await.status(), 200);
    let page: Value = ada.get("/api/v1/contacts/duplicates").await.json().await.unwrap();
    assert_eq!(page["total"], 2, "{page}");

    // Another user sees nothing of it and cannot dismiss it.
    let bob = server.sign_up("bob").await;
    let theirs: Value = bob.get("/api/v1/contacts/duplicates").await.json().await.unwrap();
    assert_eq!((theirs["total"].as_u64(), theirs["pairs"].as_array().unwrap().len()), (Some(0), 0));
    let foreign = bob.post("/api/v1/contacts/duplicates/dismiss", json!({ "uid_a": ann_uid, "uid_b": jon_uid })).await;
    assert_eq!(foreign.status(), 404);
    let page: Value = ada.get("/api/v1/contacts/duplicates").await.json().await.unwrap();
    assert_eq!(page["total"], 2, "bob's attempt changed nothing: {page}");
}
