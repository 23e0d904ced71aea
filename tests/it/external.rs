//! External identities and activities, against the real binary: a contact's links to other
//! systems (http and https only, one per system's identifier), events from there on the
//! contact's timeline, both following their contact, and nobody else's reached.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Instance, json_of};

#[tokio::test]
async fn identities_and_activities_link_a_contact_to_other_systems_and_reach_its_timeline() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await, 201).await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());

    let identity = |external_id: &str, url: &str| {
        json!({ "entity_id": uid, "system": "immich", "external_id": external_id, "url": url,
                "metadata": { "person_name": "Ann" } })
    };
    for bad in ["javascript:alert(1)", "ftp://example.org/x", "example.org"] {
        let refused = json_of(ada.post("/api/v1/external-identities", identity("p1", bad)).await, 400).await;
        assert_eq!(refused["details"]["field"], "url", "{bad}: {refused}");
    }
    let created = json_of(
        ada.post("/api/v1/external-identities", identity("p1", "https://photos.example.org/people/p1")).await,
        201,
    )
    .await;
    assert_eq!(created["message"], "External identity created");
    let id = created["external_identity"]["id"].as_u64().unwrap();
    assert_eq!(created["external_identity"]["entity_id"], uid.as_str());
    assert_eq!(created["external_identity"]["sync_status"], "idle");
    assert_eq!(created["external_identity"]["metadata"]["person_name"], "Ann");
    let twice = json_of(ada.post("/api/v1/external-identities", identity("p1", "")).await, 409).await;
    assert_eq!(
        (twice["code"].as_str(), twice["details"]["field"].as_str()),
        (Some("ALREADY_EXISTS"), Some("external_id"))
    );
    let paper = json!({ "contact_id": ann, "system": "paperless", "external_id": "42" });
    json_of(ada.post("/api/v1/external-identities", paper).await, 201).await;

    let mine =
        json_of(ada.get(&format!("/api/v1/external-identities?contact_id={uid}&system=immich")).await, 200).await;
    assert_eq!((mine["total"].as_u64(), mine["sync"]["mode"].as_str()), (Some(1), Some("full_resync")), "{mine}");
    assert_eq!(json_of(ada.get("/api/v1/external-identities").await, 200).await["total"], 2);
    // A replacement without a status keeps it; without a URL it has none.
    let synced = json!({ "entity_id": uid, "system": "immich", "external_id": "p1", "sync_status": "synced" });
    json_of(ada.send(Method::PUT, &format!("/api/v1/external-identities/{id}"), synced).await, 200).await;
    let again = json!({ "entity_id": uid, "system": "immich", "external_id": "p1" });
    let replaced = json_of(ada.send(Method::PUT, &format!("/api/v1/external-identities/{id}"), again).await, 200).await;
    assert_eq!(replaced["sync_status"], "synced");
    assert!(replaced.get("url").is_none(), "{replaced}");

    let photo = json!({ "entity_id": uid, "source_system": "immich", "external_id": "asset-1", "type": "photo-appearance",
                        "occurred_at": "2026-06-01T10:00:00Z", "payload": { "asset_id": "asset-1" } });
    let made = json_of(ada.post("/api/v1/external-activities", photo.clone()).await, 201).await;
    let activity = made["external_activity"]["id"].as_u64().unwrap();
    assert_eq!(
        (made["external_activity"]["provenance"].as_str(), made["external_activity"]["sync_state"].as_str()),
        (Some("external"), Some("synced"))
    );
    json_of(ada.post("/api/v1/external-activities", photo.clone()).await, 409).await;
    // One photo shows several people: each their own appearance.
    let bo =
        json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Bo" })).await, 201).await["contact"]["id"].clone();
    let mut with_bo = photo;
    with_bo["entity_id"] = Value::Null;
    with_bo["contact_id"] = bo;
    json_of(ada.post("/api/v1/external-activities", with_bo).await, 201).await;
    let late = json!({ "entity_id": uid, "source_system": "immich", "external_id": "asset-2", "type": "photo-appearance", "occurred_at": "yesterday" });
    let bad = json_of(ada.post("/api/v1/external-activities", late).await, 400).await;
    assert_eq!(bad["details"]["field"], "occurred_at");

    let timeline =
        json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?type=external_activity")).await, 200).await;
    assert_eq!(timeline["items"].as_array().unwrap().len(), 1, "{timeline}");
    assert_eq!(timeline["items"][0]["type"], "external_activity");
    assert_eq!(timeline["items"][0]["id"], activity.to_string());
    assert_eq!(timeline["items"][0]["data"]["source_system"], "immich");
    assert_eq!(timeline["timeline"][0]["type"], "external_activity");

    // Nobody else reaches them.
    let bob = server.sign_up("bob").await;
    assert_eq!(json_of(bob.get("/api/v1/external-identities").await, 200).await["total"], 0);
    json_of(bob.get(&format!("/api/v1/external-identities/{id}")).await, 404).await;
    json_of(bob.get(&format!("/api/v1/external-activities/{activity}")).await, 404).await;
    json_of(bob.send(Method::DELETE, &format!("/api/v1/external-identities/{id}"), Value::Null).await, 404).await;
    let onto = json!({ "entity_id": uid, "system": "immich", "external_id": "p9" });
    json_of(bob.post("/api/v1/external-identities", onto).await, 404).await;
    json_of(bob.get(&format!("/api/v1/external-activities?contact_id={uid}")).await, 404).await;

    let deleted =
        json_of(ada.send(Method::DELETE, &format!("/api/v1/external-activities/{activity}"), Value::Null).await, 200)
            .await;
    assert_eq!(deleted["message"], "External activity deleted");
    // They follow their contact: deleting it takes them along.
    json_of(ada.send(Method::DELETE, &format!("/api/v1/contacts/{ann}"), Value::Null).await, 200).await;
    assert_eq!(json_of(ada.get("/api/v1/external-identities").await, 200).await["total"], 0);
}
