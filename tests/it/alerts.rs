//! Alerting, in process with a clock the test moves and the outbox stepped by hand, against
//! loopback receivers: an admin's webhook subscribed to the alert events and the admin's ntfy
//! topic, and a non-admin's ntfy topic that must get nothing. Each condition is made true and
//! false for real where the machine allows: a backup into a folder that cannot be made, a
//! webhook receiver that fails, a job left past its interval, disk thresholds below the usage,
//! a backup older than its limit, a password spray.

use jiff::SignedDuration;
use mycorrhizal::jobs;
use mycorrhizal::notify::worker::deliver_once;
use mycorrhizal_engine::Clock;
use mycorrhizal_engine::system::{JobResult, Trigger};
use serde_json::{Value, json};

use crate::channels::{sign_in, sign_up};
use crate::helpers::PASSWORD;
use crate::sessions::{InProcess, in_process};
use crate::webhooks::{Receiver, Reply};

/// Every condition but the ones a test turns on stays quiet whatever the machine's disk.
const QUIET: [(&str, &str); 5] = [
    ("ALERT_DISK_USAGE_PERCENT", "0"),
    ("ALERT_JOB_STOPPED_ENABLED", "false"),
    ("ALERT_NOTIFY_FAILURE_THRESHOLD", "0"),
    ("ALERT_INCIDENT_QUIET_HOURS", "0"),
    ("ALERT_BACKUP_MAX_AGE_HOURS", "87600"),
];

fn with(quiet_but: &[&str], extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut vars: Vec<(&str, &str)> = QUIET.iter().filter(|(k, _)| !quiet_but.contains(k)).copied().collect();
    vars.extend_from_slice(extra);
    vars
}

struct Watchers {
    webhook: Receiver,
    admin_ntfy: Receiver,
    member_ntfy: Receiver,
}

fn base(receiver: &Receiver) -> String {
    receiver.url.trim_end_matches("/hook").to_string()
}

/// Ada (the first account: an admin) subscribes a webhook to both alert events and sets up
/// ntfy; Bob (not an admin) sets up ntfy too.
async fn watchers(app: &InProcess) -> Watchers {
    let w = Watchers {
        webhook: Receiver::start().await,
        admin_ntfy: Receiver::start().await,
        member_ntfy: Receiver::start().await,
    };
    let ada = sign_up(app, "ada").await;
    let bob = sign_up(app, "bob").await;
    let hook = json!({ "url": w.webhook.url, "events": ["alert.raised", "alert.cleared"] });
    let (status, body, _) = app.call("POST", "/api/v1/webhooks", Some(&ada), hook).await;
    assert_eq!(status, 201, "{body}");
    // Alerts are instance events: a member's webhook may not subscribe to them.
    let refused = json!({ "url": w.member_ntfy.url, "events": ["alert.raised"] });
    let (status, body, _) = app.call("POST", "/api/v1/webhooks", Some(&bob), refused).await;
    assert_eq!((status, body["details"]["field"].as_str()), (400, Some("events")), "{body}");
    for (cookie, receiver) in [(&ada, &w.admin_ntfy), (&bob, &w.member_ntfy)] {
        let topic = json!({ "url": base(receiver), "topic": "alerts" });
        let (status, body, _) = app.call("PUT", "/api/v1/notifications/channels/ntfy", Some(cookie), topic).await;
        assert_eq!(status, 200, "{body}");
    }
    w
}

async fn evaluate(app: &InProcess) {
    let run = jobs::run(&app.state, jobs::ALERTS, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);
}

/// Steps the outbox until nothing is due.
async fn deliver(app: &InProcess) {
    while deliver_once(&app.state.notify).await > 0 {}
}

fn advance(app: &InProcess, hours: i64) {
    app.clock.set(app.clock.now().checked_add(SignedDuration::from_hours(hours)).unwrap());
}

/// `(event, condition)` of the alert deliveries the webhook receiver answered 2xx to.
fn told_by_webhook(w: &Watchers) -> Vec<(String, String)> {
    let answered_ok = w.webhook.received();
    answered_ok
        .iter()
        .map(|r| r.json())
        .filter(|e| e["event"].as_str().is_some_and(|e| e.starts_with("alert.")))
        .map(|e| (e["event"].as_str().unwrap().to_string(), e["data"]["condition"].as_str().unwrap().to_string()))
        .collect()
}

/// The titles the admin's ntfy got.
fn titles(receiver: &Receiver) -> Vec<String> {
    receiver.received().iter().map(|r| r.json()["title"].as_str().unwrap_or("").to_string()).collect()
}

async fn alert_state(app: &InProcess, condition: &str) -> Value {
    let list = mycorrhizal::alerts::list(&app.state.engine, &app.state.config).await.unwrap();
    let view = list.alerts.into_iter().find(|a| a.condition == condition).unwrap();
    serde_json::to_value(view).unwrap()
}

#[tokio::test]
async fn a_failing_backup_is_raised_once_and_cleared_once_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, b"a file where the backup folder's parent should be").unwrap();
    let backups = blocked.join("backups").display().to_string();
    let backups: &'static str = Box::leak(backups.into_boxed_str());
    let app = in_process(&with(&[], &[("BACKUP_DIR", backups)])).await;
    let w = watchers(&app).await;

    let run = jobs::run(&app.state, jobs::BACKUP, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Failure, "the folder cannot be made");
    evaluate(&app).await;
    deliver(&app).await;
    assert_eq!(told_by_webhook(&w), [("alert.raised".to_string(), "backup".to_string())]);
    let data = &w.webhook.received()[0].json()["data"];
    assert_eq!(data["state"], "alerting");
    assert_eq!(data["failures"], 1);
    assert!(data["detail"].as_str().unwrap().contains("failed 1 time"), "{data}");
    assert_eq!(titles(&w.admin_ntfy), ["🔴 Mycorrhizal alert: backup"]);
    assert!(w.member_ntfy.received().is_empty(), "a non-admin's channels get nothing");
    assert_eq!(alert_state(&app, "backup").await["state"], "alerting");

    // Still failing: nothing more is told.
    jobs::run(&app.state, jobs::BACKUP, Trigger::Manual).await.unwrap();
    evaluate(&app).await;
    deliver(&app).await;
    assert_eq!(told_by_webhook(&w).len(), 1);
    assert_eq!(titles(&w.admin_ntfy).len(), 1);
    assert_eq!(alert_state(&app, "backup").await["failures"], 2, "the state follows the streak");

    // The operator fixes the folder: the next backup succeeds and the recovery is told once.
    std::fs::remove_file(&blocked).unwrap();
    let run = jobs::run(&app.state, jobs::BACKUP, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);
    evaluate(&app).await;
    deliver(&app).await;
    // Told and accepted: the next evaluation tells nothing more.
    evaluate(&app).await;
    deliver(&app).await;
    assert_eq!(
        told_by_webhook(&w),
        [("alert.raised".to_string(), "backup".to_string()), ("alert.cleared".to_string(), "backup".to_string())]
    );
    assert_eq!(titles(&w.admin_ntfy), ["🔴 Mycorrhizal alert: backup", "🟢 Mycorrhizal recovered: backup"]);
    assert!(w.member_ntfy.received().is_empty());
    let state = alert_state(&app, "backup").await;
    assert_eq!((state["state"].as_str(), state["pending_notify"].as_bool()), (Some("ok"), Some(false)));
    let history = mycorrhizal::alerts::list(&app.state.engine, &app.state.config).await.unwrap().history;
    let changes: Vec<(&str, &str)> = history.iter().map(|t| (t.condition.as_str(), t.change.as_str())).collect();
    assert_eq!(changes, [("backup", "cleared"), ("backup", "raised")], "newest first");
}

#[tokio::test]
async fn with_every_path_down_the_raise_is_told_again_at_the_next_evaluation_and_arrives_once() {
    let app = in_process(&with(&[], &[("ALERT_DISK_USAGE_PERCENT", "1")])).await;
    let w = watchers(&app).await;
    // Both receivers fail every attempt the outbox makes (eight, over about eleven hours).
    let down = vec![Reply::Status(503); 8];
    w.webhook.then(&down);
    w.admin_ntfy.then(&down);
    evaluate(&app).await;
    for _ in 0..10 {
        deliver(&app).await;
        advance(&app, 7);
    }
    let failed = |r: &Receiver| r.received().len();
    assert_eq!((failed(&w.webhook), failed(&w.admin_ntfy)), (8, 8), "every attempt was made and failed");
    assert_eq!(alert_state(&app, "disk_space").await["pending_notify"], true, "no path accepted the raise");

    // The receivers are back: the next evaluation tells the raise again, and it arrives once.
    evaluate(&app).await;
    deliver(&app).await;
    evaluate(&app).await;
    deliver(&app).await;
    assert_eq!(failed(&w.webhook), 9);
    assert_eq!(failed(&w.admin_ntfy), 9);
    let last = w.webhook.received().pop().unwrap().json();
    assert_eq!(
        (last["event"].as_str(), last["data"]["condition"].as_str()),
        (Some("alert.raised"), Some("disk_space"))
    );
    assert_eq!(alert_state(&app, "disk_space").await["pending_notify"], false);
    assert!(w.member_ntfy.received().is_empty());
}

#[tokio::test]
async fn disk_space_recovers_five_points_below_its_threshold() {
    let app = in_process(&with(&[], &[])).await;
    let used = mycorrhizal::ops::fs::usage_percent(&app.state.config.data_dir).expect("a filesystem") as u8;
    let at = |threshold: u8| {
        let mut config = app.state.config.as_ref().clone();
        config.alerts.disk_usage_percent = threshold;
        config
    };
    let evaluate_with = |config: mycorrhizal::config::Config| {
        let state = app.state.clone();
        async move {
            let inputs =
                mycorrhizal::alerts::Inputs { config: &config, ..mycorrhizal::alerts::Inputs::of(&state, Vec::new()) };
            mycorrhizal::alerts::evaluate(inputs).await.unwrap()
        }
    };
    let threshold = used.max(6);
    let done = evaluate_with(at(threshold)).await;
    assert_eq!(done.raised, ["disk_space"], "usage {used}% at a threshold of {threshold}%");
    // Below the threshold but within five points: still alerting.
    let done = evaluate_with(at(threshold + 3)).await;
    assert!(done.cleared.is_empty() && done.raised.is_empty(), "{done:?}");
    let done = evaluate_with(at(threshold + 6)).await;
    assert_eq!(done.cleared, ["disk_space"]);
}

#[tokio::test]
async fn a_job_left_past_its_interval_raises_job_stopped_and_its_next_success_clears_it() {
    // (The harness has no search index, so the integrity sweep would only report that.)
    let extra = [("ALERT_JOB_STALE_MULTIPLIER", "3"), ("DB_INTEGRITY_CHECK_ENABLED", "false")];
    let app = in_process(&with(&["ALERT_JOB_STOPPED_ENABLED"], &extra)).await;
    let w = watchers(&app).await;
    for job in jobs::watched(&app.state.config) {
        jobs::run(&app.state, job.name, Trigger::Manual).await.unwrap();
    }
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "job_stopped").await["state"], "ok");
    // The hourly reach-out scan is three hours late; the daily jobs are not yet.
    advance(&app, 4);
    evaluate(&app).await;
    let state = alert_state(&app, "job_stopped").await;
    assert_eq!(state["state"], "alerting");
    assert!(state["detail"].as_str().unwrap().contains(jobs::REACH_OUT), "{state}");
    // The subscriptions' five-minute look is late too; both run again, all is well.
    assert!(state["detail"].as_str().unwrap().contains(jobs::SUBSCRIPTIONS), "{state}");
    for job in [jobs::REACH_OUT, jobs::SUBSCRIPTIONS] {
        jobs::run(&app.state, job, Trigger::Manual).await.unwrap();
    }
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "job_stopped").await["state"], "ok");
    deliver(&app).await;
    assert_eq!(
        told_by_webhook(&w),
        [
            ("alert.raised".to_string(), "job_stopped".to_string()),
            ("alert.cleared".to_string(), "job_stopped".to_string())
        ]
    );
}

#[tokio::test]
async fn a_receiver_that_keeps_failing_raises_integrations_until_the_quiet_hours_pass() {
    let app = in_process(&with(&["ALERT_INCIDENT_QUIET_HOURS"], &[("ALERT_INCIDENT_QUIET_HOURS", "6")])).await;
    let ada = sign_up(&app, "ada").await;
    let failing = Receiver::start().await;
    failing.then(&vec![Reply::Status(500); 8]);
    let hook = json!({ "url": failing.url, "events": ["contact.created"] });
    assert_eq!(app.call("POST", "/api/v1/webhooks", Some(&ada), hook).await.0, 201);
    let contact = json!({ "firstname": "Grace" });
    assert_eq!(app.call("POST", "/api/v1/contacts", Some(&ada), contact).await.0, 201);
    for _ in 0..15 {
        deliver(&app).await;
        if failing.received().len() == 8 {
            break;
        }
        advance(&app, 2);
    }
    assert_eq!(failing.received().len(), 8, "the delivery ran out of retries");
    evaluate(&app).await;
    let state = alert_state(&app, "integrations").await;
    assert_eq!(state["state"], "alerting", "{state}");
    assert_eq!(state["failures"], 1);
    advance(&app, 7);
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "integrations").await["state"], "ok", "no new failure for the quiet hours");
}

#[tokio::test]
async fn a_backup_older_than_its_limit_raises_backup_stale_until_one_lands() {
    let dir = tempfile::tempdir().unwrap();
    let backups: &'static str = Box::leak(dir.path().display().to_string().into_boxed_str());
    let app = in_process(&with(
        &["ALERT_BACKUP_MAX_AGE_HOURS"],
        &[("ALERT_BACKUP_MAX_AGE_HOURS", "24"), ("BACKUP_DIR", backups)],
    ))
    .await;
    sign_up(&app, "ada").await;
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "backup_stale").await["state"], "ok", "a new instance has a day for its first");
    advance(&app, 25);
    evaluate(&app).await;
    let state = alert_state(&app, "backup_stale").await;
    assert_eq!(state["state"], "alerting");
    assert!(state["detail"].as_str().unwrap().contains("No operator backup"), "{state}");
    // The restore drill does not count; an operator backup does.
    let run = jobs::run(&app.state, jobs::BACKUP, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "backup_stale").await["state"], "ok");
}

#[tokio::test]
async fn failed_sign_ins_for_many_accounts_raise_auth_spray_until_two_quiet_intervals_pass() {
    let app = in_process(&with(
        &[],
        &[
            ("AUTH_SPRAY_FAILURE_THRESHOLD", "6"),
            ("AUTH_SPRAY_IDENTIFIER_THRESHOLD", "3"),
            ("AUTH_SPRAY_WINDOW_SECONDS", "600"),
        ],
    ))
    .await;
    sign_up(&app, "ada").await;
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "auth_spray").await["state"], "ok");
    for n in 0..8 {
        let attempt = json!({ "identifier": format!("guess{n}"), "password": "wrong-password-1" });
        app.call("POST", "/api/v1/login", None, attempt).await;
    }
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "auth_spray").await["state"], "alerting");
    // Still within twice the evaluation interval (15 minutes) of the spray: still alerting.
    app.clock.set(app.clock.now().checked_add(SignedDuration::from_mins(20)).unwrap());
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "auth_spray").await["state"], "alerting");
    // Thirty quiet minutes: all is well again.
    app.clock.set(app.clock.now().checked_add(SignedDuration::from_mins(11)).unwrap());
    evaluate(&app).await;
    assert_eq!(alert_state(&app, "auth_spray").await["state"], "ok");
}

#[tokio::test]
async fn switched_off_conditions_are_listed_disabled_and_never_raise() {
    let app = in_process(&[("ALERTING_ENABLED", "false"), ("ALERT_DISK_USAGE_PERCENT", "1")]).await;
    let admin = sign_up(&app, "ada").await;
    evaluate(&app).await;
    let (status, list, _) = app.call("GET", "/api/v1/admin/alerts", Some(&admin), json!({})).await;
    assert_eq!(status, 200, "{list}");
    assert!(list["alerts"].as_array().unwrap().iter().all(|a| a["state"] == "disabled"), "{list}");
    assert!(list["history"].as_array().unwrap().is_empty());
    let (status, run, _) = app.call("POST", "/api/v1/admin/trigger-alerts", Some(&admin), json!({})).await;
    assert_eq!((status, run["job_name"].as_str()), (200, Some("alert_evaluation")));
}

#[tokio::test]
async fn notifications_failing_past_the_threshold_raise_and_a_delivery_clears() {
    let app = in_process(&with(&["ALERT_NOTIFY_FAILURE_THRESHOLD"], &[("ALERT_NOTIFY_FAILURE_THRESHOLD", "3")])).await;
    let w = watchers(&app).await;
    let ada = sign_in(&app, "ada").await;
    // The topic's server refuses for good three times: three failed notifications.
    w.admin_ntfy.then(&[Reply::Status(400), Reply::Status(400), Reply::Status(400)]);
    for n in 1..=3 {
        let (status, body, _) =
            app.call("POST", "/api/v1/notifications/channels/ntfy/test", Some(&ada), json!({})).await;
        assert_eq!(status, 202, "{body}");
        deliver(&app).await;
        evaluate(&app).await;
        let expected = if n < 3 { "ok" } else { "alerting" };
        assert_eq!(alert_state(&app, "notifications").await["state"], expected, "after {n} failure(s)");
    }
    deliver(&app).await;
    assert_eq!(told_by_webhook(&w), [("alert.raised".to_string(), "notifications".to_string())]);
    // The raise itself reached the topic, a delivery: the subsystem is healthy again.
    evaluate(&app).await;
    deliver(&app).await;
    assert_eq!(
        told_by_webhook(&w),
        [
            ("alert.raised".to_string(), "notifications".to_string()),
            ("alert.cleared".to_string(), "notifications".to_string())
        ]
    );
}

/// A tampered audit chain fails the integrity sweep of the real binary, and the evaluation an
/// admin triggers raises `db_integrity` to the subscribed webhook; once the broken chain is gone
/// (the operator deletes the account it belonged to) the next sweep is `ok` and the alert clears.
#[tokio::test]
async fn a_tampered_audit_chain_raises_db_integrity_from_the_binary_until_the_sweep_is_clean() {
    use crate::helpers::Instance;
    let receiver = Receiver::start().await;
    let instance = Instance::new().with("ALERT_DISK_USAGE_PERCENT", "0");
    let mut server = instance.spawn();
    let ada = server.sign_up("ada").await;
    let hook =
        ada.post("/api/v1/webhooks", json!({ "url": receiver.url, "events": ["alert.raised", "alert.cleared"] })).await;
    assert_eq!(hook.status(), 201);
    let bob = server.sign_up("bob").await;
    let contact = bob.post("/api/v1/contacts", json!({ "firstname": "Audit" })).await;
    assert_eq!(contact.status(), 201);
    assert!(server.terminate().success());
    mycorrhizal_engine::tamper_for_tests(&instance.database(), bob.id, mycorrhizal_engine::Tamper::Edit)
        .expect("edit an audit event");
    let server = instance.spawn();
    let ada = server.sign_in("ada", PASSWORD).await;
    let report: Value = ada.get("/api/v1/admin/integrity-check").await.json().await.unwrap();
    assert_eq!(report["status"], "failed", "{report}");
    let run: Value = ada.post("/api/v1/admin/trigger-alerts", json!({})).await.json().await.unwrap();
    assert_eq!(run["result"], "success", "{run}");
    let integrity = |alerts: &Value| {
        alerts["alerts"].as_array().unwrap().iter().find(|a| a["condition"] == "db_integrity").unwrap().clone()
    };
    let alerts: Value = ada.get("/api/v1/admin/alerts").await.json().await.unwrap();
    assert_eq!(integrity(&alerts)["state"], "alerting", "{alerts}");
    assert!(integrity(&alerts)["detail"].as_str().unwrap().contains("audit_chain"), "{alerts}");
    let told = |event: &'static str| {
        let receiver = &receiver;
        async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            loop {
                let told: Vec<Value> =
                    receiver.received().iter().map(|r| r.json()).filter(|e| e["event"] == event).collect();
                if let Some(first) = told.into_iter().find(|e| e["data"]["condition"] == "db_integrity") {
                    break first;
                }
                assert!(std::time::Instant::now() < deadline, "no {event} reached the receiver");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    };
    let raised = told("alert.raised").await;
    assert_eq!(raised["data"]["state"], "alerting");
    let text = raised["data"].to_string();
    assert!(!text.contains("Audit") && !text.contains("bob"), "counts and names of passes only: {text}");

    let gone = ada.send(reqwest::Method::DELETE, &format!("/api/v1/admin/users/{}", bob.id), json!({})).await;
    assert!(gone.status().is_success(), "{}", gone.status());
    let report: Value = ada.get("/api/v1/admin/integrity-check").await.json().await.unwrap();
    assert_eq!(report["status"], "ok", "{report}");
    let run: Value = ada.post("/api/v1/admin/trigger-alerts", json!({})).await.json().await.unwrap();
    assert_eq!(run["result"], "success", "{run}");
    let alerts: Value = ada.get("/api/v1/admin/alerts").await.json().await.unwrap();
    assert_eq!(integrity(&alerts)["state"], "ok", "{alerts}");
    let cleared = told("alert.cleared").await;
    assert_eq!(cleared["data"]["condition"], "db_integrity");
    let raises = receiver.received().iter().filter(|r| r.json()["event"] == "alert.raised").count();
    assert_eq!(raises, 1, "raised once");
}
