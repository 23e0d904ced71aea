//! Date rules with a fixed clock (in process): upcoming birthdays across year ends and around
//! 29 February, a reminder zone far from UTC, and monthly reminders clamped to month ends.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::sessions::in_process;

async fn contact(app: &crate::sessions::InProcess, cookie: &str, name: &str, birthday: &str) -> u64 {
    let (status, body, _) =
        app.call("POST", "/api/v1/contacts", Some(cookie), json!({ "firstname": name, "birthday": birthday })).await;
    assert_eq!(status, 201, "{body}");
    body["contact"]["id"].as_u64().unwrap()
}

fn names(body: &Value) -> Vec<(String, String, i64)> {
    body["birthdays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_string(),
                b["date"].as_str().unwrap().to_string(),
                b["days_until"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn birthdays_wrap_the_year_end_and_leap_days_fall_on_1_march() {
    let app = in_process(&[]).await;
    app.clock.set("2026-12-20T12:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    contact(&app, &cookie, "Leap", "2000-02-29").await;
    contact(&app, &cookie, "NewYear", "--01-02").await;
    contact(&app, &cookie, "Xmas", "1990-12-25").await;
    contact(&app, &cookie, "Past", "1990-12-01").await;
    let (_, body, _) = app.call("GET", "/api/v1/contacts/birthdays?days=90", Some(&cookie), json!({})).await;
    assert_eq!(
        names(&body),
        [
            ("Xmas".to_string(), "2026-12-25".to_string(), 5),
            ("NewYear".into(), "2027-01-02".into(), 13),
            ("Leap".into(), "2027-03-01".into(), 71)
        ]
    );
    let leap = &body["birthdays"][2];
    assert_eq!(leap["age"], 27, "age from a full date");
    assert!(body["birthdays"][1].get("age").is_none(), "no age without a year");
    assert_eq!(body["birthdays"][0]["age"], 36);

    app.clock.set("2028-02-01T12:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.sign_in_again().await;
    let (_, body, _) = app.call("GET", "/api/v1/contacts/birthdays?days=40", Some(&cookie), json!({})).await;
    assert_eq!(names(&body)[0], ("Leap".to_string(), "2028-02-29".to_string(), 28), "in a leap year it is 29 February");
    let (_, body, _) = app.call("GET", "/api/v1/contacts/birthdays", Some(&cookie), json!({})).await;
    assert_eq!(names(&body).len(), 1, "default window: rest of February and all of March");
}

#[tokio::test]
async fn today_is_decided_in_the_reminder_zone() {
    let app = in_process(&[("REMINDER_TIMEZONE", "Pacific/Kiritimati")]).await;
    // 20:00 UTC on 31 December is already 1 January in Kiritimati (UTC+14).
    app.clock.set("2026-12-31T20:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    contact(&app, &cookie, "Janus", "--01-01").await;
    let (_, body, _) = app.call("GET", "/api/v1/contacts/birthdays?days=1", Some(&cookie), json!({})).await;
    assert_eq!(names(&body), [("Janus".to_string(), "2027-01-01".to_string(), 0)]);
}

#[tokio::test]
async fn a_monthly_reminder_on_the_31st_clamps_to_february_and_returns() {
    let app = in_process(&[]).await;
    app.clock.set("2027-01-31T09:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let c = contact(&app, &cookie, "Monthly", "").await;
    let body = json!({ "message": "Pay rent", "remind_at": "2027-01-31T15:30:00Z", "recurrence": "monthly", "reoccur_from_completion": false });
    let (status, created, _) = app.call("POST", &format!("/api/v1/contacts/{c}/reminders"), Some(&cookie), body).await;
    assert_eq!(status, 201, "{created}");
    let id = created["reminder"]["id"].as_u64().unwrap();
    let (_, done, _) = app.call("POST", &format!("/api/v1/reminders/{id}/complete"), Some(&cookie), json!({})).await;
    assert_eq!(done["reminder"]["date"], "2027-02-28");
    app.clock.set("2027-02-28T09:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.sign_in_again().await;
    let (_, done, _) = app.call("POST", &format!("/api/v1/reminders/{id}/complete"), Some(&cookie), json!({})).await;
    assert_eq!(done["reminder"]["date"], "2027-03-31", "back to the 31st");
    let (_, completions, _) =
        app.call("GET", &format!("/api/v1/contacts/{c}/reminder-completions"), Some(&cookie), json!({})).await;
    assert_eq!(completions["completions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_yearly_leap_day_reminder_moves_to_1_march_and_back() {
    let app = in_process(&[]).await;
    app.clock.set("2028-02-29T09:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let c = contact(&app, &cookie, "Leapling", "2000-02-29").await;
    let body = json!({ "message": "Card", "remind_at": "2028-02-29", "recurrence": "yearly", "reoccur_from_completion": false });
    let (_, created, _) = app.call("POST", &format!("/api/v1/contacts/{c}/reminders"), Some(&cookie), body).await;
    let id = created["reminder"]["id"].as_u64().unwrap();
    let mut dates = Vec::new();
    for now in ["2028-02-29T10:00:00Z", "2029-03-01T10:00:00Z", "2030-03-01T10:00:00Z", "2031-03-01T10:00:00Z"] {
        app.clock.set(now.parse::<Timestamp>().unwrap());
        let cookie = app.sign_in_again().await;
        let (_, done, _) =
            app.call("POST", &format!("/api/v1/reminders/{id}/complete"), Some(&cookie), json!({})).await;
        dates.push(done["reminder"]["date"].as_str().unwrap().to_string());
    }
    assert_eq!(dates, ["2029-03-01", "2030-03-01", "2031-03-01", "2032-02-29"]);
}

#[tokio::test]
async fn the_daily_purge_removes_tombstones_only_after_the_retention_window() {
    use mycorrhizal::crm::contact::Contact;
    use mycorrhizal_engine::system::{JobResult, Trigger};
    let app = in_process(&[("DELETED_RETENTION_DAYS", "30")]).await;
    app.clock.set("2026-01-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let gone = contact(&app, &cookie, "Gone", "").await;
    let kept = contact(&app, &cookie, "Kept", "").await;
    assert_eq!(app.call("DELETE", &format!("/api/v1/contacts/{gone}"), Some(&cookie), json!({})).await.0, 200);
    let user = mycorrhizal_engine::UserId(1);
    let tombstone = |app: &crate::sessions::InProcess| {
        app.state.engine.user(user).view().unwrap().get_any::<Contact>(gone).unwrap()
    };

    app.clock.set("2026-01-30T10:00:00Z".parse::<Timestamp>().unwrap());
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::PURGE, Trigger::Manual).await.unwrap();
    assert_eq!(
        (run.result, run.items_processed),
        (JobResult::Success, Some(1)),
        "only the session that ended on January 5th"
    );
    assert!(tombstone(&app).is_some(), "kept inside the window for sync clients");

    app.clock.set("2026-02-01T10:00:01Z".parse::<Timestamp>().unwrap());
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::PURGE, Trigger::Manual).await.unwrap();
    assert_eq!(run.items_processed, Some(1), "now the tombstone");
    assert!(run.correlation_id.as_deref().unwrap().starts_with("job:retention_purge:"));
    assert!(tombstone(&app).is_none());
    assert!(app.state.engine.user(user).get::<Contact>(kept).is_ok());
    assert_eq!(
        app.state.engine.global().unwrap().list::<mycorrhizal::auth::records::Session>().unwrap().len(),
        0,
        "the session of January 1st ended and was swept"
    );
    let runs = app.state.engine.job_runs(10, |r| r.job_name == "retention_purge").unwrap();
    assert_eq!(runs.len(), 2, "each run is recorded");
}

#[tokio::test]
async fn cadence_health_counts_only_qualifying_interactions() {
    let app = in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let c = contact(&app, &cookie, "Cady", "").await;
    let (status, policy, _) = app
        .call(
            "POST",
            "/api/v1/cadence-policies",
            Some(&cookie),
            json!({ "contact_id": c, "interval_days": 7, "qualifying_types": ["call"] }),
        )
        .await;
    assert_eq!(status, 201, "{policy}");
    let id = policy["id"].as_u64().unwrap();
    let health = |body: &Value| body["contacts"][0]["health"].clone();
    // An id is an int64, as the document says, whatever the scope.
    let too_big = json!({ "scope": "tag", "target": "x", "contact_id": 9223372036854775808_u64, "interval_days": 7 });
    let (status, body, _) = app.call("POST", "/api/v1/cadence-policies", Some(&cookie), too_big).await;
    assert_eq!((status, body["details"]["field"].as_str()), (400, Some("contact_id")), "{body}");

    app.clock.set("2026-03-04T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.sign_in_again().await;
    let (_, body, _) = app.call("GET", &format!("/api/v1/cadence-policies/{id}"), Some(&cookie), json!({})).await;
    assert_eq!(
        (health(&body)["overdue"].as_bool(), health(&body)["has_qualifying_interaction"].as_bool()),
        (Some(false), Some(false))
    );

    app.clock.set("2026-03-11T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.sign_in_again().await;
    app.call(
        "POST",
        "/api/v1/activities",
        Some(&cookie),
        json!({ "title": "Dinner", "date": "2026-03-10T19:00:00Z", "contact_ids": [c], "type": "meal" }),
    )
    .await;
    let (_, body, _) = app.call("GET", "/api/v1/cadence-policies/overdue", Some(&cookie), json!({})).await;
    assert_eq!(body["overdue"][0]["contact_id"], c, "a meal does not count for a call cadence");
    assert_eq!(body["overdue"][0]["health"]["overdue_by"], 3);
    let (_, dash, _) = app.call("GET", "/api/v1/dashboard", Some(&cookie), json!({})).await;
    assert_eq!(dash["overdue"][0]["contact_name"], "Cady");

    app.call(
        "POST",
        "/api/v1/activities",
        Some(&cookie),
        json!({ "title": "Phone", "date": "2026-03-11T09:00:00Z", "contact_ids": [c], "type": "call" }),
    )
    .await;
    let (_, body, _) = app.call("GET", &format!("/api/v1/cadence-policies/{id}"), Some(&cookie), json!({})).await;
    assert_eq!(health(&body)["has_qualifying_interaction"], true);
    assert_eq!(health(&body)["next_due"], "2026-03-18T09:00:00Z");
    let (_, body, _) = app.call("GET", "/api/v1/cadence-policies/overdue", Some(&cookie), json!({})).await;
    assert_eq!(body["overdue"], json!([]));
}

#[tokio::test]
async fn the_daily_audit_chain_pass_verifies_every_users_chain_and_is_recorded() {
    use mycorrhizal_engine::system::{JobResult, Trigger};
    let app = in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let first = contact(&app, &cookie, "Audited", "").await;
    contact(&app, &cookie, "Also", "").await;
    assert_eq!(app.call("DELETE", &format!("/api/v1/contacts/{first}"), Some(&cookie), json!({})).await.0, 200);
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::AUDIT_VERIFY, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);
    let expected = app.state.engine.user(mycorrhizal_engine::UserId(1)).view().unwrap().verify_audit().unwrap();
    assert!(expected >= 3, "two creates and a delete at least: {expected}");
    assert_eq!(run.items_processed, Some(expected));
    assert!(run.correlation_id.as_deref().unwrap().starts_with("job:audit_chain_verify:"));
    let runs = app.state.engine.job_runs(10, |r| r.job_name == "audit_chain_verify").unwrap();
    assert_eq!(runs.len(), 1);
}

#[tokio::test]
async fn upcoming_reminders_are_those_due_within_a_week_or_else_the_first_five() {
    let app = in_process(&[]).await;
    app.clock.set("2026-03-01T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    let c = contact(&app, &cookie, "Remy", "").await;
    let upcoming = || app.call("GET", "/api/v1/dashboard", Some(&cookie), json!({}));
    let messages = |body: &Value| -> Vec<String> {
        let list = body["upcoming_reminders"].as_array().unwrap();
        list.iter().map(|r| r["message"].as_str().unwrap().to_string()).collect()
    };
    for day in ["2026-06-01", "2026-03-08", "2026-02-20", "2026-03-09", "2026-04-01", "2026-03-01", "2026-05-01"] {
        let body = json!({ "message": day, "remind_at": day, "recurrence": "once" });
        let path = format!("/api/v1/contacts/{c}/reminders");
        assert_eq!(app.call("POST", &path, Some(&cookie), body).await.0, 201);
    }
    let (_, body, _) = upcoming().await;
    assert_eq!(
        messages(&body),
        ["2026-02-20", "2026-03-01", "2026-03-08", "2026-03-09", "2026-04-01"],
        "three due by 8 March: the first five instead"
    );
    for day in ["2026-03-05", "2026-03-02", "2026-03-03"] {
        let body = json!({ "message": day, "remind_at": day, "recurrence": "once" });
        let path = format!("/api/v1/contacts/{c}/reminders");
        assert_eq!(app.call("POST", &path, Some(&cookie), body).await.0, 201);
    }
    let (_, body, _) = upcoming().await;
    assert_eq!(
        messages(&body),
        ["2026-02-20", "2026-03-01", "2026-03-02", "2026-03-03", "2026-03-05", "2026-03-08"],
        "six due within the week (overdue included), soonest first, nothing later"
    );
    assert_eq!(body["upcoming_reminders"][0]["overdue"], true);
}

/// The dashboard shows the soonest 25 birthdays of the next 30 days, in order, across the year
/// end, with a 29 February birthday on 1 March; the full list has them all.
#[tokio::test]
async fn the_dashboard_shows_the_soonest_birthdays_of_a_busy_month() {
    let app = in_process(&[]).await;
    app.clock.set("2026-02-20T10:00:00Z".parse::<Timestamp>().unwrap());
    let cookie = app.signed_in().await;
    // 40 birthdays between 21 Feb and 5 Mar (one on 29 Feb), and some outside the window.
    contact(&app, &cookie, "Leap", "2000-02-29").await;
    for i in 0..39 {
        let day = 21 + (i % 13);
        let date = if day <= 28 { format!("--02-{day:02}") } else { format!("--03-{:02}", day - 28) };
        contact(&app, &cookie, &format!("P{i:02}"), &date).await;
    }
    contact(&app, &cookie, "Later", "--04-01").await;
    contact(&app, &cookie, "Past", "--02-19").await;
    let (_, dash, _) = app.call("GET", "/api/v1/dashboard", Some(&cookie), json!({})).await;
    let shown = dash["birthdays"].as_array().unwrap();
    assert_eq!(shown.len(), 25);
    let days: Vec<i64> = shown.iter().map(|b| b["days_until"].as_i64().unwrap()).collect();
    assert!(days.windows(2).all(|w| w[0] <= w[1]), "soonest first: {days:?}");
    let (_, all, _) = app.call("GET", "/api/v1/contacts/birthdays?days=30", Some(&cookie), json!({})).await;
    let all = all["birthdays"].as_array().unwrap();
    assert_eq!(all.len(), 40, "the full list");
    let soonest: Vec<&Value> = all.iter().take(25).collect();
    assert_eq!(
        shown.iter().map(|b| b["days_until"].clone()).collect::<Vec<_>>(),
        soonest.iter().map(|b| b["days_until"].clone()).collect::<Vec<_>>(),
        "the dashboard's are the list's first 25"
    );
    // 2026 is not a leap year: Leap's birthday is on 1 March, 9 days away.
    let leap = all.iter().find(|b| b["name"] == "Leap").unwrap();
    assert_eq!((leap["date"].as_str(), leap["days_until"].as_i64()), (Some("2026-03-01"), Some(9)));
}
