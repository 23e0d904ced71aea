//! Webhook fan-out against the write path: 10,000 contact creations (through the domain
//! operation, 16 callers at a time, durable group commits) with 3 webhooks subscribed to
//! `contact.created`, against the same run with none; and how long until the 30,000 deliveries
//! reached a loopback receiver (the outbox worker running as in the server: `worker::start`). The two variants
//! alternate in one process, `BENCH_ROUNDS` times (default 3), each on a fresh database; the
//! report gives medians and ranges. `BENCH_WRITES` changes the 10,000. A third variant queues
//! the same deliveries with the worker off, to tell the write path's own cost from the
//! worker's competition. `BENCH_VARIANTS` (a comma list of `without`, `with`, `idle`; all three by
//! default) runs only some of them, e.g. to profile one.

#[allow(dead_code)]
mod seed;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mycorrhizal::notify::webhook_ops as webhooks;
use mycorrhizal::notify::webhooks::WebhookInput;
use mycorrhizal_engine::UserId;

const CALLERS: u64 = 16;

/// A loopback receiver answering 200 and counting what it got.
async fn receiver() -> (String, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicU64::new(0));
    let seen = count.clone();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let seen = seen.clone();
        async move {
            if !body.is_empty() {
                seen.fetch_add(1, Ordering::Relaxed);
            }
            "ok"
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (url, count)
}

/// One run: returns (writes per second, seconds until every delivery arrived).
async fn run(writes: u64, hooks: u64, worker: bool) -> (f64, Option<f64>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (engine, state) = seed::open(dir.path()).await;
    let (url, count) = receiver().await;
    for _ in 0..hooks {
        let input = WebhookInput {
            url: Some(url.clone()),
            events: Some(vec!["contact.created".into()]),
            description: None,
            active: None,
        };
        webhooks::create(&state.notify, 1, input).await.expect("webhook");
    }
    // As the server starts it: its own thread and runtime at background priority; stopped when
    // the run ends.
    let running = worker.then(|| mycorrhizal::notify::worker::start(state.notify.clone()));
    let user = engine.user(UserId(1));
    let started = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..CALLERS {
        let user = user.clone();
        callers.spawn(async move {
            let mut n = caller;
            while n < writes {
                mycorrhizal::crm::contact::ops::create(&user, seed::input(n)).await.expect("create");
                n += CALLERS;
            }
        });
    }
    while callers.join_next().await.is_some() {}
    let wrote = started.elapsed().as_secs_f64();
    let expected = writes * hooks;
    let mut delivered = None;
    if hooks > 0 && worker {
        let limit = Instant::now() + Duration::from_secs(180);
        while Instant::now() < limit {
            if count.load(Ordering::Relaxed) >= expected {
                delivered = Some(started.elapsed().as_secs_f64());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if delivered.is_none() {
            println!("  only {} of {expected} deliveries within 180 s", count.load(Ordering::Relaxed));
        }
    }
    drop(running);
    engine.shutdown();
    (writes as f64 / wrote, delivered)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let writes = seed::setting("WRITES", 10_000);
    let rounds = seed::setting("ROUNDS", 3);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let (mut plain, mut hooked, mut delivered, mut idle) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let variants = std::env::var("BENCH_VARIANTS").unwrap_or_else(|_| "without,with,idle".into());
        let wanted = |name: &str| variants.split(',').any(|v| v.trim() == name);
        for round in 1..=rounds {
            if wanted("without") {
                let (without, _) = run(writes, 0, true).await;
                println!("round {round}: {writes} creates without webhooks {without:.0}/s");
                plain.push(without);
            }
            if wanted("with") {
                let (with, all) = run(writes, 3, true).await;
                println!(
                    "round {round}: {writes} creates with 3 webhooks {with:.0}/s, {} deliveries all received after {}",
                    writes * 3,
                    all.map(|s| format!("{s:.1} s")).unwrap_or_else(|| "(not all)".into())
                );
                hooked.push(with);
                if let Some(s) = all {
                    delivered.push(s);
                }
            }
            if wanted("idle") {
                let (queued_only, _) = run(writes, 3, false).await;
                println!("round {round}: with 3 webhooks and no delivery worker {queued_only:.0}/s");
                idle.push(queued_only);
            }
        }
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            format!("{lo:.0}-{hi:.0}")
        };
        let against = |v: f64| {
            if plain.is_empty() {
                String::new()
            } else {
                format!(", {:+.1}% against without", (v / median(&mut plain.clone()) - 1.0) * 100.0)
            }
        };
        if !plain.is_empty() {
            println!("without webhooks: median {:.0}/s (range {}/s)", median(&mut plain.clone()), range(&plain));
        }
        if !hooked.is_empty() {
            let h = median(&mut hooked.clone());
            println!("with 3 webhooks:  median {h:.0}/s (range {}/s){}", range(&hooked), against(h));
        }
        if !idle.is_empty() {
            let q = median(&mut idle.clone());
            println!(
                "with 3 webhooks, worker off (the write path's own cost): median {q:.0}/s (range {}/s){}",
                range(&idle),
                against(q)
            );
        }
        if !delivered.is_empty() {
            let d = median(&mut delivered.clone());
            println!(
                "all {} deliveries received: median {d:.1} s after the first write (range {:.1}-{:.1} s)",
                writes * 3,
                delivered.iter().copied().fold(f64::INFINITY, f64::min),
                delivered.iter().copied().fold(0.0, f64::max)
            );
        }
    });
}
