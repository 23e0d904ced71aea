//! The operator's console over JSON, in process with a clock the test moves: the timeline's
//! filters, paging and bounds; each subsystem's health folded from its events; the job runs and
//! each job's health (a skipped run changes nothing); failures gathered by cause.

use mycorrhizal::jobs::{self, Ran};
use mycorrhizal::ops::events::{Event, emit};
use mycorrhizal_engine::system::Trigger;
use serde_json::{Value, json};

use crate::sessions::{InProcess, in_process};

async fn get(app: &InProcess, cookie: &str, path: &str) -> (u16, Value) {
    let (status, body, _) = app.call("GET", path, Some(cookie), json!({})).await;
    (status, body)
}

fn field_of(body: &Value) -> &str {
    body["details"]["field"].as_str().unwrap_or_default()
}

async fn backup_event(app: &InProcess, ok: bool) {
    let event = if ok {
        Event::info("backup", "backup_completed").detail(json!({ "operation": "operator_backup" }))
    } else {
        Event::error(
            "backup",
            "backup_failed",
            "cannot write /srv/backups/mycorrhizal-3.rows.lz4: No space left (os error 28)",
        )
        .detail(json!({ "operation": "operator_backup" }))
    };
    emit(&app.state.engine, event).await;
}

#[tokio::test]
async fn the_timeline_filters_pages_and_names_a_bad_bound() {
    let app = in_process(&[]).await;
    let admin = app.signed_in().await;
    backup_event(&app, true).await;
    app.advance(1);
    backup_event(&app, false).await;
    app.advance(1);
    emit(&app.state.engine, Event::info("notification", "notification_sent").detail(json!({ "channel": "ntfy" })))
        .await;

    let (status, page) = get(&app, &admin, "/api/v1/admin/system-events?component=backup").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 2);
    let events = page["system_events"].as_array().unwrap();
    assert_eq!(events[0]["event_type"], "backup_failed", "newest first");
    assert_eq!(events[0]["result"], "failure");
    assert_eq!(events[0]["severity"], "error");
    assert_eq!(events[0]["operation"], "operator_backup");
    assert_eq!(events[1]["result"], "success");

    let (_, errors) = get(&app, &admin, "/api/v1/admin/system-events?severity=error&component=backup").await;
    assert_eq!(errors["total"], 1);
    let (_, one) = get(&app, &admin, "/api/v1/admin/system-events?limit=1").await;
    assert_eq!(one["system_events"].as_array().unwrap().len(), 1);
    assert!(one["total"].as_u64().unwrap() >= 3, "the total counts past the page: {one}");
    let id = events[1]["id"].as_u64().unwrap();
    let (_, by_id) = get(&app, &admin, &format!("/api/v1/admin/system-events?ids={id},999999")).await;
    assert_eq!(by_id["system_events"][0]["event_type"], "backup_completed");
    assert_eq!(by_id["total"], 1);
    let since = events[0]["occurred_at"].as_str().unwrap();
    let (_, recent) = get(&app, &admin, &format!("/api/v1/admin/system-events?component=backup&since={since}")).await;
    assert_eq!(recent["total"], 1, "since is inclusive and bounds the count");

    for (query, field) in [
        ("severity=fatal", "severity"),
        ("since=yesterday", "since"),
        ("until=2026-13-01T00:00:00Z", "until"),
        ("limit=501", "limit"),
        ("limit=0", "limit"),
        ("ids=1,x", "ids"),
    ] {
        let (status, body) = get(&app, &admin, &format!("/api/v1/admin/system-events?{query}")).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("INVALID_INPUT")), "{query}: {body}");
        assert_eq!(field_of(&body), field, "{query}");
    }
}

#[tokio::test]
async fn a_subsystem_fails_with_a_streak_and_heals_on_success() {
    let app = in_process(&[]).await;
    let admin = app.signed_in().await;
    let health = |body: &Value, name: &str| -> Value {
        body["subsystems"].as_array().unwrap().iter().find(|s| s["subsystem"] == name).cloned().unwrap()
    };
    let (_, body) = get(&app, &admin, "/api/v1/admin/subsystem-health").await;
    let order: Vec<&str> =
        body["subsystems"].as_array().unwrap().iter().map(|s| s["subsystem"].as_str().unwrap()).collect();
    assert_eq!(order, ["contact_sync", "calendar_sync", "notification", "backup", "scheduler", "webhook"]);
    assert_eq!(health(&body, "backup")["status"], "unknown");

    backup_event(&app, true).await;
    app.advance(1);
    backup_event(&app, false).await;
    let (_, first) = get(&app, &admin, "/api/v1/admin/subsystem-health").await;
    let first_failure = health(&first, "backup")["last_failure_at"].clone();
    app.advance(1);
    backup_event(&app, false).await;
    let (_, body) = get(&app, &admin, "/api/v1/admin/subsystem-health").await;
    let backup = health(&body, "backup");
    assert_eq!(backup["status"], "failing");
    assert_eq!(backup["consecutive_failures"], 2);
    assert_eq!(backup["incident_first_failure_at"], first_failure, "the incident began at the first failure");
    assert!(backup["last_error"].as_str().unwrap().contains("No space left"));
    assert_eq!(backup["last_attempt_at"], backup["last_failure_at"]);

    app.advance(1);
    backup_event(&app, true).await;
    let (_, body) = get(&app, &admin, "/api/v1/admin/subsystem-health").await;
    let backup = health(&body, "backup");
    assert_eq!(backup["status"], "healthy");
    assert_eq!(backup["consecutive_failures"], 0);
    assert_eq!(backup["incident_first_failure_at"], Value::Null, "the incident closed");
    assert_eq!(backup["last_error"], "");

    // A subsystem that reports only failures never heals by itself.
    emit(&app.state.engine, Event::error("webhook", "integration_failed", "receiver answered 500")).await;
    let (_, body) = get(&app, &admin, "/api/v1/admin/subsystem-health").await;
    assert_eq!(health(&body, "webhook")["status"], "failing");
}

#[tokio::test]
async fn job_health_ignores_skipped_runs_and_averages_the_last_twenty() {
    let app = in_process(&[]).await;
    app.signed_in().await;
    let run = |outcome: Result<Ran, &'static str>| {
        let state = app.state.clone();
        async move {
            jobs::runner::record(&state, jobs::PURGE, Trigger::Scheduled, async move {
                outcome.map_err(mycorrhizal::crm::Error::internal)
            })
            .await
        }
    };
    for _ in 0..22 {
        run(Ok(Ran::Items(1))).await;
        app.advance(1);
    }
    run(Err("disk went away")).await;
    app.advance(1);
    run(Ok(Ran::Skipped("nothing to do".into()))).await;
    app.advance(1);
    run(Err("disk went away again")).await;
    let admin = app.sign_in_again().await;

    let (status, body) = get(&app, &admin, "/api/v1/admin/job-runs/health").await;
    assert_eq!(status, 200, "{body}");
    let purge = body["jobs"].as_array().unwrap().iter().find(|j| j["job_name"] == jobs::PURGE).unwrap().clone();
    assert_eq!(purge["status"], "failing");
    assert_eq!(purge["consecutive_failures"], 2, "the skipped run between the failures changes nothing");
    assert_eq!(purge["last_error"], "internal: disk went away again");
    assert_eq!(purge["last_result"], "failure");
    assert_eq!(purge["duration_sample_size"], 20);
    assert!(purge["avg_duration_ms"].is_u64() && purge["max_duration_ms"].is_u64());
    let listed: Vec<&str> = body["jobs"].as_array().unwrap().iter().map(|j| j["job_name"].as_str().unwrap()).collect();
    assert_eq!(listed, jobs::names(), "every job of the table, in its order");
    let never = body["jobs"].as_array().unwrap().iter().find(|j| j["job_name"] == jobs::RESTORE_DRILL).unwrap();
    assert_eq!(never["status"], "unknown");

    let (_, page) = get(&app, &admin, "/api/v1/admin/job-runs?job_name=retention_purge&result=failure").await;
    assert_eq!(page["total"], 2);
    assert_eq!(page["job_runs"][0]["error"], "internal: disk went away again");
    let (_, page) = get(&app, &admin, "/api/v1/admin/job-runs?limit=5").await;
    assert_eq!(page["job_runs"].as_array().unwrap().len(), 5);
    assert_eq!(page["total"], 25);
    let (status, body) = get(&app, &admin, "/api/v1/admin/job-runs?result=broken").await;
    assert_eq!((status, field_of(&body)), (400, "result"));
}

#[tokio::test]
async fn failures_gather_by_cause_and_cap_their_ids() {
    let app = in_process(&[]).await;
    app.signed_in().await;
    for attempt in 0..502 {
        let error = format!("receiver answered 50{} after {attempt} attempts", attempt % 3);
        emit(&app.state.engine, Event::error("webhook", "integration_failed", error)).await;
    }
    emit(&app.state.engine, Event::error("notification", "notification_failed", "ntfy: connection refused")).await;
    app.advance(30);
    emit(&app.state.engine, Event::error("notification", "notification_failed", "gotify: timed out")).await;
    let admin = app.sign_in_again().await;

    let (status, body) = get(&app, &admin, "/api/v1/admin/error-aggregation").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["window_hours"], 24);
    assert_eq!(body["total_events"], 1, "only the failure inside the last day");
    let (_, body) = get(&app, &admin, "/api/v1/admin/error-aggregation?window_hours=168").await;
    assert_eq!(body["total_events"], 504);
    let buckets = body["buckets"].as_array().unwrap();
    assert_eq!(buckets[0]["component"], "webhook");
    assert_eq!(buckets[0]["count"], 502, "numbers in the error do not split a cause");
    assert_eq!(buckets[0]["recurring"], true);
    assert_eq!(buckets[0]["event_ids"].as_array().unwrap().len(), 500);
    assert_eq!(buckets[0]["event_ids_truncated"], true);
    assert_eq!(buckets[0]["event_types"], json!(["integration_failed"]));
    let single = buckets.iter().find(|b| b["sample_error"] == "gotify: timed out").unwrap();
    assert_eq!((single["count"].as_u64(), single["recurring"].as_bool()), (Some(1), Some(false)));
    for bad in ["0", "169", "a%20day"] {
        let (status, body) = get(&app, &admin, &format!("/api/v1/admin/error-aggregation?window_hours={bad}")).await;
        assert_eq!((status, field_of(&body)), (400, "window_hours"), "{bad}");
    }
}

#[tokio::test]
async fn only_an_admin_reads_the_console() {
    let app = in_process(&[]).await;
    app.signed_in().await;
    let register = json!({ "username": "bob", "email": "bob@example.org", "password": crate::helpers::PASSWORD });
    assert_eq!(app.call("POST", "/api/v1/register", None, register).await.0, 201);
    let (_, _, bob) = app
        .call("POST", "/api/v1/login", None, json!({ "identifier": "bob", "password": crate::helpers::PASSWORD }))
        .await;
    let bob = bob.unwrap();
    for path in [
        "/api/v1/admin/system-events",
        "/api/v1/admin/subsystem-health",
        "/api/v1/admin/job-runs",
        "/api/v1/admin/job-runs/health",
        "/api/v1/admin/error-aggregation",
    ] {
        assert_eq!(get(&app, &bob, path).await.0, 403, "{path}");
        assert_eq!(app.call("GET", path, None, json!({})).await.0, 401, "{path}");
    }
}

#[tokio::test]
async fn the_system_status_answers_every_facet() {
    let app = in_process(&[]).await;
    let admin = app.signed_in().await;
    jobs::run(&app.state, jobs::STORAGE_SAMPLE, Trigger::Manual).await.unwrap();
    let (status, body) = get(&app, &admin, "/api/v1/admin/system-status").await;
    assert_eq!(status, 200, "{body}");
    for facet in ["overall", "health", "version", "uptime", "migration", "config", "database", "storage", "update"] {
        assert!(body.get(facet).is_some(), "{facet} missing: {body}");
    }
    assert_eq!(body["health"]["database"], "ok");
    assert_eq!(body["health"]["migrations"], "ok");
    assert_eq!(body["migration"]["pending"], 0);
    assert_eq!(body["migration"]["applied"], body["migration"]["latest"]);
    assert_eq!(body["version"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(body["storage"]["database_bytes"].as_u64().unwrap() > 0);
    assert!(body["storage"]["filesystem"]["total_bytes"].as_u64().unwrap() > 0);
    assert!(!body["storage"]["directories"].as_array().unwrap().is_empty());
    assert!(["ok", "warning", "critical"].contains(&body["storage"]["threshold"].as_str().unwrap()));
    assert_eq!(body["storage"]["growth_7d_bytes"], Value::Null, "no sample a week old yet");
    assert_eq!(body["update"]["enabled"], false);
    assert_eq!(body["config"]["features"]["metrics"], false);
    let fields: Vec<&str> =
        body["config"]["validation"].as_array().unwrap().iter().map(|n| n["field"].as_str().unwrap()).collect();
    assert!(fields.contains(&"BACKUP_DIR"), "{fields:?}");
    let text = body.to_string();
    assert!(!text.contains("3f9c1a7be2d04c88"), "no configuration value is echoed");
    let jobs_listed = body["health"]["background_jobs"]["jobs"].as_array().unwrap();
    assert!(jobs_listed.iter().any(|j| j["name"] == jobs::STORAGE_SAMPLE && j["last_run_at"].is_string()));
}

/// A configured provider that does not answer: the diagnostics name it as an error within the
/// probe's bound, `/health` turns `degraded` and says which, and the checklist holds the
/// spec's checks.
#[tokio::test]
async fn an_unreachable_integration_is_an_error_in_diagnostics_and_degrades_health() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let provider = format!("http://127.0.0.1:{port}");
    let provider: &'static str = Box::leak(provider.into_boxed_str());
    let app = in_process(&[
        ("OIDC_PROVIDER_URL", provider),
        ("OIDC_CLIENT_ID", "mycorrhizal"),
        ("OIDC_CLIENT_SECRET", "s3cret-value-never-shown"),
        ("FRONTEND_URL", "http://localhost:7300"),
    ])
    .await;
    let admin = app.signed_in().await;
    let started = std::time::Instant::now();
    let (status, body) = get(&app, &admin, "/api/v1/admin/diagnostics").await;
    assert_eq!(status, 200, "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the sweep is bounded");
    let checks = body["checks"].as_array().unwrap();
    let named = |name: &str| checks.iter().find(|c| c["name"] == name).cloned();
    let oidc = named("integration_oidc").expect("the provider is checked");
    assert_eq!(oidc["status"], "error", "{oidc}");
    for name in ["config", "database", "migrations", "filesystem", "backup", "disk_space", "background_jobs", "version"]
    {
        assert!(named(name).is_some(), "{name} missing: {body}");
    }
    assert_eq!(named("backup").unwrap()["status"], "warning", "no backup yet");
    assert_eq!(body["summary"]["status"], "error");
    assert!(!body.to_string().contains(provider) && !body.to_string().contains("s3cret"), "values are never echoed");

    // /health answers at once from the last probe (refreshed in the background), so it turns
    // degraded within a probe's time, and names nothing.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let health = loop {
        let (status, health, _) = app.call("GET", "/health", None, json!({})).await;
        assert_eq!(status, 200, "degraded is still 200");
        if health["status"] == "degraded" || std::time::Instant::now() > deadline {
            break health;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(!health.to_string().contains("oidc"), "{health}");
    let (_, status) = get(&app, &admin, "/api/v1/admin/system-status").await;
    assert_eq!(status["health"]["integrations"]["oidc"]["status"], "unhealthy", "{status}");
}

/// The release check refuses a private or loopback address whatever the configuration, and
/// says so quietly: the run is skipped, the status keeps no version.
#[tokio::test]
async fn the_release_check_never_reaches_a_private_address() {
    let app =
        in_process(&[("UPDATE_CHECK_ENABLED", "true"), ("UPDATE_CHECK_URL", "http://127.0.0.1:9/releases/latest")])
            .await;
    let admin = app.signed_in().await;
    let run = jobs::run(&app.state, jobs::RELEASE_CHECK, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, mycorrhizal_engine::system::JobResult::Skipped, "{:?}", run.error);
    assert!(run.error.as_deref().unwrap().contains("private"), "{:?}", run.error);
    let (_, body) = get(&app, &admin, "/api/v1/admin/system-status").await;
    assert_eq!(body["update"]["enabled"], true);
    assert_eq!(body["update"]["latest"], Value::Null);
}
