//! The operator's safety net: `mycorrhizal backup`, `verify` and `restore` run as the real binary
//! against real data folders, the restore drill and the integrity check over the admin API.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mycorrhizal::backup;
use serde_json::Value;

use crate::crm::new_contact;
use crate::helpers::{Instance, PASSWORD};

/// One operator secret shared by the instances of a test: a backup verifies only under the key
/// environment that signed it.
const KEY: &str = "Vq3hT8mZr2LkW9xPc4NbY7sJd1GfA6eU";

fn backups_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.to_str().is_some_and(|p| backup::BACKUP_EXTENSIONS.iter().any(|e| p.ends_with(e))))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn manifest_of(backup: &Path) -> PathBuf {
    PathBuf::from(format!("{}.manifest.json", backup.display()))
}

/// Copies a backup (and its manifest, when `with_manifest`) under a new name in the same folder.
fn copy_backup(backup: &Path, name: &str, with_manifest: bool) -> PathBuf {
    let copy = backup.with_file_name(name);
    std::fs::copy(backup, &copy).expect("copy backup");
    if with_manifest {
        std::fs::copy(manifest_of(backup), manifest_of(&copy)).expect("copy manifest");
    }
    copy
}

fn code(status: std::process::ExitStatus) -> i32 {
    status.code().expect("exit code")
}

/// Waits (polling, at most 60 s) until `done` holds; panics naming `what` otherwise.
async fn until(done: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "still waiting after 60 s for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_backup_taken_during_writes_restores_elsewhere_with_every_acknowledged_write() {
    let source = Arc::new(Instance::new().with("JWT_SECRET_KEY", KEY));
    let server = source.spawn();
    let ada = server.sign_up("ada").await;
    let acked: Arc<Mutex<Vec<(u64, Instant)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2 {
        let (ada, acked, stop) = (ada.clone(), acked.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let contact = new_contact(&ada, &format!("Writer{w}x{n}"), "Quillfeather").await;
                acked.lock().expect("lock").push((contact["id"].as_u64().expect("id"), Instant::now()));
                n += 1;
            }
        }));
    }
    // Writes are acknowledged before the backup starts and after: waited for, not slept for,
    // since a loaded machine may take longer than any fixed pause for its first few writes.
    let acked_since = |since: Option<Instant>| {
        acked.lock().expect("lock").iter().filter(|(_, at)| since.is_none_or(|s| *at > s)).count()
    };
    until(|| acked_since(None) >= 5, "five writes acknowledged").await;
    let started = Instant::now();
    let out = source.dir.path().join("offsite");
    let (status, output) = {
        let (source, out) = (source.clone(), out.clone());
        tokio::task::spawn_blocking(move || source.run_args(&["backup", "--out", &out.display().to_string()]))
            .await
            .expect("backup command")
    };
    assert_eq!(code(status), 0, "{output}");
    assert!(output.contains("backup written"), "{output}");
    until(|| acked_since(Some(started)) >= 1, "a write acknowledged after the backup started").await;
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.expect("writer");
    }
    // Every write acknowledged before the backup started must be in it (those after may be).
    let before: Vec<u64> =
        acked.lock().expect("lock").iter().filter(|(_, at)| *at < started).map(|(id, _)| *id).collect();
    drop(server);

    let backup = backups_in(&out).pop().expect("a backup in --out");
    let target = Instance::new().with("JWT_SECRET_KEY", KEY);
    let (status, output) = target.run_args(&["restore", &backup.display().to_string()]);
    assert_eq!(code(status), 0, "{output}");
    assert!(output.contains("restored"), "{output}");
    let server = target.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    for id in &before {
        assert_eq!(
            ada.get(&format!("/api/v1/contacts/{id}")).await.status(),
            200,
            "contact {id} acknowledged before the backup"
        );
    }
    let found: Value = ada.get("/api/v1/search?q=Quillfeather&limit=1").await.json().await.expect("search");
    let total = found["totals"]["contacts"].as_u64().expect("total");
    assert!(total >= before.len() as u64, "search finds the restored contacts: {total} of at least {}", before.len());
}

#[tokio::test]
async fn verify_fails_closed_on_a_changed_byte_an_edited_manifest_a_missing_one_and_another_key() {
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    new_contact(&ada, "Grace", "Hopper").await;
    assert!(server.terminate().success());

    // The server is stopped: the command snapshots the file itself, into DATA_DIR/backups.
    let (status, output) = instance.run_args(&["backup"]);
    assert_eq!(code(status), 0, "{output}");
    let backup = backups_in(&instance.data_dir().join("backups")).pop().expect("a backup");
    let verify = |path: &Path, instance: &Instance| instance.run_args(&["verify", &path.display().to_string()]);
    let (status, output) = verify(&backup, &instance);
    assert_eq!(code(status), 0, "{output}");

    let changed = copy_backup(&backup, "mycorrhizal-changed.redb", true);
    let mut bytes = std::fs::read(&changed).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&changed, bytes).expect("write");
    let (status, output) = verify(&changed, &instance);
    assert_eq!(code(status), 1, "{output}");
    assert!(output.contains("does not match"), "{output}");

    let edited = copy_backup(&backup, "mycorrhizal-edited.redb", true);
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(manifest_of(&edited)).expect("manifest")).expect("json");
    manifest["schema_version"] = Value::from(1);
    std::fs::write(manifest_of(&edited), serde_json::to_vec(&manifest).expect("json")).expect("write");
    let (status, output) = verify(&edited, &instance);
    assert_eq!(code(status), 1, "{output}");
    assert!(output.contains("signature"), "{output}");

    let bare = copy_backup(&backup, "mycorrhizal-bare.redb", false);
    let (status, output) = verify(&bare, &instance);
    assert_eq!(code(status), 3, "{output}");
    assert!(output.contains("BACKUP_ALLOW_UNSIGNED"), "{output}");
    let lenient = Instance { dir: instance.dir.clone(), env: instance.env.clone() }.with("BACKUP_ALLOW_UNSIGNED", "1");
    let (status, output) = verify(&bare, &lenient);
    assert_eq!(code(status), 0, "{output}");
    assert!(output.contains("NO manifest"), "{output}");
    // A manifest that is there but does not verify fails even when unsigned backups are allowed.
    let (status, _) = verify(&edited, &lenient);
    assert_eq!(code(status), 1);

    let elsewhere = Instance::new().with("JWT_SECRET_KEY", "Zk8rP2wQ5nT1yH7cL4mV9bX3sD6fJ0gE");
    let (status, output) = verify(&backup, &elsewhere);
    assert_eq!(code(status), 1, "{output}");
    let (status, _) = verify(&instance.dir.path().join("no-such.redb"), &instance);
    assert_eq!(code(status), 2);
}

#[tokio::test]
async fn restore_is_refused_while_the_server_runs_and_keeps_what_it_replaces() {
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    new_contact(&ada, "Before", "Backup").await;
    let (status, output) = instance.run_args(&["backup"]);
    assert_eq!(code(status), 0, "{output}");
    let backup = backups_in(&instance.data_dir().join("backups")).pop().expect("a backup");
    let after = new_contact(&ada, "After", "Backup").await["id"].as_u64().expect("id");

    let (status, output) = instance.run_args(&["restore", &backup.display().to_string()]);
    assert_eq!(code(status), 4, "{output}");
    assert!(output.contains("stop it first"), "{output}");
    assert_eq!(ada.get(&format!("/api/v1/contacts/{after}")).await.status(), 200, "nothing was touched");

    assert!(server.terminate().success());
    let (status, output) = instance.run_args(&["restore", &backup.display().to_string()]);
    assert_eq!(code(status), 0, "{output}");
    let replaced = std::fs::read_dir(instance.data_dir())
        .expect("data dir")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("replaced-"))
        .expect("the replaced data is kept aside");
    assert!(replaced.path().join("mycorrhizal.redb").is_file());
    let server = instance.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    assert_eq!(ada.get(&format!("/api/v1/contacts/{after}")).await.status(), 404, "rolled back to the backup");
    let list: Value = ada.get("/api/v1/contacts").await.json().await.expect("list");
    assert_eq!(list["total"], 1, "{list}");
}

/// A restore cut short (a power cut after it moved the data aside) leaves its marker: the server
/// and the other commands refuse the folder, saying what to do, rather than start on an empty or
/// partial database; a restore run to its end removes it.
#[tokio::test]
async fn a_restore_cut_short_keeps_the_folder_closed_until_one_finishes() {
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let kept = new_contact(&ada, "Kept", "Through").await["id"].as_u64().expect("id");
    let (status, output) = instance.run_args(&["backup"]);
    assert_eq!(code(status), 0, "{output}");
    let backup = backups_in(&instance.data_dir().join("backups")).pop().expect("a backup");
    assert!(server.terminate().success());

    // What a restore cut short after moving the database aside leaves behind.
    let marker = instance.data_dir().join(mycorrhizal::ops::fs::RESTORE_MARKER);
    let aside = instance.data_dir().join("replaced-20261207T000000Z");
    std::fs::create_dir_all(&aside).expect("aside");
    std::fs::rename(instance.database(), aside.join("mycorrhizal.redb")).expect("moved aside");
    std::fs::write(&marker, format!("run `mycorrhizal restore {}` again", backup.display())).expect("marker");
    for args in [&["serve"][..], &["backup"][..]] {
        let (status, output) = instance.run_args(args);
        assert_ne!(code(status), 0, "{args:?}: {output}");
        assert!(output.contains("did not finish") && output.contains("restore"), "{args:?}: {output}");
    }
    assert!(!instance.database().exists(), "no empty database was made in its place");

    let (status, output) = instance.run_args(&["restore", &backup.display().to_string()]);
    assert_eq!(code(status), 0, "{output}");
    assert!(!marker.exists(), "a restore run to its end removes the marker");
    let server = instance.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    assert_eq!(ada.get(&format!("/api/v1/contacts/{kept}")).await.status(), 200);
}

/// Copies a stopped instance's data folder (database, redo log, search index, secret; not its
/// control socket) into a new instance with the same environment.
fn copy_instance(template: &Instance) -> Instance {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
            let target = to.join(entry.file_name());
            let kind = entry.file_type().expect("type");
            if kind.is_dir() {
                copy_dir(&entry.path(), &target);
            } else if kind.is_file() {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }
    let mut copy = Instance::new();
    let data_dir = copy.env["DATA_DIR"].clone();
    copy.env = template.env.clone();
    copy.env.insert("DATA_DIR".into(), data_dir);
    copy_dir(&template.data_dir(), &copy.data_dir());
    copy
}

/// A restore killed at any moment (SIGKILL: the process's own power cut, after its syncs) leaves
/// the folder as it was, restored whole, or closed by the marker until a restore runs to its end;
/// never an empty instance or a mix. Twelve kills spread over the length of a whole restore.
#[tokio::test]
async fn a_restore_killed_at_any_moment_leaves_the_old_data_the_backup_or_a_closed_folder() {
    let template = Instance::new().with("JWT_SECRET_KEY", KEY);
    let mut server = template.spawn();
    let ada = server.sign_up("ada").await;
    let kept = new_contact(&ada, "Kept", "Through").await["id"].as_u64().expect("id");
    let (status, output) = template.run_args(&["backup"]);
    assert_eq!(code(status), 0, "{output}");
    let backup = backups_in(&template.data_dir().join("backups")).pop().expect("a backup");
    let backup = backup.display().to_string();
    let later = new_contact(&ada, "Made", "Later").await["id"].as_u64().expect("id");
    assert!(server.terminate().success());

    let timing = copy_instance(&template);
    let started = Instant::now();
    let (status, output) = timing.run_args(&["restore", &backup]);
    assert_eq!(code(status), 0, "{output}");
    let whole = started.elapsed();

    let rounds = 12u32;
    let (mut untouched, mut closed, mut restored) = (0, 0, 0);
    for round in 0..rounds {
        let instance = copy_instance(&template);
        let mut child = instance.start_args(&["restore", &backup]);
        std::thread::sleep(whole * round / rounds);
        let _ = child.kill();
        let _ = child.wait();
        let marker = instance.data_dir().join(mycorrhizal::ops::fs::RESTORE_MARKER);
        let was_closed = marker.exists();
        if was_closed {
            closed += 1;
            let (status, output) = instance.run_args(&["serve"]);
            assert_ne!(code(status), 0, "round {round}: serve opened a folder a restore left half done: {output}");
            assert!(output.contains("did not finish"), "round {round}: {output}");
            let (status, output) = instance.run_args(&["restore", &backup]);
            assert_eq!(code(status), 0, "round {round}: the restore run again: {output}");
            assert!(!marker.exists(), "round {round}");
        }
        let mut server = instance.spawn();
        let ada = server.sign_in("ada", PASSWORD).await;
        assert_eq!(ada.get(&format!("/api/v1/contacts/{kept}")).await.status(), 200, "round {round}");
        let has_later = ada.get(&format!("/api/v1/contacts/{later}")).await.status() == 200;
        assert!(!(was_closed && has_later), "round {round}: a finished restore is the backup's data");
        match (was_closed, has_later) {
            (false, true) => untouched += 1,
            (false, false) => restored += 1,
            _ => {}
        }
        assert!(server.terminate().success(), "round {round}");
    }
    eprintln!("restore killed after 0..{whole:?}: {untouched} untouched, {closed} closed, {restored} restored");
    assert!(closed > 0, "no kill fell inside the restore ({untouched} untouched, {restored} restored)");
}

#[tokio::test]
async fn a_backup_in_the_earlier_redb_frame_form_still_verifies_and_restores() {
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let id = new_contact(&ada, "Ottoline", "Oldform").await["id"].as_u64().expect("id");
    assert!(server.terminate().success());
    // Written as builds before the record stream wrote backups: the database copied into a redb
    // file stored as one LZ4 frame (manifest format 1), then signed.
    let out = instance.dir.path().join("old-form");
    let snapshot = mycorrhizal_engine::snapshot::write_from_file(
        &instance.database(),
        &out,
        backup::LABEL,
        jiff::Timestamp::now(),
        mycorrhizal_engine::snapshot::Encoding::Lz4,
        &mut |_| {},
    )
    .expect("an old-form backup");
    assert!(snapshot.path.display().to_string().ends_with(".redb.lz4"));
    assert_eq!(snapshot.manifest.format, mycorrhizal_engine::snapshot::MANIFEST_FORMAT);
    let config =
        mycorrhizal::config::Config::load(mycorrhizal::config::Env::from_map(instance.env.clone())).expect("config");
    backup::sign_existing(&snapshot.path, &backup::Signer::from_config(&config).expect("signer")).expect("sign");

    let (status, output) = instance.run_args(&["verify", &snapshot.path.display().to_string()]);
    assert_eq!(code(status), 0, "{output}");
    let target = Instance::new().with("JWT_SECRET_KEY", KEY);
    let (status, output) = target.run_args(&["restore", &snapshot.path.display().to_string()]);
    assert_eq!(code(status), 0, "{output}");
    let server = target.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    assert_eq!(ada.get(&format!("/api/v1/contacts/{id}")).await.status(), 200);
    let found: Value = ada.get("/api/v1/search?q=Oldform").await.json().await.expect("search");
    assert_eq!(found["totals"]["contacts"], 1, "{found}");
}

#[tokio::test]
async fn a_backup_is_a_record_stream_that_a_changed_record_cannot_pass() {
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    new_contact(&ada, "Stream", "Keeper").await;
    assert!(server.terminate().success());
    let (status, output) = instance.run_args(&["backup"]);
    assert_eq!(code(status), 0, "{output}");
    let backup = backups_in(&instance.data_dir().join("backups")).pop().expect("a backup");
    assert!(backup.display().to_string().ends_with(".rows.lz4"), "{}", backup.display());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(manifest_of(&backup)).expect("manifest")).expect("json");
    assert_eq!(manifest["format"], "mycorrhizal-snapshot/2", "{manifest}");
    assert_eq!(manifest["encoding"], "rows-lz4", "{manifest}");
    // The file is a standard LZ4 frame of the record stream.
    let mut stream = Vec::new();
    std::io::Read::read_to_end(
        &mut lz4_flex::frame::FrameDecoder::new(std::fs::File::open(&backup).expect("open")),
        &mut stream,
    )
    .expect("decodes");
    let summary = mycorrhizal_engine::check_row_bytes(&stream).expect("a well-formed stream");
    assert_eq!(summary.tables.get("rec:contact"), Some(&1));
    assert_eq!(serde_json::to_value(&summary.tables).expect("json"), manifest["tables"]);
}

#[tokio::test]
async fn the_restore_drill_passes_on_a_good_backup_and_fails_on_an_altered_one() {
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let backups = instance.dir.path().join("backups");
    let instance = instance.with("BACKUP_DIR", &backups.display().to_string());
    let server = instance.spawn();
    let admin = server.sign_up("ada").await;
    new_contact(&admin, "Drill", "Sergeant").await;

    let run: Value =
        admin.post("/api/v1/admin/trigger-restore-drill", serde_json::json!({})).await.json().await.expect("run");
    assert_eq!(run["result"], "skipped", "no backup yet: {run}");
    let run: Value = admin.post("/api/v1/admin/trigger-backup", serde_json::json!({})).await.json().await.expect("run");
    assert_eq!(run["result"], "success", "{run}");
    assert_eq!(run["job_name"], "scheduled_backup");
    let run: Value =
        admin.post("/api/v1/admin/trigger-restore-drill", serde_json::json!({})).await.json().await.expect("run");
    assert_eq!(run["result"], "success", "{run}");

    let backup = backups_in(&backups).pop().expect("a backup");
    let mut bytes = std::fs::read(&backup).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&backup, bytes).expect("write");
    let run: Value =
        admin.post("/api/v1/admin/trigger-restore-drill", serde_json::json!({})).await.json().await.expect("run");
    assert_eq!(run["result"], "failure", "{run}");
    assert!(run["error"].as_str().expect("error").contains("does not match"), "{run}");
    let events: Vec<Value> = server.log_lines();
    let kinds: Vec<&str> =
        events.iter().filter(|l| l["component"] == "backup").filter_map(|l| l["event"].as_str()).collect();
    assert!(kinds.contains(&"backup_completed"), "{kinds:?}");
    assert!(kinds.contains(&"restore_test_completed"), "{kinds:?}");
    assert!(kinds.contains(&"backup_failed"), "{kinds:?}");

    let bob = server.sign_up("bob").await;
    for path in ["/api/v1/admin/trigger-backup", "/api/v1/admin/trigger-restore-drill"] {
        assert_eq!(bob.post(path, serde_json::json!({})).await.status(), 403, "{path} is for admins");
    }
    assert_eq!(bob.get("/api/v1/admin/integrity-check").await.status(), 403);
}

async fn integrity(server: &crate::helpers::TestServer) -> Value {
    let admin = server.sign_in("ada", PASSWORD).await;
    let report = admin.get("/api/v1/admin/integrity-check").await;
    assert_eq!(report.status(), 200);
    report.json().await.expect("report")
}

fn failures(report: &Value) -> Vec<(String, u64)> {
    report["passes"]
        .as_array()
        .expect("passes")
        .iter()
        .flat_map(|p| p["failures"].as_array().cloned().unwrap_or_default())
        .map(|f| (f["kind"].as_str().unwrap_or_default().to_string(), f["count"].as_u64().unwrap_or(0)))
        .collect()
}

#[tokio::test]
async fn the_integrity_check_finds_a_deleted_index_entry() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    for n in 0..3 {
        new_contact(&ada, &format!("Index{n}"), "Entry").await;
    }
    let report = integrity(&server).await;
    assert_eq!(report["status"], "ok", "{report}");
    assert!(server.terminate().success());

    use mycorrhizal::crm::contact::Contact;
    use mycorrhizal_engine::Record;
    mycorrhizal_engine::rewind_for_tests(&instance.database(), Contact::KIND, &["sort_name"], Contact::INDEX_VERSION)
        .expect("remove the sort_name entries");
    let server = instance.spawn();
    let report = integrity(&server).await;
    assert_eq!(report["status"], "failed", "{report}");
    assert!(failures(&report).contains(&("contact.missing_index_entries".into(), 3)), "{report}");
}

#[tokio::test]
async fn the_integrity_check_finds_an_edited_audit_event() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    new_contact(&ada, "Audit", "Trail").await;
    assert!(server.terminate().success());
    mycorrhizal_engine::tamper_for_tests(&instance.database(), ada.id, mycorrhizal_engine::Tamper::Edit)
        .expect("edit an audit event");
    let server = instance.spawn();
    let report = integrity(&server).await;
    assert_eq!(report["status"], "failed", "{report}");
    assert!(failures(&report).contains(&("audit_chain.broken_users".into(), 1)), "{report}");
}

/// The receiver's requests for `event`, waiting (bounded) for the delivery worker to send
/// `expected` of them.
async fn deliveries_of(receiver: &crate::webhooks::Receiver, event: &str, expected: usize) -> Vec<Value> {
    let mut got = Vec::new();
    for _ in 0..100 {
        got =
            receiver.got.lock().expect("lock").iter().map(|r| r.json()).filter(|body| body["event"] == event).collect();
        if got.len() >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    got
}

#[tokio::test]
async fn a_failed_integrity_pass_and_a_failed_drill_reach_the_admins_webhooks() {
    let receiver = crate::webhooks::Receiver::start().await;
    let instance = Instance::new().with("JWT_SECRET_KEY", KEY);
    let backups = instance.dir.path().join("backups");
    let instance = instance.with("BACKUP_DIR", &backups.display().to_string());
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let bob = server.sign_up("bob").await;
    let events = ["db.integrity_check_failed", "db.restore_drill_failed"];
    let listed: Value = bob.get("/api/v1/webhooks/events").await.json().await.expect("events");
    assert!(events.iter().all(|e| listed["events"].as_array().expect("list").contains(&Value::from(*e))), "{listed}");
    // Instance events are for admins: anyone else's subscription is refused, naming the field.
    for event in events {
        let refused = bob.post("/api/v1/webhooks", serde_json::json!({ "url": receiver.url, "events": [event] })).await;
        assert_eq!(refused.status(), 400, "{event}");
        let body: Value = refused.json().await.expect("error");
        assert_eq!(body["details"]["field"], "events", "{body}");
    }
    let made =
        bob.post("/api/v1/webhooks", serde_json::json!({ "url": receiver.url, "events": ["contact.created"] })).await;
    assert_eq!(made.status(), 201);
    let made = made.json::<Value>().await.expect("webhook");
    let widened = bob
        .send(
            reqwest::Method::PATCH,
            &format!("/api/v1/webhooks/{}", made["id"]),
            serde_json::json!({ "events": ["db.restore_drill_failed"] }),
        )
        .await;
    assert_eq!(widened.status(), 400, "an update may not add one either");
    let made = ada.post("/api/v1/webhooks", serde_json::json!({ "url": receiver.url, "events": events })).await;
    assert_eq!(made.status(), 201);
    new_contact(&ada, "Audit", "Trail").await;
    assert!(server.terminate().success());

    mycorrhizal_engine::tamper_for_tests(&instance.database(), ada.id, mycorrhizal_engine::Tamper::Edit)
        .expect("edit an audit event");
    let server = instance.spawn();
    let report = integrity(&server).await;
    assert_eq!(report["status"], "failed", "{report}");
    // One delivery per pass that did not pass, naming it and nothing else.
    let failed: Vec<Value> = report["passes"]
        .as_array()
        .expect("passes")
        .iter()
        .filter(|p| p["status"] != "ok")
        .map(|p| serde_json::json!({ "kind": p["name"] }))
        .collect();
    assert!(failed.contains(&serde_json::json!({ "kind": "audit_chain" })), "{report}");
    let delivered = deliveries_of(&receiver, "db.integrity_check_failed", failed.len()).await;
    let data: Vec<Value> = delivered.iter().map(|d| d["data"].clone()).collect();
    assert_eq!(data, failed, "{delivered:?}");

    let ada = server.sign_in("ada", PASSWORD).await;
    let run: Value = ada.post("/api/v1/admin/trigger-backup", serde_json::json!({})).await.json().await.expect("run");
    assert_eq!(run["result"], "success", "{run}");
    let backup = backups_in(&backups).pop().expect("a backup");
    let mut bytes = std::fs::read(&backup).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&backup, bytes).expect("write");
    let run: Value =
        ada.post("/api/v1/admin/trigger-restore-drill", serde_json::json!({})).await.json().await.expect("run");
    assert_eq!(run["result"], "failure", "{run}");
    let delivered = deliveries_of(&receiver, "db.restore_drill_failed", 1).await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0]["data"], serde_json::json!({}), "nothing beyond the event: {delivered:?}");
    let all = receiver.got.lock().expect("lock").len();
    assert_eq!(all, failed.len() + 1, "bob's webhook heard nothing of the instance");
}

#[tokio::test]
async fn the_healthcheck_command_asks_the_server_on_its_bind_address() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    // The container binds the wildcard address; the check then asks on loopback.
    let probe = Instance { dir: instance.dir.clone(), env: instance.env.clone() }
        .with("BIND_ADDR", &format!("0.0.0.0:{}", server.addr.port()));
    let (status, output) = probe.run_args(&["healthcheck"]);
    assert_eq!(code(status), 0, "{output}");
    assert!(server.terminate().success());
    let (status, output) = probe.run_args(&["healthcheck"]);
    assert_eq!(code(status), 1, "{output}");
    assert!(output.contains("not ready"), "{output}");
}

#[tokio::test]
async fn the_integrity_check_finds_a_missing_attachment() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let contact = new_contact(&ada, "Kept", "Files").await["id"].as_u64().expect("id");
    let mut ids = Vec::new();
    for name in ["a.txt", "b.txt"] {
        let uploaded = crate::attachments::upload(&ada, contact, name, "text/plain", b"some bytes").await;
        assert_eq!(uploaded.status(), 201);
        let uploaded: Value = uploaded.json().await.expect("json");
        ids.push(uploaded["attachment"]["id"].as_u64().expect("attachment id"));
    }
    let first = ids[0];
    assert_eq!(integrity(&server).await["status"], "ok");
    assert!(server.terminate().success());

    let (database, user) = (instance.database(), ada.id);
    let removed = tokio::task::spawn_blocking(move || {
        let engine = crate::helpers::open_engine(&database);
        let blob = mycorrhizal::crm::attachment::ops::blob_name(first);
        let removed =
            engine.user(mycorrhizal_engine::UserId(user)).write(move |tx| tx.delete_blob(&blob)).expect("write");
        engine.shutdown();
        removed
    })
    .await
    .expect("engine");
    assert!(removed, "the attachment's bytes were a blob");

    let server = instance.spawn();
    let report = integrity(&server).await;
    assert_eq!(report["status"], "failed", "{report}");
    assert!(failures(&report).contains(&("attachment.missing".into(), 1)), "{report}");
}

#[tokio::test]
async fn a_storage_sample_is_taken_at_start_for_the_growth_trend() {
    let instance = Instance::new();
    let mut server = instance.spawn();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.log_lines().iter().any(|l| l["event"] == "job_finished" && l["operation"] == "storage_sample") {
        assert!(Instant::now() < deadline, "no storage_sample run");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(server.terminate().success());
    let engine = crate::helpers::open_engine(&instance.database());
    let samples = engine.global().expect("global").list::<mycorrhizal::ops::storage::StorageSample>().expect("list");
    assert_eq!(samples.len(), 1);
    assert!(samples[0].1.database_bytes > 0);
}

/// A backup folder that cannot be written is refused before any snapshot is taken, naming the
/// folder (`backup::create` and `create_offline` check it, so the scheduled backups say the same;
/// a folder mounted into the container keeps the host's owner, and as that user the refusal also
/// names both owners, which a root test run cannot show).
#[tokio::test]
async fn a_backup_into_a_folder_that_cannot_be_written_is_refused_naming_it() {
    let instance = Instance::new();
    let blocker = instance.dir.path().join("not-a-folder");
    std::fs::write(&blocker, b"a file").expect("file");
    let out = blocker.join("backups");
    let (status, output) = instance.run_args(&["backup", "--out", &out.display().to_string()]);
    assert_eq!(code(status), 1, "{output}");
    assert!(output.contains("cannot write into") && output.contains("not-a-folder/backups"), "{output}");
    // The running server is asked, and says the same.
    let server = instance.spawn();
    server.sign_up("ada").await;
    let (status, output) = instance.run_args(&["backup", "--out", &out.display().to_string()]);
    assert!(!output.contains("no database"), "asked the server: {output}");
    assert_eq!(code(status), 1, "{output}");
    assert!(output.contains("cannot write into") && output.contains("not-a-folder/backups"), "{output}");
    drop(server);
}
