//! Webhooks and the durable outbox: in process with a fixed clock, stepping the delivery worker
//! (`deliver_once`) against a loopback receiver that records what it gets and answers as told
//! (200, 500, 429 with `Retry-After`, 410, or hangs); and the real binary killed with SIGKILL
//! while a delivery is in flight.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use hmac::{Hmac, Mac};
use jiff::{SignedDuration, Timestamp};
use mycorrhizal::notify::worker::deliver_once;
use mycorrhizal_engine::Clock;
use serde_json::{Value, json};
use sha2::Sha256;
use tower::ServiceExt;

use crate::helpers::{Instance, PASSWORD};
use crate::sessions::{InProcess, in_process};

/// How the receiver answers one request.
#[derive(Clone, Debug)]
pub enum Reply {
    Status(u16),
    RetryAfter(u16, &'static str),
    /// Never answers (until the client gives up).
    Hang,
}

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
    }
}

/// A loopback HTTP receiver: answers from `script` (200 once it is empty) and records every request.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    pub got: Arc<Mutex<Vec<Received>>>,
    pub script: Arc<Mutex<VecDeque<Reply>>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let script: Arc<Mutex<VecDeque<Reply>>> = Arc::default();
        let (g, s) = (got.clone(), script.clone());
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let (g, s) = (g.clone(), s.clone());
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
                g.lock()
                    .unwrap()
                    .push(Received { headers: parts.headers, body: String::from_utf8_lossy(&body).into() });
                let reply = s.lock().unwrap().pop_front().unwrap_or(Reply::Status(200));
                match reply {
                    Reply::Status(code) => axum::http::Response::builder().status(code).body(Body::empty()).unwrap(),
                    Reply::RetryAfter(code, after) => axum::http::Response::builder()
                        .status(code)
                        .header("retry-after", after)
                        .body(Body::empty())
                        .unwrap(),
                    Reply::Hang => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        axum::http::Response::new(Body::empty())
                    }
                }
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url, got, script }
    }

    pub fn then(&self, replies: &[Reply]) {
        self.script.lock().unwrap().extend(replies.iter().cloned());
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    pub fn events(&self) -> Vec<String> {
        self.received().iter().map(|r| r.json()["event"].as_str().unwrap_or("").to_string()).collect()
    }
}

/// The documented receiver recipe: parse `t` and `v1`, refuse a `t` more than five minutes from
/// our clock, compare HMAC-SHA256(secret, "<t>.<body>") in constant time.
pub fn verify(secret: &str, header: &str, body: &str, now: i64) -> bool {
    let mut t = None;
    let mut v1 = None;
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1 = hex::decode(value).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else { return false };
    if (now - t).abs() > 300 {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    mac.verify_slice(&v1).is_ok()
}

async fn call(app: &InProcess, method: &str, path: &str, cookie: &str, body: Value, request_id: &str) -> (u16, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("cookie", format!("auth_token={cookie}"))
        .header("x-request-id", request_id)
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = mycorrhizal::app(app.state.clone()).oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn sign_up(app: &InProcess, name: &str) -> String {
    let register = json!({ "username": name, "email": format!("{name}@example.org"), "password": PASSWORD });
    assert_eq!(app.call("POST", "/api/v1/register", None, register).await.0, 201);
    login(app, name).await
}

/// A fresh session (moving the clock by days ends the old one).
async fn login(app: &InProcess, name: &str) -> String {
    let (status, _, cookie) =
        app.call("POST", "/api/v1/login", None, json!({ "identifier": name, "password": PASSWORD })).await;
    assert_eq!(status, 200);
    cookie.unwrap()
}

async fn webhook(app: &InProcess, cookie: &str, url: &str, events: &[&str]) -> (u64, String) {
    let (status, body) =
        call(app, "POST", "/api/v1/webhooks", cookie, json!({ "url": url, "events": events }), "make-hook").await;
    assert_eq!(status, 201, "{body}");
    (body["id"].as_u64().unwrap(), body["secret"].as_str().unwrap().to_string())
}

/// The signed-in user's id.
async fn user_id(app: &InProcess, cookie: &str) -> u64 {
    let (status, me) = call(app, "GET", "/api/v1/users/me", cookie, json!({}), "me").await;
    assert_eq!(status, 200, "{me}");
    me["id"].as_u64().expect("my id")
}

async fn contact(app: &InProcess, cookie: &str, name: &str) -> u64 {
    let (status, body) =
        call(app, "POST", "/api/v1/contacts", cookie, json!({ "firstname": name }), "make-contact").await;
    assert_eq!(status, 201, "{body}");
    body["contact"]["id"].as_u64().unwrap()
}

async fn deliveries(app: &InProcess, cookie: &str, hook: u64) -> Vec<Value> {
    let (status, body) =
        call(app, "GET", &format!("/api/v1/webhooks/{hook}/deliveries"), cookie, json!({}), "log").await;
    assert_eq!(status, 200, "{body}");
    body["deliveries"].as_array().unwrap().clone()
}

fn advance(app: &InProcess, seconds: i64) {
    app.clock.set(app.clock.now().checked_add(SignedDuration::from_secs(seconds)).unwrap());
}

const CONTACT_EVENTS: [&str; 3] = ["contact.created", "contact.updated", "contact.deleted"];

#[tokio::test]
async fn deliveries_are_signed_in_order_and_carry_the_envelope_and_the_correlation_id() {
    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, secret) = webhook(&app, &ada, &receiver.url, &CONTACT_EVENTS).await;

    let first = contact(&app, &ada, "Alma").await;
    contact(&app, &ada, "Bruno").await;
    let (status, _) =
        call(&app, "PUT", &format!("/api/v1/contacts/{first}"), &ada, json!({ "firstname": "Alma B." }), "edit-alma")
            .await;
    assert_eq!(status, 200);
    let (status, _) = call(&app, "DELETE", &format!("/api/v1/contacts/{first}"), &ada, json!({}), "drop-alma").await;
    assert_eq!(status, 200);
    assert!(receiver.received().is_empty(), "nothing leaves before the worker runs");

    assert_eq!(deliver_once(&app.state.notify).await, 4);
    assert_eq!(receiver.events(), ["contact.created", "contact.created", "contact.updated", "contact.deleted"]);
    let got = receiver.received();
    let now = app.clock.now().as_second();
    for r in &got {
        let signature = r.header("x-mycorrhizal-signature");
        assert!(verify(&secret, &signature, &r.body, now), "the documented recipe verifies {signature}");
        assert!(!verify(&secret, &signature, &format!("{} ", r.body), now), "a changed body fails");
        assert!(!verify(&secret, &signature, &r.body.replacen("contact", "kontact", 1), now), "a changed body fails");
        assert!(!verify("whsec_wrong", &signature, &r.body, now), "another secret fails");
        assert!(!verify(&secret, &signature, &r.body, now + 301), "outside the five-minute window");
        let envelope = r.json();
        assert_eq!(envelope["id"].as_str().unwrap(), r.header("idempotency-key"));
        assert!(envelope["timestamp"].as_str().is_some());
    }
    let update = got[2].json();
    assert_eq!(update["data"]["id"], first);
    assert_eq!(update["data"]["kind"], "contact");
    assert_eq!(update["data"]["flat"]["firstname"], "Alma B.", "a copy of the entity: {update}");
    assert_eq!(got[2].header("x-correlation-id"), "edit-alma");
    assert_eq!(got[3].header("x-correlation-id"), "drop-alma");

    let log = deliveries(&app, &ada, hook).await;
    assert_eq!(log.len(), 4);
    assert!(log.iter().all(|d| d["status"] == "delivered" && d["attempts"] == 1 && d["will_retry"] == false));
    assert_eq!(deliver_once(&app.state.notify).await, 0, "delivered once");
}

#[tokio::test]
async fn a_receiver_down_for_a_while_gets_every_delivery_in_order_once_back() {
    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    for name in ["A", "B", "C"] {
        contact(&app, &ada, name).await;
    }
    receiver.then(&[Reply::Status(500), Reply::Status(503)]);
    assert_eq!(deliver_once(&app.state.notify).await, 1, "the lane stops at its first failure");
    advance(&app, 10);
    assert_eq!(deliver_once(&app.state.notify).await, 0, "not due before the 30 s backoff");
    advance(&app, 21);
    assert_eq!(deliver_once(&app.state.notify).await, 1, "second attempt fails too");
    advance(&app, 119);
    assert_eq!(deliver_once(&app.state.notify).await, 0);
    advance(&app, 2);
    assert_eq!(deliver_once(&app.state.notify).await, 3, "back: the held-back deliveries follow in order");
    let names: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| r.json()["data"]["flat"]["firstname"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(names, ["A", "A", "A", "B", "C"]);
    let keys: Vec<String> = receiver.received().iter().map(|r| r.header("idempotency-key")).collect();
    assert_eq!(keys[0], keys[2], "the same idempotency key on every attempt");
    let log = deliveries(&app, &ada, hook).await;
    assert_eq!(log.last().unwrap()["attempts"], 3);
    assert!(log.iter().all(|d| d["status"] == "delivered"));
}

#[tokio::test]
async fn retry_after_is_honoured_and_a_410_stops_retries_for_good() {
    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    contact(&app, &ada, "A").await;
    receiver.then(&[Reply::RetryAfter(429, "120")]);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let log = deliveries(&app, &ada, hook).await;
    let due: Timestamp = log[0]["next_attempt_at"].as_str().unwrap().parse().unwrap();
    assert_eq!(due.duration_since(app.clock.now()).as_secs_f64().round(), 120.0, "Retry-After, not the 30 s backoff");
    assert_eq!(log[0]["last_status"], 429);
    advance(&app, 60);
    assert_eq!(deliver_once(&app.state.notify).await, 0, "still waiting as told");
    advance(&app, 61);
    receiver.then(&[Reply::Status(410)]);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let log = deliveries(&app, &ada, hook).await;
    assert_eq!(log[0]["status"], "failed");
    assert_eq!(log[0]["will_retry"], false);
    assert!(log[0]["last_error"].as_str().unwrap().contains("will not retry"), "{}", log[0]);
    advance(&app, 86_400);
    assert_eq!(deliver_once(&app.state.notify).await, 0, "a 410 is never retried");

    // The lane goes on with the next message.
    let ada = login(&app, "ada").await;
    contact(&app, &ada, "B").await;
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    assert_eq!(receiver.received().len(), 3);
}

#[tokio::test]
async fn a_hanging_receiver_times_out_and_exhausted_retries_raise_integration_failed() {
    let app = in_process(&[("WEBHOOK_TIMEOUT_SECONDS", "1")]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    contact(&app, &ada, "A").await;
    receiver.then(&[Reply::Hang]);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let log = deliveries(&app, &ada, hook).await;
    assert!(log[0]["last_error"].as_str().unwrap().contains("in time"), "{}", log[0]);
    assert_eq!(log[0]["status"], "pending");
    for _ in 0..7 {
        receiver.then(&[Reply::Status(502)]);
        advance(&app, 6 * 3600 + 1);
        assert_eq!(deliver_once(&app.state.notify).await, 1);
    }
    let ada = login(&app, "ada").await;
    let log = deliveries(&app, &ada, hook).await;
    assert_eq!((log[0]["status"].as_str(), log[0]["attempts"].as_u64()), (Some("failed"), Some(8)));
    assert!(log[0]["last_error"].as_str().unwrap().contains("will not retry"));
    let events = app.state.engine.system_events(50, |e| e.event_type == "integration_failed").unwrap();
    assert_eq!(events.len(), 1, "one integration_failed for the exhausted delivery");
    assert_eq!(events[0].component, "webhook");
    assert_eq!(events[0].correlation_id.as_deref(), Some("make-contact"));
}

#[tokio::test]
async fn another_users_webhooks_never_get_your_events_nor_can_they_be_reached() {
    let app = in_process(&[]).await;
    let (ours, theirs) = (Receiver::start().await, Receiver::start().await);
    let ada = sign_up(&app, "ada").await;
    let bob = sign_up(&app, "bob").await;
    let (ada_hook, _) = webhook(&app, &ada, &ours.url, &CONTACT_EVENTS).await;
    let (bob_hook, _) = webhook(&app, &bob, &theirs.url, &CONTACT_EVENTS).await;
    contact(&app, &ada, "Alma").await;
    deliver_once(&app.state.notify).await;
    assert_eq!(ours.received().len(), 1);
    assert!(theirs.received().is_empty(), "bob's webhook never hears of ada's contact");
    let delivery = deliveries(&app, &ada, ada_hook).await[0]["id"].as_u64().unwrap();

    let (status, body) = call(&app, "GET", "/api/v1/webhooks", &bob, json!({}), "x").await;
    assert_eq!(status, 200);
    assert_eq!(body["webhooks"].as_array().unwrap().len(), 1);
    assert_eq!(body["webhooks"][0]["id"], bob_hook);
    let paths = [
        ("GET", format!("/api/v1/webhooks/{ada_hook}")),
        ("PATCH", format!("/api/v1/webhooks/{ada_hook}")),
        ("POST", format!("/api/v1/webhooks/{ada_hook}/rotate-secret")),
        ("POST", format!("/api/v1/webhooks/{ada_hook}/test")),
        ("GET", format!("/api/v1/webhooks/{ada_hook}/deliveries")),
        ("POST", format!("/api/v1/webhooks/{ada_hook}/deliveries/{delivery}/redeliver")),
        ("POST", format!("/api/v1/webhooks/{bob_hook}/deliveries/{delivery}/redeliver")),
        ("DELETE", format!("/api/v1/webhooks/{ada_hook}")),
    ];
    for (method, path) in paths {
        let (status, _) = call(&app, method, &path, &bob, json!({ "active": false }), "x").await;
        assert_eq!(status, 404, "{method} {path}");
    }
    assert_eq!(call(&app, "GET", &format!("/api/v1/webhooks/{ada_hook}"), &ada, json!({}), "x").await.0, 200);
    assert!(theirs.received().is_empty());
}

#[tokio::test]
async fn a_test_event_a_redelivery_and_a_rotated_secret() {
    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, old) = webhook(&app, &ada, &receiver.url, &["note.created"]).await;
    let (status, queued) = call(&app, "POST", &format!("/api/v1/webhooks/{hook}/test"), &ada, json!({}), "x").await;
    assert_eq!((status, queued["status"].as_str()), (202, Some("pending")));
    let (status, rotated) =
        call(&app, "POST", &format!("/api/v1/webhooks/{hook}/rotate-secret"), &ada, json!({}), "x").await;
    assert_eq!(status, 200);
    let new = rotated["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    let (_, listed) = call(&app, "GET", "/api/v1/webhooks", &ada, json!({}), "x").await;
    assert!(!listed.to_string().contains(&new), "the secret is shown only once");

    deliver_once(&app.state.notify).await;
    let now = app.clock.now().as_second();
    let first = receiver.received()[0].clone();
    assert_eq!(first.json()["event"], "test");
    assert!(verify(&new, &first.header("x-mycorrhizal-signature"), &first.body, now), "signed with the new secret");
    assert!(!verify(&old, &first.header("x-mycorrhizal-signature"), &first.body, now), "not the old one");

    let id = queued["id"].as_u64().unwrap();
    let path = format!("/api/v1/webhooks/{hook}/deliveries/{id}/redeliver");
    let (status, again) = call(&app, "POST", &path, &ada, json!({}), "x").await;
    assert_eq!(status, 202);
    assert_eq!(again["event_id"], queued["event_id"], "a redelivery keeps the event id");
    deliver_once(&app.state.notify).await;
    assert_eq!(receiver.received().len(), 2);
    assert_eq!(receiver.received()[1].body, first.body, "the same envelope");
}

#[tokio::test]
async fn the_guard_refuses_private_and_loopback_destinations_when_blocking() {
    let app = in_process(&[("WEBHOOK_BLOCK_PRIVATE_URLS", "true")]).await;
    let ada = sign_up(&app, "ada").await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://[::1]:9/hook",
        "http://[::ffff:10.0.0.1]/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://localhost:9/hook",
    ] {
        let (status, body) =
            call(&app, "POST", "/api/v1/webhooks", &ada, json!({ "url": url, "events": ["contact.created"] }), "x")
                .await;
        assert_eq!((status, body["details"]["field"].as_str()), (400, Some("url")), "{url}: {body}");
    }
    let open = in_process(&[]).await;
    let ada = sign_up(&open, "ada").await;
    webhook(&open, &ada, "http://127.0.0.1:9/hook", &["contact.created"]).await;
}

#[tokio::test]
async fn a_kill_9_between_the_commit_and_the_delivery_loses_nothing() {
    let receiver = Receiver::start().await;
    receiver.then(&[Reply::Hang]);
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let made: Value = ada
        .post("/api/v1/webhooks", json!({ "url": receiver.url, "events": ["contact.created"] }))
        .await
        .json()
        .await
        .unwrap();
    let secret = made["secret"].as_str().unwrap().to_string();
    let created = ada.post("/api/v1/contacts", json!({ "firstname": "Ines" })).await;
    assert_eq!(created.status(), 201);
    // The worker has the delivery in flight (the receiver holds it): kill -9 now.
    for _ in 0..500 {
        if !receiver.received().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(receiver.received().len(), 1, "the delivery was in flight");
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let _again = instance.spawn();
    for _ in 0..500 {
        if receiver.received().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = receiver.received();
    assert_eq!(got.len(), 2, "delivered after the restart");
    assert_eq!(got[1].body, got[0].body, "the same envelope");
    assert_eq!(got[1].header("idempotency-key"), got[0].header("idempotency-key"));
    assert_eq!(got[1].json()["data"]["flat"]["firstname"], "Ines");
    let now = Timestamp::now().as_second();
    assert!(verify(&secret, &got[1].header("x-mycorrhizal-signature"), &got[1].body, now));
}

#[tokio::test]
async fn finished_deliveries_are_purged_after_the_retention_window_and_pending_ones_kept() {
    let app = in_process(&[("WEBHOOK_DELIVERY_RETENTION_DAYS", "30")]).await;
    let (up, down) = (Receiver::start().await, Receiver::start().await);
    let ada = sign_up(&app, "ada").await;
    let (done_hook, _) = webhook(&app, &ada, &up.url, &["contact.created"]).await;
    let (stuck_hook, _) = webhook(&app, &ada, &down.url, &["contact.created"]).await;
    down.then(&[Reply::Status(500)]);
    contact(&app, &ada, "A").await;
    assert_eq!(deliver_once(&app.state.notify).await, 2);
    advance(&app, 31 * 86_400);
    let ada = login(&app, "ada").await;
    let (status, body) = call(&app, "POST", "/api/v1/admin/trigger-purge", &ada, json!({}), "purge").await;
    assert_eq!(status, 200, "{body}");
    assert!(body["message"].as_str().unwrap().starts_with("Purge completed"), "{body}");
    assert!(deliveries(&app, &ada, done_hook).await.is_empty(), "a delivered row past retention is gone");
    let stuck = deliveries(&app, &ada, stuck_hook).await;
    assert_eq!(stuck.len(), 1, "a pending delivery is never purged");
    assert_eq!(stuck[0]["status"], "pending");

    // The event's envelope is stored once for both deliveries: purging the delivered one kept it
    // for the pending one, which still goes out whole; it goes with its last delivery.
    let envelopes = |app: &InProcess| {
        app.state.engine.global().expect("a read").list::<mycorrhizal::outbox::Envelope>().expect("envelopes")
    };
    assert_eq!(envelopes(&app).len(), 1, "one envelope for the event's two deliveries");
    assert_eq!(deliver_once(&app.state.notify).await, 1, "the pending one is delivered");
    let got = down.received();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].body, got[0].body, "with the whole envelope");
    assert_eq!(got[1].json()["data"]["kind"], "contact");
    advance(&app, 31 * 86_400);
    let ada = login(&app, "ada").await;
    let (status, body) = call(&app, "POST", "/api/v1/admin/trigger-purge", &ada, json!({}), "purge").await;
    assert_eq!(status, 200, "{body}");
    assert!(deliveries(&app, &ada, stuck_hook).await.is_empty());
    assert!(envelopes(&app).is_empty(), "the envelope went with its last delivery");
}

#[tokio::test]
async fn a_delivery_queued_by_an_earlier_version_is_still_made_whole_and_in_order() {
    use mycorrhizal::notify::webhooks::Webhook;
    use mycorrhizal::outbox::{self, Message, Pending, Status, Target};

    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, secret) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    let user = app.state.engine.global().expect("a read").get::<Webhook>(hook).expect("the webhook").user_id;
    // As an earlier version queued it: the envelope inside the row, the pending side keyed by id.
    let body =
        r#"{"data":{"legacy":true},"event":"contact.created","id":"k-legacy","timestamp":"2026-01-01T00:00:00Z"}"#;
    let now = app.clock.now();
    let legacy = Message {
        user_id: user,
        key: "k-legacy".into(),
        target: Target::Webhook { webhook_id: hook, event: "contact.created".into(), body: body.into() },
        correlation_id: None,
        status: Status::Pending,
        attempts: 0,
        next_attempt_at: now,
        last_attempt_at: None,
        last_status: None,
        last_error: None,
        created_at: now,
        finished_at: None,
    };
    app.state
        .engine
        .write_async(move |tx| {
            let id = tx.global().insert(&legacy)?;
            tx.global().insert_at(id, &Pending { lane: format!("webhook:{hook}"), due: now })
        })
        .await
        .expect("the earlier version's rows");
    // A contact queued after it, by this version, goes after it.
    contact(&app, &ada, "Later").await;

    assert_eq!(outbox::adopt_pending(&app.state.engine).await.expect("adopted"), 1);
    assert!(app.state.engine.global().expect("a read").list::<Pending>().expect("legacy").is_empty());
    assert_eq!(outbox::adopt_pending(&app.state.engine).await.expect("nothing left"), 0);
    assert_eq!(deliver_once(&app.state.notify).await, 2);
    let got = receiver.received();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].body, body, "the row's own envelope");
    assert_eq!(got[0].header("idempotency-key"), "k-legacy");
    assert!(verify(&secret, &got[0].header("x-mycorrhizal-signature"), &got[0].body, now.as_second()));
    assert_eq!(got[1].json()["data"]["flat"]["firstname"], "Later", "then the newer one: {}", got[1].body);
    let log = deliveries(&app, &ada, hook).await;
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|d| d["status"] == "delivered" && d["event"] == "contact.created"), "{log:?}");
    assert_eq!(deliver_once(&app.state.notify).await, 0, "delivered once");
}

/// The outbox rows of `user`'s webhook deliveries: (message id, idempotency key, webhook id).
fn delivery_rows(app: &InProcess, user: u64) -> Vec<(u64, String, u64)> {
    use mycorrhizal::outbox::Message;
    let g = app.state.engine.global().expect("a read");
    g.list::<Message>()
        .expect("outbox")
        .into_iter()
        .filter(|(_, m)| m.user_id == user)
        .filter_map(|(id, m)| m.target.webhook().map(|(hook, _)| (id, m.key.clone(), hook)))
        .collect()
}

fn recorded_events(app: &InProcess) -> Vec<(String, mycorrhizal::outbox::Event)> {
    let g = app.state.engine.global().expect("a read");
    mycorrhizal::outbox::pending_events(&g, usize::MAX).expect("events")
}

#[tokio::test]
async fn a_change_records_one_event_which_the_log_shows_as_deliveries_once_expanded() {
    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (first, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    let (second, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    // Not subscribed to the event: not named by it.
    webhook(&app, &ada, &receiver.url, &["contact.deleted"]).await;
    let ada_id = user_id(&app, &ada).await;
    contact(&app, &ada, "Olga").await;

    // In the change's transaction: one event naming both subscribed webhooks, no delivery row yet.
    let events = recorded_events(&app);
    assert_eq!(events.len(), 1, "{events:?}");
    let (_, event) = &events[0];
    assert_eq!((event.user_id, event.event.as_str()), (ada_id, "contact.created"));
    assert_eq!(event.webhooks, [first, second]);
    assert_eq!(event.correlation_id.as_deref(), Some("make-contact"));
    assert!(delivery_rows(&app, ada_id).is_empty(), "nothing expanded yet");
    assert!(receiver.received().is_empty());

    // The log is truthful before the worker ran: reading it expands the event, and both webhooks'
    // logs show their pending delivery with the event's key.
    let log = deliveries(&app, &ada, first).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!((log[0]["status"].as_str(), log[0]["event_id"].as_str()), (Some("pending"), Some(event.key.as_str())));
    assert_eq!(log[0]["correlation_id"], "make-contact");
    assert!(recorded_events(&app).is_empty(), "expanded and removed in one write");
    let rows = delivery_rows(&app, ada_id);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|(_, key, _)| *key == event.key));
    assert_eq!(rows.iter().map(|(_, _, hook)| *hook).collect::<Vec<_>>(), [first, second]);
    assert_eq!(deliveries(&app, &ada, second).await.len(), 1);

    assert_eq!(deliver_once(&app.state.notify).await, 2);
    let got = receiver.received();
    assert_eq!(got.len(), 2);
    for r in &got {
        assert_eq!(r.json()["id"].as_str(), Some(event.key.as_str()), "the event's key is the envelope's id");
        assert_eq!(r.header("idempotency-key"), event.key);
        assert_eq!(r.json()["data"]["flat"]["firstname"], "Olga");
        assert_eq!(r.json()["data"]["kind"], "contact");
    }
    let log = deliveries(&app, &ada, first).await;
    assert_eq!(log[0]["status"], "delivered");
}

#[tokio::test]
async fn an_expansion_cut_short_is_made_again_whole_with_the_same_key_and_never_twice() {
    use mycorrhizal::outbox;

    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (hook, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    contact(&app, &ada, "Pia").await;
    let events = recorded_events(&app);
    assert_eq!(events.len(), 1);
    let key = events[0].1.key.clone();
    let user = events[0].1.user_id;
    let stale: Vec<(String, outbox::Event, String)> =
        events.iter().map(|(k, e)| (k.clone(), e.clone(), "{}".to_string())).collect();

    // An expansion whose write never commits (a crash before the commit): nothing of it stays.
    let cut = stale.clone();
    let failed = app
        .state
        .engine
        .write_async(move |tx| {
            assert_eq!(outbox::expand_in(tx, &cut)?, 1);
            Err::<(), _>(mycorrhizal_engine::Error::CommitFailed("cut short".into()))
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(recorded_events(&app).len(), 1, "the event is still recorded");
    assert!(delivery_rows(&app, user).is_empty(), "and no delivery of it exists");

    // Made again, whole, with the key fixed when the change happened.
    assert_eq!(mycorrhizal::notify::webhooks::expand_all(&app.state.engine).await.expect("expanded"), 1);
    let rows = delivery_rows(&app, user);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].1.as_str(), rows[0].2), (key.as_str(), hook));
    // A second expander that read the event before it went finds it gone: no duplicate.
    let again = stale.clone();
    let twice = app.state.engine.write_async(move |tx| outbox::expand_in(tx, &again)).await.expect("a write");
    assert_eq!(twice, 0);
    assert_eq!(delivery_rows(&app, user).len(), 1);

    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("idempotency-key"), key);
    assert_eq!(
        got[0].json()["data"]["flat"]["firstname"],
        "Pia",
        "the envelope built from the event, not the stale copy"
    );
}

#[tokio::test]
async fn a_transactions_events_of_one_user_share_a_row_and_keep_their_order_each_with_its_own_key() {
    use mycorrhizal::notify::webhooks;
    use mycorrhizal::outbox;

    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    webhook(&app, &ada, &receiver.url, &["reminder.triggered"]).await;
    let ada_id = user_id(&app, &ada).await;
    // More than a row holds, in one transaction.
    let n = outbox::RUN_MAX + 6;
    app.state
        .engine
        .write_async(move |tx| {
            for i in 0..n {
                webhooks::publish(tx, ada_id, "reminder.triggered", &|| json!({ "n": i }))?;
            }
            Ok(())
        })
        .await
        .expect("published");

    let events = recorded_events(&app);
    assert_eq!(events.len(), n);
    let rows: std::collections::BTreeSet<&str> = events.iter().map(|(key, _)| key.as_str()).collect();
    assert_eq!(rows.len(), 2, "a full row, then the rest: {rows:?}");
    assert!(rows.iter().all(|key| key.ends_with(outbox::RUN_SUFFIX)), "{rows:?}");
    let keys: std::collections::HashSet<&str> = events.iter().map(|(_, e)| e.key.as_str()).collect();
    assert_eq!(keys.len(), n, "every event its own idempotency key");
    for key in &keys {
        let uuid = uuid::Uuid::parse_str(key).expect("a UUID");
        assert_eq!(uuid.get_version_num(), 4, "{key}");
    }

    for _ in 0..n {
        if receiver.received().len() >= n || deliver_once(&app.state.notify).await == 0 {
            break;
        }
    }
    let got = receiver.received();
    let order: Vec<Value> = got.iter().map(|r| r.json()["data"]["n"].clone()).collect();
    assert_eq!(order, (0..n).map(|i| json!(i)).collect::<Vec<_>>(), "delivered once each, in order");
    let ids: Vec<String> = got.iter().map(|r| r.json()["id"].as_str().unwrap_or_default().to_string()).collect();
    let expected: Vec<String> = events.iter().map(|(_, e)| e.key.clone()).collect();
    assert_eq!(ids, expected, "each envelope carries its event's key");
}

#[tokio::test]
async fn a_webhook_created_in_the_same_group_commit_as_changes_gets_the_events_of_the_changes_after_it() {
    use mycorrhizal::crm::contact::ops::ContactInput;
    use mycorrhizal::notify::{webhook_ops, webhooks::WebhookInput};

    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let (first, _) = webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    let ada_id = user_id(&app, &ada).await;
    let engine = app.state.engine.clone();
    // Hold the writer, so the three writes below are taken into one transaction, in order. The
    // writer must have taken the holding change before they are queued: a write queued while
    // it is still queued joins its batch instead.
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Arc::new(Mutex::new(released));
    let holder = engine.clone();
    let held = tokio::spawn(async move {
        holder
            .write_async(move |_tx| {
                let _ = released.lock().expect("lock").recv();
                Ok(())
            })
            .await
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !(engine.writes_in_flight() == 1 && engine.queued_writes() == 0) {
        assert!(std::time::Instant::now() < deadline, "the writer never took the holding change");
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(1));
    }
    let queued = |n: usize| {
        let engine = engine.clone();
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while engine.queued_writes() < n && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    };
    let user = engine.user(mycorrhizal_engine::UserId(ada_id));
    let input = |name: &str| serde_json::from_value::<ContactInput>(json!({ "firstname": name })).expect("input");
    let hook = WebhookInput {
        url: Some(receiver.url.clone()),
        events: Some(vec!["contact.created".into()]),
        description: None,
        active: None,
    };
    let (ann, second, bea, _) = tokio::join!(
        mycorrhizal::crm::contact::ops::create(&user, input("Ann")),
        async {
            queued(1).await;
            webhook_ops::create(&app.state.notify, ada_id, hook).await
        },
        async {
            queued(2).await;
            mycorrhizal::crm::contact::ops::create(&user, input("Bea")).await
        },
        async {
            queued(3).await;
            release.send(()).expect("release");
        },
    );
    held.await.expect("the holding change's task").expect("the holding change");
    let (ann, second, bea) = (ann.expect("ann").id, second.expect("webhook").webhook.id, bea.expect("bea").id);

    let events = recorded_events(&app);
    let named: Vec<(u64, Vec<u64>)> =
        events.iter().map(|(_, e)| (e.record.as_ref().map_or(0, |r| r.1), e.webhooks.clone())).collect();
    assert_eq!(named, [(ann, vec![first]), (bea, vec![first, second])], "the new webhook is seen by the next change");
    assert_eq!(events[0].0, events[1].0, "one transaction, one row");
}

#[tokio::test]
async fn events_recorded_by_earlier_builds_a_row_each_and_with_json_text_are_still_delivered_whole() {
    use mycorrhizal::outbox;

    let app = in_process(&[]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    webhook(&app, &ada, &receiver.url, &["contact.created"]).await;
    contact(&app, &ada, "Runa").await;
    contact(&app, &ada, "Sela").await;
    let events = recorded_events(&app);
    assert_eq!(events.len(), 2);
    // This build records the row's body in the engine's row encoding...
    for (_, event) in &events {
        assert_eq!(event.data.first(), Some(&mycorrhizal_engine::codec::FORMAT_V1), "{:?}", event.data.get(..8));
    }
    // ...earlier ones wrote each event as a row of its own, and before that with the body as JSON
    // text: rewrite the two events so, the first with JSON text.
    let mut old: Vec<outbox::Event> = events.iter().map(|(_, e)| e.clone()).collect();
    let json = mycorrhizal::crm::kinds::body_json("contact", &old[0].data).expect("the stored body reads as JSON");
    old[0].data = serde_json::to_vec(&json).expect("json text");
    let rows: Vec<String> = events.iter().map(|(key, _)| key.clone()).collect();
    app.state
        .engine
        .write_async(move |tx| {
            for key in &rows {
                tx.global().map_remove(outbox::EVENTS_TABLE, key)?;
            }
            for event in &old {
                let id = tx.next_counter("id:outbox_events")?;
                let row = mycorrhizal_engine::codec::encode(event);
                tx.global().map_put(outbox::EVENTS_TABLE, &format!("{id:020}"), &row)?;
            }
            Ok(())
        })
        .await
        .expect("rewritten");
    assert_eq!(recorded_events(&app).len(), 2, "two rows of one event each");

    assert_eq!(deliver_once(&app.state.notify).await, 2);
    let got = receiver.received();
    let names: Vec<_> = got.iter().map(|r| r.json()["data"]["flat"]["firstname"].clone()).collect();
    assert_eq!(names, [json!("Runa"), json!("Sela")], "both forms give the entity");
    for r in &got {
        assert_eq!(r.json()["data"]["kind"], "contact");
        assert!(r.json()["data"]["card"].is_object(), "the card's JSON member as an object: {}", r.json());
    }
}
