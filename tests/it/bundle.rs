//! The account bundle: exported from one account and imported into a new one, every list reads
//! the same (ids aside) and pictures and attachments are byte-identical; nobody's bundle holds
//! another's rows, an import lands in the caller's account only, and a bad bundle is refused
//! with nothing written. Also from the command line.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use serde_json::{Value, json};

use crate::helpers::{Client, Instance, PASSWORD, TestServer};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\0\x05\0\x01\xff\x89\x99=\x1d\0\0\0\0IEND\xaeB`\x82";

async fn json_of(r: reqwest::Response, status: u16) -> Value {
    let got = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(got, status, "{body}");
    body
}

async fn multipart(client: &Client, path: &str, field: &str, name: &str, bytes: &[u8]) -> reqwest::Response {
    let boundary = "bundle-test-boundary";
    let mut body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    client
        .request(reqwest::Method::POST, path)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn export(client: &Client) -> Vec<u8> {
    let got = client.get("/api/v1/export/bundle").await;
    assert_eq!(got.status(), 200);
    assert_eq!(got.headers()["content-type"], "application/zip");
    got.bytes().await.unwrap().to_vec()
}

async fn import(client: &Client, bundle: &[u8]) -> reqwest::Response {
    multipart(client, "/api/v1/import/bundle", "file", "bundle.zip", bundle).await
}

/// The files of a ZIP by name.
fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip");
    let mut files = BTreeMap::new();
    for i in 0..zip.len() {
        let mut file = zip.by_index(i).expect("entry");
        let mut body = Vec::new();
        file.read_to_end(&mut body).expect("read");
        files.insert(file.name().expect("name").to_string(), body);
    }
    files
}

/// A ZIP of `files` (deflated), as a tool other than ours would write it.
fn rezip(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, body) in files {
        zip.start_file(name.as_str(), zip::write::SimpleFileOptions::default()).expect("start");
        zip.write_all(body).expect("write");
    }
    zip.finish().expect("finish").into_inner()
}

/// Every account of ada's kinds, one or two of each, all tied to each other.
async fn fill(ada: &Client) -> Vec<u64> {
    let mut ids = Vec::new();
    for (name, circles, tags) in [
        ("Grace Hopper", json!(["Navy", "Computing"]), json!(["cobol"])),
        ("Ada Lovelace", json!(["Computing"]), json!(["engines", "poetry"])),
        ("Charles Babbage", json!([]), json!([])),
    ] {
        let body = json!({ "card": { "name": { "full": name }, "keywords": tags }, "crm": { "circles": circles, "how_we_met": "at the museum" } });
        ids.push(json_of(ada.post("/api/v1/contacts", body).await, 201).await["contact"]["id"].as_u64().unwrap());
    }
    let [grace, lovelace, babbage] = [ids[0], ids[1], ids[2]];
    assert_eq!(
        multipart(ada, &format!("/api/v1/contacts/{grace}/profile_picture"), "photo", "p.png", PNG).await.status(),
        200
    );
    json_of(ada.post(&format!("/api/v1/contacts/{grace}/notes"), json!({ "content": "Loves nanoseconds" })).await, 201)
        .await;
    json_of(ada.post("/api/v1/notes", json!({ "content": "An idea for nobody" })).await, 201).await;
    let activity = json!({ "title": "Lunch", "date": "2026-11-21", "contact_ids": [grace, lovelace], "type": "meal" });
    let activity = json_of(ada.post("/api/v1/activities", activity).await, 201).await["activity"]["id"].clone();
    let reminder = json!({ "message": "Send the paper", "remind_at": "2026-12-01", "recurrence": "yearly" });
    let reminder =
        json_of(ada.post(&format!("/api/v1/contacts/{grace}/reminders"), reminder).await, 201).await["reminder"]["id"]
            .as_u64()
            .unwrap();
    json_of(ada.post(&format!("/api/v1/reminders/{reminder}/complete"), json!({})).await, 200).await;
    json_of(
        ada.post(
            &format!("/api/v1/contacts/{grace}/relationships"),
            json!({ "target_id": lovelace, "type": "friend" }),
        )
        .await,
        201,
    )
    .await;
    json_of(
        ada.post(
            &format!("/api/v1/contacts/{babbage}/relationships"),
            json!({ "target_id": lovelace, "type": "colleague" }),
        )
        .await,
        201,
    )
    .await;
    let event = json!({ "contact_id": grace, "type": "married", "category": "family_relationships", "date": { "year": 2015, "month": 6, "day": 20 } });
    json_of(ada.post("/api/v1/life-events", event).await, 201).await;
    json_of(
        ada.post("/api/v1/gifts", json!({ "contact_id": grace, "description": "A nanosecond of wire" })).await,
        201,
    )
    .await;
    let item = json_of(
        ada.post("/api/v1/conversation-agenda", json!({ "contact_id": grace, "content": "The compiler" })).await,
        201,
    )
    .await;
    let discussed = ada
        .send(
            reqwest::Method::PATCH,
            &format!("/api/v1/conversation-agenda/{}/discuss", item["conversation_agenda"]["id"]),
            json!({ "activity_id": activity }),
        )
        .await;
    json_of(discussed, 200).await;
    let home = json_of(ada.post("/api/v1/households", json!({ "name": "The Hoppers" })).await, 201).await;
    let home = home["household"]["id"].as_u64().unwrap();
    json_of(
        ada.post(&format!("/api/v1/households/{home}/members"), json!({ "contact_id": grace, "role": "adult" })).await,
        201,
    )
    .await;
    json_of(ada.post("/api/v1/cadence-policies", json!({ "contact_id": grace, "interval_days": 30 })).await, 201).await;
    json_of(
        ada.post("/api/v1/cadence-policies", json!({ "scope": "circle", "target": "Navy", "interval_days": 90 })).await,
        201,
    )
    .await;
    let attached =
        multipart(ada, &format!("/api/v1/contacts/{lovelace}/attachments"), "file", "notes.pdf", b"%PDF-1.4 the notes")
            .await;
    assert_eq!(attached.status(), 201);
    ids
}

/// `value` without what differs between two accounts holding the same things: ids, times, and
/// the addresses and names made of ids; arrays sorted (their order by id is not the data's).
fn normalise(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !(k.as_str() == "id"
                        || k.as_str() == "ID"
                        || k.ends_with("_id")
                        || k.ends_with("_ids")
                        || k.ends_with("_at")
                        || ["source", "target", "etag", "revision", "photo", "next_cursor", "cursor"]
                            .contains(&k.as_str()))
                })
                .map(|(k, v)| (k.clone(), normalise(v)))
                .collect(),
        ),
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(normalise).collect();
            items.sort_by_key(|v| v.to_string());
            Value::Array(items)
        }
        Value::String(s) if s.starts_with("/api/") => {
            Value::String(s.chars().filter(|c| !c.is_ascii_digit()).collect())
        }
        other => other.clone(),
    }
}

/// What `client` reads on every list endpoint, normalised, by what it is.
async fn lists(client: &Client) -> BTreeMap<String, Value> {
    let mut seen = BTreeMap::new();
    for path in [
        "/api/v1/contacts",
        "/api/v1/notes",
        "/api/v1/activities",
        "/api/v1/reminders",
        "/api/v1/life-events",
        "/api/v1/gifts",
        "/api/v1/conversation-agenda",
        "/api/v1/households",
        "/api/v1/cadence-policies",
        "/api/v1/circles",
        "/api/v1/tags",
        "/api/v1/contacts/circles",
        "/api/v1/reach-out-suggestions",
    ] {
        seen.insert(path.to_string(), normalise(&json_of(client.get(path).await, 200).await));
    }
    let contacts = json_of(client.get("/api/v1/contacts").await, 200).await;
    for contact in contacts["contacts"].as_array().expect("contacts") {
        let (id, uid) = (contact["id"].as_u64().unwrap(), contact["uid"].as_str().unwrap().to_string());
        for part in [
            "detail",
            "notes",
            "activities",
            "reminders",
            "reminder-completions",
            "relationships",
            "incoming-relationships",
            "attachments",
        ] {
            let got = json_of(client.get(&format!("/api/v1/contacts/{id}/{part}")).await, 200).await;
            seen.insert(format!("{uid}/{part}"), normalise(&got));
        }
        let picture = client.get(&format!("/api/v1/contacts/{id}/profile_picture")).await;
        let bytes = if picture.status() == 200 { picture.bytes().await.unwrap().to_vec() } else { Vec::new() };
        seen.insert(format!("{uid}/picture"), json!(bytes));
        let attachments = json_of(client.get(&format!("/api/v1/contacts/{id}/attachments")).await, 200).await;
        for a in attachments["attachments"].as_array().expect("attachments") {
            let got = client.get(&format!("/api/v1/attachments/{}/download", a["id"])).await;
            assert_eq!(got.status(), 200);
            seen.insert(format!("{uid}/attachment/{}", a["original_name"]), json!(got.bytes().await.unwrap().to_vec()));
        }
    }
    let households = json_of(client.get("/api/v1/households").await, 200).await;
    for h in households["households"].as_array().expect("households") {
        let got = json_of(client.get(&format!("/api/v1/households/{}/members", h["id"])).await, 200).await;
        seen.insert(format!("household {}/members", h["name"]), normalise(&got));
    }
    seen
}

#[tokio::test]
async fn a_bundle_recreates_an_account_in_another_and_only_there() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    fill(&ada).await;
    let bundle = export(&ada).await;
    let files = unzip(&bundle);
    let manifest: Value = serde_json::from_slice(&files["manifest.json"]).expect("manifest");
    assert_eq!(manifest["format"], "mycorrhizal-bundle");
    assert_eq!(manifest["counts"]["contact"], 3);
    assert_eq!(manifest["counts"]["attachment"], 1);
    assert_eq!(files.keys().filter(|k| k.starts_with("pictures/")).count(), 1);
    for (path, entry) in manifest["files"].as_object().expect("files") {
        use sha2::Digest;
        assert_eq!(entry["sha256"], hex::encode(sha2::Sha256::digest(&files[path])), "{path}");
    }

    // Bob's account is new: his bundle holds nothing, and none of ada's words.
    let bob = server.sign_up("bob").await;
    let empty = unzip(&export(&bob).await);
    let empty_manifest: Value = serde_json::from_slice(&empty["manifest.json"]).expect("manifest");
    assert!(empty_manifest["counts"].as_object().unwrap().values().all(|n| n == 0), "{empty_manifest}");
    assert!(empty.keys().all(|k| k == "manifest.json" || k.starts_with("records/")), "{:?}", empty.keys());
    assert!(!String::from_utf8_lossy(&empty.values().flatten().copied().collect::<Vec<u8>>()).contains("nanosecond"));

    let before = lists(&ada).await;
    let answer = json_of(import(&bob, &bundle).await, 200).await;
    assert_eq!(answer["imported"]["contact"], 3);
    assert_eq!(answer["imported"]["note"], 2);
    assert_eq!((answer["pictures"].clone(), answer["attachments"].clone()), (json!(1), json!(1)));
    assert!(answer["skipped"].as_object().unwrap().values().all(|n| n == 0), "{answer}");

    let after = lists(&bob).await;
    assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
    for (key, want) in &before {
        assert_eq!(&after[key], want, "{key} differs after the import");
    }
    assert_eq!(lists(&ada).await, before, "ada's account is as it was: the import went into bob's only");
    // The agenda item still names the activity it was discussed in, now bob's.
    let agenda = json_of(bob.get("/api/v1/conversation-agenda").await, 200).await;
    let activities = json_of(bob.get("/api/v1/activities").await, 200).await;
    let agenda_text = agenda.to_string();
    let activity_id = activities["activities"][0]["id"].as_u64().unwrap();
    assert!(agenda_text.contains(&format!("\"activity_id\":{activity_id}")), "{agenda_text}");
    // Search finds what came in.
    let found = json_of(bob.get("/api/v1/search?q=nanoseconds").await, 200).await;
    assert!(found.to_string().contains("Loves nanoseconds"), "{found}");
}

/// A bundle that is not whole, or not what its manifest says, is refused with 400 naming the
/// file, and nothing of it is written.
#[tokio::test]
async fn a_bad_bundle_is_refused_and_nothing_is_written() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    fill(&ada).await;
    let bundle = export(&ada).await;
    let bob = server.sign_up("bob").await;
    let nothing = lists(&bob).await;

    let mut refused = Vec::new();
    refused.push(("truncated", bundle[..bundle.len() * 2 / 3].to_vec()));
    refused.push(("not a zip", b"PK but not really a zip file".to_vec()));
    let files = unzip(&bundle);
    let mut edited = files.clone();
    let notes = String::from_utf8(edited["records/note.jsonl"].clone()).unwrap().replace("nanoseconds", "microseconds");
    edited.insert("records/note.jsonl".into(), notes.into_bytes());
    refused.push(("a line changed", rezip(&edited)));
    let mut picture = files.clone();
    let name = picture.keys().find(|k| k.starts_with("pictures/")).unwrap().clone();
    picture.get_mut(&name).unwrap()[20] ^= 0xFF;
    refused.push(("a picture changed", rezip(&picture)));
    let mut no_manifest = files.clone();
    no_manifest.remove("manifest.json");
    refused.push(("no manifest", rezip(&no_manifest)));
    let mut missing = files.clone();
    missing.remove("records/contact.jsonl");
    refused.push(("a file missing", rezip(&missing)));
    let mut bad_row = files.clone();
    let gift = String::from_utf8(bad_row["records/gift.jsonl"].clone())
        .unwrap()
        .replace("\"status\":\"idea\"", "\"status\":\"stolen\"");
    bad_row.insert("records/gift.jsonl".into(), gift.clone().into_bytes());
    let mut manifest: Value = serde_json::from_slice(&bad_row["manifest.json"]).unwrap();
    {
        use sha2::Digest;
        manifest["files"]["records/gift.jsonl"] =
            json!({ "sha256": hex::encode(sha2::Sha256::digest(gift.as_bytes())), "bytes": gift.len() });
    }
    bad_row.insert("manifest.json".into(), serde_json::to_vec(&manifest).unwrap());
    refused.push(("an invalid row, digests right", rezip(&bad_row)));

    for (what, bytes) in refused {
        let answer = json_of(import(&bob, &bytes).await, 400).await;
        let message = answer["message"].as_str().unwrap_or_default().to_string();
        assert!(!message.is_empty(), "{what}: {answer}");
        assert_eq!(answer["details"]["field"], "file", "{what}: {answer}");
        if what == "an invalid row, digests right" {
            assert!(message.contains("records/gift.jsonl line 1"), "{what}: {message}");
        }
        if what == "a line changed" {
            assert!(message.contains("records/note.jsonl"), "{what}: {message}");
        }
    }
    assert_eq!(lists(&bob).await, nothing, "nothing was written");
    // Importing twice into the same account is refused whole: the contacts are there already.
    json_of(import(&bob, &bundle).await, 200).await;
    let once = lists(&bob).await;
    let again = json_of(import(&bob, &bundle).await, 400).await;
    assert!(again["message"].as_str().unwrap().contains("already in your account"), "{again}");
    assert_eq!(lists(&bob).await, once);
}

/// The same from the command line, with the server stopped.
#[tokio::test]
async fn the_command_line_exports_and_imports_a_bundle() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    fill(&ada).await;
    let before = lists(&ada).await;
    server.sign_up("bob").await;
    assert!(server.terminate().success());
    let file = instance.dir.path().join("ada.zip");
    let path = file.to_str().unwrap();
    let (status, out) = instance.run_args(&["export-bundle", "--user", "ada", "--out", path]);
    assert!(status.success(), "{out}");
    let (status, out) = instance.run_args(&["import-bundle", "--user", "bob", path]);
    assert!(status.success(), "{out}");
    assert!(out.contains("imported") && out.contains("1 pictures"), "{out}");
    let (status, out) = instance.run_args(&["import-bundle", "--user", "nobody", path]);
    assert!(!status.success() && out.contains("no user"), "{out}");
    let server: TestServer = instance.spawn();
    let bob = server.sign_in("bob", PASSWORD).await;
    assert_eq!(lists(&bob).await, before);
}
