//! The record of scheduled work: each finished job run as stored and as the admin API shows it,
//! and the last local day each wall-clock job ran. What runs when is the scheduler's table
//! (`jobs`); this file only stores and reads.

use jiff::civil::Date;
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::JobRun;

use crate::crm::{Result, blocking};

/// The last local day each wall-clock job ran (key: job name, value: `YYYY-MM-DD`).
const JOB_DAYS: &str = "map:job_days";

/// Stores a finished run and answers it with its id (as given when the store fails: a run that
/// cannot be recorded is still logged by the caller).
pub async fn store(engine: &Engine, run: JobRun) -> JobRun {
    engine.record_job_run(run.clone()).await.unwrap_or(run)
}

/// The last local day job `name` ran for, if it ever did.
pub async fn last_day(engine: &Engine, name: &'static str) -> Result<Option<Date>> {
    let stored = blocking(engine, move |engine| engine.global().and_then(|g| g.map_get(JOB_DAYS, name))).await??;
    Ok(stored.and_then(|b| String::from_utf8(b).ok()).and_then(|t| t.parse().ok()))
}

/// Remembers that job `name` ran for `day`.
pub async fn mark_day(engine: &Engine, name: &'static str, day: Date) -> Result<()> {
    let text = day.to_string();
    Ok(engine.write_async(move |tx| tx.global().map_put(JOB_DAYS, name, text.as_bytes())).await?)
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
