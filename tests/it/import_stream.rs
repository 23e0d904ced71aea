//! A vCard upload is parsed as it arrives: sent a few bytes at a time it previews and confirms as
//! it does sent whole, a large one in several batches keeps every duplicate across them, the rows
//! waiting for a confirm leave no file in the data folder, and an upload that fails on the way
//! (too large, cut off) opens no session.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{Client, Cred, Instance};
use crate::import::{multipart, upload};

const BOUNDARY: &str = "trickle-boundary";

/// Sends a vCard upload over a socket of its own, `piece` bytes at a time with a pause between
/// them, and stops after `send_only` bytes of the body when given (an upload cut off). HTTP/1.0,
/// so the answer ends with the connection. The status and body, `None` when cut off.
async fn trickle(client: &Client, bytes: &[u8], piece: usize, send_only: Option<usize>) -> Option<(u16, Value)> {
    let Cred::Cookie(cookie) = &client.cred else { panic!("a cookie client") };
    let address = client.base.trim_start_matches("http://").trim_end_matches('/').to_string();
    let body = multipart(BOUNDARY, "trickled.vcf", bytes);
    let mut socket = tokio::net::TcpStream::connect(&address).await.expect("connect");
    let head = format!(
        "POST /api/v1/contacts/import/vcf/upload HTTP/1.0\r\nHost: {address}\r\nCookie: auth_token={cookie}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.expect("head");
    let end = send_only.unwrap_or(body.len());
    for (i, part) in body[..end].chunks(piece).enumerate() {
        socket.write_all(part).await.expect("piece");
        if i % 16 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    if send_only.is_some() {
        drop(socket);
        return None;
    }
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.expect("answer");
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").expect("head end");
    let status: u16 = String::from_utf8_lossy(&answer[9..12]).parse().expect("status");
    Some((status, serde_json::from_slice(&answer[split + 4..]).expect("json body")))
}

/// The preview without its session id, to compare two previews of one file.
fn rows_and_counts(mut preview: Value) -> Value {
    preview.as_object_mut().expect("object").remove("session_id");
    preview
}

fn cards(n: usize, from: usize) -> Vec<u8> {
    (from..from + n)
        .map(|i| format!("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Person {i}\r\nN:P{i};Person;;;\r\nEMAIL:p{i}@example.org\r\nEND:VCARD\r\n"))
        .collect::<String>()
        .into_bytes()
}

fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("data folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_vcard_upload_arriving_in_pieces_previews_and_confirms_as_one_sent_whole() {
    let instance = Instance::new();
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    ada.post("/api/v1/contacts", json!({ "firstname": "Person", "lastname": "P5", "email": "p5@example.org" })).await;
    // Over two of the parser's batches of 1,024 cards, a card repeating one of the first batch
    // at the end, a card cut short, and a UTF-8 BOM.
    let mut file = b"\xef\xbb\xbf".to_vec();
    file.extend(cards(2100, 0));
    file.extend(cards(1, 7));
    file.extend(b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Cut Short\r\n");
    let before = files_in(&instance.data_dir());

    let whole = upload(&ada, "/api/v1/contacts/import/vcf/upload", "whole.vcf", &file).await;
    assert_eq!(whole.status(), 200);
    let whole: Value = whole.json().await.expect("json");
    let (status, trickled) = trickle(&ada, &file, 97, None).await.expect("an answer");
    assert_eq!(status, 200, "{trickled}");
    assert_eq!(rows_and_counts(trickled.clone()), rows_and_counts(whole.clone()));
    assert_eq!(
        (&whole["total_rows"], &whole["valid_rows"], &whole["error_count"], &whole["duplicate_count"]),
        (&json!(2102), &json!(2101), &json!(1), &json!(2))
    );
    let rows = whole["rows"].as_array().expect("rows");
    assert_eq!(rows[5]["duplicate_match"]["existing_contact_id"], 1, "an existing contact is found");
    assert_eq!(rows[2100]["batch_duplicate_of"], 7, "a repeat of a card two batches earlier is found");
    assert_eq!(rows[2101]["line"], 6 * 2101 + 1, "lines are counted across batches");
    assert!(rows[2101]["validation_errors"][0].as_str().expect("error").contains("END:VCARD"));
    assert_eq!(files_in(&instance.data_dir()), before, "the held rows and the previews leave no file");

    let actions: Vec<Value> =
        rows.iter().map(|r| json!({ "row_index": r["row_index"], "action": r["suggested_action"] })).collect();
    let confirmed = ada
        .post(
            "/api/v1/contacts/import/vcf/confirm",
            json!({ "session_id": trickled["session_id"], "actions": actions }),
        )
        .await;
    assert_eq!(confirmed.status(), 200);
    let result: Value = confirmed.json().await.expect("json");
    assert_eq!(
        (&result["created"], &result["skipped"], &result["error_count"]),
        (&json!(2099), &json!(3), &json!(0)),
        "the two repeats and the card cut short are skipped"
    );
    let listed: Value = ada.get("/api/v1/contacts?limit=1").await.json().await.expect("json");
    assert_eq!(listed["total"], 2100);
    assert_eq!(files_in(&instance.data_dir()), before);
}

/// A vCard upload refused on the way (too large, cut off, empty) opens no session: past them
/// the user still has the whole allowance of 32 previews.
#[tokio::test]
async fn an_upload_that_fails_on_the_way_opens_no_session() {
    let server = Instance::new().with("IMPORT_MAX_FILE_MB", "1").spawn();
    let ada = server.sign_up("ada").await;
    let big = cards(12_000, 0);
    assert!(big.len() > 1024 * 1024);
    let refused = upload(&ada, "/api/v1/contacts/import/vcf/upload", "big.vcf", &big).await;
    assert_eq!(refused.status(), 413);
    assert!(trickle(&ada, &big, 4096, Some(300_000)).await.is_none());
    let empty = upload(&ada, "/api/v1/contacts/import/vcf/upload", "empty.vcf", b"").await;
    assert_eq!(empty.status(), 400);
    // Let the cut-off upload's parser see its end before counting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..32 {
        let ok = upload(&ada, "/api/v1/contacts/import/vcf/upload", "one.vcf", &cards(1, i)).await;
        assert_eq!(ok.status(), 200, "preview {i}");
    }
    let past = upload(&ada, "/api/v1/contacts/import/vcf/upload", "one.vcf", &cards(1, 99)).await;
    assert_eq!(past.status(), 429, "the allowance is whole, so the failed uploads hold none of it");
}
