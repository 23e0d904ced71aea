//! Single sign-on against a small OpenID provider that the test runs on loopback: discovery,
//! JWKS, an authorize step that records PKCE and nonce, and a token endpoint that checks the
//! verifier and returns an RS256-signed ID token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::helpers::{Cred, Instance, PASSWORD, TestServer, set_cookie};

const CLIENT_ID: &str = "mycorrhizal-test";
const CLIENT_SECRET: &str = "provider-side-client-secret";

#[derive(Clone, Default)]
struct Provider {
    base: String,
    /// What the next ID token says (sub, email, email_verified, ...).
    identity: Arc<Mutex<Value>>,
    /// code -> (challenge, nonce)
    codes: Arc<Mutex<HashMap<String, (String, String)>>>,
    /// Overrides the nonce in the ID token (to test nonce checking).
    bad_nonce: Arc<Mutex<bool>>,
}

async fn provider() -> Provider {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let provider = Provider { base: base.clone(), ..Provider::default() };
    let app = axum::Router::new()
        .route("/.well-known/openid-configuration", axum::routing::get(discovery))
        .route("/authorize", axum::routing::get(authorize))
        .route("/token", axum::routing::post(token))
        .route(
            "/jwks",
            axum::routing::get(|| async {
                axum::Json(serde_json::from_str::<Value>(include_str!("../fixtures/oidc-test-jwks.json")).unwrap())
            }),
        )
        .with_state(provider.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    provider
}

async fn discovery(State(p): State<Provider>) -> axum::Json<Value> {
    axum::Json(json!({
        "issuer": p.base,
        "authorization_endpoint": format!("{}/authorize", p.base),
        "token_endpoint": format!("{}/token", p.base),
        "jwks_uri": format!("{}/jwks", p.base),
        "end_session_endpoint": format!("{}/logout", p.base),
    }))
}

async fn authorize(State(p): State<Provider>, Query(q): Query<HashMap<String, String>>) -> impl IntoResponse {
    assert_eq!(q["client_id"], CLIENT_ID);
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["response_type"], "code");
    let code = format!("code-{}", p.codes.lock().unwrap().len());
    p.codes.lock().unwrap().insert(code.clone(), (q["code_challenge"].clone(), q["nonce"].clone()));
    Redirect::to(&format!("{}?code={code}&state={}", q["redirect_uri"], q["state"]))
}

async fn token(State(p): State<Provider>, Form(form): Form<HashMap<String, String>>) -> axum::response::Response {
    let Some((challenge, nonce)) = p.codes.lock().unwrap().remove(&form["code"]) else {
        return (axum::http::StatusCode::BAD_REQUEST, "unknown code").into_response();
    };
    if form["client_secret"] != CLIENT_SECRET
        || mycorrhizal::auth::oidc::pkce_challenge(&form["code_verifier"]) != challenge
    {
        return (axum::http::StatusCode::BAD_REQUEST, "bad client or verifier").into_response();
    }
    let mut claims = p.identity.lock().unwrap().clone();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    claims["iss"] = json!(p.base);
    claims["aud"] = json!(CLIENT_ID);
    claims["iat"] = json!(now);
    claims["exp"] = json!(now + 300);
    claims["nonce"] = json!(if *p.bad_nonce.lock().unwrap() { "forged".to_string() } else { nonce });
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("test-key-1".into());
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(include_bytes!("../fixtures/oidc-test-key.pem")).unwrap();
    let id_token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    axum::Json(json!({ "id_token": id_token, "access_token": "at", "token_type": "Bearer" })).into_response()
}

fn instance(p: &Provider) -> Instance {
    Instance::new()
        .with("OIDC_PROVIDER_URL", &p.base)
        .with("OIDC_CLIENT_ID", CLIENT_ID)
        .with("OIDC_CLIENT_SECRET", CLIENT_SECRET)
        .with("FRONTEND_URL", "http://crm.test")
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// Runs the browser's part of a sign-in; returns the callback's answer.
async fn sso(server: &TestServer, tamper_state: bool) -> reqwest::Response {
    let http = no_redirects();
    let start = http.get(server.url("/api/v1/auth/oidc/login")).send().await.unwrap();
    assert_eq!(start.status(), 302);
    let cookies: Vec<String> = ["oidc_state", "oidc_nonce", "oidc_pkce"]
        .iter()
        .map(|n| format!("{n}={}", set_cookie(&start, n).unwrap()))
        .collect();
    let to_provider = start.headers()["location"].to_str().unwrap().to_string();
    let back = http.get(&to_provider).send().await.unwrap();
    let to_callback = back.headers()["location"].to_str().unwrap().to_string();
    assert!(to_callback.starts_with("http://crm.test/api/v1/auth/oidc/callback?"), "{to_callback}");
    let mut query = to_callback.split_once('?').unwrap().1.to_string();
    if tamper_state {
        query = query.replace("state=", "state=x");
    }
    http.get(server.url(&format!("/api/v1/auth/oidc/callback?{query}")))
        .header("cookie", cookies.join("; "))
        .send()
        .await
        .unwrap()
}

fn location(r: &reqwest::Response) -> String {
    r.headers()["location"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn auto_provisioned_accounts_sign_in_by_subject_and_have_no_password() {
    let p = provider().await;
    *p.identity.lock().unwrap() =
        json!({ "sub": "u-1", "email": "Fern@Example.org", "email_verified": true, "preferred_username": "fern" });
    let server = instance(&p).with("OIDC_AUTO_PROVISION", "true").spawn();
    let config: Value = server.get("/api/v1/auth/oidc/config").await.json().await.unwrap();
    assert_eq!(config["enabled"], true);

    let done = sso(&server, false).await;
    assert_eq!(done.status(), 302);
    assert_eq!(location(&done), "http://crm.test/");
    let cookie = set_cookie(&done, "auth_token").expect("signed in");
    assert!(set_cookie(&done, "id_token").is_some());
    let me: Value = server.anonymous().with(Cred::Cookie(cookie)).get("/api/v1/users/me").await.json().await.unwrap();
    assert_eq!(
        (me["username"].as_str(), me["email"].as_str(), me["sso"].as_bool()),
        (Some("fern"), Some("fern@example.org"), Some(true))
    );
    assert_eq!(server.login("fern", PASSWORD).await.status(), 401, "no password");

    // The subject links even when the email changes at the provider.
    *p.identity.lock().unwrap() = json!({ "sub": "u-1", "email": "new@example.org", "email_verified": true });
    let again = sso(&server, false).await;
    let me2: Value = server
        .anonymous()
        .with(Cred::Cookie(set_cookie(&again, "auth_token").unwrap()))
        .get("/api/v1/users/me")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me2["id"], me["id"]);
}

#[tokio::test]
async fn a_verified_email_links_an_existing_password_account_which_keeps_its_password() {
    let p = provider().await;
    let server = instance(&p).spawn();
    let ada = server.sign_up("ada").await;
    *p.identity.lock().unwrap() = json!({ "sub": "ada-sub", "email": "ada@example.org", "email_verified": true });
    let done = sso(&server, false).await;
    let me: Value = server
        .anonymous()
        .with(Cred::Cookie(set_cookie(&done, "auth_token").unwrap()))
        .get("/api/v1/users/me")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me["id"], ada.id);
    server.sign_in("ada", PASSWORD).await;
}

#[tokio::test]
async fn unverified_email_unknown_users_and_tampering_are_sent_back_with_an_error() {
    let p = provider().await;
    let server = instance(&p).spawn();
    server.sign_up("ada").await;
    *p.identity.lock().unwrap() = json!({ "sub": "x", "email": "ada@example.org", "email_verified": false });
    assert_eq!(
        location(&sso(&server, false).await),
        "http://crm.test/login?error=oidc_no_account",
        "unverified email is ignored"
    );
    *p.identity.lock().unwrap() = json!({ "sub": "y", "email": "stranger@example.org", "email_verified": true });
    assert_eq!(
        location(&sso(&server, false).await),
        "http://crm.test/login?error=oidc_no_account",
        "no auto-provision"
    );
    assert_eq!(location(&sso(&server, true).await), "http://crm.test/login?error=oidc_error", "state mismatch");
    *p.bad_nonce.lock().unwrap() = true;
    *p.identity.lock().unwrap() = json!({ "sub": "x", "email": "ada@example.org", "email_verified": true });
    let forged = sso(&server, false).await;
    assert_eq!(location(&forged), "http://crm.test/login?error=oidc_error", "nonce mismatch");
    assert!(set_cookie(&forged, "auth_token").is_none());
}

#[tokio::test]
async fn trusting_email_links_unverified_addresses() {
    let p = provider().await;
    let server = instance(&p).with("OIDC_TRUST_EMAIL", "true").spawn();
    let ada = server.sign_up("ada").await;
    *p.identity.lock().unwrap() = json!({ "sub": "x", "email": "ada@example.org" });
    let done = sso(&server, false).await;
    let me: Value = server
        .anonymous()
        .with(Cred::Cookie(set_cookie(&done, "auth_token").unwrap()))
        .get("/api/v1/users/me")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me["id"], ada.id);
}

#[tokio::test]
async fn private_provider_addresses_are_refused_when_blocking() {
    let p = provider().await;
    let server = instance(&p).with("OIDC_BLOCK_PRIVATE_URLS", "true").spawn();
    let refused = no_redirects().get(server.url("/api/v1/auth/oidc/login")).send().await.unwrap();
    assert_eq!(refused.status(), 503);
}

#[tokio::test]
async fn without_oidc_the_sso_routes_are_absent() {
    let server = Instance::new().spawn();
    let config: Value = server.get("/api/v1/auth/oidc/config").await.json().await.unwrap();
    assert_eq!(config["enabled"], false);
    assert_eq!(no_redirects().get(server.url("/api/v1/auth/oidc/login")).send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn logging_out_of_an_sso_session_points_at_the_providers_end_session() {
    let p = provider().await;
    *p.identity.lock().unwrap() = json!({ "sub": "u-9", "email": "fern@example.org", "email_verified": true });
    let server = instance(&p).with("OIDC_AUTO_PROVISION", "true").spawn();
    let done = sso(&server, false).await;
    let (cookie, id_token) = (set_cookie(&done, "auth_token").unwrap(), set_cookie(&done, "id_token").unwrap());
    let out = server
        .client
        .post(server.url("/api/v1/logout"))
        .header("cookie", format!("auth_token={cookie}; id_token={id_token}"))
        .send()
        .await
        .unwrap();
    let body: Value = out.json().await.unwrap();
    let url = body["redirect_url"].as_str().expect("redirect_url for SSO sessions");
    assert!(url.starts_with(&format!("{}/logout?id_token_hint=", p.base)), "{url}");
    let plain = server.sign_up("ada").await;
    let body: Value = plain.post("/api/v1/logout", json!({})).await.json().await.unwrap();
    assert!(body.get("redirect_url").is_none());
}

#[tokio::test]
async fn provider_redirects_are_not_followed() {
    let real = provider().await;
    let target = format!("{}/.well-known/openid-configuration", real.base);
    let app = axum::Router::new().route(
        "/.well-known/openid-configuration",
        axum::routing::get(move || async move { Redirect::temporary(&target) }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let redirecting = Provider { base, ..Provider::default() };
    let server = instance(&redirecting).spawn();
    let refused = no_redirects().get(server.url("/api/v1/auth/oidc/login")).send().await.unwrap();
    assert_eq!(refused.status(), 503, "a redirecting discovery endpoint is not followed");
}
