//! The record of scheduled work: each finished job run as stored and as the admin API shows it,
//! and the last local day each wall-clock job ran. What runs when is the scheduler's table
//! (`jobs`); this file only stores and reads.

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::{JobResult, JobRun, LogQuery};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::timeline::{instant, limit};
use crate::crm::{Error, Result, blocking};

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
    /// When the run was recorded (it finished).
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
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
            created_at: run.finished_at,
            detail: run.detail.clone(),
        }
    }
}

/// The job runs' filters, as the query names them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunQuery {
    pub job_name: Option<String>,
    /// `success`, `failure` or `skipped`.
    #[param(pattern = "^(success|failure|skipped)?$")]
    pub result: Option<String>,
    /// RFC 3339; runs started at or after it.
    #[param(value_type = Option<crate::crm::schema::InstantOrBlank>)]
    pub since: Option<String>,
    /// RFC 3339; runs started at or before it.
    #[param(value_type = Option<crate::crm::schema::InstantOrBlank>)]
    pub until: Option<String>,
    /// Default 100, at most 500.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunPage {
    pub job_runs: Vec<JobRunView>,
    /// Runs matching the filters in all.
    pub total: u64,
}

fn result_of(raw: Option<&str>) -> Result<Option<JobResult>> {
    match raw.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some("success") => Ok(Some(JobResult::Success)),
        Some("failure") => Ok(Some(JobResult::Failure)),
        Some("skipped") => Ok(Some(JobResult::Skipped)),
        Some(_) => Err(Error::bad_parameter("result", "must be success, failure or skipped")),
    }
}

/// Job runs for `query`, newest first, with the number matching.
pub async fn list(engine: &Engine, query: RunQuery) -> Result<RunPage> {
    let result = result_of(query.result.as_deref())?;
    let since = instant(query.since.as_deref(), "since")?;
    let until = instant(query.until.as_deref(), "until")?;
    let limit = limit(query.limit.as_deref())?;
    let keys = match (query.job_name.filter(|n| !n.is_empty()), result) {
        (Some(name), Some(result)) => vec![JobRun::key_job_result(&name, result)],
        (Some(name), None) => vec![JobRun::key_job(&name)],
        (None, Some(result)) => vec![JobRun::key_result(result)],
        (None, None) => Vec::new(),
    };
    let page = blocking(engine, move |engine| {
        engine.job_runs_page(&LogQuery { keys, since, until, limit, ..LogQuery::default() })
    })
    .await??;
    Ok(RunPage { job_runs: page.items.iter().map(JobRunView::from).collect(), total: page.total })
}

/// Runs that did work (not skipped) the duration trend is taken over.
pub const DURATION_SAMPLE: usize = 20;

/// One job's health, folded from its runs: a skipped run changes nothing; a success closes the
/// incident; each failure after the last success adds to the streak.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobHealth {
    pub job_name: String,
    /// `healthy`, `failing` or `unknown` (never executed).
    pub status: String,
    #[schema(value_type = Option<String>)]
    pub last_run_at: Option<Timestamp>,
    /// The last run's result (`success`, `failure`, `skipped`), "" before the first.
    pub last_result: String,
    pub last_trigger: String,
    pub last_duration_ms: Option<u64>,
    pub last_items_processed: Option<u64>,
    #[schema(value_type = Option<String>)]
    pub last_success_at: Option<Timestamp>,
    #[schema(value_type = Option<String>)]
    pub last_failure_at: Option<Timestamp>,
    /// The newest failure's error while failing, else "".
    pub last_error: String,
    #[schema(value_type = Option<String>)]
    pub incident_first_failure_at: Option<Timestamp>,
    pub consecutive_failures: u64,
    /// Executed runs the averages are over (up to 20).
    pub duration_sample_size: u64,
    pub avg_duration_ms: Option<u64>,
    pub max_duration_ms: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobHealthList {
    pub jobs: Vec<JobHealth>,
}

fn newest(
    engine: &Engine,
    key: String,
    since: Option<Timestamp>,
    limit: usize,
    oldest: bool,
) -> mycorrhizal_engine::Result<(Vec<JobRun>, u64)> {
    let page = engine.job_runs_page(&LogQuery {
        keys: vec![key],
        since,
        limit,
        oldest_first: oldest,
        ..LogQuery::default()
    })?;
    Ok((page.items, page.total))
}

/// The health of job `name` (see [`JobHealth`]).
pub fn health_of(engine: &Engine, name: &str) -> mycorrhizal_engine::Result<JobHealth> {
    let (last, _) = newest(engine, JobRun::key_job(name), None, 1, false)?;
    let (executed, _) = newest(engine, JobRun::key_job_executed(name), None, DURATION_SAMPLE, false)?;
    let (success, _) = newest(engine, JobRun::key_job_result(name, JobResult::Success), None, 1, false)?;
    let (failure, _) = newest(engine, JobRun::key_job_result(name, JobResult::Failure), None, 1, false)?;
    let last = last.into_iter().next();
    let last_success_at = success.first().map(|r| r.started_at);
    let last_failure_at = failure.first().map(|r| r.started_at);
    let failing = executed.first().is_some_and(|r| r.result == JobResult::Failure);
    let (mut first, mut streak) = (None, 0);
    if failing {
        let after = last_success_at.map(|s| s + SignedDuration::from_micros(1));
        let (oldest, count) = newest(engine, JobRun::key_job_result(name, JobResult::Failure), after, 1, true)?;
        first = oldest.first().map(|r| r.started_at);
        streak = count;
    }
    let durations: Vec<u64> = executed.iter().map(|r| r.duration_ms).collect();
    let sample = durations.len() as u64;
    let view = last.as_ref().map(JobRunView::from);
    Ok(JobHealth {
        job_name: name.to_string(),
        status: if executed.is_empty() {
            "unknown"
        } else if failing {
            "failing"
        } else {
            "healthy"
        }
        .into(),
        last_run_at: last.as_ref().map(|r| r.started_at),
        last_result: view.as_ref().map(|v| v.result.clone()).unwrap_or_default(),
        last_trigger: view.as_ref().map(|v| v.trigger.clone()).unwrap_or_default(),
        last_duration_ms: last.as_ref().map(|r| r.duration_ms),
        last_items_processed: last.as_ref().and_then(|r| r.items_processed),
        last_success_at,
        last_failure_at,
        last_error: if failing {
            failure.first().and_then(|r| r.error.clone()).unwrap_or_default()
        } else {
            String::new()
        },
        incident_first_failure_at: first,
        consecutive_failures: streak,
        duration_sample_size: sample,
        avg_duration_ms: (sample > 0).then(|| durations.iter().sum::<u64>() / sample),
        max_duration_ms: durations.iter().max().copied(),
    })
}

/// The health of each job in `names` (the scheduler's table), in that order.
pub async fn health(engine: &Engine, names: Vec<&'static str>) -> Result<JobHealthList> {
    let jobs = blocking(engine, move |engine| {
        names.iter().map(|name| health_of(engine, name)).collect::<mycorrhizal_engine::Result<Vec<_>>>()
    })
    .await??;
    Ok(JobHealthList { jobs })
}

/// An enabled job as the scheduler reports it.
#[derive(Debug, Clone)]
pub struct JobActivity {
    pub name: &'static str,
    /// Its interval (a day for a wall-clock job); none when it runs only on demand.
    pub every: Option<std::time::Duration>,
    /// Since when it runs, when it runs now.
    pub running_since: Option<Timestamp>,
}

impl JobActivity {
    /// Running longer than its interval (an hour for a job run on demand): stuck.
    pub fn stuck(&self, now: Timestamp) -> bool {
        let limit = self.every.unwrap_or(std::time::Duration::from_secs(3600));
        self.running_since.is_some_and(|since| now.duration_since(since).unsigned_abs() > limit)
    }
}
