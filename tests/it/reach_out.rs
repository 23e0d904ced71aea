//! Reach-out suggestions, in process with a fixed clock: the scan (job `reach_out_scan`) proposes each
//! overdue contact once, never resurfaces a dismissal, drops a pending suggestion once the contact
//! is back on cadence, advances its `last_audit_event_id` cursor and is recorded as a job run;
//! accepting links a one-off reminder; another user sees and touches none of it.

use jiff::Timestamp;
use mycorrhizal::crm::reach_out;
use mycorrhizal_engine::UserId;
use mycorrhizal_engine::system::{JobResult, Trigger};
use serde_json::{Value, json};

use crate::sessions::{InProcess, in_process};

const ADA: UserId = UserId(1);

async fn contact(app: &InProcess, cookie: &str, name: &str) -> u64 {
    let (status, body, _) = app.call("POST", "/api/v1/contacts", Some(cookie), json!({ "firstname": name })).await;
    assert_eq!(status, 201, "{body}");
    body["contact"]["id"].as_u64().unwrap()
}

async fn cadence(app: &InProcess, cookie: &str, contact: u64, days: u32) {
    let body = json!({ "contact_id": contact, "interval_days": days });
    let (status, body, _) = app.call("POST", "/api/v1/cadence-policies", Some(cookie), body).await;
    assert_eq!(status, 201, "{body}");
}

async fn activity(app: &InProcess, cookie: &str, contact: u64, date: &str) {
    let body = json!({ "title": "Coffee", "date": date, "contact_ids": [contact] });
    let (status, body, _) = app.call("POST", "/api/v1/activities", Some(cookie), body).await;
    assert!(status == 200 || status == 201, "{body}");
}

/// Any change by the user: an audit event the scan has not seen yet.
async fn touch(app: &InProcess, cookie: &str) {
    let (status, body, _) = app.call("POST", "/api/v1/notes", Some(cookie), json!({ "content": "hello" })).await;
    assert!(status == 200 || status == 201, "{body}");
}

async fn suggestions(app: &InProcess, cookie: &str, query: &str) -> Vec<Value> {
    let (status, body, _) =
        app.call("GET", &format!("/api/v1/reach-out-suggestions{query}"), Some(cookie), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"].as_u64().unwrap() as usize, body["suggestions"].as_array().unwrap().len());
    body["suggestions"].as_array().unwrap().clone()
}

fn contacts_of(list: &[Value]) -> Vec<u64> {
    let mut ids: Vec<u64> = list.iter().map(|s| s["contact_id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids
}

fn suggestion_of(list: &[Value], contact: u64) -> u64 {
    list.iter().find(|s| s["contact_id"] == contact).unwrap()["id"].as_u64().unwrap()
}

fn cursor(app: &InProcess) -> u64 {
    let global = app.state.engine.global().unwrap();
    reach_out::cursor(&global, ADA.0).unwrap().expect("a cursor once the scan ran").last_audit_event_id
}

fn newest_event(app: &InProcess) -> u64 {
    app.state.engine.user(ADA).view().unwrap().audit_events(0, usize::MAX).unwrap().last().unwrap().seq
}

async fn scan(app: &InProcess) -> Option<u64> {
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::REACH_OUT, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);
    assert!(run.correlation_id.as_deref().unwrap().starts_with("job:reach_out_scan:"));
    run.items_processed
}

#[tokio::test]
async fn the_scan_suggests_overdue_contacts_once_and_never_resurfaces_a_dismissal() {
    let app = in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let ada = contact(&app, &cookie, "Ada").await;
    let bob = contact(&app, &cookie, "Bob").await;
    let cy = contact(&app, &cookie, "Cy").await;
    for c in [ada, bob, cy] {
        cadence(&app, &cookie, c, 7).await;
    }
    activity(&app, &cookie, ada, "2026-02-01T10:00:00Z").await;
    activity(&app, &cookie, bob, "2026-02-01T10:00:00Z").await;
    activity(&app, &cookie, cy, "2026-02-28T10:00:00Z").await;
    assert_eq!(suggestions(&app, &cookie, "").await, Vec::<Value>::new(), "nothing before the first scan");

    // First run: Ada and Bob are overdue, Cy is not (due on 7 March).
    let seen = newest_event(&app);
    assert_eq!(scan(&app).await, Some(2));
    assert_eq!(cursor(&app), seen, "the cursor holds the last audit event scanned");
    let list = suggestions(&app, &cookie, "").await;
    assert_eq!(contacts_of(&list), [ada, bob]);
    let first = list.iter().find(|s| s["contact_id"] == ada).unwrap();
    assert_eq!((first["status"].as_str(), first["kind"].as_str()), (Some("pending"), Some("cadence_overdue")));
    assert_eq!((first["contact_name"].as_str(), first["audit_event_id"].as_u64()), (Some("Ada"), Some(seen)));
    assert_eq!(first["health"]["overdue"], true);
    assert!(first["contact_vcard_uid"].as_str().is_some_and(|u| u.len() == 36), "{first}");
    assert!(first.get("reminder_id").is_none());

    // Nothing new since: nothing happens. New events: a re-scan, still no duplicate.
    assert_eq!(scan(&app).await, Some(0));
    touch(&app, &cookie).await;
    let seen = newest_event(&app);
    assert_eq!(scan(&app).await, Some(0));
    assert_eq!(cursor(&app), seen, "the cursor advanced");
    assert_eq!(suggestions(&app, &cookie, "?status=all").await.len(), 2, "no duplicates");

    // Dismissal is never undone by a re-scan, and dismissing twice is fine.
    let ada_s = suggestion_of(&list, ada);
    let path = format!("/api/v1/reach-out-suggestions/{ada_s}/dismiss");
    let (status, body, _) = app.call("POST", &path, Some(&cookie), json!({})).await;
    assert_eq!((status, body["suggestion"]["status"].as_str()), (200, Some("dismissed")), "{body}");
    assert_eq!(app.call("POST", &path, Some(&cookie), json!({})).await.0, 200, "idempotent");
    touch(&app, &cookie).await;
    assert_eq!(scan(&app).await, Some(0));
    assert_eq!(contacts_of(&suggestions(&app, &cookie, "").await), [bob], "pending only by default");
    assert_eq!(contacts_of(&suggestions(&app, &cookie, "?status=dismissed").await), [ada]);
    assert_eq!(suggestions(&app, &cookie, "?status=all").await.len(), 2);
    let (status, _, _) = app.call("GET", "/api/v1/reach-out-suggestions?status=maybe", Some(&cookie), json!({})).await;
    assert_eq!(status, 400);

    // Accepting makes a one-off reminder and links it; not twice, and not a dismissed one.
    let bob_s = suggestion_of(&list, bob);
    let accept = format!("/api/v1/reach-out-suggestions/{bob_s}/accept");
    let (status, body, _) = app.call("POST", &accept, Some(&cookie), json!({ "remind_at": "2026-03-05" })).await;
    assert_eq!(status, 201, "{body}");
    let reminder = body["reminder"]["id"].as_u64().unwrap();
    assert_eq!(body["suggestion"]["reminder_id"], reminder);
    assert_eq!(body["suggestion"]["status"], "pending");
    assert_eq!(
        (body["reminder"]["recurrence"].as_str(), body["reminder"]["date"].as_str()),
        (Some("once"), Some("2026-03-05"))
    );
    assert_eq!(
        (body["reminder"]["contact_id"].as_u64(), body["reminder"]["message"].as_str()),
        (Some(bob), Some("Reach out to Bob"))
    );
    let (status, stored, _) = app.call("GET", &format!("/api/v1/reminders/{reminder}"), Some(&cookie), json!({})).await;
    assert_eq!((status, stored["contact_id"].as_u64()), (200, Some(bob)), "{stored}");
    assert_eq!(app.call("POST", &accept, Some(&cookie), json!({})).await.0, 409, "already accepted");
    let dismissed = format!("/api/v1/reach-out-suggestions/{ada_s}/accept");
    assert_eq!(app.call("POST", &dismissed, Some(&cookie), json!({})).await.0, 409, "dismissed");
    let (_, dash, _) = app.call("GET", "/api/v1/dashboard", Some(&cookie), json!({})).await;
    let on_dash = dash["reach_out_suggestions"].as_array().unwrap();
    assert_eq!((on_dash.len(), on_dash[0]["reminder_id"].as_u64()), (1, Some(reminder)), "{dash}");

    // Bob back on cadence: his pending suggestion goes, the reminder stays.
    activity(&app, &cookie, bob, "2026-03-01T09:00:00Z").await;
    assert_eq!(scan(&app).await, Some(1));
    assert_eq!(suggestions(&app, &cookie, "").await, Vec::<Value>::new());
    assert_eq!(app.call("GET", &format!("/api/v1/reminders/{reminder}"), Some(&cookie), json!({})).await.0, 200);

    // Time alone makes Cy overdue (due 7 March; Bob is due 8 March 09:00): without any new event
    // the scan re-evaluates once its last evaluation is a day old.
    app.clock.set("2026-03-08T08:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.sign_in_again().await;
    let seen = newest_event(&app);
    assert_eq!(scan(&app).await, Some(1));
    let list = suggestions(&app, &cookie, "?status=all").await;
    assert_eq!(contacts_of(&list), [ada, cy], "Ada stays dismissed, Cy is new: {list:?}");
    assert!(cursor(&app) >= seen);

    // Deleting the contact takes its suggestion; a suggestion can be deleted outright.
    assert_eq!(app.call("DELETE", &format!("/api/v1/contacts/{cy}"), Some(&cookie), json!({})).await.0, 200);
    assert_eq!(contacts_of(&suggestions(&app, &cookie, "?status=all").await), [ada]);
    let path = format!("/api/v1/reach-out-suggestions/{ada_s}");
    assert_eq!(app.call("DELETE", &path, Some(&cookie), json!({})).await.0, 200);
    assert_eq!(app.call("DELETE", &path, Some(&cookie), json!({})).await.0, 404, "hard-deleted");

    let runs = app.state.engine.job_runs(50, |r| r.job_name == "reach_out_scan").unwrap();
    assert_eq!(runs.len(), 6, "each run is recorded");
}

#[tokio::test]
async fn another_user_cannot_see_or_act_on_a_suggestion() {
    let app = in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let ada = contact(&app, &cookie, "Secret").await;
    cadence(&app, &cookie, ada, 7).await;
    activity(&app, &cookie, ada, "2026-02-01T10:00:00Z").await;
    assert_eq!(scan(&app).await, Some(1));
    let id = suggestion_of(&suggestions(&app, &cookie, "").await, ada);

    let register = json!({ "username": "bob", "email": "bob@example.org", "password": crate::helpers::PASSWORD });
    assert_eq!(app.call("POST", "/api/v1/register", None, register).await.0, 201);
    let login = json!({ "identifier": "bob", "password": crate::helpers::PASSWORD });
    let bob = app.call("POST", "/api/v1/login", None, login).await.2.unwrap();
    assert_eq!(scan(&app).await, Some(0));
    for query in ["", "?status=all"] {
        assert_eq!(suggestions(&app, &bob, query).await, Vec::<Value>::new());
    }
    let (_, dash, _) = app.call("GET", "/api/v1/dashboard", Some(&bob), json!({})).await;
    assert_eq!(dash["reach_out_suggestions"], json!([]));
    for (method, path) in [
        ("POST", format!("/api/v1/reach-out-suggestions/{id}/accept")),
        ("POST", format!("/api/v1/reach-out-suggestions/{id}/dismiss")),
        ("DELETE", format!("/api/v1/reach-out-suggestions/{id}")),
    ] {
        let (status, body, _) = app.call(method, &path, Some(&bob), json!({})).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert!(!body.to_string().contains("Secret"));
    }
    let mine = suggestions(&app, &cookie, "").await;
    assert_eq!((mine.len(), mine[0]["status"].as_str()), (1, Some("pending")));
    assert!(mine[0].get("reminder_id").is_none());
}

async fn update(app: &InProcess, cookie: &str, id: u64, body: Value) {
    let (status, body, _) = app.call("PUT", &format!("/api/v1/contacts/{id}"), Some(cookie), body).await;
    assert_eq!(status, 200, "{body}");
}

/// A new job, a new title, a move: each is a suggestion with the old and new value, from the
/// audit events after the cursor. Filling in a blank is not news; a pending suggestion follows a
/// later value; a dismissed one is not resurfaced for the same value, but a later move is news.
#[tokio::test]
async fn a_changed_organization_title_or_address_is_news_worth_a_message() {
    let app = in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let lin = contact(&app, &cookie, "Lin").await;
    // Data entry: blanks filled in.
    update(
        &app,
        &cookie,
        lin,
        json!({ "firstname": "Lin", "org": "Acme", "job_title": "Engineer", "address": "1 Old Road, Lyon" }),
    )
    .await;
    assert_eq!(scan(&app).await, Some(0), "filling in blanks is not news");
    assert_eq!(suggestions(&app, &cookie, "?status=all").await, Vec::<Value>::new());

    update(
        &app,
        &cookie,
        lin,
        json!({ "firstname": "Lin", "org": "Mycelium Ltd", "job_title": "CTO", "address": "1 Old Road, Lyon" }),
    )
    .await;
    let event = newest_event(&app);
    assert_eq!(scan(&app).await, Some(2));
    let list = suggestions(&app, &cookie, "").await;
    let kind = |k: &str| list.iter().find(|s| s["kind"] == k).cloned().unwrap_or(Value::Null);
    let org = kind("organization");
    assert_eq!((org["old_value"].as_str(), org["new_value"].as_str()), (Some("Acme"), Some("Mycelium Ltd")), "{org}");
    assert_eq!((org["contact_id"].as_u64(), org["audit_event_id"].as_u64()), (Some(lin), Some(event)));
    assert_eq!(
        (kind("title")["old_value"].as_str(), kind("title")["new_value"].as_str()),
        (Some("Engineer"), Some("CTO"))
    );
    assert!(org.get("health").is_none(), "a field change has no cadence health");

    // Accepting says what the news is.
    let accept = format!("/api/v1/reach-out-suggestions/{}/accept", org["id"]);
    let (status, body, _) = app.call("POST", &accept, Some(&cookie), json!({})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["reminder"]["message"], "Reach out to Lin: now at Mycelium Ltd");

    // A move: pending; a second move before it is handled updates the same suggestion.
    update(
        &app,
        &cookie,
        lin,
        json!({ "firstname": "Lin", "org": "Mycelium Ltd", "job_title": "CTO", "address": "2 New Street, Porto" }),
    )
    .await;
    assert_eq!(scan(&app).await, Some(1));
    update(
        &app,
        &cookie,
        lin,
        json!({ "firstname": "Lin", "org": "Mycelium Ltd", "job_title": "CTO", "address": "3 Third Way, Oslo" }),
    )
    .await;
    assert_eq!(scan(&app).await, Some(1));
    let moves: Vec<Value> =
        suggestions(&app, &cookie, "?status=all").await.into_iter().filter(|s| s["kind"] == "address").collect();
    assert_eq!(moves.len(), 1, "{moves:?}");
    assert!(moves[0]["old_value"].as_str().unwrap().contains("Old Road"), "{moves:?}");
    assert!(moves[0]["new_value"].as_str().unwrap().contains("Third Way"), "{moves:?}");

    // Dismissed: the same value does not come back, a later move does.
    let path = format!("/api/v1/reach-out-suggestions/{}/dismiss", moves[0]["id"]);
    assert_eq!(app.call("POST", &path, Some(&cookie), json!({})).await.0, 200);
    update(
        &app,
        &cookie,
        lin,
        json!({ "firstname": "Lin", "org": "Mycelium Ltd", "job_title": "CTO", "address": "2 New Street, Porto" }),
    )
    .await;
    update(
        &app,
        &cookie,
        lin,
        json!({ "firstname": "Lin", "org": "Mycelium Ltd", "job_title": "CTO", "address": "3 Third Way, Oslo" }),
    )
    .await;
    assert_eq!(scan(&app).await, Some(1), "Porto is news again; Oslo was dismissed");
    let pending: Vec<Value> =
        suggestions(&app, &cookie, "").await.into_iter().filter(|s| s["kind"] == "address").collect();
    assert_eq!(pending.len(), 1);
    assert!(pending[0]["new_value"].as_str().unwrap().contains("New Street"), "{pending:?}");
}

/// Suggestions stored before they carried values (schema 2) read after the step-3 migration.
#[test]
fn stored_suggestions_of_the_old_shape_are_converted() {
    use mycorrhizal_engine::{Engine, Kind, Options, Record, kind};
    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
    struct OldShape {
        contact_id: u64,
        kind: String,
        status: String,
        policy_id: u64,
        audit_event_id: u64,
        reminder_id: Option<u64>,
    }
    impl Record for OldShape {
        const KIND: Kind = kind!("reach_out_suggestion", hard_delete);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.redb");
    let old = Options { migrations: mycorrhizal_engine::migrate::steps(), ..Options::default() };
    let (engine, _) = Engine::open(&path, old).unwrap();
    assert_eq!(engine.schema_version(), 2);
    let stored = OldShape {
        contact_id: 7,
        kind: "cadence_overdue".into(),
        status: "dismissed".into(),
        policy_id: 3,
        audit_event_id: 11,
        reminder_id: Some(5),
    };
    let id = engine.user(ADA).write(move |tx| Ok(tx.create(stored.clone())?.id)).unwrap();
    engine.shutdown();
    drop(engine);

    let options = Options {
        migrations: mycorrhizal::crm::migrations(),
        pre_migration_dir: Some(dir.path().join("pre")),
        ..Options::default()
    };
    let (engine, report) = Engine::open(&path, options).unwrap();
    assert_eq!((report.from, report.to), (2, mycorrhizal::crm::schema_version()));
    let row = engine.user(ADA).view().unwrap().get::<reach_out::ReachOutSuggestion>(id).unwrap();
    assert_eq!((row.body.contact_id, row.body.status.as_str(), row.body.policy_id), (7, "dismissed", 3));
    assert_eq!((row.body.audit_event_id, row.body.reminder_id), (11, Some(5)));
    assert_eq!((row.body.old_value.as_str(), row.body.new_value.as_str()), ("", ""));
    engine.shutdown();
}
