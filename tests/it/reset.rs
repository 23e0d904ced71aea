//! Password reset by email through a local SMTP sink, the breached-password check against a local
//! fake range API, and the device grant.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::helpers::{Cred, Instance, PASSWORD, set_cookie};

/// A minimal SMTP server on loopback that records every message it receives.
pub async fn smtp_sink() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let sink = sink.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                let _ = write.write_all(b"220 sink ESMTP\r\n").await;
                let mut data = false;
                let mut message = String::new();
                while let Ok(Some(line)) = lines.next_line().await {
                    if data {
                        if line == "." {
                            data = false;
                            sink.lock().unwrap().push(std::mem::take(&mut message));
                            let _ = write.write_all(b"250 queued\r\n").await;
                        } else {
                            message.push_str(&line);
                            message.push('\n');
                        }
                        continue;
                    }
                    let verb = line.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
                    let reply: &[u8] = match verb.as_str() {
                        "EHLO" | "HELO" => b"250 sink\r\n",
                        "DATA" => {
                            data = true;
                            b"354 go on\r\n"
                        }
                        "QUIT" => {
                            let _ = write.write_all(b"221 bye\r\n").await;
                            break;
                        }
                        _ => b"250 ok\r\n",
                    };
                    let _ = write.write_all(reply).await;
                }
            });
        }
    });
    (port, received)
}

pub async fn wait_for_mail(received: &Arc<Mutex<Vec<String>>>) -> String {
    for _ in 0..250 {
        if let Some(m) = received.lock().unwrap().first().cloned() {
            return m;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("no mail arrived");
}

#[tokio::test]
async fn a_reset_email_carries_a_single_use_token_with_the_admin_reset_effect() {
    let (port, received) = smtp_sink().await;
    let server = Instance::new()
        .with("SMTP_HOST", "127.0.0.1")
        .with("SMTP_PORT", &port.to_string())
        .with("SMTP_TLS", "none")
        .with("FRONTEND_URL", "https://crm.example.org")
        .spawn();
    let ada = server.sign_up("ada").await;
    let token = ada.post("/api/v1/api-tokens", json!({ "name": "t" })).await.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();

    let unknown: Value = server
        .post("/api/v1/password-reset/request", json!({ "email": "nobody@example.org" }))
        .await
        .json()
        .await
        .unwrap();
    let known: Value = server
        .post("/api/v1/password-reset/request", json!({ "email": "ADA@example.org" }))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(unknown, known, "the same answer whether or not the account exists");
    // Undo quoted-printable soft line breaks, as a mail client would.
    let mail = wait_for_mail(&received).await.replace("=\n", "").replace("=3D", "=");
    assert_eq!(received.lock().unwrap().len(), 1, "no mail for the unknown address");
    assert!(mail.contains("ada@example.org"));
    let reset_token = mail
        .split("token=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("a reset link with a token")
        .to_string();

    let weak =
        server.post("/api/v1/password-reset/confirm", json!({ "token": reset_token, "password": "123456" })).await;
    assert_eq!(weak.json::<Value>().await.unwrap()["details"]["field"], "password");
    let done = server
        .post("/api/v1/password-reset/confirm", json!({ "token": reset_token, "password": "gills-and-spores-11" }))
        .await;
    assert_eq!(done.status(), 200);
    assert_eq!(ada.get("/api/v1/users/me").await.status(), 401, "sessions ended");
    assert_eq!(ada.with(Cred::Bearer(token)).get("/api/v1/users/me").await.status(), 401, "API tokens revoked");
    server.sign_in("ada", "gills-and-spores-11").await;
    let again = server
        .post("/api/v1/password-reset/confirm", json!({ "token": reset_token, "password": "another-pass-22-x" }))
        .await;
    assert_eq!(again.status(), 400, "single use");
    assert_eq!(again.json::<Value>().await.unwrap()["details"]["field"], "token");
}

/// A fake breached-password range API on loopback; records the prefixes it was asked for.
async fn range_api(breached: &str) -> (String, Arc<Mutex<Vec<String>>>) {
    let digest = sha1_hex(breached);
    let (prefix, suffix) = digest.split_at(5);
    let (prefix, suffix) = (prefix.to_string(), suffix.to_string());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let app = axum::Router::new().route(
        "/range/{prefix}",
        axum::routing::get(move |axum::extract::Path(p): axum::extract::Path<String>| {
            let log = log.clone();
            let (prefix, suffix) = (prefix.clone(), suffix.clone());
            async move {
                log.lock().unwrap().push(p.clone());
                if p == prefix {
                    format!("0000000000000000000000000000000000A:0\r\n{suffix}:3303003\r\n")
                } else {
                    String::new()
                }
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, asked)
}

fn sha1_hex(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string().to_uppercase()
}

#[tokio::test]
async fn breached_passwords_are_refused_and_only_a_prefix_leaves() {
    let breached = "mossy-log-walk-1987";
    let (url, asked) = range_api(breached).await;
    let server = Instance::new().with("HIBP_CHECK_ENABLED", "true").with("HIBP_API_URL", &url).spawn();
    let refused = server.register("ada", breached).await;
    assert_eq!(refused.status(), 400);
    assert!(refused.json::<Value>().await.unwrap()["message"].as_str().unwrap().contains("breach"));
    assert_eq!(server.register("ada", PASSWORD).await.status(), 201);
    let prefixes = asked.lock().unwrap().clone();
    assert!(prefixes.iter().all(|p| p.len() == 5), "only 5-character prefixes: {prefixes:?}");
    assert!(!prefixes.iter().any(|p| p == &sha1_hex(breached)));
}

#[tokio::test]
async fn the_breach_check_fails_open() {
    let server = Instance::new().with("HIBP_CHECK_ENABLED", "true").with("HIBP_API_URL", "http://127.0.0.1:9").spawn();
    assert_eq!(server.register("ada", PASSWORD).await.status(), 201, "an unreachable range API does not block sign-up");
}

#[tokio::test]
async fn a_device_grant_is_exchanged_once_for_a_secure_session() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let grant = ada.post("/api/v1/auth/device/grants", json!({ "label": "Pixel" })).await;
    assert_eq!(grant.status(), 201);
    let code = grant.json::<Value>().await.unwrap()["token"].as_str().unwrap().to_string();
    let exchanged = server.post("/api/v1/auth/device/session", json!({ "device_token": code })).await;
    assert_eq!(exchanged.status(), 200);
    let line = exchanged
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("auth_token="))
        .unwrap()
        .to_string();
    assert!(line.contains("Secure"));
    let cookie = set_cookie(&exchanged, "auth_token").unwrap();
    assert_eq!(ada.with(Cred::Cookie(cookie)).get("/api/v1/users/me").await.status(), 200);
    let again = server.post("/api/v1/auth/device/session", json!({ "device_token": code })).await;
    assert_eq!(again.status(), 401);
    assert_eq!(again.json::<Value>().await.unwrap()["code"], "INVALID_CREDENTIALS");
    let anonymous = server.post("/api/v1/auth/device/grants", json!({ "label": "x" })).await;
    assert_eq!(anonymous.status(), 401);
    let _ = PASSWORD;
}

/// A fake transactional-email API on loopback that records each JSON message and its key.
async fn email_api() -> (String, Arc<Mutex<Vec<(String, Value)>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    let app = axum::Router::new().route(
        "/send",
        axum::routing::post(move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
            let log = log.clone();
            async move {
                let key = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                log.lock().unwrap().push((key, body));
                "ok"
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/send", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

#[tokio::test]
async fn the_http_email_api_delivers_reset_and_password_changed_mail() {
    let (url, received) = email_api().await;
    let server = Instance::new().with("EMAIL_API_URL", &url).with("EMAIL_API_KEY", "mail-key-1").spawn();
    let ada = server.sign_up("ada").await;
    server.post("/api/v1/password-reset/request", json!({ "email": "ada@example.org" })).await;
    let changed = ada
        .post(
            "/api/v1/users/change-password",
            json!({ "current_password": PASSWORD, "new_password": "gills-and-spores-11" }),
        )
        .await;
    assert_eq!(changed.status(), 200);
    for _ in 0..250 {
        if received.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mails = received.lock().unwrap().clone();
    assert_eq!(mails.len(), 2, "{mails:?}");
    assert!(mails.iter().all(|(key, body)| key == "Bearer mail-key-1" && body["to"] == "ada@example.org"));
    let subjects: Vec<&str> = mails.iter().map(|(_, b)| b["subject"].as_str().unwrap()).collect();
    assert!(
        subjects.contains(&"Reset your Mycorrhizal password")
            && subjects.contains(&"Your Mycorrhizal password was changed")
    );
}
