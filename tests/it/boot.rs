//! Start-up refusals and the generated secret.

use std::os::unix::fs::PermissionsExt;

use crate::helpers::Instance;

fn refuses(variable: &str, value: &str) {
    let instance = Instance::new().with(variable, value);
    let (status, output) = instance.run_to_exit();
    assert!(!status.success(), "{variable}={value} must refuse to boot");
    assert!(output.contains(variable), "the refusal names {variable}: {output}");
    assert!(!instance.database().exists(), "nothing was opened before config validation");
}

#[test]
fn a_catch_all_trusted_proxy_refuses_to_boot() {
    refuses("TRUSTED_PROXIES", "0.0.0.0/0");
    refuses("TRUSTED_PROXIES", "::/0");
}

#[test]
fn a_malformed_min_client_version_refuses_to_boot() {
    refuses("MIN_CLIENT_VERSION", "1.2");
    refuses("MIN_CLIENT_VERSION", "v1.2.3");
}

#[test]
fn a_weak_jwt_secret_refuses_to_boot() {
    refuses("JWT_SECRET_KEY", "too-short");
    refuses("JWT_SECRET_KEY", "changeme-changeme-changeme-changeme-changeme");
    refuses("JWT_SECRET_KEY", &"ab".repeat(32));
}

#[test]
fn an_unknown_zone_or_bad_reminder_time_refuses_to_boot() {
    refuses("REMINDER_TIMEZONE", "Europe/Atlantis");
    refuses("REMINDER_TIME", "6am");
}

#[test]
fn a_typo_in_a_later_features_knob_already_refuses_to_boot() {
    refuses("ALERT_SYNC_FAILURE_THRESHOLD", "three");
    refuses("CALDAV_TWO_WAY_ENABLED", "perhaps");
}

#[tokio::test]
async fn a_generated_secret_is_persisted_private_and_kept_across_restarts() {
    let instance = Instance::new();
    let secret_path = instance.data_dir().join("jwt_secret");
    let mut server = instance.spawn();
    let first = std::fs::read_to_string(&secret_path).expect("secret written on first start");
    assert_eq!(first.trim().len(), 64);
    assert_eq!(std::fs::metadata(&secret_path).unwrap().permissions().mode() & 0o777, 0o600);
    let warned = server.log_lines().iter().any(|l| l["event"] == "jwt_secret_generated" && l["level"] == "WARN");
    assert!(warned, "a warning says the key was generated");
    assert!(server.terminate().success());
    let mut again = instance.spawn();
    assert_eq!(std::fs::read_to_string(&secret_path).unwrap(), first);
    assert!(!again.log_lines().iter().any(|l| l["event"] == "jwt_secret_generated"));
    assert!(again.terminate().success());
}

#[tokio::test]
async fn sigterm_stops_gracefully_and_records_start_and_stop() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    assert_eq!(server.get("/health/live").await.status(), 200);
    assert!(server.terminate().success(), "graceful exit code 0");
    let engine = crate::helpers::open_engine(&instance.database());
    let events = engine.system_events(100, |_| true).unwrap();
    let types: Vec<_> = events.iter().rev().map(|e| e.event_type.as_str()).collect();
    assert_eq!(types.first(), Some(&"migration_started"));
    assert!(types.contains(&"application_started"));
    assert_eq!(types.last(), Some(&"application_stopped"));
    let started = events.iter().find(|e| e.event_type == "application_started").unwrap();
    assert!(started.detail.as_deref().unwrap_or("").contains(env!("CARGO_PKG_VERSION")), "with build version");
}

#[test]
fn version_flag_prints_the_build() {
    let out = std::process::Command::new(crate::helpers::BIN).arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("mycorrhizal "), "{text}");
    assert!(text.contains(env!("CARGO_PKG_VERSION")));
}

/// A redo log that does not continue the database's last checkpoint may hold acknowledged
/// writes the database lacks: the server refuses to start, saying what to do; started with
/// `REDO_LOG_SET_ASIDE=true` it keeps the log aside and says so in the timeline, the
/// diagnostics and the integrity check until the operator removes it.
#[tokio::test]
async fn an_unreplayable_redo_log_stops_the_start_until_the_operator_sets_it_aside() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let made = ada.post("/api/v1/contacts", serde_json::json!({ "firstname": "Ann" })).await;
    assert_eq!(made.status(), 201);
    server.terminate();

    // A record far past the checkpoint: the batches between are missing.
    let log = mycorrhizal_engine::redo_path(&instance.database());
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.truncate(16);
    let mut body = (u64::MAX / 2).to_le_bytes().to_vec();
    body.extend_from_slice(b"ops");
    bytes.extend_from_slice(&(3u32).to_le_bytes());
    bytes.extend_from_slice(&crc32(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    std::fs::write(&log, &bytes).unwrap();

    let (status, output) = instance.run_to_exit();
    assert!(!status.success(), "{output}");
    assert!(output.contains("cannot be replayed") && output.contains("REDO_LOG_SET_ASIDE"), "{output}");
    assert_eq!(std::fs::read(&log).unwrap(), bytes, "the log is left as it was");

    let instance = instance.with("REDO_LOG_SET_ASIDE", "true");
    let server = instance.spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let list: serde_json::Value = ada.get("/api/v1/contacts").await.json().await.unwrap();
    assert_eq!(list["total"], 1, "{list}");
    let events: serde_json::Value =
        ada.get("/api/v1/admin/system-events?component=database").await.json().await.unwrap();
    assert_eq!(events["system_events"][0]["event_type"], "redo_set_aside", "{events}");
    let diagnostics: serde_json::Value = ada.get("/api/v1/admin/diagnostics").await.json().await.unwrap();
    let database = diagnostics["checks"].as_array().unwrap().iter().find(|c| c["name"] == "database").unwrap().clone();
    assert_eq!(database["status"], "error", "{database}");
    assert!(database["message"].as_str().unwrap().contains("set aside"), "{database}");
    let report: serde_json::Value = ada.get("/api/v1/admin/integrity-check").await.json().await.unwrap();
    let pass = report["passes"].as_array().unwrap().iter().find(|p| p["name"] == "redo_log").unwrap().clone();
    assert_eq!(pass["status"], "failed", "{report}");

    // Looked at and removed: the checks are clean again.
    for aside in mycorrhizal_engine::redo_set_aside_logs(&instance.database()) {
        std::fs::remove_file(aside).unwrap();
    }
    let diagnostics: serde_json::Value = ada.get("/api/v1/admin/diagnostics").await.json().await.unwrap();
    let database = diagnostics["checks"].as_array().unwrap().iter().find(|c| c["name"] == "database").unwrap().clone();
    assert_eq!(database["status"], "ok", "{database}");
}

/// CRC-32 (IEEE), as the redo log's records carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}
