//! The real binary migrates an older database only behind a verified snapshot.

use mycorrhizal_engine::{migrate, snapshot};

use crate::helpers::{Instance, open_engine};

/// Starts and stops once to create a database, then rewinds its schema version so the next
/// start finds a pending step, as after an upgrade.
fn older_database(instance: &Instance) {
    let mut server = instance.spawn();
    assert!(server.terminate().success());
    migrate::rewind_version_for_tests(&instance.database(), 0).unwrap();
}

#[tokio::test]
async fn a_pending_migration_runs_after_a_verified_snapshot() {
    let instance = Instance::new();
    older_database(&instance);
    let mut server = instance.spawn();
    assert_eq!(server.get("/health/ready").await.status(), 200);
    assert!(server.terminate().success());

    let dir = instance.data_dir().join("pre-migration");
    let snapshots: Vec<_> = std::fs::read_dir(&dir)
        .expect("pre-migration folder beside the database")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "redb"))
        .collect();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    let manifest = snapshot::verify(&snapshots[0]).expect("the snapshot verifies");
    assert_eq!(manifest.schema_version, 0, "taken before the step ran");
    assert!(manifest.tables.get("sys:system_events").copied().unwrap_or(0) >= 2, "it holds the earlier timeline");

    let engine = open_engine(&instance.database());
    assert_eq!(engine.schema_version(), mycorrhizal::crm::schema_version());
    let events = engine.system_events(100, |_| true).unwrap();
    let snapshot_event = events.iter().find(|e| e.event_type == "backup_completed").expect("backup_completed recorded");
    assert_eq!(snapshot_event.component, "migration", "does not count as a routine backup");
    let completed = events
        .iter()
        .find(|e| {
            e.event_type == "migration_completed" && e.detail.as_deref().unwrap_or("").contains("\"from_version\":0")
        })
        .expect("migration_completed");
    assert!(
        completed
            .detail
            .as_deref()
            .unwrap()
            .contains(&format!("\"to_version\":{}", mycorrhizal::crm::schema_version()))
    );
}

#[test]
fn an_unwritable_snapshot_target_refuses_to_start() {
    let instance = Instance::new();
    older_database(&instance);
    let blocker = instance.dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"file").unwrap();
    let target = blocker.join("snapshots");
    let plain_env = instance.env.clone();
    let instance = Instance {
        env: {
            let mut e = instance.env.clone();
            e.insert("MYCORRHIZAL_PRE_MIGRATION_BACKUP_DIR".into(), target.display().to_string());
            e
        },
        dir: instance.dir,
    };
    let (status, output) = instance.run_to_exit();
    assert!(!status.success());
    assert!(output.contains("ErrPreMigrationBackupFailed"), "{output}");
    assert!(!output.contains("\"event\":\"listening\""), "never listened");
    let engine = open_engine_without_migrating(&instance.database());
    assert_eq!(engine, 0, "the database was not migrated");

    // Fixed, the next start migrates, and the failed one is in the timeline from then on.
    let failed_at = jiff::Timestamp::now();
    let instance = Instance { env: plain_env, dir: instance.dir };
    let mut server = instance.spawn();
    assert!(server.terminate().success());
    let engine = open_engine(&instance.database());
    let failed = engine.system_events(100, |e| e.event_type == "migration_failed").unwrap();
    assert_eq!(failed.len(), 1, "recorded once");
    assert_eq!(failed[0].component, "migration");
    assert!(failed[0].error.as_deref().unwrap().contains("ErrPreMigrationBackupFailed"), "{:?}", failed[0].error);
    assert!(failed[0].occurred_at <= failed_at, "at the time it failed, not when it was recorded");
    assert!(!instance.data_dir().join("migration-failed.json").exists(), "told once");
}

fn open_engine_without_migrating(path: &std::path::Path) -> u32 {
    migrate::read_version(path).unwrap()
}

/// Contacts written before the `favorite` and `phone` indexes existed (their entries removed, the
/// contact index version rewound): the next start backfills them behind a verified snapshot.
#[tokio::test]
async fn contacts_written_before_the_favourite_and_phone_indexes_are_backfilled_at_start() {
    use mycorrhizal::crm::contact::{Contact, INDEX_FAVORITE, INDEX_PHONE, phone_key};
    use mycorrhizal_engine::{Record, UserId, rewind_for_tests};
    use serde_json::json;

    let instance = Instance::new();
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let body = json!({ "firstname": "Fay", "lastname": "Vourite", "phone": "+44 20 7946 0958" });
    let created: serde_json::Value = ada.post("/api/v1/contacts", body).await.json().await.unwrap();
    let c = created["contact"]["id"].as_u64().unwrap();
    ada.post(&format!("/api/v1/contacts/{c}/favorite"), json!({})).await;
    assert!(server.terminate().success());
    rewind_for_tests(&instance.database(), Contact::KIND, &[INDEX_FAVORITE, INDEX_PHONE], 0).unwrap();
    let key = phone_key("020 7946 0958").unwrap();
    {
        let engine = open_engine(&instance.database());
        let view = engine.user(UserId(ada.id)).view().unwrap();
        assert!(view.find::<Contact>(INDEX_PHONE, &key).unwrap().is_empty(), "as an older build left it");
    }

    let mut server = instance.spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let dashboard: serde_json::Value = ada.get("/api/v1/dashboard").await.json().await.unwrap();
    assert_eq!(dashboard["favorites"][0]["id"], c, "{dashboard}");
    assert!(server.terminate().success());

    let engine = open_engine(&instance.database());
    assert_eq!(engine.user(UserId(ada.id)).find::<Contact>(INDEX_PHONE, &key).unwrap(), vec![c]);
    let snapshots: Vec<_> = std::fs::read_dir(instance.data_dir().join("pre-migration"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name().to_string_lossy().starts_with("pre-reindex")
                && e.path().extension().is_some_and(|x| x == "redb")
        })
        .collect();
    assert_eq!(snapshots.len(), 1, "a verified snapshot first");
    let events = engine.system_events(100, |e| e.event_type == "index_backfilled").unwrap();
    assert_eq!(events.len(), 1);
    assert!(events[0].detail.as_deref().unwrap_or("").contains("\"kind\":\"contact\""), "{:?}", events[0].detail);
}

/// Activities stored before they carried a calendar resource name (schema 4) read after the
/// step-5 migration, with an empty name (served as `activity-<id>.ics`, as before), and after
/// step 7 without a client's iCalendar object.
#[test]
fn stored_activities_of_the_old_shape_gain_an_empty_calendar_name() {
    use mycorrhizal_engine::{Engine, Kind, Options, Record, UserId, kind};
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
    struct OldShape {
        uuid: String,
        title: String,
        description: String,
        location: String,
        date: jiff::Timestamp,
        contact_ids: Vec<u64>,
        kind: String,
        external_ref: String,
    }
    impl Record for OldShape {
        const KIND: Kind = kind!("activity", soft_delete);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let mut before = mycorrhizal::crm::migrations();
    before.retain(|m| m.version <= 4);
    let (engine, _) = Engine::open(&path, Options { migrations: before, ..Options::default() }).expect("open");
    assert_eq!(engine.schema_version(), 4);
    let stored = OldShape {
        uuid: "u-1".into(),
        title: "Lunch".into(),
        description: "d".into(),
        location: "Lyon".into(),
        date: "2026-03-04T12:00:00Z".parse().expect("instant"),
        contact_ids: vec![],
        kind: "meal".into(),
        external_ref: "x".into(),
    };
    let id = engine.user(UserId(1)).write(move |tx| Ok(tx.create(stored.clone())?.id)).expect("write");
    engine.shutdown();
    drop(engine);

    let options = Options {
        migrations: mycorrhizal::crm::migrations(),
        pre_migration_dir: Some(dir.path().join("pre")),
        ..Options::default()
    };
    let (engine, report) = Engine::open(&path, options).expect("reopen");
    assert_eq!((report.from, report.to), (4, mycorrhizal::crm::schema_version()));
    let row =
        engine.user(UserId(1)).view().expect("view").get::<mycorrhizal::crm::activity::Activity>(id).expect("row");
    assert_eq!((row.body.uuid.as_str(), row.body.title.as_str(), row.body.kind.as_str()), ("u-1", "Lunch", "meal"));
    assert_eq!(
        (row.body.location.as_str(), row.body.external_ref.as_str(), row.body.dav_name.as_str()),
        ("Lyon", "x", "")
    );
    assert_eq!(row.body.ical, "", "and, through step 7, no calendar client's object");
    engine.shutdown();
}

/// Relationship edges stored before they carried a status (schema 5) read after the step-6
/// migration as the user's own confirmed edges.
#[test]
fn stored_edges_of_the_old_shape_become_confirmed_edges_of_the_user() {
    use mycorrhizal_engine::{Engine, Kind, Options, Record, UserId, kind};
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
    struct OldShape {
        source: u64,
        target: u64,
        kind: String,
        sensitivity: String,
        note: String,
    }
    impl Record for OldShape {
        const KIND: Kind = kind!("relationship", hard_delete);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db.redb");
    let mut before = mycorrhizal::crm::migrations();
    before.retain(|m| m.version <= 5);
    let (engine, _) = Engine::open(&path, Options { migrations: before, ..Options::default() }).expect("open");
    assert_eq!(engine.schema_version(), 5);
    let stored = OldShape {
        source: 1,
        target: 2,
        kind: "sibling_of".into(),
        sensitivity: "private".into(),
        note: "twins".into(),
    };
    let id = engine.user(UserId(1)).write(move |tx| Ok(tx.create(stored.clone())?.id)).expect("write");
    engine.shutdown();
    drop(engine);

    let options = Options {
        migrations: mycorrhizal::crm::migrations(),
        pre_migration_dir: Some(dir.path().join("pre")),
        ..Options::default()
    };
    let (engine, report) = Engine::open(&path, options).expect("reopen");
    assert_eq!((report.from, report.to), (5, mycorrhizal::crm::schema_version()));
    let row = engine
        .user(UserId(1))
        .view()
        .expect("view")
        .get::<mycorrhizal::crm::relationship::Relationship>(id)
        .expect("row");
    let r = &row.body;
    assert_eq!(
        (r.source, r.target, r.kind.as_str(), r.sensitivity.as_str(), r.note.as_str()),
        (1, 2, "sibling_of", "private", "twins")
    );
    assert_eq!(
        (r.status.as_str(), r.origin.as_str(), r.confidence, r.metadata.as_str()),
        ("confirmed", "user-confirmed", 1.0, "{}")
    );
    engine.shutdown();
}
