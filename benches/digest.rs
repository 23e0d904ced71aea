//! The daily digest at scale: `BENCH_USERS` users (default 1,000), each with one contact, a
//! birthday today and `BENCH_REMINDERS` reminders (default 20) due today (one-offs and every
//! recurring rule), and a mail provider configured (the email channel on). Measures the job run
//! (`jobs::run(DIGEST)`, as `POST /admin/trigger-reminders` runs it): planning every user's digest from
//! read views, then the batched writes that set each reminder's `last_sent` and queue one mail
//! per user. The outbox worker is not running (delivery is the webhooks bench's subject). The
//! second variant gives every user a webhook subscribed to the digest's three events, so each
//! user also queues 21 deliveries. `BENCH_ROUNDS` fresh databases per variant (default 3);
//! median and range.

#[allow(dead_code)]
mod seed;

use std::collections::HashMap;
use std::time::Instant;

use jiff::Timestamp;
use mycorrhizal::AppState;
use mycorrhizal::auth::records::Account;
use mycorrhizal::config::{Config, Env};
use mycorrhizal::crm::calendar::{self, Recurrence};
use mycorrhizal::crm::contact::ops::ContactInput;
use mycorrhizal::crm::reminder::Reminder;
use mycorrhizal::notify::webhook_ops as webhooks;
use mycorrhizal::notify::webhooks::WebhookInput;
use mycorrhizal_engine::system::{JobResult, Trigger};
use mycorrhizal_engine::{Engine, UserId};

const RULES: [Recurrence; 6] = [
    Recurrence::Once,
    Recurrence::Weekly,
    Recurrence::Monthly,
    Recurrence::Quarterly,
    Recurrence::SixMonths,
    Recurrence::Yearly,
];

async fn open(dir: &std::path::Path) -> (Engine, AppState) {
    let mut vars = HashMap::new();
    vars.insert("DATA_DIR".to_string(), dir.display().to_string());
    vars.insert(
        "JWT_SECRET_KEY".to_string(),
        "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21".to_string(),
    );
    // A provider that is never reached: the worker does not run here.
    vars.insert("SMTP_HOST".to_string(), "127.0.0.1".to_string());
    vars.insert("SMTP_PORT".to_string(), "9".to_string());
    vars.insert("SMTP_TLS".to_string(), "none".to_string());
    let config = Config::load(Env::from_map(vars)).expect("config");
    let engine = mycorrhizal::open_engine(&config).await.expect("engine");
    let state = AppState::build(engine.clone(), config).await.expect("state");
    (engine, state)
}

/// Accounts `1..=users`, each with a contact born today and `reminders` reminders due today.
async fn seed(engine: &Engine, state: &AppState, users: u64, reminders: u64, hooks: bool) {
    let started = Instant::now();
    let today = calendar::today(Timestamp::now(), &state.config.reminder_timezone);
    let now = Timestamp::now();
    let ids = engine
        .write_async(move |tx| {
            let mut ids = Vec::new();
            for n in 0..users {
                ids.push(tx.global().insert(&Account {
                    username: format!("user{n}"),
                    email: format!("user{n}@example.org"),
                    password_hash: None,
                    is_admin: n == 0,
                    language: "en".into(),
                    date_format: "YYYY-MM-DD".into(),
                    custom_fields: Vec::new(),
                    token_version: 0,
                    totp: None,
                    recovery_codes: Vec::new(),
                    oidc_subject: None,
                    oidc_provider: None,
                    created_at: now,
                    updated_at: now,
                })?);
            }
            Ok(ids)
        })
        .await
        .expect("accounts");
    for chunk in ids.chunks(100) {
        let chunk = chunk.to_vec();
        engine
            .write_async(move |tx| {
                for &user in &chunk {
                    let scope = tx.user(UserId(user));
                    let born = format!("1980-{:02}-{:02}", today.month(), today.day());
                    let input: ContactInput = serde_json::from_value(
                        serde_json::json!({ "firstname": format!("Friend{user}"), "birthday": born }),
                    )
                    .expect("input");
                    let contact = scope.create(input.apply(None).expect("contact"))?.id;
                    for r in 0..reminders {
                        let rule = RULES[(r as usize) % RULES.len()];
                        // Recurring ones started a year or so ago, on a day of their rule.
                        let start = match rule {
                            Recurrence::Once => today,
                            Recurrence::Weekly => today.checked_sub(jiff::Span::new().days(7 * 52)).expect("day"),
                            _ => today.checked_sub(jiff::Span::new().years(1)).expect("day"),
                        };
                        scope.create(Reminder {
                            message: format!("Reminder {r} for user {user}"),
                            remind_at: calendar::midnight(start),
                            recurrence: rule,
                            anchor_day: today.day(),
                            contact_id: contact,
                            by_mail: false,
                            reoccur_from_completion: true,
                            last_sent: None,
                        })?;
                    }
                }
                Ok(())
            })
            .await
            .expect("reminders");
    }
    if hooks {
        for &user in &ids {
            let input = WebhookInput {
                url: Some("http://127.0.0.1:9/hook".into()),
                events: Some(vec!["reminder.triggered".into(), "birthday.occurred".into(), "cadence.overdue".into()]),
                description: None,
                active: None,
            };
            webhooks::create(&state.notify, user, input).await.expect("webhook");
        }
    }
    println!(
        "  seeded {users} users x {reminders} reminders{} in {:.1} s",
        if hooks { " + a webhook each" } else { "" },
        started.elapsed().as_secs_f64()
    );
}

/// One run on a fresh database: seconds to assemble and queue every digest.
async fn run(users: u64, reminders: u64, hooks: bool) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, state) = open(dir.path()).await;
    seed(&engine, &state, users, reminders, hooks).await;
    let started = Instant::now();
    let job = mycorrhizal::jobs::run(&state, mycorrhizal::jobs::DIGEST, Trigger::Manual).await.unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!(job.result, JobResult::Success, "{:?}", job.error);
    assert_eq!(job.items_processed, Some(users), "every user got a digest");
    engine.shutdown();
    took
}

fn summary(name: &str, mut values: Vec<f64>) {
    values.sort_by(|a, b| a.total_cmp(b));
    let median = values[values.len() / 2];
    println!(
        "{name}: median {median:.2} s (range {:.2}-{:.2} s over {} runs)",
        values[0],
        values[values.len() - 1],
        values.len()
    );
}

fn main() {
    let users = seed::setting("USERS", 1000);
    let reminders = seed::setting("REMINDERS", 20);
    let rounds = seed::setting("ROUNDS", 3);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let (mut mail, mut hooked) = (Vec::new(), Vec::new());
        for round in 1..=rounds {
            let plain = run(users, reminders, false).await;
            let with = run(users, reminders, true).await;
            println!("round {round}: digests for {users} users x {reminders} reminders queued in {plain:.2} s; with a webhook each {with:.2} s");
            mail.push(plain);
            hooked.push(with);
        }
        summary(&format!("{users} digests (email channel)"), mail);
        summary(&format!("{users} digests + 21 webhook deliveries each"), hooked);
    });
}
