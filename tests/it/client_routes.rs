//! Routes the existing web and Android clients call, against the real binary: the audit trail
//! newest first with its filters, and the directory of the other users.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Instance, json_of};

#[tokio::test]
async fn the_audit_trail_reads_newest_first_filtered_and_only_ones_own() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await, 201).await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());
    json_of(ada.send(Method::PUT, &format!("/api/v1/contacts/{ann}"), json!({ "firstname": "Anne" })).await, 200).await;
    json_of(ada.post(&format!("/api/v1/contacts/{ann}/notes"), json!({ "content": "met at the lake" })).await, 201)
        .await;

    let all = json_of(ada.get("/api/v1/audit").await, 200).await;
    let ops: Vec<(&str, &str)> = all["audit_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["entity_type"].as_str().unwrap(), e["operation"].as_str().unwrap()))
        .collect();
    assert_eq!(&ops[..3], [("note", "create"), ("contact", "update"), ("contact", "create")], "newest first: {all}");
    assert_eq!(all["total"], all["audit_events"].as_array().unwrap().len());
    let update = &all["audit_events"][1];
    assert_eq!(update["entity_id"], uid.as_str(), "a live contact is named by its UID");
    let before: Value = serde_json::from_str(update["before_snapshot"].as_str().unwrap()).unwrap();
    assert!(before.to_string().contains("Ann"), "{before}");
    assert!(all["audit_events"][2].get("before_snapshot").is_none(), "a create has no before");

    let of_contact = json_of(ada.get(&format!("/api/v1/audit?entity_type=contact&entity_id={uid}")).await, 200).await;
    assert_eq!(of_contact["total"], 2);
    assert_eq!(json_of(ada.get(&format!("/api/v1/audit?entity_id={ann}&limit=1")).await, 200).await["total"], 1);
    assert_eq!(
        json_of(ada.get("/api/v1/audit?limit=9999").await, 200).await["total"],
        all["total"],
        "out of range: 100"
    );
    // The undo the Android client offers on a contact update.
    let id = update["id"].as_u64().unwrap();
    json_of(ada.send(Method::POST, &format!("/api/v1/audit/{id}/undo"), Value::Null).await, 200).await;
    assert_eq!(json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await["firstname"], "Ann");

    let bob = server.sign_up("bob").await;
    let theirs = json_of(bob.get("/api/v1/audit").await, 200).await;
    assert!(!theirs.to_string().contains(&uid), "{theirs}");
    assert_eq!(json_of(bob.get(&format!("/api/v1/audit?entity_id={ann}")).await, 200).await["total"], 0);
}

#[tokio::test]
async fn the_directory_lists_every_other_user_by_name() {
    let server = Instance::new().spawn();
    let carol = server.sign_up("carol").await;
    let ada = server.sign_up("ada").await;
    server.sign_up("bob").await;
    let listed = json_of(carol.get("/api/v1/users/directory").await, 200).await;
    let names: Vec<&str> =
        listed["users"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap()).collect();
    assert_eq!(names, ["ada", "bob"]);
    assert!(listed["users"][0]["id"].as_u64().is_some());
    let listed = json_of(ada.get("/api/v1/users/directory").await, 200).await;
    let names: Vec<&str> =
        listed["users"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap()).collect();
    assert_eq!(names, ["bob", "carol"]);
}

#[tokio::test]
async fn the_clients_choice_of_contact_fields_is_kept_per_user() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let path = "/api/v1/users/enabled-contact-fields";
    assert_eq!(json_of(ada.get(path).await, 200).await, json!({ "enabled_contact_fields": null }));
    let set =
        json_of(ada.send(Method::PATCH, path, json!({ "fields": ["emails", "phones", "birthday"] })).await, 200).await;
    assert_eq!(set["enabled_contact_fields"], json!(["emails", "phones", "birthday"]));
    assert_eq!(
        json_of(ada.get(path).await, 200).await["enabled_contact_fields"],
        json!(["emails", "phones", "birthday"])
    );
    assert_eq!(json_of(bob.get(path).await, 200).await["enabled_contact_fields"], Value::Null, "per user");
    let refused =
        json_of(ada.send(Method::PATCH, path, json!({ "fields": ["emails", "x".repeat(51)] })).await, 400).await;
    assert_eq!(refused["details"]["field"], "fields[1]");
    let made = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await, 201).await;
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{}/detail", made["contact"]["id"])).await, 200).await;
    assert_eq!(detail["user"]["enabled_contact_fields"], json!(["emails", "phones", "birthday"]));
    json_of(ada.send(Method::PATCH, path, json!({ "fields": null })).await, 200).await;
    assert_eq!(json_of(ada.get(path).await, 200).await["enabled_contact_fields"], Value::Null, "reset");
}

#[tokio::test]
async fn link_types_start_with_the_defaults_and_keep_the_users_order() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let list = json_of(ada.get("/api/v1/link-field-types").await, 200).await;
    let types = list["link_field_types"].as_array().unwrap();
    assert_eq!(types.len(), 19, "{list}");
    assert_eq!((types[0]["name"].as_str(), types[0]["category"].as_str()), (Some("Signal"), Some("messaging")));
    assert_eq!(types[3]["protocol"], "https://t.me/{value}");
    assert!(types.iter().all(|t| t["is_default"] == true));
    assert_eq!(
        json_of(ada.get("/api/v1/link-field-types").await, 200).await["link_field_types"].as_array().unwrap().len(),
        19,
        "seeded once"
    );

    let body =
        json!({ "name": "Mastodon", "protocol": "https://{value}", "category": "social", "icon": "mdiMastodon" });
    let made = json_of(ada.post("/api/v1/link-field-types", body.clone()).await, 201).await["link_field_type"].clone();
    assert_eq!((made["is_default"].as_bool(), made["position"].as_u64()), (Some(false), Some(19)));
    json_of(ada.post("/api/v1/link-field-types", body).await, 409).await;
    let bad = json!({ "name": "Evil", "protocol": " javascript:alert(1)", "category": "social" });
    assert_eq!(json_of(ada.post("/api/v1/link-field-types", bad).await, 400).await["details"]["field"], "protocol");
    let bad = json!({ "name": "Odd", "category": "news" });
    assert_eq!(json_of(ada.post("/api/v1/link-field-types", bad).await, 400).await["details"]["field"], "category");
    let id = made["id"].as_u64().unwrap();
    let edited =
        json!({ "name": "Mastodon (home)", "protocol": "https://social.example/@{value}", "category": "social" });
    let replaced = json_of(ada.send(Method::PUT, &format!("/api/v1/link-field-types/{id}"), edited).await, 200).await;
    assert_eq!((replaced["name"].as_str(), replaced["position"].as_u64()), (Some("Mastodon (home)"), Some(19)));
    assert!(replaced.get("icon").is_none(), "an omitted icon is cleared");

    let mut ids: Vec<u64> = json_of(ada.get("/api/v1/link-field-types").await, 200).await["link_field_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    ids.reverse();
    let reordered =
        json_of(ada.send(Method::PUT, "/api/v1/link-field-types/reorder", json!({ "order": ids })).await, 200).await;
    assert_eq!(reordered["link_field_types"][0]["name"], "Slack", "messaging first, then by the new positions");
    let partial = json!({ "order": &ids[1..] });
    assert_eq!(
        json_of(ada.send(Method::PUT, "/api/v1/link-field-types/reorder", partial).await, 400).await["details"]["field"],
        "order"
    );

    let bob = server.sign_up("bob").await;
    json_of(bob.get(&format!("/api/v1/link-field-types/{id}")).await, 404).await;
    json_of(bob.send(Method::DELETE, &format!("/api/v1/link-field-types/{id}"), json!({})).await, 404).await;
    assert_eq!(
        json_of(bob.get("/api/v1/link-field-types").await, 200).await["link_field_types"].as_array().unwrap().len(),
        19
    );
    json_of(ada.send(Method::DELETE, &format!("/api/v1/link-field-types/{id}"), json!({})).await, 200).await;
    json_of(ada.get(&format!("/api/v1/link-field-types/{id}")).await, 404).await;
}

#[tokio::test]
async fn the_clients_notification_form_reads_and_sets_the_channels() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let config = json_of(ada.get("/api/v1/notifications/config").await, 200).await;
    assert_eq!((config["ntfy_url"].as_str(), config["notify_ntfy"].as_bool()), (Some(""), Some(false)));
    assert!(config["vapid_public_key"].as_str().is_some_and(|k| k.len() > 40), "{config}");

    let set = json!({ "ntfy_url": "http://127.0.0.1:9/", "ntfy_topic": "crm-alerts", "notify_ntfy": true });
    let config = json_of(ada.send(Method::PUT, "/api/v1/notifications/config", set).await, 200).await;
    assert_eq!(
        (config["ntfy_url"].as_str(), config["ntfy_topic"].as_str()),
        (Some("http://127.0.0.1:9"), Some("crm-alerts"))
    );
    assert_eq!(config["notify_ntfy"], true);
    let channels = json_of(ada.get("/api/v1/notifications/channels").await, 200).await;
    assert_eq!(channels["ntfy"]["topic"], "crm-alerts", "the same channel: {channels}");
    let tested = json_of(ada.post("/api/v1/notifications/config/test", json!({ "channel": "ntfy" })).await, 200).await;
    assert_eq!(tested, json!({ "ok": true }));
    let tested =
        json_of(ada.post("/api/v1/notifications/config/test", json!({ "channel": "gotify" })).await, 200).await;
    assert_eq!(tested["ok"], false);
    assert!(tested["error"].as_str().is_some_and(|e| !e.is_empty()), "{tested}");
    json_of(ada.post("/api/v1/notifications/config/test", json!({ "channel": "email" })).await, 400).await;
    let bad = json!({ "ntfy_url": "ftp://example.org", "ntfy_topic": "x" });
    assert_eq!(
        json_of(ada.send(Method::PUT, "/api/v1/notifications/config", bad).await, 400).await["details"]["field"],
        "ntfy_url"
    );
    let off =
        json_of(ada.send(Method::PUT, "/api/v1/notifications/config", json!({ "notify_ntfy": false })).await, 200)
            .await;
    assert_eq!((off["notify_ntfy"].as_bool(), off["ntfy_url"].as_str()), (Some(false), Some("")));

    assert_eq!(json_of(ada.get("/api/v1/notifications/devices").await, 200).await, json!({ "devices": [] }));
    let phone = json!({ "token": "fcm-token-0123456789abcdef", "client": "apns", "device_label": "iPhone" });
    assert_eq!(
        json_of(ada.post("/api/v1/notifications/devices", phone).await, 400).await["details"]["field"],
        "client"
    );
    let phone = json!({ "token": "fcm-token-0123456789abcdef", "client": "fcm", "device_label": "Pixel" });
    json_of(ada.post("/api/v1/notifications/devices", phone).await, 409).await;
    json_of(ada.send(Method::DELETE, "/api/v1/notifications/devices/77", json!({})).await, 404).await;
}

#[tokio::test]
async fn a_briefing_gathers_what_to_know_before_meeting_someone() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let today = jiff::Zoned::now().with_time_zone(jiff::tz::TimeZone::UTC).date();
    let soon = today.checked_add(jiff::Span::new().days(10)).unwrap();
    let birthday = format!("1990-{:02}-{:02}", soon.month(), soon.day());
    let made = json_of(
        ada.post("/api/v1/contacts", json!({ "firstname": "Ann", "lastname": "Lee", "birthday": birthday })).await,
        201,
    )
    .await;
    let (ann, ann_uid) =
        (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());
    let empty = json_of(ada.get(&format!("/api/v1/contacts/{ann}/briefing")).await, 200).await;
    for list in ["recent_notes", "open_agenda_items", "relationships", "life_events", "upcoming_reminders"] {
        assert_eq!(empty[list], json!([]), "{list} is an empty array: {empty}");
    }
    assert!(empty.get("last_activity").is_none() && empty.get("cadence").is_none());

    for i in 0..6 {
        json_of(
            ada.post(&format!("/api/v1/contacts/{ann}/notes"), json!({ "content": format!("note {i}") })).await,
            201,
        )
        .await;
    }
    let body = json!({ "title": "Lunch", "date": today.to_string(), "contact_ids": [ann] });
    json_of(ada.post("/api/v1/activities", body).await, 201).await;
    json_of(ada.post("/api/v1/conversation-agenda", json!({ "contact_id": ann, "content": "her new job" })).await, 201)
        .await;
    json_of(ada.post("/api/v1/cadence-policies", json!({ "contact_id": ann, "interval_days": 30 })).await, 201).await;
    let body = json!({ "source_id": ann_uid, "target_thin": { "name": "Kit" }, "type": "parent_of" });
    json_of(ada.post("/api/v1/relationship-edges", body).await, 201).await;
    let in_days = |n: i64| today.checked_add(jiff::Span::new().days(n)).unwrap().to_string();
    for (message, when) in [("call her", in_days(5)), ("far away", in_days(60))] {
        let body = json!({ "message": message, "remind_at": when, "recurrence": "once" });
        json_of(ada.post(&format!("/api/v1/contacts/{ann}/reminders"), body).await, 201).await;
    }

    let b = json_of(ada.get(&format!("/api/v1/contacts/{ann}/briefing")).await, 200).await;
    assert_eq!(
        (b["contact_id"].as_u64(), b["uid"].as_str(), b["name"].as_str()),
        (Some(ann), Some(ann_uid.as_str()), Some("Ann Lee"))
    );
    assert_eq!(b["last_activity"]["title"], "Lunch");
    assert_eq!(b["recent_notes"].as_array().unwrap().len(), 5);
    assert_eq!(b["open_agenda_items"][0]["content"], "her new job");
    assert_eq!(b["cadence"]["policy"]["interval_days"], 30);
    assert_eq!(b["cadence"]["health"]["has_qualifying_interaction"], true);
    assert_eq!(b["relationships"][0]["display_token"], "child_of", "Kit is Ann's child: {b}");
    assert_eq!(b["relationships"][0]["other_party_name"], "Kit");
    let reminders: Vec<&str> =
        b["upcoming_reminders"].as_array().unwrap().iter().map(|r| r["message"].as_str().unwrap()).collect();
    assert_eq!(reminders, ["call her"]);
    assert_eq!(b["upcoming_dates"][0]["label"], "birthday");
    assert!((9..=10).contains(&b["upcoming_dates"][0]["days_until"].as_i64().unwrap()), "{b}");

    let bob = server.sign_up("bob").await;
    json_of(bob.get(&format!("/api/v1/contacts/{ann}/briefing")).await, 404).await;
}

#[tokio::test]
async fn the_graph_has_everyone_and_an_activity_names_its_people_as_contacts() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let lone = json_of(
        ada.post("/api/v1/contacts", json!({ "firstname": "Lone", "lastname": "Wolf", "nickname": "Lo" })).await,
        201,
    )
    .await;
    let lone = lone["contact"]["id"].as_u64().unwrap();
    let gone = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Gone" })).await, 201).await["contact"]["id"]
        .as_u64()
        .unwrap();
    json_of(ada.send(Method::POST, &format!("/api/v1/contacts/{gone}/archive"), Value::Null).await, 200).await;
    let graph = json_of(ada.get("/api/v1/graph").await, 200).await;
    let nodes: Vec<&str> = graph["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert!(nodes.contains(&format!("c-{lone}").as_str()), "a contact with no edge is a node: {graph}");
    assert!(!nodes.contains(&format!("c-{gone}").as_str()), "an archived one is not");

    let body = json!({ "title": "Hike", "date": "2026-05-01", "contact_ids": [lone] });
    let made = json_of(ada.post("/api/v1/activities", body).await, 201).await;
    let person = &made["activity"]["contacts"][0];
    assert_eq!((person["ID"].as_u64(), person["firstname"].as_str()), (Some(lone), Some("Lone")));
    assert_eq!((person["lastname"].as_str(), person["nickname"].as_str()), (Some("Wolf"), Some("Lo")));
}

#[tokio::test]
async fn preferences_hang_off_a_contact_named_by_uid() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await, 201).await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());
    let other = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Bo" })).await, 201).await["contact"]["id"]
        .as_u64()
        .unwrap();
    let body = json!({ "entity_id": uid, "category": "food", "key": "favorite", "value": "Sushi", "source": "user", "confidence": 0.8 });
    let made = json_of(ada.post("/api/v1/preferences", body).await, 201).await["preference"].clone();
    assert_eq!((made["entity_id"].as_str(), made["contact_id"].as_u64()), (Some(uid.as_str()), Some(ann)));
    assert_eq!((made["value"].as_str(), made["sensitivity"].as_str()), (Some("Sushi"), Some("normal")));
    assert!(made.get("notes").is_none(), "empty members are left out: {made}");
    json_of(
        ada.post("/api/v1/preferences", json!({ "contact_id": other, "category": "drink", "value": "Tea" })).await,
        201,
    )
    .await;
    for (body, field) in [
        (json!({ "entity_id": uid, "category": "", "value": "x" }), "category"),
        (json!({ "entity_id": uid, "category": "food", "value": "x", "confidence": 3 }), "confidence"),
        (json!({ "entity_id": uid, "category": "food", "value": "x", "source": "gossip" }), "source"),
        (json!({ "category": "food", "value": "x" }), "entity_id"),
    ] {
        assert_eq!(json_of(ada.post("/api/v1/preferences", body).await, 400).await["details"]["field"], field);
    }
    let of_ann = json_of(ada.get(&format!("/api/v1/preferences?entity_id={uid}")).await, 200).await;
    assert_eq!((of_ann["total"].as_u64(), of_ann["preferences"][0]["value"].as_str()), (Some(1), Some("Sushi")));
    assert_eq!(json_of(ada.get("/api/v1/preferences").await, 200).await["total"], 2);
    let id = made["id"].as_u64().unwrap();
    let body =
        json!({ "entity_id": uid, "category": "food", "key": "allergy", "value": "Peanuts", "sensitivity": "private" });
    let replaced = json_of(ada.send(Method::PUT, &format!("/api/v1/preferences/{id}"), body).await, 200).await;
    assert_eq!((replaced["key"].as_str(), replaced["sensitivity"].as_str()), (Some("allergy"), Some("private")));

    let bob = server.sign_up("bob").await;
    json_of(bob.get(&format!("/api/v1/preferences/{id}")).await, 404).await;
    json_of(bob.post("/api/v1/preferences", json!({ "entity_id": uid, "category": "food", "value": "x" })).await, 404)
        .await;
    assert_eq!(json_of(bob.get("/api/v1/preferences").await, 200).await["total"], 0);

    // Deleting the contact takes its preferences along.
    json_of(ada.send(Method::DELETE, &format!("/api/v1/contacts/{ann}"), json!({})).await, 200).await;
    json_of(ada.get(&format!("/api/v1/preferences/{id}")).await, 404).await;
    assert_eq!(json_of(ada.get("/api/v1/preferences").await, 200).await["total"], 1);
}

#[tokio::test]
async fn a_rhythm_takes_the_existing_clients_names_and_lists_with_its_health() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await, 201).await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());
    json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Bo" })).await, 201).await;
    let body = json!({ "entity_id": uid, "target_interval_days": 21 });
    let made = json_of(ada.post("/api/v1/cadence-policies", body).await, 201).await;
    assert_eq!((made["target"].as_str(), made["interval_days"].as_u64()), (Some(ann.to_string().as_str()), Some(21)));
    assert_eq!(made["target_interval_days"], 21);
    json_of(
        ada.post("/api/v1/cadence-policies", json!({ "scope": "circle", "target": "Work", "interval_days": 90 })).await,
        201,
    )
    .await;
    let refused = json_of(ada.post("/api/v1/cadence-policies", json!({ "entity_id": uid })).await, 400).await;
    assert_eq!(refused["details"]["field"], "interval_days");
    json_of(
        ada.post(
            "/api/v1/cadence-policies",
            json!({ "entity_id": "1b4e28ba-2fa1-4d2e-8a9b-1c2d3e4f5a6b", "interval_days": 5 }),
        )
        .await,
        404,
    )
    .await;

    let mine = json_of(ada.get(&format!("/api/v1/cadence-policies?entity_id={uid}")).await, 200).await;
    assert_eq!(mine["total"], 1);
    let p = &mine["cadence_policies"][0];
    assert_eq!((p["entity_id"].as_str(), p["target_interval_days"].as_u64()), (Some(uid.as_str()), Some(21)));
    assert_eq!(p["health"]["has_qualifying_interaction"], false);
    assert_eq!(json_of(ada.get("/api/v1/cadence-policies").await, 200).await["total"], 2);
    let bob = server.sign_up("bob").await;
    json_of(bob.get(&format!("/api/v1/cadence-policies?entity_id={uid}")).await, 404).await;
    json_of(bob.post("/api/v1/cadence-policies", json!({ "entity_id": uid, "interval_days": 5 })).await, 404).await;
}

#[tokio::test]
async fn the_timeline_answers_the_existing_clients_shape_and_filters() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = |name: &str| {
        let (ada, name) = (&ada, name.to_string());
        async move {
            json_of(ada.post("/api/v1/contacts", json!({ "firstname": name, "lastname": "Lee" })).await, 201).await
                ["contact"]["id"]
                .as_u64()
                .unwrap()
        }
    };
    let (ann, bo) = (made("Ann").await, made("Bo").await);
    let note = json_of(
        ada.post(&format!("/api/v1/contacts/{ann}/notes"), json!({ "content": "hi", "date": "2026-01-05" })).await,
        201,
    )
    .await;
    let note_id = note["note"]["id"].as_u64().unwrap_or_else(|| note["id"].as_u64().unwrap());
    let activity = json!({ "title": "Lunch", "date": "2026-02-01", "contact_ids": [ann, bo] });
    let activity =
        json_of(ada.post("/api/v1/activities", activity).await, 201).await["activity"]["id"].as_u64().unwrap();
    let reminder = json!({ "message": "Call", "remind_at": "2026-03-01", "recurrence": "once" });
    let reminder =
        json_of(ada.post(&format!("/api/v1/contacts/{ann}/reminders"), reminder).await, 201).await["reminder"]["id"]
            .as_u64()
            .unwrap();
    json_of(ada.post(&format!("/api/v1/reminders/{reminder}/complete"), json!({})).await, 200).await;
    // Life events without a year, one with no date at all (`null`, as a client may send it).
    json_of(ada.post("/api/v1/life-events", json!({ "contact_id": ann, "type": "moved", "date": null })).await, 201)
        .await;
    let yearly = json!({ "contact_id": ann, "type": "name_day", "date": { "month": 6, "day": 1 } });
    json_of(ada.post("/api/v1/life-events", yearly).await, 201).await;

    let page = json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline")).await, 200).await;
    let kinds = |list: &Value, key: &str| -> Vec<String> {
        list[key].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    let mut old = kinds(&page, "items");
    old.sort();
    assert_eq!(old, ["activity", "completion", "life_event", "life_event", "note"], "{page}");
    assert_eq!(kinds(&page, "timeline").iter().filter(|k| *k == "life_event").count(), 0, "no year: not in `timeline`");
    assert_eq!((page["limit"].as_u64(), page["next_cursor"].as_str()), (Some(25), Some("")));
    let items = page["items"].as_array().unwrap();
    let of = |kind: &str| items.iter().find(|e| e["type"] == kind).unwrap().clone();
    assert_eq!(of("note")["data"]["ID"], note_id);
    assert_eq!(of("note")["id"], note_id.to_string());
    assert_eq!(of("activity")["data"]["ID"], activity);
    assert!(of("completion")["data"]["ID"].as_u64().is_some());
    let people = of("activity")["data"]["contacts"].clone();
    assert_eq!(people.as_array().unwrap().len(), 2, "{people}");
    assert!(people.as_array().unwrap().iter().any(|c| c["ID"] == bo && c["firstname"] == "Bo"), "{people}");

    let some = json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?type=note,completion")).await, 200).await;
    let mut got = kinds(&some, "items");
    got.sort();
    assert_eq!(got, ["completion", "note"]);
    let none = json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?type=external_activity")).await, 200).await;
    assert_eq!(none["items"], json!([]));
    let bad = json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?type=note,toes")).await, 400).await;
    assert_eq!(bad["details"]["field"], "type");
    let bad = json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?bucket=someday")).await, 400).await;
    assert_eq!(bad["details"]["field"], "bucket");
    // Everything above is older than a week, but the completion (now) and the undated event
    // (recorded now).
    let recent = json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?bucket=last_7_days")).await, 200).await;
    let mut got = kinds(&recent, "items");
    got.sort();
    assert!(!got.contains(&"note".to_string()) && !got.contains(&"activity".to_string()), "{recent}");

    // Paging by the old client's cursor reaches every entry once.
    let (mut seen, mut cursor) = (Vec::new(), String::new());
    loop {
        let page =
            json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?limit=1&cursor={cursor}")).await, 200).await;
        seen.extend(page["items"].as_array().unwrap().iter().map(|e| format!("{}{}", e["type"], e["id"])));
        cursor = page["next_cursor"].as_str().unwrap().to_string();
        if cursor.is_empty() {
            break;
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5, "{seen:?}");

    // An activity replaced without `contact_ids` keeps its contacts.
    let edit = json!({ "title": "Long lunch", "date": "2026-02-01" });
    let edited = json_of(ada.send(Method::PUT, &format!("/api/v1/activities/{activity}"), edit).await, 200).await;
    let edited = if edited.get("activity").is_some() { edited["activity"].clone() } else { edited };
    assert_eq!(edited["contact_ids"], json!([ann, bo]), "{edited}");
    let cleared = json!({ "title": "Long lunch", "date": "2026-02-01", "contact_ids": [] });
    let cleared = json_of(ada.send(Method::PUT, &format!("/api/v1/activities/{activity}"), cleared).await, 200).await;
    let cleared = if cleared.get("activity").is_some() { cleared["activity"].clone() } else { cleared };
    assert_eq!(cleared["contact_ids"], json!([]));
}

#[tokio::test]
async fn contacts_without_a_way_to_reach_them_can_be_hidden_and_are_counted() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    for body in [
        json!({ "firstname": "Mail", "email": "m@example.org" }),
        json!({ "firstname": "Phone", "phone": "(555) 987-6543" }),
        json!({ "firstname": "Link", "card": { "name": { "full": "Link" }, "links": [{ "uri": "https://example.org" }] } }),
        json!({ "firstname": "Nobody" }),
        json!({ "firstname": "Nobody Else" }),
        json!({ "firstname": "Abroad", "phone": "+15552223333" }),
    ] {
        json_of(ada.post("/api/v1/contacts", body).await, 201).await;
    }
    let names = |page: &Value| -> Vec<String> {
        let mut n: Vec<String> =
            page["contacts"].as_array().unwrap().iter().map(|c| c["firstname"].as_str().unwrap().to_string()).collect();
        n.sort();
        n
    };
    let all = json_of(ada.get("/api/v1/contacts").await, 200).await;
    assert_eq!(all["contacts"].as_array().unwrap().len(), 6);
    assert!(all.get("hidden_count").is_none(), "only asked for: {all}");
    let reachable = json_of(ada.get("/api/v1/contacts?has_contact_info=true&limit=2").await, 200).await;
    assert_eq!((reachable["total"].as_u64(), reachable["hidden_count"].as_u64()), (Some(4), Some(2)), "{reachable}");
    let reachable = json_of(ada.get("/api/v1/contacts?has_contact_info=true").await, 200).await;
    assert_eq!(names(&reachable), ["Abroad", "Link", "Mail", "Phone"]);
    let searched = json_of(ada.get("/api/v1/contacts?has_contact_info=true&search=nobody").await, 200).await;
    assert_eq!((searched["total"].as_u64(), searched["hidden_count"].as_u64()), (Some(0), Some(2)), "{searched}");
    let bad = json_of(ada.get("/api/v1/contacts?has_contact_info=maybe").await, 400).await;
    assert_eq!(bad["details"]["field"], "has_contact_info");

    // A number typed with punctuation finds it however it is stored, in the list and in search.
    for (typed, who) in [
        ("5559876543", "Phone"),
        ("555-987", "Phone"),
        ("(555) 987-6543", "Phone"),
        ("555-222", "Abroad"),
        ("(555) 222-3333", "Abroad"),
    ] {
        let q = typed.replace(' ', "%20").replace('(', "%28").replace(')', "%29");
        let list = json_of(ada.get(&format!("/api/v1/contacts?search={q}")).await, 200).await;
        assert_eq!(names(&list), [who], "{typed}: {list}");
        let found = json_of(ada.get(&format!("/api/v1/search?q={q}")).await, 200).await;
        let hits: Vec<&str> =
            found["contacts"].as_array().unwrap().iter().map(|c| c["firstname"].as_str().unwrap()).collect();
        assert_eq!(hits, [who], "{typed}: {found}");
    }
}

#[tokio::test]
async fn the_legacy_csv_layout_is_the_existing_implementations_file() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = json_of(
        ada.post(
            "/api/v1/contacts",
            json!({ "firstname": "Ann", "lastname": "Lee", "email": "ann@example.org", "crm": { "circles": ["Work", "Family"] } }),
        )
        .await,
        201,
    )
    .await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());
    let bo = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "=Bo" })).await, 201).await["contact"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    json_of(
        ada.post("/api/v1/relationship-edges", json!({ "source_id": uid, "target_id": bo, "type": "friend_of" })).await,
        201,
    )
    .await;
    json_of(ada.post(&format!("/api/v1/contacts/{ann}/notes"), json!({ "content": "likes tea" })).await, 201).await;
    let pref = json!({ "entity_id": uid, "category": "food", "value": "Sushi" });
    json_of(ada.post("/api/v1/preferences", pref).await, 201).await;
    json_of(
        ada.post("/api/v1/field-definitions", json!({ "label": "Shoe size", "key": "shoe", "type": "number" })).await,
        201,
    )
    .await;

    let response = ada.get("/api/v1/export?layout=legacy").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-disposition"].to_str().unwrap().contains("mycorrhizal-export-"));
    let text = response.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "=== CONTACTS ===");
    assert_eq!(
        lines[1],
        "ID,Firstname,Lastname,Nickname,Gender,Email,Phone,Birthday,Address,How We Met,Food Preference,Work Information,Contact Information,Circles,Tags,Created At,Updated At,Shoe size"
    );
    let ann_line = lines.iter().find(|l| l.contains("ann@example.org")).unwrap();
    assert!(ann_line.starts_with(&format!("{ann},Ann,Lee,")), "{ann_line}");
    assert!(ann_line.contains(",Sushi,") && ann_line.contains("Family; Work"), "{ann_line}");
    assert!(text.contains("'=Bo"), "cells are formula-neutralised: {text}");
    for section in ["=== RELATIONSHIPS ===", "=== ACTIVITIES ===", "=== NOTES ===", "=== REMINDERS ==="] {
        assert!(lines.contains(&section), "{section}: {text}");
    }
    assert!(text.contains(",friend_of,") && text.contains(",Ann Lee,likes tea,"), "{text}");
    let bad = json_of(ada.get("/api/v1/export?layout=sideways").await, 400).await;
    assert_eq!(bad["details"]["field"], "layout");
}

#[tokio::test]
async fn a_hobby_preference_is_on_the_card_while_it_lasts() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made = json_of(ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await, 201).await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());
    let hobbies = |card: &Value| -> Vec<String> {
        card["card"]["personalInfo"]
            .as_array()
            .map(|l| {
                l.iter().filter(|i| i["kind"] == "hobby").map(|i| i["value"].as_str().unwrap().to_string()).collect()
            })
            .unwrap_or_default()
    };
    let pref = |value: &str, sensitivity: &str| json!({ "entity_id": uid, "category": "hobby", "value": value, "sensitivity": sensitivity });
    let climbing = json_of(ada.post("/api/v1/preferences", pref("Climbing", "normal")).await, 201).await["preference"]
        ["id"]
        .as_u64()
        .unwrap();
    json_of(ada.post("/api/v1/preferences", pref("Poker", "private")).await, 201).await;
    let card = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert_eq!(hobbies(&card), ["Climbing"], "a private one stays off the card: {card}");
    let vcf = ada.get(&format!("/api/v1/export/jscontact")).await.text().await.unwrap();
    assert!(vcf.contains("Climbing") && !vcf.contains("Poker"), "{vcf}");

    json_of(ada.send(Method::PUT, &format!("/api/v1/preferences/{climbing}"), pref("Bouldering", "normal")).await, 200)
        .await;
    let card = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert_eq!(hobbies(&card), ["Bouldering"]);
    json_of(ada.send(Method::DELETE, &format!("/api/v1/preferences/{climbing}"), Value::Null).await, 200).await;
    let card = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert_eq!(hobbies(&card), Vec::<String>::new());
}
