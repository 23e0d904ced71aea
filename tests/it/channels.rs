//! Notification channels: in process with a fixed clock, stepping the outbox worker
//! (`deliver_once`) against loopback receivers that record what they get (method, path, headers,
//! body) and answer as told. Each channel's request shape, tokens sealed and never shown, retry
//! and permanent failure, the private-address guard, Web Push decrypted here with the browser's
//! private key (RFC 8291) and its VAPID JWT verified, the events, and isolation between users.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use aes_gcm::aead::{Aead, KeyInit};
use axum::body::Body;
use axum::http::Request;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jiff::SignedDuration;
use mycorrhizal::notify::channels::{self, ChannelConfig, Notification, Senders, TopicChannel};
use mycorrhizal::notify::worker::deliver_once;
use mycorrhizal_engine::Clock;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::PASSWORD;
use crate::sessions::{InProcess, in_process};

/// One request a receiver got.
#[derive(Clone, Debug)]
struct Got {
    method: String,
    path: String,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Got {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
    fn header(&self, name: &str) -> String {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
    }
}

/// A loopback receiver: answers the scripted statuses (then 200) and records every request.
#[derive(Clone)]
struct Receiver {
    base: String,
    got: Arc<Mutex<Vec<Got>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let got: Arc<Mutex<Vec<Got>>> = Arc::default();
        let script: Arc<Mutex<VecDeque<u16>>> = Arc::default();
        let (g, s) = (got.clone(), script.clone());
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let (g, s) = (g.clone(), s.clone());
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, usize::MAX).await.unwrap().to_vec();
                g.lock().unwrap().push(Got {
                    method: parts.method.to_string(),
                    path: parts.uri.path().to_string(),
                    headers: parts.headers,
                    body,
                });
                let status = s.lock().unwrap().pop_front().unwrap_or(200);
                axum::http::Response::builder().status(status).body(Body::from("{}")).unwrap()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { base, got, script }
    }

    fn then(&self, statuses: &[u16]) {
        self.script.lock().unwrap().extend(statuses.iter().copied());
    }

    fn received(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

pub async fn sign_up(app: &InProcess, name: &str) -> String {
    let register = json!({ "username": name, "email": format!("{name}@example.org"), "password": PASSWORD });
    assert_eq!(app.call("POST", "/api/v1/register", None, register).await.0, 201);
    sign_in(app, name).await
}

pub async fn sign_in(app: &InProcess, name: &str) -> String {
    let (status, _, cookie) =
        app.call("POST", "/api/v1/login", None, json!({ "identifier": name, "password": PASSWORD })).await;
    assert_eq!(status, 200);
    cookie.unwrap()
}

fn advance(app: &InProcess, seconds: i64) {
    app.clock.set(app.clock.now().checked_add(SignedDuration::from_secs(seconds)).unwrap());
}

/// `(event_type, channel)` of the notification events so far, oldest first.
fn notification_events(app: &InProcess) -> Vec<(String, String)> {
    let mut events = app
        .state
        .engine
        .system_events(100, |e| e.event_type.starts_with("notification_"))
        .unwrap()
        .into_iter()
        .map(|e| {
            let detail: Value = serde_json::from_str(e.detail.as_deref().unwrap_or("{}")).unwrap();
            assert_eq!(detail.as_object().unwrap().len(), 1, "the channel name is the only detail: {detail}");
            (e.event_type, detail["channel"].as_str().unwrap_or("").to_string())
        })
        .collect::<Vec<_>>();
    events.sort();
    events
}

fn raw_config(app: &InProcess, user: u64) -> Vec<u8> {
    let config: ChannelConfig = app.state.engine.global().unwrap().get(user).unwrap();
    mycorrhizal_engine::codec::encode(&config)
}

async fn user_id(app: &InProcess, cookie: &str) -> u64 {
    let (status, me, _) = app.call("GET", "/api/v1/users/me", Some(cookie), json!({})).await;
    assert_eq!(status, 200, "{me}");
    me["id"].as_u64().expect("an id")
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn topic_and_gotify_deliver_their_shapes_with_tokens_sealed_and_never_shown() {
    let app = in_process(&[]).await;
    let ntfy = Receiver::start().await;
    let gotify = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let ada_id = user_id(&app, &ada).await;

    let (status, body, _) = app
        .call(
            "PUT",
            "/api/v1/notifications/channels/ntfy",
            Some(&ada),
            json!({ "url": format!("{}/", ntfy.base), "topic": "ada_reminders", "token": "tk_ntfysecret123" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["ntfy"]["token_set"], true);
    let (status, body, _) = app
        .call(
            "PUT",
            "/api/v1/notifications/channels/gotify",
            Some(&ada),
            json!({ "url": gotify.base, "token": "AgotifyAppToken9" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let (status, listed, _) = app.call("GET", "/api/v1/notifications/channels", Some(&ada), json!({})).await;
    assert_eq!(status, 200);
    let text = listed.to_string();
    assert!(!text.contains("tk_ntfysecret123") && !text.contains("AgotifyAppToken9"), "{text}");
    assert_eq!(listed["ntfy"]["url"], ntfy.base, "stored without the trailing slash");
    assert_eq!(listed["ntfy"]["topic"], "ada_reminders");
    assert_eq!(listed["gotify"]["token_set"], true);
    let raw = raw_config(&app, ada_id);
    assert!(!contains(&raw, b"tk_ntfysecret123") && !contains(&raw, b"AgotifyAppToken9"), "tokens are sealed at rest");

    for channel in ["ntfy", "gotify"] {
        let (status, body, _) =
            app.call("POST", &format!("/api/v1/notifications/channels/{channel}/test"), Some(&ada), json!({})).await;
        assert_eq!(status, 202, "{body}");
        assert_eq!(body["queued"], json!([channel]));
    }
    assert_eq!(deliver_once(&app.state.notify).await, 2);

    let got = ntfy.received();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].method.as_str(), got[0].path.as_str()), ("POST", "/"), "ntfy's JSON publish goes to the root");
    assert_eq!(got[0].header("authorization"), "Bearer tk_ntfysecret123");
    assert_eq!(got[0].header("content-type"), "application/json");
    assert!(got[0].header("x-correlation-id").is_empty(), "push channels carry no correlation header");
    let publish = got[0].json();
    assert_eq!(publish["topic"], "ada_reminders");
    assert_eq!(publish["title"], "Mycorrhizal: test notification");
    assert!(publish["message"].as_str().unwrap().contains("ntfy"));

    let got = gotify.received();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].method.as_str(), got[0].path.as_str()), ("POST", "/message"));
    assert_eq!(got[0].header("x-gotify-key"), "AgotifyAppToken9");
    let message = got[0].json();
    assert_eq!(message["title"], "Mycorrhizal: test notification");
    assert_eq!(message["priority"], 5);
    assert!(message["message"].as_str().unwrap().contains("gotify"));

    assert_eq!(
        notification_events(&app),
        [("notification_sent".into(), "gotify".into()), ("notification_sent".into(), "ntfy".into())]
    );

    // Saving again without a token keeps it (same server); an empty token removes it.
    let put = |token: Option<&str>| {
        let mut body = json!({ "url": ntfy.base, "topic": "ada_reminders" });
        if let Some(t) = token {
            body["token"] = json!(t);
        }
        body
    };
    let (_, body, _) = app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(&ada), put(None)).await;
    assert_eq!(body["ntfy"]["token_set"], true);
    let (_, body, _) = app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(&ada), put(Some(""))).await;
    assert_eq!(body["ntfy"]["token_set"], false);
}

#[tokio::test]
async fn invalid_channel_settings_are_refused_naming_the_field() {
    let app = in_process(&[]).await;
    let ada = sign_up(&app, "ada").await;
    let cases = [
        ("ntfy", json!({ "url": "ftp://ntfy.example.org", "topic": "t" }), "url"),
        ("ntfy", json!({ "url": "https://ntfy.example.org", "topic": "has space" }), "topic"),
        ("ntfy", json!({ "url": "https://ntfy.example.org", "topic": "t", "token": "with space" }), "token"),
        ("gotify", json!({ "url": "https://gotify.example.org" }), "token"),
        ("gotify", json!({ "url": "not a url", "token": "x" }), "url"),
    ];
    for (channel, body, field) in cases {
        let (status, answer, _) =
            app.call("PUT", &format!("/api/v1/notifications/channels/{channel}"), Some(&ada), body.clone()).await;
        assert_eq!(status, 400, "{body} -> {answer}");
        assert_eq!(answer["details"]["field"], field, "{body} -> {answer}");
    }
    // Email cannot be turned on without a mail provider; a test of an unset channel is 404.
    let (status, _, _) =
        app.call("PUT", "/api/v1/notifications/channels/email", Some(&ada), json!({ "enabled": true })).await;
    assert_eq!(status, 409);
    for channel in ["email", "ntfy", "gotify", "webpush"] {
        let (status, _, _) =
            app.call("POST", &format!("/api/v1/notifications/channels/{channel}/test"), Some(&ada), json!({})).await;
        assert_eq!(status, 404, "{channel}");
    }
}

#[tokio::test]
async fn a_500_is_retried_a_410_is_permanent_and_a_removed_channel_is_not_retried() {
    let app = in_process(&[]).await;
    let ntfy = Receiver::start().await;
    let gotify = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(&ada), json!({ "url": ntfy.base, "topic": "t" })).await;
    app.call("PUT", "/api/v1/notifications/channels/gotify", Some(&ada), json!({ "url": gotify.base, "token": "k" }))
        .await;

    ntfy.then(&[500]);
    gotify.then(&[410]);
    app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&ada), json!({})).await;
    app.call("POST", "/api/v1/notifications/channels/gotify/test", Some(&ada), json!({})).await;
    assert_eq!(deliver_once(&app.state.notify).await, 2);
    assert_eq!(notification_events(&app), [("notification_failed".into(), "gotify".into())], "the 410 fails at once");

    // Nothing is due before the first backoff (30 s); then the 500 is retried and delivered.
    assert_eq!(deliver_once(&app.state.notify).await, 0);
    advance(&app, 31);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    assert_eq!(ntfy.received().len(), 2);
    assert_eq!(gotify.received().len(), 1, "a 410 is not retried");
    assert_eq!(
        notification_events(&app),
        [("notification_failed".into(), "gotify".into()), ("notification_sent".into(), "ntfy".into())]
    );

    // A message queued for a channel removed before delivery fails without a request.
    app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&ada), json!({})).await;
    let (status, _, _) = app.call("DELETE", "/api/v1/notifications/channels/ntfy", Some(&ada), json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    assert_eq!(ntfy.received().len(), 2);
    let failed = app.state.engine.system_events(10, |e| e.event_type == "notification_failed").unwrap();
    assert!(failed.iter().any(|e| e.error.as_deref().unwrap_or("").contains("the channel was removed")), "{failed:?}");
}

#[tokio::test]
async fn the_guard_refuses_private_destinations_at_save_and_at_delivery_when_blocking() {
    let app = in_process(&[("WEBHOOK_BLOCK_PRIVATE_URLS", "true")]).await;
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let ada_id = user_id(&app, &ada).await;
    for url in [
        "http://127.0.0.1:9",
        "http://[::1]:9",
        "http://[::ffff:10.0.0.1]",
        "http://169.254.169.254",
        "http://localhost:9",
    ] {
        let (status, body, _) = app
            .call("PUT", "/api/v1/notifications/channels/ntfy", Some(&ada), json!({ "url": url, "topic": "t" }))
            .await;
        assert_eq!((status, body["details"]["field"].as_str()), (400, Some("url")), "{url}: {body}");
        let (status, body, _) = app
            .call("PUT", "/api/v1/notifications/channels/gotify", Some(&ada), json!({ "url": url, "token": "k" }))
            .await;
        assert_eq!(status, 400, "{url}: {body}");
    }
    let (p256dh, auth, _) = browser_keys();
    let (status, body, _) = app
        .call(
            "POST",
            "/api/v1/notifications/push-subscriptions",
            Some(&ada),
            json!({ "endpoint": format!("{}/push/1", receiver.base), "keys": { "p256dh": p256dh, "auth": auth } }),
        )
        .await;
    assert_eq!((status, body["details"]["field"].as_str()), (400, Some("endpoint")), "{body}");

    // A destination stored before blocking was turned on is refused at delivery, for good.
    let url = receiver.base.clone();
    app.state
        .engine
        .write_async(move |tx| {
            let config = ChannelConfig {
                ntfy: Some(TopicChannel {
                    url: url.clone(),
                    topic: "t".into(),
                    sealed_token: None,
                    updated_at: tx.now(),
                }),
                ..ChannelConfig::default()
            };
            tx.global().insert_at(ada_id, &config)
        })
        .await
        .unwrap();
    let (status, _, _) = app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&ada), json!({})).await;
    assert_eq!(status, 202);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    assert!(receiver.received().is_empty(), "nothing reached the private address");
    let failed = app.state.engine.system_events(10, |e| e.event_type == "notification_failed").unwrap();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].error.as_deref().unwrap_or("").contains("private-address guard"), "{failed:?}");
    advance(&app, 24 * 3600);
    assert_eq!(deliver_once(&app.state.notify).await, 0, "a refusal is permanent");
}

/// A browser's key pair and auth secret: `(p256dh, auth, private key)`.
fn browser_keys() -> (String, String, p256::SecretKey) {
    let secret = p256::SecretKey::from_slice(&Sha256::digest(b"the browser's private key")).expect("a scalar");
    let public = secret.public_key().to_encoded_point(false);
    (B64.encode(public.as_bytes()), B64.encode(b"sixteen-byte-sec"), secret)
}

/// The browser's side of RFC 8291: decrypts an aes128gcm body with its private key and auth
/// secret. Returns the plaintext (padding removed) and the server's ephemeral public key.
fn decrypt(body: &[u8], ua_secret: &p256::SecretKey, auth: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let salt = &body[..16];
    let rs = u32::from_be_bytes(body[16..20].try_into().unwrap());
    assert_eq!(rs, 4096, "record size");
    let idlen = body[20] as usize;
    assert_eq!(idlen, 65, "the key id is the server's uncompressed ephemeral key");
    let as_public = &body[21..21 + idlen];
    let ciphertext = &body[21 + idlen..];
    let ua_public = ua_secret.public_key().to_encoded_point(false).as_bytes().to_vec();
    let as_key = p256::PublicKey::from_sec1_bytes(as_public).expect("a P-256 point");
    let shared = p256::ecdh::diffie_hellman(ua_secret.to_nonzero_scalar(), as_key.as_affine());
    let mut info = b"WebPush: info\0".to_vec();
    info.extend_from_slice(&ua_public);
    info.extend_from_slice(as_public);
    let mut ikm = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes()).expand(&info, &mut ikm).unwrap();
    let prk = hkdf::Hkdf::<Sha256>::new(Some(salt), &ikm);
    let (mut cek, mut nonce) = ([0u8; 16], [0u8; 12]);
    prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek).unwrap();
    prk.expand(b"Content-Encoding: nonce\0", &mut nonce).unwrap();
    let mut plain = aes_gcm::Aes128Gcm::new(&cek.into())
        .decrypt(aes_gcm::Nonce::from_slice(&nonce), ciphertext)
        .expect("the body decrypts with the browser's key");
    while plain.last() == Some(&0) {
        plain.pop();
    }
    assert_eq!(plain.pop(), Some(2), "the last record's delimiter");
    (plain, as_public.to_vec())
}

/// Verifies `vapid t=<jwt>, k=<key>` with `server_key` and returns the JWT's claims.
fn verify_vapid(header: &str, server_key: &str) -> Value {
    use p256::ecdsa::signature::Verifier;
    let (jwt, k) = header.strip_prefix("vapid t=").and_then(|r| r.split_once(", k=")).expect("vapid t=..., k=...");
    assert_eq!(k, server_key, "k is the key the browser subscribed with");
    let (input, signature) = jwt.rsplit_once('.').expect("a signed JWT");
    let (head, claims) = input.split_once('.').expect("header.claims");
    let head: Value = serde_json::from_slice(&B64.decode(head).unwrap()).unwrap();
    assert_eq!(head["alg"], "ES256");
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&B64.decode(server_key).unwrap()).expect("a point");
    let signature = p256::ecdsa::Signature::from_slice(&B64.decode(signature).unwrap()).expect("r||s");
    key.verify(input.as_bytes(), &signature).expect("the JWT is signed with the server's VAPID key");
    serde_json::from_slice(&B64.decode(claims).unwrap()).unwrap()
}

#[tokio::test]
async fn web_push_is_encrypted_for_the_browser_and_signed_with_the_vapid_key() {
    let app = in_process(&[]).await;
    let push = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;

    let (status, key, _) = app.call("GET", "/api/v1/notifications/webpush/public-key", Some(&ada), json!({})).await;
    assert_eq!(status, 200, "{key}");
    let server_key = key["public_key"].as_str().unwrap().to_string();
    assert_eq!(B64.decode(&server_key).unwrap().len(), 65);
    let (_, again, _) = app.call("GET", "/api/v1/notifications/webpush/public-key", Some(&ada), json!({})).await;
    assert_eq!(again["public_key"], server_key, "the key is made once and kept");

    let (p256dh, auth, ua_secret) = browser_keys();
    let endpoint = format!("{}/push/ada-browser", push.base);
    let subscription =
        json!({ "endpoint": endpoint, "expirationTime": null, "keys": { "p256dh": p256dh, "auth": auth } });
    let (status, created, _) =
        app.call("POST", "/api/v1/notifications/push-subscriptions", Some(&ada), subscription.clone()).await;
    assert_eq!(status, 201, "{created}");
    let (status, _, _) = app.call("POST", "/api/v1/notifications/push-subscriptions", Some(&ada), subscription).await;
    assert_eq!(status, 200, "the same browser again replaces its registration");
    // The existing web client's flat form is the same registration.
    let flat = json!({ "endpoint": endpoint, "p256dh": p256dh, "auth": auth, "device_label": "Firefox" });
    let (status, _, _) = app.call("POST", "/api/v1/notifications/push-subscriptions", Some(&ada), flat).await;
    assert_eq!(status, 200, "flat keys read as the same browser");
    let keyless = json!({ "endpoint": endpoint, "p256dh": p256dh });
    let (status, body, _) = app.call("POST", "/api/v1/notifications/push-subscriptions", Some(&ada), keyless).await;
    assert_eq!((status, body["details"]["field"].as_str()), (400, Some("keys")), "{body}");
    let (_, listed, _) = app.call("GET", "/api/v1/notifications/push-subscriptions", Some(&ada), json!({})).await;
    assert_eq!(listed["subscriptions"].as_array().unwrap().len(), 1);
    assert!(!listed.to_string().contains(&p256dh) && !listed.to_string().contains(&auth), "keys are never shown");

    let (status, body, _) =
        app.call("POST", "/api/v1/notifications/channels/webpush/test", Some(&ada), json!({})).await;
    assert_eq!((status, body["queued"].clone()), (202, json!(["webpush"])));
    assert_eq!(deliver_once(&app.state.notify).await, 1);

    let got = push.received();
    assert_eq!(got.len(), 1);
    let request = &got[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/push/ada-browser"));
    assert_eq!(request.header("content-encoding"), "aes128gcm");
    assert_eq!(request.header("ttl"), "86400");
    assert_eq!(request.header("urgency"), "normal");
    assert_eq!(request.header("topic").len(), 32);
    assert!(request.header("x-correlation-id").is_empty());
    let claims = verify_vapid(&request.header("authorization"), &server_key);
    assert_eq!(claims["aud"], push.base, "aud is the push service's origin");
    let exp = claims["exp"].as_i64().unwrap();
    let now = app.clock.now().as_second();
    assert!(exp > now && exp <= now + 24 * 3600, "exp within 24 hours: {exp} vs {now}");
    assert!(claims["sub"].as_str().unwrap().starts_with("mailto:"));

    let (plain, as_public) = decrypt(&request.body, &ua_secret, b"sixteen-byte-sec");
    assert_ne!(B64.encode(&as_public), server_key, "the message key is ephemeral, not the VAPID key");
    let message: Value = serde_json::from_slice(&plain).expect("JSON inside");
    assert_eq!(message["title"], "Mycorrhizal: test notification");
    assert!(message["body"].as_str().unwrap().contains("webpush"));
    assert_eq!(notification_events(&app), [("notification_sent".into(), "webpush".into())]);

    // The push service says the browser is gone: the subscription is removed, nothing retried.
    push.then(&[410]);
    app.call("POST", "/api/v1/notifications/channels/webpush/test", Some(&ada), json!({})).await;
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let (_, listed, _) = app.call("GET", "/api/v1/notifications/push-subscriptions", Some(&ada), json!({})).await;
    assert_eq!(listed["subscriptions"], json!([]));
    let (_, channels, _) = app.call("GET", "/api/v1/notifications/channels", Some(&ada), json!({})).await;
    assert_eq!(channels["webpush"]["subscriptions"], 0);
    advance(&app, 3600);
    assert_eq!(deliver_once(&app.state.notify).await, 0);
    assert_eq!(push.received().len(), 2);
}

#[tokio::test]
async fn email_is_on_by_default_with_a_provider_and_fan_out_reaches_every_enabled_channel() {
    let mail = Receiver::start().await;
    let ntfy = Receiver::start().await;
    let push = Receiver::start().await;
    let mail_url = format!("{}/send", mail.base);
    let app = in_process(&[("EMAIL_API_URL", mail_url.as_str()), ("EMAIL_API_KEY", "mail-key")]).await;
    let ada = sign_up(&app, "ada").await;
    let ada_id = user_id(&app, &ada).await;

    let (_, listed, _) = app.call("GET", "/api/v1/notifications/channels", Some(&ada), json!({})).await;
    assert_eq!(listed["email"], json!({ "available": true, "enabled": true }));
    let (status, _, _) = app.call("POST", "/api/v1/notifications/channels/email/test", Some(&ada), json!({})).await;
    assert_eq!(status, 202);
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let got = mail.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].json()["to"], "ada@example.org");
    assert_eq!(got[0].json()["subject"], "Mycorrhizal: test notification");

    app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(&ada), json!({ "url": ntfy.base, "topic": "t" })).await;
    let (p256dh, auth, _) = browser_keys();
    let endpoint = format!("{}/push/x", push.base);
    app.call(
        "POST",
        "/api/v1/notifications/push-subscriptions",
        Some(&ada),
        json!({ "endpoint": endpoint, "keys": { "p256dh": p256dh, "auth": auth } }),
    )
    .await;

    // The seam the digest calls: one message per enabled channel, in the cause's transaction.
    let senders = Senders::of(&app.state.notify);
    let note = Notification { subject: "Today: Mum's birthday".into(), text: "Call Mum.".into() };
    let queued = app
        .state
        .engine
        .write_async(move |tx| channels::fan_out(tx, &senders, ada_id, &note, "digest:test"))
        .await
        .unwrap();
    assert_eq!(queued, ["email", "ntfy", "webpush"]);
    assert_eq!(deliver_once(&app.state.notify).await, 3);
    assert_eq!(mail.received().len(), 2);
    assert_eq!(ntfy.received()[0].json()["message"], "Call Mum.");
    assert_eq!(push.received().len(), 1);

    // Email off: the next fan-out skips it.
    let (status, body, _) =
        app.call("PUT", "/api/v1/notifications/channels/email", Some(&ada), json!({ "enabled": false })).await;
    assert_eq!((status, body["email"]["enabled"].clone()), (200, json!(false)));
    let senders = Senders::of(&app.state.notify);
    let note = Notification { subject: "s".into(), text: "t".into() };
    let queued = app
        .state
        .engine
        .write_async(move |tx| channels::fan_out(tx, &senders, ada_id, &note, "digest:test2"))
        .await
        .unwrap();
    assert_eq!(queued, ["ntfy", "webpush"]);
}

#[tokio::test]
async fn another_user_can_neither_see_change_delete_nor_test_my_channels() {
    let app = in_process(&[]).await;
    let ntfy = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let bob = sign_up(&app, "bob").await;
    app.call(
        "PUT",
        "/api/v1/notifications/channels/ntfy",
        Some(&ada),
        json!({ "url": ntfy.base, "topic": "ada_only", "token": "tk_ada" }),
    )
    .await;
    let (p256dh, auth, _) = browser_keys();
    let (_, sub, _) = app
        .call(
            "POST",
            "/api/v1/notifications/push-subscriptions",
            Some(&ada),
            json!({ "endpoint": format!("{}/push/ada", ntfy.base), "keys": { "p256dh": p256dh, "auth": auth } }),
        )
        .await;
    let sub_id = sub["id"].as_u64().expect("an id");

    let (_, theirs, _) = app.call("GET", "/api/v1/notifications/channels", Some(&bob), json!({})).await;
    assert!(theirs["ntfy"].is_null() && theirs["webpush"]["subscriptions"] == 0, "{theirs}");
    let (_, listed, _) = app.call("GET", "/api/v1/notifications/push-subscriptions", Some(&bob), json!({})).await;
    assert_eq!(listed["subscriptions"], json!([]));
    let path = format!("/api/v1/notifications/push-subscriptions/{sub_id}");
    assert_eq!(app.call("DELETE", &path, Some(&bob), json!({})).await.0, 404);
    assert_eq!(app.call("DELETE", "/api/v1/notifications/channels/ntfy", Some(&bob), json!({})).await.0, 404);
    assert_eq!(app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&bob), json!({})).await.0, 404);
    assert_eq!(app.call("POST", "/api/v1/notifications/channels/webpush/test", Some(&bob), json!({})).await.0, 404);
    assert_eq!(deliver_once(&app.state.notify).await, 0, "nothing was queued to Ada's channels");

    // Bob's own settings stay his.
    let (status, _, _) = app
        .call("PUT", "/api/v1/notifications/channels/ntfy", Some(&bob), json!({ "url": ntfy.base, "topic": "bob" }))
        .await;
    assert_eq!(status, 200);
    let (_, mine, _) = app.call("GET", "/api/v1/notifications/channels", Some(&ada), json!({})).await;
    assert_eq!((mine["ntfy"]["topic"].as_str(), mine["ntfy"]["token_set"].as_bool()), (Some("ada_only"), Some(true)));
    let (_, listed, _) = app.call("GET", "/api/v1/notifications/push-subscriptions", Some(&ada), json!({})).await;
    assert_eq!(listed["subscriptions"].as_array().unwrap().len(), 1);
    assert_eq!(app.call("DELETE", &path, Some(&ada), json!({})).await.0, 204);
}

#[tokio::test]
async fn deleting_an_account_removes_its_channels_browsers_webhooks_digest_day_and_queued_messages() {
    use mycorrhizal::notify::channels::PushSubscription;
    use mycorrhizal::notify::webhooks::Webhook;
    use mycorrhizal::outbox::{Envelope, Message};
    use mycorrhizal_engine::system::Trigger;

    let app = in_process(&[]).await;
    app.clock.set("2026-03-10T08:00:00Z".parse().expect("an instant"));
    let receiver = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let bob = sign_up(&app, "bob").await;
    let (ada_id, bob_id) = (user_id(&app, &ada).await, user_id(&app, &bob).await);
    for (who, topic) in [(&ada, "ada"), (&bob, "bob")] {
        let body = json!({ "url": receiver.base, "topic": topic, "token": format!("tk_{topic}") });
        assert_eq!(app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(who), body).await.0, 200);
    }
    let (p256dh, auth, _) = browser_keys();
    let subscription =
        json!({ "endpoint": format!("{}/push/bob", receiver.base), "keys": { "p256dh": p256dh, "auth": auth } });
    assert_eq!(app.call("POST", "/api/v1/notifications/push-subscriptions", Some(&bob), subscription).await.0, 201);
    let hook =
        json!({ "url": format!("{}/hook/bob", receiver.base), "events": ["contact.created", "birthday.occurred"] });
    assert_eq!(app.call("POST", "/api/v1/webhooks", Some(&bob), hook).await.0, 201);
    // Bob's birthday contact queues a webhook delivery; the digest queues his channels' messages,
    // two webhook events' worth and his day marker.
    let friend = json!({ "firstname": "Fern", "birthday": "1980-03-10" });
    assert_eq!(app.call("POST", "/api/v1/contacts", Some(&bob), friend).await.0, 201);
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::DIGEST, Trigger::Manual).await.unwrap();
    assert_eq!(run.items_processed, Some(1), "{run:?}");
    assert_eq!(app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&ada), json!({})).await.0, 202);
    // The webhook events become deliveries (as the worker's next round would make them); one more
    // contact's event stays recorded, not yet expanded.
    assert_eq!(mycorrhizal::notify::webhooks::expand_all(&app.state.engine).await.expect("expanded"), 2);
    let gus = json!({ "firstname": "Gus" });
    assert_eq!(app.call("POST", "/api/v1/contacts", Some(&bob), gus).await.0, 201);
    let unexpanded = |app: &InProcess| {
        let g = app.state.engine.global().expect("a read");
        let events = mycorrhizal::outbox::pending_events(&g, usize::MAX).expect("events");
        events.into_iter().filter(|(_, e)| e.user_id == bob_id).map(|(_, e)| e).collect::<Vec<_>>()
    };
    let recorded = unexpanded(&app);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(String::from_utf8_lossy(&recorded[0].data).contains("Gus"), "{recorded:?}");

    let bobs = |app: &InProcess| {
        let g = app.state.engine.global().expect("a read");
        let messages: Vec<u64> = g
            .list::<Message>()
            .expect("outbox")
            .into_iter()
            .filter(|(_, m)| m.user_id == bob_id)
            .map(|(id, _)| id)
            .collect();
        let pending =
            mycorrhizal::outbox::pending_ids(&g).expect("pending").iter().filter(|id| messages.contains(id)).count();
        (
            g.get::<ChannelConfig>(bob_id).is_ok(),
            g.list::<PushSubscription>().expect("subs").iter().filter(|(_, s)| s.user_id == bob_id).count(),
            g.list::<Webhook>().expect("hooks").iter().filter(|(_, w)| w.user_id == bob_id).count(),
            g.map_get("map:digest_days", &bob_id.to_string()).expect("marker").is_some(),
            g.map_get("map:webhook_subs", &bob_id.to_string()).expect("subs").is_some(),
            messages.len(),
            pending,
        )
    };
    let before = bobs(&app);
    assert_eq!((before.0, before.1, before.2, before.3, before.4), (true, 1, 1, true, true), "{before:?}");
    assert_eq!(before.5, 4, "contact.created, birthday.occurred, ntfy and webpush: {before:?}");
    assert_eq!(before.6, 4, "all pending: {before:?}");
    let envelopes = app.state.engine.global().expect("a read").list::<Envelope>().expect("envelopes");
    assert!(format!("{envelopes:?}").contains("Fern"), "the webhook events' envelopes: {envelopes:?}");

    let (status, body, _) = app.call("DELETE", &format!("/api/v1/admin/users/{bob_id}"), Some(&ada), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(bobs(&app), (false, 0, 0, false, false, 0, 0), "nothing of Bob's notification state is left");
    assert!(unexpanded(&app).is_empty(), "nor an event recorded and not yet expanded");
    let raw = format!("{:?}", app.state.engine.global().expect("a read").list::<Message>().expect("outbox"));
    assert!(!raw.contains("/hook/bob") && !raw.contains("Fern"), "no copy of Bob's records stays queued");
    let envelopes = app.state.engine.global().expect("a read").list::<Envelope>().expect("envelopes");
    assert!(!format!("{envelopes:?}").contains("Fern"), "nor in a stored envelope: {envelopes:?}");

    // Only Ada's test goes out, now and after every retry would have come due.
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    advance(&app, 24 * 3600);
    assert_eq!(deliver_once(&app.state.notify).await, 0);
    let got = receiver.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].json()["topic"], "ada");
    assert!(app.state.engine.global().expect("a read").get::<ChannelConfig>(ada_id).is_ok(), "Ada's channels stay");
}

/// The `notification_<channel>` checks of `GET /admin/diagnostics`, by name.
async fn notification_checks(app: &InProcess, admin: &str) -> Vec<(String, String, String)> {
    let (status, body, _) = app.call("GET", "/api/v1/admin/diagnostics", Some(admin), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let checks = body["checks"].as_array().expect("checks");
    let summary = &body["summary"];
    let count = |s: &str| checks.iter().filter(|c| c["status"] == s).count() as u64;
    assert_eq!(
        (summary["ok"].as_u64(), summary["warnings"].as_u64(), summary["errors"].as_u64()),
        (Some(count("ok")), Some(count("warning")), Some(count("error"))),
        "{body}"
    );
    for name in ["database", "migrations", "filesystem", "disk_space", "version"] {
        assert!(checks.iter().any(|c| c["name"] == name), "{name} in {body}");
    }
    checks
        .iter()
        .filter(|c| c["name"].as_str().unwrap_or("").starts_with("notification_"))
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("name"), s("status"), s("message"))
        })
        .collect()
}

#[tokio::test]
async fn diagnostics_show_each_channel_in_use_failing_once_its_messages_fail_in_a_row() {
    let app = in_process(&[]).await;
    let ntfy = Receiver::start().await;
    let gotify = Receiver::start().await;
    let ada = sign_up(&app, "ada").await;
    let bob = sign_up(&app, "bob").await;
    assert_eq!(app.call("GET", "/api/v1/admin/diagnostics", Some(&bob), json!({})).await.0, 403, "admins only");
    assert!(notification_checks(&app, &ada).await.is_empty(), "no channel in use, no mail provider");

    let ntfy_body = json!({ "url": ntfy.base, "topic": "t", "token": "tk_diagsecret" });
    app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(&bob), ntfy_body).await;
    app.call(
        "PUT",
        "/api/v1/notifications/channels/gotify",
        Some(&ada),
        json!({ "url": gotify.base, "token": "gk_diag" }),
    )
    .await;
    let checks = notification_checks(&app, &ada).await;
    let names: Vec<(&str, &str)> = checks.iter().map(|(n, s, _)| (n.as_str(), s.as_str())).collect();
    assert_eq!(names, [("notification_ntfy", "ok"), ("notification_gotify", "ok")], "{checks:?}");

    // Both receivers answer 500 to every attempt of three messages each: all retries spent.
    ntfy.then(&[500; 24]);
    gotify.then(&[500; 24]);
    for _ in 0..3 {
        app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&bob), json!({})).await;
        app.call("POST", "/api/v1/notifications/channels/gotify/test", Some(&ada), json!({})).await;
    }
    for _ in 0..mycorrhizal::outbox::MAX_ATTEMPTS {
        assert_eq!(deliver_once(&app.state.notify).await, 6);
        advance(&app, 7 * 3600);
    }
    assert_eq!(deliver_once(&app.state.notify).await, 0, "given up");
    assert_eq!((ntfy.received().len(), gotify.received().len()), (24, 24));
    // Days went by: fresh sessions.
    let (ada, bob) = (sign_in(&app, "ada").await, sign_in(&app, "bob").await);
    let checks = notification_checks(&app, &ada).await;
    for (name, status, message) in &checks {
        assert_eq!(status, "error", "{name}: {message}");
        assert!(message.starts_with("3 messages in a row failed since "), "{message}");
        for secret in [ntfy.base.as_str(), gotify.base.as_str(), "tk_diagsecret", "gk_diag", "500"] {
            assert!(!message.contains(secret), "{message} echoes {secret}");
        }
    }
    assert_eq!(checks.len(), 2);

    // The topic recovers: one delivered message makes its check ok; Gotify still fails.
    app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&bob), json!({})).await;
    assert_eq!(deliver_once(&app.state.notify).await, 1);
    let checks = notification_checks(&app, &ada).await;
    let by_name = |n: &str| checks.iter().find(|c| c.0 == n).map(|c| c.1.clone()).expect("a check");
    assert_eq!((by_name("notification_ntfy"), by_name("notification_gotify")), ("ok".into(), "error".into()));
}
