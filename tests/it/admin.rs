//! Admin user management and its guards.

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance, PASSWORD};

#[tokio::test]
async fn non_admins_get_403_on_admin_routes() {
    let server = Instance::new().spawn();
    server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let refused = bob.get("/api/v1/admin/users").await;
    assert_eq!(refused.status(), 403);
    assert_eq!(refused.json::<Value>().await.unwrap()["message"], "Admin access required");
}

#[tokio::test]
async fn an_admin_password_reset_kills_sessions_and_tokens() {
    let server = Instance::new().spawn();
    let admin = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let token = bob.post("/api/v1/api-tokens", json!({ "name": "t" })).await.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let reset = admin
        .send(
            reqwest::Method::PATCH,
            &format!("/api/v1/admin/users/{}", bob.id),
            json!({ "password": "new-hyphae-77-caps" }),
        )
        .await;
    assert_eq!(reset.status(), 200);
    assert_eq!(bob.get("/api/v1/users/me").await.status(), 401, "session ended");
    assert_eq!(bob.with(Cred::Bearer(token)).get("/api/v1/users/me").await.status(), 401, "tokens revoked");
    assert_eq!(server.login("bob", PASSWORD).await.status(), 401);
    server.sign_in("bob", "new-hyphae-77-caps").await;
}

#[tokio::test]
async fn the_last_admin_cannot_be_demoted_or_deleted() {
    let server = Instance::new().spawn();
    let admin = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let path = format!("/api/v1/admin/users/{}", admin.id);
    assert_eq!(admin.send(reqwest::Method::PATCH, &path, json!({ "is_admin": false })).await.status(), 409);
    assert_eq!(admin.send(reqwest::Method::DELETE, &path, json!({})).await.status(), 409);
    let promote = admin
        .send(reqwest::Method::PATCH, &format!("/api/v1/admin/users/{}", bob.id), json!({ "is_admin": true }))
        .await;
    assert_eq!(promote.json::<Value>().await.unwrap()["is_admin"], true);
    assert_eq!(
        admin.send(reqwest::Method::PATCH, &path, json!({ "is_admin": false })).await.status(),
        200,
        "another admin exists now"
    );
}

#[tokio::test]
async fn deleting_a_user_removes_the_account_and_its_access() {
    let server = Instance::new().spawn();
    let admin = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let token = bob.post("/api/v1/api-tokens", json!({ "name": "t" })).await.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let deleted = admin.send(reqwest::Method::DELETE, &format!("/api/v1/admin/users/{}", bob.id), json!({})).await;
    assert_eq!(deleted.status(), 200);
    assert_eq!(bob.get("/api/v1/users/me").await.status(), 401);
    assert_eq!(bob.with(Cred::Bearer(token)).get("/api/v1/users/me").await.status(), 401);
    assert_eq!(server.login("bob", PASSWORD).await.status(), 401);
    assert_eq!(admin.get(&format!("/api/v1/admin/users/{}", bob.id)).await.status(), 404);
    assert_eq!(server.register("bob", PASSWORD).await.status(), 201, "the name is free again");
    let listed: Value = admin.get("/api/v1/admin/users?limit=1&page=2").await.json().await.unwrap();
    assert_eq!((listed["total"].as_u64(), listed["users"].as_array().map(Vec::len)), (Some(2), Some(1)));
    // A page far past the end is empty, not an overflow (found by the contract test).
    let far = admin.get("/api/v1/admin/users?limit=100&page=184467440737095518").await;
    assert_eq!(far.status(), 200);
    let far: Value = far.json().await.unwrap();
    assert_eq!(far["users"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn rebuilding_derived_columns_scans_every_contact_and_is_idempotent() {
    let server = Instance::new().spawn();
    let admin = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    for (client, n) in [(&admin, 2), (&bob, 3)] {
        for i in 0..n {
            client.post("/api/v1/contacts", json!({ "firstname": format!("P{i}") })).await;
        }
    }
    let first: Value = admin.post("/api/v1/admin/contacts/rebuild-derived", json!({})).await.json().await.unwrap();
    assert_eq!(
        (first["contacts_scanned"].as_u64(), first["contacts_updated"].as_u64()),
        (Some(5), Some(0)),
        "projections are current"
    );
    let again: Value = admin.post("/api/v1/admin/contacts/rebuild-derived", json!({})).await.json().await.unwrap();
    assert_eq!(again["contacts_updated"], 0);
    assert_eq!(bob.post("/api/v1/admin/contacts/rebuild-derived", json!({})).await.status(), 403);
}
