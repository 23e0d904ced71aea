//! The user's integrations against the real binary: Immich, Paperless-ngx and Seafile as
//! stand-ins on loopback that speak the parts of their documented APIs used (paths, headers,
//! JSON) and record what they got; WebDAV against a real wsgidav server, with a stand-in only
//! for Nextcloud's app-password check. The binary reaches loopback only because these tests
//! start it with `MYCORRHIZAL_TEST_LOOPBACK_OUTBOUND=1`, which only a debug build reads; the
//! guard itself is tested without it.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Request};
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Client, Instance, TestServer, json_of};

/// A request a stand-in got.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
}

impl Seen {
    fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
    }
}

type Answer = (u16, &'static str, Vec<u8>);

/// A loopback server answering with `answer` and recording every request.
#[derive(Clone)]
pub struct StandIn {
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl StandIn {
    pub async fn start(answer: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> StandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (log, answer) = (seen.clone(), Arc::new(answer));
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let (log, answer) = (log.clone(), answer.clone());
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                let got = Seen {
                    method: parts.method.to_string(),
                    path: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
                    headers: parts.headers,
                    body: String::from_utf8_lossy(&body).into(),
                };
                let (status, kind, bytes) = answer(&got);
                log.lock().unwrap().push(got);
                axum::http::Response::builder()
                    .status(status)
                    .header("content-type", kind)
                    .body(Body::from(bytes))
                    .unwrap()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        StandIn { base, seen }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// A server answering every request with a redirect to `location`.
    pub async fn redirecting(location: &'static str) -> StandIn {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let log = log.clone();
            async move {
                let (parts, _) = request.into_parts();
                log.lock().unwrap().push(Seen {
                    method: parts.method.to_string(),
                    path: parts.uri.to_string(),
                    headers: parts.headers,
                    body: String::new(),
                });
                axum::http::Response::builder().status(302).header("location", location).body(Body::empty()).unwrap()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        StandIn { base, seen }
    }
}

/// A small PNG (the picture sniffing reads the signature and the header chunk).
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\x0bIDATx\x9cc\xf8\x0f\0\x01\x01\x01\0\x18\xdd\x8d\xb4\0\0\0\0IEND\xaeB`\x82";

fn json_answer(v: Value) -> Answer {
    (200, "application/json", v.to_string().into_bytes())
}

/// Immich, as its API documentation describes the calls used; `x-api-key` must be `immich-key`.
pub async fn immich() -> StandIn {
    StandIn::start(|r| {
        let path = r.path.split('?').next().unwrap_or_default().to_string();
        if path == "/api/server/ping" {
            return json_answer(json!({ "res": "pong" }));
        }
        if r.header("x-api-key") != "immich-key" {
            return (401, "application/json", br#"{"message":"Invalid API key"}"#.to_vec());
        }
        match (r.method.as_str(), path.as_str()) {
            ("GET", "/api/users/me") => json_answer(json!({ "email": "ada@photos.example", "name": "Ada" })),
            ("GET", "/api/people") => json_answer(json!({ "people": [
                { "id": "p-ann", "name": "Ann Example" }, { "id": "p-bob", "name": "Bob" }],
                "total": 2, "hidden": 0, "hasNextPage": false })),
            ("GET", "/api/people/p-ann") => json_answer(json!({ "id": "p-ann", "name": "Ann Example" })),
            ("GET", "/api/people/p-bob") => json_answer(json!({ "id": "p-bob", "name": "Bob" })),
            ("GET", "/api/people/p-ann/statistics") => json_answer(json!({ "assets": 2 })),
            ("POST", "/api/search/metadata") => {
                let body: Value = serde_json::from_str(&r.body).unwrap_or_default();
                if body["personIds"] != json!(["p-ann"]) {
                    return json_answer(json!({ "assets": { "items": [], "nextPage": null } }));
                }
                json_answer(json!({ "assets": { "total": 2, "count": 2, "nextPage": null, "items": [
                    { "id": "asset-1", "fileCreatedAt": "2026-11-01T10:00:00.000Z", "type": "IMAGE" },
                    { "id": "asset-2", "fileCreatedAt": "2026-10-01T09:30:00.000Z", "type": "IMAGE" }] } }))
            }
            ("GET", "/api/people/p-ann/thumbnail") => (200, "image/png", PNG.to_vec()),
            ("GET", "/api/assets/asset-1/thumbnail") => (200, "image/png", [PNG, b"asset-1"].concat()),
            ("GET", "/api/assets/asset-2/thumbnail") => (200, "image/svg+xml", b"<svg/>".to_vec()),
            _ => (404, "application/json", br#"{"message":"Not found"}"#.to_vec()),
        }
    })
    .await
}

/// A server that may reach loopback stand-ins (the test builds' path).
pub fn instance() -> Instance {
    Instance::new().with("MYCORRHIZAL_TEST_LOOPBACK_OUTBOUND", "1")
}

async fn contact(client: &Client, name: &str) -> (u64, String) {
    let made = json_of(client.post("/api/v1/contacts", json!({ "firstname": name })).await, 201).await;
    (made["contact"]["id"].as_u64().unwrap(), made["contact"]["uid"].as_str().unwrap().to_string())
}

async fn put(client: &Client, path: &str, body: Value) -> reqwest::Response {
    client.send(Method::PUT, path, body).await
}

#[tokio::test]
async fn the_photo_library_links_a_person_syncs_their_photos_and_fills_the_picture_without_the_key_leaving() {
    let library = immich().await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, ann_uid) = contact(&ada, "Ann").await;
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{ann}/detail")).await, 200).await;
    assert!(detail.get("immich").is_none(), "no photo library, no `immich`: {detail}");

    let empty = json_of(ada.get("/api/v1/immich/config").await, 200).await;
    assert_eq!((empty["base_url"].as_str(), empty["has_api_key"].as_bool()), (Some(""), Some(false)), "{empty}");
    assert_eq!(empty["status"], "not_configured");
    let unset = json_of(ada.get("/api/v1/immich/people").await, 409).await;
    assert!(unset["message"].as_str().unwrap().contains("not configured"), "{unset}");

    let address = format!("{}/api/", library.base);
    let keyless = json_of(put(&ada, "/api/v1/immich/config", json!({ "base_url": address })).await, 400).await;
    assert_eq!(keyless["details"]["field"], "api_key", "{keyless}");
    let saved = put(&ada, "/api/v1/immich/config", json!({ "base_url": address, "api_key": "immich-key" })).await;
    let text = saved.text().await.unwrap();
    assert!(!text.contains("immich-key"), "the key is never returned: {text}");
    let saved: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(saved["base_url"], library.base.as_str(), "`/api` and the slash are dropped");
    assert_eq!((saved["has_api_key"].as_bool(), saved["sync_enabled"].as_bool()), (Some(true), Some(true)));
    assert_eq!(saved["status"], "untested");

    let tested = json_of(ada.post("/api/v1/immich/test-connection", json!({})).await, 200).await;
    assert_eq!((tested["ok"].as_bool(), tested["stage"].as_str()), (Some(true), Some("ok")), "{tested}");
    assert!(tested["message"].as_str().unwrap().contains("ada@photos.example"));
    assert_eq!(json_of(ada.get("/api/v1/immich/config").await, 200).await["status"], "ok");

    let people = json_of(ada.get("/api/v1/immich/people").await, 200).await;
    assert_eq!(people["people"][0], json!({ "id": "p-ann", "name": "Ann Example" }));

    let path = format!("/api/v1/immich/contacts/{ann_uid}/link");
    let unknown = json_of(ada.post(&path, json!({ "person_id": "p-nobody" })).await, 404).await;
    assert_eq!(unknown["code"], "NOT_FOUND", "{unknown}");
    let linked = json_of(ada.post(&path, json!({ "person_id": "p-ann" })).await, 201).await;
    let identity = &linked["external_identity"];
    assert_eq!((identity["system"].as_str(), identity["external_id"].as_str()), (Some("immich"), Some("p-ann")));
    assert_eq!(identity["url"], format!("{}/people/p-ann", library.base).as_str());
    assert_eq!(identity["metadata"]["person_name"], "Ann Example", "named by the library");
    assert_eq!(json_of(ada.post(&path, json!({ "person_id": "p-ann" })).await, 409).await["code"], "CONFLICT");

    let synced = json_of(ada.post("/api/v1/immich/sync", json!({})).await, 200).await;
    assert_eq!((synced["people"].as_u64(), synced["photos_added"].as_u64()), (Some(1), Some(2)), "{synced}");
    assert_eq!(synced["pictures_filled"], 1, "Ann had no picture: she gets her face");
    let card = json_of(ada.get(&format!("/api/v1/contacts/{ann}")).await, 200).await;
    assert!(card["photo_thumbnail"].is_string(), "{card}");
    let picture = ada.get(&format!("/api/v1/contacts/{ann}/profile_picture")).await;
    assert_eq!(picture.bytes().await.unwrap().as_ref(), PNG);
    let again = json_of(ada.post("/api/v1/immich/sync", json!({})).await, 200).await;
    assert_eq!((again["photos_added"].as_u64(), again["pictures_filled"].as_u64()), (Some(0), Some(0)), "{again}");

    let timeline =
        json_of(ada.get(&format!("/api/v1/contacts/{ann}/timeline?type=external_activity")).await, 200).await;
    let photos: Vec<&Value> = timeline["items"].as_array().unwrap().iter().collect();
    assert_eq!(photos.len(), 2, "{timeline}");
    assert_eq!(photos[0]["data"]["type"], "photo-appearance");
    assert_eq!(photos[0]["data"]["external_id"], "asset-1", "newest first");
    assert_eq!(photos[0]["data"]["payload"]["person_name"], "Ann Example");

    let detail = json_of(ada.get(&format!("/api/v1/contacts/{ann}/detail")).await, 200).await;
    assert_eq!(detail["immich"]["summary"]["photo_count"], 2, "{detail}");
    let summary = json_of(ada.get(&format!("/api/v1/immich/contacts/{ann_uid}/summary")).await, 200).await;
    let s = &summary["summary"];
    assert_eq!((s["photo_count"].as_u64(), s["latest_asset_id"].as_str()), (Some(2), Some("asset-1")), "{summary}");
    assert_eq!(s["latest_at"], "2026-11-01T10:00:00Z");
    assert_eq!(s["identity"]["sync_status"], "synced");

    let face = ada.get(&format!("/api/v1/immich/contacts/{ann_uid}/thumbnail")).await;
    assert_eq!(face.status(), 200);
    assert_eq!(face.headers()["content-type"], "image/png");
    assert_eq!(face.bytes().await.unwrap().as_ref(), PNG);
    let photo = ada.get(&format!("/api/v1/immich/contacts/{ann_uid}/assets/asset-1/image")).await;
    assert_eq!((photo.status().as_u16(), photo.bytes().await.unwrap().to_vec()), (200, [PNG, b"asset-1"].concat()));
    let svg = json_of(ada.get(&format!("/api/v1/immich/contacts/{ann_uid}/assets/asset-2/image")).await, 503).await;
    assert!(svg["message"].as_str().unwrap().contains("cannot be read"), "an SVG is not passed through: {svg}");
    let stranger = ada.get(&format!("/api/v1/immich/contacts/{ann_uid}/assets/asset-9/image")).await;
    assert_eq!(stranger.status(), 404, "only photos recorded of this contact");
    let assets = json_of(ada.get(&format!("/api/v1/immich/contacts/{ann_uid}/assets")).await, 200).await;
    assert_eq!(assets["assets"][0]["id"], "asset-1");
    let used = ada.post(&format!("/api/v1/immich/contacts/{ann_uid}/assets/asset-1/use-as-picture"), json!({})).await;
    assert_eq!(json_of(used, 200).await["message"], "Profile picture updated");
    let picture = ada.get(&format!("/api/v1/contacts/{ann}/profile_picture")).await;
    assert_eq!(picture.bytes().await.unwrap().to_vec(), [PNG, b"asset-1"].concat(), "the chosen photo");
    let unknown =
        ada.post(&format!("/api/v1/immich/contacts/{ann_uid}/assets/asset-9/use-as-picture"), json!({})).await;
    assert_eq!(unknown.status(), 404, "only a photo recorded of this contact");

    // Every request but the ping carried the key, and only to the library.
    let seen = library.seen();
    assert!(seen.iter().filter(|r| r.path != "/api/server/ping").all(|r| r.header("x-api-key") == "immich-key"));
    assert!(
        seen.iter()
            .any(|r| r.method == "POST" && r.path == "/api/search/metadata" && r.body.contains("\"order\":\"desc\""))
    );

    // Another user sees none of it.
    let bob = server.sign_up("bob").await;
    assert_eq!(json_of(bob.get("/api/v1/immich/config").await, 200).await["has_api_key"], false);
    for path in [
        format!("/api/v1/immich/contacts/{ann_uid}/thumbnail"),
        format!("/api/v1/immich/contacts/{ann_uid}/summary"),
        format!("/api/v1/immich/contacts/{ann_uid}/assets/asset-1/image"),
        format!("/api/v1/immich/contacts/{ann}/thumbnail"),
    ] {
        assert_eq!(bob.get(&path).await.status(), 404, "{path}");
    }
    let theirs = json_of(bob.get("/api/v1/external-identities?system=immich").await, 200).await;
    assert_eq!(theirs["total"], 0);

    // Unlinking keeps the photos on the timeline; forgetting the settings keeps the links.
    assert_eq!(ada.send(Method::DELETE, &path, json!({})).await.status(), 200);
    let kept = json_of(ada.get(&format!("/api/v1/external-activities?contact_id={ann_uid}")).await, 200).await;
    assert_eq!(kept["total"], 2);
    let forgotten = json_of(ada.send(Method::DELETE, "/api/v1/immich/config", json!({})).await, 200).await;
    assert_eq!(forgotten["message"], "Immich config deleted");
    assert_eq!(json_of(ada.get("/api/v1/immich/config").await, 200).await["status"], "not_configured");
}

#[tokio::test]
async fn a_failing_integration_is_told_to_its_user_the_diagnostics_and_the_event_log() {
    let library = immich().await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let body = json!({ "base_url": library.base, "api_key": "revoked-key" });
    json_of(put(&ada, "/api/v1/immich/config", body).await, 200).await;
    let tested = json_of(ada.post("/api/v1/immich/test-connection", json!({})).await, 200).await;
    assert_eq!((tested["ok"].as_bool(), tested["stage"].as_str()), (Some(false), Some("auth")), "{tested}");
    assert!(tested["message"].as_str().unwrap().contains("rejected the API key"));
    let people = json_of(ada.get("/api/v1/immich/people").await, 503).await;
    assert_eq!(people["details"]["service"], "immich", "503, never 401 (clients sign out on 401): {people}");
    let config = json_of(ada.get("/api/v1/immich/config").await, 200).await;
    assert_eq!(config["status"], "failing", "{config}");
    assert!(config["status_message"].as_str().unwrap().contains("rejected"));

    let events = json_of(ada.get("/api/v1/admin/system-events?component=immich").await, 200).await;
    let failed: Vec<&Value> = events["system_events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "integration_failed")
        .collect();
    assert!(failed.len() >= 2, "{events}");
    assert!(!events.to_string().contains("revoked-key"), "the key is not in the log");
    let diagnostics = json_of(ada.get("/api/v1/admin/diagnostics").await, 200).await;
    let check = diagnostics["checks"].as_array().unwrap().iter().find(|c| c["name"] == "integration_immich").cloned();
    let check = check.unwrap_or_else(|| panic!("{diagnostics}"));
    assert_eq!(check["status"], "error", "the one connection fails: {check}");
    assert!(check["message"].as_str().unwrap().contains("1 failing"), "{check}");
    let status = json_of(ada.get("/api/v1/admin/system-status").await, 200).await;
    let immich = &status["health"]["user_integrations"]["immich"];
    assert_eq!((immich["configured"].as_u64(), immich["failing"].as_u64()), (Some(1), Some(1)), "{status}");
    let run = json_of(ada.post("/api/v1/admin/trigger-alerts", json!({})).await, 200).await;
    assert_eq!(run["result"], "success", "{run}");
    let alerts = json_of(ada.get("/api/v1/admin/alerts").await, 200).await;
    let integrations =
        alerts["alerts"].as_array().unwrap().iter().find(|a| a["condition"] == "integrations").cloned().unwrap();
    assert_eq!(integrations["state"], "alerting", "{alerts}");
    assert!(integrations["detail"].as_str().unwrap().contains("immich"), "{integrations}");

    // Mended: the key is replaced, the status follows.
    let body = json!({ "base_url": library.base, "api_key": "immich-key" });
    json_of(put(&ada, "/api/v1/immich/config", body).await, 200).await;
    assert_eq!(json_of(ada.post("/api/v1/immich/test-connection", json!({})).await, 200).await["ok"], true);
    assert_eq!(json_of(ada.get("/api/v1/immich/config").await, 200).await["status"], "ok");
}

#[tokio::test]
async fn private_and_loopback_addresses_are_refused_with_no_switch() {
    // No test path: the release posture. Not even the other knobs open it.
    let server = Instance::new().with("WEBHOOK_BLOCK_PRIVATE_URLS", "false").spawn();
    let ada = server.sign_up("ada").await;
    for (system, address) in [
        ("immich", "http://127.0.0.1:2283"),
        ("paperless", "http://10.0.0.5:8000"),
        ("seafile", "http://[::1]:8000"),
        ("nextcloud", "http://169.254.169.254"),
        ("immich", "http://localhost:2283"),
        ("paperless", "http://[::ffff:192.168.1.10]"),
    ] {
        let body =
            json!({ "base_url": address, "api_key": "k", "api_token": "t", "username": "u", "app_password": "p" });
        let refused = json_of(put(&ada, &format!("/api/v1/{system}/config"), body).await, 400).await;
        assert_eq!(refused["details"]["field"], "base_url", "{system} {address}: {refused}");
        assert!(refused["message"].as_str().unwrap().contains("private or internal"), "{refused}");
    }
    assert_eq!(ada.get("/api/v1/ftp/config").await.status(), 404, "no such system");
}

#[tokio::test]
async fn a_credential_sealed_under_another_root_secret_asks_to_be_entered_again() {
    const SECRET_A: &str = "5e2b8d1f4a7c0e3b6d9f2a5c8e1b4d7f0a3c6e9b2d5f8a1c4e7b0d3f6a9c2e5b";
    const SECRET_B: &str = "c7e0a3d6f9b2e5a8c1f4b7d0e3a6c9f2b5e8a1d4c7f0b3e6a9d2c5f8b1e4a7d0";
    const KEY: &str = "k3-4c5d6e7f8091a2b3c4d5e6f708192a3b-integration-key";
    let library = immich().await;
    let first = instance().with("JWT_SECRET_KEY", SECRET_A).with("DATA_ENCRYPTION_KEY", KEY);
    let mut server = first.spawn();
    let ada = server.sign_up("ada").await;
    json_of(
        put(&ada, "/api/v1/immich/config", json!({ "base_url": library.base, "api_key": "immich-key" })).await,
        200,
    )
    .await;
    server.terminate();
    let mut second = first;
    second.env.insert("JWT_SECRET_KEY".into(), SECRET_B.into());
    let server = second.spawn();
    let ada = server.sign_up("ada").await;
    let config = json_of(ada.get("/api/v1/immich/config").await, 200).await;
    assert_eq!(config["status"], "credential_unreadable", "{config}");
    assert!(config["status_message"].as_str().unwrap().contains("re-enter the credential"), "{config}");
    let refused = json_of(ada.post("/api/v1/immich/test-connection", json!({})).await, 503).await;
    assert!(refused["message"].as_str().unwrap().contains("authentication failed"), "{refused}");
    let kept = json_of(put(&ada, "/api/v1/immich/config", json!({ "base_url": library.base })).await, 400).await;
    assert_eq!(kept["details"]["field"], "api_key", "an unreadable key cannot be kept: {kept}");
    json_of(
        put(&ada, "/api/v1/immich/config", json!({ "base_url": library.base, "api_key": "immich-key" })).await,
        200,
    )
    .await;
    assert_eq!(json_of(ada.post("/api/v1/immich/test-connection", json!({})).await, 200).await["ok"], true);
}

/// Paperless-ngx, as its REST API documentation describes the calls used; the token must be
/// `Token paper-token`.
pub async fn paperless() -> StandIn {
    StandIn::start(|r| {
        if r.header("authorization") != "Token paper-token" {
            return (401, "application/json", br#"{"detail":"Invalid token."}"#.to_vec());
        }
        let path = r.path.split('?').next().unwrap_or_default();
        let query = r.path.split_once('?').map(|(_, q)| q).unwrap_or_default();
        let lease = json!({ "id": 7, "title": "Lease Ann", "original_file_name": "lease.pdf",
                            "created_date": "2024-05-01", "added": "2024-05-02T10:00:00Z", "correspondent": 3 });
        let bill = json!({ "id": 8, "title": "Bill", "original_file_name": "bill.pdf",
                           "created_date": "2024-06-01", "added": "2024-06-02T10:00:00Z", "correspondent": 4 });
        match path {
            "/api/" => json_answer(json!({ "documents": "/api/documents/" })),
            "/api/ui_settings/" => json_answer(json!({ "user": { "id": 1, "username": "ada" }, "settings": {} })),
            "/api/documents/" => {
                let results = if query.contains("correspondent__id=3") || query.contains("query=lease") {
                    vec![lease]
                } else if query.contains("correspondent__id") || query.contains("query=") {
                    vec![]
                } else {
                    vec![bill, lease]
                };
                json_answer(json!({ "count": results.len(), "next": null, "previous": null, "results": results }))
            }
            "/api/documents/7/" => json_answer(lease),
            "/api/correspondents/" => json_answer(json!({ "count": 1, "next": null,
                "results": [{ "id": 3, "name": "Ann's landlord", "document_count": 1 }] })),
            "/api/tags/" => json_answer(json!({ "count": 0, "next": null, "results": [] })),
            _ => (404, "application/json", br#"{"detail":"Not found."}"#.to_vec()),
        }
    })
    .await
}

#[tokio::test]
async fn the_document_archive_finds_documents_by_correspondent_or_text_and_links_them() {
    let archive = paperless().await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let (ann, ann_uid) = contact(&ada, "Ann").await;
    let saved = json_of(
        put(&ada, "/api/v1/paperless/config", json!({ "base_url": archive.base, "api_token": "paper-token" })).await,
        200,
    )
    .await;
    assert_eq!(saved["has_api_token"], true);
    assert!(saved.get("has_api_key").is_none());
    let tested = json_of(ada.post("/api/v1/paperless/test-connection", json!({})).await, 200).await;
    assert_eq!(tested["message"], "Connected to Paperless as ada", "{tested}");

    let by_text = json_of(ada.get("/api/v1/paperless/documents?query=lease").await, 200).await;
    assert_eq!(by_text["documents"].as_array().unwrap().len(), 1, "{by_text}");
    assert_eq!(by_text["documents"][0]["url"], format!("{}/documents/7/details", archive.base).as_str());
    let correspondents = json_of(ada.get("/api/v1/paperless/correspondents").await, 200).await;
    assert_eq!(correspondents["correspondents"][0]["name"], "Ann's landlord");
    let by_correspondent = json_of(ada.get("/api/v1/paperless/documents?correspondent=3").await, 200).await;
    assert_eq!(by_correspondent["documents"][0]["id"], 7);
    let bad = json_of(ada.get("/api/v1/paperless/documents?correspondent=x").await, 400).await;
    assert_eq!(bad["details"]["field"], "correspondent");
    assert!(
        archive.seen().iter().any(|r| r.path.contains("ordering=-added") && r.path.contains("correspondent__id=3"))
    );

    let link = format!("/api/v1/paperless/contacts/{ann_uid}/link");
    assert_eq!(
        json_of(ada.post(&link, json!({ "document_id": "abc" })).await, 400).await["details"]["field"],
        "document_id"
    );
    assert_eq!(ada.post(&link, json!({ "document_id": "99" })).await.status(), 404, "no such document");
    let linked = json_of(ada.post(&link, json!({ "document_id": "7" })).await, 201).await;
    let identity = linked["external_identity"].clone();
    assert_eq!(
        identity["metadata"],
        json!({ "title": "Lease Ann", "file_name": "lease.pdf", "created_at": "2024-05-01" })
    );
    assert_eq!(json_of(ada.post(&link, json!({ "document_id": 7 })).await, 409).await["code"], "CONFLICT");
    let detail = json_of(ada.get(&format!("/api/v1/contacts/{ann}/detail")).await, 200).await;
    assert_eq!(detail["external_identities"][0]["system"], "paperless", "{detail}");

    let bob = server.sign_up("bob").await;
    assert_eq!(bob.get("/api/v1/paperless/documents").await.status(), 409, "not configured for Bob");
    let id = identity["id"].as_u64().unwrap();
    let theirs = bob.send(Method::DELETE, &format!("/api/v1/paperless/contacts/{ann_uid}/links/{id}"), json!({})).await;
    assert_eq!(theirs.status(), 404, "not Bob's");
    let wrong_system =
        ada.send(Method::DELETE, &format!("/api/v1/seafile/contacts/{ann_uid}/links/{id}"), json!({})).await;
    assert_eq!(wrong_system.status(), 404, "a Paperless link is not a Seafile one");
    let removed =
        ada.send(Method::DELETE, &format!("/api/v1/paperless/contacts/{ann_uid}/links/{id}"), json!({})).await;
    assert_eq!(json_of(removed, 200).await["message"], "Paperless link removed");
}

/// Seafile, as its Web API (`api2`) documentation describes the calls used.
async fn seafile() -> StandIn {
    StandIn::start(|r| {
        let path = r.path.split('?').next().unwrap_or_default();
        if path == "/api2/ping/" {
            return (200, "application/json", br#""pong""#.to_vec());
        }
        if r.header("authorization") != "Token sea-token" {
            return (401, "application/json", br#"{"detail":"Invalid token"}"#.to_vec());
        }
        match path {
            "/api2/auth/ping/" => (200, "application/json", br#""pong""#.to_vec()),
            "/api2/repos/" => json_answer(json!([{ "id": "repo-1", "name": "My Library", "type": "repo", "size": 10 }])),
            "/api2/repos/repo-1/" => json_answer(json!({ "id": "repo-1", "name": "My Library" })),
            "/api2/repos/repo-1/dir/" => {
                let p = r.path.split("p=").nth(1).unwrap_or_default().split('&').next().unwrap_or_default();
                if p == "%2F" || p == "/" {
                    json_answer(json!([{ "id": "d1", "type": "dir", "name": "Letters", "mtime": 1700000000 }]))
                } else if p.contains("Letters") {
                    json_answer(json!([{ "id": "f1", "type": "file", "name": "Lease 2024.pdf", "size": 1234, "mtime": 1700000100 }]))
                } else {
                    (404, "application/json", br#"{"error_msg":"Folder not found."}"#.to_vec())
                }
            }
            _ => (404, "application/json", b"{}".to_vec()),
        }
    })
    .await
}

#[tokio::test]
async fn the_file_library_is_browsed_and_a_file_linked_once_it_is_found_there() {
    let files = seafile().await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let (_, ann_uid) = contact(&ada, "Ann").await;
    json_of(
        put(&ada, "/api/v1/seafile/config", json!({ "base_url": files.base, "api_token": "sea-token" })).await,
        200,
    )
    .await;
    assert_eq!(json_of(ada.post("/api/v1/seafile/test-connection", json!({})).await, 200).await["ok"], true);
    let libraries = json_of(ada.get("/api/v1/seafile/libraries").await, 200).await;
    assert_eq!(libraries["libraries"][0], json!({ "id": "repo-1", "name": "My Library", "type": "repo" }));
    let root = json_of(ada.get("/api/v1/seafile/libraries/repo-1/dir").await, 200).await;
    assert_eq!((root["items"][0]["name"].as_str(), root["items"][0]["type"].as_str()), (Some("Letters"), Some("dir")));
    let letters = json_of(ada.get("/api/v1/seafile/libraries/repo-1/dir?path=/Letters").await, 200).await;
    assert_eq!(letters["items"][0]["path"], "/Letters/Lease 2024.pdf", "{letters}");
    assert_eq!(
        json_of(ada.get("/api/v1/seafile/libraries/repo-1/dir?path=/a/../b").await, 400).await["details"]["field"],
        "path"
    );

    let link = format!("/api/v1/seafile/contacts/{ann_uid}/link");
    let missing = ada.post(&link, json!({ "repo_id": "repo-1", "path": "/Letters/Nope.pdf" })).await;
    assert_eq!(missing.status(), 404, "a path not in the library is not linked");
    let linked =
        json_of(ada.post(&link, json!({ "repo_id": "repo-1", "path": "/Letters/Lease 2024.pdf" })).await, 201).await;
    let identity = &linked["external_identity"];
    assert_eq!(identity["external_id"], "repo-1:/Letters/Lease 2024.pdf");
    assert_eq!(identity["url"], format!("{}/lib/repo-1/file/Letters/Lease%202024.pdf", files.base).as_str());
    assert_eq!(
        (identity["metadata"]["size"].as_u64(), identity["metadata"]["type"].as_str()),
        (Some(1234), Some("file"))
    );
    let folder = json_of(ada.post(&link, json!({ "repo_id": "repo-1", "path": "/Letters" })).await, 201).await;
    assert_eq!(
        folder["external_identity"]["url"],
        format!("{}/library/repo-1/My%20Library/Letters/", files.base).as_str()
    );
}

/// wsgidav on loopback, serving `root` to `remy` with `app-secret-1`; stopped when dropped.
struct Wsgidav {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Wsgidav {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wsgidav() -> Wsgidav {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("Letters/Old")).unwrap();
    std::fs::write(root.join("Letters/Lease 2024.pdf"), b"%PDF-1.4 lease").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = format!(
        "host: 127.0.0.1\nport: {port}\nprovider_mapping:\n  \"/\": \"{}\"\nhttp_authenticator:\n  accept_basic: true\n  \
         accept_digest: false\n  default_to_digest: false\nsimple_dc:\n  user_mapping:\n    \"*\":\n      \"remy\":\n        \
         password: \"app-secret-1\"\nverbose: 0\n",
        root.display()
    );
    let file = dir.path().join("wsgidav.yaml");
    std::fs::write(&file, config).unwrap();
    let child = Command::new(crate::dav_clients::venv_tool("python"))
        .args(["-c", "from wsgidav.server.server_cli import run; run()", "--config"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wsgidav (tests/requirements.txt)");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "wsgidav did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Wsgidav { child, base: format!("http://127.0.0.1:{port}"), _dir: dir }
}

#[tokio::test]
async fn webdav_links_browse_a_real_webdav_server_and_link_what_is_there() {
    let dav = wsgidav();
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let (_, ann_uid) = contact(&ada, "Ann").await;
    let wrong = json!({ "base_url": dav.base, "username": "remy", "app_password": "wrong" });
    let refused = json_of(put(&ada, "/api/v1/nextcloud/config", wrong).await, 400).await;
    assert_eq!(refused["details"]["field"], "app_password", "{refused}");
    let body = json!({ "base_url": dav.base, "username": "remy", "app_password": "app-secret-1" });
    let saved = json_of(put(&ada, "/api/v1/nextcloud/config", body).await, 200).await;
    assert_eq!(
        (saved["username"].as_str(), saved["has_app_password"].as_bool()),
        (Some("remy"), Some(true)),
        "{saved}"
    );
    assert_eq!(json_of(ada.post("/api/v1/nextcloud/test-connection", json!({})).await, 200).await["ok"], true);

    let root = json_of(ada.get("/api/v1/nextcloud/dir").await, 200).await;
    assert_eq!(
        root["items"],
        json!([{ "name": "Letters", "path": "/Letters/", "type": "dir",
        "modified_at": root["items"][0]["modified_at"] }]),
        "{root}"
    );
    let letters = json_of(ada.get("/api/v1/nextcloud/dir?path=/Letters/").await, 200).await;
    let names: Vec<&str> = letters["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Old", "Lease 2024.pdf"], "folders first: {letters}");
    assert_eq!(letters["items"][1]["size"], 14);
    assert_eq!(json_of(ada.get("/api/v1/nextcloud/dir?path=/../etc").await, 400).await["details"]["field"], "path");

    let link = format!("/api/v1/nextcloud/contacts/{ann_uid}/link");
    assert_eq!(ada.post(&link, json!({ "path": "/Letters/Nope.pdf" })).await.status(), 404);
    let linked = json_of(ada.post(&link, json!({ "path": "/Letters/Lease 2024.pdf" })).await, 201).await;
    let identity = &linked["external_identity"];
    assert_eq!(identity["external_id"], "/Letters/Lease 2024.pdf");
    assert_eq!(identity["url"], format!("{}/Letters/Lease%202024.pdf", dav.base).as_str(), "its WebDAV address");
    assert_eq!(identity["metadata"]["name"], "Lease 2024.pdf");
    assert_eq!(
        json_of(ada.post(&link, json!({ "path": "/Letters/Lease 2024.pdf" })).await, 409).await["code"],
        "CONFLICT"
    );
}

/// Nextcloud's app-password check and its WebDAV root, for `remy`: a real password
/// (`real-password`) makes it issue an app password; an app password (`app-password`) is 403.
async fn nextcloud() -> StandIn {
    StandIn::start(|r| {
        let basic = r.header("authorization");
        let auth = |password: &str| {
            use base64::Engine;
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("remy:{password}")))
        };
        let path = r.path.split('?').next().unwrap_or_default();
        match (r.method.as_str(), path) {
            ("GET", "/ocs/v2.php/core/getapppassword") if r.header("ocs-apirequest") == "true" => {
                if basic == auth("real-password") {
                    json_answer(json!({ "ocs": { "meta": { "status": "ok", "statuscode": 200 },
                        "data": { "apppassword": "issued-by-nextcloud" } } }))
                } else {
                    (403, "application/json", br#"{"ocs":{"meta":{"status":"failure","statuscode":403},"data":[]}}"#.to_vec())
                }
            }
            ("DELETE", "/ocs/v2.php/core/apppassword") => json_answer(json!({ "ocs": { "data": [] } })),
            // The login is `remy`; the account's user id, which names its files, `remy-id`.
            ("PROPFIND", "/remote.php/dav/") if basic == auth("app-password") => (
                207,
                "application/xml",
                br#"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>/remote.php/dav/</d:href><d:propstat><d:prop><d:current-user-principal><d:href>/remote.php/dav/principals/users/remy-id/</d:href></d:current-user-principal></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>"#.to_vec(),
            ),
            ("PROPFIND", "/remote.php/dav/files/remy-id/") if basic == auth("app-password") => (
                207,
                "application/xml",
                br#"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>/remote.php/dav/files/remy-id/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>"#.to_vec(),
            ),
            _ => (401, "text/plain", b"".to_vec()),
        }
    })
    .await
}

#[tokio::test]
async fn a_nextcloud_account_password_is_refused_with_how_to_make_an_app_password() {
    let cloud = nextcloud().await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    let real = json!({ "base_url": cloud.base, "username": "remy", "app_password": "real-password" });
    let refused = json_of(put(&ada, "/api/v1/nextcloud/config", real).await, 400).await;
    assert_eq!(refused["details"]["field"], "app_password", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("Create new app password"), "{refused}");
    let revoked = cloud.seen().into_iter().find(|r| r.method == "DELETE").expect("the issued app password is revoked");
    assert!(revoked.header("authorization").starts_with("Basic "));
    assert_eq!(
        json_of(ada.get("/api/v1/nextcloud/config").await, 200).await["has_app_password"],
        false,
        "nothing saved"
    );

    let app = json!({ "base_url": cloud.base, "username": "remy", "app_password": "app-password" });
    let saved = json_of(put(&ada, "/api/v1/nextcloud/config", app).await, 200).await;
    assert_eq!(saved["has_app_password"], true, "{saved}");
    let root = cloud.seen().into_iter().filter(|r| r.method == "PROPFIND").map(|r| r.path).collect::<Vec<_>>();
    assert_eq!(root, ["/remote.php/dav/", "/remote.php/dav/files/remy-id/"], "the files of the user id, not the login");
}

/// One server, every integration's stand-in: what the contact page's panels and the settings
/// page show is exercised by the browser flows; here, that user B's requests never reach A's.
#[tokio::test]
async fn isolation_holds_across_every_integration_route() {
    let library = immich().await;
    let server: TestServer = instance().spawn();
    let ada = server.sign_up("ada").await;
    let (_, ann_uid) = contact(&ada, "Ann").await;
    json_of(
        put(&ada, "/api/v1/immich/config", json!({ "base_url": library.base, "api_key": "immich-key" })).await,
        200,
    )
    .await;
    json_of(ada.post(&format!("/api/v1/immich/contacts/{ann_uid}/link"), json!({ "person_id": "p-ann" })).await, 201)
        .await;
    let bob = server.sign_up("bob").await;
    let before = library.seen().len();
    for system in ["immich", "paperless", "seafile", "nextcloud"] {
        let config = json_of(bob.get(&format!("/api/v1/{system}/config")).await, 200).await;
        assert_eq!(config["status"], "not_configured", "{system}");
        assert_eq!(bob.post(&format!("/api/v1/{system}/test-connection"), json!({})).await.status(), 409, "{system}");
    }
    assert_eq!(
        bob.post(&format!("/api/v1/immich/contacts/{ann_uid}/link"), json!({ "person_id": "p-ann" })).await.status(),
        404
    );
    assert_eq!(
        bob.send(Method::DELETE, &format!("/api/v1/immich/contacts/{ann_uid}/link"), json!({})).await.status(),
        404
    );
    assert_eq!(bob.post("/api/v1/immich/sync", json!({})).await.status(), 409);
    assert_eq!(library.seen().len(), before, "none of Bob's requests reached Ada's library");
}

/// The scheduled job (`photo_library_sync`) syncs every user whose sync is on, as one recorded
/// run. In process, with the test builds' loopback path turned on for this state's
/// integrations; the settings are stored as the save stores them once checked.
#[tokio::test]
async fn the_scheduled_photo_library_sync_is_one_recorded_run_over_every_user() {
    use mycorrhizal::integrations::System;
    use mycorrhizal::integrations::config::{self, Opened};
    use mycorrhizal_engine::system::{JobResult, Trigger};

    let library = immich().await;
    let mut app = crate::sessions::in_process(&[]).await;
    app.state.integrations = app.state.integrations.clone().with_loopback();
    let cookie = app.signed_in().await;
    let (_, made, _) = app.call("POST", "/api/v1/contacts", Some(&cookie), json!({ "firstname": "Ann" })).await;
    let ann = made["contact"]["id"].as_u64().unwrap();
    let (_, me, _) = app.call("GET", "/api/v1/users/me", Some(&cookie), json!({})).await;
    let user = me["id"].as_u64().unwrap();

    let opened = || Opened {
        system: System::Immich,
        user,
        base_url: library.base.clone(),
        username: String::new(),
        secret: "immich-key".into(),
        dav_root: String::new(),
    };
    let skipped = mycorrhizal::jobs::run(&app.state, "photo_library_sync", Trigger::Manual).await.unwrap();
    assert_eq!(skipped.result, JobResult::Skipped, "nobody connected: {skipped:?}");

    config::store(&app.state.integrations, opened(), true).await.unwrap();
    let link =
        json!({ "contact_id": ann, "system": "immich", "external_id": "p-ann", "metadata": { "person_name": "Ann" } });
    assert_eq!(app.call("POST", "/api/v1/external-identities", Some(&cookie), link).await.0, 201);

    let run = mycorrhizal::jobs::run(&app.state, "photo_library_sync", Trigger::Manual).await.unwrap();
    assert_eq!((run.result, run.items_processed), (JobResult::Success, Some(1)), "{run:?}");
    let (_, activities, _) =
        app.call("GET", "/api/v1/external-activities?system=immich", Some(&cookie), json!({})).await;
    assert_eq!(activities["total"], 2, "{activities}");
    let (_, settings, _) = app.call("GET", "/api/v1/immich/config", Some(&cookie), json!({})).await;
    assert_eq!(settings["last_sync_status"], "success", "{settings}");

    // Turned off, the user is left out.
    config::store(&app.state.integrations, opened(), false).await.unwrap();
    let off = mycorrhizal::jobs::run(&app.state, "photo_library_sync", Trigger::Manual).await.unwrap();
    assert_eq!(off.result, JobResult::Skipped, "{off:?}");
}

/// A connection test that finds nothing at the address fails the connection (a wrong base path),
/// and a redirect to another origin is not followed (the key would travel with it): both said.
#[tokio::test]
async fn a_wrong_address_or_a_redirect_elsewhere_fails_the_connection_test_with_the_reason() {
    let nothing = StandIn::start(|_| (404, "text/plain", b"not here".to_vec())).await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    json_of(put(&ada, "/api/v1/immich/config", json!({ "base_url": nothing.base, "api_key": "k" })).await, 200).await;
    let tested = json_of(ada.post("/api/v1/immich/test-connection", json!({})).await, 200).await;
    assert_eq!(tested["ok"], false, "{tested}");
    assert_eq!(json_of(ada.get("/api/v1/immich/config").await, 200).await["status"], "failing");

    // Immich behind a proxy that sends http to https elsewhere: told, not followed.
    let elsewhere = StandIn::redirecting("https://photos.example.org/api/").await;
    json_of(put(&ada, "/api/v1/paperless/config", json!({ "base_url": elsewhere.base, "api_token": "t" })).await, 200)
        .await;
    let tested = json_of(ada.post("/api/v1/paperless/test-connection", json!({})).await, 200).await;
    assert_eq!(tested["ok"], false, "{tested}");
    assert!(tested["message"].as_str().unwrap().contains("redirects to https://photos.example.org"), "{tested}");
    assert!(elsewhere.seen().len() == 1, "one request, the redirect not followed");
}

/// A contact is one person of the photo library: two links made at once leave one.
#[tokio::test]
async fn two_links_of_one_contact_made_at_once_leave_one_person() {
    let library = immich().await;
    let server = instance().spawn();
    let ada = server.sign_up("ada").await;
    json_of(
        put(&ada, "/api/v1/immich/config", json!({ "base_url": library.base, "api_key": "immich-key" })).await,
        200,
    )
    .await;
    for round in 0..5 {
        let (_, uid) = contact(&ada, &format!("Ann {round}")).await;
        let path = format!("/api/v1/immich/contacts/{uid}/link");
        let (a, b) = tokio::join!(
            ada.post(&path, json!({ "person_id": "p-ann" })),
            ada.post(&path, json!({ "person_id": "p-bob" }))
        );
        let mut statuses = [a.status().as_u16(), b.status().as_u16()];
        statuses.sort_unstable();
        assert_eq!(statuses, [201, 409], "round {round}");
        let links =
            json_of(ada.get(&format!("/api/v1/external-identities?contact_id={uid}&system=immich")).await, 200).await;
        assert_eq!(links["total"], 1, "round {round}: {links}");
        assert_eq!(ada.send(Method::DELETE, &path, json!({})).await.status(), 200);
    }
}
