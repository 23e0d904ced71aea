//! The system status behind `GET /admin/system-status`: every facet an operator checks, in one
//! answer (overall health, the deep health of each part, version and uptime, migrations, the
//! configuration's warnings and features, the database files, storage with its growth and tier,
//! the release check). Values of the configuration are never echoed, only which variables.

use std::collections::BTreeMap;

use jiff::Timestamp;
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::{JobResult, JobRun, LogQuery};
use serde::Serialize;
use utoipa::ToSchema;

use crate::build_info;
use crate::config::{Config, Email};
use crate::crm::Result;
use crate::integrity::IntegrityReport;
use crate::ops::job_runs::{self, JobActivity};
use crate::ops::storage::{self, StorageBlock, Tier};
use crate::reach::Reachability;
use crate::release::UpdateStatus;
use crate::state::AppState;

/// A facet with a reason when it is not fine.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Facet {
    /// `ok`, `degraded`, `unhealthy` or `not_configured`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn facet(status: &str, reason: Option<String>) -> Facet {
    Facet { status: status.into(), reason }
}

/// One enabled job as the deep health shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobState {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub last_run_at: Option<Timestamp>,
    /// Running now.
    pub locked: bool,
    /// Running longer than its interval.
    pub stuck: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BackgroundJobs {
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub jobs: Vec<JobState>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeepHealth {
    pub status: String,
    pub database: String,
    pub migrations: String,
    pub integrity_check: String,
    pub restore_drill: Facet,
    pub background_jobs: BackgroundJobs,
    pub integrations: BTreeMap<String, Reachability>,
    /// The users' own integrations (photo library, archive, files, WebDAV), by system, as their
    /// last uses went: each user's to mend, so they do not change `status`.
    pub user_integrations: BTreeMap<String, UserIntegrations>,
}

/// How one system's user connections went at their last use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserIntegrations {
    pub configured: usize,
    /// Whose last use failed.
    pub failing: usize,
    /// Whose credential no longer opens (to be entered again).
    pub credential_unreadable: usize,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionInfo {
    pub version: String,
    pub commit: Option<String>,
    pub build_date: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Uptime {
    #[schema(value_type = String)]
    pub started_at: Timestamp,
    pub uptime_seconds: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Migration {
    pub applied: u32,
    pub latest: u32,
    pub pending: u32,
    /// A migration stopped half way (the engine refuses to open such a database, so this
    /// reads `false` on a running server).
    pub dirty: bool,
}

/// A setting an operator should look at: the variable, and why (never its value).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConfigNote {
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Features {
    pub carddav: bool,
    pub caldav: bool,
    pub oidc: bool,
    pub email: bool,
    pub metrics: bool,
    pub db_integrity_check: bool,
    pub db_restore_drill: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConfigStatus {
    pub validation: Vec<ConfigNote>,
    pub features: Features,
}

/// The database's files. The store is redb with a redo log, not SQLite: `sqlite_version` is
/// null, `journal_mode` is `redo-log` and `wal_bytes` is the redo log's size.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DatabaseFiles {
    pub engine: String,
    pub sqlite_version: Option<String>,
    pub journal_mode: String,
    pub wal_bytes: u64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SystemStatus {
    /// `healthy`, `degraded` or `unhealthy`.
    pub overall: String,
    pub health: DeepHealth,
    pub version: VersionInfo,
    pub uptime: Uptime,
    pub migration: Migration,
    pub config: ConfigStatus,
    pub database: DatabaseFiles,
    pub storage: StorageBlock,
    pub update: UpdateStatus,
}

/// The settings worth a second look, by variable.
pub fn config_notes(config: &Config) -> Vec<ConfigNote> {
    let mut notes = Vec::new();
    let mut note = |field: &str, message: &str| notes.push(ConfigNote { field: field.into(), message: message.into() });
    if matches!(config.auth.email, Email::Disabled) {
        note("EMAIL_API_URL", "no mail provider is configured: password resets and mail notifications cannot be sent");
    }
    if config.integrity.backup_dir.is_none() {
        note("BACKUP_DIR", "not set: no scheduled backups are taken (run `mycorrhizal backup` yourself)");
    }
    if config.auth.data_encryption_key.is_none() && config.auth.data_encryption_key_file.is_none() {
        note(
            "DATA_ENCRYPTION_KEY",
            "not set: secrets at rest are sealed with a key derived from JWT_SECRET_KEY, which must then never change",
        );
    }
    if !config.auth.cookie_secure && config.auth.frontend_url.as_deref().is_some_and(|u| u.starts_with("https://")) {
        note("COOKIE_SECURE", "off while FRONTEND_URL is https: session cookies may travel without TLS");
    }
    if !config.alerts.enabled {
        note("ALERTING_ENABLED", "off: no condition is watched and no admin is alerted");
    }
    notes
}

fn features(config: &Config) -> Features {
    Features {
        carddav: config.features.carddav_enabled,
        caldav: config.features.caldav_enabled,
        oidc: config.auth.oidc.is_some(),
        email: !matches!(config.auth.email, Email::Disabled),
        metrics: config.features.metrics_enabled,
        db_integrity_check: config.integrity.check_enabled,
        db_restore_drill: config.integrity.restore_drill_enabled,
    }
}

fn newest_run(engine: &Engine, name: &str) -> mycorrhizal_engine::Result<Option<JobRun>> {
    let query = LogQuery { keys: vec![JobRun::key_job(name)], limit: 1, ..LogQuery::default() };
    Ok(engine.job_runs_page(&query)?.items.into_iter().next())
}

/// The deep health's parts read from the engine (blocking).
struct Read {
    database: String,
    migrations: String,
    integrity_check: String,
    restore_drill: Facet,
    jobs: Vec<JobState>,
    failing_jobs: Vec<String>,
    stuck_jobs: Vec<String>,
    storage: StorageBlock,
    wal_bytes: u64,
}

fn read(engine: &Engine, config: &Config, activity: &[JobActivity]) -> mycorrhizal_engine::Result<Read> {
    let now = engine.clock().now();
    let database = match (engine.check_read(), engine.is_writable()) {
        (Ok(()), true) => "ok",
        (Ok(()), false) => "degraded",
        (Err(_), _) => "unhealthy",
    };
    let migrations = if engine.schema_version() == crate::crm::schema_version() { "ok" } else { "unhealthy" };
    let integrity_check = if !config.integrity.check_enabled {
        "not_configured"
    } else {
        match engine.global()?.list::<IntegrityReport>()?.into_iter().max_by_key(|(id, _)| *id) {
            Some((_, report)) if report.status == "failed" => "unhealthy",
            Some((_, report)) if report.status == "error" => "degraded",
            _ => "ok",
        }
    };
    let restore_drill = if !config.integrity.restore_drill_enabled {
        facet("not_configured", None)
    } else {
        match newest_run(engine, "restore_drill")? {
            None => facet("ok", Some("not run yet".into())),
            Some(run) if run.result == JobResult::Failure => facet("unhealthy", run.error),
            Some(run) if run.result == JobResult::Skipped => facet("degraded", run.error),
            Some(_) => facet("ok", None),
        }
    };
    let mut jobs = Vec::new();
    let (mut failing_jobs, mut stuck_jobs) = (Vec::new(), Vec::new());
    for job in activity {
        let health = job_runs::health_of(engine, job.name)?;
        if health.status == "failing" {
            failing_jobs.push(job.name.to_string());
        }
        let stuck = job.stuck(now);
        if stuck {
            stuck_jobs.push(job.name.to_string());
        }
        jobs.push(JobState {
            name: job.name.into(),
            last_run_at: health.last_run_at,
            locked: job.running_since.is_some(),
            stuck,
        });
    }
    let storage =
        storage::block(engine, &config.data_dir, config.storage.warn_percent, config.storage.critical_percent)?;
    let wal_bytes = std::fs::metadata(mycorrhizal_engine::redo_path(engine.path())).map(|m| m.len()).unwrap_or(0);
    Ok(Read {
        database: database.into(),
        migrations: migrations.into(),
        integrity_check: integrity_check.into(),
        restore_drill,
        jobs,
        failing_jobs,
        stuck_jobs,
        storage,
        wal_bytes,
    })
}

/// The whole status; `activity` is the scheduler's report of its enabled jobs.
pub async fn system_status(state: &AppState, activity: Vec<JobActivity>) -> Result<SystemStatus> {
    let config = state.config.clone();
    let read = state.blocking(move |engine| read(engine, &config, &activity)).await??;
    let integrations = state.reach.now().await;
    let i = state.integrations.clone();
    let user_integrations = state
        .blocking(move |_| crate::integrations::health::recorded(&i))
        .await?
        .into_iter()
        .map(|h| {
            let summary =
                UserIntegrations { configured: h.configured, failing: h.failing, credential_unreadable: h.unreadable };
            (h.system.name().to_string(), summary)
        })
        .collect();
    let update = crate::release::status(&state.engine, state.config.features.update_check_enabled).await?;
    let now = state.engine.clock().now();
    let background_jobs = if !read.stuck_jobs.is_empty() {
        BackgroundJobs {
            status: "unhealthy".into(),
            reason: Some(format!("stuck: {}", read.stuck_jobs.join(", "))),
            jobs: read.jobs,
        }
    } else if !read.failing_jobs.is_empty() {
        BackgroundJobs {
            status: "degraded".into(),
            reason: Some(format!("failing: {}", read.failing_jobs.join(", "))),
            jobs: read.jobs,
        }
    } else {
        BackgroundJobs { status: "ok".into(), reason: None, jobs: read.jobs }
    };
    let parts = [
        read.database.as_str(),
        read.migrations.as_str(),
        read.integrity_check.as_str(),
        read.restore_drill.status.as_str(),
        background_jobs.status.as_str(),
    ];
    let unreachable = integrations.values().any(|r| r.status != "ok");
    let storage_pressed = read.storage.threshold.is_some_and(|t| t != Tier::Ok);
    let overall = if read.database == "unhealthy" || read.migrations == "unhealthy" {
        "unhealthy"
    } else if parts.iter().any(|p| *p == "degraded" || *p == "unhealthy") || unreachable || storage_pressed {
        "degraded"
    } else {
        "healthy"
    };
    let health = DeepHealth {
        status: overall.into(),
        database: read.database,
        migrations: read.migrations,
        integrity_check: read.integrity_check,
        restore_drill: read.restore_drill,
        background_jobs,
        integrations,
        user_integrations,
    };
    let (applied, latest) = (state.engine.schema_version(), crate::crm::schema_version());
    Ok(SystemStatus {
        overall: overall.into(),
        health,
        version: VersionInfo {
            version: build_info::VERSION.into(),
            commit: Some(build_info::COMMIT.to_string()).filter(|c| !c.is_empty()),
            build_date: Some(build_info::BUILD_DATE.to_string()).filter(|d| !d.is_empty()),
        },
        uptime: Uptime {
            started_at: state.started_at,
            uptime_seconds: now.duration_since(state.started_at).as_secs().max(0) as u64,
        },
        migration: Migration { applied, latest, pending: latest.saturating_sub(applied), dirty: false },
        config: ConfigStatus { validation: config_notes(&state.config), features: features(&state.config) },
        database: DatabaseFiles {
            engine: "redb".into(),
            sqlite_version: None,
            journal_mode: "redo-log".into(),
            wal_bytes: read.wal_bytes,
        },
        storage: read.storage,
        update,
    })
}
