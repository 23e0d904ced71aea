//! The step of each row of the job table: one domain operation over every account (or the
//! instance), its result said as a [`Ran`], and the system events an operator needs from it.
//! The rules of the work live in the domain (`crm::`, `ops::`, `backup::`, `notify::`); a step
//! only connects them to the scheduler.

use std::time::{Duration, Instant};

use mycorrhizal_engine::system::Severity;
use mycorrhizal_engine::{RebuildReport, UserId};
use serde_json::json;

use super::runner::{Context, Ran};
use crate::backup::{self, Signer};
use crate::crm::{Error, Result};
use crate::integrity::IntegrityReport;
use crate::notify::webhooks::alert_admins;
use crate::ops::events::{Event, emit};
use crate::state::AppState;

/// The retention purge ([`crate::retention`]); items: rows removed.
pub async fn purge(state: AppState, _: Context) -> Result<Ran> {
    let users = crate::auth::accounts::ids(&state.engine).await?;
    let now = state.engine.clock().now();
    Ok(Ran::Items(crate::retention::purge(&state.engine, &state.config.retention, &users, now).await?))
}

/// Every user's audit hash chain walked. A broken chain fails the run (the job's health and the
/// `job_stopped` alert see it; the integrity sweep's audit pass raises `db_integrity`); the run's
/// error counts the chains, and the operator's log line names the accounts.
pub async fn audit_verify(state: AppState, _: Context) -> Result<Ran> {
    let users = crate::auth::accounts::ids(&state.engine).await?;
    let (verified, broken) = crate::crm::audit::verify_chains(&state.engine, users).await?;
    if broken.is_empty() {
        return Ok(Ran::Items(verified));
    }
    tracing::error!(event = "audit_chain_broken", component = "scheduler", operation = "audit_chain_verify", chains = %broken.join("; "));
    Err(Error::Internal(format!("{} audit chain(s) do not verify", broken.len())))
}

/// Every user's reach-out scan ([`crate::crm::reach_out::scan`]); items: suggestions created,
/// updated and removed.
pub async fn reach_out(state: AppState, _: Context) -> Result<Ran> {
    let mut changed = 0;
    for user in crate::auth::accounts::ids(&state.engine).await? {
        let now = state.engine.clock().now();
        changed += crate::crm::reach_out::scan::scan(&state.engine, UserId(user), now).await?;
    }
    Ok(Ran::Items(changed))
}

/// The daily digest for the days the run covers ([`crate::notify::digest`]); items: the digests
/// queued. Users whose digest for the day went out get nothing new.
pub async fn digest(state: AppState, context: Context) -> Result<Ran> {
    let Some(window) = context.days else { return Ok(Ran::Skipped("no day to cover".into())) };
    let report = crate::notify::digest::run(&state.notify, window).await?;
    tracing::info!(
        event = "digest_queued", component = "notification", day = %window.day, from = %window.from,
        digests = report.digests, reminders = report.reminders, birthdays = report.birthdays,
        overdue = report.overdue, messages = report.messages
    );
    Ok(Ran::Items(report.digests))
}

/// One storage sample ([`crate::ops::storage`]); items: the rows counted.
pub async fn storage_sample(state: AppState, _: Context) -> Result<Ran> {
    let users = crate::auth::accounts::ids(&state.engine).await?.len() as u64;
    let (engine, dir) = (state.engine.clone(), state.config.data_dir.clone());
    let sample =
        crate::crm::blocking(&state.engine, move |_| crate::ops::storage::sample(&engine, &dir, users)).await??;
    Ok(Ran::Items(sample.rows))
}

/// One integrity sweep ([`crate::integrity`]), answered through `report` as well: a sweep that
/// finds a failure fails the run, naming the kinds and counts, and alerts the admins' webhooks.
pub async fn integrity(state: AppState, report: Option<tokio::sync::oneshot::Sender<IntegrityReport>>) -> Result<Ran> {
    let engine = state.engine.clone();
    let swept = crate::crm::blocking(&state.engine, move |_| crate::integrity::run(&engine)).await?;
    let outcome = if swept.status == "ok" {
        Ok(Ran::Items(swept.passes.iter().map(|p| p.checked).sum()))
    } else {
        tracing::error!(event = "integrity_check_failed", component = "app", summary = %swept.summary());
        let kinds = swept.passes.iter().filter(|p| p.status != "ok").map(|p| json!({ "kind": p.name })).collect();
        alert_admins(&state.engine, &state.notify.outbox, "db.integrity_check_failed", kinds).await;
        Err(Error::Internal(format!("integrity check {}: {}", swept.status, swept.summary())))
    };
    if let Some(report) = report {
        let _ = report.send(swept);
    }
    outcome
}

/// One scheduled backup: a signed backup into `BACKUP_DIR`, then all but the newest
/// `BACKUP_KEEP` removed. Skipped without `BACKUP_DIR`; items: the rows backed up.
pub async fn backup(state: AppState, _: Context) -> Result<Ran> {
    let integrity = &state.config.integrity;
    let Some(dir) = integrity.backup_dir.clone() else {
        return Ok(Ran::Skipped("BACKUP_DIR is not set".into()));
    };
    let keep = integrity.backup_keep as usize;
    let started = Instant::now();
    let (engine, config) = (state.engine.clone(), state.config.clone());
    let outcome = crate::crm::blocking(&state.engine, move |_| {
        let signer = Signer::from_config(&config)?;
        let made = backup::create(&engine, &dir, &signer, &mut |_| {})?;
        backup::prune(&dir, keep).map_err(backup::Error::Prune)?;
        Ok::<_, backup::Error>(made)
    })
    .await
    .unwrap_or_else(|e| Err(backup::Error::Task(e.to_string())));
    backup::record(&state.engine, &outcome, "scheduled", started.elapsed().as_millis() as u64).await;
    let made = outcome.map_err(Error::internal)?;
    Ok(Ran::Items(made.manifest.users.map(|u| u.values().flat_map(|k| k.values()).sum()).unwrap_or(0)))
}

/// One restore drill of the newest backup. Emits `restore_test_completed` (a warning past
/// `DB_RESTORE_DRILL_MAX_DURATION_SECONDS`) or `backup_failed` with severity `error`; skipped
/// when there is no backup to drill; items: the rows restored.
pub async fn drill(state: AppState, _: Context) -> Result<Ran> {
    let config = state.config.clone();
    let started = Instant::now();
    let outcome = crate::crm::blocking(&state.engine, move |_| {
        let signer = Signer::from_config(&config)?;
        backup::drill::run(&config, &signer)
    })
    .await
    .unwrap_or_else(|e| Err(backup::Error::Task(e.to_string())));
    let took_ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(None) => Ok(Ran::Skipped("no backup to drill (run `mycorrhizal backup` or set BACKUP_DIR)".into())),
        Ok(Some(drill)) => {
            let budget = state.config.integrity.restore_drill_max_duration_seconds;
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
            emit(&state.engine, event).await;
            Ok(Ran::Items(drill.rows))
        }
        Err(e) => {
            let event = Event::error("backup", "backup_failed", e.to_string())
                .detail(json!({ "operation": "restore_drill" }))
                .duration_ms(took_ms);
            emit(&state.engine, event).await;
            alert_admins(&state.engine, &state.notify.outbox, "db.restore_drill_failed", vec![json!({})]).await;
            Err(Error::internal(e))
        }
    }
}

/// The full-text index rebuilt aside from the live one and swapped in, answered through
/// `report` as well. A rebuild already running makes this run `skipped`.
pub async fn search_rebuild(
    state: AppState,
    report: Option<tokio::sync::oneshot::Sender<mycorrhizal_engine::Result<RebuildReport>>>,
) -> Result<Ran> {
    let rebuilt = crate::crm::blocking(&state.engine, |engine| engine.search_rebuild()).await?;
    let outcome = match &rebuilt {
        Ok(done) => {
            tracing::info!(
                event = "search_index_rebuilt",
                component = "search",
                took_ms = done.took.as_millis() as u64
            );
            Ok(Ran::Items(done.indexed.iter().map(|(_, n)| n).sum()))
        }
        Err(mycorrhizal_engine::Error::RebuildRunning) => Ok(Ran::Skipped("a rebuild is already running".into())),
        Err(e) => Err(Error::Internal(e.to_string())),
    };
    if let Some(report) = report {
        let _ = report.send(rebuilt);
    }
    outcome
}

/// One evaluation of every alert condition ([`crate::alerts`]); items: the conditions evaluated.
pub async fn alerts(state: AppState, context: Context) -> Result<Ran> {
    let watched = super::runner::watched(context.table, &state.config, context.name);
    let inputs = crate::alerts::Inputs::of(&state, watched);
    let done = crate::alerts::evaluate(inputs).await?;
    for condition in &done.raised {
        tracing::warn!(event = "alert_raised", component = "scheduler", operation = "alert_evaluation", condition = %condition);
    }
    for condition in &done.cleared {
        tracing::info!(event = "alert_cleared", component = "scheduler", operation = "alert_evaluation", condition = %condition);
    }
    Ok(Ran::Items(done.evaluated))
}

/// The release check ([`crate::release`]): quiet when the feed cannot be read (the run is
/// skipped, saying why); items: 1 when read.
pub async fn release_check(state: AppState) -> Result<Ran> {
    match crate::release::check(&state.engine, &state.config.features.update_check_url).await {
        Ok(_) => Ok(Ran::Items(1)),
        Err(e) => {
            tracing::info!(event = "release_check_unavailable", component = "scheduler", operation = "release_check", error = %e);
            Ok(Ran::Skipped(format!("the release feed could not be read: {e}")))
        }
    }
}

/// The photo library's sync ([`crate::integrations::immich::sync_all`]): items: users synced;
/// a failure when some user's sync failed (each is an `integration_failed` event too).
pub async fn photo_library(state: AppState) -> Result<Ran> {
    let (ok, failed) =
        crate::integrations::immich::sync_all(&state.integrations).await.map_err(|e| Error::Internal(e.to_string()))?;
    if failed > 0 {
        return Err(Error::Internal(format!("{failed} of {} user(s)' photo library sync failed", ok + failed)));
    }
    if ok == 0 {
        return Ok(Ran::Skipped("no user has the photo library connected with its sync on".into()));
    }
    Ok(Ran::Items(ok))
}

/// The runs of one address book's sync (not a row: `subscription_sync` starts them).
pub const CONTACT_SYNC: &str = "contact_sync";
/// The runs of one calendar's sync (not a row: `subscription_sync` starts them).
pub const CALENDAR_SYNC: &str = "calendar_sync";

/// Syncs subscription `id` now, recorded as a run of its source's sync (`trigger` `manual` when
/// its owner asked).
pub async fn sync_now(
    state: &AppState,
    id: u64,
    source: crate::sync::Source,
    trigger: mycorrhizal_engine::system::Trigger,
) -> crate::sync::run::Attempt {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let name = match source {
        crate::sync::Source::AddressBook => CONTACT_SYNC,
        crate::sync::Source::Calendar => CALENDAR_SYNC,
    };
    let run = super::runner::record(state, name, trigger, sync_one(state.clone(), id, Some(sender))).await;
    receiver.await.unwrap_or_else(|_| {
        crate::sync::run::Attempt::Failed(crate::sync::remote::Failure::local(
            run.error.unwrap_or_else(|| "the sync stopped".into()),
        ))
    })
}

/// The subscriptions whose sync is due, each synced as its own run of `contact_sync` or
/// `calendar_sync` (four at a time); items: the syncs started.
pub async fn subscriptions(state: AppState, context: Context) -> Result<Ran> {
    let now = state.engine.clock().now();
    let due = state.blocking(move |engine| crate::sync::run::due(engine, now)).await??;
    if due.is_empty() {
        return Ok(Ran::Skipped("no subscription is due".into()));
    }
    let started = due.len() as u64;
    let trigger = match context.trigger {
        mycorrhizal_engine::system::Trigger::Manual => mycorrhizal_engine::system::Trigger::Manual,
        _ => mycorrhizal_engine::system::Trigger::Scheduled,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (id, source) in due {
        if tasks.len() >= 4 {
            tasks.join_next().await;
        }
        let state = state.clone();
        tasks.spawn(async move { sync_now(&state, id, source, trigger).await });
    }
    while tasks.join_next().await.is_some() {}
    Ok(Ran::Items(started))
}

/// One subscription's sync ([`crate::sync::run::attempt`]); items: records created, updated and
/// removed. The attempt goes to `report` when one waits for it.
pub async fn sync_one(
    state: AppState,
    id: u64,
    report: Option<tokio::sync::oneshot::Sender<crate::sync::run::Attempt>>,
) -> Result<Ran> {
    use crate::sync::run::Attempt;
    let attempt = crate::sync::run::attempt(&state.sync, id).await;
    let ran = match &attempt {
        Attempt::Synced(c, _) => Ok(Ran::Items(c.created + c.updated + c.deleted + c.kept)),
        Attempt::Failed(f) => Err(Error::Internal(format!("{} ({})", f.message, f.class.name()))),
        Attempt::Busy => Ok(Ran::Skipped("a sync of this subscription is running".into())),
        Attempt::Gone => Ok(Ran::Skipped("the subscription was deleted".into())),
    };
    if let Some(report) = report {
        let _ = report.send(attempt);
    }
    ran
}
