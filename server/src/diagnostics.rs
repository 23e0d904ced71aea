//! The one-pass diagnostics sweep behind `GET /admin/diagnostics`: a checklist of `ok`,
//! `warning` and `error` checks, computed per sweep (no state, no transitions), answered with
//! 200 even for a broken install. Messages say what was found in counts, instants and
//! percentages; configuration values (URLs, tokens, addresses, paths) are never echoed.
//!
//! Checks made: `database` (reads, accepts writes), `migrations` (schema version),
//! `filesystem` (data folder writable), `disk_space` (warning at `ALERT_DISK_USAGE_PERCENT`,
//! error from 99%), `version`, and one `notification_<channel>` per channel in use (email with a
//! mail provider, FCM with a service account, ntfy / gotify / webpush once a user set one up):
//! `ok` while its last finished message was delivered (or none finished yet), `warning` after
//! failures in a row, `error` once they reach `ALERT_NOTIFY_FAILURE_THRESHOLD` (with 0, a streak
//! stays a warning), `config` (the settings worth a second look, by variable), `backup` (the
//! newest operator backup against `ALERT_BACKUP_MAX_AGE_HOURS`, and the backup subsystem's
//! streak), one `integration_<system>` per outside system the configuration names (probed at
//! once, [`crate::reach::PROBE_TIMEOUT`] each) and `background_jobs` (failing or stuck jobs).
//! The whole sweep is bounded by [`SWEEP_LIMIT`]: a check that has not answered by then is an
//! error saying so.

use jiff::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::crm::Result;
use crate::notify::health::{self, ChannelHealth};
use crate::ops::fs;
use crate::ops::job_runs::JobActivity;
use crate::state::AppState;

/// The longest a sweep may take.
pub const SWEEP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Usage from which the disk counts as essentially full.
const DISK_FULL_PERCENT: f64 = 99.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Ok,
    Warning,
    Error,
}

/// One line of the checklist.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DiagnosticCheck {
    /// `database`, `migrations`, `filesystem`, `disk_space`, `version`, `notification_<channel>`.
    pub name: String,
    pub status: CheckStatus,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DiagnosticsSummary {
    /// The worst status of any check.
    pub status: CheckStatus,
    pub ok: usize,
    pub warnings: usize,
    pub errors: usize,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Diagnostics {
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Timestamp,
    pub summary: DiagnosticsSummary,
    pub checks: Vec<DiagnosticCheck>,
}

fn check(name: impl Into<String>, status: CheckStatus, message: impl Into<String>) -> DiagnosticCheck {
    DiagnosticCheck { name: name.into(), status, message: message.into() }
}

/// Runs every check once, within [`SWEEP_LIMIT`]; `activity` is the scheduler's report of its
/// enabled jobs.
pub async fn sweep(state: &AppState, activity: Vec<JobActivity>) -> Result<Diagnostics> {
    let local = local_checks(state, activity);
    let remote = async {
        let (instance, users) =
            tokio::join!(state.reach.probe_all(), crate::integrations::health::sweep(&state.integrations));
        let mut checks: Vec<DiagnosticCheck> = instance
            .into_iter()
            .map(|(system, reach)| match reach.reason {
                None => check(format!("integration_{system}"), CheckStatus::Ok, "answers"),
                Some(why) => check(format!("integration_{system}"), CheckStatus::Error, why),
            })
            .collect();
        checks.extend(users.iter().map(user_integration));
        checks
    };
    let (local, remote) =
        tokio::join!(tokio::time::timeout(SWEEP_LIMIT, local), tokio::time::timeout(SWEEP_LIMIT, remote));
    let limit = SWEEP_LIMIT.as_secs();
    let mut checks = match local {
        Ok(checks) => checks?,
        Err(_) => {
            vec![check("database", CheckStatus::Error, format!("the local checks did not finish within {limit} s"))]
        }
    };
    match remote {
        Ok(remote) => checks.extend(remote),
        Err(_) => {
            for system in state.reach.names() {
                checks.push(check(
                    format!("integration_{system}"),
                    CheckStatus::Error,
                    format!("no answer within {limit} s"),
                ));
            }
        }
    }
    let count = |s: CheckStatus| checks.iter().filter(|c| c.status == s).count();
    let summary = DiagnosticsSummary {
        status: checks.iter().map(|c| c.status).max().unwrap_or(CheckStatus::Ok),
        ok: count(CheckStatus::Ok),
        warnings: count(CheckStatus::Warning),
        errors: count(CheckStatus::Error),
    };
    Ok(Diagnostics { timestamp: state.engine.clock().now(), summary, checks })
}

async fn local_checks(state: &AppState, activity: Vec<JobActivity>) -> Result<Vec<DiagnosticCheck>> {
    let data_dir = state.config.data_dir.clone();
    let disk_threshold = f64::from(state.config.alerts.disk_usage_percent);
    let notify_threshold = state.config.alerts.notify_failure_threshold;
    let mail = state.notify.mailer.is_configured();
    let fcm = state.notify.fcm.is_some();
    let config = state.config.clone();
    state
        .blocking(move |engine| -> Result<Vec<DiagnosticCheck>> {
            let mut checks = vec![config_check(&config), database(engine), migrations(engine)];
            checks.push(match fs::probe_writable(&data_dir) {
                Ok(()) => check("filesystem", CheckStatus::Ok, "the data folder is writable"),
                Err(_) => check("filesystem", CheckStatus::Error, "the data folder is not writable"),
            });
            checks.push(disk_space(fs::usage_percent(&data_dir), disk_threshold));
            checks.push(check("version", CheckStatus::Ok, crate::build_info::VERSION));
            let channels = health::in_use(engine, mail, fcm)?;
            for h in health::of(engine, &channels)? {
                checks.push(notification(&h, notify_threshold));
            }
            checks.push(backup(engine, &config)?);
            checks.push(background_jobs(engine, &activity)?);
            Ok(checks)
        })
        .await?
}

/// A users' integration's check: every connection answering is ok; some failing or holding a
/// credential that no longer opens is a warning (it is each user's to mend); all failing an
/// error.
fn user_integration(h: &crate::integrations::health::SystemHealth) -> DiagnosticCheck {
    let name = format!("integration_{}", h.system.name());
    let (n, bad) = (h.configured, h.failing + h.unreadable);
    if bad == 0 {
        return check(name, CheckStatus::Ok, format!("{n} user connection(s), all answering"));
    }
    let mut parts = Vec::new();
    if h.failing > 0 {
        parts.push(format!("{} failing ({})", h.failing, h.example));
    }
    if h.unreadable > 0 {
        parts.push(format!("{} with a credential to re-enter after a key change", h.unreadable));
    }
    let status = if bad == n { CheckStatus::Error } else { CheckStatus::Warning };
    check(name, status, format!("{n} user connection(s): {}", parts.join("; ")))
}

fn config_check(config: &crate::config::Config) -> DiagnosticCheck {
    let notes = crate::status::config_notes(config);
    if notes.is_empty() {
        return check("config", CheckStatus::Ok, "valid; nothing to review");
    }
    let fields: Vec<&str> = notes.iter().map(|n| n.field.as_str()).collect();
    check("config", CheckStatus::Warning, format!("valid; {} setting(s) to review: {}", notes.len(), fields.join(", ")))
}

/// The newest operator backup's age against its limit, and the backup subsystem's streak.
fn backup(engine: &mycorrhizal_engine::Engine, config: &crate::config::Config) -> Result<DiagnosticCheck> {
    let health = crate::ops::timeline::subsystem(engine, "backup")?;
    if health.status == "failing" {
        let n = health.consecutive_failures;
        return Ok(check("backup", CheckStatus::Error, format!("{n} backup(s) failed in a row; none succeeded since")));
    }
    let max_hours = config.backup_max_age_hours();
    let newest = crate::ops::timeline::newest_operator_backup(engine)?;
    Ok(match newest {
        None => {
            check("backup", CheckStatus::Warning, "no operator backup yet (set BACKUP_DIR or run `mycorrhizal backup`)")
        }
        Some(at) => {
            let age = engine.clock().now().duration_since(at).as_hours();
            if age > max_hours as i64 {
                check("backup", CheckStatus::Error, format!("the newest backup is {age} hours old (limit {max_hours})"))
            } else {
                check("backup", CheckStatus::Ok, format!("newest backup at {at}"))
            }
        }
    })
}

fn background_jobs(engine: &mycorrhizal_engine::Engine, activity: &[JobActivity]) -> Result<DiagnosticCheck> {
    let now = engine.clock().now();
    let stuck: Vec<&str> = activity.iter().filter(|j| j.stuck(now)).map(|j| j.name).collect();
    if !stuck.is_empty() {
        return Ok(check("background_jobs", CheckStatus::Error, format!("stuck: {}", stuck.join(", "))));
    }
    let mut failing = Vec::new();
    for job in activity {
        if crate::ops::job_runs::health_of(engine, job.name)?.status == "failing" {
            failing.push(job.name);
        }
    }
    Ok(if failing.is_empty() {
        check("background_jobs", CheckStatus::Ok, format!("{} job(s) enabled, none failing", activity.len()))
    } else {
        check("background_jobs", CheckStatus::Warning, format!("failing: {}", failing.join(", ")))
    })
}

fn database(engine: &mycorrhizal_engine::Engine) -> DiagnosticCheck {
    let aside = mycorrhizal_engine::redo_set_aside_logs(engine.path());
    if let Some(first) = aside.first() {
        let name = first.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        return check(
            "database",
            CheckStatus::Error,
            format!(
                "{} redo log(s) set aside at start ({name}): acknowledged writes may be missing; restore a backup or keep the data as it is, then remove the file",
                aside.len()
            ),
        );
    }
    match (engine.check_read(), engine.is_writable()) {
        (Ok(()), true) => check("database", CheckStatus::Ok, "reads and accepts writes"),
        (Ok(()), false) => {
            check("database", CheckStatus::Error, "reads but refuses writes (reopen after an I/O error)")
        }
        (Err(_), _) => check("database", CheckStatus::Error, "cannot be read"),
    }
}

fn migrations(engine: &mycorrhizal_engine::Engine) -> DiagnosticCheck {
    let (have, want) = (engine.schema_version(), crate::crm::schema_version());
    if have == want {
        check("migrations", CheckStatus::Ok, format!("schema version {have}, up to date"))
    } else {
        check("migrations", CheckStatus::Error, format!("schema version {have}, this build expects {want}"))
    }
}

fn disk_space(usage: Option<f64>, threshold: f64) -> DiagnosticCheck {
    match usage {
        None => check("disk_space", CheckStatus::Warning, "the data folder's usage cannot be read"),
        Some(p) if p >= DISK_FULL_PERCENT => {
            check("disk_space", CheckStatus::Error, format!("{p:.0}% used: essentially full"))
        }
        Some(p) if threshold > 0.0 && p >= threshold => {
            check("disk_space", CheckStatus::Warning, format!("{p:.0}% used, at or past the {threshold:.0}% threshold"))
        }
        Some(p) => check("disk_space", CheckStatus::Ok, format!("{p:.0}% used")),
    }
}

/// A channel's check from its streak of failed messages.
pub fn notification(h: &ChannelHealth, threshold: u64) -> DiagnosticCheck {
    let name = format!("notification_{}", h.channel);
    let n = h.consecutive_failures;
    if n == 0 {
        let message = match h.last_success_at {
            Some(at) => format!("last message delivered at {at}"),
            None => "no message finished yet".to_string(),
        };
        return check(name, CheckStatus::Ok, message);
    }
    let since = h.incident_first_failure_at.map(|t| format!(" since {t}")).unwrap_or_default();
    let noun = if n == 1 { "message" } else { "messages in a row" };
    let status = if threshold > 0 && n >= threshold { CheckStatus::Error } else { CheckStatus::Warning };
    check(name, status, format!("{n} {noun} failed{since}; none delivered since"))
}
