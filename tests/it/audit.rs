//! The audit trail over HTTP: export of one's own events, undo of an update, refusals.

use serde_json::{Value, json};

use crate::helpers::Instance;

#[tokio::test]
async fn an_update_can_be_undone_once_and_deletes_cannot() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let c = crate::crm::new_contact(&ada, "Una", "Do").await["id"].as_u64().unwrap();
    ada.send(reqwest::Method::PUT, &format!("/api/v1/contacts/{c}"), json!({ "nickname": "Oops" })).await;
    let csv = ada.get("/api/v1/audit/export").await;
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let text = csv.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "id,at,kind,record_id,action,revision,changes,prev_hash,hash");
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[2].contains(",contact,") && lines[2].contains(",update,") && lines[2].contains("Oops"));
    let update_id: u64 = lines[2].split(',').next().unwrap().parse().unwrap();
    let create_id: u64 = lines[1].split(',').next().unwrap().parse().unwrap();

    let bob = server.sign_up("bob").await;
    assert_eq!(bob.post(&format!("/api/v1/audit/{update_id}/undo"), json!({})).await.status(), 404, "not bob's event");
    assert!(
        !bob.get("/api/v1/audit/export").await.text().await.unwrap().contains("Oops"),
        "bob's export holds only bob's events"
    );

    assert_eq!(ada.post(&format!("/api/v1/audit/{create_id}/undo"), json!({})).await.status(), 409);
    let undone = ada.post(&format!("/api/v1/audit/{update_id}/undo"), json!({})).await;
    assert_eq!(undone.status(), 200);
    let contact: Value = ada.get(&format!("/api/v1/contacts/{c}")).await.json().await.unwrap();
    assert_eq!(contact["nickname"], "", "the nickname is back to what it was");
    assert_eq!(
        ada.post(&format!("/api/v1/audit/{update_id}/undo"), json!({})).await.status(),
        409,
        "the record changed since"
    );

    ada.send(reqwest::Method::DELETE, &format!("/api/v1/contacts/{c}"), json!({})).await;
    let text = ada.get("/api/v1/audit/export").await.text().await.unwrap();
    let delete_id: u64 = text.lines().last().unwrap().split(',').next().unwrap().parse().unwrap();
    let refused = ada.post(&format!("/api/v1/audit/{delete_id}/undo"), json!({})).await;
    assert_eq!(refused.status(), 409);
    assert!(refused.json::<Value>().await.unwrap()["message"].as_str().unwrap().contains("Delete"));
}

/// An export that fails on a damaged row answers the export's nested 500 envelope (the
/// operation and category, no stored text) and tells the log; other accounts still export.
#[tokio::test]
async fn an_export_over_a_damaged_row_answers_the_export_envelope() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    crate::crm::new_contact(&ada, "Una", "Do").await;
    crate::crm::new_contact(&bob, "Bea", "Re").await;
    assert!(server.terminate().success());
    mycorrhizal_engine::tamper_for_tests(&instance.database(), ada.id, mycorrhizal_engine::Tamper::Garble)
        .expect("garble an audit event");
    let server = instance.spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let failed = ada.get("/api/v1/audit/export").await;
    assert_eq!(failed.status(), 500);
    let body: Value = failed.json().await.unwrap();
    assert_eq!(body["error"]["code"], "INTERNAL_ERROR", "{body}");
    assert_eq!(body["error"]["details"], json!({ "operation": "export:audit", "category": "database" }), "{body}");
    // The log is written apart from the answer: looked for until it lands (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.log_lines().iter().any(|l| l["event"] == "export_failed" && l["operation"] == "export:audit") {
        assert!(std::time::Instant::now() < deadline, "the log says which export failed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let bob = server.sign_in("bob", crate::helpers::PASSWORD).await;
    let fine = bob.get("/api/v1/audit/export").await;
    assert_eq!(fine.status(), 200);
    assert!(fine.text().await.unwrap().contains("Bea"));
}
