//! API benchmark, in process (the real router and engine, no socket): over a user with
//! `BENCH_CONTACTS` contacts (default 100000) and `BENCH_NOTES` notes plus as many activities
//! (default 250000 each: 500k in all), the latency of listing 50 by name, getting one contact,
//! the composite detail, the dashboard, creating and updating (each write a durable commit),
//! and the process's resident memory (now and peak) after seeding and after the workload.
//! `DB_CACHE_MB` and `SEARCH_WRITER_MB` are passed to the server's configuration.
//!
//! Run: `cargo bench -p mycorrhizal --bench api`.

mod seed;

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use mycorrhizal::app;
use mycorrhizal::crm::contact::Contact;
use mycorrhizal::crm::contact::view::ContactSummary;
use mycorrhizal_engine::UserId;
use serde_json::{Value, json};
use tower::ServiceExt;

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

fn main() {
    let contacts = seed::setting("CONTACTS", 100_000);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("tempdir");
        let (engine, state) = seed::open(dir.path()).await;
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

        let user = engine.user(UserId(1));
        print!("api bench: ");
        seed::contacts(&user, contacts).await;
        // Notes and activities spread over the contacts (ids start at 1 for the only user), a
        // few favourites, and a cadence policy over a small circle, so the dashboard has work.
        let notes = seed::setting("NOTES", 250_000);
        print!("api bench: ");
        seed::notes_and_activities(&user, notes, contacts).await;
        for id in 1..=50u64 {
            let (status, _) = call(&router, "POST", &format!("/api/v1/contacts/{id}/favorite"), &cookie, None).await;
            assert_eq!(status, 200);
        }
        let policy = json!({ "contact_id": 1, "interval_days": 30, "qualifying_types": ["meal"] });
        let (status, _) = call(&router, "POST", "/api/v1/cadence-policies", &cookie, Some(policy)).await;
        assert!(status == 201 || status == 200, "cadence policy: {status}");
        seed::report_memory("after seeding");
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
        seed::report("list 50 by name (with total)", lat);

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
        seed::report("  of which: engine walk of 50", lat);
        seed::report("  of which: walk + summaries + JSON", lat_json);

        let mut lat = Vec::new();
        for id in &ids {
            let (status, bytes_, took) = timed(&router, "GET", &format!("/api/v1/contacts/{id}"), &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        seed::report("get one contact", lat);

        let mut lat = Vec::new();
        for id in ids.iter().take(300) {
            let (status, bytes_, took) =
                timed(&router, "GET", &format!("/api/v1/contacts/{id}/detail"), &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        seed::report("composite detail", lat);

        // Every block reads only what it shows; with every contact holding a birthday, what the
        // birthdays block shows is about 8,300 contacts (the next 30 days), so calls stay few.
        let mut lat = Vec::new();
        for _ in 0..50 {
            let (status, bytes_, took) = timed(&router, "GET", "/api/v1/dashboard", &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        seed::report("dashboard", lat);

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
        seed::report("create (durable, one writer)", lat);

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
        seed::report("update (durable, one writer)", lat);

        let mut lat = Vec::new();
        for i in 0..100 {
            let (status, bytes_, took) =
                timed(&router, "GET", &format!("/api/v1/contacts?search=person{}@", 1 + i * 997), &cookie, None).await;
            lat.push(took);
            let _: Value = serde_json::from_slice(&bytes_).unwrap_or(Value::Null);
            assert_eq!(status, 200);
        }
        seed::report("list with search (full-text index)", lat);
        seed::report_memory("after the workload");
        engine.shutdown();
    });
}
