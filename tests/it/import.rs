//! Imports against the real binary: uploads of every format with per-row duplicate detection,
//! confirm decisions and their idempotence, the session rules, the upload limits, the import
//! runs, pictures, the command line, and every exporter's cards (exports: `export.rs`; uploads
//! arriving in pieces: `import_stream.rs`).

use serde_json::{Value, json};

use crate::export::export;
use crate::helpers::{Client, Instance};

pub(crate) const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../codecs/tests/fixtures/vcf");
pub(crate) const RFC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rfc-cards");

pub(crate) fn sample(name: &str) -> Vec<u8> {
    std::fs::read(format!("{SAMPLES}/{name}")).expect("sample")
}

/// A multipart body holding `bytes` as the field `file` named `filename`.
pub(crate) fn multipart(boundary: &str, filename: &str, bytes: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

pub(crate) async fn upload(client: &Client, path: &str, filename: &str, bytes: &[u8]) -> reqwest::Response {
    let boundary = "mycorrhizal-import-boundary";
    let body = multipart(boundary, filename, bytes);
    client
        .request(reqwest::Method::POST, path)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .expect("upload")
}

pub(crate) async fn ok_json(response: reqwest::Response) -> Value {
    let status = response.status();
    let body: Value = response.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body
}

/// Confirms every row with its suggested action.
pub(crate) fn suggested(preview: &Value) -> Value {
    let actions: Vec<Value> = preview["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| json!({ "row_index": r["row_index"], "action": r["suggested_action"] }))
        .collect();
    json!({ "session_id": preview["session_id"], "actions": actions })
}

pub(crate) async fn contacts(client: &Client) -> Vec<Value> {
    let page = ok_json(client.get("/api/v1/contacts?limit=100").await).await;
    page["contacts"].as_array().expect("contacts").clone()
}

#[tokio::test]
async fn vcards_upload_preview_confirm_with_photos_and_per_card_problems() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let mut file = sample("apple.v3.vcf");
    file.extend_from_slice(b"BEGIN:VCARD\r\nVERSION:3.0\r\nN:;;;;\r\nEND:VCARD\r\n");
    file.extend(sample("nextcloud.v4.vcf"));
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "all.vcf", &file).await).await;
    assert_eq!(preview["total_rows"], 4);
    assert_eq!(preview["valid_rows"], 3);
    assert_eq!(preview["error_count"], 1);
    let rows = preview["rows"].as_array().expect("rows");
    assert_eq!(rows[0]["parsed_contact"]["firstname"], "José");
    assert_eq!(rows[0]["parsed_contact"]["birthday"], "--07-14");
    assert_eq!(rows[0]["parsed_contact"]["tags"], "Climbing, Friends");
    assert_eq!(rows[0]["suggested_action"], "add");
    assert!(rows[0]["duplicate_match"].is_null() && rows[0]["merge_diff"].is_null());
    let broken = &rows[2];
    assert_eq!(broken["suggested_action"], "skip");
    let reason = broken["validation_errors"][0].as_str().expect("reason");
    assert!(reason.contains("line 36") && reason.contains("card.name"), "{reason}");

    let mut actions = suggested(&preview);
    actions["actions"][2]["action"] = json!("add");
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", actions.clone()).await).await;
    assert_eq!(result["total_processed"], 4);
    assert_eq!(result["created"], 3);
    assert_eq!(result["error_count"], 1);
    assert_eq!(result["errors"].as_array().expect("errors").len(), 1);
    assert!(result["errors"][0].as_str().expect("e").starts_with("row 2 (line 36)"), "{result}");

    let list = contacts(&ada).await;
    assert_eq!(list.len(), 3);
    let ada_l = list.iter().find(|c| c["firstname"] == "Ada").expect("Ada");
    let id = ada_l["id"].as_u64().expect("id");
    let picture = ada.get(&format!("/api/v1/contacts/{id}/profile_picture")).await;
    assert_eq!(picture.status(), 200, "the inline photo became the profile picture");
    assert_eq!(picture.headers()["content-type"], "image/png");
    let stored = ok_json(ada.get(&format!("/api/v1/contacts/{id}")).await).await;
    assert!(stored["card"].get("media").is_none(), "the photo is a file, not card text");

    // Confirming again returns the first result and applies nothing.
    let again = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", actions).await).await;
    assert_eq!(again, result);
    assert_eq!(contacts(&ada).await.len(), 3);

    let runs = ok_json(ada.get("/api/v1/contacts/import/runs").await).await;
    let run = &runs["import_runs"][0];
    assert_eq!(
        (run["format"].as_str(), run["created"].as_u64(), run["errors"].as_u64()),
        (Some("vcf"), Some(3), Some(1))
    );
}

#[tokio::test]
async fn duplicates_are_found_by_uid_email_phone_and_name_and_update_merges() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let existing = ada
        .post(
            "/api/v1/contacts",
            json!({ "firstname": "José", "lastname": "García", "email": "JOSE@example.com", "phone": "+34 600 000 000" }),
        )
        .await;
    assert_eq!(existing.status(), 201);
    let existing: Value = existing.json().await.expect("json");
    let jose = existing["contact"]["id"].as_u64().expect("id");
    let by_phone = ada.post("/api/v1/contacts", json!({ "firstname": "Phone", "phone": "020 7946 0958" })).await;
    let by_phone = by_phone.json::<Value>().await.expect("json")["contact"]["id"].as_u64().expect("id");
    let by_name = ada.post("/api/v1/contacts", json!({ "firstname": "Grace", "lastname": "Hopper" })).await;
    let by_name = by_name.json::<Value>().await.expect("json")["contact"]["id"].as_u64().expect("id");

    let mut file = sample("apple.v3.vcf");
    file.extend(sample("google.v3.vcf"));
    file.extend(sample("apple.v3.vcf")); // the same two cards again: within-upload duplicates
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "dups.vcf", &file).await).await;
    let rows = preview["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 6);
    let m = &rows[0]["duplicate_match"];
    assert_eq!((m["existing_contact_id"].as_u64(), m["match_reason"].as_str()), (Some(jose), Some("email")));
    assert_eq!(rows[0]["suggested_action"], "update");
    let diff = &rows[0]["merge_diff"];
    assert!(
        diff["updated"].as_array().expect("updated").iter().any(|u| u["field"] == "middle_name" && u["new"] == "Luis")
    );
    assert!(
        diff["added"]
            .as_array()
            .expect("added")
            .iter()
            .any(|a| a["kind"] == "phone" && a["value"] == "+34 600 123 456")
    );
    assert_eq!(rows[1]["duplicate_match"]["existing_contact_id"], by_phone, "matched by phone number");
    assert_eq!(rows[1]["duplicate_match"]["match_reason"], "phone");
    assert_eq!(rows[2]["duplicate_match"]["existing_contact_id"], by_name);
    assert_eq!(rows[2]["duplicate_match"]["match_reason"], "name");
    assert!(rows[3]["duplicate_match"].is_null(), "Nameless Corp is new");
    assert_eq!(rows[4]["batch_duplicate_of"], 0);
    assert_eq!(rows[5]["batch_duplicate_of"], 1);
    assert_eq!(rows[4]["suggested_action"], "skip");
    assert_eq!(preview["duplicate_count"], 5);

    let mut decision = suggested(&preview);
    decision["actions"][1]["action"] = json!("skip");
    decision["actions"][2]["action"] = json!("skip");
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", decision).await).await;
    assert_eq!((result["created"].as_u64(), result["updated"].as_u64()), (Some(1), Some(1)), "{result}");
    assert_eq!(result["skipped"], 4);
    let merged = ok_json(ada.get(&format!("/api/v1/contacts/{jose}")).await).await;
    let phones: Vec<&str> =
        merged["card"]["phones"].as_array().expect("phones").iter().filter_map(|p| p["number"].as_str()).collect();
    assert!(phones.contains(&"+34 600 000 000") && phones.contains(&"+34 600 123 456"), "{phones:?}");
    let emails: Vec<&str> =
        merged["card"]["emails"].as_array().expect("emails").iter().filter_map(|e| e["address"].as_str()).collect();
    assert_eq!(emails.iter().filter(|e| e.eq_ignore_ascii_case("jose@example.com")).count(), 1, "{emails:?}");
    assert_eq!(contacts(&ada).await.len(), 4);

    // The same file again: now every card matches, the first by its UID.
    let again = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "dups.vcf", &file).await).await;
    let nameless = &again["rows"][3]["duplicate_match"];
    assert_eq!(nameless["match_reason"], "uid", "a card without UID gets a stable one: {nameless}");
}

#[tokio::test]
async fn session_rules_of_the_confirm_endpoints() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let unknown = ada.post("/api/v1/contacts/import/vcf/confirm", json!({ "session_id": "nope", "actions": [] })).await;
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.json::<Value>().await.expect("json")["code"], "NOT_FOUND");

    let records = json!({ "records": [
        { "card": { "name": { "full": "Ann Lee" }, "emails": [{ "address": "ann@example.org" }] }, "crm": { "circles": ["Book club"] }, "gender": "female" },
        { "card": { "emails": [] } },
        { "card": { "name": { "components": [{ "kind": "given", "value": "Bo" }] } } },
    ]});
    let preview = ok_json(ada.post("/api/v1/contacts/import/records", records).await).await;
    assert_eq!(preview["error_count"], 1);
    assert!(preview["rows"][1]["validation_errors"][0].as_str().expect("e").contains("records[1].card.name"));
    let session = preview["session_id"].clone();
    let foreign = bob.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await;
    assert_eq!(foreign.status(), 404, "another user's session does not exist for them");
    let wrong = ada.post("/api/v1/contacts/import/confirm", suggested(&preview)).await;
    assert_eq!(wrong.status(), 400);
    let wrong: Value = wrong.json().await.expect("json");
    assert_eq!((wrong["code"].as_str(), wrong["details"]["field"].as_str()), (Some("INVALID_INPUT"), Some("session")));
    let bad_action = json!({ "session_id": session, "actions": [{ "row_index": 0, "action": "merge" }] });
    let bad = ada.post("/api/v1/contacts/import/vcf/confirm", bad_action).await;
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.expect("json")["details"]["field"], "actions[0].action");
    let out_of_range = json!({ "session_id": session, "actions": [{ "row_index": 9, "action": "add" }] });
    assert_eq!(ada.post("/api/v1/contacts/import/vcf/confirm", out_of_range).await.status(), 400);
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    assert_eq!((result["created"].as_u64(), result["skipped"].as_u64()), (Some(2), Some(1)));
    let ann = contacts(&ada).await.into_iter().find(|c| c["firstname"] == "Ann").expect("Ann");
    let ann = ok_json(ada.get(&format!("/api/v1/contacts/{}", ann["id"])).await).await;
    assert_eq!((ann["crm"]["circles"][0].as_str(), ann["gender"].as_str()), (Some("Book club"), Some("female")));

    for count in [0usize, 501] {
        let many: Vec<Value> =
            (0..count).map(|i| json!({ "card": { "name": { "full": format!("P {i}") } } })).collect();
        let refused = ada.post("/api/v1/contacts/import/records", json!({ "records": many })).await;
        assert_eq!(refused.status(), 400, "{count} records");
        let body: Value = refused.json().await.expect("json");
        assert_eq!(
            (body["code"].as_str(), body["details"]["field"].as_str()),
            (Some("VALIDATION_ERROR"), Some("records"))
        );
    }

    let csv =
        ok_json(upload(&ada, "/api/v1/contacts/import/upload", "people.csv", b"First Name,Last Name\nKim,Lee\n").await)
            .await;
    let early = json!({ "session_id": csv["session_id"], "actions": [] });
    let unpreviewed = ada.post("/api/v1/contacts/import/confirm", early.clone()).await;
    assert_eq!(unpreviewed.status(), 400, "a CSV session needs its mapping previewed first");
    let on_vcf = ada.post("/api/v1/contacts/import/vcf/confirm", early).await;
    assert_eq!(on_vcf.status(), 400, "a CSV session is not confirmed on the vCard route");

    // A vCard session sent to the CSV confirm is refused and left open: the right route
    // still applies it, once.
    let vcf = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Vic Card\r\nN:Card;Vic;;;\r\nEND:VCARD\r\n";
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "one.vcf", vcf).await).await;
    let wrong = ada.post("/api/v1/contacts/import/confirm", suggested(&preview)).await;
    assert_eq!(wrong.status(), 400, "a vCard session is not confirmed on the CSV route");
    let wrong: Value = wrong.json().await.expect("json");
    assert_eq!((wrong["code"].as_str(), wrong["details"]["field"].as_str()), (Some("INVALID_INPUT"), Some("session")));
    assert!(contacts(&ada).await.iter().all(|c| c["firstname"] != "Vic"), "nothing applied");
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    assert_eq!(result["created"], 1);
}

/// Decisions: a row without one is skipped and still counted; two confirms of one session at
/// once apply it once and both answer with that result; an update keeps the name parts the row
/// lacks; a kept row that lost an unreadable date says so in `errors` without counting as failed.
#[tokio::test]
async fn a_session_is_applied_once_and_an_update_keeps_what_the_row_lacks() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let marie = ada
        .post("/api/v1/contacts", json!({ "firstname": "Marie", "lastname": "Curie", "email": "marie@example.fr" }))
        .await;
    let marie = marie.json::<Value>().await.expect("json")["contact"]["id"].as_u64().expect("id");
    let file = "First Name,E-mail 1 - Value,Birthday\nMaria,marie@example.fr,31/31/1867\nAnn,ann@example.org,\nBo,bo@example.org,\n";
    let up = ok_json(upload(&ada, "/api/v1/contacts/import/upload", "people.csv", file.as_bytes()).await).await;
    let mapping = json!({ "session_id": up["session_id"], "mappings": up["suggested_mappings"] });
    let preview = ok_json(ada.post("/api/v1/contacts/import/preview", mapping).await).await;
    assert_eq!(preview["rows"][0]["duplicate_match"]["existing_contact_id"], marie);
    assert!(preview["rows"][0]["validation_errors"][0].as_str().expect("e").contains("31/31/1867"));
    // Row 2 gets no decision.
    let decision = json!({ "session_id": preview["session_id"], "actions": [
        { "row_index": 0, "action": "update" }, { "row_index": 1, "action": "add" }] });
    let (first, second) = tokio::join!(
        ada.post("/api/v1/contacts/import/confirm", decision.clone()),
        ada.post("/api/v1/contacts/import/confirm", decision.clone())
    );
    let (first, second) = (ok_json(first).await, ok_json(second).await);
    assert_eq!(first, second, "the racing confirm answers with the one result");
    assert_eq!(
        (
            first["total_processed"].as_u64(),
            first["created"].as_u64(),
            first["updated"].as_u64(),
            first["skipped"].as_u64()
        ),
        (Some(3), Some(1), Some(1), Some(1)),
        "{first}"
    );
    assert_eq!(first["error_count"], 0, "{first}");
    let errors = first["errors"].as_array().expect("errors");
    assert!(errors.len() == 1 && errors[0].as_str().expect("e").contains("imported without a value"), "{errors:?}");
    let again = ok_json(ada.post("/api/v1/contacts/import/confirm", decision).await).await;
    assert_eq!(again, first, "a repeat is the first result");
    let list = contacts(&ada).await;
    assert_eq!(list.len(), 2, "Marie merged, Ann added once, Bo skipped: {list:?}");
    let merged = ok_json(ada.get(&format!("/api/v1/contacts/{marie}")).await).await;
    assert_eq!((merged["firstname"].as_str(), merged["lastname"].as_str()), (Some("Maria"), Some("Curie")), "{merged}");
    let late = json!({ "session_id": up["session_id"], "mappings": up["suggested_mappings"] });
    assert_eq!(
        ada.post("/api/v1/contacts/import/preview", late).await.status(),
        409,
        "a confirmed session's rows stand"
    );
}

#[tokio::test]
async fn csv_upload_mapping_preview_confirm() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let file = "First Name,Last Name,E-mail 1 - Value,Phone 1 - Value,Birthday,Labels\r\n\
                Marie,Curie,marie@example.fr,+33 1 55 55 01 02,1867-11-07,Science ::: * myContacts\r\n\
                Pierre,Curie,pierre@example.fr,,1859-05-15,Science\r\n";
    let up = ok_json(upload(&ada, "/api/v1/contacts/import/upload", "google.csv", file.as_bytes()).await).await;
    assert_eq!(up["row_count"], 2);
    assert_eq!(up["headers"][0], "First Name");
    assert_eq!(up["sample_data"][0][0], "Marie");
    let mappings = up["suggested_mappings"].clone();
    let fields: Vec<&str> =
        mappings.as_array().expect("m").iter().filter_map(|m| m["contact_field"].as_str()).collect();
    assert!(fields.contains(&"firstname") && fields.contains(&"email"), "{fields:?}");
    let bad = json!({ "session_id": up["session_id"], "mappings": [{ "csv_column": "First Name", "contact_field": "shoe_size" }] });
    let refused = ada.post("/api/v1/contacts/import/preview", bad).await;
    assert_eq!(refused.status(), 400);
    let preview = ok_json(
        ada.post("/api/v1/contacts/import/preview", json!({ "session_id": up["session_id"], "mappings": mappings }))
            .await,
    )
    .await;
    assert_eq!(preview["rows"][0]["parsed_contact"]["email"], "marie@example.fr");
    assert_eq!(preview["rows"][0]["parsed_contact"]["birthday"], "1867-11-07");
    let result = ok_json(ada.post("/api/v1/contacts/import/confirm", suggested(&preview)).await).await;
    assert_eq!(result["created"], 2);
    let names: Vec<String> =
        contacts(&ada).await.iter().map(|c| c["firstname"].as_str().unwrap_or("").to_string()).collect();
    assert!(names.contains(&"Marie".to_string()) && names.contains(&"Pierre".to_string()));
}

#[tokio::test]
async fn jscontact_uploads_a_card_a_list_or_a_group() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let one = std::fs::read(format!("{RFC}/johndoe.jscontact.json")).expect("fixture");
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/jscontact/upload", "doe.json", &one).await).await;
    assert_eq!(preview["rows"][0]["parsed_contact"]["lastname"], "Doe");
    let group = br#"{"@type":"CardGroup","cards":[{"@type":"Card","name":{"full":"Ann Lee"}},{"@type":"Card","name":{"full":"Bo Chen"}}]}"#;
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/jscontact/upload", "g.json", group).await).await;
    assert_eq!(preview["total_rows"], 2);
    // A JSContact session is a vCard-family session: the CSV confirm refuses it, the vCard
    // confirm applies it.
    let wrong = ada.post("/api/v1/contacts/import/confirm", suggested(&preview)).await;
    assert_eq!(wrong.status(), 400);
    assert_eq!(wrong.json::<Value>().await.expect("json")["details"]["field"], "session");
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    assert_eq!(result["created"], 2);
    let broken = upload(&ada, "/api/v1/contacts/import/jscontact/upload", "b.json", b"{oops").await;
    assert_eq!(broken.status(), 400);
    assert_eq!(broken.json::<Value>().await.expect("json")["details"]["field"], "file");
}

#[tokio::test]
async fn upload_limits_and_file_checks() {
    let server = Instance::new().with("IMPORT_MAX_CARDS", "2").with("IMPORT_MAX_FILE_MB", "1").spawn();
    let ada = server.sign_up("ada").await;
    let three = sample("apple.v3.vcf").into_iter().chain(sample("android.v21.vcf")).collect::<Vec<u8>>();
    let refused = upload(&ada, "/api/v1/contacts/import/vcf/upload", "three.vcf", &three).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["details"]["field"], "file");
    assert!(body["message"].as_str().expect("m").contains("at most 2"), "{body}");
    let big = vec![b'x'; 1024 * 1024 + 10];
    assert_eq!(upload(&ada, "/api/v1/contacts/import/vcf/upload", "big.vcf", &big).await.status(), 413);
    let wrong = upload(&ada, "/api/v1/contacts/import/vcf/upload", "cards.pdf", &sample("android.v21.vcf")).await;
    assert_eq!(wrong.status(), 400);
    let missing = ada
        .request(reqwest::Method::POST, "/api/v1/contacts/import/vcf/upload")
        .header("content-type", "multipart/form-data; boundary=x")
        .body("--x--\r\n")
        .send()
        .await
        .expect("send");
    assert_eq!(missing.status(), 400);
    let not_vcard = upload(&ada, "/api/v1/contacts/import/vcf/upload", "x.vcf", b"hello").await;
    let preview = ok_json(not_vcard).await;
    assert_eq!(preview["error_count"], 1, "a file with no card is one problem row: {preview}");
    // A records batch is held to the same configured size, and the 413 says which limit.
    let note = "x".repeat(1024 * 1024);
    let heavy = json!({ "records": [{ "card": { "name": { "full": "Heavy" }, "notes": [{ "note": note }] } }] });
    let refused = ada.post("/api/v1/contacts/import/records", heavy).await;
    assert_eq!(refused.status(), 413);
    let body: Value = refused.json().await.expect("json");
    assert_eq!(
        (body["code"].as_str(), body["details"]["limit_bytes"].as_u64()),
        (Some("PAYLOAD_TOO_LARGE"), Some(1024 * 1024))
    );
    let light = json!({ "records": [{ "card": { "name": { "full": "Light" } } }] });
    assert_eq!(ada.post("/api/v1/contacts/import/records", light).await.status(), 200);
}

/// Previews wait for their confirm: past 32 unconfirmed sessions a new upload is refused with
/// 429 and `Retry-After` (no earlier preview is dropped); a confirm makes room.
#[tokio::test]
async fn unconfirmed_sessions_are_kept_and_new_ones_refused_past_the_allowance() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let batch = |i: usize| json!({ "records": [{ "card": { "name": { "full": format!("Person {i}") } } }] });
    let mut previews = Vec::new();
    for i in 0..32 {
        previews.push(ok_json(ada.post("/api/v1/contacts/import/records", batch(i)).await).await);
    }
    let refused = ada.post("/api/v1/contacts/import/records", batch(32)).await;
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"].to_str().expect("header").parse().expect("seconds");
    assert!((1..=15 * 60).contains(&wait), "{wait}");
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["code"], "RATE_LIMIT_EXCEEDED");
    let csv = upload(&ada, "/api/v1/contacts/import/upload", "p.csv", b"First Name\nKim\n").await;
    assert_eq!(csv.status(), 429, "every upload route shares the allowance");
    assert_eq!(bob.post("/api/v1/contacts/import/records", batch(0)).await.status(), 200, "bob has his own");
    // The first preview is still there to confirm, and confirming it makes room for one more.
    let first = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&previews[0])).await).await;
    assert_eq!(first["created"], 1, "{first}");
    ok_json(ada.post("/api/v1/contacts/import/records", batch(32)).await).await;
    assert_eq!(ada.post("/api/v1/contacts/import/records", batch(33)).await.status(), 429);
    let again = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&previews[0])).await).await;
    assert_eq!(again, first, "a confirmed session still answers a repeat");
}

#[tokio::test]
async fn the_import_command_uses_the_same_path_offline() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    ada.post("/api/v1/contacts", json!({ "firstname": "Jürgen", "lastname": "Müller", "email": "juergen@example.de" }))
        .await;
    server.terminate();
    let path = format!("{SAMPLES}/android.v21.vcf");
    let (status, out) = instance.run_args(&["import", "--user", "ada", &path]);
    assert!(status.success(), "{out}");
    assert!(out.contains("2 rows: 1 created, 0 updated, 1 skipped, 0 failed"), "the duplicate is skipped: {out}");
    let (status, out) = instance.run_args(&["import", "--user", "ada@example.org", "--update-duplicates", &path]);
    assert!(status.success(), "{out}");
    assert!(out.contains("1 updated"), "{out}");
    let (status, out) = instance.run_args(&["import", "--user", "nobody", &path]);
    assert!(!status.success() && out.contains("no user"), "{out}");
    let server = instance.spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let list = contacts(&ada).await;
    assert_eq!(list.len(), 2, "{list:?}");
    let runs = ok_json(ada.get("/api/v1/contacts/import/runs").await).await;
    assert_eq!(runs["import_runs"].as_array().expect("runs").len(), 2);
}

/// The names of a user's stored pictures, and the pictures its live contacts name, read from
/// the stopped server's database.
pub(crate) fn stored_pictures(instance: &Instance, user: u64) -> (Vec<String>, Vec<String>) {
    let engine = crate::helpers::open_engine(&instance.database());
    let view = engine.user(mycorrhizal_engine::UserId(user)).view().expect("view");
    let stored = view.blob_names().expect("blobs");
    let mut named: Vec<String> = view
        .list::<mycorrhizal::crm::contact::Contact>()
        .expect("contacts")
        .into_iter()
        .map(|c| c.body.photo)
        .filter(|p| !p.is_empty())
        .collect();
    named.sort();
    (stored, named)
}

/// Stops `server`, reads what `user` has stored (see [`stored_pictures`]), and starts it again;
/// the user signs in anew.
async fn restart_and_look(
    instance: &Instance,
    mut server: crate::helpers::TestServer,
    user: &str,
    id: u64,
) -> (crate::helpers::TestServer, Client, (Vec<String>, Vec<String>)) {
    assert!(server.terminate().success());
    let stored = stored_pictures(instance, id);
    let server = instance.spawn();
    let client = server.sign_in(user, crate::helpers::PASSWORD).await;
    (server, client, stored)
}

#[tokio::test]
async fn imported_pictures_land_with_their_contacts_and_leave_nothing_stray() {
    let instance = Instance::new();
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let user = ada.id;
    let card = sample("apple.v3.vcf");
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "a.vcf", &card).await).await;
    ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    let with_picture: Vec<Value> = contacts(&ada).await.into_iter().filter(|c| c["photo"] != "").collect();
    assert_eq!(with_picture.len(), 1, "the one card with a photo");
    let id = with_picture[0]["id"].as_u64().expect("id");
    let name = with_picture[0]["photo"].as_str().expect("photo").to_string();
    let served = ada.get(&format!("/api/v1/contacts/{id}/profile_picture")).await;
    assert_eq!(served.status(), 200);
    let png = served.bytes().await.expect("bytes");
    assert!(png.starts_with(b"\x89PNG"), "the card's picture, served");
    let (server, ada, stored) = restart_and_look(&instance, server, "ada", user).await;
    assert_eq!(stored, (vec![name.clone()], vec![name.clone()]), "the picture the contact names, nothing else");
    assert_eq!(server_picture(&ada, id).await, png, "kept across a restart");

    // The same card again, merged into the contact: it keeps its picture, the new copy is not stored.
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "a.vcf", &card).await).await;
    let actions: Vec<Value> = preview["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| json!({ "row_index": r["row_index"], "action": if r["duplicate_match"].is_null() { "skip" } else { "update" } }))
        .collect();
    let result = ok_json(
        ada.post(
            "/api/v1/contacts/import/vcf/confirm",
            json!({ "session_id": preview["session_id"], "actions": actions }),
        )
        .await,
    )
    .await;
    assert!(result["updated"].as_u64().expect("updated") >= 1, "{result}");
    let again = ok_json(ada.get(&format!("/api/v1/contacts/{id}")).await).await;
    assert_eq!(again["photo"], name.as_str());

    // A picture uploaded by hand replaces the imported one, in the same commit.
    let replaced = crate::photos::upload(&ada, id, "photo", &png).await;
    assert_eq!(replaced.status(), 200);
    let (server, ada, stored) = restart_and_look(&instance, server, "ada", user).await;
    assert_eq!(stored, (vec![format!("{id}.png")], vec![format!("{id}.png")]), "the imported picture is gone");

    // Deleting the contact removes its picture.
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{id}"), json!({})).await;
    let (_server, _ada, stored) = restart_and_look(&instance, server, "ada", user).await;
    assert_eq!(stored, (Vec::new(), Vec::new()));
}

async fn server_picture(client: &Client, id: u64) -> axum::body::Bytes {
    let response = client.get(&format!("/api/v1/contacts/{id}/profile_picture")).await;
    assert_eq!(response.status(), 200);
    response.bytes().await.expect("bytes")
}

#[tokio::test]
async fn a_file_of_several_batches_lands_whole_with_its_pictures_and_failures_accounted() {
    let instance = Instance::new().with("IMPORT_BATCH_ROWS", "500");
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    // A contact the 1,051st card duplicates: found by the lookups of the last thread's rows.
    let existing = ada.post("/api/v1/contacts", json!({ "firstname": "Pat", "email": "p1050@example.org" })).await;
    let existing = existing.json::<Value>().await.expect("json")["contact"]["id"].as_u64().expect("id");
    // 1,100 cards: three write batches, parsed on several threads and looked up on several;
    // every 100th has a picture. Then the fourth card again, a repeat across threads.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let mut file = String::new();
    for n in 0..1100 {
        let photo = if n % 100 == 0 { format!("PHOTO;ENCODING=b;TYPE=PNG:{png}\r\n") } else { String::new() };
        file.push_str(&format!(
            "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:card-{n}\r\nFN:Person {n}\r\nN:P{n};Person;;;\r\nEMAIL:p{n}@example.org\r\n{photo}END:VCARD\r\n"
        ));
    }
    file.push_str("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:card-3\r\nFN:Person 3\r\nN:P3;Person;;;\r\nEND:VCARD\r\n");
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "many.vcf", file.as_bytes()).await).await;
    assert_eq!(preview["total_rows"], 1101);
    let rows = preview["rows"].as_array().expect("rows");
    assert!(rows.iter().enumerate().all(|(i, r)| r["row_index"] == i), "file order");
    assert_eq!(rows[1050]["duplicate_match"]["existing_contact_id"], existing);
    assert_eq!(rows[1050]["suggested_action"], "update");
    assert_eq!(rows[1100]["batch_duplicate_of"], 3);
    let matched: Vec<usize> = (0..1101).filter(|i| !rows[*i]["duplicate_match"].is_null()).collect();
    let repeats: Vec<usize> = (0..1101).filter(|i| !rows[*i]["batch_duplicate_of"].is_null()).collect();
    assert_eq!((matched, repeats), (vec![1050], vec![1100]));
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    assert_eq!(
        (
            result["created"].as_u64(),
            result["updated"].as_u64(),
            result["skipped"].as_u64(),
            result["error_count"].as_u64()
        ),
        (Some(1099), Some(1), Some(1), Some(0)),
        "{result}"
    );
    let listed = ok_json(ada.get("/api/v1/contacts?limit=1").await).await;
    assert_eq!(listed["total"], 1100);
    let found = ok_json(ada.get("/api/v1/contacts?search=p1099").await).await;
    assert_eq!(found["total"], 1, "the last batch is searchable: {found}");
    let mut server = server;
    assert!(server.terminate().success());
    let (stored, named) = stored_pictures(&instance, ada.id);
    assert_eq!(stored.len(), 11, "one picture per card with one");
    assert_eq!(stored, named, "each stored picture is a contact's, none stray");
}

/// Sessions live in the process: after a restart a confirm of an earlier preview is 404 and
/// nothing of it is applied.
#[tokio::test]
async fn a_restart_forgets_open_sessions() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let records = json!({ "records": [{ "card": { "name": { "full": "Before Restart" } } }] });
    let preview = ok_json(ada.post("/api/v1/contacts/import/records", records).await).await;
    assert!(server.terminate().success());
    let server = instance.spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let lost = ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await;
    assert_eq!(lost.status(), 404);
    assert_eq!(lost.json::<Value>().await.expect("json")["code"], "NOT_FOUND");
    assert!(contacts(&ada).await.is_empty(), "nothing of the lost session was applied");
}

/// An import run is kept per confirm, newest first, and only the 50 most recent stay.
#[tokio::test]
async fn only_the_fifty_most_recent_import_runs_are_kept() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    for i in 0..51 {
        let records = json!({ "records": [{ "card": { "name": { "full": format!("Person {i}") } } }] });
        let preview = ok_json(ada.post("/api/v1/contacts/import/records", records).await).await;
        ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    }
    let runs = ok_json(ada.get("/api/v1/contacts/import/runs").await).await;
    let runs = runs["import_runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 50);
    assert!(runs.iter().all(|r| r["format"] == "records" && r["created"] == 1), "{runs:?}");
    let ids: Vec<u64> = runs.iter().map(|r| r["id"].as_u64().expect("id")).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    assert_eq!(contacts(&ada).await.len(), 51, "pruning runs keeps every contact");
}

/// `categories=circles` files a card's categories under the contact's circles instead of its
/// tags; an unknown choice is refused naming the parameter.
#[tokio::test]
async fn categories_become_circles_when_asked() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bad =
        upload(&ada, "/api/v1/contacts/import/vcf/upload?categories=folders", "g.vcf", &sample("google.v3.vcf")).await;
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.expect("json")["details"]["field"], "categories");
    let path = "/api/v1/contacts/import/vcf/upload?categories=circles";
    let preview = ok_json(upload(&ada, path, "g.vcf", &sample("google.v3.vcf")).await).await;
    ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    let grace = contacts(&ada).await.into_iter().find(|c| c["firstname"] == "Grace").expect("Grace");
    let grace = ok_json(ada.get(&format!("/api/v1/contacts/{}", grace["id"])).await).await;
    let mut circles: Vec<&str> =
        grace["crm"]["circles"].as_array().expect("circles").iter().filter_map(Value::as_str).collect();
    circles.sort();
    assert_eq!(circles, ["Computing"], "Google's system group myContacts is no one's circle: {grace}");
    assert!(grace["card"]["keywords"].is_null(), "no tags: {grace}");
    // The default keeps them as tags.
    let bob = server.sign_up("bob").await;
    let preview =
        ok_json(upload(&bob, "/api/v1/contacts/import/vcf/upload", "g.vcf", &sample("google.v3.vcf")).await).await;
    ok_json(bob.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    let grace = contacts(&bob).await.into_iter().find(|c| c["firstname"] == "Grace").expect("Grace");
    let grace = ok_json(bob.get(&format!("/api/v1/contacts/{}", grace["id"])).await).await;
    assert!(grace["card"]["keywords"].to_string().contains("Computing"), "{grace}");
    assert!(grace["crm"]["circles"].as_array().is_none_or(Vec::is_empty), "{grace}");
}

const EXPORTERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/exporters");

/// The exporter corpus (Apple macOS and iOS, Outlook, Android, Samsung, Thunderbird and its
/// CardBook, DAVx5, Evolution, a hand-edited card of values no type reads; 2.1 with
/// quoted-printable and a photo, 3.0, 4.0): every card imports, the nameless ones named after
/// what they have and a birthday that names no day left out alone, as the preview said; exported
/// as 4.0 and as 3.0, what they held comes back (vendor properties, Apple's labels, the bad
/// birthday's text, the photo), and uploading either export finds every card's own contact.
#[tokio::test]
async fn every_exporter_card_imports_and_comes_back_to_its_own_contact() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let mut file = Vec::new();
    for name in [
        "apple.vcf",
        "outlook.vcf",
        "android.vcf",
        "cardbook.vcf",
        "evolution.vcf",
        "thunderbird.vcf",
        "davx5.vcf",
        "samsung.vcf",
        "ios.vcf",
        "hand-edited.vcf",
    ] {
        file.extend(std::fs::read(format!("{EXPORTERS}/{name}")).expect("fixture"));
    }
    let cards = String::from_utf8_lossy(&file).matches("BEGIN:VCARD").count();
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "phone.vcf", &file).await).await;
    let rows = preview["rows"].as_array().expect("rows").clone();
    assert_eq!((rows.len(), preview["error_count"].as_u64()), (cards, Some(0)), "{preview}");
    let said = |needle: &str| {
        rows.iter().any(|r| {
            r["diagnostics"]
                .as_array()
                .is_some_and(|d| d.iter().any(|d| d.as_str().is_some_and(|d| d.contains(needle))))
        })
    };
    for note in [
        "named \"Grandma\" after its nickname",
        "named \"+905559876543\" after its phone",
        "named \"someone@example.org\" after its email",
        "named \"Northwind Traders\" after its organization",
        "after its address",
        "19723101",
    ] {
        assert!(said(note), "the preview says {note:?}: {rows:#?}");
    }
    let skipped: Vec<&Value> = rows.iter().filter(|r| r["suggested_action"] != "add").collect();
    assert!(skipped.is_empty(), "every card is someone new: {skipped:#?}");
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    assert_eq!((result["created"].as_u64(), result["error_count"].as_u64()), (Some(cards as u64), Some(0)), "{result}");
    let stored = contacts(&ada).await;
    assert_eq!(stored.len(), cards);
    let names: Vec<&str> = stored.iter().filter_map(|c| c["fn"].as_str()).collect();
    assert!(names.contains(&"Grandma") && names.contains(&"Jürgen Schröder"), "{names:?}");
    let mut ids: Vec<u64> = stored.iter().filter_map(|c| c["id"].as_u64()).collect();
    ids.sort_unstable();

    for version in ["4.0", "3.0"] {
        let (_, text) = export(&ada, &format!("/api/v1/export/vcf?version={version}")).await;
        let upper = text.to_uppercase();
        for expected in [
            "X-ABLABEL:STUDIO",
            "X-ABUID:",
            "X-MS-OL-DESIGN",
            "X-EVOLUTION-FILE-AS",
            "X-CARDBOOK-CUSTOM1:CUSTOM VALUE",
            "X-ANDROID-CUSTOM",
            "TZ",
            "GEO",
            "IMPP",
            "GENDER:F",
            "ROLE:CHERCHEUSE",
            "PHOTO",
            "EUROPE/PARIS",
            "X-ADDRESSBOOKSERVER-KIND:GROUP",
            "X-PHONETIC-FIRST-NAME:MEE-RAH",
            "BDAY:SOMETIME IN SPRING",
            "GEO:SOMEWHERE NORTH",
            "X-SHOE-SIZE",
            "STRASSE DES 17. JUNI",
        ] {
            assert!(upper.contains(expected), "{version} export has {expected}:\n{text}");
        }
        assert!(upper.replace('-', "").contains("BDAY:19723101"), "the unreadable birthday comes back ({version})");
        let again =
            ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "back.vcf", text.as_bytes()).await).await;
        let back = again["rows"].as_array().expect("rows");
        assert_eq!(back.len(), cards, "{version}");
        let mut matched: Vec<u64> =
            back.iter().filter_map(|r| r["duplicate_match"]["existing_contact_id"].as_u64()).collect();
        assert!(back.iter().all(|r| r["duplicate_match"]["match_reason"] == "uid"), "{version}: {back:#?}");
        matched.sort_unstable();
        assert_eq!(matched, ids, "{version}: every card finds its own contact, once");
    }
}
