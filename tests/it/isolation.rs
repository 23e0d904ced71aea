//! Per-user isolation, table-driven over every CRM route: user B gets 404 for each of user A's
//! ids (never 403, never data) and B's lists and searches never include A's rows.

use serde_json::{Value, json};

use crate::helpers::Instance;
use crate::import::upload;

#[tokio::test]
async fn another_user_cannot_read_list_search_or_change_anything() {
    let server = Instance::new().spawn();
    let a = server.sign_up("ada").await;
    let b = server.sign_up("bob").await;
    let contact = a.post("/api/v1/contacts", json!({ "firstname": "Secret", "lastname": "Friend", "email": "secret@example.org", "crm": { "circles": ["Inner"] }, "birthday": "--01-01" })).await.json::<Value>().await.unwrap()["contact"].clone();
    let c = contact["id"].as_u64().unwrap();
    let other = a
        .post("/api/v1/contacts", json!({ "firstname": "Other", "address": "12 Hidden Way" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["contact"]["id"]
        .as_u64()
        .unwrap();
    let rel = a
        .post(&format!("/api/v1/contacts/{c}/relationships"), json!({ "target_id": other, "type": "friend" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    let note = a
        .post(&format!("/api/v1/contacts/{c}/notes"), json!({ "content": "secret note" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["note"]["id"]
        .as_u64()
        .unwrap();
    let loose = a.post("/api/v1/notes", json!({ "content": "secret loose note" })).await.json::<Value>().await.unwrap()
        ["note"]["id"]
        .as_u64()
        .unwrap();
    let activity = a
        .post("/api/v1/activities", json!({ "title": "secret dinner", "date": "2026-01-01", "contact_ids": [c] }))
        .await
        .json::<Value>()
        .await
        .unwrap()["activity"]["id"]
        .as_u64()
        .unwrap();
    let reminder = a
        .post(
            &format!("/api/v1/contacts/{c}/reminders"),
            json!({ "message": "secret reminder", "remind_at": "2026-01-01", "recurrence": "yearly" }),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["reminder"]["id"]
        .as_u64()
        .unwrap();
    let once = a
        .post(
            &format!("/api/v1/contacts/{c}/reminders"),
            json!({ "message": "secret once", "remind_at": "2026-01-01", "recurrence": "once" }),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["reminder"]["id"]
        .as_u64()
        .unwrap();
    let completion = a
        .post(&format!("/api/v1/reminders/{once}/complete"), json!({}))
        .await
        .json::<Value>()
        .await
        .unwrap()["completion"]["id"]
        .as_u64()
        .unwrap();
    let event = a
        .post(
            "/api/v1/life-events",
            json!({ "contact_id": c, "type": "secret event", "date": { "month": 1, "day": 2 } }),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["life_event"]["id"]
        .as_u64()
        .unwrap();
    let gift = a
        .post("/api/v1/gifts", json!({ "contact_id": c, "description": "secret gift" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["gift"]["id"]
        .as_u64()
        .unwrap();
    let item = a
        .post("/api/v1/conversation-agenda", json!({ "contact_id": c, "content": "secret topic" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["conversation_agenda"]["id"]
        .as_u64()
        .unwrap();
    let uid = contact["uid"].as_str().unwrap().to_string();
    let house = a.post("/api/v1/households", json!({ "name": "Secret house" })).await.json::<Value>().await.unwrap()
        ["household"]["id"]
        .as_u64()
        .unwrap();
    let member = a
        .post(&format!("/api/v1/households/{house}/members"), json!({ "contact_id": c, "role": "secret role" }))
        .await
        .json::<Value>()
        .await
        .unwrap()["member"]["id"]
        .as_u64()
        .unwrap();
    let lodger = a.post(&format!("/api/v1/households/{house}/members"), json!({ "contact_id": other })).await;
    assert_eq!(lodger.status(), 201);
    let hint: Value = a.get("/api/v1/households/suggestions").await.json().await.unwrap();
    assert_eq!(hint["total"], 1, "A's own suggestion: {hint}");
    let own_house = b.post("/api/v1/households", json!({ "name": "Bob's place" })).await.json::<Value>().await.unwrap()
        ["household"]["id"]
        .as_u64()
        .unwrap();

    let note_body = json!({ "content": "x" });
    let activity_body = json!({ "title": "x", "date": "2026-01-01" });
    let reminder_body = json!({ "message": "x", "remind_at": "2026-01-01", "recurrence": "once", "contact_id": c });
    let contact_body = json!({ "firstname": "Hijack" });
    let routes: Vec<(reqwest::Method, String, Value)> = vec![
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/contacts/{c}"), contact_body.clone()),
        (reqwest::Method::DELETE, format!("/api/v1/contacts/{c}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/detail"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/contacts/{c}/archive"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/contacts/{c}/unarchive"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/contacts/{c}/favorite"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/contacts/{c}/unfavorite"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/relationships"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/incoming-relationships"), json!(null)),
        (
            reqwest::Method::POST,
            format!("/api/v1/contacts/{c}/relationships"),
            json!({ "target_id": other, "type": "friend" }),
        ),
        (
            reqwest::Method::PUT,
            format!("/api/v1/contacts/{c}/relationships/{rel}"),
            json!({ "target_id": other, "type": "friend" }),
        ),
        (reqwest::Method::DELETE, format!("/api/v1/contacts/{c}/relationships/{rel}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/notes"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/contacts/{c}/notes"), note_body.clone()),
        (reqwest::Method::GET, format!("/api/v1/notes/{note}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/notes/{note}"), note_body.clone()),
        (reqwest::Method::DELETE, format!("/api/v1/notes/{loose}"), json!(null)),
        (reqwest::Method::POST, "/api/v1/notes".into(), json!({ "content": "x", "contact_id": c })),
        (reqwest::Method::GET, format!("/api/v1/activities/{activity}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/activities/{activity}"), activity_body.clone()),
        (reqwest::Method::DELETE, format!("/api/v1/activities/{activity}"), json!(null)),
        (
            reqwest::Method::POST,
            "/api/v1/activities".into(),
            json!({ "title": "x", "date": "2026-01-01", "contact_ids": [c] }),
        ),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/activities"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/reminders/{reminder}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/reminders/{reminder}"), reminder_body.clone()),
        (reqwest::Method::DELETE, format!("/api/v1/reminders/{reminder}"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/reminders/{reminder}/complete"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/reminders"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/contacts/{c}/reminders"), reminder_body.clone()),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/reminder-completions"), json!(null)),
        (reqwest::Method::DELETE, format!("/api/v1/reminder-completions/{completion}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/contacts/{c}/timeline"), json!(null)),
        (reqwest::Method::POST, "/api/v1/cadence-policies".into(), json!({ "contact_id": c, "interval_days": 7 })),
        (reqwest::Method::GET, format!("/api/v1/life-events/{event}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/life-events/{event}"), json!({ "contact_id": c, "type": "x" })),
        (reqwest::Method::DELETE, format!("/api/v1/life-events/{event}"), json!(null)),
        (reqwest::Method::POST, "/api/v1/life-events".into(), json!({ "entity_id": uid, "type": "x" })),
        (reqwest::Method::GET, format!("/api/v1/life-events?entity_id={uid}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/gifts/{gift}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/gifts/{gift}"), json!({ "contact_id": c, "description": "x" })),
        (reqwest::Method::DELETE, format!("/api/v1/gifts/{gift}"), json!(null)),
        (reqwest::Method::POST, "/api/v1/gifts".into(), json!({ "contact_id": c, "description": "x" })),
        (reqwest::Method::GET, format!("/api/v1/gifts?contact_id={c}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/conversation-agenda/{item}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/conversation-agenda/{item}"), json!({ "content": "x" })),
        (reqwest::Method::PATCH, format!("/api/v1/conversation-agenda/{item}/discuss"), json!({})),
        (reqwest::Method::DELETE, format!("/api/v1/conversation-agenda/{item}"), json!(null)),
        (reqwest::Method::POST, "/api/v1/conversation-agenda".into(), json!({ "entity_id": uid, "content": "x" })),
        (reqwest::Method::GET, format!("/api/v1/households/{house}"), json!(null)),
        (reqwest::Method::PUT, format!("/api/v1/households/{house}"), json!({ "name": "x" })),
        (reqwest::Method::DELETE, format!("/api/v1/households/{house}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/households/{house}/members"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/households/{house}/members"), json!({ "contact_id": c })),
        (reqwest::Method::PATCH, format!("/api/v1/households/{house}/members/{member}"), json!({ "role": "x" })),
        (reqwest::Method::PATCH, format!("/api/v1/households/{house}/members/{uid}"), json!({ "role": "x" })),
        (reqwest::Method::DELETE, format!("/api/v1/households/{house}/members/{member}"), json!(null)),
        (reqwest::Method::DELETE, format!("/api/v1/households/{house}/members/{uid}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/households/{house}/suggestions"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/search?q=secret&household_id={house}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/households?contact_id={c}"), json!(null)),
        (reqwest::Method::GET, format!("/api/v1/households?member_vcard_uid={uid}"), json!(null)),
        (reqwest::Method::POST, format!("/api/v1/households/{own_house}/members"), json!({ "contact_id": c })),
        (reqwest::Method::POST, format!("/api/v1/households/{own_house}/members"), json!({ "member_vcard_uid": uid })),
        (reqwest::Method::PATCH, format!("/api/v1/households/{own_house}/members/{member}"), json!({ "role": "x" })),
        (reqwest::Method::DELETE, format!("/api/v1/households/{own_house}/members/{member}"), json!(null)),
        // The scan has not run for A here (see reach_out.rs for the in-process check with a real
        // suggestion of A's); an id B does not own must still be a plain 404.
        (reqwest::Method::POST, "/api/v1/reach-out-suggestions/1/accept".into(), json!({})),
        (reqwest::Method::POST, "/api/v1/reach-out-suggestions/1/dismiss".into(), json!(null)),
        (reqwest::Method::DELETE, "/api/v1/reach-out-suggestions/1".into(), json!(null)),
    ];
    for (method, path, body) in &routes {
        let mut request = b.request(method.clone(), path);
        if !body.is_null() {
            request = request.json(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 404, "{method} {path} as another user: {text}");
        assert!(!text.contains("secret") && !text.contains("Secret"), "{method} {path} leaked: {text}");
    }

    // B's lists and searches hold nothing of A's.
    let by_uid = format!("/api/v1/export/vcf?vcard_uid={uid}");
    for path in [
        "/api/v1/contacts",
        "/api/v1/contacts?search=secret",
        "/api/v1/contacts?include_archived=true",
        "/api/v1/contacts/circles",
        "/api/v1/contacts/random",
        "/api/v1/contacts/birthdays?days=366",
        "/api/v1/notes",
        "/api/v1/activities",
        "/api/v1/reminders",
        "/api/v1/reminders/upcoming",
        "/api/v1/graph",
        "/api/v1/reach-out-suggestions?status=all",
        "/api/v1/export",
        "/api/v1/export/vcf",
        "/api/v1/export/vcf?version=3.0",
        "/api/v1/export/jscontact",
        "/api/v1/export?table=notes",
        "/api/v1/export?table=activities",
        "/api/v1/export?table=reminders",
        "/api/v1/export?table=relationships",
        "/api/v1/export?table=life_events",
        "/api/v1/export?table=gifts",
        "/api/v1/export?table=reminder_completions",
        "/api/v1/export?table=conversation_agenda",
        "/api/v1/export?table=households",
        "/api/v1/export?table=household_members",
        "/api/v1/export?table=cadence_policies",
        by_uid.as_str(),
        "/api/v1/contacts/import/runs",
    ] {
        let response = b.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        let text = response.text().await.unwrap();
        assert!(!text.contains("ecret") && !text.contains(&format!("\"id\":{c}")), "{path} leaked: {text}");
    }

    // An import by B never matches A's contacts, and A's import session is not B's to confirm.
    let records = json!({ "records": [{ "card": { "name": { "full": "Secret Friend" }, "emails": [{ "address": "secret@example.org" }] } }] });
    let response = b.post("/api/v1/contacts/import/records", records.clone()).await;
    assert_eq!(response.status(), 200);
    let preview: Value = response.json().await.unwrap();
    assert_eq!(preview["rows"][0]["row_index"], 0, "{preview}");
    assert_eq!(preview["rows"][0]["duplicate_match"], Value::Null, "B's import matched A's contact: {preview}");
    let a_preview: Value = a.post("/api/v1/contacts/import/records", records).await.json().await.unwrap();
    assert_eq!(a_preview["rows"][0]["duplicate_match"]["existing_contact_id"], c, "{a_preview}");
    let confirm = json!({ "session_id": a_preview["session_id"], "actions": [{ "row_index": 0, "action": "update" }] });
    assert_eq!(b.post("/api/v1/contacts/import/vcf/confirm", confirm.clone()).await.status(), 404);
    assert_eq!(b.post("/api/v1/contacts/import/confirm", confirm).await.status(), 404);
    // A can still confirm it (skipping, so A's contact stays as it was for the checks below).
    let skip = json!({ "session_id": a_preview["session_id"], "actions": [{ "row_index": 0, "action": "skip" }] });
    let own: Value = a.post("/api/v1/contacts/import/vcf/confirm", skip).await.json().await.unwrap();
    assert_eq!((own["total_processed"].as_u64(), own["skipped"].as_u64()), (Some(1), Some(1)), "still A's: {own}");
    // A's import run is A's alone: B, who confirmed nothing, lists none.
    let runs: Value = a.get("/api/v1/contacts/import/runs").await.json().await.unwrap();
    assert_eq!(runs["import_runs"].as_array().map(Vec::len), Some(1), "{runs}");
    let runs: Value = b.get("/api/v1/contacts/import/runs").await.json().await.unwrap();
    assert_eq!(runs["import_runs"], json!([]), "B sees A's import run: {runs}");
    // B's whole-data ZIP holds B's own data only.
    let zip = b.get("/api/v1/export?table=all").await;
    assert_eq!(zip.status(), 200);
    for (name, text) in crate::export::unzip(&zip.bytes().await.unwrap()) {
        assert!(!text.contains("ecret") && !text.contains("Hidden"), "{name} of B's ZIP leaked: {text}");
    }
    // The same through an upload: B's vCard of A's friend is new to B, and A's CSV session is
    // not B's to preview or confirm.
    let card = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Secret Friend\r\nN:Friend;Secret;;;\r\nEMAIL:secret@example.org\r\nEND:VCARD\r\n";
    let response = upload(&b, "/api/v1/contacts/import/vcf/upload", "friend.vcf", card.as_bytes()).await;
    assert_eq!(response.status(), 200);
    let preview: Value = response.json().await.unwrap();
    assert_eq!(preview["rows"][0]["row_index"], 0, "{preview}");
    assert_eq!(preview["rows"][0]["duplicate_match"], Value::Null, "B's upload matched A's contact: {preview}");
    let csv = upload(
        &a,
        "/api/v1/contacts/import/upload",
        "a.csv",
        b"First Name,E-mail 1 - Value\nSecret,secret@example.org\n",
    )
    .await;
    let csv: Value = csv.json().await.unwrap();
    let mapping = json!({ "session_id": csv["session_id"], "mappings": csv["suggested_mappings"] });
    assert_eq!(b.post("/api/v1/contacts/import/preview", mapping.clone()).await.status(), 404);
    let csv_confirm = json!({ "session_id": csv["session_id"], "actions": [] });
    assert_eq!(b.post("/api/v1/contacts/import/confirm", csv_confirm).await.status(), 404);
    assert_eq!(a.post("/api/v1/contacts/import/preview", mapping).await.status(), 200, "still A's to preview");

    // B's households and address suggestions hold only B's own.
    for path in ["/api/v1/households", "/api/v1/households?include_members=true", "/api/v1/households/suggestions"] {
        let response = b.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        let text = response.text().await.unwrap();
        assert!(!text.contains("ecret") && !text.contains("Hidden"), "{path} leaked: {text}");
    }
    let listed: Value = b.get("/api/v1/households?include_members=true").await.json().await.unwrap();
    assert_eq!(listed["households"].as_array().unwrap().len(), 1);
    assert_eq!((listed["households"][0]["id"].as_u64(), listed["total"].as_u64()), (Some(own_house), Some(1)));
    assert_eq!(listed["members"], json!([]));
    let posted: Value = b.post("/api/v1/households/suggest-addresses", json!({})).await.json().await.unwrap();
    assert_eq!(posted, json!({ "suggestions": [], "total": 0 }));
    // Dismissals are per user: B dismissing A's hashes leaves A's suggestion alone.
    let hashes = json!({ "address_hash": hint["suggestions"][0]["address_hash"], "member_hash": hint["suggestions"][0]["member_hash"] });
    assert_eq!(b.post("/api/v1/households/suggestions/dismiss", hashes).await.status(), 200);
    let still: Value = a.get("/api/v1/households/suggestions").await.json().await.unwrap();
    assert_eq!(still["suggestions"], hint["suggestions"]);

    // Full-text search: nothing of A's by word, prefix, typo or phrase; A finds all of it.
    for q in ["secret", "secr", "secrex", "%22secret%20note%22", "dinner", "friend"] {
        let found: Value = b.get(&format!("/api/v1/search?q={q}")).await.json().await.unwrap();
        for group in ["contacts", "notes", "activities"] {
            assert_eq!(found[group], json!([]), "B's search {q} leaked {group}: {found}");
        }
        assert_eq!(found["totals"], json!({ "contacts": 0, "notes": 0, "activities": 0 }), "{q}");
        let listed: Value =
            b.get(&format!("/api/v1/contacts?search={q}&include_archived=true")).await.json().await.unwrap();
        assert_eq!(listed["contacts"], json!([]), "B's contact search {q} leaked: {listed}");
    }
    let own: Value = a.get("/api/v1/search?q=secr").await.json().await.unwrap();
    assert_eq!(own["totals"], json!({ "contacts": 1, "notes": 2, "activities": 1 }), "{own}");

    // And every one of A's rows is still there, unchanged.
    let mine: Value = a.get(&format!("/api/v1/contacts/{c}/detail")).await.json().await.unwrap();
    assert_eq!(mine["contact"]["firstname"], "Secret");
    assert_eq!(mine["contact"]["revision"], 1);
    assert_eq!(mine["notes"][0]["content"], "secret note");
    assert_eq!(mine["relationship_edges"].as_array().unwrap().len(), 1);
    assert_eq!(a.get(&format!("/api/v1/activities/{activity}")).await.status(), 200);
    assert_eq!(a.get(&format!("/api/v1/reminders/{reminder}")).await.status(), 200);
    assert_eq!(a.get(&format!("/api/v1/notes/{loose}")).await.status(), 200);
    assert_eq!(mine["life_events"].as_array().unwrap().len(), 1);
    assert_eq!(mine["gifts"].as_array().unwrap().len(), 1);
    assert_eq!(mine["agenda"].as_array().unwrap().len(), 1);
    let home: Value = a.get(&format!("/api/v1/households/{house}")).await.json().await.unwrap();
    assert_eq!(
        (home["household"]["name"].as_str(), home["household"]["revision"].as_u64()),
        (Some("Secret house"), Some(1))
    );
    assert_eq!(home["members"].as_array().unwrap().len(), 2);
    assert_eq!(home["members"][0]["role"], "secret role");
}
