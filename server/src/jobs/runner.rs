//! The one runner of scheduled work. [`run`] runs a row of the table once and records it: trigger
//! (`scheduled`, `initial` or `manual`), result, duration, items processed and a
//! `job:<name>:<uuid>` correlation id that whatever the run writes and queues carries. A panic
//! inside a job is caught and recorded as a failure with a `job_failed` system event. [`start`]
//! keeps each enabled row on its schedule.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use mycorrhizal_engine::system::{JobResult, JobRun, Trigger};

use super::wall_clock::{self, Window};
use crate::config::Config;
use crate::ops::events::{Event, emit};
use crate::ops::job_runs;
use crate::state::AppState;

/// How a job's work ended when it did not fail.
#[derive(Debug)]
pub enum Ran {
    /// It did its work on this many items.
    Items(u64),
    /// It had nothing to do, for this reason (a `skipped` run: job health ignores it).
    Skipped(String),
}

/// What a step is told about its run.
#[derive(Clone, Copy)]
pub struct Context {
    pub trigger: Trigger,
    /// The scheduler's whole table (a step that watches the other jobs reads it here).
    pub table: &'static [Job],
    /// The name of the job this run is of.
    pub name: &'static str,
    /// For a daily job, the local days this run covers (from the day after the last run, at most
    /// [`wall_clock::CATCH_UP_DAYS`], to the run's day).
    pub days: Option<Window>,
}

/// When a job runs.
pub enum Schedule {
    /// Every `every` of the configuration; the first run `first` after start-up (given the
    /// state and the interval).
    Every { first: fn(&AppState, Duration) -> Duration, every: fn(&Config) -> Duration },
    /// Once a day at `REMINDER_TIME` in `REMINDER_TIMEZONE`, catching up once after downtime
    /// ([`wall_clock`]); a step is told the days its run covers.
    Daily,
    /// Only when an admin asks.
    OnDemand,
}

/// What a step returns: the work, to be run and recorded by the runner.
pub type StepFuture = Pin<Box<dyn Future<Output = crate::crm::Result<Ran>> + Send>>;

/// One row of the table.
pub struct Job {
    pub name: &'static str,
    pub schedule: Schedule,
    /// Whether the configuration turns its schedule on (a manual trigger runs it regardless).
    pub enabled: fn(&Config) -> bool,
    pub step: fn(AppState, Context) -> StepFuture,
}

/// A daily job looks again at least this often (a clock that jumped, a suspended machine).
const LOOK_AGAIN: Duration = Duration::from_secs(15 * 60);

/// Runs `job` once now and records the run. A daily job run by the schedule runs for the day
/// that is due (skipped when none is); run by hand, for today.
pub async fn run(state: &AppState, table: &'static [Job], job: &'static Job, trigger: Trigger) -> JobRun {
    let days = match job.schedule {
        Schedule::Daily => match daily_window(state, job, trigger).await {
            Ok(Some(days)) => Some(days),
            Ok(None) => return record(state, job.name, trigger, async { Ok(Ran::Skipped("not due".into())) }).await,
            Err(e) => return record(state, job.name, trigger, async move { Err(e) }).await,
        },
        _ => None,
    };
    let (state_, context) = (state.clone(), Context { trigger, table, name: job.name, days });
    let run = record(state, job.name, trigger, (job.step)(state_, context)).await;
    if let (Some(days), JobResult::Success) = (days, run.result) {
        // Remembered only after a success: a failed day is tried again.
        let last = job_runs::last_day(&state.engine, job.name).await.ok().flatten();
        if last.is_none_or(|l| l < days.day)
            && let Err(e) = job_runs::mark_day(&state.engine, job.name, days.day).await
        {
            tracing::error!(event = "scheduler_write_failed", component = "scheduler", job = job.name, error = %e);
        }
    }
    run
}

/// The days a daily job's run covers now, or none when no run is due (a manual run is for today).
async fn daily_window(state: &AppState, job: &Job, trigger: Trigger) -> crate::crm::Result<Option<Window>> {
    let (at, zone) = (state.config.reminder_time, &state.config.reminder_timezone);
    let now = state.engine.clock().now();
    let last = job_runs::last_day(&state.engine, job.name).await?;
    let day = match trigger {
        Trigger::Manual => Some(crate::crm::calendar::today(now, zone)),
        _ => wall_clock::due_day(last, now, at, zone),
    };
    Ok(day.map(|day| wall_clock::window(last, day)))
}

/// Runs `work` as a run of job `name`, records it, and never lets a failure escape: for work
/// that is not a row of the table's schedule but is recorded as a job run all the same (the
/// search rebuild an admin asks for).
pub async fn record<F>(state: &AppState, name: &'static str, trigger: Trigger, work: F) -> JobRun
where
    F: Future<Output = crate::crm::Result<Ran>> + Send + 'static,
{
    let correlation = format!("job:{name}:{}", uuid::Uuid::new_v4());
    let started_at = state.engine.clock().now();
    let started = Instant::now();
    // Listed as running for as long as the spawned work runs, even if the caller stops waiting.
    let work = async move {
        let _running = Running::start(name, started_at);
        work.await
    };
    // Spawned so that a panic inside the job is caught as a join error, not a crash; within its
    // correlation id, so what it writes and queues (outbox rows, system events) carries it.
    let outcome = match tokio::spawn(crate::ops::correlation::within(correlation.clone(), work)).await {
        Ok(outcome) => outcome.map_err(|e| e.to_string()),
        Err(panic) => {
            let mut event = Event::error("scheduler", "job_failed", format!("{name} panicked: {panic}"));
            event.correlation_id = Some(correlation.clone());
            emit(&state.engine, event).await;
            Err(format!("panicked: {panic}"))
        }
    };
    let duration_ms = started.elapsed().as_millis() as u64;
    let (result, error, items) = match outcome {
        Ok(Ran::Items(items)) => (JobResult::Success, None, Some(items)),
        Ok(Ran::Skipped(reason)) => (JobResult::Skipped, Some(reason), None),
        Err(e) => (JobResult::Failure, Some(e), None),
    };
    let word = result.name();
    match &error {
        Some(error) if result == JobResult::Failure => {
            tracing::error!(event = "job_finished", component = "scheduler", operation = name, duration_ms, result = word, error = %error, correlation_id = %correlation)
        }
        _ => {
            tracing::info!(event = "job_finished", component = "scheduler", operation = name, duration_ms, result = word, items_processed = items, correlation_id = %correlation)
        }
    }
    let run = JobRun {
        id: 0,
        job_name: name.to_string(),
        trigger,
        started_at,
        finished_at: state.engine.clock().now(),
        duration_ms,
        result,
        error,
        items_processed: items,
        correlation_id: Some(correlation),
        detail: None,
    };
    job_runs::store(&state.engine, run).await
}

/// Keeps `job` on its schedule for as long as the runtime runs. The first run's trigger is
/// `initial`.
pub fn start(state: &AppState, table: &'static [Job], job: &'static Job) {
    let state = state.clone();
    match job.schedule {
        Schedule::Every { first, every } => {
            let every = every(&state.config);
            let first = first(&state, every);
            tokio::spawn(async move {
                tokio::time::sleep(first).await;
                let mut trigger = Trigger::Initial;
                loop {
                    run(&state, table, job, trigger).await;
                    trigger = Trigger::Scheduled;
                    tokio::time::sleep(every).await;
                }
            });
        }
        Schedule::Daily => {
            tokio::spawn(async move {
                let mut trigger = Trigger::Initial;
                loop {
                    // Only a due day makes a run: waking early records nothing.
                    match daily_window(&state, job, trigger).await {
                        Ok(Some(_)) => {
                            run(&state, table, job, trigger).await;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::error!(event = "scheduler_read_failed", component = "scheduler", job = job.name, error = %e)
                        }
                    }
                    trigger = Trigger::Scheduled;
                    let (at, zone) = (state.config.reminder_time, &state.config.reminder_timezone);
                    let now = state.engine.clock().now();
                    let wait = wall_clock::next_run(now, at, zone)
                        .and_then(|t| Duration::try_from(t.duration_since(now)).ok())
                        .unwrap_or(LOOK_AGAIN)
                        .clamp(Duration::from_secs(1), LOOK_AGAIN);
                    tokio::time::sleep(wait).await;
                }
            });
        }
        Schedule::OnDemand => {}
    }
}

/// The jobs of `table` the `job_stopped` alert watches: every one the configuration enables that
/// runs on a schedule, but `except` (the alert evaluation itself), with its interval (a
/// wall-clock job's is a day).
pub fn watched(table: &[Job], config: &crate::config::Config, except: &str) -> Vec<crate::alerts::Watched> {
    table
        .iter()
        .filter(|job| job.name != except && (job.enabled)(config))
        .filter_map(|job| {
            let every = match job.schedule {
                Schedule::Every { every, .. } => every(config),
                Schedule::Daily => Duration::from_secs(24 * 3600),
                Schedule::OnDemand => return None,
            };
            Some(crate::alerts::Watched { name: job.name, every })
        })
        .collect()
}

/// The jobs running now and since when (the system status's `locked` and `stuck`).
static RUNNING: std::sync::Mutex<Vec<(&'static str, jiff::Timestamp)>> = std::sync::Mutex::new(Vec::new());

/// A run in progress, listed in [`RUNNING`] until dropped (however the run ends).
struct Running(&'static str);

impl Running {
    fn start(name: &'static str, at: jiff::Timestamp) -> Running {
        RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((name, at));
        Running(name)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = running.iter().position(|(name, _)| *name == self.0) {
            running.remove(at);
        }
    }
}

/// Since when job `name` has been running, if it is running now.
pub fn running_since(name: &str) -> Option<jiff::Timestamp> {
    RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, at)| *at)
}
