//! The daily digest and its wall-clock scheduler: in process with a fixed clock (stepping the
//! job with `jobs::run` and the outbox with `deliver_once`, mail into a loopback SMTP sink,
//! webhook events into a loopback receiver), and the real binary restarted on its data folder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use mycorrhizal::notify::worker::deliver_once;
use mycorrhizal_engine::Clock;
use mycorrhizal_engine::system::{JobResult, JobRun, Trigger};
use serde_json::{Value, json};

use crate::helpers::Instance;
use crate::reset::smtp_sink;
use crate::sessions::{InProcess, in_process};
use crate::webhooks::{Receiver, verify};

type Mailbox = Arc<Mutex<Vec<String>>>;

async fn app_with_mail(zone: &str, time: &str, now: &str) -> (InProcess, Mailbox) {
    let (port, mail) = smtp_sink().await;
    let port = port.to_string();
    let app = in_process(&[
        ("SMTP_HOST", "127.0.0.1"),
        ("SMTP_PORT", &port),
        ("SMTP_TLS", "none"),
        ("REMINDER_TIMEZONE", zone),
        ("REMINDER_TIME", time),
    ])
    .await;
    set(&app, now);
    (app, mail)
}

fn set(app: &InProcess, now: &str) {
    app.clock.set(now.parse::<Timestamp>().expect("an instant"));
}

async fn sign_up(app: &InProcess, name: &str) -> String {
    let register =
        json!({ "username": name, "email": format!("{name}@example.org"), "password": crate::helpers::PASSWORD });
    assert_eq!(app.call("POST", "/api/v1/register", None, register).await.0, 201);
    login(app, name).await
}

async fn login(app: &InProcess, name: &str) -> String {
    let body = json!({ "identifier": name, "password": crate::helpers::PASSWORD });
    let (status, _, cookie) = app.call("POST", "/api/v1/login", None, body).await;
    assert_eq!(status, 200);
    cookie.expect("a session cookie")
}

async fn contact(app: &InProcess, cookie: &str, name: &str, birthday: Option<&str>) -> u64 {
    let mut body = json!({ "firstname": name });
    if let Some(b) = birthday {
        body["birthday"] = json!(b);
    }
    let (status, body, _) = app.call("POST", "/api/v1/contacts", Some(cookie), body).await;
    assert_eq!(status, 201, "{body}");
    body["contact"]["id"].as_u64().expect("an id")
}

async fn reminder(app: &InProcess, cookie: &str, contact: u64, message: &str, day: &str, recurrence: &str) -> u64 {
    let body = json!({ "message": message, "remind_at": day, "recurrence": recurrence });
    let (status, body, _) =
        app.call("POST", &format!("/api/v1/contacts/{contact}/reminders"), Some(cookie), body).await;
    assert_eq!(status, 201, "{body}");
    body["reminder"]["id"].as_u64().expect("an id")
}

/// One scheduled step of the job, then the outbox; the run.
async fn step(app: &InProcess, now: &str) -> JobRun {
    set(app, now);
    let run = mycorrhizal::jobs::run(&app.state, mycorrhizal::jobs::DIGEST, Trigger::Scheduled).await.unwrap();
    assert_ne!(run.result, JobResult::Failure, "{:?}", run.error);
    assert!(run.correlation_id.as_deref().is_some_and(|c| c.starts_with("job:daily_digest:")));
    deliver_once(&app.state.notify).await;
    run
}

fn queued(run: &JobRun) -> Option<u64> {
    (run.result == JobResult::Success).then(|| run.items_processed.unwrap_or(0))
}

/// The mails so far, with quoted-printable soft breaks undone.
fn mails(mail: &Mailbox) -> Vec<String> {
    mail.lock().expect("the sink").iter().map(|m| m.replace("=\n", "").replace("=3D", "=")).collect()
}

fn subject(mail: &str) -> String {
    mail.lines().find_map(|l| l.strip_prefix("Subject: ")).unwrap_or_default().to_string()
}

/// Contacts and reminders around the end of February of `year`, then the digests of 28 February,
/// 29 February (when there is one) and 1 March: (day, subject, text) of each mail.
async fn end_of_february(year: i16) -> Vec<(String, String)> {
    let (app, mail) = app_with_mail("UTC", "06:00", &format!("{year}-02-27T12:00:00Z")).await;
    let ada = sign_up(&app, "ada").await;
    let leap = contact(&app, &ada, "Lea", Some("2000-02-29")).await;
    contact(&app, &ada, "Fabian", Some("--02-28")).await;
    contact(&app, &ada, "Marta", Some("1990-03-01")).await;
    let mum = contact(&app, &ada, "Mum", None).await;
    reminder(&app, &ada, leap, "Leap-day call", "2024-02-29", "yearly").await;
    reminder(&app, &ada, mum, "Pay the rent", &format!("{year}-01-31"), "monthly").await;
    reminder(&app, &ada, mum, "Book the train", &format!("{year}-03-01"), "once").await;
    let mut got = Vec::new();
    for day in ["02-28", "02-29", "03-01"] {
        let Ok(date) = format!("{year}-{day}").parse::<jiff::civil::Date>() else { continue };
        let before = mails(&mail).len();
        let run = step(&app, &format!("{date}T06:00:00Z")).await;
        let now = mails(&mail);
        assert_eq!(now.len(), before + 1, "one digest on {date}");
        assert_eq!(queued(&run), Some(1));
        got.push((subject(&now[before]), now[before].clone()));
    }
    got
}

#[tokio::test]
async fn the_digest_around_29_february_in_a_common_and_a_leap_year() {
    let common = end_of_february(2027).await;
    assert_eq!(common.len(), 2, "no 29 February in 2027");
    assert_eq!(common[0].0, "Today: 1 reminder, 1 birthday");
    assert!(common[0].1.contains("Pay the rent (Mum)"), "monthly on the 31st falls on 28 February: {}", common[0].1);
    assert!(common[0].1.contains("Fabian's birthday is today"), "{}", common[0].1);
    assert!(!common[0].1.contains("Lea"), "29 February is not 28 February");
    assert_eq!(common[1].0, "Today: 2 reminders, 2 birthdays");
    assert!(common[1].1.contains("Leap-day call (Lea)"), "a yearly 29 February reminder on 1 March: {}", common[1].1);
    assert!(common[1].1.contains("Book the train (Mum)"));
    assert!(common[1].1.contains("Lea turns 27 today"), "{}", common[1].1);
    assert!(common[1].1.contains("Marta turns 37 today"));
    assert!(common[1].1.contains("ada@example.org"));

    let leap = end_of_february(2028).await;
    assert_eq!(leap.len(), 3);
    assert_eq!(leap[0].0, "Today: 1 birthday", "the rent is due on the 29th in a leap year");
    assert_eq!(leap[1].0, "Today: 2 reminders, 1 birthday");
    assert!(leap[1].1.contains("Leap-day call (Lea)") && leap[1].1.contains("Pay the rent (Mum)"), "{}", leap[1].1);
    assert!(leap[1].1.contains("Lea turns 28 today"), "{}", leap[1].1);
    assert_eq!(leap[2].0, "Today: 1 reminder, 1 birthday");
    assert!(leap[2].1.contains("Book the train") && leap[2].1.contains("Marta turns 38 today"));
    assert!(!leap[2].1.contains("Lea"), "not on 1 March in a leap year");
}

#[tokio::test]
async fn a_monthly_reminder_on_the_31st_falls_on_the_30th_and_nothing_due_sends_nothing() {
    let (app, mail) = app_with_mail("UTC", "06:00", "2026-04-28T12:00:00Z").await;
    let ada = sign_up(&app, "ada").await;
    let mum = contact(&app, &ada, "Mum", None).await;
    reminder(&app, &ada, mum, "Pay the rent", "2026-03-31", "monthly").await;
    let run = step(&app, "2026-04-29T06:00:00Z").await;
    assert_eq!(queued(&run), Some(0), "nothing due on the 29th");
    assert!(mails(&mail).is_empty(), "a user with nothing due gets nothing");
    let run = step(&app, "2026-04-30T06:00:00Z").await;
    assert_eq!(queued(&run), Some(1));
    let got = mails(&mail);
    assert_eq!(got.len(), 1);
    assert_eq!(subject(&got[0]), "Today: 1 reminder");
    assert!(got[0].contains("Pay the rent (Mum)"));
}

#[tokio::test]
async fn the_run_time_holds_across_daylight_saving_changes_in_berlin() {
    // Spring: 02:30 does not exist on 29 March 2026 (02:00 CET becomes 03:00 CEST at 01:00 UTC).
    let (app, mail) = app_with_mail("Europe/Berlin", "02:30", "2026-03-27T12:00:00Z").await;
    let ada = sign_up(&app, "ada").await;
    let mum = contact(&app, &ada, "Mum", None).await;
    reminder(&app, &ada, mum, "Saturday call", "2026-03-28", "once").await;
    reminder(&app, &ada, mum, "Sunday call", "2026-03-29", "once").await;
    assert_eq!(queued(&step(&app, "2026-03-28T01:29:59Z").await), None, "not before 02:30 CET");
    assert_eq!(queued(&step(&app, "2026-03-28T01:30:00Z").await), Some(1));
    assert_eq!(queued(&step(&app, "2026-03-29T00:59:59Z").await), None, "01:59:59 CET: not yet");
    assert_eq!(queued(&step(&app, "2026-03-29T01:00:00Z").await), Some(1), "03:00 CEST, the first instant after 02:30");
    assert_eq!(queued(&step(&app, "2026-03-29T01:30:00Z").await), None, "not again at 03:30 CEST");
    assert_eq!(queued(&step(&app, "2026-03-29T21:00:00Z").await), None);
    let got = mails(&mail);
    assert_eq!(got.len(), 2);
    assert!(got[1].contains("Sunday call") && !got[1].contains("Saturday call"));

    // Autumn: 02:30 happens twice on 25 October 2026 (00:30 UTC in CEST, 01:30 UTC in CET).
    let (app, mail) = app_with_mail("Europe/Berlin", "02:30", "2026-10-23T12:00:00Z").await;
    let ada = sign_up(&app, "ada").await;
    let mum = contact(&app, &ada, "Mum", None).await;
    reminder(&app, &ada, mum, "Saturday call", "2026-10-24", "once").await;
    reminder(&app, &ada, mum, "Sunday call", "2026-10-25", "weekly").await;
    assert_eq!(queued(&step(&app, "2026-10-24T00:30:00Z").await), Some(1));
    assert_eq!(queued(&step(&app, "2026-10-25T00:29:59Z").await), None);
    assert_eq!(queued(&step(&app, "2026-10-25T00:30:00Z").await), Some(1), "the first 02:30");
    assert_eq!(queued(&step(&app, "2026-10-25T01:30:00Z").await), None, "not at the second 02:30");
    assert_eq!(queued(&step(&app, "2026-10-26T01:29:59Z").await), None, "02:29:59 CET on Monday");
    assert_eq!(queued(&step(&app, "2026-10-26T01:30:00Z").await), Some(0), "Monday's run: nothing due");
    assert_eq!(mails(&mail).len(), 2);
    let runs = app.state.engine.job_runs(50, |r| r.job_name == "daily_digest" && r.result == JobResult::Success);
    assert_eq!(runs.expect("job runs").len(), 3, "recorded as job runs (skipped ones apart)");
}

#[tokio::test]
async fn after_downtime_the_digest_catches_up_once_and_one_offs_are_sent_once() {
    let (app, mail) = app_with_mail("UTC", "06:00", "2026-05-01T05:00:00Z").await;
    let ada = sign_up(&app, "ada").await;
    let mum = contact(&app, &ada, "Mum", None).await;
    contact(&app, &ada, "Jo", Some("1980-05-03")).await;
    let first = reminder(&app, &ada, mum, "First of May", "2026-05-01", "once").await;
    reminder(&app, &ada, mum, "Second", "2026-05-02", "once").await;
    reminder(&app, &ada, mum, "Fourth", "2026-05-04", "once").await;
    reminder(&app, &ada, mum, "Fifth", "2026-05-05", "once").await;
    assert_eq!(queued(&step(&app, "2026-05-01T06:00:00Z").await), Some(1));
    let (status, body, _) = app.call("GET", &format!("/api/v1/reminders/{first}"), Some(&ada), json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(body["last_sent"], "2026-05-01T06:00:00Z", "last_sent is set and shown: {body}");

    // Down from the 1st after the run until the 5th at 05:00 (before that day's run time).
    assert_eq!(queued(&step(&app, "2026-05-05T05:00:00Z").await), Some(1), "one catch-up run");
    assert_eq!(queued(&step(&app, "2026-05-05T05:30:00Z").await), None, "once");
    let got = mails(&mail);
    assert_eq!(got.len(), 2, "one digest for the missed days, not one per day");
    assert_eq!(subject(&got[1]), "Since 2 May: 2 reminders, 1 birthday");
    assert!(got[1].contains("Second (Mum) (on Saturday 2 May)"), "{}", got[1]);
    assert!(got[1].contains("Fourth (Mum)"));
    assert!(got[1].contains("Jo turned 46 (on Sunday 3 May)"), "{}", got[1]);
    assert!(!got[1].contains("First of May") && !got[1].contains("Fifth"));
    assert_eq!(queued(&step(&app, "2026-05-05T06:00:00Z").await), Some(1), "then the 5th as usual");
    assert!(mails(&mail)[2].contains("Fifth") && !mails(&mail)[2].contains("First of May"));

    // A run that died before recording its day (the day's marker rolled back by hand): the next
    // run covers that day again, but what went out is not sent again.
    app.state
        .engine
        .write_async(|tx| tx.global().map_put("map:job_days", "daily_digest", b"2026-05-04"))
        .await
        .expect("roll the job's day back");
    let ada = login(&app, "ada").await;
    reminder(&app, &ada, mum, "Sixth", "2026-05-06", "once").await;
    assert_eq!(queued(&step(&app, "2026-05-06T06:00:00Z").await), Some(1));
    let last = mails(&mail).pop().expect("a mail");
    assert_eq!(subject(&last), "Since 5 May: 1 reminder");
    assert!(last.contains("Sixth") && !last.contains("Fifth"), "a one-off is sent once: {last}");
}

#[tokio::test]
async fn the_digest_queues_webhook_events_and_user_b_never_gets_user_a_s() {
    let (app, mail) = app_with_mail("UTC", "06:00", "2026-06-01T08:00:00Z").await;
    let (ours, theirs) = (Receiver::start().await, Receiver::start().await);
    let ada = sign_up(&app, "ada").await;
    let bob = sign_up(&app, "bob").await;
    let events = ["reminder.triggered", "birthday.occurred", "cadence.overdue"];
    let body = json!({ "url": ours.url, "events": events });
    let (status, made, _) = app.call("POST", "/api/v1/webhooks", Some(&ada), body).await;
    assert_eq!(status, 201, "{made}");
    let secret = made["secret"].as_str().expect("a secret").to_string();
    let body = json!({ "url": theirs.url, "events": ["birthday.occurred"] });
    assert_eq!(app.call("POST", "/api/v1/webhooks", Some(&bob), body).await.0, 201);

    let grace = contact(&app, &ada, "Grace", Some("1906-06-04")).await;
    let policy = json!({ "contact_id": grace, "interval_days": 1 });
    assert_eq!(app.call("POST", "/api/v1/cadence-policies", Some(&ada), policy).await.0, 201);
    let call = reminder(&app, &ada, grace, "Ask about the conference", "2026-06-04", "once").await;
    let bobs = contact(&app, &bob, "Bertram", None).await;
    reminder(&app, &bob, bobs, "Return the drill", "2026-06-04", "once").await;

    assert_eq!(queued(&step(&app, "2026-06-04T06:00:00Z").await), Some(2), "one digest each");
    deliver_once(&app.state.notify).await;
    let got = mails(&mail);
    assert_eq!(got.len(), 2);
    let ada_mail = got.iter().find(|m| m.contains("To: ada@example.org")).expect("ada's digest");
    let bob_mail = got.iter().find(|m| m.contains("To: bob@example.org")).expect("bob's digest");
    assert_eq!(subject(ada_mail), "Today: 1 reminder, 1 birthday, 1 person to get in touch with");
    assert!(ada_mail.contains("Grace: you meant to be in touch every day (1 day overdue)"), "{ada_mail}");
    assert!(!ada_mail.contains("Bertram") && !ada_mail.contains("drill"));
    assert!(bob_mail.contains("Return the drill (Bertram)") && !bob_mail.contains("Grace"));

    let mut names = ours.events();
    names.sort();
    assert_eq!(names, ["birthday.occurred", "cadence.overdue", "reminder.triggered"]);
    let now = app.clock.now().as_second();
    for r in ours.received() {
        assert!(verify(&secret, &r.header("x-mycorrhizal-signature"), &r.body, now));
        assert!(r.header("x-correlation-id").starts_with("job:daily_digest:"), "{:?}", r.headers);
        let envelope = r.json();
        for field in ["id", "event", "timestamp", "data"] {
            assert!(envelope.get(field).is_some(), "{field} in {envelope}");
        }
        let data = &envelope["data"];
        match envelope["event"].as_str() {
            Some("reminder.triggered") => {
                assert_eq!((data["reminder_id"].as_u64(), data["contact_name"].as_str()), (Some(call), Some("Grace")));
                assert_eq!(data["due"], "2026-06-04");
            }
            Some("birthday.occurred") => {
                assert_eq!((data["contact_id"].as_u64(), data["age"].as_i64()), (Some(grace), Some(120)))
            }
            _ => assert_eq!((data["contact_id"].as_u64(), data["interval_days"].as_u64()), (Some(grace), Some(1))),
        }
    }
    assert!(theirs.received().is_empty(), "bob's webhook hears nothing of ada's day, and bob had no birthday");

    // The trigger is an admin's (ada registered first); bob is refused.
    let bob = login(&app, "bob").await;
    let (status, _, _) = app.call("POST", "/api/v1/admin/trigger-reminders", Some(&bob), json!({})).await;
    assert_eq!(status, 403);
    let (status, _, _) = app.call("POST", "/api/v1/admin/trigger-reminders", None, json!({})).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn two_trigger_calls_on_one_day_send_one_digest() {
    let (app, mail) = app_with_mail("UTC", "06:00", "2026-07-01T03:00:00Z").await;
    let ada = sign_up(&app, "ada").await;
    let mum = contact(&app, &ada, "Mum", None).await;
    let id = reminder(&app, &ada, mum, "Water the plants", "2026-07-01", "weekly").await;
    for expected in ["Reminders sent: 1 digest queued", "Reminders sent: 0 digests queued"] {
        let (status, body, _) = app.call("POST", "/api/v1/admin/trigger-reminders", Some(&ada), json!({})).await;
        assert_eq!((status, body["message"].as_str()), (200, Some(expected)), "{body}");
        deliver_once(&app.state.notify).await;
    }
    assert_eq!(queued(&step(&app, "2026-07-01T06:00:00Z").await), None, "the scheduled run finds today done");
    assert_eq!(mails(&mail).len(), 1);
    let (_, body, _) = app.call("GET", &format!("/api/v1/reminders/{id}"), Some(&ada), json!({})).await;
    assert_eq!(body["last_sent"], "2026-07-01T03:00:00Z");
    let (status, body, _) = app.call("POST", "/api/v1/admin/trigger-purge", Some(&ada), json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.starts_with("Purge completed")));
    // A week on, the weekly reminder comes round again.
    assert_eq!(queued(&step(&app, "2026-07-08T06:00:00Z").await), Some(1));
    assert_eq!(mails(&mail).len(), 2);
}

/// The daily digest's job runs of a stopped instance, newest first: (trigger, digests).
fn digest_runs(instance: &Instance) -> Vec<(Trigger, Option<u64>)> {
    let engine = crate::helpers::open_engine(&instance.database());
    let runs = engine.job_runs(50, |r| r.job_name == "daily_digest").expect("job runs");
    engine.shutdown();
    runs.iter().map(|r| (r.trigger, r.items_processed)).collect()
}

/// The same data folder and settings, with run time `time`.
fn life(base: &Instance, time: &str) -> Instance {
    let mut env = base.env.clone();
    env.insert("REMINDER_TIME".into(), time.into());
    Instance { dir: base.dir.clone(), env }
}

async fn wait_for(mail: &Mailbox, count: usize) {
    for _ in 0..500 {
        if mail.lock().expect("the sink").len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{count} mails did not arrive");
}

#[tokio::test]
async fn the_real_server_sends_one_digest_per_day_across_restarts_and_triggers() {
    let (port, mail) = smtp_sink().await;
    let today = Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC).date().to_string();
    let base = Instance::new()
        .with("SMTP_HOST", "127.0.0.1")
        .with("SMTP_PORT", &port.to_string())
        .with("SMTP_TLS", "none")
        .with("REMINDER_TIMEZONE", "UTC");
    // First life: today's run time (23:59) has not come, so a new instance sends nothing yet.
    let mut server = life(&base, "23:59").spawn();
    let ada = server.sign_up("ada").await;
    let made: Value = ada.post("/api/v1/contacts", json!({ "firstname": "Mum" })).await.json().await.expect("json");
    let mum = made["contact"]["id"].as_u64().expect("id");
    let body = json!({ "message": "Call Mum", "remind_at": today, "recurrence": "once" });
    let made: Value = ada.post(&format!("/api/v1/contacts/{mum}/reminders"), body).await.json().await.expect("json");
    let id = made["reminder"]["id"].as_u64().expect("id");
    server.terminate();

    // Second life, with a run time already passed today: it catches up at start-up, once.
    let mut server = life(&base, "00:00").spawn();
    wait_for(&mail, 1).await;
    for _ in 0..500 {
        let logged =
            server.log_lines().iter().any(|l| l["event"] == "job_finished" && l["operation"] == "daily_digest");
        if logged {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    let sent: Value = ada.get(&format!("/api/v1/reminders/{id}")).await.json().await.expect("json");
    assert!(sent["last_sent"].is_string(), "{sent}");
    server.terminate();
    let runs = digest_runs(&base);
    assert_eq!(runs, [(Trigger::Initial, Some(1))], "one run at start-up, one digest");

    // Third life: today is done; neither the start nor two triggers send it again.
    let mut server = life(&base, "00:00").spawn();
    let ada = server.sign_in("ada", crate::helpers::PASSWORD).await;
    for _ in 0..2 {
        let answer: Value = ada.post("/api/v1/admin/trigger-reminders", json!({})).await.json().await.expect("json");
        assert_eq!(answer["message"], "Reminders sent: 0 digests queued");
    }
    let again: Value = ada.get(&format!("/api/v1/reminders/{id}")).await.json().await.expect("json");
    assert_eq!(again["last_sent"], sent["last_sent"]);
    server.terminate();
    let runs = digest_runs(&base);
    assert_eq!(
        runs,
        [(Trigger::Manual, Some(0)), (Trigger::Manual, Some(0)), (Trigger::Initial, Some(1))],
        "no run at the third start"
    );
    let got = mails(&mail);
    assert_eq!(got.len(), 1, "one digest for the day");
    assert_eq!(subject(&got[0]), "Today: 1 reminder");
    assert!(got[0].contains("Call Mum (Mum)"));
}
