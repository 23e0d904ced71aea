//! Attachments: upload, list, download with safe headers, quota, removal with the contact.

use serde_json::Value;

use crate::helpers::{Client, Instance, PASSWORD, TestServer};

pub async fn upload(client: &Client, contact: u64, name: &str, kind: &str, bytes: &[u8]) -> reqwest::Response {
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

    let ada_id = ada.id;
    let (server, ada) = restart_and_look(&instance, server, "ada", |stored| assert_eq!(stored.len(), 3)).await;
    assert_eq!(
        ada.send(reqwest::Method::DELETE, &format!("/api/v1/attachments/{id}"), serde_json::json!({})).await.status(),
        200
    );
    let (server, ada) = restart_and_look(&instance, server, "ada", |stored| {
        assert_eq!(stored.len(), 2, "the bytes go with the row");
        assert!(!stored.contains(&format!("attachment-{id}")));
    })
    .await;
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{c}"), serde_json::json!({})).await;
    drop(restart_and_look(&instance, server, "ada", |stored| assert!(stored.is_empty(), "and with the contact")).await);
    let folder = instance.data_dir().join("users").join(ada_id.to_string()).join("attachments");
    assert!(!folder.exists(), "the bytes never touch the data folder");
}

/// The names of `user`'s attachment blobs in the (stopped) instance's database.
fn stored_attachments(instance: &Instance, user: u64) -> Vec<String> {
    let engine = crate::helpers::open_engine(&instance.database());
    let view = engine.user(mycorrhizal_engine::UserId(user)).view().expect("view");
    view.blob_names().expect("blobs").into_iter().filter(|n| n.starts_with("attachment-")).collect()
}

/// Stops `server`, hands `user`'s attachment blobs to `look`, starts it again and signs in anew.
async fn restart_and_look(
    instance: &Instance,
    mut server: TestServer,
    user: &str,
    look: impl FnOnce(Vec<String>),
) -> (TestServer, Client) {
    let id = server.sign_in(user, PASSWORD).await.id;
    assert!(server.terminate().success(), "the server stops");
    look(stored_attachments(instance, id));
    let server = instance.spawn();
    let client = server.sign_in(user, PASSWORD).await;
    (server, client)
}

/// Deleting a contact takes its attachments' rows and bytes in its commit, and only its own:
/// another contact's attachment stays and is still served.
#[tokio::test]
async fn deleting_a_contact_takes_its_attachments_bytes_and_no_others() {
    let instance = Instance::new();
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let gone = crate::crm::new_contact(&ada, "Gone", "Soon").await["id"].as_u64().unwrap();
    let kept = crate::crm::new_contact(&ada, "Kept", "Here").await["id"].as_u64().unwrap();
    for name in ["one.txt", "two.txt"] {
        assert_eq!(upload(&ada, gone, name, "text/plain", name.as_bytes()).await.status(), 201);
    }
    let stays: Value = upload(&ada, kept, "stays.txt", "text/plain", b"stays").await.json().await.unwrap();
    let stays = stays["attachment"]["id"].as_u64().unwrap();
    assert_eq!(
        ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{gone}"), serde_json::json!({})).await.status(),
        200
    );
    let (_server, ada) = restart_and_look(&instance, server, "ada", |stored| {
        assert_eq!(stored, vec![format!("attachment-{stays}")], "only the other contact's bytes stay");
    })
    .await;
    let got = ada.get(&format!("/api/v1/attachments/{stays}/download")).await;
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"stays");
}

/// A data folder of an earlier version kept attachment bytes as files: the next start moves the
/// files a live row names into the database (served from there, digest still checked), removes
/// the files no row names and the emptied folder, and says so in the log.
#[tokio::test]
async fn attachment_files_of_an_earlier_version_move_into_the_database() {
    let instance = Instance::new();
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let c = crate::crm::new_contact(&ada, "Old", "Files").await["id"].as_u64().unwrap();
    let mut ids = Vec::new();
    for (name, bytes) in [("a.pdf", &b"%PDF-1.4 old"[..]), ("b.txt", &b"plain old text"[..])] {
        let made: Value = upload(&ada, c, name, "application/octet-stream", bytes).await.json().await.unwrap();
        ids.push(made["attachment"]["id"].as_u64().unwrap());
    }
    let user = ada.id;
    let mut server = server;
    assert!(server.terminate().success());
    // As the earlier version left it: rows name the ids, the bytes are files, the database has none.
    let engine = crate::helpers::open_engine(&instance.database());
    let removed = ids.clone();
    engine
        .user(mycorrhizal_engine::UserId(user))
        .write_async(move |tx| {
            for id in &removed {
                assert!(tx.delete_blob(&format!("attachment-{id}"))?);
            }
            Ok(())
        })
        .await
        .unwrap();
    drop(engine);
    let dir = instance.data_dir().join("users").join(user.to_string()).join("attachments");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(ids[0].to_string()), b"%PDF-1.4 old").unwrap();
    std::fs::write(dir.join(ids[1].to_string()), b"plain old text").unwrap();
    std::fs::write(dir.join("999999"), b"nobody names me").unwrap();
    std::fs::write(dir.join(".7.partial"), b"half").unwrap();

    let server = instance.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    let got = ada.get(&format!("/api/v1/attachments/{}/download", ids[0])).await;
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"%PDF-1.4 old");
    let got = ada.get(&format!("/api/v1/attachments/{}/download", ids[1])).await;
    assert_eq!(got.bytes().await.unwrap().as_ref(), b"plain old text");
    assert!(!dir.exists(), "the files moved and the folder went");
    assert!(
        server.log_lines().iter().any(|l| l["event"] == "attachments_adopted" && l["moved"] == 2 && l["removed"] == 2),
        "{:?}",
        server.log_lines().iter().filter(|l| l["component"] == "migration").collect::<Vec<_>>()
    );
    let (_server, _) = restart_and_look(&instance, server, "ada", |stored| {
        let mut want: Vec<String> = ids.iter().map(|id| format!("attachment-{id}")).collect();
        want.sort();
        let mut stored = stored;
        stored.sort();
        assert_eq!(stored, want);
    })
    .await;
}
