//! The wire shapes of the main responses, pinned as reviewed snapshot files
//! (`tests/it/snapshots/`), so a change of shape is a visible diff in review. Ids, uids, entity
//! tags, cursors and instants are redacted: the snapshots hold the keys, the value types and the
//! values a client chose. A new snapshot is written with `INSTA_UPDATE=always`; CI refuses a
//! missing or changed one.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::helpers::{Client, Instance, PASSWORD};

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
                    "address_hash" | "member_hash" => json!("[hash]"),
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

/// A conditional write that matches any revision (`If-Match: *`).
async fn write_any(client: &Client, method: reqwest::Method, path: &str, payload: Value) -> Value {
    let response = client.request(method, path).header("if-match", "*").json(&payload).send().await.expect("request");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    redacted(response.json().await.expect("json"))
}

/// The `id` under `key` of a created record.
async fn id_of(response: impl std::future::Future<Output = reqwest::Response>, key: &str) -> u64 {
    let response = response.await;
    let status = response.status();
    let body = response.json::<Value>().await.expect("json");
    assert!(status.is_success(), "{status} {body}");
    body[key]["id"].as_u64().expect("id")
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

#[tokio::test]
async fn the_life_event_gift_and_agenda_shapes_stay_as_reviewed() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let grace = crate::crm::new_contact(&ada, "Grace", "Hopper").await["id"].as_u64().unwrap();
    let other = crate::crm::new_contact(&ada, "Ada", "Lovelace").await["uid"].as_str().unwrap().to_string();

    let married = json!({ "contact_id": grace, "type": "married", "category": "family_relationships",
        "date": { "year": 2015, "month": 6, "day": 20 }, "description": "In June", "related_entity_ids": [other], "remind": true });
    let created = post(&ada, "/api/v1/life-events", married).await;
    insta::assert_json_snapshot!("life_event_created", created);
    let year_only = json!({ "contact_id": grace, "type": "graduated", "date": { "year": 1934 } });
    let year_only = post(&ada, "/api/v1/life-events", year_only).await;
    insta::assert_json_snapshot!("life_event_without_next_occurrence", year_only);
    let moved = json!({ "contact_id": grace, "type": "moved", "date": { "month": 3, "day": 1 } });
    let id = id_of(ada.post("/api/v1/life-events", moved), "life_event").await;
    insta::assert_json_snapshot!("life_event", get(&ada, &format!("/api/v1/life-events/{id}")).await);
    insta::assert_json_snapshot!("life_events", get(&ada, &format!("/api/v1/life-events?contact_id={grace}")).await);
    insta::assert_json_snapshot!("life_events_all_paged", get(&ada, "/api/v1/life-events?limit=1").await);

    let valued = json!({ "contact_id": grace, "description": "A compiler", "status": "given", "occasion": "birthday",
        "url": "https://example.org/a", "notes": "wrapped", "date": "2026-12-09", "value_cents": 2500, "currency": "eur" });
    insta::assert_json_snapshot!("gift_with_value_created", post(&ada, "/api/v1/gifts", valued).await);
    let idea = json!({ "contact_id": grace, "description": "A nanosecond of wire" });
    let idea = id_of(ada.post("/api/v1/gifts", idea), "gift").await;
    insta::assert_json_snapshot!("gift_without_value", get(&ada, &format!("/api/v1/gifts/{idea}")).await);
    insta::assert_json_snapshot!("gifts", get(&ada, &format!("/api/v1/gifts?contact_id={grace}")).await);

    let item =
        json!({ "contact_id": grace, "content": "Ask about the bug", "reference_url": "https://example.org/moth" });
    let open = post(&ada, "/api/v1/conversation-agenda", item).await;
    insta::assert_json_snapshot!("agenda_item_created", open);
    let second = json!({ "contact_id": grace, "content": "COBOL" });
    let second = id_of(ada.post("/api/v1/conversation-agenda", second), "conversation_agenda").await;
    let call = json!({ "title": "Call", "date": "2026-11-21", "contact_ids": [grace] });
    let call = id_of(ada.post("/api/v1/activities", call), "activity").await;
    let discussed = body(
        &ada,
        reqwest::Method::PATCH,
        &format!("/api/v1/conversation-agenda/{second}/discuss"),
        Some(json!({ "activity_id": call })),
    )
    .await;
    insta::assert_json_snapshot!("agenda_item_discussed", discussed);
    insta::assert_json_snapshot!(
        "conversation_agenda",
        get(&ada, &format!("/api/v1/conversation-agenda?contact_id={grace}")).await
    );
}

#[tokio::test]
async fn the_household_shapes_stay_as_reviewed() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let contact = |body: Value| id_of(ada.post("/api/v1/contacts", body), "contact");
    let lovelace =
        contact(json!({ "firstname": "Ada", "lastname": "Lovelace", "address": "1 Main St, Springfield" })).await;
    let byron = contact(json!({ "firstname": "Anne", "lastname": "Byron", "address": "1 main st, SPRINGFIELD" })).await;
    let king = contact(json!({ "firstname": "William", "lastname": "King", "address": "9 Elm Rd, Shelbyville" })).await;

    let addressed = json!({ "name": "The Kings", "type": "family_unit", "notes": "Sunday lunch",
        "address": { "street": "1 Ockham Park", "city": "Ripley", "region": "Surrey", "postal_code": "GU23", "country": "GB" } });
    let created = post(&ada, "/api/v1/households", addressed).await;
    insta::assert_json_snapshot!("household_created", created);
    let free_text = json!({ "name": "Somewhere", "address": { "full": "The big house on the hill" } });
    insta::assert_json_snapshot!("household_with_free_text_address", post(&ada, "/api/v1/households", free_text).await);
    let bare = id_of(ada.post("/api/v1/households", json!({ "name": "Springfield" })), "household").await;
    let member = json!({ "contact_id": lovelace, "role": "adult", "since": "1835-07", "until": "" });
    insta::assert_json_snapshot!(
        "member_added",
        post(&ada, &format!("/api/v1/households/{bare}/members"), member).await
    );
    let members = format!("/api/v1/households/{bare}/members");
    let byron = id_of(ada.post(&members, json!({ "contact_id": byron })), "member").await;
    ada.post(&format!("/api/v1/households/{bare}/members"), json!({ "contact_id": king, "role": "adult" })).await;
    let edit = json!({ "role": "parent" });
    let path = format!("/api/v1/households/{bare}/members/{byron}");
    let edited = write_any(&ada, reqwest::Method::PATCH, &path, edit).await;
    insta::assert_json_snapshot!("member_updated", edited);
    insta::assert_json_snapshot!("household_with_members", get(&ada, &format!("/api/v1/households/{bare}")).await);
    insta::assert_json_snapshot!("members", get(&ada, &format!("/api/v1/households/{bare}/members")).await);
    let replaced = json!({ "name": "Springfield", "type": "other" });
    let replaced = write_any(&ada, reqwest::Method::PUT, &format!("/api/v1/households/{bare}"), replaced).await;
    insta::assert_json_snapshot!("household_updated", replaced);
    insta::assert_json_snapshot!("households", get(&ada, "/api/v1/households?limit=2").await);
    insta::assert_json_snapshot!(
        "households_with_members",
        get(&ada, &format!("/api/v1/households?include_members=true&contact_id={lovelace}")).await
    );

    insta::assert_json_snapshot!("household_suggestions", get(&ada, "/api/v1/households/suggestions").await);
    insta::assert_json_snapshot!(
        "household_suggestions_of_one",
        get(&ada, &format!("/api/v1/households/{bare}/suggestions")).await
    );
    let suggested = ada.post("/api/v1/households/suggest-addresses", json!({})).await;
    assert!(suggested.status().is_success());
    let suggested: Value = suggested.json().await.unwrap();
    let first = &suggested["suggestions"][0];
    let dismissal = json!({ "address_hash": first["address_hash"], "member_hash": first["member_hash"] });
    insta::assert_json_snapshot!("address_suggestions", redacted(suggested.clone()));
    let dismissed = post(&ada, "/api/v1/households/suggestions/dismiss", dismissal).await;
    insta::assert_json_snapshot!("suggestion_dismissed", dismissed);
    insta::assert_json_snapshot!(
        "household_suggestions_after_dismissal",
        get(&ada, "/api/v1/households/suggestions").await
    );
}

#[tokio::test]
async fn the_relationship_and_graph_shapes_stay_as_reviewed() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let grace = crate::crm::new_contact(&ada, "Grace", "Hopper").await["id"].as_u64().unwrap();
    let lovelace = crate::crm::new_contact(&ada, "Ada", "Lovelace").await["id"].as_u64().unwrap();
    let babbage = crate::crm::new_contact(&ada, "Charles", "Babbage").await["id"].as_u64().unwrap();

    let custom =
        json!({ "target_id": lovelace, "type": "co-conspirator", "sensitivity": "private", "note": "Since 1843" });
    let edges = format!("/api/v1/contacts/{grace}/relationships");
    insta::assert_json_snapshot!("relationship_custom_created", post(&ada, &edges, custom).await);
    let rid = id_of_edge(ada.post(&edges, json!({ "target_id": babbage, "type": "sister" }))).await;
    ada.post(&format!("/api/v1/contacts/{babbage}/relationships"), json!({ "target_id": grace, "type": "friend" }))
        .await;
    insta::assert_json_snapshot!("relationships_outgoing", get(&ada, &edges).await);
    insta::assert_json_snapshot!(
        "relationships_incoming",
        get(&ada, &format!("/api/v1/contacts/{grace}/incoming-relationships")).await
    );
    let replaced = json!({ "target_id": babbage, "type": "colleague", "note": "Engines" });
    let updated = body(&ada, reqwest::Method::PUT, &format!("{edges}/{rid}"), Some(replaced)).await;
    insta::assert_json_snapshot!("relationship_updated", updated);
    insta::assert_json_snapshot!(
        "contact_detail_edges",
        get(&ada, &format!("/api/v1/contacts/{grace}/detail")).await["relationship_edges"].clone()
    );

    let meeting =
        json!({ "title": "Analytical Engine demo", "date": "2026-11-21", "contact_ids": [grace, lovelace, babbage] });
    ada.post("/api/v1/activities", meeting).await;
    let alone = json!({ "title": "Solo walk", "date": "2026-11-22", "contact_ids": [grace] });
    ada.post("/api/v1/activities", alone).await;
    insta::assert_json_snapshot!("graph", get(&ada, "/api/v1/graph").await);
}

/// The `id` of a created edge (the body is the edge itself).
async fn id_of_edge(response: impl std::future::Future<Output = reqwest::Response>) -> u64 {
    let response = response.await;
    assert!(response.status().is_success(), "{}", response.status());
    response.json::<Value>().await.expect("json")["id"].as_u64().expect("id")
}

#[tokio::test]
async fn the_reach_out_suggestion_shapes_stay_as_reviewed() {
    use mycorrhizal_engine::system::{JobResult, Trigger};

    let app = crate::sessions::in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let call = |method: &'static str, path: String, payload: Value| {
        let (app, cookie) = (&app, cookie.clone());
        async move {
            let (status, body, _) = app.call(method, &path, Some(&cookie), payload).await;
            assert!((200..300).contains(&status), "{method} {path}: {status} {body}");
            body
        }
    };
    let contact = |payload: Value| {
        let call = &call;
        async move { call("POST", "/api/v1/contacts".into(), payload).await["contact"]["id"].as_u64().unwrap() }
    };
    let ada = contact(json!({ "firstname": "Ada" })).await;
    let bob = contact(json!({ "firstname": "Bob" })).await;
    let lin = contact(json!({ "firstname": "Lin", "org": "Acme" })).await;
    for c in [ada, bob] {
        call("POST", "/api/v1/cadence-policies".into(), json!({ "contact_id": c, "interval_days": 7 })).await;
    }
    let coffee = json!({ "title": "Coffee", "date": "2026-02-01T10:00:00Z", "contact_ids": [ada] });
    call("POST", "/api/v1/activities".into(), coffee).await;
    let call_bob = json!({ "title": "Call", "date": "2026-02-10T10:00:00Z", "contact_ids": [bob], "type": "call" });
    call("POST", "/api/v1/activities".into(), call_bob).await;
    call("PUT", format!("/api/v1/contacts/{lin}"), json!({ "firstname": "Lin", "org": "Mycelium Ltd" })).await;
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::REACH_OUT, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);

    let list = call("GET", "/api/v1/reach-out-suggestions".into(), json!({})).await;
    let of = |contact: u64| {
        list["suggestions"].as_array().unwrap().iter().find(|s| s["contact_id"] == contact).expect(&list.to_string())["id"]
            .as_u64()
            .unwrap()
    };
    let (ada_s, bob_s, lin_s) = (of(ada), of(bob), of(lin));
    insta::assert_json_snapshot!("reach_out_suggestions", redacted(list.clone()));
    let accepted = call("POST", format!("/api/v1/reach-out-suggestions/{ada_s}/accept"), json!({})).await;
    insta::assert_json_snapshot!("reach_out_suggestion_accepted", redacted(accepted));
    let news = json!({ "remind_at": "2026-03-05", "message": "Congratulate Lin" });
    let accepted = call("POST", format!("/api/v1/reach-out-suggestions/{lin_s}/accept"), news).await;
    insta::assert_json_snapshot!("reach_out_field_change_accepted", redacted(accepted));
    let dismissed = call("POST", format!("/api/v1/reach-out-suggestions/{bob_s}/dismiss"), json!({})).await;
    insta::assert_json_snapshot!("reach_out_suggestion_dismissed", redacted(dismissed));
    let all = call("GET", "/api/v1/reach-out-suggestions?status=all".into(), json!({})).await;
    insta::assert_json_snapshot!("reach_out_suggestions_all", redacted(all));
}

/// Search results (every kind of hit: a contact matched in a field, one found through the
/// relation the query names, a note, an activity; a query too short to run) and a contact's
/// timeline (every kind of entry, paged and filtered).
#[tokio::test]
async fn the_search_and_timeline_shapes_stay_as_reviewed() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let hopper = json!({ "firstname": "Grace", "lastname": "Hopper", "email": "grace@example.org", "org": "US Navy" });
    let grace = id_of(ada.post("/api/v1/contacts", hopper), "contact").await;
    let mary = crate::crm::new_contact(&ada, "Mary", "Murray").await["id"].as_u64().expect("id");
    let edge = json!({ "target_id": mary, "type": "sister" });
    post(&ada, &format!("/api/v1/contacts/{grace}/relationships"), edge).await;
    let note = json!({ "content": "Talked about COBOL compilers", "date": "2026-11-20" });
    post(&ada, &format!("/api/v1/contacts/{grace}/notes"), note).await;
    let lunch = json!({ "title": "Compiler lunch", "description": "COBOL again", "location": "Arlington",
        "date": "2026-11-21", "contact_ids": [grace], "type": "meal" });
    post(&ada, "/api/v1/activities", lunch).await;
    let reminder = json!({ "message": "Send the paper", "remind_at": "2026-12-01", "recurrence": "once" });
    let reminder = id_of(ada.post(&format!("/api/v1/contacts/{grace}/reminders"), reminder), "reminder").await;
    post(&ada, &format!("/api/v1/reminders/{reminder}/complete"), json!({})).await;
    let gift =
        json!({ "contact_id": grace, "description": "A nanosecond of wire", "status": "given", "date": "2026-11-22" });
    post(&ada, "/api/v1/gifts", gift).await;
    let graduated = json!({ "contact_id": grace, "type": "graduated", "date": { "year": 1934, "month": 6 }, "description": "Yale" });
    post(&ada, "/api/v1/life-events", graduated).await;

    insta::assert_json_snapshot!("search_note_and_activity_hits", get(&ada, "/api/v1/search?q=cobol").await);
    insta::assert_json_snapshot!("search_resolved_relation", get(&ada, "/api/v1/search?q=sister").await);
    insta::assert_json_snapshot!("search_too_short", get(&ada, "/api/v1/search?q=g").await);
    insta::assert_json_snapshot!("search_second_page", get(&ada, "/api/v1/search?q=grace&limit=1&offset=1").await);

    insta::assert_json_snapshot!("timeline", get(&ada, &format!("/api/v1/contacts/{grace}/timeline")).await);
    insta::assert_json_snapshot!(
        "timeline_paged",
        get(&ada, &format!("/api/v1/contacts/{grace}/timeline?limit=2")).await
    );
    insta::assert_json_snapshot!(
        "timeline_of_one_type",
        get(&ada, &format!("/api/v1/contacts/{grace}/timeline?type=life_event")).await
    );
}

/// `value` redacted, with the secrets an account response shows once (tokens, TOTP secrets and
/// their URLs, recovery codes) replaced by a marker.
fn secrets_redacted(value: Value) -> Value {
    match redacted(value) {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, v)| match key.as_str() {
                    "token" | "secret" | "otpauth_url" => (key, json!("[secret]")),
                    "recovery_codes" => (key, marker_of(&v, "[secret]")),
                    _ => (key, v),
                })
                .collect(),
        ),
        other => other,
    }
}

async fn status_and_body(response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status(), status, "{}", response.url());
    secrets_redacted(response.json().await.expect("json"))
}

/// The account, token and admin responses.
#[tokio::test]
async fn the_account_token_and_admin_shapes_stay_as_reviewed() {
    let server = Instance::new().spawn();
    insta::assert_json_snapshot!("registered", status_and_body(server.register("ada", PASSWORD).await, 201).await);
    insta::assert_json_snapshot!("signed_in", status_and_body(server.login("ada", PASSWORD).await, 200).await);
    let ada = server.sign_in("ada", PASSWORD).await;
    let bob = server.sign_up("bob").await;
    let reset = server.post("/api/v1/password-reset/request", json!({ "email": "nobody@example.org" })).await;
    insta::assert_json_snapshot!("password_reset_requested", status_and_body(reset, 200).await);

    let language = ada.send(reqwest::Method::PATCH, "/api/v1/users/language", json!({ "language": "de" })).await;
    insta::assert_json_snapshot!("language_updated", status_and_body(language, 200).await);
    let format = json!({ "date_format": "iso" });
    let format = ada.send(reqwest::Method::PATCH, "/api/v1/users/date-format", format).await;
    insta::assert_json_snapshot!("date_format_updated", status_and_body(format, 200).await);
    insta::assert_json_snapshot!(
        "two_factor_status",
        status_and_body(ada.get("/api/v1/users/2fa/status").await, 200).await
    );
    let setup = bob.post("/api/v1/users/2fa/setup", json!({})).await;
    insta::assert_json_snapshot!("two_factor_setup", status_and_body(setup, 200).await);
    let (secret, _) = crate::twofactor::enrol(&ada).await;
    // A code of the next step: the one enrolment used may not be used again.
    let code = crate::twofactor::code(&secret, crate::twofactor::now() + 30);
    let regenerated = ada.post("/api/v1/users/2fa/recovery-codes/regenerate", json!({ "code": code })).await;
    insta::assert_json_snapshot!("recovery_codes_regenerated", status_and_body(regenerated, 200).await);

    let grant = ada.post("/api/v1/auth/device/grants", json!({ "label": "Phone" })).await;
    insta::assert_json_snapshot!("device_grant_created", status_and_body(grant, 201).await);
    let token = ada.post("/api/v1/api-tokens", json!({ "name": "script" })).await;
    let token = status_and_body(token, 201).await;
    insta::assert_json_snapshot!("api_token_created", token);
    insta::assert_json_snapshot!("api_tokens", status_and_body(ada.get("/api/v1/api-tokens").await, 200).await);
    let id = ada.get("/api/v1/api-tokens").await.json::<Value>().await.expect("json")["tokens"][0]["id"]
        .as_u64()
        .expect("token id");
    let revoked =
        ada.request(reqwest::Method::DELETE, &format!("/api/v1/api-tokens/{id}")).send().await.expect("request");
    insta::assert_json_snapshot!("api_token_revoked", status_and_body(revoked, 200).await);
    let all = bob.post("/api/v1/api-tokens/revoke-all", json!({})).await;
    insta::assert_json_snapshot!("api_tokens_revoked", status_and_body(all, 200).await);

    insta::assert_json_snapshot!(
        "admin_users",
        status_and_body(ada.get("/api/v1/admin/users?limit=1").await, 200).await
    );
    let reset = ada.post(&format!("/api/v1/admin/users/{}/reset-2fa", bob.id), json!({})).await;
    insta::assert_json_snapshot!("admin_two_factor_reset", status_and_body(reset, 200).await);
    let derived = ada.post("/api/v1/admin/contacts/rebuild-derived", json!({})).await;
    insta::assert_json_snapshot!("admin_derived_rebuilt", status_and_body(derived, 200).await);
    let rebuilt = ada.post("/api/v1/admin/search/rebuild", json!({})).await;
    insta::assert_json_snapshot!("admin_search_rebuilt", status_and_body(rebuilt, 200).await);
    let deleted =
        ada.request(reqwest::Method::DELETE, &format!("/api/v1/admin/users/{}", bob.id)).send().await.expect("request");
    insta::assert_json_snapshot!("admin_user_deleted", status_and_body(deleted, 200).await);
    let out = ada.post("/api/v1/logout", json!({})).await;
    insta::assert_json_snapshot!("signed_out", status_and_body(out, 200).await);
}
