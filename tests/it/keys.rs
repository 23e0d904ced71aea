//! Encryption at rest across restarts: a wrong key refuses to boot naming the failed unwrap;
//! the documented rewrap command moves the data key to a new master key.

use serde_json::{Value, json};

use crate::helpers::{Cred, Instance, PASSWORD};

const SECRET_A: &str = "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21";
const SECRET_B: &str = "a81d3c5e7f90b2d4c6e8f1a3b5d7e9f0c2a4b6d8e0f1a3c5e7b9d1f3a5c7e9b0";
const KEY_1: &str = "k1-9f8e7d6c5b4a39281706f5e4d3c2b1a0-first-data-key";
const KEY_2: &str = "k2-0a1b2c3d4e5f60718293a4b5c6d7e8f9-second-data-key";

#[test]
fn changing_the_jwt_secret_without_a_data_key_refuses_to_boot() {
    let first = Instance::new().with("JWT_SECRET_KEY", SECRET_A);
    let mut server = first.spawn();
    assert!(server.terminate().success());
    let changed = Instance {
        env: {
            let mut e = first.env.clone();
            e.insert("JWT_SECRET_KEY".into(), SECRET_B.into());
            e
        },
        dir: first.dir.clone(),
    };
    let (status, output) = changed.run_to_exit();
    assert!(!status.success());
    assert!(output.contains("unwrap the data key") && output.contains("JWT_SECRET_KEY"), "{output}");
}

#[tokio::test]
async fn a_separate_data_key_survives_a_jwt_secret_change_and_rewraps() {
    let base = Instance::new().with("JWT_SECRET_KEY", SECRET_A).with("DATA_ENCRYPTION_KEY", KEY_1);
    let mut server = base.spawn();
    let ada = server.sign_up("ada").await;
    let token = ada.post("/api/v1/api-tokens", json!({ "name": "t" })).await.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let setup: Value = ada.post("/api/v1/users/2fa/setup", json!({})).await.json().await.unwrap();
    let secret = totp_rs::Secret::Encoded(setup["secret"].as_str().unwrap().to_string()).to_bytes().unwrap();
    assert!(server.terminate().success());

    // A new JWT secret: sessions die, API tokens and encrypted fields live on.
    let rotated = Instance {
        env: {
            let mut e = base.env.clone();
            e.insert("JWT_SECRET_KEY".into(), SECRET_B.into());
            e
        },
        dir: base.dir.clone(),
    };
    let mut server = rotated.spawn();
    let old_session = ada.with(ada.cred.clone());
    let refused = crate::helpers::Client { base: server.url(""), ..old_session }.get("/api/v1/users/me").await;
    assert_eq!(refused.json::<Value>().await.unwrap()["message"], "Invalid token signature");
    let bearer = crate::helpers::Client { base: server.url(""), ..ada.with(Cred::Bearer(token)) };
    assert_eq!(bearer.get("/api/v1/users/me").await.status(), 200, "API tokens are unaffected");
    assert!(server.terminate().success());

    // The wrong data key refuses to boot.
    let wrong = Instance {
        env: {
            let mut e = rotated.env.clone();
            e.insert("DATA_ENCRYPTION_KEY".into(), KEY_2.into());
            e
        },
        dir: base.dir.clone(),
    };
    let (status, output) = wrong.run_to_exit();
    assert!(!status.success());
    assert!(output.contains("unwrap the data key") && output.contains("DATA_ENCRYPTION_KEY"), "{output}");

    // The rewrap command moves the data key to KEY_2.
    let out = std::process::Command::new(crate::helpers::BIN)
        .arg("rewrap-data-key")
        .env_clear()
        .envs(&rotated.env)
        .env("NEW_DATA_ENCRYPTION_KEY", KEY_2)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let server = wrong.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let confirmed =
        ada.post("/api/v1/users/2fa/confirm", json!({ "code": mycorrhizal::auth::totp::code_at(&secret, now) })).await;
    assert_eq!(confirmed.status(), 200, "the secret sealed before the rewrap still decrypts");
}
