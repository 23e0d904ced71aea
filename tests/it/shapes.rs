//! The wire shapes of the main responses, pinned as reviewed snapshot files
//! (`tests/it/snapshots/`), so a change of shape is a visible diff in review. Ids, uids, entity
//! tags, cursors and instants are redacted: the snapshots hold the keys, the value types and the
//! values a client chose. A new snapshot is written with `INSTA_UPDATE=always`; CI refuses a
//! missing or changed one.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::helpers::{Client, Instance};

/// `value` with everything that differs from run to run replaced by a marker.
fn redacted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, v) in map {
                let v = match key.as_str() {
                    "id" | "ID" | "uid" | "etag" | "next_cursor" | "request_id" | "target" | "source"
                        if !v.is_null() && v != json!("") =>
                    {
                        json!("[id]")
                    }
                    k if (k.ends_with("_id") || k.ends_with("_ids")) && !v.is_null() => marker_of(&v, "[id]"),
                    "photo" | "photo_thumbnail" if v != json!("") => json!("[photo]"),
                    "days_until" | "age" | "overdue" | "overdue_by" | "next_due" | "next_occurrence" => {
                        marker_of(&v, "[today-relative]")
                    }
                    _ => redacted(v),
                };
                out.insert(key, v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(redacted).collect()),
        Value::String(text) if text.parse::<Timestamp>().is_ok() => json!("[instant]"),
        Value::String(text) if text.starts_with("urn:uuid:") || uuid_like(&text) => json!("[uuid]"),
        other => other,
    }
}

fn marker_of(value: &Value, marker: &str) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|_| json!(marker)).collect()),
        _ => json!(marker),
    }
}

fn uuid_like(text: &str) -> bool {
    text.len() == 36 && text.chars().filter(|c| *c == '-').count() == 4
}

async fn body(client: &Client, method: reqwest::Method, path: &str, payload: Option<Value>) -> Value {
    let request = client.request(method, path);
    let request = match payload {
        Some(p) => request.json(&p),
        None => request,
    };
    let response = request.send().await.expect("request");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    redacted(response.json().await.expect("json"))
}

async fn get(client: &Client, path: &str) -> Value {
    body(client, reqwest::Method::GET, path, None).await
}

async fn post(client: &Client, path: &str, payload: Value) -> Value {
    body(client, reqwest::Method::POST, path, Some(payload)).await
}

#[tokio::test]
async fn the_main_response_shapes_stay_as_reviewed() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let created = ada
        .post(
            "/api/v1/contacts",
            json!({
                "firstname": "Grace", "lastname": "Hopper", "email": "grace@example.org", "phone": "+1 555 0100",
                "birthday": "1906-12-09", "org": "US Navy", "crm": { "circles": ["Mentors"] }, "is_favorite": true,
            }),
        )
        .await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let grace = created["contact"]["id"].as_u64().unwrap();
    let ada_lovelace = crate::crm::new_contact(&ada, "Ada", "Lovelace").await["id"].as_u64().unwrap();
    insta::assert_json_snapshot!("contact_created", redacted(created));
    insta::assert_json_snapshot!("contact", get(&ada, &format!("/api/v1/contacts/{grace}")).await);
    insta::assert_json_snapshot!("contact_list", get(&ada, "/api/v1/contacts?sort=name&limit=1").await);

    let note = json!({ "content": "Talked about COBOL", "date": "2026-11-20" });
    insta::assert_json_snapshot!("note_created", post(&ada, &format!("/api/v1/contacts/{grace}/notes"), note).await);
    insta::assert_json_snapshot!("notes_of_contact", get(&ada, &format!("/api/v1/contacts/{grace}/notes")).await);
    let activity =
        json!({ "title": "Lunch", "date": "2026-11-21", "contact_ids": [grace, ada_lovelace], "type": "meal" });
    insta::assert_json_snapshot!("activity_created", post(&ada, "/api/v1/activities", activity).await);
    let reminder = json!({ "message": "Send the paper", "remind_at": "2026-12-01", "recurrence": "yearly" });
    insta::assert_json_snapshot!(
        "reminder_created",
        post(&ada, &format!("/api/v1/contacts/{grace}/reminders"), reminder).await
    );
    let edge = json!({ "target_id": ada_lovelace, "type": "friend" });
    insta::assert_json_snapshot!(
        "relationship_created",
        post(&ada, &format!("/api/v1/contacts/{grace}/relationships"), edge).await
    );
    let policy = json!({ "contact_id": grace, "interval_days": 30 });
    insta::assert_json_snapshot!("cadence_policy_created", post(&ada, "/api/v1/cadence-policies", policy).await);
    let gift = json!({ "contact_id": grace, "description": "A nanosecond of wire", "status": "idea" });
    insta::assert_json_snapshot!("gift_created", post(&ada, "/api/v1/gifts", gift).await);
    insta::assert_json_snapshot!("contact_detail", get(&ada, &format!("/api/v1/contacts/{grace}/detail")).await);
    insta::assert_json_snapshot!("search", get(&ada, "/api/v1/search?q=grace").await);
    insta::assert_json_snapshot!("circles", get(&ada, "/api/v1/circles").await);
}
