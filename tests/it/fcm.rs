//! Mobile push through FCM's HTTP v1 API, in process with a fixed clock, against one loopback
//! stand-in for Google's OAuth token endpoint and FCM's send endpoint: it verifies the JWT-bearer
//! assertion's RS256 signature with the service account's public key (a throwaway key pair under
//! tests/fixtures), hands out access tokens, requires one on every send and records what it got.
//! Device registration per user, the token cached until near its expiry, UNREGISTERED removing
//! the device, and isolation.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::Request;
use jiff::SignedDuration;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mycorrhizal::notify::worker::deliver_once;
use mycorrhizal_engine::Clock;
use serde_json::{Value, json};

use crate::helpers::PASSWORD;
use crate::sessions::{InProcess, in_process};

const PUBLIC_KEY: &str = include_str!("../fixtures/fcm-test-public.pem");
const PRIVATE_KEY: &str = include_str!("../fixtures/fcm-test-key.pem");
const PROJECT: &str = "mycorrhizal-test";
const ACCOUNT: &str = "push@mycorrhizal-test.iam.gserviceaccount.com";

/// What the stand-in received and answers.
#[derive(Clone, Default)]
struct Google {
    base: String,
    /// The verified claims of each token request.
    grants: Arc<Mutex<Vec<Value>>>,
    /// Each send's bearer token and body.
    sends: Arc<Mutex<Vec<(String, Value)>>>,
    /// Statuses (and bodies) the send endpoint answers next; then 200.
    script: Arc<Mutex<VecDeque<(u16, String)>>>,
}

impl Google {
    async fn start() -> Google {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let google =
            Google { base: format!("http://{}", listener.local_addr().expect("an address")), ..Google::default() };
        let token_uri = format!("{}/token", google.base);
        let (grants, issued) = (google.grants.clone(), google.grants.clone());
        let (sends, script) = (google.sends.clone(), google.script.clone());
        let app = axum::Router::new()
            .route(
                "/token",
                axum::routing::post(move |axum::Form(form): axum::Form<HashMap<String, String>>| {
                    let (grants, token_uri) = (grants.clone(), token_uri.clone());
                    async move {
                        assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
                        let mut validation = Validation::new(Algorithm::RS256);
                        validation.set_audience(&[token_uri.as_str()]);
                        validation.set_issuer(&[ACCOUNT]);
                        validation.validate_exp = false; // the server's clock is the test's, not ours
                        let key = DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).expect("the public key");
                        let Ok(data) = jsonwebtoken::decode::<Value>(&form["assertion"], &key, &validation) else {
                            return axum::http::Response::builder()
                                .status(400)
                                .body(Body::from(r#"{"error":"invalid_grant"}"#))
                                .expect("a response");
                        };
                        assert_eq!(data.header.kid.as_deref(), Some("fixture-key-1"));
                        let mut grants = grants.lock().expect("grants");
                        grants.push(data.claims);
                        let answer = json!({ "access_token": format!("ya29.test-{}", grants.len()), "expires_in": 3599, "token_type": "Bearer" });
                        axum::http::Response::builder()
                            .header("content-type", "application/json")
                            .body(Body::from(answer.to_string()))
                            .expect("a response")
                    }
                }),
            )
            .fallback(move |request: Request<Body>| {
                let (sends, script, issued) = (sends.clone(), script.clone(), issued.clone());
                async move {
                    let path = request.uri().path().to_string();
                    assert_eq!(path, format!("/v1/projects/{PROJECT}/messages:send"));
                    let bearer = request
                        .headers()
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .unwrap_or("")
                        .to_string();
                    let body = axum::body::to_bytes(request.into_body(), usize::MAX).await.expect("a body");
                    let valid = (1..=issued.lock().expect("grants").len()).any(|n| bearer == format!("ya29.test-{n}"));
                    if !valid {
                        return axum::http::Response::builder().status(401).body(Body::empty()).expect("a response");
                    }
                    sends.lock().expect("sends").push((bearer, serde_json::from_slice(&body).expect("JSON")));
                    let (status, answer) = script.lock().expect("script").pop_front().unwrap_or((
                        200,
                        json!({ "name": format!("projects/{PROJECT}/messages/1") }).to_string(),
                    ));
                    axum::http::Response::builder().status(status).body(Body::from(answer)).expect("a response")
                }
            });
        tokio::spawn(async move { axum::serve(listener, app).await.expect("the stand-in serves") });
        google
    }

    fn sends(&self) -> Vec<(String, Value)> {
        self.sends.lock().expect("sends").clone()
    }

    fn grants(&self) -> Vec<Value> {
        self.grants.lock().expect("grants").clone()
    }
}

/// The service-account file Google's console gives, pointing at the stand-in.
fn service_account(dir: &std::path::Path, google: &Google) -> String {
    let path = dir.join("service-account.json");
    let file = json!({
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "fixture-key-1",
        "private_key": PRIVATE_KEY,
        "client_email": ACCOUNT,
        "client_id": "1234567890",
        "token_uri": format!("{}/token", google.base),
    });
    std::fs::write(&path, file.to_string()).expect("the file is written");
    path.display().to_string()
}

async fn sign_up(app: &InProcess, name: &str) -> String {
    let register = json!({ "username": name, "email": format!("{name}@example.org"), "password": PASSWORD });
    assert_eq!(app.call("POST", "/api/v1/register", None, register).await.0, 201);
    let body = json!({ "identifier": name, "password": PASSWORD });
    let (status, _, cookie) = app.call("POST", "/api/v1/login", None, body).await;
    assert_eq!(status, 200);
    cookie.expect("a session cookie")
}

fn advance(app: &InProcess, seconds: i64) {
    app.clock.set(app.clock.now().checked_add(SignedDuration::from_secs(seconds)).expect("an instant"));
}

const ADA_TOKEN: &str = "dAdaPixel8:APA91bHxY_0123456789abcdefghij-KLMNOP";
const BOB_TOKEN: &str = "eBobPhone:APA91bZz_9876543210zyxwvutsrqp-ONMLK";

#[tokio::test]
async fn fcm_sends_with_an_rs256_grant_caches_the_token_and_forgets_unregistered_devices() {
    let google = Google::start().await;
    let dir = tempfile::tempdir().expect("a folder");
    let file = service_account(dir.path(), &google);
    let app = in_process(&[("FCM_SERVICE_ACCOUNT_FILE", file.as_str()), ("FCM_API_URL", google.base.as_str())]).await;
    let ada = sign_up(&app, "ada").await;

    let (status, device, _) = app
        .call("POST", "/api/v1/notifications/fcm-devices", Some(&ada), json!({ "token": ADA_TOKEN, "name": "Pixel 8" }))
        .await;
    assert_eq!(status, 201, "{device}");
    let device_id = device["id"].as_u64().expect("an id");
    let (status, again, _) = app
        .call("POST", "/api/v1/notifications/fcm-devices", Some(&ada), json!({ "token": ADA_TOKEN, "name": "Pixel" }))
        .await;
    assert_eq!((status, again["id"].as_u64()), (200, Some(device_id)), "the same token again replaces it");
    let (_, listed, _) = app.call("GET", "/api/v1/notifications/fcm-devices", Some(&ada), json!({})).await;
    assert_eq!(listed["devices"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["devices"][0]["name"], "Pixel");
    assert!(!listed.to_string().contains("APA91b"), "the token is never shown: {listed}");
    let (_, channels, _) = app.call("GET", "/api/v1/notifications/channels", Some(&ada), json!({})).await;
    assert_eq!(channels["fcm"], json!({ "available": true, "devices": 1 }));

    let (status, body, _) = app.call("POST", "/api/v1/notifications/channels/fcm/test", Some(&ada), json!({})).await;
    assert_eq!((status, body["queued"].clone()), (202, json!(["fcm"])), "{body}");
    assert_eq!(deliver_once(&app.state.notify).await, 1);

    // One grant: an RS256 JWT the stand-in verified with the public key, for the messaging scope.
    let grants = google.grants();
    assert_eq!(grants.len(), 1);
    let now = app.clock.now().as_second();
    assert_eq!(grants[0]["scope"], "https://www.googleapis.com/auth/firebase.messaging");
    assert_eq!((grants[0]["iat"].as_i64(), grants[0]["exp"].as_i64()), (Some(now), Some(now + 3600)));
    let sends = google.sends();
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].0, "ya29.test-1");
    let message = &sends[0].1["message"];
    assert_eq!(message["token"], ADA_TOKEN);
    assert_eq!(message["notification"]["title"], "Mycorrhizal: test notification");
    assert!(message["notification"]["body"].as_str().expect("a body").contains("fcm"));
    assert!(message["data"]["idempotency_key"].as_str().expect("a key").ends_with(&format!(":fcm:{device_id}")));
    let sent = app.state.engine.system_events(10, |e| e.event_type == "notification_sent").expect("events");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].detail.as_deref(), Some(r#"{"channel":"fcm"}"#));
    let (_, diagnostics, _) = app.call("GET", "/api/v1/admin/diagnostics", Some(&ada), json!({})).await;
    let check = diagnostics["checks"].as_array().and_then(|c| c.iter().find(|c| c["name"] == "notification_fcm"));
    assert_eq!(check.map(|c| c["status"].clone()), Some(json!("ok")), "{diagnostics}");
    assert!(!diagnostics.to_string().contains(&google.base) && !diagnostics.to_string().contains(PROJECT));

    // Within the hour the token is reused; near its expiry a new one is asked for.
    app.call("POST", "/api/v1/notifications/channels/fcm/test", Some(&ada), json!({})).await;
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    assert_eq!(google.grants().len(), 1, "the access token is cached");
    advance(&app, 3400);
    app.call("POST", "/api/v1/notifications/channels/fcm/test", Some(&ada), json!({})).await;
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    assert_eq!(google.grants().len(), 2, "renewed five minutes before it expires");
    assert_eq!(google.sends()[2].0, "ya29.test-2");

    // A 500 is retried; FCM's UNREGISTERED removes the device and stops.
    let unregistered = json!({ "error": { "code": 404, "status": "NOT_FOUND", "details": [
        { "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED" } ] } });
    google.script.lock().expect("script").extend([(500, String::new()), (404, unregistered.to_string())]);
    app.call("POST", "/api/v1/notifications/channels/fcm/test", Some(&ada), json!({})).await;
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    advance(&app, 31);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let (_, listed, _) = app.call("GET", "/api/v1/notifications/fcm-devices", Some(&ada), json!({})).await;
    assert_eq!(listed["devices"], json!([]), "the unregistered device is removed");
    let (status, _, _) = app.call("POST", "/api/v1/notifications/channels/fcm/test", Some(&ada), json!({})).await;
    assert_eq!(status, 404, "no device left");
    let failed = app.state.engine.system_events(10, |e| e.event_type == "notification_failed").expect("events");
    assert_eq!(failed.len(), 1);
    assert!(failed[0].error.as_deref().unwrap_or("").contains("UNREGISTERED"), "{failed:?}");
    advance(&app, 24 * 3600);
    assert_eq!(deliver_once(&app.state.notify).await, 0, "not retried");
    assert_eq!(google.sends().len(), 5);
}

#[tokio::test]
async fn devices_are_per_user_and_go_with_the_account() {
    let google = Google::start().await;
    let dir = tempfile::tempdir().expect("a folder");
    let file = service_account(dir.path(), &google);
    let app = in_process(&[("FCM_SERVICE_ACCOUNT_FILE", file.as_str()), ("FCM_API_URL", google.base.as_str())]).await;
    let ada = sign_up(&app, "ada").await;
    let bob = sign_up(&app, "bob").await;
    let (_, mine, _) =
        app.call("POST", "/api/v1/notifications/fcm-devices", Some(&ada), json!({ "token": ADA_TOKEN })).await;
    let ada_device = mine["id"].as_u64().expect("an id");
    assert_eq!(mine["name"], "Mobile device");
    let (status, _, _) =
        app.call("POST", "/api/v1/notifications/fcm-devices", Some(&bob), json!({ "token": BOB_TOKEN })).await;
    assert_eq!(status, 201);

    let (_, theirs, _) = app.call("GET", "/api/v1/notifications/fcm-devices", Some(&bob), json!({})).await;
    assert_eq!(theirs["devices"].as_array().map(Vec::len), Some(1));
    assert_ne!(theirs["devices"][0]["id"].as_u64(), Some(ada_device));
    let path = format!("/api/v1/notifications/fcm-devices/{ada_device}");
    assert_eq!(app.call("DELETE", &path, Some(&bob), json!({})).await.0, 404, "Bob cannot remove Ada's phone");

    // Bob's test reaches only Bob's phone.
    assert_eq!(app.call("POST", "/api/v1/notifications/channels/fcm/test", Some(&bob), json!({})).await.0, 202);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let sends = google.sends();
    assert_eq!(sends.len(), 1);
    assert_eq!(sends[0].1["message"]["token"], BOB_TOKEN);

    // Refusals name the field; without a service account registration is refused.
    for (body, field) in
        [(json!({ "token": "short" }), "token"), (json!({ "token": "has space in it, sixteen+" }), "token")]
    {
        let (status, answer, _) = app.call("POST", "/api/v1/notifications/fcm-devices", Some(&bob), body).await;
        assert_eq!((status, answer["details"]["field"].as_str()), (400, Some(field)), "{answer}");
    }

    // Deleting Bob's account removes his device; Ada's stays and still gets her messages.
    let bob_device = theirs["devices"][0]["id"].as_u64().expect("an id");
    let (_, me, _) = app.call("GET", "/api/v1/users/me", Some(&bob), json!({})).await;
    let (status, _, _) = app.call("DELETE", &format!("/api/v1/admin/users/{}", me["id"]), Some(&ada), json!({})).await;
    assert_eq!(status, 200);
    let g = app.state.engine.global().expect("a read");
    let devices = g.list::<mycorrhizal::notify::fcm::FcmDevice>().expect("devices");
    assert_eq!(
        devices.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [ada_device],
        "Bob's device {bob_device} is gone"
    );
    assert_eq!(app.call("DELETE", &path, Some(&ada), json!({})).await.0, 204);
}

#[tokio::test]
async fn without_a_service_account_devices_are_refused_and_a_bad_file_stops_the_boot() {
    let app = in_process(&[]).await;
    let ada = sign_up(&app, "ada").await;
    let (status, body, _) =
        app.call("POST", "/api/v1/notifications/fcm-devices", Some(&ada), json!({ "token": ADA_TOKEN })).await;
    assert_eq!(status, 409, "{body}");
    let (_, channels, _) = app.call("GET", "/api/v1/notifications/channels", Some(&ada), json!({})).await;
    assert_eq!(channels["fcm"], json!({ "available": false, "devices": 0 }));

    let dir = tempfile::tempdir().expect("a folder");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, json!({ "type": "service_account", "project_id": "p", "client_email": "a@b", "token_uri": "https://oauth2.googleapis.com/token", "private_key": "not a key" }).to_string()).expect("written");
    let mut vars = HashMap::new();
    vars.insert("FCM_SERVICE_ACCOUNT_FILE".to_string(), bad.display().to_string());
    vars.insert("DATA_DIR".to_string(), dir.path().display().to_string());
    let errors = mycorrhizal::config::Config::load(mycorrhizal::config::Env::from_map(vars)).expect_err("refused");
    let text = format!("{errors:?}");
    assert!(text.contains("FCM_SERVICE_ACCOUNT_FILE") && text.contains("private_key"), "{text}");
    assert!(!text.contains("not a key"), "the key is never shown: {text}");
}
