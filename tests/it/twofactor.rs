//! TOTP enrolment, the two-step sign-in, replay refusal, recovery codes and throttling.

use serde_json::{Value, json};

use crate::helpers::{Client, Cred, Instance, PASSWORD, set_cookie};

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

fn secret_bytes(base32: &str) -> Vec<u8> {
    totp_rs::Secret::Encoded(base32.to_string()).to_bytes().unwrap()
}

pub(crate) fn code(secret: &[u8], at: u64) -> String {
    mycorrhizal::auth::totp::code_at(secret, at)
}

pub(crate) async fn enrol(client: &Client) -> (Vec<u8>, Vec<String>) {
    let setup: Value = client.post("/api/v1/users/2fa/setup", json!({})).await.json().await.unwrap();
    assert!(setup["otpauth_url"].as_str().unwrap().starts_with("otpauth://totp/"));
    let secret = secret_bytes(setup["secret"].as_str().unwrap());
    let confirmed = client.post("/api/v1/users/2fa/confirm", json!({ "code": code(&secret, now()) })).await;
    assert_eq!(confirmed.status(), 200);
    let codes: Vec<String> = confirmed.json::<Value>().await.unwrap()["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(codes.len(), 10);
    (secret, codes)
}

async fn second_step(server: &crate::helpers::TestServer, code: &str) -> reqwest::Response {
    let first = server.login("ada", PASSWORD).await;
    assert_eq!(first.status(), 200);
    let pending = set_cookie(&first, "2fa_pending").expect("pending cookie");
    assert!(set_cookie(&first, "auth_token").is_none(), "no session before the second factor");
    assert_eq!(first.json::<Value>().await.unwrap()["two_factor_required"], true);
    server
        .client
        .post(server.url("/api/v1/login/2fa"))
        .header("cookie", format!("2fa_pending={pending}"))
        .json(&json!({ "code": code }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn two_step_login_accepts_a_code_once_and_recovery_codes_once() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (secret, recovery) = enrol(&ada).await;
    let status: Value = ada.get("/api/v1/users/2fa/status").await.json().await.unwrap();
    assert_eq!(status["enabled"], true);

    // The enrolment used the current step; the next step (one step of drift) is accepted once.
    let next = code(&secret, now() + 30);
    let signed_in = second_step(&server, &next).await;
    assert_eq!(signed_in.status(), 200);
    let cookie = set_cookie(&signed_in, "auth_token").expect("session after the second factor");
    assert_eq!(ada.with(Cred::Cookie(cookie)).get("/api/v1/users/me").await.status(), 200);
    let replay = second_step(&server, &next).await;
    assert_eq!(replay.status(), 400, "the same code is not accepted twice");

    assert_eq!(second_step(&server, &recovery[0]).await.status(), 200);
    assert_eq!(second_step(&server, &recovery[0]).await.status(), 400, "a recovery code works once");

    let pending_without_cookie = server.post("/api/v1/login/2fa", json!({ "code": "123456" })).await;
    assert_eq!(pending_without_cookie.status(), 401);
}

#[tokio::test]
async fn regenerating_needs_a_live_code_and_kills_the_old_set() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (secret, old) = enrol(&ada).await;
    let with_recovery = ada.post("/api/v1/users/2fa/recovery-codes/regenerate", json!({ "code": old[1] })).await;
    assert_eq!(with_recovery.status(), 400, "a recovery code is not a live TOTP code");
    let fresh =
        ada.post("/api/v1/users/2fa/recovery-codes/regenerate", json!({ "code": code(&secret, now() + 30) })).await;
    assert_eq!(fresh.status(), 200);
    let new: Vec<String> = fresh.json::<Value>().await.unwrap()["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(second_step(&server, &old[2]).await.status(), 400, "the old set died");
    assert_eq!(second_step(&server, &new[0]).await.status(), 200);
}

#[tokio::test]
async fn wrong_codes_are_throttled() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    enrol(&ada).await;
    for _ in 0..5 {
        assert_eq!(second_step(&server, "000000").await.status(), 400);
    }
    let throttled = second_step(&server, "000000").await;
    assert_eq!(throttled.status(), 429);
    assert!(throttled.headers().get("retry-after").is_some());
}

#[tokio::test]
async fn disabling_and_admin_reset_clear_two_factor() {
    let server = Instance::new().spawn();
    let ada = server.sign_up("ada").await;
    let (_, recovery) = enrol(&ada).await;
    assert_eq!(ada.post("/api/v1/users/2fa/setup", json!({})).await.status(), 409, "already on");
    assert_eq!(ada.post("/api/v1/users/2fa/disable", json!({ "code": recovery[0] })).await.status(), 200);
    let direct = server.login("ada", PASSWORD).await;
    assert!(set_cookie(&direct, "auth_token").is_some(), "one step again");

    let bob = server.sign_up("bob").await;
    enrol(&bob).await;
    let reset = ada.post(&format!("/api/v1/admin/users/{}/reset-2fa", bob.id), json!({})).await;
    assert_eq!(reset.status(), 200);
    let bob_login = server.login("bob", PASSWORD).await;
    assert!(set_cookie(&bob_login, "auth_token").is_some());
}

#[tokio::test]
async fn the_totp_secret_is_encrypted_at_rest() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let setup: Value = ada.post("/api/v1/users/2fa/setup", json!({})).await.json().await.unwrap();
    let secret = secret_bytes(setup["secret"].as_str().unwrap());
    assert!(server.terminate().success());
    let file = std::fs::read(instance.database()).unwrap();
    let b32 = setup["secret"].as_str().unwrap().as_bytes().to_vec();
    assert!(!file.windows(secret.len()).any(|w| w == secret.as_slice()), "raw secret not in the file");
    assert!(!file.windows(b32.len()).any(|w| w == b32.as_slice()), "base32 secret not in the file");
}
