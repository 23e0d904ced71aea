//! Scheduled jobs. Each run is recorded as a job run (`scheduled`, `initial` or `manual`, result,
//! duration, items processed) with a `job:<name>:<uuid>` correlation id; a panic inside a job is
//! caught and recorded as a failure with a `job_failed` system event. Jobs are step functions
//! (`purge_once`) so tests call them directly instead of waiting.

use std::time::{Duration, Instant};

use jiff::SignedDuration;
use mycorrhizal_engine::system::{JobResult, JobRun, Trigger};
use mycorrhizal_engine::{Precondition, UserId};

use crate::auth::records::{Account, DeviceGrant, ResetToken, Session};
use crate::crm::contact::Contact;
use crate::crm::reach_out::{self, ReachOutCursor, ReachOutSuggestion};
use crate::crm::records::BY_CONTACT;
use crate::ops::events::{Event, emit};
use crate::state::AppState;

pub mod backups;
pub mod digest;

pub const PURGE: &str = "retention_purge";
/// The on-demand full-text index rebuild (`POST /admin/search/rebuild`).
pub const SEARCH_REBUILD: &str = "search_index_rebuild";
/// Audit events are kept this long; the chain stays verifiable through its anchor.
pub const AUDIT_RETENTION_DAYS: i64 = 90;
/// The daily walk of every user's audit hash chain.
pub const AUDIT_VERIFY: &str = "audit_chain_verify";
/// The reach-out scan (suggestions to get in touch with overdue contacts).
pub const REACH_OUT: &str = "reach_out_scan";
const DAY: Duration = Duration::from_secs(24 * 3600);
const HOUR: Duration = Duration::from_secs(3600);
/// Audit events read per batch by the reach-out scan.
const AUDIT_BATCH: usize = 500;
/// A contact also becomes overdue by time passing alone, with no audit event: without new
/// events, overdue contacts are still re-evaluated this often.
const REACH_OUT_REEVALUATE_HOURS: i64 = 24;

/// Starts the scheduler: the outbox's delivery worker; the daily digest at `REMINDER_TIME`
/// ([`digest`]); the purge runs once at start-up and then daily; the reach-out scan runs once at
/// start-up and then hourly.
pub fn start(state: AppState) {
    backups::start(&state);
    digest::start(&state);
    // The worker runs on its own thread at background priority, as long as this runtime does.
    let worker = crate::notify::worker::start(state.clone());
    tokio::spawn(async move {
        let _worker = worker;
        std::future::pending::<()>().await
    });
    let purge_state = state.clone();
    tokio::spawn(async move {
        let mut trigger = Trigger::Initial;
        loop {
            purge_once(&purge_state, trigger).await;
            audit_verify_once(&purge_state, trigger).await;
            trigger = Trigger::Scheduled;
            tokio::time::sleep(DAY).await;
        }
    });
    tokio::spawn(async move {
        let mut trigger = Trigger::Initial;
        loop {
            reach_out_once(&state, trigger).await;
            trigger = Trigger::Scheduled;
            tokio::time::sleep(HOUR).await;
        }
    });
}

/// Walks every user's audit hash chain (the daily integrity pass). A broken chain fails the run,
/// naming the users, and records an `audit_chain_broken` system event; the run's items are the
/// events verified.
pub async fn audit_verify_once(state: &AppState, trigger: Trigger) -> JobRun {
    let state_ = state.clone();
    let work = async move {
        let engine = state_.engine.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let users: Vec<u64> = engine
                .global()
                .map_err(|e| e.to_string())?
                .list::<Account>()
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let (mut verified, mut broken) = (0u64, Vec::new());
            for user in users {
                match engine.user(UserId(user)).view().and_then(|v| v.verify_audit()) {
                    Ok(n) => verified += n,
                    Err(e) => broken.push(format!("user {user}: {e}")),
                }
            }
            Ok::<_, String>((verified, broken))
        })
        .await
        .map_err(|e| e.to_string())??;
        let (verified, broken) = outcome;
        if broken.is_empty() {
            Ok(verified)
        } else {
            let message = format!("audit chain verification failed: {}", broken.join("; "));
            emit(&state_.engine, Event::error("audit", "audit_chain_broken", message.clone())).await;
            Err(message)
        }
    };
    record(state, AUDIT_VERIFY, trigger, work).await
}

/// Runs `work`, records the run, and never lets a failure escape.
async fn record<F>(state: &AppState, name: &str, trigger: Trigger, work: F) -> JobRun
where
    F: std::future::Future<Output = Result<u64, String>> + Send + 'static,
{
    record_ran(state, name, trigger, async move { work.await.map(Ran::Items) }).await
}

/// A job run as the admin API shows it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct JobRunView {
    pub id: u64,
    pub job_name: String,
    /// `scheduled`, `initial` or `manual`.
    #[schema(pattern = "^(scheduled|initial|manual)$")]
    pub trigger: String,
    #[schema(value_type = String)]
    pub started_at: jiff::Timestamp,
    #[schema(value_type = String)]
    pub finished_at: jiff::Timestamp,
    pub duration_ms: u64,
    /// `success`, `failure` or `skipped`.
    #[schema(pattern = "^(success|failure|skipped)$")]
    pub result: String,
    /// Why it failed or was skipped.
    pub error: Option<String>,
    pub items_processed: Option<u64>,
    pub correlation_id: Option<String>,
}

impl From<&JobRun> for JobRunView {
    fn from(run: &JobRun) -> Self {
        let word = |v: serde_json::Result<serde_json::Value>| {
            v.ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        };
        JobRunView {
            id: run.id,
            job_name: run.job_name.clone(),
            trigger: word(serde_json::to_value(run.trigger)),
            started_at: run.started_at,
            finished_at: run.finished_at,
            duration_ms: run.duration_ms,
            result: word(serde_json::to_value(run.result)),
            error: run.error.clone(),
            items_processed: run.items_processed,
            correlation_id: run.correlation_id.clone(),
        }
    }
}

/// How a job's work ended when it did not fail.
pub(crate) enum Ran {
    /// It did its work on this many items.
    Items(u64),
    /// It had nothing to do, for this reason (a `skipped` run: job health ignores it).
    Skipped(String),
}

/// [`record`] for work that may be skipped.
async fn record_ran<F>(state: &AppState, name: &str, trigger: Trigger, work: F) -> JobRun
where
    F: std::future::Future<Output = Result<Ran, String>> + Send + 'static,
{
    let correlation = format!("job:{name}:{}", uuid::Uuid::new_v4());
    let started_at = state.engine.clock().now();
    let started = Instant::now();
    // Spawned so that a panic inside the job is caught as a join error, not a crash; within its
    // correlation id, so what it writes and queues (outbox rows, system events) carries it.
    let outcome = match tokio::spawn(crate::http::request_id::within(correlation.clone(), work)).await {
        Ok(outcome) => outcome,
        Err(panic) => {
            let mut event = Event::error("scheduler", "job_failed", format!("{name} panicked: {panic}"));
            event.correlation_id = Some(correlation.clone());
            emit(&state.engine, event).await;
            Err(format!("panicked: {panic}"))
        }
    };
    store(state, name, trigger, started_at, started, outcome, correlation).await
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
    store(state, name, trigger, started_at, started, outcome.map(Ran::Items), correlation).await
}

async fn store(
    state: &AppState,
    name: &str,
    trigger: Trigger,
    started_at: jiff::Timestamp,
    started: Instant,
    outcome: Result<Ran, String>,
    correlation: String,
) -> JobRun {
    let duration_ms = started.elapsed().as_millis() as u64;
    let (result, error, items) = match outcome {
        Ok(Ran::Items(items)) => (JobResult::Success, None, Some(items)),
        Ok(Ran::Skipped(reason)) => (JobResult::Skipped, Some(reason), None),
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
/// runs past their retention, finished outbox messages (webhook deliveries, mails) older than
/// `WEBHOOK_DELIVERY_RETENTION_DAYS`. Returns the recorded run.
pub async fn purge_once(state: &AppState, trigger: Trigger) -> JobRun {
    let state_ = state.clone();
    let work = async move {
        let now = state_.engine.clock().now();
        let retention = &state_.config.retention;
        let days = |d: i64| now.checked_sub(SignedDuration::from_hours(d * 24)).map_err(|e| e.to_string());
        let mut removed = 0;
        let tombstones = days(retention.deleted_days)?;
        let audit_cutoff = days(AUDIT_RETENTION_DAYS)?;
        for user in account_ids(&state_).await.map_err(|e| e.to_string())? {
            removed += state_
                .engine
                .user(UserId(user))
                .write_async(move |tx| {
                    let mut removed = 0;
                    for kind in crate::crm::kinds::all() {
                        if let Some(purge) = kind.purge {
                            removed += purge(tx, tombstones)?;
                        }
                    }
                    Ok(removed + tx.purge_audit(audit_cutoff)?)
                })
                .await
                .map_err(|e| e.to_string())?;
        }
        removed +=
            state_.engine.write_async(move |tx| expired_credentials(tx, now)).await.map_err(|e| e.to_string())?;
        if retention.storage_sample_days > 0 {
            let cutoff = days(retention.storage_sample_days)?;
            removed += state_
                .engine
                .write_async(move |tx| {
                    crate::ops::storage::purge_older::<crate::ops::storage::StorageSample>(tx, cutoff, |s| s.at)
                })
                .await
                .map_err(|e| e.to_string())?;
        }
        if retention.system_event_days > 0 {
            removed += state_
                .engine
                .purge_system_events(days(retention.system_event_days)?)
                .await
                .map_err(|e| e.to_string())?;
        }
        if retention.job_run_days > 0 {
            removed += state_.engine.purge_job_runs(days(retention.job_run_days)?).await.map_err(|e| e.to_string())?;
            // Integrity reports are kept as long as the job runs that made them.
            let cutoff = days(retention.job_run_days)?;
            removed += state_
                .engine
                .write_async(move |tx| {
                    crate::ops::storage::purge_older::<crate::integrity::IntegrityReport>(tx, cutoff, |r| r.checked_at)
                })
                .await
                .map_err(|e| e.to_string())?;
        }
        if retention.webhook_delivery_days > 0 {
            let cutoff = days(retention.webhook_delivery_days)?;
            removed += crate::notify::outbox::purge(&state_.engine, cutoff).await.map_err(|e| e.to_string())?;
        }
        Ok(removed)
    };
    record(state, PURGE, trigger, work).await
}

/// One reach-out pass over every user: reads the user's cursor (`last_audit_event_id`), scans the
/// audit events after it in bounded batches and, when there are new events (other than the
/// scan's own bookkeeping), on the first run, or when the last evaluation is a day old,
/// re-evaluates overdue cadences (the same rule as `/cadence-policies/overdue`). Each overdue
/// contact without a suggestion gets a `pending` one; a contact that already has one, pending or
/// dismissed, gets nothing new (a dismissal is never undone). A pending suggestion whose contact
/// is no longer overdue is removed. The cursor then advances. `items_processed` counts the
/// suggestions created and removed.
pub async fn reach_out_once(state: &AppState, trigger: Trigger) -> JobRun {
    let state_ = state.clone();
    let work = async move {
        let mut changed = 0;
        for user in account_ids(&state_).await.map_err(|e| e.to_string())? {
            let now = state_.engine.clock().now();
            let planned =
                state_.blocking(move |engine| plan_reach_out(engine, user, now)).await.map_err(|e| e.to_string())??;
            let Some(plan) = planned else { continue };
            changed += state_
                .engine
                .write_async(move |tx| {
                    let changed = apply_reach_out(&tx.user(UserId(user)), &plan)?;
                    let cursor = ReachOutCursor { last_audit_event_id: plan.last_seen, scanned_at: now };
                    reach_out::store_cursor(&tx.global(), user, &cursor)?;
                    Ok(changed)
                })
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(changed)
    };
    record(state, REACH_OUT, trigger, work).await
}

/// Every account's id, read on the blocking pool.
pub(crate) async fn account_ids(state: &AppState) -> crate::crm::Result<Vec<u64>> {
    let accounts = state.blocking(|engine| engine.global()?.list::<Account>()).await??;
    Ok(accounts.into_iter().map(|(id, _)| id).collect())
}

/// What one user's reach-out pass will write.
struct ReachOutPlan {
    /// The newest audit event scanned.
    last_seen: u64,
    /// Overdue contacts with the policy found overdue (the most overdue one per contact).
    overdue: Vec<(u64, u64)>,
    /// Pending cadence suggestions whose contact is no longer overdue.
    stale: Vec<u64>,
    /// Field changes seen in the new audit events: `(contact, kind, old, new, audit event)`.
    changes: Vec<(u64, &'static str, String, String, u64)>,
}

fn plan_reach_out(
    engine: &mycorrhizal_engine::Engine,
    user: u64,
    now: jiff::Timestamp,
) -> Result<Option<ReachOutPlan>, String> {
    let cursor = reach_out::cursor(&engine.global().map_err(|e| e.to_string())?, user).map_err(|e| e.to_string())?;
    let v = engine.user(UserId(user)).view().map_err(|e| e.to_string())?;
    let mut last_seen = cursor.as_ref().map(|c| c.last_audit_event_id).unwrap_or(0);
    let mut fresh = false;
    let mut changes = Vec::new();
    loop {
        let batch = v.audit_events(last_seen, AUDIT_BATCH).map_err(|e| e.to_string())?;
        for event in &batch {
            fresh |= !reach_out::is_own_kind(&event.kind);
            last_seen = last_seen.max(event.seq);
            for (kind, old, new) in reach_out::field_changes(event) {
                changes.push((event.record_id, kind, old, new, event.seq));
            }
        }
        if batch.len() < AUDIT_BATCH {
            break;
        }
    }
    let due = cursor.as_ref().is_none_or(|c| now.duration_since(c.scanned_at).as_hours() >= REACH_OUT_REEVALUATE_HOURS);
    if !fresh && !due {
        return Ok(None);
    }
    let mut overdue: Vec<(u64, u64)> = Vec::new();
    for item in crate::crm::cadence::overdue(&v, now).map_err(|e| e.to_string())? {
        let (contact, policy) = (item.contact_id, item.policy.id);
        if !overdue.iter().any(|(c, _)| *c == contact) {
            overdue.push((contact, policy));
        }
    }
    let stale = v
        .list::<ReachOutSuggestion>()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|s| {
            s.body.kind == reach_out::KIND_CADENCE_OVERDUE
                && s.body.status == reach_out::PENDING
                && !overdue.iter().any(|(c, _)| *c == s.body.contact_id)
        })
        .map(|s| s.id)
        .collect();
    Ok(Some(ReachOutPlan { last_seen, overdue, stale, changes }))
}

/// Writes one user's suggestions, re-checking each row inside the transaction (the user may have
/// dismissed a suggestion or deleted a contact since the plan was made).
fn apply_reach_out(tx: &mycorrhizal_engine::TxUser<'_, '_>, plan: &ReachOutPlan) -> mycorrhizal_engine::Result<u64> {
    let mut changed = 0;
    let of_contact = |contact: u64| -> mycorrhizal_engine::Result<Vec<mycorrhizal_engine::Row<ReachOutSuggestion>>> {
        let mut rows = Vec::new();
        for id in tx.find::<ReachOutSuggestion>(BY_CONTACT, &format!("{contact:020}"))? {
            rows.push(tx.get::<ReachOutSuggestion>(id)?);
        }
        Ok(rows)
    };
    for &(contact, policy) in &plan.overdue {
        if tx.get::<Contact>(contact).is_err()
            || of_contact(contact)?.iter().any(|s| s.body.kind == reach_out::KIND_CADENCE_OVERDUE)
        {
            continue;
        }
        tx.create(ReachOutSuggestion {
            contact_id: contact,
            kind: reach_out::KIND_CADENCE_OVERDUE.to_string(),
            status: reach_out::PENDING.to_string(),
            policy_id: policy,
            audit_event_id: plan.last_seen,
            reminder_id: None,
            old_value: String::new(),
            new_value: String::new(),
        })?;
        changed += 1;
    }
    // A field change: nothing new when a suggestion for the same value exists (pending, or
    // dismissed: never resurfaced); a pending one of the same kind follows the newer value (from
    // its first old value); else a new pending suggestion.
    for (contact, kind, old, new, event) in &plan.changes {
        if tx.get::<Contact>(*contact).is_err() {
            continue;
        }
        let existing = of_contact(*contact)?;
        let same_kind = || existing.iter().filter(|s| s.body.kind == *kind);
        if same_kind().any(|s| s.body.new_value.eq_ignore_ascii_case(new)) {
            continue;
        }
        if let Some(pending) = same_kind().find(|s| s.body.status == reach_out::PENDING) {
            let (new, event) = (new.clone(), *event);
            tx.update::<ReachOutSuggestion>(pending.id, Precondition::Any, move |s| {
                s.new_value = new;
                s.audit_event_id = event;
                Ok(())
            })?;
        } else {
            tx.create(ReachOutSuggestion {
                contact_id: *contact,
                kind: kind.to_string(),
                status: reach_out::PENDING.to_string(),
                policy_id: 0,
                audit_event_id: *event,
                reminder_id: None,
                old_value: old.clone(),
                new_value: new.clone(),
            })?;
        }
        changed += 1;
    }
    for &id in &plan.stale {
        if tx.get::<ReachOutSuggestion>(id).is_ok_and(|s| s.body.status == reach_out::PENDING) {
            tx.delete::<ReachOutSuggestion>(id, Precondition::Any)?;
            changed += 1;
        }
    }
    Ok(changed)
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

/// `{message, contacts_scanned, contacts_updated}`: the derived contact columns rebuilt.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct DerivedRebuilt {
    pub message: String,
    pub contacts_scanned: u64,
    pub contacts_updated: u64,
}

impl DerivedRebuilt {
    pub fn of(contacts_scanned: u64, contacts_updated: u64) -> DerivedRebuilt {
        DerivedRebuilt { message: "Derived contact columns rebuilt".into(), contacts_scanned, contacts_updated }
    }
}

/// `{message, indexed}`: the search index rebuilt, with the live rows indexed (all users).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct SearchRebuilt {
    pub message: String,
    pub indexed: IndexedCounts,
}

/// Rows indexed per searchable kind.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct IndexedCounts {
    pub contacts: u64,
    pub notes: u64,
    pub activities: u64,
}

impl SearchRebuilt {
    pub fn of(report: &mycorrhizal_engine::RebuildReport) -> SearchRebuilt {
        let count = |kind: &str| report.indexed.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
        let indexed = IndexedCounts { contacts: count("contact"), notes: count("note"), activities: count("activity") };
        SearchRebuilt { message: "Search index rebuilt".into(), indexed }
    }
}

/// Rebuilds the full-text index from the database aside from the live one and swaps it in (the
/// admin's on-demand job, from any front door), recorded as job run [`SEARCH_REBUILD`].
pub async fn rebuild_search(state: &AppState) -> crate::crm::Result<mycorrhizal_engine::RebuildReport> {
    let started_at = state.engine.clock().now();
    let started = std::time::Instant::now();
    let correlation = format!("job:{SEARCH_REBUILD}:{}", uuid::Uuid::new_v4());
    let outcome = state.blocking(|engine| engine.search_rebuild()).await?;
    let report = match outcome {
        Err(mycorrhizal_engine::Error::RebuildRunning) => return Err(mycorrhizal_engine::Error::RebuildRunning.into()),
        other => other,
    };
    let recorded = report.as_ref().map(|r| r.indexed.iter().map(|(_, n)| n).sum::<u64>()).map_err(|e| e.to_string());
    store_run(state, SEARCH_REBUILD, Trigger::Manual, started_at, started, recorded, correlation).await;
    let report = report?;
    tracing::info!(event = "search_index_rebuilt", component = "search", took_ms = report.took.as_millis() as u64);
    Ok(report)
}

/// Recomputes every user's contacts' derived columns; returns `(scanned, updated)`.
pub async fn rebuild_derived(state: &AppState) -> crate::crm::Result<(u64, u64)> {
    let (mut scanned, mut updated) = (0u64, 0u64);
    for user in account_ids(state).await? {
        let rebuilt = crate::crm::contact::ops::rebuild_derived(&state.engine.user(UserId(user))).await?;
        scanned += rebuilt.scanned;
        updated += rebuilt.updated;
    }
    Ok((scanned, updated))
}
