//! The retention purge: what the instance forgets, and when. Tombstones older than
//! `DELETED_RETENTION_DAYS`, audit events past [`AUDIT_RETENTION_DAYS`] (the chain stays
//! verifiable through its anchor), expired sessions, reset tokens and device grants, storage
//! samples, system events, job runs and integrity reports past their windows, and finished outbox
//! messages older than `WEBHOOK_DELIVERY_RETENTION_DAYS`. A window of 0 days keeps forever.
//!
//! When it runs is the scheduler's table (`jobs`); this file only knows what to remove. It walks
//! every kind of every domain module, so it sits above them all.

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::{Engine, UserId};

use crate::auth::records::{DeviceGrant, ResetToken, Session};
use crate::config::Retention;
use crate::crm::{Error, Result};
use crate::ops::storage::{StorageSample, purge_older};

/// Audit events are kept this long; the chain stays verifiable through its anchor.
pub const AUDIT_RETENTION_DAYS: i64 = 90;

/// One retention pass over `users` at `now`; returns how many rows it removed.
pub async fn purge(engine: &Engine, retention: &Retention, users: &[u64], now: Timestamp) -> Result<u64> {
    let days = |d: i64| now.checked_sub(SignedDuration::from_hours(d * 24)).map_err(Error::internal);
    let mut removed = 0;
    let tombstones = days(retention.deleted_days)?;
    let audit_cutoff = days(AUDIT_RETENTION_DAYS)?;
    for &user in users {
        removed += engine
            .user(UserId(user))
            .write_async(move |tx| {
                let mut removed = 0;
                for kind in crate::crm::kinds::all() {
                    if let Some(purge) = kind.purge {
                        removed += purge(tx, tombstones)?;
                    }
                }
                Ok(removed + tx.purge_audit(audit_cutoff)?)
            })
            .await?;
    }
    removed += engine.write_async(move |tx| expired_credentials(tx, now)).await?;
    if retention.storage_sample_days > 0 {
        let cutoff = days(retention.storage_sample_days)?;
        removed += engine.write_async(move |tx| purge_older::<StorageSample>(tx, cutoff, |s| s.at)).await?;
    }
    if retention.system_event_days > 0 {
        removed += engine.purge_system_events(days(retention.system_event_days)?).await?;
    }
    if retention.job_run_days > 0 {
        let cutoff = days(retention.job_run_days)?;
        removed += engine.purge_job_runs(cutoff).await?;
        // Integrity reports are kept as long as the job runs that made them.
        removed += engine
            .write_async(move |tx| purge_older::<crate::integrity::IntegrityReport>(tx, cutoff, |r| r.checked_at))
            .await?;
    }
    if retention.webhook_delivery_days > 0 {
        removed += crate::outbox::purge(engine, days(retention.webhook_delivery_days)?).await?;
    }
    Ok(removed)
}

/// Removes ended sessions, used or expired reset tokens and device grants: rows nobody can use.
fn expired_credentials(tx: &mut mycorrhizal_engine::Tx<'_>, now: Timestamp) -> mycorrhizal_engine::Result<u64> {
    let global = tx.global();
    let mut removed = 0;
    for (id, session) in global.list::<Session>()? {
        if session.expires_at <= now {
            global.delete::<Session>(id)?;
            removed += 1;
        }
    }
    for (id, reset) in global.list::<ResetToken>()? {
        if reset.expires_at <= now {
            global.delete::<ResetToken>(id)?;
            removed += 1;
        }
    }
    for (id, grant) in global.list::<DeviceGrant>()? {
        if grant.expires_at <= now || grant.used_at.is_some() || grant.revoked_at.is_some() {
            global.delete::<DeviceGrant>(id)?;
            removed += 1;
        }
    }
    Ok(removed)
}
