//! What the operator is told of the users' integrations: per system, how many users connected
//! it, and whether each answers now (a connection test, [`PROBE_TIMEOUT`] each, all at once)
//! or holds a credential that no longer opens. Names no user and no address.

use std::time::Duration;

use super::{Integrations, System, config};

/// How long one user's connection test may take in the sweep.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Most connections probed per system in one sweep (the rest are judged by their last use).
pub const MAX_PROBED: usize = 20;

/// One system's state across users.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemHealth {
    pub system: System,
    pub configured: usize,
    /// Connections that failed their test, or (past [`MAX_PROBED`]) their last use.
    pub failing: usize,
    /// Connections whose credential no longer opens (re-entered by their users).
    pub unreadable: usize,
    /// The first failure's message.
    pub example: String,
}

/// Each system some user connected, with its connections and a health of none failing yet.
fn connected(i: &Integrations) -> Vec<(SystemHealth, Vec<(u64, config::Connection)>)> {
    System::ALL
        .into_iter()
        .filter_map(|system| {
            let users = config::configured(i, system).ok().filter(|u| !u.is_empty())?;
            let h = SystemHealth { system, configured: users.len(), failing: 0, unreadable: 0, example: String::new() };
            Some((h, users))
        })
        .collect()
}

impl SystemHealth {
    fn failed(&mut self, why: &str) {
        self.failing += 1;
        if self.example.is_empty() {
            self.example = why.to_string();
        }
    }
}

/// Every system some user connected, each connection tested now (past [`MAX_PROBED`], judged by
/// its last use).
pub async fn sweep(i: &Integrations) -> Vec<SystemHealth> {
    // Looking changes nothing: the probes record no outcome and raise no event.
    let i = &i.quietly();
    let mut out = Vec::new();
    for (mut h, users) in connected(i) {
        let system = h.system;
        let mut probes = tokio::task::JoinSet::new();
        for (n, (user, connection)) in users.into_iter().enumerate() {
            if config::open(i, user, system).is_err() {
                h.unreadable += 1;
            } else if n >= MAX_PROBED {
                if connection.health.consecutive_failures > 0 {
                    h.failed(&connection.health.last_error);
                }
            } else {
                let i = i.clone();
                probes.spawn(async move {
                    match tokio::time::timeout(PROBE_TIMEOUT, test(&i, user, system)).await {
                        Ok(Ok(r)) if r.ok => None,
                        Ok(Ok(r)) => Some(r.message),
                        Ok(Err(e)) => Some(e.to_string()),
                        Err(_) => Some(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
                    }
                });
            }
        }
        while let Some(answer) = probes.join_next().await {
            if let Ok(Some(why)) = answer {
                h.failed(&why);
            }
        }
        out.push(h);
    }
    out
}

/// Every system some user connected, as their last uses went (no request: the system status).
pub fn recorded(i: &Integrations) -> Vec<SystemHealth> {
    connected(i)
        .into_iter()
        .map(|(mut h, users)| {
            for (user, connection) in users {
                if config::open(i, user, h.system).is_err() {
                    h.unreadable += 1;
                } else if connection.health.consecutive_failures > 0 {
                    h.failed(&connection.health.last_error);
                }
            }
            h
        })
        .collect()
}

/// `system`'s connection test for `user`.
pub async fn test(i: &Integrations, user: u64, system: System) -> super::Result<super::remote::TestResult> {
    match system {
        System::Immich => super::immich::test(i, user).await,
        System::Paperless => super::paperless::test(i, user).await,
        System::Seafile => super::seafile::test(i, user).await,
        System::Nextcloud => super::webdav::test(i, user).await,
    }
}
