//! Profile pictures and the image proxy.

use serde_json::{Value, json};

use crate::helpers::{Client, Instance};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\0\x05\0\x01\xff\x89\x99=\x1d\0\0\0\0IEND\xaeB`\x82";

pub(crate) async fn upload(client: &Client, id: u64, field: &str, bytes: &[u8]) -> reqwest::Response {
    let boundary = "mycorrhizal-test-boundary";
    let mut body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"p.png\"\r\nContent-Type: application/octet-stream\r\n\r\n").into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    client
        .request(reqwest::Method::POST, &format!("/api/v1/contacts/{id}/profile_picture"))
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_profile_picture_is_verified_stored_served_and_removed_with_the_contact() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let id = crate::crm::new_contact(&ada, "Pic", "Ture").await["id"].as_u64().unwrap();
    assert_eq!(ada.get(&format!("/api/v1/contacts/{id}/profile_picture")).await.status(), 404, "none yet");
    let svg = upload(&ada, id, "photo", b"<svg xmlns='http://www.w3.org/2000/svg'></svg>").await;
    assert_eq!(svg.status(), 400);
    assert_eq!(svg.json::<Value>().await.unwrap()["details"]["field"], "photo");
    let ok = upload(&ada, id, "photo", PNG).await;
    assert_eq!(ok.status(), 200);
    let contact: Value = ok.json().await.unwrap();
    assert_eq!(contact["photo"], format!("{id}.png"));
    assert_eq!(contact["photo_thumbnail"], format!("/api/v1/contacts/{id}/profile_picture?thumbnail=true"));
    let served = ada.get(&format!("/api/v1/contacts/{id}/profile_picture")).await;
    assert_eq!(served.headers()["content-type"], "image/png");
    assert_eq!(served.bytes().await.unwrap().as_ref(), PNG);
    let bob = server.sign_up("bob").await;
    assert_eq!(bob.get(&format!("/api/v1/contacts/{id}/profile_picture")).await.status(), 404);
    assert_eq!(upload(&bob, id, "photo", PNG).await.status(), 404);
    let again = upload(&ada, id, "photo", PNG).await;
    assert_eq!(again.json::<Value>().await.unwrap()["photo"], format!("{id}.png"), "a new picture, the same name");
    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{id}"), json!({})).await;
    let too_big = upload(
        &ada,
        crate::crm::new_contact(&ada, "Big", "One").await["id"].as_u64().unwrap(),
        "photo",
        &vec![0xFF; 11 * 1024 * 1024],
    )
    .await;
    assert!(too_big.status() == 400 || too_big.status() == 413, "{}", too_big.status());
    assert!(server.terminate().success());
    let (stored, named) = crate::import::stored_pictures(&instance, ada.id);
    assert_eq!((stored, named), (Vec::<String>::new(), Vec::<String>::new()), "the picture goes with the contact");
}

/// A data folder of an earlier version kept pictures as files: the next start moves them into the
/// database, and they are served (and backed up) from there.
#[tokio::test]
async fn picture_files_of_an_earlier_version_are_served_after_the_upgrade() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let id = crate::crm::new_contact(&ada, "Old", "Picture").await["id"].as_u64().unwrap();
    assert_eq!(upload(&ada, id, "photo", PNG).await.status(), 200);
    assert!(server.terminate().success());
    // As the earlier version left it: the contact names the file, the database has no bytes.
    let engine = crate::helpers::open_engine(&instance.database());
    let user = mycorrhizal_engine::UserId(ada.id);
    assert!(engine.user(user).write_async(move |tx| tx.delete_blob(&format!("{id}.png"))).await.unwrap());
    drop(engine);
    let dir = instance.data_dir().join("users").join(ada.id.to_string()).join("photos");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.png")), PNG).unwrap();

    let server = instance.spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let served = ada.get(&format!("/api/v1/contacts/{id}/profile_picture")).await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.bytes().await.unwrap().as_ref(), PNG);
    assert!(!dir.exists(), "the files moved");
    assert!(server.log_lines().iter().any(|l| l["event"] == "pictures_adopted" && l["moved"] == 1));
}

#[tokio::test]
async fn the_image_proxy_refuses_private_addresses_and_bad_urls() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    for (url, field) in [
        ("", "url"),
        ("ftp://example.org/x.png", "url"),
        ("http://127.0.0.1:9/x.png", "url"),
        ("http://169.254.169.254/latest", "url"),
    ] {
        let response = ada.get(&format!("/api/v1/proxy/image?url={url}")).await;
        assert_eq!(response.status(), 400, "{url}");
        assert_eq!(response.json::<Value>().await.unwrap()["details"]["field"], field);
    }
    assert_eq!(server.get("/api/v1/proxy/image?url=http://example.org/x.png").await.status(), 401);
}

/// An edit without `If-Match` merges its input over the contact inside the write transaction, so
/// a picture upload committed while the edit was on its way is kept: after every round the
/// contact names the uploaded picture and it is served.
#[tokio::test]
async fn an_edit_racing_a_picture_upload_never_loses_the_picture() {
    let instance = Instance::new();
    let server = instance.spawn();
    let ada = server.sign_up("ada").await;
    for round in 0..25 {
        let id = crate::crm::new_contact(&ada, "Race", &format!("Round{round}")).await["id"].as_u64().unwrap();
        let path = format!("/api/v1/contacts/{id}");
        let edit = |n: u32| {
            ada.send(reqwest::Method::PUT, &path, json!({ "firstname": "Race", "lastname": format!("Edited{n}") }))
        };
        let (a, b, c, picture) = tokio::join!(edit(1), edit(2), edit(3), upload(&ada, id, "photo", PNG));
        for response in [a, b, c, picture] {
            let status = response.status();
            assert_eq!(status, 200, "round {round}: {}", response.text().await.unwrap());
        }
        let contact: Value = ada.get(&path).await.json().await.unwrap();
        assert_eq!(contact["photo"], format!("{id}.png"), "round {round}: the edit kept the picture");
        let served = ada.get(&format!("{path}/profile_picture")).await;
        assert_eq!(served.status(), 200, "round {round}");
        assert_eq!(served.bytes().await.unwrap().as_ref(), PNG, "round {round}");
    }
}
