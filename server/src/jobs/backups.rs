//! The operator's safety net as scheduled jobs: backups into `BACKUP_DIR` every
//! `BACKUP_INTERVAL_HOURS` (the newest `BACKUP_KEEP` kept) and the weekly restore drill
//! (`DB_RESTORE_DRILL_*`). Each run is a job run and a system event; see [`crate::backup`].

use std::time::{Duration, Instant};

use mycorrhizal_engine::system::{JobRun, Severity, Trigger};
use serde_json::json;

use super::{Ran, record_ran};
use crate::backup::{self, Signer};
use crate::ops::events::{Event, emit};
use crate::state::AppState;

pub const BACKUP: &str = "scheduled_backup";
pub const RESTORE_DRILL: &str = "restore_drill";
pub const INTEGRITY: &str = "db_integrity_check";
pub const STORAGE_SAMPLE: &str = "storage_sample";

/// One storage sample ([`crate::ops::storage`]).
pub async fn storage_sample_once(state: &AppState, trigger: Trigger) -> JobRun {
    let (engine, dir) = (state.engine.clone(), state.config.data_dir.clone());
    let work = async move {
        tokio::task::spawn_blocking(move || crate::ops::storage::sample(&engine, &dir))
            .await
            .map_err(|e| e.to_string())?
            .map(|sample| sample.rows)
            .map_err(|e| e.to_string())
    };
    super::record(state, STORAGE_SAMPLE, trigger, work).await
}

/// One integrity sweep ([`crate::integrity`]), stored and recorded: a run that finds a failure
/// fails, naming the kinds and counts.
pub async fn integrity_once(state: &AppState, trigger: Trigger) -> (JobRun, crate::integrity::IntegrityReport) {
    let engine = state.engine.clone();
    let state_ = state.clone();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let work = async move {
        let report =
            tokio::task::spawn_blocking(move || crate::integrity::run(&engine)).await.map_err(|e| e.to_string())?;
        let outcome = if report.status == "ok" {
            Ok(report.passes.iter().map(|p| p.checked).sum())
        } else {
            tracing::error!(event = "integrity_check_failed", component = "app", summary = %report.summary());
            let kinds: Vec<String> =
                report.passes.iter().filter(|p| p.status != "ok").map(|p| p.name.clone()).collect();
            alert_admins(
                &state_,
                "db.integrity_check_failed",
                kinds.iter().map(|kind| json!({ "kind": kind })).collect(),
            )
            .await;
            Err(format!("integrity check {}: {}", report.status, report.summary()))
        };
        let _ = sender.send(report);
        outcome
    };
    let run = super::record(state, INTEGRITY, trigger, work).await;
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

/// One scheduled backup: writes a signed backup into `BACKUP_DIR`, then removes all but the
/// newest `BACKUP_KEEP`. Skipped without `BACKUP_DIR`.
pub async fn backup_once(state: &AppState, trigger: Trigger) -> JobRun {
    let state_ = state.clone();
    let work = async move {
        let integrity = &state_.config.integrity;
        let Some(dir) = integrity.backup_dir.clone() else {
            return Ok(Ran::Skipped("BACKUP_DIR is not set".into()));
        };
        let keep = integrity.backup_keep as usize;
        let started = Instant::now();
        let (engine, config) = (state_.engine.clone(), state_.config.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let signer = Signer::from_config(&config)?;
            let made = backup::create(&engine, &dir, &signer, &mut |_| {})?;
            backup::prune(&dir, keep).map_err(|e| format!("the backup was written, removing old ones failed: {e}"))?;
            Ok::<_, String>(made)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        backup::record(&state_.engine, &outcome, "scheduled", started.elapsed().as_millis() as u64).await;
        outcome
            .map(|made| Ran::Items(made.manifest.users.map(|u| u.values().flat_map(|k| k.values()).sum()).unwrap_or(0)))
    };
    record_ran(state, BACKUP, trigger, work).await
}

/// One restore drill of the newest backup. Emits `restore_test_completed` (a warning past
/// `DB_RESTORE_DRILL_MAX_DURATION_SECONDS`) or `backup_failed` with severity `error`; skipped
/// when there is no backup to drill.
pub async fn drill_once(state: &AppState, trigger: Trigger) -> JobRun {
    let state_ = state.clone();
    let work = async move {
        let config = state_.config.clone();
        let started = Instant::now();
        let outcome = tokio::task::spawn_blocking(move || {
            let signer = Signer::from_config(&config)?;
            backup::drill::run(&config, &signer)
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        let took_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(None) => Ok(Ran::Skipped("no backup to drill (run `mycorrhizal backup` or set BACKUP_DIR)".into())),
            Ok(Some(drill)) => {
                let budget = state_.config.integrity.restore_drill_max_duration_seconds;
                let over = budget.is_some_and(|b| drill.took > Duration::from_secs(b));
                let detail = json!({
                    "operation": "restore_drill",
                    "file": drill.backup.file_name().and_then(|n| n.to_str()).unwrap_or_default(),
                    "users": drill.users,
                    "rows": drill.rows,
                    "over_budget": over,
                });
                let mut event = Event::info("backup", "restore_test_completed").detail(detail).duration_ms(took_ms);
                if over {
                    tracing::warn!(
                        event = "restore_drill_slow",
                        component = "backup",
                        took_ms,
                        budget_seconds = budget,
                        "the restore drill took longer than DB_RESTORE_DRILL_MAX_DURATION_SECONDS"
                    );
                    event.severity = Severity::Warn;
                }
                emit(&state_.engine, event).await;
                Ok(Ran::Items(drill.rows))
            }
            Err(e) => {
                let event = Event::error("backup", "backup_failed", e.clone())
                    .detail(json!({ "operation": "restore_drill" }))
                    .duration_ms(took_ms);
                emit(&state_.engine, event).await;
                alert_admins(&state_, "db.restore_drill_failed", vec![json!({})]).await;
                Err(e)
            }
        }
    };
    record_ran(state, RESTORE_DRILL, trigger, work).await
}

/// Queues the instance event `event` once per payload in `each` to the admins' webhooks
/// subscribed to it, through the outbox (one write), and wakes the delivery worker. Best-effort:
/// a failure to queue is logged and never changes the job's outcome.
async fn alert_admins(state: &AppState, event: &'static str, each: Vec<serde_json::Value>) {
    let queued = state
        .engine
        .write_async(move |tx| {
            let mut queued = 0;
            for data in &each {
                queued += crate::notify::webhooks::publish_to_admins(tx, event, &|| data.clone())?;
            }
            Ok(queued)
        })
        .await;
    match queued {
        Ok(0) => {}
        Ok(_) => state.outbox.signal.wake(),
        Err(e) => tracing::warn!(event = "webhook_not_queued", component = "backup", webhook_event = event, error = %e),
    }
}

/// Starts the schedules the configuration turns on.
pub fn start(state: &AppState) {
    let integrity = state.config.integrity.clone();
    let hours = |h: u64| Duration::from_secs(h * 3600);
    if integrity.backup_interval_hours > 0 && integrity.backup_dir.is_some() {
        // The first one when the newest is due (at once when there is none).
        let every = hours(integrity.backup_interval_hours);
        repeat(state, until_due(state, every), every, |s, t| async move { backup_once(&s, t).await });
    }
    repeat(state, Duration::ZERO, hours(24), |s, t| async move { storage_sample_once(&s, t).await });
    if integrity.check_enabled {
        let every = hours(integrity.check_interval_hours);
        repeat(state, Duration::from_secs(5 * 60), every, |s, t| async move { integrity_once(&s, t).await.0 });
    }
    if integrity.restore_drill_enabled {
        // Not at start-up: a server restarting in a loop should not drill each time.
        let every = hours(integrity.restore_drill_interval_hours);
        repeat(state, Duration::from_secs(15 * 60), every, |s, t| async move { drill_once(&s, t).await });
    }
}

/// Runs `job` after `first`, then every `every` (the first run's trigger is `initial`).
fn repeat<F, Fut>(state: &AppState, first: Duration, every: Duration, job: F)
where
    F: Fn(AppState, Trigger) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = JobRun> + Send,
{
    let state = state.clone();
    tokio::spawn(async move {
        tokio::time::sleep(first).await;
        let mut trigger = Trigger::Initial;
        loop {
            job(state.clone(), trigger).await;
            trigger = Trigger::Scheduled;
            tokio::time::sleep(every).await;
        }
    });
}

/// How long until the next scheduled backup is due, from the newest backup's file time.
fn until_due(state: &AppState, every: Duration) -> Duration {
    let Some(dir) = &state.config.integrity.backup_dir else { return Duration::ZERO };
    backup::list(dir)
        .first()
        .and_then(|newest| std::fs::metadata(newest).and_then(|m| m.modified()).ok())
        .and_then(|modified| modified.elapsed().ok())
        .map(|age| every.saturating_sub(age))
        .unwrap_or(Duration::ZERO)
}
