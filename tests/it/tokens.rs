//! API tokens: shown once, hashed at rest, rotate, revoke, revoke-all, scopes, admin refusal.

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance};

async fn create(client: &crate::helpers::Client, path: &str, body: Value) -> (u64, String) {
    let response = client.post(path, body).await;
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    (created["id"].as_u64().unwrap(), created["token"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn a_token_is_shown_once_works_as_a_bearer_and_is_listed_without_its_secret() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (id, token) = create(&ada, "/api/v1/api-tokens", json!({ "name": "phone sync" })).await;
    assert!(token.starts_with("mycorrhizal_") && token.len() == "mycorrhizal_".len() + 43, "{token}");
    let bearer = ada.with(Cred::Bearer(token.clone()));
    let me: Value = bearer.get("/api/v1/users/me").await.json().await.unwrap();
    assert_eq!(me["username"], "ada");
    let listed: Value = ada.get("/api/v1/api-tokens").await.json().await.unwrap();
    assert_eq!(listed["tokens"][0]["id"], id);
    assert!(!listed.to_string().contains(&token[12..]), "the secret is never listed");
    assert!(listed["tokens"][0]["expires_at"].is_string());
    // last_used_at is written in the background.
    let mut used = Value::Null;
    for _ in 0..50 {
        used = ada.get("/api/v1/api-tokens").await.json::<Value>().await.unwrap()["tokens"][0]["last_used_at"].clone();
        if used.is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(used.is_string(), "last_used_at recorded");
    let bad = ada.post("/api/v1/api-tokens", json!({ "name": "x", "expires_in_days": 400 })).await;
    assert_eq!(bad.json::<Value>().await.unwrap()["details"]["field"], "expires_in_days");
}

#[tokio::test]
async fn rotate_kills_the_old_token_at_once_and_revoke_all_includes_the_caller() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (id, old) = create(&ada, "/api/v1/api-tokens", json!({ "name": "script" })).await;
    let rotated = ada.post(&format!("/api/v1/api-tokens/{id}/rotate"), json!({})).await;
    assert_eq!(rotated.status(), 201);
    let new = rotated.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_string();
    let old_use = ada.with(Cred::Bearer(old)).get("/api/v1/users/me").await;
    assert_eq!(old_use.status(), 401);
    assert_eq!(old_use.json::<Value>().await.unwrap()["message"], "Invalid token");
    assert_eq!(
        ada.post(&format!("/api/v1/api-tokens/{id}/rotate"), json!({})).await.status(),
        409,
        "a revoked token cannot rotate"
    );

    let (_, second) = create(&ada, "/api/v1/api-tokens", json!({ "name": "another" })).await;
    let caller = ada.with(Cred::Bearer(new.clone()));
    let all = caller.post("/api/v1/api-tokens/revoke-all", json!({})).await;
    assert_eq!(all.json::<Value>().await.unwrap(), json!({ "revoked": 2 }));
    assert_eq!(caller.get("/api/v1/users/me").await.status(), 401, "the token used for the call dies too");
    assert_eq!(ada.with(Cred::Bearer(second)).get("/api/v1/users/me").await.status(), 401);
    assert_eq!(ada.get("/api/v1/users/me").await.status(), 200, "sessions are unaffected");
}

#[tokio::test]
async fn tokens_are_private_to_their_owner() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let (id, token) = create(&ada, "/api/v1/api-tokens", json!({ "name": "ada's" })).await;
    assert_eq!(bob.send(reqwest::Method::DELETE, &format!("/api/v1/api-tokens/{id}"), json!({})).await.status(), 404);
    assert_eq!(bob.post(&format!("/api/v1/api-tokens/{id}/rotate"), json!({})).await.status(), 404);
    let listed: Value = bob.get("/api/v1/api-tokens").await.json().await.unwrap();
    assert_eq!(listed["tokens"], json!([]));
    assert_eq!(ada.with(Cred::Bearer(token.clone())).get("/api/v1/users/me").await.status(), 200, "still alive");
    assert_eq!(ada.send(reqwest::Method::DELETE, &format!("/api/v1/api-tokens/{id}"), json!({})).await.status(), 200);
    assert_eq!(ada.with(Cred::Bearer(token)).get("/api/v1/users/me").await.status(), 401);
}

#[tokio::test]
async fn admin_routes_refuse_api_tokens_and_carddav_tokens_refuse_the_api() {
    let server = Instance::new().spawn();
    let admin = server.sign_up("ada").await;
    let (_, full) = create(&admin, "/api/v1/admin/api-tokens", json!({ "name": "admin's script" })).await;
    let refused = admin.with(Cred::Bearer(full.clone())).get("/api/v1/admin/users").await;
    assert_eq!(refused.status(), 403);
    assert_eq!(refused.json::<Value>().await.unwrap()["message"], "API tokens cannot access admin endpoints");
    assert_eq!(admin.with(Cred::Bearer(full)).get("/api/v1/users/me").await.status(), 200);

    let (_, dav) = create(&admin, "/api/v1/api-tokens", json!({ "name": "dav", "scope": "carddav" })).await;
    let scoped = admin.with(Cred::Bearer(dav)).get("/api/v1/users/me").await;
    assert_eq!(scoped.status(), 403);
    assert!(scoped.json::<Value>().await.unwrap()["message"].as_str().unwrap().contains("CardDAV"));
}
