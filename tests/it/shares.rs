//! Contact shares between users of one instance, against the real binary: a copy cut to the
//! chosen sections, previewed and accepted by the recipient through the import pipeline (or
//! declined), both sides seeing the answer, and nobody else reaching any of it.

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Instance, json_of};

#[tokio::test]
async fn a_share_is_a_copy_of_the_chosen_sections_that_the_recipient_previews_and_accepts_or_declines() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let carol = server.sign_up("carol").await;
    let users = json_of(ada.get("/api/v1/users/directory").await, 200).await;
    let id_of = |name: &str| {
        users["users"].as_array().unwrap().iter().find(|u| u["username"] == name).unwrap()["id"].as_u64().unwrap()
    };
    let (bob_id, carol_id) = (id_of("bob"), id_of("carol"));
    let me = json_of(bob.get("/api/v1/users/directory").await, 200).await;
    let ada_id =
        me["users"].as_array().unwrap().iter().find(|u| u["username"] == "ada").unwrap()["id"].as_u64().unwrap();

    let made = json_of(
        ada.post(
            "/api/v1/contacts",
            json!({ "firstname": "Ann", "lastname": "Lee", "email": "ann@example.org", "phone": "+1 555 0100",
                    "crm": { "circles": ["Family"] } }),
        )
        .await,
        201,
    )
    .await;
    let (ann, uid) = (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string());

    // Refusals, each naming its field.
    let share = |to: u64, sections: Value| json!({ "to_user_id": to, "vcard_uid": uid, "sections": sections });
    let mine = json_of(ada.post("/api/v1/contact-shares", share(ada_id, json!(["emails"]))).await, 400).await;
    assert_eq!(mine["details"]["field"], "to_user_id", "{mine}");
    let unknown = json_of(ada.post("/api/v1/contact-shares", share(bob_id, json!(["toes"]))).await, 400).await;
    assert_eq!(unknown["details"]["field"], "sections", "{unknown}");
    let none = json_of(ada.post("/api/v1/contact-shares", share(bob_id, json!([]))).await, 400).await;
    assert_eq!(none["details"]["field"], "sections", "{none}");
    json_of(ada.post("/api/v1/contact-shares", share(999_999, json!(["emails"]))).await, 404).await;
    let nobody =
        json_of(ada.post("/api/v1/contact-shares", json!({ "vcard_uid": uid, "sections": ["emails"] })).await, 400)
            .await;
    assert_eq!(nobody["details"]["field"], "to_user_id", "{nobody}");
    // Bob cannot share Ada's contact: it is not his.
    let theirs = json!({ "to_user_id": carol_id, "vcard_uid": uid, "sections": ["emails"] });
    json_of(bob.post("/api/v1/contact-shares", theirs).await, 404).await;

    let created = json_of(ada.post("/api/v1/contact-shares", share(bob_id, json!(["emails"]))).await, 200).await;
    let sent = &created["contact_share"];
    assert_eq!((sent["from_user_id"].as_u64(), sent["to_user_id"].as_u64()), (Some(ada_id), Some(bob_id)));
    assert_eq!((sent["status"].as_str(), sent["contact_display_name"].as_str()), (Some("pending"), Some("Ann Lee")));
    assert!(sent.get("responded_at").is_none());
    let id = sent["id"].as_str().unwrap().to_string();

    let incoming = json_of(bob.get("/api/v1/contact-shares/incoming").await, 200).await;
    assert_eq!(incoming["total"], 1, "{incoming}");
    assert_eq!(incoming["contact_shares"][0]["id"], id.as_str());
    assert_eq!(incoming["usernames"][ada_id.to_string()], "ada");
    assert_eq!(incoming["sync"]["mode"], "full_resync");
    assert!(incoming["contact_shares"][0].get("contact_id").is_none(), "the sender's contact id stays theirs");
    let outgoing = json_of(ada.get("/api/v1/contact-shares/outgoing").await, 200).await;
    assert_eq!(
        (outgoing["total"].as_u64(), outgoing["contact_shares"][0]["contact_id"].as_u64()),
        (Some(1), Some(ann))
    );
    assert_eq!(outgoing["usernames"][bob_id.to_string()], "bob");
    assert_eq!(json_of(ada.get("/api/v1/contact-shares/incoming").await, 200).await["total"], 0);
    assert_eq!(json_of(carol.get("/api/v1/contact-shares/incoming").await, 200).await["total"], 0);

    // Only the recipient answers.
    for (who, what) in [(&carol, "accept"), (&ada, "accept"), (&carol, "decline"), (&ada, "decline")] {
        json_of(who.send(Method::POST, &format!("/api/v1/contact-shares/{id}/{what}"), Value::Null).await, 404).await;
    }

    let preview =
        json_of(bob.send(Method::POST, &format!("/api/v1/contact-shares/{id}/accept"), Value::Null).await, 200).await;
    let parsed = &preview["rows"][0]["parsed_contact"];
    assert_eq!((parsed["firstname"].as_str(), parsed["email"].as_str()), (Some("Ann"), Some("ann@example.org")));
    assert!(parsed.get("phone").is_none() && parsed.get("circles").is_none(), "only the chosen sections: {parsed}");
    let session = preview["session_id"].as_str().unwrap().to_string();
    // Still pending: a preview writes nothing.
    assert_eq!(json_of(bob.get("/api/v1/contacts").await, 200).await["contacts"].as_array().unwrap().len(), 0);

    // A session that is not this share's preview is refused.
    let add = json!([{ "row_index": 0, "action": "add" }]);
    let wrong = json_of(
        bob.post(&format!("/api/v1/contact-shares/{id}/confirm"), json!({ "session_id": "nope", "actions": add }))
            .await,
        400,
    )
    .await;
    assert_eq!(wrong["details"]["field"], "session_id", "{wrong}");
    // The import endpoints do not take a share's preview: only the share's confirm does.
    let elsewhere = json!({ "session_id": session, "actions": add });
    let refused = json_of(bob.post("/api/v1/contacts/import/vcf/confirm", elsewhere).await, 400).await;
    assert_eq!(refused["details"]["field"], "session", "{refused}");
    // A confirm that adds nothing leaves the share waiting.
    let skip = json!({ "session_id": session, "actions": [{ "row_index": 0, "action": "skip" }] });
    let skipped = json_of(bob.post(&format!("/api/v1/contact-shares/{id}/confirm"), skip).await, 200).await;
    assert_eq!(skipped["skipped"], 1, "{skipped}");
    let page = json_of(bob.get("/api/v1/contact-shares/incoming").await, 200).await;
    assert_eq!(page["contact_shares"][0]["status"], "pending", "{page}");
    let preview =
        json_of(bob.send(Method::POST, &format!("/api/v1/contact-shares/{id}/accept"), Value::Null).await, 200).await;
    let session = preview["session_id"].as_str().unwrap().to_string();
    // Carol cannot confirm Bob's preview.
    let confirm = json!({ "session_id": session, "actions": add });
    json_of(carol.post(&format!("/api/v1/contact-shares/{id}/confirm"), confirm.clone()).await, 404).await;

    let result = json_of(bob.post(&format!("/api/v1/contact-shares/{id}/confirm"), confirm.clone()).await, 200).await;
    assert_eq!((result["created"].as_u64(), result["total_processed"].as_u64()), (Some(1), Some(1)), "{result}");
    let again = json_of(bob.post(&format!("/api/v1/contact-shares/{id}/confirm"), confirm.clone()).await, 200).await;
    assert_eq!(again, result, "a repeated confirm answers the first result and applies nothing");
    let got = json_of(bob.get("/api/v1/contacts").await, 200).await;
    let contacts = got["contacts"].as_array().unwrap();
    assert_eq!(contacts.len(), 1, "{got}");
    let bobs = json_of(bob.get(&format!("/api/v1/contacts/{}", contacts[0]["id"])).await, 200).await;
    assert_eq!(bobs["email"], "ann@example.org");
    assert_eq!(bobs["phone"], "", "not a chosen section: {bobs}");
    assert!(!bobs.to_string().contains("Family"), "the sender's circles stay theirs: {bobs}");

    for (who, list) in [(&bob, "incoming"), (&ada, "outgoing")] {
        let page = json_of(who.get(&format!("/api/v1/contact-shares/{list}")).await, 200).await;
        let s = &page["contact_shares"][0];
        assert_eq!(s["status"], "accepted", "{page}");
        assert!(s["responded_at"].as_str().is_some_and(|t| !t.is_empty()));
    }
    for what in ["accept", "decline"] {
        json_of(bob.send(Method::POST, &format!("/api/v1/contact-shares/{id}/{what}"), Value::Null).await, 409).await;
    }
    // An earlier, unconfirmed preview of an answered share imports nothing.
    let second =
        json_of(ada.post("/api/v1/contact-shares", share(bob_id, json!(["emails", "phones"]))).await, 200).await;
    let second = second["contact_share"]["id"].as_str().unwrap().to_string();
    let preview =
        json_of(bob.send(Method::POST, &format!("/api/v1/contact-shares/{second}/accept"), Value::Null).await, 200)
            .await;
    assert_eq!(preview["duplicate_count"], 1, "Bob has Ann now: {preview}");
    let stale = json!({ "session_id": preview["session_id"], "actions": [{ "row_index": 0, "action": "update" }] });
    let declined =
        json_of(bob.send(Method::POST, &format!("/api/v1/contact-shares/{second}/decline"), Value::Null).await, 200)
            .await;
    assert_eq!(declined["message"], "Share declined");
    json_of(bob.post(&format!("/api/v1/contact-shares/{second}/confirm"), stale).await, 409).await;
    let page = json_of(ada.get("/api/v1/contact-shares/outgoing?order=desc").await, 200).await;
    assert_eq!(page["contact_shares"][0]["status"], "declined", "{page}");
    let bobs = json_of(bob.get(&format!("/api/v1/contacts/{}", contacts[0]["id"])).await, 200).await;
    assert_eq!(bobs["phone"], "", "a declined share changes nothing: {bobs}");
    // The sender's contact is untouched by any of it.
    let anns = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert_eq!((anns["phone"].as_str(), anns["email"].as_str()), (Some("+1 555 0100"), Some("ann@example.org")));
}
