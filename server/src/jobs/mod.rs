//! Scheduled work as data. [`JOBS`] is every job the server runs: its name, its schedule (an
//! interval, or a wall-clock time in `REMINDER_TIMEZONE`, or only on demand), whether the
//! configuration enables it, and its step. One runner ([`runner`]) keeps the enabled rows on
//! their schedules, records every run and serves the manual triggers ([`run`]). Adding a job is
//! adding a row (and its step in [`steps`], which calls the domain operation that does the work).
//!
//! Not here: what a job does (the domain: `crm::`, `ops::`, `backup::`, `notify::`) and the
//! outbox's delivery worker, which is woken by writes, not by a clock.

use std::time::Duration;

use mycorrhizal_engine::system::{JobRun, Trigger};

use crate::state::AppState;

pub mod runner;
pub mod steps;
pub mod wall_clock;

pub use runner::{Context, Job, Ran, Schedule, StepFuture};

pub const PURGE: &str = "retention_purge";
pub const AUDIT_VERIFY: &str = "audit_chain_verify";
pub const REACH_OUT: &str = "reach_out_scan";
pub const DIGEST: &str = "daily_digest";
pub const STORAGE_SAMPLE: &str = "storage_sample";
pub const BACKUP: &str = "scheduled_backup";
pub const INTEGRITY: &str = "db_integrity_check";
pub const RESTORE_DRILL: &str = "restore_drill";
pub const SEARCH_REBUILD: &str = "search_index_rebuild";
pub const ALERTS: &str = "alert_evaluation";
pub const RELEASE_CHECK: &str = "release_check";
pub const SUBSCRIPTIONS: &str = "subscription_sync";
pub const PHOTO_LIBRARY: &str = "photo_library_sync";
pub use steps::{CALENDAR_SYNC, CONTACT_SYNC, sync_now};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

fn hours(h: u64) -> Duration {
    Duration::from_secs(h * 3600)
}

/// The name of every job runs are recorded under: the table's, in its order, then the
/// subscriptions' syncs (started by [`SUBSCRIPTIONS`], one run each).
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = JOBS.iter().map(|job| job.name).collect();
    names.extend([CONTACT_SYNC, CALENDAR_SYNC]);
    names
}

/// Every job, in the order they start.
pub static JOBS: &[Job] = &[
    Job {
        name: PURGE,
        schedule: Schedule::Every { first: |_, _| Duration::ZERO, every: |_| DAY },
        enabled: |_| true,
        step: |s, c| Box::pin(steps::purge(s, c)),
    },
    Job {
        name: AUDIT_VERIFY,
        schedule: Schedule::Every { first: |_, _| Duration::ZERO, every: |_| DAY },
        enabled: |_| true,
        step: |s, c| Box::pin(steps::audit_verify(s, c)),
    },
    Job {
        name: REACH_OUT,
        schedule: Schedule::Every { first: |_, _| Duration::ZERO, every: |_| HOUR },
        enabled: |_| true,
        step: |s, c| Box::pin(steps::reach_out(s, c)),
    },
    Job { name: DIGEST, schedule: Schedule::Daily, enabled: |_| true, step: |s, c| Box::pin(steps::digest(s, c)) },
    Job {
        name: STORAGE_SAMPLE,
        schedule: Schedule::Every { first: |_, _| Duration::ZERO, every: |_| DAY },
        enabled: |_| true,
        step: |s, c| Box::pin(steps::storage_sample(s, c)),
    },
    Job {
        name: BACKUP,
        // The first one when the newest backup is due (at once when there is none).
        schedule: Schedule::Every { first: backup_due, every: |c| hours(c.integrity.backup_interval_hours) },
        enabled: |c| c.integrity.backup_interval_hours > 0 && c.integrity.backup_dir.is_some(),
        step: |s, c| Box::pin(steps::backup(s, c)),
    },
    Job {
        name: INTEGRITY,
        schedule: Schedule::Every {
            first: |_, _| Duration::from_secs(5 * 60),
            every: |c| hours(c.integrity.check_interval_hours),
        },
        enabled: |c| c.integrity.check_enabled,
        step: |s, _| Box::pin(steps::integrity(s, None)),
    },
    Job {
        name: RESTORE_DRILL,
        // Not at start-up: a server restarting in a loop should not drill each time.
        schedule: Schedule::Every {
            first: |_, _| Duration::from_secs(15 * 60),
            every: |c| hours(c.integrity.restore_drill_interval_hours),
        },
        enabled: |c| c.integrity.restore_drill_enabled,
        step: |s, c| Box::pin(steps::drill(s, c)),
    },
    Job {
        name: ALERTS,
        // A minute after start: the jobs that run at start have had their first go.
        schedule: Schedule::Every { first: |_, _| Duration::from_secs(60), every: crate::alerts::interval },
        enabled: |c| c.alerts.enabled,
        step: |s, c| Box::pin(steps::alerts(s, c)),
    },
    Job {
        name: RELEASE_CHECK,
        schedule: Schedule::Every { first: |_, _| Duration::from_secs(5 * 60), every: |_| DAY },
        enabled: |c| c.features.update_check_enabled,
        step: |s, _| Box::pin(steps::release_check(s)),
    },
    Job {
        name: SUBSCRIPTIONS,
        // Looks every five minutes for subscriptions whose sync is due; each sync is its own run.
        schedule: Schedule::Every { first: |_, _| Duration::from_secs(60), every: |_| Duration::from_secs(5 * 60) },
        enabled: |_| true,
        step: |s, c| Box::pin(steps::subscriptions(s, c)),
    },
    Job {
        name: PHOTO_LIBRARY,
        // Every user's linked people, a few minutes after start.
        schedule: Schedule::Every {
            first: |_, _| Duration::from_secs(3 * 60),
            every: |c| hours(c.features.photo_library_sync_interval_hours),
        },
        enabled: |_| true,
        step: |s, _| Box::pin(steps::photo_library(s)),
    },
    Job {
        name: SEARCH_REBUILD,
        schedule: Schedule::OnDemand,
        enabled: |_| true,
        step: |s, _| Box::pin(steps::search_rebuild(s, None)),
    },
];

/// The jobs `job_stopped` watches (see [`runner::watched`]).
pub fn watched(config: &crate::config::Config) -> Vec<crate::alerts::Watched> {
    runner::watched(JOBS, config, ALERTS)
}

/// What the system status and the diagnostics read of each enabled job: its name, its
/// interval (none for one run on demand), and since when it runs now.
pub fn activity(config: &crate::config::Config) -> Vec<crate::ops::job_runs::JobActivity> {
    JOBS.iter()
        .filter(|job| (job.enabled)(config))
        .map(|job| crate::ops::job_runs::JobActivity {
            name: job.name,
            every: match job.schedule {
                Schedule::Every { every, .. } => Some(every(config)),
                Schedule::Daily => Some(DAY),
                Schedule::OnDemand => None,
            },
            running_since: runner::running_since(job.name),
        })
        .collect()
}

/// The row named `name`.
pub fn job(name: &str) -> Option<&'static Job> {
    JOBS.iter().find(|job| job.name == name)
}

/// Runs job `name` once now and records the run (`trigger` is `manual` for an admin's trigger).
/// `NotFound` for a name not in the table.
pub async fn run(state: &AppState, name: &str, trigger: Trigger) -> crate::crm::Result<JobRun> {
    let job = job(name).ok_or(crate::crm::Error::NotFound)?;
    Ok(runner::run(state, JOBS, job, trigger).await)
}

/// Starts the outbox's delivery worker and every enabled job's schedule.
pub fn start(state: AppState) {
    // The worker runs on its own thread at background priority, as long as this runtime does.
    let worker = crate::notify::worker::start(state.notify.clone());
    tokio::spawn(async move {
        let _worker = worker;
        std::future::pending::<()>().await
    });
    for job in JOBS.iter().filter(|job| (job.enabled)(&state.config)) {
        runner::start(&state, JOBS, job);
    }
}

/// [`steps::integrity`] run by hand with its report (`GET /admin/integrity-check`).
pub async fn integrity_now(state: &AppState) -> (JobRun, crate::integrity::IntegrityReport) {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let run = runner::record(state, INTEGRITY, Trigger::Manual, steps::integrity(state.clone(), Some(sender))).await;
    let report = receiver.await.unwrap_or_else(|_| crate::integrity::IntegrityReport {
        checked_at: state.engine.clock().now(),
        status: "error".into(),
        duration_ms: run.duration_ms,
        passes: vec![crate::integrity::Pass {
            name: "sweep".into(),
            status: "error".into(),
            checked: 0,
            failures: Vec::new(),
            error: run.error.clone(),
        }],
    });
    (run, report)
}

/// [`steps::search_rebuild`] run by hand with its report (`POST /admin/search/rebuild`); a rebuild
/// already running is the engine's `RebuildRunning`.
pub async fn search_rebuild_now(state: &AppState) -> crate::crm::Result<mycorrhizal_engine::RebuildReport> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let work = steps::search_rebuild(state.clone(), Some(sender));
    let run = runner::record(state, SEARCH_REBUILD, Trigger::Manual, work).await;
    match receiver.await {
        Ok(rebuilt) => Ok(rebuilt?),
        Err(_) => Err(crate::crm::Error::Internal(run.error.unwrap_or_else(|| "the rebuild stopped".into()))),
    }
}

/// How long until the next scheduled backup is due, from the newest backup's file time.
fn backup_due(state: &AppState, every: Duration) -> Duration {
    let Some(dir) = &state.config.integrity.backup_dir else { return Duration::ZERO };
    crate::backup::list(dir)
        .first()
        .and_then(|newest| std::fs::metadata(newest).and_then(|m| m.modified()).ok())
        .and_then(|modified| modified.elapsed().ok())
        .map(|age| every.saturating_sub(age))
        .unwrap_or(Duration::ZERO)
}
