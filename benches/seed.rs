//! What the API and web benches share: a server state over a fresh data folder, a signed-in
//! user, and that user's book seeded straight through the engine (contacts with a card each,
//! notes and activities spread over them), each batch a durable commit.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mycorrhizal::AppState;
use mycorrhizal::config::{Config, Env};
use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::ops::ContactInput;
use mycorrhizal::crm::{activity::Activity, note::Note};
use mycorrhizal_engine::{Engine, UserScope};
use serde_json::json;

/// The `n`th seeded contact: names, an email, a phone, an address, a birthday, a note.
pub fn input(n: u64) -> ContactInput {
    let card = json!({
        "name": { "components": [{ "kind": "given", "value": format!("First{n}") }, { "kind": "surname", "value": format!("Last{:07}", (n * 7919) % 1_000_003) }] },
        "emails": [{ "address": format!("person{n}@example.org"), "contexts": ["home"] }],
        "phones": [{ "number": format!("+1 555 {:07}", n % 10_000_000), "contexts": ["mobile"] }],
        "addresses": [{ "components": [{ "kind": "name", "value": format!("{n} Mycelium Lane") }, { "kind": "locality", "value": "Spore Town" }], "contexts": ["home"] }],
        "anniversaries": [{ "kind": "birth", "date": { "partial": { "year": 1980 + (n % 30) as i32, "month": 1 + (n % 12) as u8, "day": 1 + (n % 28) as u8 } } }],
        "notes": [{ "note": "Met at the mushroom fair; likes chanterelles, hates truffle oil." }],
    });
    serde_json::from_value(json!({ "card": card, "crm": { "circles": ["Friends"] } })).expect("input")
}

/// `BENCH_<name>` from the environment, or `default`.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(format!("BENCH_{name}")).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The engine and state of a server over `dir`, opened as the server opens them (search index
/// included), with the API rate limits out of the way.
pub async fn open(dir: &std::path::Path) -> (Engine, AppState) {
    let mut vars = HashMap::new();
    vars.insert("DATA_DIR".to_string(), dir.display().to_string());
    vars.insert(
        "JWT_SECRET_KEY".to_string(),
        "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21".to_string(),
    );
    vars.insert("RATE_LIMIT_API_BURST".to_string(), "1000000".to_string());
    // The memory knobs pass through, to compare footprints (`DB_CACHE_MB=1024` is redb's own
    // default, the cache before it was bounded).
    for knob in ["DB_CACHE_MB", "SEARCH_WRITER_MB"] {
        if let Ok(value) = std::env::var(knob) {
            vars.insert(knob.to_string(), value);
        }
    }
    let config = Config::load(Env::from_map(vars)).expect("config");
    let engine = mycorrhizal::open_engine(&config).await.expect("engine");
    let state = AppState::build(engine.clone(), config).await.expect("state");
    (engine, state)
}

/// Creates `contacts` contacts for `user`, 5,000 per commit.
pub async fn contacts(user: &UserScope, contacts: u64) {
    let seed = Instant::now();
    let mut n = 0;
    while n < contacts {
        let end = (n + 5000).min(contacts);
        let batch: Vec<Contact> = (n..end).map(|i| input(i).apply(None).expect("contact")).collect();
        user.write_async(move |tx| {
            for c in &batch {
                tx.create(c.clone())?;
            }
            Ok(())
        })
        .await
        .expect("seed");
        n = end;
    }
    println!(
        "{contacts} contacts seeded in {:.1} s ({:.0}/s), durable commits",
        seed.elapsed().as_secs_f64(),
        contacts as f64 / seed.elapsed().as_secs_f64()
    );
}

/// Creates `notes` notes and as many activities, spread over contacts `1..=contacts`.
pub async fn notes_and_activities(user: &UserScope, notes: u64, contacts: u64) {
    let seed = Instant::now();
    let mut n = 0;
    while n < notes {
        let end = (n + 5000).min(notes);
        user.write_async(move |tx| {
            for i in n..end {
                let date = jiff::Timestamp::from_second(1_700_000_000 + (i as i64) * 60).expect("date");
                let contact = 1 + (i * 7919) % contacts;
                tx.create(Note {
                    content: format!("Talked about the garden and the trip, number {i}"),
                    date,
                    contact_id: Some(contact),
                })?;
                tx.create(Activity {
                    uuid: format!("00000000-0000-4000-8000-{i:012}"),
                    title: format!("Dinner {i}"),
                    description: "At the mushroom place".into(),
                    location: "Lyon".into(),
                    date,
                    contact_ids: vec![contact],
                    kind: "meal".into(),
                    external_ref: String::new(),
                    dav_name: String::new(),
                    ical: String::new(),
                })?;
            }
            Ok(())
        })
        .await
        .expect("seed notes");
        n = end;
    }
    println!("{notes} notes and {notes} activities seeded in {:.1} s", seed.elapsed().as_secs_f64());
}

/// One line of the results table: calls, p50 and p99 in milliseconds.
pub fn report(name: &str, mut lat: Vec<Duration>) {
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!("| {name:<40} | {:>6} | {:>8.3} ms | {:>8.3} ms |", lat.len(), pct(0.5), pct(0.99));
}

/// This process's resident memory now and at its peak, in MB (`VmRSS`, `VmHWM` of
/// `/proc/self/status`; zeros where there is no such file).
#[allow(dead_code)] // the web bench does not print it
pub fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (kb("VmRSS:") / 1024.0, kb("VmHWM:") / 1024.0)
}

/// Prints [`memory`] after `when`.
#[allow(dead_code)]
pub fn report_memory(when: &str) {
    let (now, peak) = memory();
    println!("resident memory {when}: {now:.0} MB (peak {peak:.0} MB)");
}

/// Registers user `bench` on the server at `base` and signs in: the session's `Cookie` value.
#[allow(dead_code)] // the in-process benches sign in through the router
pub async fn sign_in_over_http(http: &reqwest::Client, base: &str) -> String {
    let password = "lichen-moss-fern-42";
    let register = json!({ "username": "bench", "email": "bench@example.org", "password": password });
    let created = http.post(format!("{base}/api/v1/register")).json(&register).send().await.expect("register");
    assert_eq!(created.status(), 201);
    let login = json!({ "identifier": "bench", "password": password });
    let signed_in = http.post(format!("{base}/api/v1/login")).json(&login).send().await.expect("login");
    signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| {
            c.strip_prefix("auth_token=").map(|r| format!("auth_token={}", r.split(';').next().unwrap_or("")))
        })
        .expect("session cookie")
}
