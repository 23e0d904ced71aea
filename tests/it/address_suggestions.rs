//! Address suggestions, against the real binary: a spouse's or a household's address offered to
//! the contact that lacks it (once, whichever way it is written), nothing written by the scan,
//! applying one adding it to the card, and nothing of another user's reached.

use serde_json::{Value, json};

use crate::helpers::{Instance, json_of};

#[tokio::test]
async fn close_people_and_households_suggest_the_addresses_a_contact_lacks() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let contact = |body: Value| {
        let ada = &ada;
        async move {
            let made = json_of(ada.post("/api/v1/contacts", body).await, 201).await;
            (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string())
        }
    };
    let (ann, ann_uid) =
        contact(json!({ "firstname": "Ann", "address": "1 Main St, Springfield, IL 62701, US" })).await;
    let (bo, bo_uid) = contact(json!({ "firstname": "Bo" })).await;
    let (cy, cy_uid) = contact(json!({ "firstname": "Cy" })).await;
    let (_, dee_uid) = contact(json!({ "firstname": "Dee", "address": "9 Elm Rd, Shelbyville" })).await;
    let edge = |s: &str, t: &str, kind: &str| json!({ "source_id": s, "target_id": t, "type": kind });
    json_of(ada.post("/api/v1/relationship-edges", edge(&ann_uid, &bo_uid, "spouse_of")).await, 201).await;
    let parent = json_of(ada.post("/api/v1/relationship-edges", edge(&ann_uid, &cy_uid, "parent_of")).await, 201).await;
    let parent = parent["relationship_edge"]["id"].clone();
    // A friend's address is no suggestion, nor is a secret edge's.
    json_of(ada.post("/api/v1/relationship-edges", edge(&dee_uid, &bo_uid, "friend_of")).await, 201).await;
    let secret = json!({ "source_id": dee_uid, "target_id": cy_uid, "type": "sibling_of", "sensitivity": "secret" });
    json_of(ada.post("/api/v1/relationship-edges", secret).await, 201).await;
    // The same address as parts, in a household Bo belongs to: one suggestion for Bo, not two.
    let home = json_of(
        ada.post(
            "/api/v1/households",
            json!({ "name": "The Lees", "type": "family_unit",
                    "address": { "street": "1 Main St.", "city": "Springfield", "region": "IL", "postal_code": "62701", "country": "US" } }),
        )
        .await,
        201,
    )
    .await["household"]["id"]
        .as_u64()
        .unwrap();
    json_of(ada.post(&format!("/api/v1/households/{home}/members"), json!({ "contact_id": bo })).await, 201).await;

    let scan = json_of(ada.post("/api/v1/contacts/address-suggestions", Value::Null).await, 200).await;
    let got: Vec<(&str, &str, &str, Option<&str>)> = scan["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["contact_name"].as_str().unwrap(),
                s["source_kind"].as_str().unwrap(),
                s["source_name"].as_str().unwrap(),
                s["relation_type"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("Bo", "relationship", "Ann", Some("spouse_of")), ("Cy", "relationship", "Ann", Some("parent_of"))],
        "{scan}"
    );
    assert_eq!(scan["total"], 2);
    let for_bo = scan["suggestions"][0].clone();
    assert_eq!(for_bo["contact_vcard_uid"], bo_uid.as_str());
    assert_eq!(for_bo["source_id"], ann_uid.as_str());
    assert_eq!(for_bo["address_key"], "1 main st springfield il 62701 us");
    assert_eq!(
        json_of(ada.get(&format!("/api/v1/contacts/{bo}")).await, 200).await["address"],
        "",
        "a scan writes nothing"
    );

    // Another user reaches none of it.
    let eve = server.sign_up("eve").await;
    assert_eq!(json_of(eve.post("/api/v1/contacts/address-suggestions", Value::Null).await, 200).await["total"], 0);
    let apply = json!({ "contact_vcard_uid": bo_uid, "source_kind": "relationship", "source_id": ann_uid,
                        "address_key": for_bo["address_key"] });
    json_of(eve.post("/api/v1/contacts/address-suggestions/apply", apply.clone()).await, 404).await;
    let blank =
        json!({ "contact_vcard_uid": "", "source_kind": "relationship", "source_id": ann_uid, "address_key": "x" });
    let blank = json_of(ada.post("/api/v1/contacts/address-suggestions/apply", blank).await, 400).await;
    assert_eq!(blank["details"]["field"], "contact_vcard_uid", "{blank}");

    let applied = json_of(ada.post("/api/v1/contacts/address-suggestions/apply", apply.clone()).await, 200).await;
    assert_eq!(
        (applied["message"].as_str(), applied["contact_vcard_uid"].as_str()),
        (Some("Address added to contact"), Some(bo_uid.as_str()))
    );
    let bos = json_of(ada.get(&format!("/api/v1/contacts/{bo}")).await, 200).await;
    assert_eq!(bos["address"], "1 Main St, Springfield, IL 62701, US", "{bos}");
    json_of(ada.post("/api/v1/contacts/address-suggestions/apply", apply).await, 409).await;
    let scan = json_of(ada.post("/api/v1/contacts/address-suggestions", Value::Null).await, 200).await;
    assert_eq!(scan["total"], 1, "Bo has it now, from either source: {scan}");

    // A suggestion that no longer holds is refused: the edge is gone.
    let gone =
        format!("/api/v1/relationship-edges/{}", parent.as_str().map(String::from).unwrap_or(parent.to_string()));
    json_of(ada.send(reqwest::Method::DELETE, &gone, Value::Null).await, 200).await;
    let stale = json!({ "contact_vcard_uid": cy_uid, "source_kind": "relationship", "source_id": ann_uid,
                        "address_key": "1 main st springfield il 62701 us" });
    json_of(ada.post("/api/v1/contacts/address-suggestions/apply", stale).await, 409).await;
    let by_household = json!({ "contact_vcard_uid": cy_uid, "source_kind": "household", "source_id": home.to_string(),
                               "address_key": "1 main st springfield il 62701 us" });
    json_of(ada.post("/api/v1/contacts/address-suggestions/apply", by_household).await, 409).await;
    assert_eq!(json_of(ada.get(&format!("/api/v1/contacts/{cy}")).await, 200).await["address"], "");
    let _ = ann;
}
