//! Registration, sign-in, sessions, logout and the user's own account.

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance, PASSWORD, set_cookie, set_cookie_line};

#[tokio::test]
async fn the_first_account_is_admin_and_names_are_unique() {
    let server = Instance::new().spawn();
    assert_eq!(server.register("Ada", PASSWORD).await.status(), 201);
    assert_eq!(server.register("bob", PASSWORD).await.status(), 201);
    let ada: Value = server.sign_in("ada", PASSWORD).await.get("/api/v1/users/me").await.json().await.unwrap();
    assert_eq!(
        (ada["username"].as_str(), ada["is_admin"].as_bool()),
        (Some("ada"), Some(true)),
        "stored lowercased; first is admin"
    );
    let bob: Value =
        server.sign_in("bob@example.org", PASSWORD).await.get("/api/v1/users/me").await.json().await.unwrap();
    assert_eq!(bob["is_admin"], false);

    let taken = server.register("ADA", PASSWORD).await;
    assert_eq!(taken.status(), 409);
    let body: Value = taken.json().await.unwrap();
    assert_eq!((body["code"].as_str(), body["details"]["field"].as_str()), (Some("ALREADY_EXISTS"), Some("username")));
    let same_email = server
        .post("/api/v1/register", json!({ "username": "other", "email": "BOB@example.org", "password": PASSWORD }))
        .await;
    assert_eq!(same_email.json::<Value>().await.unwrap()["details"]["field"], "email");
}

#[tokio::test]
async fn registration_names_the_failing_field() {
    let server = Instance::new().spawn();
    for (body, field) in [
        (json!({ "username": "ada", "email": "ada@example.org", "password": "short" }), "password"),
        (json!({ "username": "ada", "email": "ada@example.org", "password": "password123" }), "password"),
        (json!({ "username": "ada", "email": "not-an-email", "password": PASSWORD }), "email"),
        (json!({ "username": "a@b", "email": "ada@example.org", "password": PASSWORD }), "username"),
        (json!({ "username": "ada", "email": "ada@example.org" }), "password"),
        (json!({ "username": 7, "email": "ada@example.org", "password": PASSWORD }), "username"),
    ] {
        let response = server.post("/api/v1/register", body.clone()).await;
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["details"]["field"], field, "{body}: {error}");
    }
}

#[tokio::test]
async fn closed_registration_is_403_and_admins_create_accounts() {
    let instance = Instance::new().with("DISABLE_REGISTRATION", "true");
    let server = instance.spawn();
    let refused = server.register("ada", PASSWORD).await;
    assert_eq!(refused.status(), 403);
    assert_eq!(refused.json::<Value>().await.unwrap()["code"], "FORBIDDEN");
    // Seed the first admin with registration open, then close it.
    drop(server);
    let open = Instance {
        env: {
            let mut e = instance.env.clone();
            e.remove("DISABLE_REGISTRATION");
            e
        },
        dir: instance.dir.clone(),
    };
    let mut first = open.spawn();
    assert_eq!(first.register("ada", PASSWORD).await.status(), 201);
    assert!(first.terminate().success());
    let server = instance.spawn();
    let admin = server.sign_in("ada", PASSWORD).await;
    let created = admin
        .post("/api/v1/admin/users", json!({ "username": "bob", "email": "bob@example.org", "password": PASSWORD }))
        .await;
    assert_eq!(created.status(), 201);
    server.sign_in("bob", PASSWORD).await;
}

#[tokio::test]
async fn wrong_or_unknown_credentials_get_the_same_401() {
    let server = Instance::new().spawn();
    server.register("ada", PASSWORD).await;
    for (who, password) in [("ada", "wrong-password-1"), ("nobody", PASSWORD), ("nobody@example.org", PASSWORD)] {
        let response = server.login(who, password).await;
        assert_eq!(response.status(), 401);
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            (body["code"].as_str(), body["message"].as_str()),
            (Some("INVALID_CREDENTIALS"), Some("Invalid credentials"))
        );
    }
}

#[tokio::test]
async fn the_session_cookie_is_http_only_and_also_accepted_as_a_bearer() {
    let server = Instance::new().with("COOKIE_SECURE", "true").spawn();
    server.register("ada", PASSWORD).await;
    let response = server.login("ada", PASSWORD).await;
    let line = set_cookie_line(&response, "auth_token").unwrap();
    for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/", "Max-Age=345600"] {
        assert!(line.contains(attribute), "{line} lacks {attribute}");
    }
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["language"], "en");
    let jwt = line.split(';').next().unwrap().trim_start_matches("auth_token=").to_string();
    let bearer = server.anonymous().with(Cred::Bearer(jwt));
    assert_eq!(bearer.get("/api/v1/users/me").await.status(), 200, "the Android client sends the JWT as a bearer");
}

#[tokio::test]
async fn each_session_failure_has_the_spec_message() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let anonymous = server.anonymous();
    let message = |r: reqwest::Response| async move {
        assert_eq!(r.status(), 401);
        r.json::<Value>().await.unwrap()["message"].as_str().unwrap().to_string()
    };
    let none = server.client.get(server.url("/api/v1/users/me")).send().await.unwrap();
    assert_eq!(message(none).await, "Authorization token required");
    let basic =
        server.client.get(server.url("/api/v1/users/me")).header("authorization", "Basic abc").send().await.unwrap();
    assert_eq!(message(basic).await, "Authorization header must start with Bearer");
    assert_eq!(
        message(anonymous.with(Cred::Bearer("garbage".into())).get("/api/v1/users/me").await).await,
        "Malformed token"
    );
    assert_eq!(
        message(anonymous.with(Cred::Bearer("mycorrhizal_nope".into())).get("/api/v1/users/me").await).await,
        "Invalid token"
    );

    let Cred::Cookie(jwt) = &ada.cred else { unreachable!() };
    let claims = mycorrhizal::auth::session::Signer::new(b"x".repeat(40).as_slice()).verify(jwt, 0);
    assert!(claims.is_err(), "signed with the instance key, not ours");
    let forged = {
        let parts: Vec<&str> = jwt.split('.').collect();
        let payload: mycorrhizal::auth::session::Claims = serde_json::from_slice(&base64_url(parts[1])).unwrap();
        mycorrhizal::auth::session::Signer::new(b"another-key-another-key-another-key!").sign(&payload)
    };
    assert_eq!(message(ada.with(Cred::Cookie(forged)).get("/api/v1/users/me").await).await, "Invalid token signature");
}

fn base64_url(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).unwrap()
}

#[tokio::test]
async fn logout_ends_the_session_on_the_server() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let other = server.sign_in("ada", PASSWORD).await;
    let out = ada.post("/api/v1/logout", json!({})).await;
    assert_eq!(out.status(), 200);
    assert_eq!(set_cookie(&out, "auth_token").as_deref(), Some(""), "cookie cleared");
    let replay = ada.get("/api/v1/users/me").await;
    assert_eq!(replay.status(), 401, "the same cookie replayed after logout");
    assert_eq!(replay.json::<Value>().await.unwrap()["message"], "Session expired, please sign in again");
    assert_eq!(other.get("/api/v1/users/me").await.status(), 200, "only that session ended");
}

#[tokio::test]
async fn changing_the_password_ends_other_sessions_and_renews_the_callers() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let laptop = server.sign_in("ada", PASSWORD).await;
    let wrong = ada
        .post(
            "/api/v1/users/change-password",
            json!({ "current_password": "nope-nope-nope", "new_password": "spore-print-99-gills" }),
        )
        .await;
    assert_eq!(wrong.status(), 400);
    assert_eq!(wrong.json::<Value>().await.unwrap()["details"]["field"], "current_password");
    let changed = ada
        .post(
            "/api/v1/users/change-password",
            json!({ "current_password": PASSWORD, "new_password": "spore-print-99-gills" }),
        )
        .await;
    assert_eq!(changed.status(), 200);
    let fresh = set_cookie(&changed, "auth_token").expect("a fresh cookie for the caller");
    let gone = laptop.get("/api/v1/users/me").await;
    assert_eq!(gone.status(), 401);
    assert_eq!(gone.json::<Value>().await.unwrap()["message"], "Session expired, please sign in again");
    assert_eq!(ada.with(Cred::Cookie(fresh)).get("/api/v1/users/me").await.status(), 200);
    assert_eq!(server.login("ada", PASSWORD).await.status(), 401);
    server.sign_in("ada", "spore-print-99-gills").await;
}

#[tokio::test]
async fn preferences_and_custom_fields_round_trip_with_validation() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    assert_eq!(
        ada.send(reqwest::Method::PATCH, "/api/v1/users/language", json!({ "language": "de" })).await.status(),
        200
    );
    let bad = ada.send(reqwest::Method::PATCH, "/api/v1/users/language", json!({ "language": "xx" })).await;
    assert_eq!(bad.json::<Value>().await.unwrap()["details"]["field"], "language");
    assert_eq!(
        ada.send(reqwest::Method::PATCH, "/api/v1/users/date-format", json!({ "date_format": "us-mmm" }))
            .await
            .status(),
        200
    );
    let fields = ada
        .send(
            reqwest::Method::PATCH,
            "/api/v1/users/custom-fields",
            json!({ "custom_fields": ["Favourite tea", "Shoe size"] }),
        )
        .await;
    assert_eq!(fields.status(), 200);
    let dup =
        ada.send(reqwest::Method::PATCH, "/api/v1/users/custom-fields", json!({ "custom_fields": ["A", "a"] })).await;
    assert_eq!(dup.json::<Value>().await.unwrap()["details"]["field"], "custom_fields[1]");
    let me: Value = ada.get("/api/v1/users/me").await.json().await.unwrap();
    assert_eq!((me["language"].as_str(), me["date_format"].as_str()), (Some("de"), Some("us-mmm")));
    let read: Value = ada.get("/api/v1/users/custom-fields").await.json().await.unwrap();
    assert_eq!(read["custom_fields"], json!(["Favourite tea", "Shoe size"]));
    let login: Value = server.login("ada", PASSWORD).await.json().await.unwrap();
    assert_eq!((login["language"].as_str(), login["date_format"].as_str()), (Some("de"), Some("us-mmm")));
}

#[tokio::test]
async fn password_strength_is_judged_offline() {
    let server = Instance::new().spawn();
    let weak: Value =
        server.post("/api/v1/check-password-strength", json!({ "password": "qwerty123" })).await.json().await.unwrap();
    assert_eq!(weak["is_valid"], false);
    let strong: Value =
        server.post("/api/v1/check-password-strength", json!({ "password": PASSWORD })).await.json().await.unwrap();
    assert_eq!(strong["is_valid"], true);
    for key in ["entropy", "score", "feedback", "min_entropy", "char_set_size", "length"] {
        assert!(strong.get(key).is_some(), "{key}");
    }
}
