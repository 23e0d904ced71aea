//! Scheduled work as data. [`JOBS`] is every job the server runs: its name, its schedule (an
//! interval, or a wall-clock time in `REMINDER_TIMEZONE`, or only on demand), whether the
//! configuration enables it, and its step. One runner ([`runner`]) keeps the enabled rows on
//! their schedules, records every run and serves the manual triggers ([`run`]). Adding a job is
//! adding a row (and its step in [`steps`], which calls the domain operation that does the work).
//!
//! Not here: what a job does (the domain: `crm::`, `ops::`, `backup::`, `notify::`) and the
//! outbox's delivery worker, which is woken by writes, not by a clock.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use mycorrhizal_engine::system::{JobRun, Trigger};

use crate::config::Config;
use crate::state::AppState;

pub mod runner;
pub mod steps;
pub mod wall_clock;

pub use runner::{Context, Ran};

pub const PURGE: &str = "retention_purge";
pub const AUDIT_VERIFY: &str = "audit_chain_verify";
pub const REACH_OUT: &str = "reach_out_scan";
pub const DIGEST: &str = "daily_digest";
pub const STORAGE_SAMPLE: &str = "storage_sample";
pub const BACKUP: &str = "scheduled_backup";
pub const INTEGRITY: &str = "db_integrity_check";
pub const RESTORE_DRILL: &str = "restore_drill";
pub const SEARCH_REBUILD: &str = "search_index_rebuild";

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

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

fn hours(h: u64) -> Duration {
    Duration::from_secs(h * 3600)
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
        name: SEARCH_REBUILD,
        schedule: Schedule::OnDemand,
        enabled: |_| true,
        step: |s, _| Box::pin(steps::search_rebuild(s, None)),
    },
];

/// The row named `name`.
pub fn job(name: &str) -> Option<&'static Job> {
    JOBS.iter().find(|job| job.name == name)
}

/// Runs job `name` once now and records the run (`trigger` is `manual` for an admin's trigger).
/// `NotFound` for a name not in the table.
pub async fn run(state: &AppState, name: &str, trigger: Trigger) -> crate::crm::Result<JobRun> {
    let job = job(name).ok_or(crate::crm::Error::NotFound)?;
    Ok(runner::run(state, job, trigger).await)
}

/// Starts the outbox's delivery worker and every enabled job's schedule.
pub fn start(state: AppState) {
    // The worker runs on its own thread at background priority, as long as this runtime does.
    let worker = crate::notify::worker::start(state.clone());
    tokio::spawn(async move {
        let _worker = worker;
        std::future::pending::<()>().await
    });
    for job in JOBS.iter().filter(|job| (job.enabled)(&state.config)) {
        runner::start(&state, job);
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
