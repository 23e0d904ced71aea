//! Exports against the real binary: every format streamed, and the round trip export -> import
//! into another user -> export again.

use serde_json::{Value, json};

use crate::helpers::{Client, Instance};
use crate::import::{RFC, contacts, ok_json, sample, suggested, upload};

pub(crate) async fn export(client: &Client, path: &str) -> (String, String) {
    let response = client.get(path).await;
    assert_eq!(response.status(), 200, "{path}");
    let disposition = response.headers()["content-disposition"].to_str().expect("header").to_string();
    (disposition, response.text().await.expect("text"))
}

/// The files of a ZIP archive, in archive order, as text.
pub(crate) fn unzip(bytes: &[u8]) -> Vec<(String, String)> {
    use std::io::Read as _;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a ZIP archive");
    (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).expect("a file of the archive");
            let mut text = String::new();
            file.read_to_string(&mut text).expect("UTF-8 text whose CRC matches");
            (file.name().expect("a file name").to_string(), text)
        })
        .collect()
}

#[tokio::test]
async fn exports_stream_every_format_and_round_trip_through_another_user() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let mut file = Vec::new();
    for name in ["apple.v3.vcf", "android.v21.vcf", "google.v3.vcf", "nextcloud.v4.vcf", "outlook.v21.vcf"] {
        file.extend(sample(name));
    }
    for name in ["n-expanded.v4.vcf", "adr-expanded.v4.vcf", "title-role.v4.vcf", "pronouns.v4.vcf"] {
        file.extend(std::fs::read(format!("{RFC}/{name}")).expect("rfc"));
    }
    let preview = ok_json(upload(&ada, "/api/v1/contacts/import/vcf/upload", "all.vcf", &file).await).await;
    let result = ok_json(ada.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    assert_eq!(result["created"], 12, "{result}");
    ada.post("/api/v1/contacts", json!({ "firstname": "=cmd|' /C calc'!A0", "lastname": "Formula" })).await;

    let (disposition, first) = export(&ada, "/api/v1/export/vcf").await;
    assert!(disposition.contains("mycorrhizal-contacts-") && disposition.ends_with(".vcf\""), "{disposition}");
    for (query, version) in [("4", "4.0"), ("4.0", "4.0"), ("v4", "4.0"), ("3", "3.0"), ("3.0", "3.0")] {
        let response = ada.get(&format!("/api/v1/export/vcf?version={query}")).await;
        assert_eq!(response.headers()["content-type"], "text/vcard; charset=utf-8");
        let text = response.text().await.expect("text");
        assert!(text.contains(&format!("VERSION:{version}")) && !text.contains("VERSION:5"), "version={query}");
    }
    let included = ada.get("/api/v1/export/vcf?include_sensitive=true").await.text().await.expect("text");
    assert_eq!(included, first, "include_sensitive is accepted; every field is the user's own");
    assert_eq!(first.matches("BEGIN:VCARD").count(), 13);
    assert!(first.contains("UID:3F2504E0-4F89-11D3-9A0C-0305E82C3301"));
    assert!(first.contains("UID:ada-lovelace-apple"), "a non-UUID UID comes back as it was imported");
    assert!(first.contains("PHOTO:data:image/png;base64,iVBOR"), "photos inline, bare comma");
    assert!(!first.contains("PROP-ID") && !first.contains("JSCOMPS"));
    let (_, v3) = export(&ada, "/api/v1/export/vcf?version=v3.0").await;
    assert!(v3.contains("VERSION:3.0") && v3.contains("PHOTO;ENCODING=b;TYPE=PNG:"));
    assert!(v3.contains("BDAY;X-APPLE-OMIT-YEAR=1604:1604-07-14"), "a year-less birthday, Apple's way");
    let (_, one) = export(&ada, "/api/v1/export/vcf?vcard_uid=ada-lovelace-apple").await;
    assert_eq!(one.matches("BEGIN:VCARD").count(), 1);
    let (_, few) = export(&ada, "/api/v1/export/vcf?sections=emails").await;
    assert!(!few.contains("TEL") && few.contains("EMAIL") && few.contains("FN:"));
    assert_eq!(ada.get("/api/v1/export/vcf?sections=emails,shoes").await.status(), 400);
    assert_eq!(ada.get("/api/v1/export/vcf?version=5").await.status(), 400);

    let js_response = ada.get("/api/v1/export/jscontact").await;
    assert_eq!(js_response.headers()["content-type"], "application/jscontact+json; charset=utf-8");
    let (_, js) = export(&ada, "/api/v1/export/jscontact").await;
    let cards: Vec<Value> = serde_json::from_str(&js).expect("a JSON array");
    assert_eq!(cards.len(), 13);
    assert!(cards.iter().all(|c| c["@type"] == "Card"));

    // Isolation: before importing, bob's exports hold none of ada's contacts.
    let (_, empty) = export(&bob, "/api/v1/export/vcf").await;
    assert_eq!(empty, "", "bob has no contacts yet");
    let (_, empty) = export(&bob, "/api/v1/export/jscontact").await;
    assert_eq!(serde_json::from_str::<Value>(&empty).expect("json"), json!([]));

    // Round trip: bob imports ada's export and exports the same cards.
    let preview = ok_json(upload(&bob, "/api/v1/contacts/import/vcf/upload", "ada.vcf", first.as_bytes()).await).await;
    ok_json(bob.post("/api/v1/contacts/import/vcf/confirm", suggested(&preview)).await).await;
    let (_, second) = export(&bob, "/api/v1/export/vcf").await;
    assert_eq!(second, first, "export -> import -> export gives the same cards");

    let response = ada.get("/api/v1/export").await;
    assert_eq!(response.headers()["content-type"], "text/csv; charset=utf-8");
    let csv = response.text().await.expect("text");
    assert!(csv.contains("'=cmd"), "formula neutralised");
    assert!(!csv.contains(",=cmd"));
    assert!(csv.contains("José"));
    let jose = contacts(&ada).await.into_iter().find(|c| c["firstname"] == "José").expect("José");
    ada.post(
        &format!("/api/v1/contacts/{}/notes", jose["id"]),
        json!({ "content": "Met at the \"fungi\" fair, 1,2,3" }),
    )
    .await;
    let notes = ada.get("/api/v1/export?table=notes").await;
    assert_eq!(notes.status(), 200);
    let disposition = notes.headers()["content-disposition"].to_str().expect("header").to_string();
    assert!(disposition.contains("mycorrhizal-export-notes-"), "{disposition}");
    let notes = notes.text().await.expect("text");
    let mut lines = notes.lines();
    assert!(lines.next().expect("header").starts_with("id,created_at,updated_at,"), "{notes}");
    assert!(notes.contains("\"Met at the \"\"fungi\"\" fair, 1,2,3\""), "quoted as CSV: {notes}");
    let (_, bobs_notes) = export(&bob, "/api/v1/export?table=notes").await;
    assert!(!bobs_notes.contains("fungi"), "bob's table export holds none of ada's rows");
    assert_eq!(ada.get("/api/v1/export?table=secrets").await.status(), 400);

    // All of it at once: a ZIP of every table, each file the table's own export.
    let all = ada.get("/api/v1/export?table=all").await;
    assert_eq!(all.status(), 200);
    assert_eq!(all.headers()["content-type"], "application/zip");
    let disposition = all.headers()["content-disposition"].to_str().expect("header").to_string();
    assert!(disposition.contains("mycorrhizal-export-") && disposition.ends_with(".zip\""), "{disposition}");
    let files = unzip(&all.bytes().await.expect("body"));
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "contacts.csv",
            "notes.csv",
            "activities.csv",
            "reminders.csv",
            "reminder_completions.csv",
            "relationships.csv",
            "life_events.csv",
            "gifts.csv",
            "conversation_agenda.csv",
            "households.csv",
            "household_members.csv",
            "cadence_policies.csv",
            "field_definitions.csv",
            "preferences.csv",
            "external_identities.csv",
            "external_activities.csv",
            "README.txt"
        ]
    );
    let file = |name: &str| files.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone()).expect("file");
    // contacts.csv is the contacts export with each contact's id and uid first, so the other
    // tables' contact_id columns can be followed.
    let contacts_csv = file("contacts.csv");
    let header = csv.lines().next().expect("header");
    assert_eq!(contacts_csv.lines().next(), Some(format!("id,uid,{header}").as_str()));
    assert_eq!(contacts_csv.lines().count(), csv.lines().count());
    let jose_line = contacts_csv.lines().find(|l| l.contains("José")).expect("José's row");
    assert!(jose_line.starts_with(&format!("{},{},", jose["id"], jose["uid"].as_str().expect("uid"))), "{jose_line}");
    assert!(notes.contains(&format!(",{},", jose["id"])) || notes.contains(&format!(",{}\n", jose["id"])), "{notes}");
    assert_eq!(file("notes.csv"), notes, "notes.csv is the notes export");
    let (_, gifts) = export(&ada, "/api/v1/export?table=gifts").await;
    assert!(gifts.starts_with("id,created_at,updated_at") && gifts.lines().count() == 1, "no gifts, a header: {gifts}");
    assert_eq!(file("gifts.csv"), gifts, "an empty table is its header");
    assert!(file("README.txt").contains("contacts.csv"));
}
