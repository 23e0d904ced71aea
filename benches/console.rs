//! The operator's console at scale: `BENCH_EVENTS` system events (default 1,000,000) spread over
//! the last 30 days (components, types and severities mixed, one in twenty a failure) and
//! `BENCH_RUNS` job runs (default 100,000) of twelve jobs. Measures, in process on the real
//! engine: a filtered page of the timeline (component and severity, a type, the last day, the
//! newest page), a filtered page of the job runs, every job's health, every subsystem's health,
//! error aggregation over 168 hours, one alert evaluation, and a `/metrics` scrape through the
//! router. Targets (issue #51): page p99 <= 10 ms, aggregation <= 100 ms, evaluation <= 50 ms,
//! scrape <= 5 ms.

#[allow(dead_code)]
mod seed;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use jiff::{SignedDuration, Timestamp};
use mycorrhizal::AppState;
use mycorrhizal::config::{Config, Env};
use mycorrhizal::ops::job_runs::RunQuery;
use mycorrhizal::ops::timeline::{self, AggregationQuery, EventQuery};
use mycorrhizal_engine::system::{JobResult, JobRun, Severity, SystemEvent, Trigger};
use mycorrhizal_engine::{Durability, Engine, Options, SystemClock};
use tower::ServiceExt;

const TOKEN: &str = "bench-scrape-token-7f3a";

fn count(var: &str, default: u64) -> u64 {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn open(dir: &std::path::Path) -> AppState {
    let mut vars = HashMap::new();
    vars.insert("DATA_DIR".to_string(), dir.display().to_string());
    vars.insert(
        "JWT_SECRET_KEY".to_string(),
        "3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21".to_string(),
    );
    vars.insert("METRICS_ENABLED".to_string(), "true".to_string());
    vars.insert("METRICS_TOKEN".to_string(), TOKEN.to_string());
    let config = Config::load(Env::from_map(vars)).expect("config");
    let options = Options {
        migrations: mycorrhizal::crm::migrations(),
        clock: Arc::new(SystemClock),
        // Seeding speed: what is measured are reads.
        durability: Durability::None,
        ..Options::default()
    };
    let (engine, _) = Engine::open(config.database_path(), options).expect("engine");
    AppState::build(engine, config).await.expect("state")
}

const COMPONENTS: [(&str, &str, &str); 6] = [
    ("notification", "notification_sent", "notification_failed"),
    ("webhook", "integration_failed", "integration_failed"),
    ("backup", "backup_completed", "backup_failed"),
    ("scheduler", "job_failed", "job_failed"),
    ("migration", "migration_completed", "migration_failed"),
    ("app", "application_started", "application_stopped"),
];

fn event(i: u64, now: Timestamp, span_secs: i64) -> SystemEvent {
    let (component, ok_type, failed_type) = COMPONENTS[(i % 6) as usize];
    let failed = i % 20 == 0;
    let at = now - SignedDuration::from_secs((i as i64 * 7919) % span_secs);
    SystemEvent {
        id: 0,
        component: component.into(),
        severity: if failed {
            Severity::Error
        } else if i % 50 == 1 {
            Severity::Warn
        } else {
            Severity::Info
        },
        event_type: if failed { failed_type } else { ok_type }.into(),
        correlation_id: Some(format!("job:bench:{}", i % 5000)),
        occurred_at: at,
        created_at: at,
        detail: Some(r#"{"channel":"ntfy"}"#.into()),
        error: failed.then(|| format!("receiver answered 50{} after {} attempts", i % 4, i % 9)),
        duration_ms: Some(i % 300),
        operation: None,
        result: Some(if failed { JobResult::Failure } else { JobResult::Success }),
        user_id: None,
    }
}

fn run(i: u64, now: Timestamp, jobs: &[&'static str]) -> JobRun {
    let started = now - SignedDuration::from_secs((i as i64 * 104_729) % (30 * 86_400));
    JobRun {
        id: 0,
        job_name: jobs[(i % jobs.len() as u64) as usize].to_string(),
        trigger: Trigger::Scheduled,
        started_at: started,
        finished_at: started + SignedDuration::from_millis((i % 900) as i64),
        duration_ms: i % 900,
        result: match i % 25 {
            0 => JobResult::Failure,
            1 | 2 => JobResult::Skipped,
            _ => JobResult::Success,
        },
        error: (i % 25 == 0).then(|| "disk went away".to_string()),
        items_processed: Some(i % 100),
        correlation_id: Some(format!("job:bench:{i}")),
        detail: None,
    }
}

/// Records `total` entries `make` builds, 512 at a time in flight.
async fn seed_log<F, Fut>(total: u64, make: F)
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut n = 0;
    while n < total {
        let end = (n + 512).min(total);
        let tasks: Vec<_> = (n..end).map(|i| tokio::spawn(make(i))).collect();
        for task in tasks {
            task.await.expect("seed task");
        }
        n = end;
    }
}

fn time<T>(rounds: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    (0..rounds)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(f());
            started.elapsed()
        })
        .collect()
}

async fn time_async<T, Fut: std::future::Future<Output = T>>(
    rounds: usize,
    mut f: impl FnMut() -> Fut,
) -> Vec<Duration> {
    let mut out = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        std::hint::black_box(f().await);
        out.push(started.elapsed());
    }
    out
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let events = count("BENCH_EVENTS", 1_000_000);
    let runs = count("BENCH_RUNS", 100_000);
    let dir = tempfile::tempdir().expect("temporary folder");
    let state = open(dir.path()).await;
    let engine = state.engine.clone();
    let now = Timestamp::now();
    let started = Instant::now();
    let e = engine.clone();
    seed_log(events, move |i| {
        let e = e.clone();
        async move {
            e.record_event(event(i, now, 30 * 86_400)).await.expect("event");
        }
    })
    .await;
    let jobs = mycorrhizal::jobs::names();
    let e = engine.clone();
    let names = jobs.clone();
    seed_log(runs, move |i| {
        let (e, names) = (e.clone(), names.clone());
        async move {
            e.record_job_run(run(i, now, &names)).await.expect("run");
        }
    })
    .await;
    println!("{events} events and {runs} job runs seeded in {:.1} s", started.elapsed().as_secs_f64());
    seed::report_memory("after seeding");

    println!("| operation                                | calls |      p50    |      p99    |");
    println!("|------------------------------------------|-------|-------------|-------------|");
    let page = |q: EventQuery| {
        let engine = engine.clone();
        async move { timeline::events(&engine, q).await.expect("page") }
    };
    let q_backup_errors =
        || EventQuery { component: Some("backup".into()), severity: Some("error".into()), ..EventQuery::default() };
    let q_type = || EventQuery { event_type: Some("notification_failed".into()), ..EventQuery::default() };
    let since = (Timestamp::now() - SignedDuration::from_hours(24)).to_string();
    let since: &'static str = Box::leak(since.into_boxed_str());
    let q_day = move || EventQuery { since: Some(since.to_string()), ..EventQuery::default() };
    let q_newest = || EventQuery::default();
    seed::report("events: component + severity", time_async(200, || page(q_backup_errors())).await);
    seed::report("events: event type", time_async(200, || page(q_type())).await);
    seed::report("events: last 24 h", time_async(200, || page(q_day())).await);
    seed::report("events: newest page", time_async(200, || page(q_newest())).await);
    let e = engine.clone();
    seed::report(
        "job runs: job + result",
        time_async(200, || {
            let e = e.clone();
            async move {
                let q = RunQuery {
                    job_name: Some("retention_purge".into()),
                    result: Some("failure".into()),
                    ..RunQuery::default()
                };
                mycorrhizal::ops::job_runs::list(&e, q).await.expect("runs")
            }
        })
        .await,
    );
    let e = engine.clone();
    seed::report(
        "job health (every job)",
        time_async(50, || {
            let e = e.clone();
            async move { mycorrhizal::ops::job_runs::health(&e, mycorrhizal::jobs::names()).await.expect("health") }
        })
        .await,
    );
    seed::report(
        "subsystem health",
        time(50, || timeline::SUBSYSTEMS.iter().map(|c| timeline::subsystem(&engine, c).expect("fold")).count()),
    );
    let e = engine.clone();
    let aggregated = timeline::aggregate(&e, AggregationQuery { window_hours: Some("168".into()) }).await.unwrap();
    println!(
        "(aggregation over 168 h: {} failure events in {} buckets)",
        aggregated.total_events,
        aggregated.buckets.len()
    );
    seed::report(
        "error aggregation, 168 h",
        time_async(20, || {
            let e = e.clone();
            async move { timeline::aggregate(&e, AggregationQuery { window_hours: Some("168".into()) }).await.unwrap() }
        })
        .await,
    );
    let s = state.clone();
    seed::report(
        "one alert evaluation",
        time_async(50, || {
            let s = s.clone();
            async move {
                let inputs = mycorrhizal::alerts::Inputs::of(&s, mycorrhizal::jobs::watched(&s.config));
                mycorrhizal::alerts::evaluate(inputs).await.expect("evaluation")
            }
        })
        .await,
    );
    let app = mycorrhizal::app(state.clone());
    seed::report(
        "/metrics scrape",
        time_async(200, || {
            let app = app.clone();
            async move {
                let request = Request::get("/metrics")
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap();
                let response = app.oneshot(request).await.unwrap();
                assert_eq!(response.status(), 200);
                axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap().len()
            }
        })
        .await,
    );
    seed::report_memory("at the end");
}
