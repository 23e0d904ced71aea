//! API benchmark, in process (the real router and engine, no socket): over a user with
//! `BENCH_CONTACTS` contacts (default 100000) and `BENCH_NOTES` notes plus as many activities
//! (default 250000 each: 500k in all), the latency of listing 50 by name, getting one contact,
//! the composite detail, the dashboard, creating and updating (each write a durable commit).
//!
//! Run: `cargo bench -p mycorrhizal --bench api`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use mycorrhizal::config::{Config, Env};
use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::ops::ContactInput;
use mycorrhizal::crm::contact::view::ContactSummary;
use mycorrhizal::crm::records::{Activity, Note};
use mycorrhizal::{AppState, app};
use mycorrhizal_engine::UserId;
use serde_json::{Value, json};
use tower::ServiceExt;

fn input(n: u64) -> ContactInput {
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

/// One request, timed from the request to the last byte of the answer (the harness's own JSON
/// parsing of the answer is not counted).
async fn call(router: &axum::Router, method: &str, uri: &str, cookie: &str, body: Option<Value>) -> (u16, Value) {
    let (status, bytes, _) = timed(router, method, uri, cookie, body).await;
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn timed(
    router: &axum::Router,
    method: &str,
    uri: &str,
    cookie: &str,
    body: Option<Value>,
) -> (u16, axum::body::Bytes, Duration) {
    let mut request = Request::builder().method(method).uri(uri).header("cookie", format!("auth_token={cookie}"));
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let body = body.map(|b| Body::from(b.to_string())).unwrap_or_else(Body::empty);
    let request = request.body(body).expect("request");
    let started = Instant::now();
    // The router is built once, as in the server; each call takes a cheap clone.
    let response = router.clone().oneshot(request).await.expect("response");
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
    (status, bytes, started.elapsed())
}

fn report(name: &str, mut lat: Vec<Duration>) {
    lat.sort();
    let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!("| {name:<40} | {:>6} | {:>8.3} ms | {:>8.3} ms |", lat.len(), pct(0.5), pct(0.99));
}

fn main() {
    let contacts: u64 = std::env::var("BENCH_CONTACTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut vars = HashMap::new();
        vars.insert("DATA_DIR".to_string(), dir.path().display().to_string());
        vars.insert(
            "JWT_SECRET_KEY".to_string(),
            "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21".to_string(),
        );
        vars.insert("RATE_LIMIT_API_BURST".to_string(), "1000000".to_string());
        let config = Config::load(Env::from_map(vars)).expect("config");
        // Opened as the server opens it (search index included).
        let engine = mycorrhizal::open_engine(&config).await.expect("engine");
        let state = AppState::build(engine.clone(), config).await.expect("state");
        let router = app(state.clone());
        let register = json!({ "username": "bench", "email": "bench@example.org", "password": "lichen-moss-fern-42" });
        call(&router, "POST", "/api/v1/register", "", Some(register)).await;
        let login = Request::builder()
            .method("POST")
            .uri("/api/v1/login")
            .header("content-type", "application/json")
            .body(Body::from(json!({ "identifier": "bench", "password": "lichen-moss-fern-42" }).to_string()))
            .expect("login");
        let response = router.clone().oneshot(login).await.expect("login");
        let cookie = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("auth_token=").map(|r| r.split(';').next().unwrap_or("").to_string()))
            .expect("cookie");

        let seed = Instant::now();
        let user = engine.user(UserId(1));
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
            "api bench: {contacts} contacts seeded in {:.1} s ({:.0}/s), durable commits",
            seed.elapsed().as_secs_f64(),
            contacts as f64 / seed.elapsed().as_secs_f64()
        );
        // Notes and activities spread over the contacts (ids start at 1 for the only user), a
        // few favourites, and a cadence policy over a small circle, so the dashboard has work.
        let notes: u64 = std::env::var("BENCH_NOTES").ok().and_then(|v| v.parse().ok()).unwrap_or(250_000);
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
                    })?;
                }
                Ok(())
            })
            .await
            .expect("seed notes");
            n = end;
        }
        for id in 1..=50u64 {
            let (status, _) = call(&router, "POST", &format!("/api/v1/contacts/{id}/favorite"), &cookie, None).await;
            assert_eq!(status, 200);
        }
        let policy = json!({ "contact_id": 1, "interval_days": 30, "qualifying_types": ["meal"] });
        let (status, _) = call(&router, "POST", "/api/v1/cadence-policies", &cookie, Some(policy)).await;
        assert!(status == 201 || status == 200, "cadence policy: {status}");
        println!("api bench: {notes} notes and {notes} activities seeded in {:.1} s", seed.elapsed().as_secs_f64());
        println!("| operation                                |  calls |      p50    |      p99    |");
        println!("|------------------------------------------|-------:|------------:|------------:|");

        let (_, first) = call(&router, "GET", "/api/v1/contacts?sort=name&limit=50", &cookie, None).await;
        assert_eq!(first["contacts"].as_array().map(Vec::len), Some(50));
        let ids: Vec<u64> = (0..500).map(|i| 1 + (i * 7919) % contacts).collect();
        let mut cursors = vec![String::new()];
        let mut lat = Vec::new();
        for i in 0..500 {
            let cursor = &cursors[i % cursors.len()];
            let uri = if cursor.is_empty() {
                "/api/v1/contacts?sort=name&limit=50".to_string()
            } else {
                format!("/api/v1/contacts?sort=name&limit=50&cursor={cursor}")
            };
            let (status, bytes_, took) = timed(&router, "GET", &uri, &cookie, None).await;
            lat.push(took);
            let page: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
            if cursors.len() < 50 {
                cursors.push(page["next_cursor"].as_str().unwrap_or("").to_string());
            }
        }
        report("list 50 by name (with total)", lat);

        let mut lat = Vec::new();
        let mut lat_json = Vec::new();
        for _ in 0..300 {
            let t = Instant::now();
            let view = user.view().expect("view");
            let walk = mycorrhizal_engine::Walk {
                index: "sort_name",
                from: "last0500000",
                to: None,
                after: None,
                descending: false,
            };
            let page = view.walk::<Contact>(walk, 50, |r| !r.body.archived).expect("walk");
            lat.push(t.elapsed());
            let items: Vec<ContactSummary> = page.rows.iter().map(ContactSummary::of).collect();
            let _ = serde_json::to_vec(&items).expect("json");
            lat_json.push(t.elapsed());
        }
        report("  of which: engine walk of 50", lat);
        report("  of which: walk + summaries + JSON", lat_json);

        let mut lat = Vec::new();
        for id in &ids {
            let (status, bytes_, took) = timed(&router, "GET", &format!("/api/v1/contacts/{id}"), &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        report("get one contact", lat);

        let mut lat = Vec::new();
        for id in ids.iter().take(300) {
            let (status, bytes_, took) =
                timed(&router, "GET", &format!("/api/v1/contacts/{id}/detail"), &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        report("composite detail", lat);

        // Every block reads only what it shows; with every contact holding a birthday, what the
        // birthdays block shows is about 8,300 contacts (the next 30 days), so calls stay few.
        let mut lat = Vec::new();
        for _ in 0..50 {
            let (status, bytes_, took) = timed(&router, "GET", "/api/v1/dashboard", &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        report("dashboard", lat);

        let mut lat = Vec::new();
        for i in 0..300 {
            let (status, bytes_, took) = timed(
                &router,
                "POST",
                "/api/v1/contacts",
                &cookie,
                Some(json!({ "firstname": format!("New{i}"), "email": format!("new{i}@example.org") })),
            )
            .await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 201);
        }
        report("create (durable, one writer)", lat);

        let mut lat = Vec::new();
        for id in ids.iter().take(300) {
            let (status, bytes_, took) = timed(
                &router,
                "PUT",
                &format!("/api/v1/contacts/{id}"),
                &cookie,
                Some(json!({ "nickname": "Updated" })),
            )
            .await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        report("update (durable, one writer)", lat);

        let mut lat = Vec::new();
        for i in 0..100 {
            let (status, bytes_, took) =
                timed(&router, "GET", &format!("/api/v1/contacts?search=person{}@", 1 + i * 997), &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        report("list with search (full-text index)", lat);
        engine.shutdown();
    });
}
