//! Scheduled jobs. Each run is recorded as a job run (`scheduled`, `initial` or `manual`, result,
//! duration, items processed) with a `job:<name>:<uuid>` correlation id; a panic inside a job is
//! caught and recorded as a failure with a `job_failed` system event. Jobs are step functions
//! (`purge_once`) so tests call them directly instead of waiting.

use std::time::{Duration, Instant};

use jiff::SignedDuration;
use mycorrhizal_engine::system::{JobResult, JobRun, Trigger};
use mycorrhizal_engine::{Record, UserId};

use crate::auth::records::{Account, DeviceGrant, ResetToken, Session};
use crate::crm::contact::Contact;
use crate::crm::depth::{AgendaItem, Attachment, CadencePolicy, Gift, LifeEvent};
use crate::crm::households::{Household, HouseholdMember};
use crate::crm::records::{Activity, Completion, Note, Relationship, Reminder};
use crate::ops::events::{Event, emit};
use crate::state::AppState;

pub const PURGE: &str = "retention_purge";
/// The on-demand full-text index rebuild (`POST /admin/search/rebuild`).
pub const SEARCH_REBUILD: &str = "search_index_rebuild";
/// Audit events are kept this long; the chain stays verifiable through its anchor.
pub const AUDIT_RETENTION_DAYS: i64 = 90;
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Starts the scheduler: the purge runs once at start-up and then daily.
pub fn start(state: AppState) {
    tokio::spawn(async move {
        let mut trigger = Trigger::Initial;
        loop {
            purge_once(&state, trigger).await;
            trigger = Trigger::Scheduled;
            tokio::time::sleep(DAY).await;
        }
    });
}

/// Runs `work`, records the run, and never lets a failure escape.
async fn record<F>(state: &AppState, name: &str, trigger: Trigger, work: F) -> JobRun
where
    F: std::future::Future<Output = Result<u64, String>> + Send + 'static,
{
    let correlation = format!("job:{name}:{}", uuid::Uuid::new_v4());
    let started_at = state.engine.clock().now();
    let started = Instant::now();
    // Spawned so that a panic inside the job is caught as a join error, not a crash.
    let outcome = match tokio::spawn(work).await {
        Ok(outcome) => outcome,
        Err(panic) => {
            let mut event = Event::error("scheduler", "job_failed", format!("{name} panicked: {panic}"));
            event.correlation_id = Some(correlation.clone());
            emit(&state.engine, event).await;
            Err(format!("panicked: {panic}"))
        }
    };
    store_run(state, name, trigger, started_at, started, outcome, correlation).await
}

/// Records one finished run of job `name` (also for jobs run on demand, such as the search
/// index rebuild). `outcome` is the items processed, or the failure.
pub async fn store_run(
    state: &AppState,
    name: &str,
    trigger: Trigger,
    started_at: jiff::Timestamp,
    started: Instant,
    outcome: Result<u64, String>,
    correlation: String,
) -> JobRun {
    let duration_ms = started.elapsed().as_millis() as u64;
    let (result, error, items) = match outcome {
        Ok(items) => (JobResult::Success, None, Some(items)),
        Err(e) => (JobResult::Failure, Some(e), None),
    };
    tracing::info!(event = "job_finished", component = "scheduler", operation = name, duration_ms, result = ?result, correlation_id = %correlation);
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
    };
    state.engine.record_job_run(run.clone()).await.unwrap_or(run)
}

/// One retention pass: tombstones older than `DELETED_RETENTION_DAYS`, system events and job
/// runs past their retention. Returns the recorded run.
pub async fn purge_once(state: &AppState, trigger: Trigger) -> JobRun {
    let state_ = state.clone();
    let work = async move {
        let now = state_.engine.clock().now();
        let retention = &state_.config.retention;
        let days = |d: i64| now.checked_sub(SignedDuration::from_hours(d * 24)).map_err(|e| e.to_string());
        let mut removed = 0;
        let tombstones = days(retention.deleted_days)?;
        let audit_cutoff = days(AUDIT_RETENTION_DAYS)?;
        let users: Vec<u64> = state_
            .engine
            .global()
            .map_err(|e| e.to_string())?
            .list::<Account>()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        for user in users {
            removed += state_
                .engine
                .user(UserId(user))
                .write_async(move |tx| {
                    Ok(purge::<Contact>(tx, tombstones)?
                        + purge::<Note>(tx, tombstones)?
                        + purge::<Activity>(tx, tombstones)?
                        + purge::<Reminder>(tx, tombstones)?
                        + purge::<Completion>(tx, tombstones)?
                        + purge::<Relationship>(tx, tombstones)?
                        + purge::<LifeEvent>(tx, tombstones)?
                        + purge::<Gift>(tx, tombstones)?
                        + purge::<AgendaItem>(tx, tombstones)?
                        + purge::<Attachment>(tx, tombstones)?
                        + purge::<CadencePolicy>(tx, tombstones)?
                        + purge::<Household>(tx, tombstones)?
                        + purge::<HouseholdMember>(tx, tombstones)?
                        + tx.purge_audit(audit_cutoff)?)
                })
                .await
                .map_err(|e| e.to_string())?;
        }
        removed +=
            state_.engine.write_async(move |tx| expired_credentials(tx, now)).await.map_err(|e| e.to_string())?;
        if retention.system_event_days > 0 {
            removed += state_
                .engine
                .purge_system_events(days(retention.system_event_days)?)
                .await
                .map_err(|e| e.to_string())?;
        }
        if retention.job_run_days > 0 {
            removed += state_.engine.purge_job_runs(days(retention.job_run_days)?).await.map_err(|e| e.to_string())?;
        }
        Ok(removed)
    };
    record(state, PURGE, trigger, work).await
}

/// Removes ended sessions, used or expired reset tokens and device grants: rows nobody can use.
fn expired_credentials(tx: &mut mycorrhizal_engine::Tx<'_>, now: jiff::Timestamp) -> mycorrhizal_engine::Result<u64> {
    let global = tx.global();
    let mut removed = 0;
    for (id, session) in global.list::<Session>()? {
        if session.expires_at <= now {
            global.delete::<Session>(id)?;
            removed += 1;
        }
    }
    for (id, reset) in global.list::<ResetToken>()? {
        if reset.expires_at <= now {
            global.delete::<ResetToken>(id)?;
            removed += 1;
        }
    }
    for (id, grant) in global.list::<DeviceGrant>()? {
        if grant.expires_at <= now || grant.used_at.is_some() || grant.revoked_at.is_some() {
            global.delete::<DeviceGrant>(id)?;
            removed += 1;
        }
    }
    Ok(removed)
}

fn purge<R: Record>(
    tx: &mycorrhizal_engine::TxUser<'_, '_>,
    cutoff: jiff::Timestamp,
) -> mycorrhizal_engine::Result<u64> {
    tx.purge_tombstones::<R>(cutoff)
}
