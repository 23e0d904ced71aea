//! The alert conditions, as the spec's table has them: when each fires and when it recovers,
//! read from the facts the rest of the server keeps (the timeline's folds, the job runs, the
//! integrity reports, the filesystem, the spray signal). Each answers a [`Verdict`]; a switch
//! turned off or a threshold of 0 is [`Verdict::Disabled`].

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::{JobResult, JobRun, LogQuery, SystemEvent};

use crate::config::Config;
use crate::crm::{Result, blocking};
use crate::integrity::IntegrityReport;
use crate::ops::timeline;

/// Every condition, in the order they are evaluated and listed.
pub const CONDITIONS: [&str; 10] = [
    "backup",
    "backup_stale",
    "sync:contact_sync",
    "sync:calendar_sync",
    "notifications",
    "integrations",
    "db_integrity",
    "disk_space",
    "job_stopped",
    "auth_spray",
];

/// A condition's answer at one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Switched off (or its threshold is 0).
    Disabled,
    Ok,
    /// It fires: what is wrong, and the failures behind it when it counts them.
    Firing {
        detail: String,
        failures: u64,
    },
}

/// A job `job_stopped` watches: enabled by the configuration, run every `every`. It is stopped
/// when no run has ended without failing for `every` times `ALERT_JOB_STALE_MULTIPLIER`.
#[derive(Debug, Clone)]
pub struct Watched {
    pub name: &'static str,
    pub every: Duration,
}

/// Whether the configuration turns `condition` on (the master switch aside).
pub fn enabled(config: &Config, condition: &str) -> bool {
    let a = &config.alerts;
    match condition {
        "backup" | "backup_stale" => a.backup_enabled,
        "sync:contact_sync" | "sync:calendar_sync" => a.sync_failure_threshold > 0,
        "notifications" => a.notify_failure_threshold > 0,
        "integrations" => a.incident_quiet_hours > 0,
        "db_integrity" => a.db_integrity_enabled,
        "disk_space" => a.disk_usage_percent > 0,
        "job_stopped" => a.job_stopped_enabled && a.job_stale_multiplier > 0,
        "auth_spray" => a.auth_spray_enabled && config.spray.enabled,
        _ => false,
    }
}

fn firing(detail: String, failures: u64) -> Verdict {
    Verdict::Firing { detail, failures }
}

fn hours(d: SignedDuration) -> i64 {
    d.as_hours()
}

/// What the conditions read beyond the engine and the configuration.
pub struct Facts {
    pub watched: Vec<Watched>,
    pub started_at: Timestamp,
    /// When the last password spray was detected (the engine's clock).
    pub last_spray: Option<Timestamp>,
    /// The conditions alerting now (`disk_space` recovers only 5 points below its threshold).
    pub alerting: Vec<String>,
}

/// Every condition's verdict now.
pub async fn check_all(
    engine: &Engine,
    config: &Config,
    facts: Facts,
    now: Timestamp,
) -> Result<Vec<(&'static str, Verdict)>> {
    let config = config.clone();
    blocking(engine, move |engine| {
        CONDITIONS
            .iter()
            .map(|c| {
                let verdict = if !config.alerts.enabled || !enabled(&config, c) {
                    Verdict::Disabled
                } else {
                    let was = facts.alerting.iter().any(|a| a == c);
                    check(engine, &config, c, now, was, &facts.watched, facts.started_at, facts.last_spray)?
                };
                Ok((*c, verdict))
            })
            .collect::<mycorrhizal_engine::Result<Vec<_>>>()
    })
    .await?
    .map_err(Into::into)
}

#[allow(clippy::too_many_arguments)]
fn check(
    engine: &Engine,
    config: &Config,
    condition: &str,
    now: Timestamp,
    was_alerting: bool,
    watched: &[Watched],
    started_at: Timestamp,
    last_spray: Option<Timestamp>,
) -> mycorrhizal_engine::Result<Verdict> {
    let a = &config.alerts;
    Ok(match condition {
        "backup" => {
            let h = timeline::subsystem(engine, "backup")?;
            if h.status == "failing" {
                firing(
                    format!("The backup has failed {} time(s) in a row.", h.consecutive_failures),
                    h.consecutive_failures,
                )
            } else {
                Verdict::Ok
            }
        }
        "backup_stale" => backup_stale(engine, config, now, started_at)?,
        "sync:contact_sync" | "sync:calendar_sync" | "notifications" => {
            let (subsystem, threshold, what) = match condition {
                "sync:contact_sync" => ("contact_sync", a.sync_failure_threshold, "Contact sync"),
                "sync:calendar_sync" => ("calendar_sync", a.sync_failure_threshold, "Calendar sync"),
                _ => ("notification", a.notify_failure_threshold, "Notification delivery"),
            };
            let h = timeline::subsystem(engine, subsystem)?;
            if h.status == "failing" && h.consecutive_failures >= threshold {
                let n = h.consecutive_failures;
                firing(format!("{what} has failed {n} time(s) in a row."), n)
            } else {
                Verdict::Ok
            }
        }
        "integrations" => {
            let quiet = SignedDuration::from_hours(a.incident_quiet_hours as i64);
            // Webhooks that ran out of retries and the users' integrations (photo library,
            // documents, files, WebDAV) that failed: each an `integration_failed`.
            let query = LogQuery {
                keys: vec![SystemEvent::key_type("integration_failed")],
                since: Some(now - quiet),
                limit: 200,
                ..LogQuery::default()
            };
            let page = engine.events_page(&query)?;
            let recent = page.total;
            if recent > 0 {
                let h = a.incident_quiet_hours;
                let mut systems: Vec<&str> = page.items.iter().map(|e| e.component.as_str()).collect();
                systems.sort_unstable();
                systems.dedup();
                firing(
                    format!(
                        "{recent} integration failure(s) in the last {h} hour(s): {} (webhook deliveries that ran out of retries, users' integrations that did not answer).",
                        systems.join(", ")
                    ),
                    recent,
                )
            } else {
                Verdict::Ok
            }
        }
        "db_integrity" => {
            let newest = engine.global()?.list::<IntegrityReport>()?.into_iter().max_by_key(|(id, _)| *id);
            match newest {
                Some((_, report)) if report.status != "ok" => {
                    let failures: u64 = report.passes.iter().flat_map(|p| p.failures.iter().map(|f| f.count)).sum();
                    let passes: Vec<&str> =
                        report.passes.iter().filter(|p| p.status != "ok").map(|p| p.name.as_str()).collect();
                    firing(
                        format!("The integrity check {} ({}): {}.", report.status, passes.join(", "), report.summary()),
                        failures,
                    )
                }
                _ => Verdict::Ok,
            }
        }
        "disk_space" => match crate::ops::fs::usage_percent(&config.data_dir) {
            Some(used) => {
                let threshold = f64::from(a.disk_usage_percent);
                let fires = used >= threshold || (was_alerting && used > threshold - crate::ops::storage::HYSTERESIS);
                if fires {
                    firing(
                        format!("The data folder's filesystem is {used:.0}% full (the limit is {threshold:.0}%)."),
                        0,
                    )
                } else {
                    Verdict::Ok
                }
            }
            None => Verdict::Ok,
        },
        "job_stopped" => {
            let mut stale = Vec::new();
            for job in watched {
                let limit =
                    SignedDuration::try_from(job.every * a.job_stale_multiplier as u32).unwrap_or(SignedDuration::MAX);
                // A run that did not fail (it worked, or found nothing to do) shows the job alive.
                let mut last = None;
                for result in [JobResult::Success, JobResult::Skipped] {
                    let query = LogQuery {
                        keys: vec![JobRun::key_job_result(job.name, result)],
                        limit: 1,
                        skip_total: true,
                        ..LogQuery::default()
                    };
                    let at = engine.job_runs_page(&query)?.items.first().map(|r| r.finished_at);
                    last = last.max(at);
                }
                // A server that was down does not count against its jobs: the clock starts at
                // the later of the last success and this process's start.
                let since = last.map_or(started_at, |l| l.max(started_at));
                if now.duration_since(since) > limit {
                    stale.push(job.name);
                }
            }
            if stale.is_empty() {
                Verdict::Ok
            } else {
                let m = a.job_stale_multiplier;
                firing(
                    format!(
                        "{} job(s) have not succeeded within {m} times their interval: {}.",
                        stale.len(),
                        stale.join(", ")
                    ),
                    stale.len() as u64,
                )
            }
        }
        "auth_spray" => {
            let quiet = SignedDuration::from_mins(a.eval_interval_minutes.max(1) as i64 * 2);
            match last_spray {
                Some(at) if now.duration_since(at) < quiet => firing(
                    "A password spray against many accounts was detected; sign-ins from new addresses are throttled."
                        .into(),
                    0,
                ),
                _ => Verdict::Ok,
            }
        }
        _ => Verdict::Disabled,
    })
}

/// No operator backup inside `ALERT_BACKUP_MAX_AGE_HOURS` (0: twice the restore-drill
/// interval). The clock starts at the newest operator backup, or, before the first, at the
/// oldest event the timeline keeps or this process's start, whichever is older (the instance's
/// first start, as far as retention remembers).
fn backup_stale(
    engine: &Engine,
    config: &Config,
    now: Timestamp,
    started_at: Timestamp,
) -> mycorrhizal_engine::Result<Verdict> {
    let max_hours = config.backup_max_age_hours();
    let max = SignedDuration::from_hours(max_hours as i64);
    let newest = timeline::newest_operator_backup(engine)?;
    let (since, never) = match newest {
        Some(at) => (at, false),
        None => {
            let oldest = engine.events_page(&LogQuery { limit: 1, oldest_first: true, ..LogQuery::default() })?;
            (oldest.items.first().map_or(started_at, |e| e.occurred_at.min(started_at)), true)
        }
    };
    let age = now.duration_since(since);
    Ok(if age <= max {
        Verdict::Ok
    } else if never {
        firing(format!("No operator backup has been taken in the {} hours this instance has run.", hours(age)), 0)
    } else {
        firing(format!("The newest operator backup is {} hours old (the limit is {max_hours}).", hours(age)), 0)
    })
}
