//! Links to other systems on a contact's page: shown with their link, unlinked from there, and
//! another member can unlink none of them.

use serde_json::{Value, json};

use super::Browser;
use crate::helpers::Instance;

#[tokio::test(flavor = "multi_thread")]
async fn a_contacts_links_elsewhere_are_shown_and_unlinked_from_its_page() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let made: Value = ada.post("/api/v1/contacts", json!({ "firstname": "Ann" })).await.json().await.unwrap();
    let ann = made["contact"]["id"].as_u64().unwrap();
    let link = json!({ "contact_id": ann, "system": "immich", "external_id": "p1", "url": "https://photos.example.org/people/p1",
                       "metadata": { "person_name": "Ann at the lake" } });
    let created: Value = ada.post("/api/v1/external-identities", link).await.json().await.unwrap();
    let id = created["external_identity"]["id"].as_u64().unwrap();
    let detail: Value = ada.get(&format!("/api/v1/contacts/{ann}/detail")).await.json().await.unwrap();
    assert_eq!(detail["external_identities"][0]["external_id"], "p1", "{detail}");

    let browser = Browser::of(&server, &ada).await;
    let page = browser.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(
        page.contains("href=\"https://photos.example.org/people/p1\"") && page.contains("Ann at the lake"),
        "{page}"
    );

    let bob = server.sign_up("bob").await;
    let other = Browser::of(&server, &bob).await;
    assert_eq!(other.post(&format!("/external-identities/{id}/delete"), &[]).await.status(), 404);

    let unlinked = browser.post(&format!("/external-identities/{id}/delete"), &[]).await;
    assert_eq!(unlinked.status(), 303);
    let page = browser.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(!page.contains("Ann at the lake"), "{page}");
}
