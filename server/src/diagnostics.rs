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
//! stays a warning). The spec's `config`, `backup`, `integration_<system>` and
//! `background_jobs` checks are not made yet.

use jiff::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::crm::Result;
use crate::notify::health::{self, ChannelHealth};
use crate::ops::fs;
use crate::state::AppState;

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

/// Runs every check once.
pub async fn sweep(state: &AppState) -> Result<Diagnostics> {
    let data_dir = state.config.data_dir.clone();
    let disk_threshold = f64::from(state.config.alerts.disk_usage_percent);
    let notify_threshold = state.config.alerts.notify_failure_threshold;
    let mail = state.notify.mailer.is_configured();
    let fcm = state.notify.fcm.is_some();
    let checks = state
        .blocking(move |engine| -> Result<Vec<DiagnosticCheck>> {
            let mut checks = vec![database(engine), migrations(engine)];
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
            Ok(checks)
        })
        .await??;
    let count = |s: CheckStatus| checks.iter().filter(|c| c.status == s).count();
    let summary = DiagnosticsSummary {
        status: checks.iter().map(|c| c.status).max().unwrap_or(CheckStatus::Ok),
        ok: count(CheckStatus::Ok),
        warnings: count(CheckStatus::Warning),
        errors: count(CheckStatus::Error),
    };
    Ok(Diagnostics { timestamp: state.engine.clock().now(), summary, checks })
}

fn database(engine: &mycorrhizal_engine::Engine) -> DiagnosticCheck {
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
