//! System records: the operational timeline (system events) and scheduled-job runs. They belong
//! to no user, are written best-effort (a failure to record never fails the work it describes)
//! and are hard-deleted by retention.

use jiff::Timestamp;
use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError, TableHandle};
use serde::{Deserialize, Serialize};

use crate::tables::{JOB_RUNS, SYSTEM_EVENTS};
use crate::{Engine, Result, codec};

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
}

/// Cuts `text` to [`MAX_ERROR_LEN`] characters on a character boundary.
pub fn cap_error(text: &str) -> String {
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

    fn newest<T: serde::de::DeserializeOwned>(
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
            let item: T = codec::decode("system", entry?.1.value())?;
            if keep(&item) {
                out.push(item);
            }
        }
        Ok(out)
    }

    /// Hard-deletes system events created before `cutoff`. Returns how many.
    pub async fn purge_system_events(&self, cutoff: Timestamp) -> Result<u64> {
        self.purge_older(SYSTEM_EVENTS, move |e: &SystemEvent| e.created_at < cutoff).await
    }

    /// Hard-deletes job runs started before `cutoff`. Returns how many.
    pub async fn purge_job_runs(&self, cutoff: Timestamp) -> Result<u64> {
        self.purge_older(JOB_RUNS, move |r: &JobRun| r.started_at < cutoff).await
    }

    async fn purge_older<T: serde::de::DeserializeOwned>(
        &self,
        table: TableDefinition<'static, u64, &'static [u8]>,
        expired: impl Fn(&T) -> bool + Send + 'static,
    ) -> Result<u64> {
        self.write_async(move |tx| {
            let mut rows = tx.table(table)?;
            let mut removed = 0;
            rows.retain(|_, bytes| {
                let old = codec::decode::<T>(table.name(), bytes).is_ok_and(|row| expired(&row));
                removed += u64::from(old);
                !old
            })?;
            Ok(removed)
        })
        .await
    }
}

const SYSTEM_EVENTS_COUNTER: &str = "id:system_event";
const JOB_RUNS_COUNTER: &str = "id:job_run";
