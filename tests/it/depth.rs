//! Life events, gifts and conversation-agenda items.

use serde_json::{Value, json};

use crate::helpers::Instance;

async fn json_of(r: reqwest::Response) -> Value {
    r.json().await.unwrap()
}

#[tokio::test]
async fn life_events_take_partial_dates_and_month_day_events_recur() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let contact = crate::crm::new_contact(&ada, "Lia", "Event").await;
    let uid = contact["uid"].as_str().unwrap().to_string();
    let made = ada.post("/api/v1/life-events", json!({ "entity_id": uid, "type": "married", "category": "family_relationships", "date": { "year": 2015, "month": 6, "day": 20 } })).await;
    assert_eq!(made.status(), 201);
    let event = json_of(made).await["life_event"].clone();
    assert_eq!(event["entity_id"], uid.as_str());
    assert!(event["next_occurrence"].as_str().unwrap().ends_with("-06-20"), "a month-and-day event recurs");
    let year_only = json_of(
        ada.post(
            "/api/v1/life-events",
            json!({ "contact_id": contact["id"], "type": "graduated", "date": { "year": 2010 } }),
        )
        .await,
    )
    .await;
    assert!(year_only["life_event"].get("next_occurrence").is_none(), "a year-only event never recurs");
    for (body, field) in [
        (json!({ "entity_id": uid, "type": "x", "category": "hobbies" }), "category"),
        (json!({ "entity_id": uid, "type": "x", "date": { "month": 13 } }), "date"),
        (json!({ "entity_id": uid, "type": "x", "date": { "day": 3 } }), "date"),
        (json!({ "type": "x" }), "entity_id"),
    ] {
        let response = ada.post("/api/v1/life-events", body.clone()).await;
        assert_eq!(response.status(), 400, "{body}");
        assert_eq!(json_of(response).await["details"]["field"], field, "{body}");
    }
    let listed = json_of(ada.get(&format!("/api/v1/life-events?entity_id={uid}")).await).await;
    let types: Vec<&str> =
        listed["life_events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["married", "graduated"], "newest first by the event's own date");
    let oldest = json_of(ada.get(&format!("/api/v1/life-events?entity_id={uid}&order=asc")).await).await;
    assert_eq!(oldest["life_events"][0]["type"], "graduated");
    for list in ["life-events", "gifts", "conversation-agenda"] {
        let response = ada.get(&format!("/api/v1/{list}?order=sideways")).await;
        assert_eq!(response.status(), 400, "{list}: an order is asc or desc");
        assert_eq!(json_of(response).await["details"]["field"], "order");
    }
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{}/detail", contact["id"])).await).await;
    assert_eq!(detail["life_events"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn gifts_are_ideas_without_a_date_and_values_need_a_currency() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = crate::crm::new_contact(&ada, "Gil", "Gift").await["id"].as_u64().unwrap();
    let idea = json_of(ada.post("/api/v1/gifts", json!({ "contact_id": c, "description": "Sourdough starter" })).await)
        .await["gift"]
        .clone();
    assert_eq!((idea["status"].as_str(), idea["date"].is_null()), (Some("idea"), true));
    let given = ada.post("/api/v1/gifts", json!({ "contact_id": c, "description": "Book", "status": "given", "date": "2026-12-24", "value_cents": 2500, "currency": "eur", "url": "https://example.org/book" })).await;
    assert_eq!(given.status(), 201);
    assert_eq!(json_of(given).await["gift"]["currency"], "EUR");
    let half = ada.post("/api/v1/gifts", json!({ "contact_id": c, "description": "x", "value_cents": 100 })).await;
    assert_eq!(json_of(half).await["details"]["field"], "currency");
    let bad_url =
        ada.post("/api/v1/gifts", json!({ "contact_id": c, "description": "x", "url": "javascript:alert(1)" })).await;
    assert_eq!(json_of(bad_url).await["details"]["field"], "url");
    let gifts = json_of(ada.get(&format!("/api/v1/gifts?contact_id={c}")).await).await["gifts"].clone();
    assert_eq!(gifts.as_array().unwrap().len(), 2);
    let id = idea["id"].as_u64().unwrap();
    let bought = ada
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/gifts/{id}"),
            json!({ "contact_id": c, "description": "Sourdough starter", "status": "purchased" }),
        )
        .await;
    assert_eq!(json_of(bought).await["status"], "purchased");
}

#[tokio::test]
async fn agenda_items_stay_open_until_discussed_and_go_with_their_contact() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let contact = crate::crm::new_contact(&ada, "Aga", "Enda").await;
    let c = contact["id"].as_u64().unwrap();
    let first = json_of(
        ada.post(
            "/api/v1/conversation-agenda",
            json!({ "entity_id": contact["uid"], "content": "Ask about the new job" }),
        )
        .await,
    )
    .await["conversation_agenda"]
        .clone();
    ada.post("/api/v1/conversation-agenda", json!({ "contact_id": c, "content": "Return the drill" })).await;
    let activity = json_of(
        ada.post("/api/v1/activities", json!({ "title": "Coffee", "date": "2026-11-20", "contact_ids": [c] })).await,
    )
    .await["activity"]["id"]
        .clone();
    let id = first["id"].as_u64().unwrap();
    let discussed = json_of(
        ada.send(
            reqwest::Method::PATCH,
            &format!("/api/v1/conversation-agenda/{id}/discuss"),
            json!({ "activity_id": activity }),
        )
        .await,
    )
    .await;
    assert!(discussed["discussed_at"].is_string());
    assert_eq!(discussed["activity_id"], activity);
    let edited = json_of(
        ada.send(
            reqwest::Method::PUT,
            &format!("/api/v1/conversation-agenda/{id}"),
            json!({ "content": "Asked about the new job" }),
        )
        .await,
    )
    .await;
    assert!(edited["discussed_at"].is_string(), "editing the text keeps the discussed state");
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{c}/detail")).await).await;
    let open: Vec<&str> = detail["agenda"].as_array().unwrap().iter().map(|a| a["content"].as_str().unwrap()).collect();
    assert_eq!(open, ["Return the drill"], "the detail shows open items");
    let listed = json_of(ada.get(&format!("/api/v1/conversation-agenda?contact_id={c}")).await).await;
    assert_eq!(listed["conversation_agenda"].as_array().unwrap().len(), 2);
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{c}"), json!({})).await;
    assert_eq!(ada.get(&format!("/api/v1/conversation-agenda/{id}")).await.status(), 404, "deleted with the contact");
    assert_eq!(json_of(ada.get("/api/v1/conversation-agenda").await).await["conversation_agenda"], json!([]));
}

#[tokio::test]
async fn the_timeline_merges_a_contacts_history_newest_first_and_pages() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = crate::crm::new_contact(&ada, "Tim", "Line").await["id"].as_u64().unwrap();
    ada.post(&format!("/api/v1/contacts/{c}/notes"), json!({ "content": "note", "date": "2026-03-01T10:00:00Z" }))
        .await;
    ada.post("/api/v1/activities", json!({ "title": "hike", "date": "2026-05-01T10:00:00Z", "contact_ids": [c] }))
        .await;
    ada.post(
        "/api/v1/gifts",
        json!({ "contact_id": c, "description": "book", "status": "given", "date": "2026-04-01" }),
    )
    .await;
    ada.post("/api/v1/gifts", json!({ "contact_id": c, "description": "idea without date" })).await;
    ada.post("/api/v1/life-events", json!({ "contact_id": c, "type": "moved", "date": { "year": 2026, "month": 2 } }))
        .await;
    let first = json_of(ada.get(&format!("/api/v1/contacts/{c}/timeline?limit=2")).await).await;
    let kinds: Vec<&str> = first["timeline"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["activity", "gift"]);
    let before = first["next_before"].as_str().unwrap();
    let rest = json_of(ada.get(&format!("/api/v1/contacts/{c}/timeline?limit=10&before={before}")).await).await;
    let kinds: Vec<&str> = rest["timeline"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["note", "life_event"], "the undated gift idea is not on the timeline");
    assert_eq!(rest["next_before"], "");

    // Two entries at one instant are never split across pages (the second would be skipped).
    ada.post(&format!("/api/v1/contacts/{c}/notes"), json!({ "content": "same time", "date": "2026-05-01T10:00:00Z" }))
        .await;
    let first = json_of(ada.get(&format!("/api/v1/contacts/{c}/timeline?limit=1")).await).await;
    assert_eq!(first["timeline"].as_array().unwrap().len(), 2, "both 1 May entries: {first}");
    let before = first["next_before"].as_str().unwrap();
    let rest = json_of(ada.get(&format!("/api/v1/contacts/{c}/timeline?limit=10&before={before}")).await).await;
    assert_eq!(rest["timeline"].as_array().unwrap().len(), 3, "gift, note, life event: {rest}");

    // One type only; an unknown type is refused, naming the parameter.
    let notes = json_of(ada.get(&format!("/api/v1/contacts/{c}/timeline?type=note")).await).await;
    let kinds: Vec<&str> = notes["timeline"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["note", "note"]);
    let banana = ada.get(&format!("/api/v1/contacts/{c}/timeline?type=banana")).await;
    assert_eq!(banana.status(), 400);
    let banana = json_of(banana).await;
    assert_eq!((banana["code"].as_str(), banana["details"]["field"].as_str()), (Some("INVALID_INPUT"), Some("type")));
}

#[tokio::test]
async fn the_dashboard_has_every_block_as_an_array() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = crate::crm::new_contact(&ada, "Dash", "Board").await["id"].as_u64().unwrap();
    ada.post(&format!("/api/v1/contacts/{c}/favorite"), json!({})).await;
    ada.post(
        &format!("/api/v1/contacts/{c}/reminders"),
        json!({ "message": "call", "remind_at": "2026-01-01", "recurrence": "once" }),
    )
    .await;
    let dashboard = json_of(ada.get("/api/v1/dashboard").await).await;
    for key in ["birthdays", "random_contacts", "favorites", "upcoming_reminders", "overdue", "reach_out_suggestions"] {
        assert!(dashboard[key].is_array(), "{key}");
    }
    assert_eq!(dashboard["favorites"][0]["id"], c);
    assert_eq!(dashboard["upcoming_reminders"][0]["contact_name"], "Dash Board");
    assert_eq!(dashboard["random_contacts"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn circles_and_tags_are_counted_renamed_and_removed_everywhere_at_once() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    for (name, circles, tags) in [
        ("A", json!(["Climbing", "Work"]), json!(["vegan"])),
        ("B", json!(["Climbing"]), json!(["vegan", "early bird"])),
        ("C", json!([]), json!([])),
    ] {
        let body = json!({ "card": { "name": { "full": name }, "keywords": tags }, "crm": { "circles": circles } });
        assert_eq!(ada.post("/api/v1/contacts", body).await.status(), 201);
    }
    let counts = |list: &serde_json::Value| -> serde_json::Value {
        list.as_array().unwrap().iter().map(|g| json!({ "name": g["name"], "count": g["count"] })).collect()
    };
    let circles = json_of(ada.get("/api/v1/circles").await).await;
    assert_eq!(
        counts(&circles["circles"]),
        json!([{ "name": "Climbing", "count": 2 }, { "name": "Work", "count": 1 }])
    );
    let tags = json_of(ada.get("/api/v1/tags").await).await;
    assert_eq!(counts(&tags["tags"]), json!([{ "name": "early bird", "count": 1 }, { "name": "vegan", "count": 2 }]));
    assert_eq!(json_of(ada.get("/api/v1/contacts?tag=vegan").await).await["total"], 2);
    let first =
        json_of(ada.get("/api/v1/contacts?tag=early%20bird").await).await["contacts"][0]["id"].as_u64().unwrap();
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{first}/detail")).await).await;
    let listed: Vec<_> =
        tags["tags"].as_array().unwrap().iter().map(|t| json!({ "id": t["id"], "name": t["name"] })).collect();
    assert_eq!(detail["tags"], json!(listed), "the detail lists the contact's tags, with their ids");

    let renamed =
        json_of(ada.send(reqwest::Method::PUT, "/api/v1/circles/Climbing", json!({ "name": "Bouldering" })).await)
            .await;
    assert_eq!(renamed["contacts_updated"], 2);
    assert_eq!(json_of(ada.get("/api/v1/contacts?circle=Bouldering").await).await["total"], 2);
    assert_eq!(json_of(ada.get("/api/v1/contacts?circle=Climbing").await).await["total"], 0);
    let removed = json_of(ada.send(reqwest::Method::DELETE, "/api/v1/tags/vegan", json!({})).await).await;
    assert_eq!(removed["contacts_updated"], 2);
    let tags = json_of(ada.get("/api/v1/tags").await).await;
    assert_eq!(counts(&tags["tags"]), json!([{ "name": "early bird", "count": 1 }]));
    assert_eq!(ada.send(reqwest::Method::DELETE, "/api/v1/tags/nonexistent", json!({})).await.status(), 404);
    assert_eq!(ada.send(reqwest::Method::PUT, "/api/v1/circles/Work", json!({ "name": " " })).await.status(), 400);
    let bob = server.sign_up("bob").await;
    assert_eq!(json_of(bob.get("/api/v1/circles").await).await["circles"], json!([]));
    assert_eq!(
        bob.send(reqwest::Method::DELETE, "/api/v1/circles/Work", json!({})).await.status(),
        404,
        "another user's circle is not found"
    );
    assert_eq!(json_of(ada.get("/api/v1/circles").await).await["circles"][1]["name"], "Work", "and stays");
}

async fn favourite_ids(client: &crate::helpers::Client) -> Vec<u64> {
    let dashboard = json_of(client.get("/api/v1/dashboard").await).await;
    dashboard["favorites"].as_array().unwrap().iter().map(|f| f["id"].as_u64().unwrap()).collect()
}

#[tokio::test]
async fn dashboard_favourites_are_the_active_ones_in_name_order() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let mut id = std::collections::HashMap::new();
    for (first, last) in [("Zoe", "Zimmer"), ("Amy", "Adams"), ("Mia", "Moss"), ("Kim", "Kraus"), ("Bob", "Brown")] {
        id.insert(first, crate::crm::new_contact(&ada, first, last).await["id"].as_u64().unwrap());
    }
    for name in ["Zoe", "Amy", "Mia", "Kim"] {
        assert_eq!(ada.post(&format!("/api/v1/contacts/{}/favorite", id[name]), json!({})).await.status(), 200);
    }
    assert_eq!(favourite_ids(&ada).await, [id["Amy"], id["Kim"], id["Mia"], id["Zoe"]], "by name, Bob is no favourite");
    ada.post(&format!("/api/v1/contacts/{}/archive", id["Mia"]), json!({})).await;
    assert_eq!(favourite_ids(&ada).await, [id["Amy"], id["Kim"], id["Zoe"]], "an archived favourite is not shown");
    ada.post(&format!("/api/v1/contacts/{}/unfavorite", id["Kim"]), json!({})).await;
    assert_eq!(favourite_ids(&ada).await, [id["Amy"], id["Zoe"]], "an unfavourited contact disappears");
    ada.post(&format!("/api/v1/contacts/{}/unarchive", id["Mia"]), json!({})).await;
    assert_eq!(favourite_ids(&ada).await, [id["Amy"], id["Mia"], id["Zoe"]], "unarchived, a favourite again");
    let renamed = ada
        .send(
            reqwest::Method::PUT,
            &format!("/api/v1/contacts/{}", id["Zoe"]),
            json!({ "firstname": "Zoe", "lastname": "Aaron" }),
        )
        .await;
    assert_eq!(renamed.status(), 200, "{:?}", renamed.text().await);
    assert_eq!(favourite_ids(&ada).await, [id["Zoe"], id["Amy"], id["Mia"]], "a new name moves it");
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{}", id["Amy"]), json!(null)).await;
    assert_eq!(favourite_ids(&ada).await, [id["Zoe"], id["Mia"]], "a deleted favourite is gone");
    // The same as the contact list's favourites filter by name.
    let listed = json_of(ada.get("/api/v1/contacts?favorites=true&sort=name").await).await;
    let listed: Vec<u64> = listed["contacts"].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert_eq!(favourite_ids(&ada).await, listed);
    // Another user's favourites are not shown.
    let bob = server.sign_up("bob").await;
    assert!(favourite_ids(&bob).await.is_empty());
}

#[tokio::test]
async fn random_contacts_are_distinct_active_and_the_users_own() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let mut mine = Vec::new();
    for i in 0..8 {
        // Interleaved with Bob's: Ada's ids have gaps.
        mine.push(crate::crm::new_contact(&ada, &format!("Ada{i}"), "Own").await["id"].as_u64().unwrap());
        crate::crm::new_contact(&bob, &format!("Bob{i}"), "Other").await;
    }
    for c in &mine[..2] {
        ada.post(&format!("/api/v1/contacts/{c}/archive"), json!({})).await;
    }
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{}", mine[2]), json!(null)).await;
    let random = |body: Value, key: &str| -> Vec<u64> {
        body[key].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect()
    };
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20 {
        let picked = random(json_of(ada.get("/api/v1/contacts/random").await).await, "contacts");
        assert_eq!(picked.len(), 5, "{picked:?}");
        assert_eq!(picked.iter().collect::<std::collections::HashSet<_>>().len(), 5, "distinct: {picked:?}");
        assert!(picked.iter().all(|id| mine[3..].contains(id)), "active and Ada's own: {picked:?}");
        seen.extend(picked);
    }
    assert_eq!(seen.len(), 5, "all five active contacts come up");
    for c in &mine[3..6] {
        ada.post(&format!("/api/v1/contacts/{c}/archive"), json!({})).await;
    }
    let mut picked = random(json_of(ada.get("/api/v1/dashboard").await).await, "random_contacts");
    picked.sort();
    assert_eq!(picked, mine[6..], "fewer active contacts than asked: all of them");
}
