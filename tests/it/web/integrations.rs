//! Integrations in the browser: connecting the photo library and the document archive from
//! Settings > Integrations (the key never shown back), linking a person and a document from a
//! contact's page, the face, the photos and the timeline showing them, and another member's
//! pages reaching none of it.

use serde_json::{Value, json};

use super::Browser;
use crate::integrations::{PNG, immich, instance, paperless};

#[tokio::test(flavor = "multi_thread")]
async fn the_photo_library_and_the_archive_are_connected_and_linked_from_the_pages() {
    let (library, archive) = (immich().await, paperless().await);
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let made: Value = ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await.json().await.unwrap();
    let ann = made["contact"]["id"].as_u64().unwrap();
    let browser = Browser::of(&server, &ada).await;

    let settings = browser.get("/settings/integrations").await.text().await.unwrap();
    assert!(settings.contains("Immich") && settings.contains("Paperless") && settings.contains("WebDAV"), "{settings}");
    let refused =
        browser.post("/settings/integrations/immich", &[("base_url", "http://10.1.2.3"), ("secret", "k")]).await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("private or internal"));
    let saved = browser
        .post(
            "/settings/integrations/immich",
            &[("base_url", &library.base), ("secret", "immich-key"), ("sync_enabled", "1")],
        )
        .await;
    assert_eq!(saved.status(), 303);
    let saved = browser
        .post("/settings/integrations/paperless", &[("base_url", &archive.base), ("secret", "paper-token")])
        .await;
    assert_eq!(saved.status(), 303);
    let settings = browser.get("/settings/integrations").await.text().await.unwrap();
    assert!(!settings.contains("immich-key") && !settings.contains("paper-token"), "no key is shown back");
    let tested = browser.post("/settings/integrations/immich/test", &[]).await.text().await.unwrap();
    assert!(tested.contains("Connected to Immich as ada@photos.example"), "{tested}");

    let page = browser.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(
        page.contains(&format!("/contacts/{ann}/link/immich"))
            && page.contains(&format!("/contacts/{ann}/link/paperless"))
    );
    let people = browser.get(&format!("/contacts/{ann}/link/immich?q=ann")).await.text().await.unwrap();
    assert!(people.contains("Ann Example") && !people.contains(">Bob"), "filtered by the name: {people}");
    let linked = browser
        .post(&format!("/contacts/{ann}/link/immich"), &[("person_id", "p-ann"), ("person_name", "Ann Example")])
        .await;
    assert_eq!(linked.status(), 303);
    let synced = browser.post("/settings/integrations/immich/sync", &[]).await.text().await.unwrap();
    assert!(synced.contains("2 new photos"), "{synced}");

    let page = browser.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(page.contains(&format!("/api/v1/immich/contacts/{ann}/thumbnail")), "the face: {page}");
    assert!(page.contains(&format!("/api/v1/immich/contacts/{ann}/assets/asset-1/image")), "the latest photos");
    let face = browser.get(&format!("/api/v1/immich/contacts/{ann}/thumbnail")).await;
    assert_eq!(face.bytes().await.unwrap().as_ref(), PNG, "served to the browser's session");
    assert!(page.contains(&format!("/contacts/{ann}/link/immich/picture")), "a photo can become the picture");
    let used = browser.post(&format!("/contacts/{ann}/link/immich/picture"), &[("asset_id", "asset-1")]).await;
    assert_eq!(used.status(), 303);
    let picture = browser.get(&format!("/api/v1/contacts/{ann}/profile_picture")).await;
    assert_eq!(picture.bytes().await.unwrap().to_vec(), [PNG, b"asset-1"].concat());
    let timeline = browser.get(&format!("/contacts/{ann}/timeline")).await.text().await.unwrap();
    assert!(timeline.contains("/assets/asset-2/image") && timeline.contains("In a photo"), "{timeline}");

    let docs = browser.get(&format!("/contacts/{ann}/link/paperless?q=lease")).await.text().await.unwrap();
    assert!(docs.contains("Lease Ann") && docs.contains("Ann's landlord"), "{docs}");
    let linked = browser.post(&format!("/contacts/{ann}/link/paperless"), &[("document_id", "7")]).await;
    assert_eq!(linked.status(), 303);
    let page = browser.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(page.contains(&format!("{}/documents/7/details", archive.base)) && page.contains("Lease Ann"), "{page}");
    let again = browser.post(&format!("/contacts/{ann}/link/paperless"), &[("document_id", "7")]).await;
    assert_eq!(again.status(), 409, "linked already, said on the page");

    let bob = server.sign_up("bob").await;
    let other = Browser::of(&server, &bob).await;
    assert_eq!(other.get(&format!("/contacts/{ann}/link/immich")).await.status(), 404);
    assert_eq!(other.post(&format!("/contacts/{ann}/link/paperless"), &[("document_id", "7")]).await.status(), 404);
    let theirs = other.get("/settings/integrations").await.text().await.unwrap();
    assert!(!theirs.contains(&library.base), "Bob sees none of Ada's settings");
}
