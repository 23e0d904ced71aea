//! Health assembly: what `/health/ready` and `/health` answer, from the engine and the data
//! folder. The probes read redb and touch the disk, so they run on the blocking pool
//! (`AppState::blocking`); the assembly from what they found is plain code.

use std::path::PathBuf;
use std::time::Instant;

use jiff::Timestamp;
use mycorrhizal_engine::Engine;
use serde::Serialize;
use utoipa::ToSchema;

use crate::build_info;
use crate::config::Config;
use crate::ops::fs;

#[derive(Serialize, ToSchema)]
pub struct Live {
    /// Always `live`.
    status: &'static str,
}

/// The liveness answer: the process answers. No I/O.
pub fn live() -> Live {
    Live { status: "live" }
}

#[derive(Serialize, ToSchema)]
pub struct Check {
    /// `ok` or `failed`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl Check {
    fn from(result: Result<(), String>) -> Check {
        match result {
            Ok(()) => Check { status: "ok", reason: None },
            Err(reason) => Check { status: "failed", reason: Some(reason) },
        }
    }

    fn ok(&self) -> bool {
        self.status == "ok"
    }
}

#[derive(Serialize, ToSchema)]
pub struct ReadyChecks {
    database: Check,
    migrations: Check,
    filesystem: Check,
}

#[derive(Serialize, ToSchema)]
pub struct Ready {
    /// `ready` or `not_ready`.
    status: &'static str,
    checks: ReadyChecks,
}

impl Ready {
    /// Ready when every check passed.
    fn of(database: Result<(), String>, migrations: Result<(), String>, filesystem: Result<(), String>) -> Ready {
        let checks = ReadyChecks {
            database: Check::from(database),
            migrations: Check::from(migrations),
            filesystem: Check::from(filesystem),
        };
        let ready = checks.database.ok() && checks.migrations.ok() && checks.filesystem.ok();
        Ready { status: if ready { "ready" } else { "not_ready" }, checks }
    }

    /// When the probe itself could not run (`why`): nothing is known to be ready.
    pub fn unknown(why: String) -> Ready {
        Ready::of(Err(why), Err("unknown".into()), Err("unknown".into()))
    }

    pub fn is_ready(&self) -> bool {
        self.status == "ready"
    }
}

#[derive(Serialize, ToSchema)]
pub struct DatabaseHealth {
    /// `healthy` or `unhealthy`.
    status: &'static str,
    response_time_ms: f64,
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `healthy`, `degraded` (still 200) or `unhealthy`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    timestamp: Timestamp,
    database: DatabaseHealth,
    version: &'static str,
    commit: &'static str,
    build_date: &'static str,
    /// Constant `v1` while the routes live under `/api/v1`.
    api_contract_version: &'static str,
    /// The oldest supported client version; absent when no floor is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    min_client_version: Option<String>,
    deployment: &'static str,
    capabilities: Vec<&'static str>,
}

impl Health {
    /// Takes the outside systems' reachability (`None` when one answers, else why not): one that
    /// does not answer makes a healthy instance `degraded`. Which one is not said here (anyone may
    /// ask `/health`); the admin's system status says.
    pub fn with_integrations(mut self, systems: impl IntoIterator<Item = Option<String>>) -> Health {
        if systems.into_iter().any(|problem| problem.is_some()) && self.status == "healthy" {
            self.status = "degraded";
        }
        self
    }

    /// Whether the database could be read (the one thing that makes `/health` a 503).
    pub fn readable(&self) -> bool {
        self.database.status == "healthy"
    }
}

/// What the probes need from the configuration, taken before they move to the blocking pool.
#[derive(Clone)]
pub struct Probe {
    data_dir: PathBuf,
    critical_percent: f64,
    min_client_version: Option<String>,
}

impl Probe {
    pub fn of(config: &Config) -> Probe {
        Probe {
            data_dir: config.data_dir.clone(),
            critical_percent: f64::from(config.storage.critical_percent),
            min_client_version: config.min_client_version.as_ref().map(|v| v.to_string()),
        }
    }

    /// Readiness: the database reads and accepts writes, migrations are applied, the data folder
    /// is writable. Blocking.
    pub fn ready(&self, engine: &Engine) -> Ready {
        let database = engine
            .check_read()
            .map_err(|e| format!("database read failed: {e}"))
            .and_then(|()| engine.is_writable().then_some(()).ok_or_else(|| "database refuses writes".to_string()));
        let migrations = (engine.schema_version() == crate::crm::schema_version())
            .then_some(())
            .ok_or_else(|| "migrations pending".to_string());
        Ready::of(database, migrations, fs::probe_writable(&self.data_dir))
    }

    /// Overall health, timed from `started`. `degraded` when the database reads but refuses
    /// writes, the data folder is not writable, or its disk is past the critical threshold.
    /// Blocking.
    pub fn health(&self, engine: &Engine, started: Instant) -> Health {
        let read = engine.check_read().is_ok();
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let impaired = !engine.is_writable()
            || fs::probe_writable(&self.data_dir).is_err()
            || fs::usage_percent(&self.data_dir).is_some_and(|p| p >= self.critical_percent);
        self.assemble(read, elapsed_ms, impaired, engine.clock().now())
    }

    /// When the probe itself could not run: unhealthy.
    pub fn unknown(&self, now: Timestamp) -> Health {
        self.assemble(false, 0.0, true, now)
    }

    fn assemble(&self, read: bool, elapsed_ms: f64, impaired: bool, now: Timestamp) -> Health {
        let status = match (read, impaired) {
            (false, _) => "unhealthy",
            (true, true) => "degraded",
            (true, false) => "healthy",
        };
        Health {
            status,
            timestamp: now,
            database: DatabaseHealth {
                status: if read { "healthy" } else { "unhealthy" },
                response_time_ms: (elapsed_ms * 1000.0).round() / 1000.0,
            },
            version: build_info::VERSION,
            commit: build_info::COMMIT,
            build_date: build_info::BUILD_DATE,
            api_contract_version: build_info::API_CONTRACT_VERSION,
            min_client_version: self.min_client_version.clone(),
            deployment: "server",
            capabilities: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe() -> Probe {
        Probe { data_dir: PathBuf::from("."), critical_percent: 95.0, min_client_version: Some("1.2.0".into()) }
    }

    #[test]
    fn health_is_unhealthy_without_reads_degraded_when_impaired_else_healthy() {
        let now = Timestamp::UNIX_EPOCH;
        let cases = [
            (false, false, "unhealthy", "unhealthy"),
            (false, true, "unhealthy", "unhealthy"),
            (true, true, "degraded", "healthy"),
            (true, false, "healthy", "healthy"),
        ];
        for (read, impaired, status, database) in cases {
            let health = probe().assemble(read, 1.0, impaired, now);
            assert_eq!((health.status, health.database.status), (status, database), "read {read} impaired {impaired}");
            assert_eq!(health.readable(), read);
        }
    }

    #[test]
    fn the_response_time_keeps_three_decimals_and_the_floor_is_shown() {
        let health = probe().assemble(true, 1.234_567, false, Timestamp::UNIX_EPOCH);
        assert_eq!(health.database.response_time_ms, 1.235);
        assert_eq!(health.min_client_version.as_deref(), Some("1.2.0"));
        let unknown = probe().unknown(Timestamp::UNIX_EPOCH);
        assert_eq!((unknown.status, unknown.readable()), ("unhealthy", false));
    }

    #[test]
    fn ready_needs_every_check() {
        assert!(Ready::of(Ok(()), Ok(()), Ok(())).is_ready());
        let not = Ready::of(Ok(()), Err("migrations pending".into()), Ok(()));
        assert_eq!(not.status, "not_ready");
        assert_eq!(not.checks.migrations.reason.as_deref(), Some("migrations pending"));
        assert!(not.checks.database.reason.is_none());
        let unknown = Ready::unknown("join failed".into());
        assert!(!unknown.is_ready());
        assert_eq!(unknown.checks.database.reason.as_deref(), Some("join failed"));
    }
}
