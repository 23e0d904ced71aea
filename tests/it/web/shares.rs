//! Sharing a contact in the browser without JavaScript: the contact page's share form, the
//! recipient's import page listing it, the review through the import preview, and declining;
//! a third member sees none of it.

use serde_json::{Value, json};

use super::Browser;
use crate::helpers::Instance;

#[tokio::test(flavor = "multi_thread")]
async fn a_contact_is_shared_from_its_page_and_reviewed_from_the_import_page() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let carol = server.sign_up("carol").await;
    let made: Value = ada
        .post("/api/v1/contacts", json!({ "firstname": "Ann", "email": "ann@example.org", "phone": "+1 555 0100" }))
        .await
        .json()
        .await
        .unwrap();
    let ann = made["contact"]["id"].as_u64().unwrap();
    let users: Value = ada.get("/api/v1/users/directory").await.json().await.unwrap();
    let bob_id = users["users"].as_array().unwrap().iter().find(|u| u["username"] == "bob").unwrap()["id"].to_string();

    let sender = Browser::of(&server, &ada).await;
    let page = sender.get(&format!("/contacts/{ann}")).await.text().await.unwrap();
    assert!(page.contains(&format!("action=\"/contacts/{ann}/share\"")) && page.contains(">bob<"), "{page}");
    // Nothing ticked: refused on the page, the section named.
    let refused = sender.post(&format!("/contacts/{ann}/share"), &[("to_user_id", &bob_id)]).await;
    assert_eq!(refused.status(), 400);
    let shared =
        sender.post(&format!("/contacts/{ann}/share"), &[("to_user_id", &bob_id), ("sections", "emails")]).await;
    assert_eq!(shared.status(), 303);
    assert_eq!(shared.headers()["location"], format!("/contacts/{ann}?notice=shared").as_str());

    let recipient = Browser::of(&server, &bob).await;
    let import = recipient.get("/import").await.text().await.unwrap();
    assert!(import.contains("Ann") && import.contains("from ada"), "{import}");
    let share: Value = bob.get("/api/v1/contact-shares/incoming").await.json().await.unwrap();
    let id = share["contact_shares"][0]["id"].as_str().unwrap().to_string();
    assert!(import.contains(&format!("/shares/{id}/review")), "{import}");
    let third = Browser::of(&server, &carol).await;
    assert!(!third.get("/import").await.text().await.unwrap().contains("from ada"));
    assert_eq!(third.post(&format!("/shares/{id}/review"), &[]).await.status(), 404);

    let review = recipient.post(&format!("/shares/{id}/review"), &[]).await;
    assert_eq!(review.status(), 200);
    let review = review.text().await.unwrap();
    assert!(review.contains("ann@example.org") && !review.contains("555"), "only the emails: {review}");
    let action = review.split(&format!("action=\"/shares/{id}/confirm/")).nth(1).unwrap().split('"').next().unwrap();
    let done = recipient.post(&format!("/shares/{id}/confirm/{action}"), &[("action_0", "add")]).await;
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("1 added"));
    let bobs: Value = bob.get("/api/v1/contacts").await.json().await.unwrap();
    assert_eq!(bobs["contacts"][0]["primary_email"], "ann@example.org", "{bobs}");
    let sent = sender.get("/import").await.text().await.unwrap();
    assert!(sent.contains("with bob") && sent.contains("accepted"), "{sent}");

    // A second one, declined: nothing added.
    sender.post(&format!("/contacts/{ann}/share"), &[("to_user_id", &bob_id), ("sections", "phones")]).await;
    let share: Value = bob.get("/api/v1/contact-shares/incoming?order=desc").await.json().await.unwrap();
    let second = share["contact_shares"][0]["id"].as_str().unwrap().to_string();
    let declined = recipient.post(&format!("/shares/{second}/decline"), &[]).await;
    assert_eq!(declined.headers()["location"], "/import?notice=declined");
    let bobs: Value = bob.get("/api/v1/contacts").await.json().await.unwrap();
    assert_eq!(bobs["contacts"].as_array().unwrap().len(), 1);
}
