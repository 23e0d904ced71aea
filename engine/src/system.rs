//! System records: the operational timeline (system events) and scheduled-job runs. They belong
//! to no user, are written best-effort (a failure to record never fails the work it describes)
//! and are hard-deleted by retention. Both logs are indexed (`system_log`): reads by component,
//! severity, type, result, job or correlation id, in a time range, page from the index.

use jiff::Timestamp;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};
use serde::{Deserialize, Serialize};

use crate::system_log::{self, Entry, Log};
pub use crate::system_log::{LogPage, LogQuery};
use crate::tables::{JOB_RUNS, SYSTEM_EVENTS};
use crate::{Engine, Result, codec};

static EVENTS: Log = Log { rows: SYSTEM_EVENTS, index: "idx:system_events", counts: "map:system_event_counts" };
static RUNS: Log = Log { rows: JOB_RUNS, index: "idx:job_runs", counts: "map:job_run_counts" };

/// Longest `error` text kept on a system record.
pub const MAX_ERROR_LEN: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Error,
}

/// One entry of the operational timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemEvent {
    pub id: u64,
    pub component: String,
    pub severity: Severity,
    pub event_type: String,
    pub correlation_id: Option<String>,
    pub occurred_at: Timestamp,
    pub created_at: Timestamp,
    /// Bounded JSON text with counts and names, never identifiers.
    pub detail: Option<String>,
    /// Sanitised, at most [`MAX_ERROR_LEN`] characters.
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    /// What was being done (`operator_backup`, `restore_drill`, a job's name), when named.
    pub operation: Option<String>,
    /// Whether what it reports succeeded, failed or was skipped, when it reports an outcome.
    pub result: Option<JobResult>,
    /// The account it concerns, when one (never shown beyond the admin's timeline).
    pub user_id: Option<u64>,
}

/// A system event as builds before the `operation`, `result` and `user_id` fields stored it.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct SystemEventV1 {
    id: u64,
    component: String,
    severity: Severity,
    event_type: String,
    correlation_id: Option<String>,
    occurred_at: Timestamp,
    created_at: Timestamp,
    detail: Option<String>,
    error: Option<String>,
    duration_ms: Option<u64>,
}

impl SystemEvent {
    /// The index keys a query names to select events (see [`Engine::events_page`]).
    pub fn key_component(component: &str) -> String {
        format!("c:{component}")
    }
    pub fn key_severity(severity: Severity) -> String {
        format!("s:{}", severity.name())
    }
    pub fn key_type(event_type: &str) -> String {
        format!("t:{event_type}")
    }
    pub fn key_component_severity(component: &str, severity: Severity) -> String {
        format!("cs:{component}|{}", severity.name())
    }
    pub fn key_component_result(component: &str, result: JobResult) -> String {
        format!("cr:{component}|{}", result.name())
    }
    pub fn key_result(result: JobResult) -> String {
        format!("r:{}", result.name())
    }
    pub fn key_correlation(id: &str) -> String {
        format!("x:{id}")
    }
    pub fn key_component_type(component: &str, event_type: &str) -> String {
        format!("ct:{component}|{event_type}")
    }
}

impl Entry for SystemEvent {
    fn id(&self) -> u64 {
        self.id
    }
    fn at(&self) -> Timestamp {
        self.occurred_at
    }
    fn keys(&self) -> Vec<String> {
        self.index_keys()
    }
    fn decode(bytes: &[u8]) -> Result<Self> {
        decode_event(bytes)
    }
}

impl SystemEvent {
    /// The index keys this event is listed under ("" is every event's).
    pub fn index_keys(&self) -> Vec<String> {
        let mut keys = vec![
            String::new(),
            Self::key_component(&self.component),
            Self::key_severity(self.severity),
            Self::key_type(&self.event_type),
            Self::key_component_severity(&self.component, self.severity),
            Self::key_component_type(&self.component, &self.event_type),
        ];
        if let Some(result) = self.result {
            keys.push(Self::key_result(result));
            keys.push(Self::key_component_result(&self.component, result));
        }
        if let Some(id) = &self.correlation_id {
            keys.push(Self::key_correlation(id));
        }
        keys
    }
}

fn decode_event(bytes: &[u8]) -> Result<SystemEvent> {
    {
        codec::decode("sys:system_events", bytes).or_else(|e| {
            let v1: SystemEventV1 = codec::decode("sys:system_events", bytes).map_err(|_| e)?;
            Ok(SystemEvent {
                id: v1.id,
                component: v1.component,
                severity: v1.severity,
                event_type: v1.event_type,
                correlation_id: v1.correlation_id,
                occurred_at: v1.occurred_at,
                created_at: v1.created_at,
                detail: v1.detail,
                error: v1.error,
                duration_ms: v1.duration_ms,
                operation: None,
                result: None,
                user_id: None,
            })
        })
    }
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    Scheduled,
    Initial,
    Manual,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobResult {
    Success,
    Failure,
    Skipped,
}

/// One run of a scheduled job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRun {
    pub id: u64,
    pub job_name: String,
    pub trigger: Trigger,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    pub duration_ms: u64,
    pub result: JobResult,
    pub error: Option<String>,
    pub items_processed: Option<u64>,
    pub correlation_id: Option<String>,
    /// A bounded note on the run (counts and names, never identifiers).
    pub detail: Option<String>,
}

/// A job run as builds before the `detail` field stored it.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct JobRunV1 {
    id: u64,
    job_name: String,
    trigger: Trigger,
    started_at: Timestamp,
    finished_at: Timestamp,
    duration_ms: u64,
    result: JobResult,
    error: Option<String>,
    items_processed: Option<u64>,
    correlation_id: Option<String>,
}

impl JobResult {
    pub fn name(self) -> &'static str {
        match self {
            JobResult::Success => "success",
            JobResult::Failure => "failure",
            JobResult::Skipped => "skipped",
        }
    }
}

impl JobRun {
    /// The index keys a query names to select runs (see [`Engine::job_runs_page`]).
    pub fn key_job(name: &str) -> String {
        format!("j:{name}")
    }
    pub fn key_result(result: JobResult) -> String {
        format!("r:{}", result.name())
    }
    pub fn key_job_result(name: &str, result: JobResult) -> String {
        format!("jr:{name}|{}", result.name())
    }
    /// Runs of `name` that did work (not skipped).
    pub fn key_job_executed(name: &str) -> String {
        format!("je:{name}")
    }
}

impl Entry for JobRun {
    fn id(&self) -> u64 {
        self.id
    }
    fn at(&self) -> Timestamp {
        self.started_at
    }
    fn keys(&self) -> Vec<String> {
        let mut keys = vec![
            String::new(),
            Self::key_job(&self.job_name),
            Self::key_result(self.result),
            Self::key_job_result(&self.job_name, self.result),
        ];
        if self.result != JobResult::Skipped {
            keys.push(Self::key_job_executed(&self.job_name));
        }
        keys
    }
    fn decode(bytes: &[u8]) -> Result<Self> {
        codec::decode("sys:job_runs", bytes).or_else(|e| {
            let v1: JobRunV1 = codec::decode("sys:job_runs", bytes).map_err(|_| e)?;
            Ok(JobRun {
                id: v1.id,
                job_name: v1.job_name,
                trigger: v1.trigger,
                started_at: v1.started_at,
                finished_at: v1.finished_at,
                duration_ms: v1.duration_ms,
                result: v1.result,
                error: v1.error,
                items_processed: v1.items_processed,
                correlation_id: v1.correlation_id,
                detail: None,
            })
        })
    }
}

/// Cuts `text` to [`MAX_ERROR_LEN`] characters on a character boundary.
pub(crate) fn cap_error(text: &str) -> String {
    text.chars().take(MAX_ERROR_LEN).collect()
}

impl Engine {
    /// Records a system event in the next group commit. Best-effort: errors are logged, not returned.
    pub async fn record_event(&self, mut event: SystemEvent) -> Option<SystemEvent> {
        event.error = event.error.map(|e| cap_error(&e));
        let result = self
            .write_async(move |tx| {
                let mut event = event.clone();
                event.id = tx.next_counter(SYSTEM_EVENTS_COUNTER)?;
                event.created_at = tx.now();
                tx.table(SYSTEM_EVENTS)?.insert(event.id, codec::encode(&event).as_slice())?;
                system_log::add(tx, &EVENTS, &event)?;
                Ok(event)
            })
            .await;
        result.map_err(|e| tracing::warn!(event = "system_event_not_recorded", error = %e)).ok()
    }

    /// Records a job run. Best-effort, like [`Engine::record_event`].
    pub async fn record_job_run(&self, run: JobRun) -> Option<JobRun> {
        let result = self
            .write_async(move |tx| {
                let mut run = run.clone();
                run.id = tx.next_counter(JOB_RUNS_COUNTER)?;
                run.error = run.error.map(|e| cap_error(&e));
                tx.table(JOB_RUNS)?.insert(run.id, codec::encode(&run).as_slice())?;
                system_log::add(tx, &RUNS, &run)?;
                Ok(run)
            })
            .await;
        result.map_err(|e| tracing::warn!(event = "job_run_not_recorded", error = %e)).ok()
    }

    /// System events, newest first, that `keep` accepts, at most `limit`.
    pub fn system_events(&self, limit: usize, keep: impl Fn(&SystemEvent) -> bool) -> Result<Vec<SystemEvent>> {
        self.newest(SYSTEM_EVENTS, limit, keep)
    }

    /// Job runs, newest first, that `keep` accepts, at most `limit`.
    pub fn job_runs(&self, limit: usize, keep: impl Fn(&JobRun) -> bool) -> Result<Vec<JobRun>> {
        self.newest(JOB_RUNS, limit, keep)
    }

    /// A page of system events by index keys (`SystemEvent::key_*`) and time range, newest
    /// `occurred_at` first unless asked otherwise, with the number of events that match.
    pub fn events_page(&self, query: &LogQuery) -> Result<LogPage<SystemEvent>> {
        self.log_page(&EVENTS, query)
    }

    /// The system events with these ids, newest first.
    pub fn events_by_id(&self, ids: &[u64]) -> Result<Vec<SystemEvent>> {
        self.log_entries(&EVENTS, ids)
    }

    /// A page of job runs by index keys (`JobRun::key_*`) and a range of `started_at`.
    pub fn job_runs_page(&self, query: &LogQuery) -> Result<LogPage<JobRun>> {
        self.log_page(&RUNS, query)
    }

    /// Indexes the system logs an earlier build wrote without an index (at open). Returns how
    /// many entries it listed.
    pub(crate) fn index_system_logs(&self) -> Result<u64> {
        Ok(system_log::index_existing::<SystemEvent>(self, &EVENTS)?
            + system_log::index_existing::<JobRun>(self, &RUNS)?)
    }

    fn newest<T: Entry>(
        &self,
        table: TableDefinition<u64, &[u8]>,
        limit: usize,
        keep: impl Fn(&T) -> bool,
    ) -> Result<Vec<T>> {
        let txn = self.db().begin_read()?;
        let table = match txn.open_table(table) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for entry in table.iter()?.rev() {
            if out.len() >= limit {
                break;
            }
            let item = T::decode(entry?.1.value())?;
            if keep(&item) {
                out.push(item);
            }
        }
        Ok(out)
    }

    /// Hard-deletes system events that occurred before `cutoff`. Returns how many.
    pub async fn purge_system_events(&self, cutoff: Timestamp) -> Result<u64> {
        self.log_purge::<SystemEvent>(&EVENTS, cutoff).await
    }

    /// Hard-deletes job runs started before `cutoff`. Returns how many.
    pub async fn purge_job_runs(&self, cutoff: Timestamp) -> Result<u64> {
        self.log_purge::<JobRun>(&RUNS, cutoff).await
    }
}

const SYSTEM_EVENTS_COUNTER: &str = "id:system_event";
const JOB_RUNS_COUNTER: &str = "id:job_run";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FixedClock, Options};

    fn v1(id: u64, at: Timestamp) -> SystemEventV1 {
        SystemEventV1 {
            id,
            component: "backup".into(),
            severity: Severity::Error,
            event_type: "backup_failed".into(),
            correlation_id: Some("job:scheduled_backup:1".into()),
            occurred_at: at,
            created_at: at,
            detail: None,
            error: Some("disk full".into()),
            duration_ms: Some(4),
        }
    }

    /// Rows an earlier build wrote read as today's events, and are indexed when the database
    /// is opened by this build.
    #[test]
    fn an_earlier_builds_events_are_read_and_indexed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let at = Timestamp::from_second(1_800_000_000).unwrap();
        let path = dir.path().join("db.redb");
        let options = || Options { clock: std::sync::Arc::new(FixedClock::new(at)), ..Options::default() };
        let (engine, _) = Engine::open(&path, options()).unwrap();
        engine
            .write(move |tx| {
                let mut rows = tx.table(SYSTEM_EVENTS)?;
                for id in 1..=3 {
                    rows.insert(id, codec::encode(&v1(id, at)).as_slice())?;
                }
                Ok(())
            })
            .unwrap();
        let read = engine.system_events(10, |_| true).unwrap();
        assert_eq!(read.len(), 3);
        assert_eq!(
            (read[0].error.as_deref(), read[0].result, read[0].operation.as_deref()),
            (Some("disk full"), None, None)
        );
        assert_eq!(
            engine.events_page(&LogQuery { limit: 10, ..LogQuery::default() }).unwrap().total,
            0,
            "not indexed yet"
        );
        engine.shutdown();
        drop(engine);
        let (engine, _) = Engine::open(&path, options()).unwrap();
        let query = LogQuery { keys: vec![SystemEvent::key_component("backup")], limit: 10, ..LogQuery::default() };
        let page = engine.events_page(&query).unwrap();
        assert_eq!((page.total, page.items.len()), (3, 3));
        assert_eq!(engine.index_system_logs().unwrap(), 0, "indexed once");
    }
}
