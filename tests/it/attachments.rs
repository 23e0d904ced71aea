//! Attachments: upload, list, download with safe headers, quota, removal with the contact.

use serde_json::Value;

use crate::helpers::{Client, Instance};

async fn upload(client: &Client, contact: u64, name: &str, kind: &str, bytes: &[u8]) -> reqwest::Response {
    let boundary = "attachment-boundary";
    let mut body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: {kind}\r\n\r\n").into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    client
        .request(reqwest::Method::POST, &format!("/api/v1/contacts/{contact}/attachments"))
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn attachments_are_kept_served_safely_and_removed_with_their_contact() {
    let instance = Instance::new().with("ATTACHMENT_QUOTA_MB", "1");
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let c = crate::crm::new_contact(&ada, "Att", "Ach").await["id"].as_u64().unwrap();
    let pdf = upload(&ada, c, "../../etc/contract.pdf", "application/pdf", b"%PDF-1.4 tiny").await;
    assert_eq!(pdf.status(), 201);
    let pdf: Value = pdf.json().await.unwrap();
    assert_eq!(pdf["attachment"]["original_name"], "contract.pdf", "no path survives");
    let html =
        upload(&ada, c, "page.html", "text/html", b"<script>alert(1)</script>").await.json::<Value>().await.unwrap();
    let listed: Value = ada.get(&format!("/api/v1/contacts/{c}/attachments")).await.json().await.unwrap();
    assert_eq!(listed["total"], 2);

    let got = ada.get(&format!("/api/v1/attachments/{}/download", pdf["attachment"]["id"])).await;
    assert_eq!(got.headers()["content-type"], "application/pdf");
    assert!(got.headers()["content-disposition"].to_str().unwrap().starts_with("inline"));
    assert_eq!(got.headers()["x-content-type-options"], "nosniff");
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"%PDF-1.4 tiny");
    let script = ada.get(&format!("/api/v1/attachments/{}/download", html["attachment"]["id"])).await;
    assert!(
        script.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"),
        "active content downloads"
    );

    let big = vec![b'x'; 700 * 1024];
    assert_eq!(upload(&ada, c, "a.bin", "application/octet-stream", &big).await.status(), 201);
    let over = upload(&ada, c, "b.bin", "application/octet-stream", &big).await;
    assert_eq!(over.status(), 400);
    assert!(over.json::<Value>().await.unwrap()["message"].as_str().unwrap().contains("quota"));

    let bob = server.sign_up("bob").await;
    let id = pdf["attachment"]["id"].as_u64().unwrap();
    assert_eq!(bob.get(&format!("/api/v1/attachments/{id}/download")).await.status(), 404);
    assert_eq!(
        bob.send(reqwest::Method::DELETE, &format!("/api/v1/attachments/{id}"), serde_json::json!({})).await.status(),
        404
    );
    assert_eq!(bob.get(&format!("/api/v1/contacts/{c}/attachments")).await.status(), 404);
    assert_eq!(upload(&bob, c, "x.txt", "text/plain", b"x").await.status(), 404);

    let folder = instance.data_dir().join("users").join(ada.id.to_string()).join("attachments");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 3);
    assert_eq!(
        ada.send(reqwest::Method::DELETE, &format!("/api/v1/attachments/{id}"), serde_json::json!({})).await.status(),
        200
    );
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 2, "the bytes go with the row");
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{c}"), serde_json::json!({})).await;
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0, "and with the contact");
}
