//! Subscriptions in the browser without JavaScript: a Radicale address book added from the
//! settings page, synced and tested with its buttons, its health shown, the synced contact's page
//! saying where it comes from; another member sees none of it and cannot act on it.

use super::Browser;
use crate::helpers::Instance;
use crate::subscriptions::{DavServer, card};

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_is_added_synced_tested_and_deleted_from_the_settings_page() {
    let remote = DavServer::radicale();
    remote.make_book().await;
    remote.put_card("nia", &card("nia-1", "Nia", "Oak", "")).await;
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let browser = Browser::of(&server, &ada).await;

    let page = browser.get("/settings/subscriptions").await;
    assert_eq!(page.status(), 200);
    let text = page.text().await.unwrap();
    assert!(text.contains(">Address books<") && text.contains(">Calendars<"), "{text}");

    // A wrong password is refused in the form, naming the field.
    let url = remote.url("/");
    let refused = browser
        .post(
            "/settings/subscriptions",
            &[
                ("source", "address_book"),
                ("name", "Friends"),
                ("url", &url),
                ("username", "remy"),
                ("password", "nope"),
            ],
        )
        .await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("password"), "the field is named");

    let added = browser
        .post(
            "/settings/subscriptions",
            &[
                ("source", "address_book"),
                ("name", "Friends"),
                ("url", &url),
                ("username", "remy"),
                ("password", "secret1"),
                ("sync_enabled", "1"),
            ],
        )
        .await;
    assert_eq!(added.status(), 303);
    let list: serde_json::Value = ada.get("/api/v1/contact-subscriptions").await.json().await.unwrap();
    let id = list["contact_subscriptions"][0]["id"].as_u64().unwrap();

    // Its first sync started when it was added; "Sync now" runs another.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let state: serde_json::Value =
            ada.get(&format!("/api/v1/contact-subscriptions/{id}")).await.json().await.unwrap();
        if state["last_sync_status"] == "success" && state["status"] != "syncing" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the first sync never ended: {state}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let synced = browser.post(&format!("/settings/subscriptions/{id}/sync?source=address_book"), &[]).await;
    let status = synced.status();
    let text = synced.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("Synced: 0 new, 0 changed"), "{text}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let nia = loop {
        let contacts: serde_json::Value = ada.get("/api/v1/contacts").await.json().await.unwrap();
        if let Some(c) = contacts["contacts"].as_array().unwrap().iter().find(|c| c["firstname"] == "Nia") {
            break c["id"].as_u64().unwrap();
        }
        assert!(std::time::Instant::now() < deadline, "Nia never came in");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let contact_page = browser.get(&format!("/contacts/{nia}")).await.text().await.unwrap();
    assert!(contact_page.contains("From Friends, synced"), "{contact_page}");
    let tested = browser
        .post(&format!("/settings/subscriptions/{id}/test?source=address_book"), &[])
        .await
        .text()
        .await
        .unwrap();
    assert!(tested.contains("Connected; the address book is there."), "{tested}");
    let listed = browser.get("/settings/subscriptions").await.text().await.unwrap();
    assert!(listed.contains(">Synced<") && listed.contains("Next sync"), "{listed}");

    let other = Browser::of(&server, &bob).await;
    assert!(!other.get("/settings/subscriptions").await.text().await.unwrap().contains("Friends"));
    assert_eq!(other.post(&format!("/settings/subscriptions/{id}/sync?source=address_book"), &[]).await.status(), 404);
    assert_eq!(
        other.post(&format!("/settings/subscriptions/{id}/delete?source=address_book"), &[]).await.status(),
        404
    );

    let deleted = browser.post(&format!("/settings/subscriptions/{id}/delete?source=address_book"), &[]).await;
    assert_eq!(deleted.status(), 303);
    let contact_page = browser.get(&format!("/contacts/{nia}")).await.text().await.unwrap();
    assert!(!contact_page.contains("From Friends"), "the contact stays, now local");
}
