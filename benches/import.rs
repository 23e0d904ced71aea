//! Import benchmark, in process (the real router and engine with its search index, no socket):
//! a seeded generator writes N realistic vCards (accented names, emails, phones, addresses,
//! birthdays, notes; every name distinct; 10% with an inline photo, 5% duplicating a contact the
//! user already has (by email), 2% repeating an earlier card of the same file), then times upload -> preview -> confirm with
//! every row's suggested action, for each N in `BENCH_IMPORT_SIZES` (default `10000,100000`).
//! Also the streamed vCard export of the result, and the peak RSS growth while it streams.
//!
//! Times are the server's: from sending a request to holding its whole answer. `total` is upload
//! plus preview plus confirm; the client's part in between (reading the preview, writing the
//! confirm) is the `client s` column, apart. `searchable s` is from the confirm's start until the
//! search index holds every imported card (indexing trails the confirm; searches cover the rest).
//! `IMPORT_BATCH_ROWS` is honoured from the environment; `BENCH_SCHED=1` prints each thread's CPU
//! time during the confirm, and its time waiting for a core, to stderr.
//!
//! Run: `cargo bench -p mycorrhizal --bench import`.

mod cards;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use mycorrhizal::config::{Config, Env};
use mycorrhizal::{AppState, app};
use serde_json::{Value, json};
use tower::ServiceExt;

use cards::file;

async fn send(router: &axum::Router, request: Request<Body>) -> (u16, Value) {
    let response = router.clone().oneshot(request).await.expect("response");
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Sends a request; the status and the body's bytes (the server's whole answer, not yet read).
async fn send_raw(router: &axum::Router, request: Request<Body>) -> (u16, axum::body::Bytes) {
    let response = router.clone().oneshot(request).await.expect("response");
    let status = response.status().as_u16();
    (status, axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body"))
}

/// What the client reads of a preview: the session and each row's suggestion.
#[derive(serde::Deserialize)]
struct PreviewBody {
    session_id: String,
    rows: Vec<PreviewRow>,
}

#[derive(serde::Deserialize)]
struct PreviewRow {
    row_index: u64,
    suggested_action: String,
}

fn json_request(uri: &str, cookie: &str, body: &Value) -> Request<Body> {
    Request::builder()
        .method("POST")
        .uri(uri)
        .header("cookie", format!("auth_token={cookie}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

async fn sign_up(router: &axum::Router, name: &str) -> String {
    let register =
        json!({ "username": name, "email": format!("{name}@example.org"), "password": "lichen-moss-fern-42" });
    send(router, json_request("/api/v1/register", "", &register)).await;
    let login = json!({ "identifier": name, "password": "lichen-moss-fern-42" });
    let response = router.clone().oneshot(json_request("/api/v1/login", "", &login)).await.expect("login");
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix("auth_token=").map(|r| r.split(';').next().unwrap_or("").to_string()))
        .expect("cookie")
}

/// Resident set size now, and the peak so far, in MB (Linux).
fn rss_mb() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Bytes this process has caused to be written to storage so far (Linux `/proc/self/io`), in MB.
fn written_mb() -> f64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes:")).and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(0.0)
        / 1e6
}

/// With `BENCH_SCHED` set: each thread's CPU time during the confirm, and its time waiting for a
/// core (Linux schedstat), summed by thread name, to stderr.
fn print_sched(before: &HashMap<String, (String, f64, f64, f64)>, after: &HashMap<String, (String, f64, f64, f64)>) {
    let mut by: HashMap<&str, (f64, f64)> = HashMap::new();
    for (tid, (name, run, wait, _)) in after {
        let (run0, wait0) = before.get(tid).map_or((0.0, 0.0), |(_, r, w, _)| (*r, *w));
        let sum = by.entry(name).or_default();
        sum.0 += run - run0;
        sum.1 += wait - wait0;
    }
    let mut threads: Vec<_> = by.into_iter().filter(|(_, (run, _))| *run > 0.01).collect();
    threads.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
    for (name, (run, wait)) in threads {
        eprintln!("confirm thread {name:20} cpu {run:6.2} s  waiting for a core {wait:6.2} s");
    }
}

/// Per thread: name, CPU seconds, runqueue-wait seconds, timeslices (Linux schedstat).
fn sched() -> HashMap<String, (String, f64, f64, f64)> {
    let mut out = HashMap::new();
    for e in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let p = e.path();
        let name = std::fs::read_to_string(p.join("comm")).unwrap_or_default().trim().to_string();
        let st = std::fs::read_to_string(p.join("schedstat")).unwrap_or_default();
        let f: Vec<f64> = st.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if f.len() == 3 {
            out.insert(e.file_name().to_string_lossy().into_owned(), (name, f[0] / 1e9, f[1] / 1e9, f[2]));
        }
    }
    out
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    let sizes: Vec<usize> = std::env::var("BENCH_IMPORT_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
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
        vars.insert("IMPORT_MAX_FILE_MB".to_string(), "1024".to_string());
        vars.insert("IMPORT_MAX_CARDS".to_string(), "1000000".to_string());
        // `IMPORT_BATCH_ROWS` from the environment, for comparing batch sizes.
        if let Ok(rows) = std::env::var("IMPORT_BATCH_ROWS") {
            vars.insert("IMPORT_BATCH_ROWS".to_string(), rows);
        }
        let config = Config::load(Env::from_map(vars)).expect("config");
        let engine = mycorrhizal::open_engine(&config).await.expect("engine");
        let state = AppState::build(engine.clone(), config).await.expect("state");
        let router = app(state.clone());
        println!("| cards | file MB | upload+preview s | confirm s | confirm writes MB | total s | cards/s | client s | searchable s | created | updated | skipped | errors | vCard export s | export MB | export peak RSS growth MB |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for size in sizes {
            let cookie = sign_up(&router, &format!("bench{size}")).await;
            // Existing contacts, 10% of the file's size, some of which the file duplicates.
            let existing = size / 10;
            let mut records = Vec::new();
            for e in 0..existing {
                records.push(json!({ "card": { "name": { "full": format!("Existing Person{e}") }, "emails": [{ "address": format!("existing{e}@example.org") }] } }));
                if records.len() == 500 || e + 1 == existing {
                    let batch = json!({ "records": std::mem::take(&mut records) });
                    let (_, preview) = send(&router, json_request("/api/v1/contacts/import/records", &cookie, &batch)).await;
                    let actions: Vec<Value> = preview["rows"].as_array().expect("rows").iter().map(|r| json!({ "row_index": r["row_index"], "action": "add" })).collect();
                    let confirm = json!({ "session_id": preview["session_id"], "actions": actions });
                    send(&router, json_request("/api/v1/contacts/import/vcf/confirm", &cookie, &confirm)).await;
                }
            }
            let bytes = file(size, existing);
            let file_mb = bytes.len() as f64 / 1e6;
            let boundary = "bench-boundary";
            let mut body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"contacts.vcf\"\r\n\r\n").into_bytes();
            body.extend_from_slice(&bytes);
            body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
            drop(bytes);
            let started = Instant::now();
            let upload = Request::builder()
                .method("POST")
                .uri("/api/v1/contacts/import/vcf/upload")
                .header("cookie", format!("auth_token={cookie}"))
                .header("content-type", format!("multipart/form-data; boundary={boundary}"))
                .body(Body::from(body))
                .expect("upload");
            let (status, preview) = send_raw(&router, upload).await;
            let previewed = started.elapsed();
            // The client's part (reading the preview, choosing actions, writing the confirm) is
            // not the server's time: it is measured apart.
            let client = Instant::now();
            let preview: PreviewBody = serde_json::from_slice(&preview)
                .unwrap_or_else(|e| panic!("{status}: {e}: {}", String::from_utf8_lossy(&preview)));
            assert_eq!(status, 200);
            let actions: Vec<Value> = preview
                .rows
                .iter()
                .map(|r| json!({ "row_index": r.row_index, "action": r.suggested_action }))
                .collect();
            let confirm = json!({ "session_id": preview.session_id, "actions": actions });
            let confirm_request = json_request("/api/v1/contacts/import/vcf/confirm", &cookie, &confirm);
            drop((preview, actions, confirm));
            let client = client.elapsed();
            let confirming = Instant::now();
            let written_before = written_mb();
            let sched_before = sched();
            let (status, result) = send_raw(&router, confirm_request).await;
            let confirmed = confirming.elapsed();
            let result: Value = serde_json::from_slice(&result).unwrap_or(Value::Null);
            assert_eq!(status, 200, "{result}");
            let confirm_written = written_mb() - written_before;
            // Search indexing trails the confirm (searches cover what is not indexed yet).
            engine.search_flush().expect("search flush");
            let indexed = confirming.elapsed();
            if std::env::var("BENCH_SCHED").is_ok() {
                print_sched(&sched_before, &sched());
            }
            let total = previewed + confirmed;
            // Peak RSS is reset (Linux: clear_refs 5) so the export's own growth is measured.
            let _ = std::fs::write("/proc/self/clear_refs", "5");
            let (rss_before, _) = rss_mb();
            let export_started = Instant::now();
            let export = Request::builder()
                .uri("/api/v1/export/vcf")
                .header("cookie", format!("auth_token={cookie}"))
                .body(Body::empty())
                .expect("export");
            let response = router.clone().oneshot(export).await.expect("export");
            let mut stream = response.into_body().into_data_stream();
            let mut exported = 0usize;
            while let Some(chunk) = futures_next(&mut stream).await {
                exported += chunk.len();
            }
            let export_time = export_started.elapsed();
            let (_, peak) = rss_mb();
            println!(
                "| {size} | {file_mb:.1} | {:.2} | {:.2} | {confirm_written:.0} | {:.2} | {:.0} | {:.2} | {:.2} | {} | {} | {} | {} | {:.2} | {:.1} | {:.0} |",
                secs(previewed),
                secs(confirmed),
                secs(total),
                size as f64 / secs(total),
                secs(client),
                secs(indexed),
                result["created"],
                result["updated"],
                result["skipped"],
                result["error_count"],
                secs(export_time),
                exported as f64 / 1e6,
                peak - rss_before,
            );
        }
        engine.shutdown();
    });
}

/// The next chunk of a body stream (without pulling in a futures crate for `StreamExt`).
async fn futures_next(stream: &mut axum::body::BodyDataStream) -> Option<axum::body::Bytes> {
    std::future::poll_fn(|cx| {
        use futures_core::Stream;
        std::pin::Pin::new(&mut *stream).poll_next(cx)
    })
    .await
    .and_then(Result::ok)
}
