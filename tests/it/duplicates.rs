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

async fn ok(response: reqwest::Response, status: u16) -> Value {
    let got = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "{body}");
    body
}

/// What a merge moves, hung off `twin`: an activity shared with `bo`, a reminder, the friend
/// edges `edges`, and a household both `ann` and `twin` belong to (its id).
async fn attach(ada: &Client, ann: u64, twin: u64, bo: u64, edges: &[(u64, u64)]) -> u64 {
    ok(
        ada.post("/api/v1/activities", json!({ "title": "Lunch", "date": "2026-01-01", "contact_ids": [twin, bo] }))
            .await,
        201,
    )
    .await;
    ok(
        ada.post(
            &format!("/api/v1/contacts/{twin}/reminders"),
            json!({ "message": "Call", "remind_at": "2027-01-01", "recurrence": "once" }),
        )
        .await,
        201,
    )
    .await;
    for (from, to) in edges.iter().copied() {
        ok(
            ada.post(&format!("/api/v1/contacts/{from}/relationships"), json!({ "target_id": to, "type": "friend" }))
                .await,
            201,
        )
        .await;
    }
    let house = ok(ada.post("/api/v1/households", json!({ "name": "Lee house" })).await, 201).await["household"]["id"]
        .as_u64()
        .unwrap();
    for c in [ann, twin] {
        ok(ada.post(&format!("/api/v1/households/{house}/members"), json!({ "contact_id": c })).await, 201).await;
    }
    house
}

/// A merge previews field by field, refuses an open conflict, then moves everything to the kept
/// contact in one go: the lists joined, the chosen value, notes, activities, reminders, edges
/// (none to itself, none doubled), household memberships (none doubled); the other is gone.
#[tokio::test]
async fn a_merge_previews_then_moves_everything_to_the_kept_contact() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, _) = contact(
        &ada,
        "Ann",
        "Lee",
        json!({ "emails": [{ "address": "ann@example.org" }], "organizations": [{ "name": "Acme" }] }),
    )
    .await;
    let (twin, _) = contact(
        &ada,
        "Ann",
        "Lee",
        json!({
            "emails": [{ "address": "ann.lee@work.example" }, { "address": "ANN@example.org" }],
            "organizations": [{ "name": "Initech" }],
            "nicknames": [{ "name": "Annie" }],
            "phones": [{ "number": "+44 20 7946 0958" }],
        }),
    )
    .await;
    let (bo, _) = contact(&ada, "Bo", "Ray", json!({})).await;
    let (cy, _) = contact(&ada, "Cy", "Ng", json!({})).await;
    ok(ada.post(&format!("/api/v1/contacts/{ann}/notes"), json!({ "content": "kept note" })).await, 201).await;
    ok(ada.post(&format!("/api/v1/contacts/{twin}/notes"), json!({ "content": "moved note" })).await, 201).await;
    let house = attach(&ada, ann, twin, bo, &[(ann, bo), (twin, bo), (twin, ann), (cy, twin), (bo, twin)]).await;

    let preview =
        ok(ada.post("/api/v1/contacts/merge/preview", json!({ "keep_id": ann, "merge_id": twin })).await, 200).await;
    let r = &preview["resolution"];
    assert_eq!(
        r["conflicts"],
        json!([{ "field": "organization", "label": "Organization", "keeper_value": "Acme", "loser_value": "Initech" }]),
        "{preview}"
    );
    assert_eq!(r["resolved_scalars"]["nickname"], "Annie");
    assert_eq!(r["emails"], json!(["ann@example.org", "ann.lee@work.example"]), "the same address once: {preview}");
    assert_eq!(r["phones"], json!(["+44 20 7946 0958"]));
    let counts = &preview["association_counts"];
    assert_eq!(
        (counts["notes"].as_u64(), counts["activities"].as_u64(), counts["reminders"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{preview}"
    );
    assert_eq!(
        (counts["relationship_edges"].as_u64(), counts["household_memberships"].as_u64()),
        (Some(4), Some(1)),
        "{preview}"
    );

    let open = ada.post("/api/v1/contacts/merge", json!({ "keep_id": ann, "merge_id": twin })).await;
    let open = ok(open, 400).await;
    assert_eq!(open["details"]["field"], "resolutions", "{open}");
    assert!(open["message"].as_str().unwrap().contains("organization"));
    assert_eq!(
        ok(ada.post("/api/v1/contacts/merge", json!({ "keep_id": ann, "merge_id": ann })).await, 400).await["details"]
            ["field"],
        "merge_id"
    );

    let merged = ada
        .post(
            "/api/v1/contacts/merge",
            json!({ "keep_id": ann, "merge_id": twin, "resolutions": { "organization": "Initech" } }),
        )
        .await;
    let merged = ok(merged, 200).await;
    assert_eq!(merged["message"], "Contacts merged");
    assert_eq!(
        (merged["moved"]["notes"].as_u64(), merged["moved"]["relationship_edges"].as_u64()),
        (Some(1), Some(1)),
        "the edge to Cy moved, the others were set aside: {merged}"
    );
    let kept = &merged["contact"];
    assert_eq!((kept["org"].as_str(), kept["nickname"].as_str()), (Some("Initech"), Some("Annie")), "{kept}");
    assert_eq!(kept["card"]["emails"].as_array().unwrap().len(), 2, "{kept}");
    assert_eq!(ada.get(&format!("/api/v1/contacts/{twin}")).await.status(), 404, "the merged one is gone");

    let notes = ok(ada.get(&format!("/api/v1/contacts/{ann}/notes")).await, 200).await.to_string();
    assert!(notes.contains("kept note") && notes.contains("moved note"), "{notes}");
    let activities = ok(ada.get("/api/v1/activities").await, 200).await;
    assert_eq!(activities["activities"][0]["contact_ids"], json!([ann, bo]), "{activities}");
    let reminders = ok(ada.get(&format!("/api/v1/contacts/{ann}/reminders")).await, 200).await.to_string();
    assert!(reminders.contains("Call"), "{reminders}");
    let out = ok(ada.get(&format!("/api/v1/contacts/{ann}/relationships")).await, 200).await;
    let incoming = ok(ada.get(&format!("/api/v1/contacts/{ann}/incoming-relationships")).await, 200).await;
    let all = format!("{out}{incoming}");
    let edges: Vec<(u64, u64)> = [out, incoming]
        .iter()
        .flat_map(|list| {
            list.as_array().cloned().or_else(|| list["relationships"].as_array().cloned()).unwrap_or_default()
        })
        .map(|e| (e["source_contact_id"].as_u64().unwrap(), e["target_contact_id"].as_u64().unwrap()))
        .collect();
    let mut edges = edges;
    edges.sort();
    edges.dedup();
    let mut expected = vec![(ann, bo), (cy, ann)];
    expected.sort();
    assert_eq!(edges, expected, "no edge to itself, none doubled: {all}");
    let members = ok(ada.get(&format!("/api/v1/households/{house}/members")).await, 200).await;
    let ids: Vec<u64> =
        members["members"].as_array().unwrap().iter().map(|m| m["contact_id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![ann], "one membership: {members}");
    let scan = ok(ada.get("/api/v1/contacts/duplicates").await, 200).await;
    assert_eq!(scan["total"], 0, "no pair left: {scan}");

    // Another user can merge nothing of ada's, nor ada's into theirs.
    let bob = server.sign_up("bob").await;
    let (own, _) = contact(&bob, "Own", "One", json!({})).await;
    for body in [
        json!({ "keep_id": ann, "merge_id": bo }),
        json!({ "keep_id": own, "merge_id": bo }),
        json!({ "keep_id": bo, "merge_id": own }),
    ] {
        assert_eq!(bob.post("/api/v1/contacts/merge", body.clone()).await.status(), 404, "{body}");
        assert_eq!(bob.post("/api/v1/contacts/merge/preview", body.clone()).await.status(), 404, "{body}");
    }
    assert_eq!(ada.get(&format!("/api/v1/contacts/{bo}")).await.status(), 200);
}

/// Bulk actions: circles, tags, archive, favourite and delete over a selection, in one request;
/// a contact of someone else's is reported, never touched.
#[tokio::test]
async fn bulk_actions_change_a_selection_and_report_what_they_could_not_touch() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let (a, a_uid) = contact(&ada, "Ann", "One", json!({})).await;
    let (b, b_uid) = contact(&ada, "Bea", "Two", json!({ "keywords": ["Work"] })).await;
    let (theirs, theirs_uid) = contact(&bob, "Bob", "Own", json!({})).await;
    let run = |body: Value| {
        let ada = ada.clone();
        async move { ok(ada.post("/api/v1/contacts/bulk", body).await, 200).await }
    };
    let done =
        run(json!({ "action": "add_circle", "vcard_uids": [a_uid, b_uid, theirs_uid], "circle": "Climbing" })).await;
    assert_eq!(
        (done["total"].as_u64(), done["succeeded"].as_u64(), done["failed"].as_u64()),
        (Some(3), Some(2), Some(1)),
        "{done}"
    );
    assert_eq!(done["failures"][0]["reason"], "contact not found or not owned");
    run(json!({ "action": "add_tag", "ids": [a, b], "tag": "work" })).await;
    run(json!({ "action": "favorite", "ids": [a] })).await;
    run(json!({ "action": "archive", "ids": [b] })).await;
    let one: Value = ada.get(&format!("/api/v1/contacts/{a}")).await.json().await.unwrap();
    let two: Value = ada.get(&format!("/api/v1/contacts/{b}")).await.json().await.unwrap();
    assert_eq!(
        (one["circles"].clone(), one["tags"].clone(), one["is_favorite"].clone()),
        (json!(["Climbing"]), json!(["work"]), json!(true)),
        "{one}"
    );
    assert_eq!(two["tags"], json!(["Work"]), "a tag it has already is not doubled: {two}");
    assert_eq!((two["archived"].as_bool(), two["circles"].clone()), (Some(true), json!(["Climbing"])), "{two}");
    run(json!({ "action": "remove_circle", "ids": [a, b], "circle": "climbing" })).await;
    let one: Value = ada.get(&format!("/api/v1/contacts/{a}")).await.json().await.unwrap();
    assert_eq!(one["circles"], json!([]));
    let refused = ada.post("/api/v1/contacts/bulk", json!({ "action": "add_tag", "ids": [a] })).await;
    assert_eq!(ok(refused, 400).await["details"]["field"], "tag");
    let refused = ada.post("/api/v1/contacts/bulk", json!({ "action": "archive", "ids": [] })).await;
    assert_eq!(ok(refused, 400).await["details"]["field"], "vcard_uids");
    let deleted = run(json!({ "action": "delete", "ids": [a, b, theirs] })).await;
    assert_eq!((deleted["succeeded"].as_u64(), deleted["failed"].as_u64()), (Some(2), Some(1)), "{deleted}");
    assert_eq!(ada.get(&format!("/api/v1/contacts/{a}")).await.status(), 404);
    assert_eq!(bob.get(&format!("/api/v1/contacts/{theirs}")).await.status(), 200, "bob's contact untouched");
    let audit = ada.get("/api/v1/audit/export").await.text().await.unwrap();
    assert!(
        audit.lines().filter(|l| l.contains(",contact,") && l.contains(",update,")).count() >= 6,
        "one audit entry per contact and change: {audit}"
    );
}

/// Everything a merge touches, as the API shows it, without what every write changes (revision,
/// ETag, update instant).
async fn state_of(client: &Client, contacts: &[u64], house: u64) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for key in ["revision", "etag", "updated_at"] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(list) => list.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut out = serde_json::Map::new();
    for id in contacts {
        for path in ["", "/notes", "/reminders", "/relationships", "/incoming-relationships"] {
            let got: Value = client.get(&format!("/api/v1/contacts/{id}{path}")).await.json().await.unwrap();
            out.insert(format!("{id}{path}"), got);
        }
    }
    out.insert("activities".into(), client.get("/api/v1/activities").await.json().await.unwrap());
    out.insert(
        "members".into(),
        client.get(&format!("/api/v1/households/{house}/members")).await.json().await.unwrap(),
    );
    let mut value = Value::Object(out);
    strip(&mut value);
    value
}

/// A merge taken back: both contacts at their own ids and every record moved or set aside are
/// as they were; once undone it cannot be undone again, and a merge whose result changed since
/// cannot be undone at all.
#[tokio::test]
async fn a_merge_is_undone_exactly_unless_something_changed_since() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, _) = contact(
        &ada,
        "Ann",
        "Lee",
        json!({ "emails": [{ "address": "ann@example.org" }], "organizations": [{ "name": "Acme" }] }),
    )
    .await;
    let (twin, _) = contact(
        &ada,
        "Ann",
        "Lee",
        json!({ "emails": [{ "address": "ann.lee@work.example" }], "organizations": [{ "name": "Initech" }] }),
    )
    .await;
    let (bo, _) = contact(&ada, "Bo", "Ray", json!({})).await;
    ok(ada.post(&format!("/api/v1/contacts/{twin}/notes"), json!({ "content": "moved note" })).await, 201).await;
    let house = attach(&ada, ann, twin, bo, &[(ann, bo), (twin, bo), (twin, ann), (bo, twin)]).await;
    let before = state_of(&ada, &[ann, twin, bo], house).await;

    let merged = ada
        .post(
            "/api/v1/contacts/merge",
            json!({ "keep_id": ann, "merge_id": twin, "resolutions": { "organization": "Initech" } }),
        )
        .await;
    let merged = ok(merged, 200).await;
    assert_eq!(merged["undo_id"], twin);
    assert_ne!(state_of(&ada, &[ann, twin, bo], house).await, before, "the merge changed things");

    let restored = ok(ada.post(&format!("/api/v1/contacts/merge/{twin}/undo"), json!({})).await, 200).await;
    assert_eq!(restored["id"], twin, "back at its own id");
    let after = state_of(&ada, &[ann, twin, bo], house).await;
    assert_eq!(after, before, "everything as it was");
    assert_eq!(ada.post(&format!("/api/v1/contacts/merge/{twin}/undo"), json!({})).await.status(), 404, "undone once");

    // Merged again, then the kept contact is edited: the merge stays.
    let merged = ada
        .post(
            "/api/v1/contacts/merge",
            json!({ "keep_id": ann, "merge_id": twin, "resolutions": { "organization": "Acme" } }),
        )
        .await;
    ok(merged, 200).await;
    ok(ada.send(reqwest::Method::PUT, &format!("/api/v1/contacts/{ann}"), json!({ "nickname": "Annie" })).await, 200)
        .await;
    let refused = ok(ada.post(&format!("/api/v1/contacts/merge/{twin}/undo"), json!({})).await, 409).await;
    assert!(refused["message"].as_str().unwrap().contains("changed since"), "{refused}");
    assert_eq!(ada.get(&format!("/api/v1/contacts/{twin}")).await.status(), 404);

    let bob = server.sign_up("bob").await;
    assert_eq!(bob.post(&format!("/api/v1/contacts/merge/{twin}/undo"), json!({})).await.status(), 404);
}
