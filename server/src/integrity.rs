//! The integrity check: one sweep over everything that could silently rot, reported as counts
//! and kinds (never user data), persisted with its time, run every
//! `DB_INTEGRITY_CHECK_INTERVAL_HOURS` (job `db_integrity_check`) and on demand
//! (`GET /admin/integrity-check`).
//!
//! Passes, each `ok`, `failed` (an invariant does not hold) or `error` (it could not run):
//! - `storage`: every key and value of every table read back (redb checks page checksums as it
//!   reads; its own `check_integrity` needs the file to itself, which a running server never
//!   gives it, so that one runs on the backup copy the restore drill opens);
//! - `indexes`: every live row of every kind has each of its index entries, and no index entry
//!   belongs to no live row;
//! - `blobs`: every picture a contact names exists; every attachment's bytes exist and match the
//!   row's SHA-256;
//! - `change_feed`: no user's change feed runs past its recorded head;
//! - `search`: the committed search index holds one document per live contact, note and
//!   activity;
//! - `audit_chain`: every user's audit hash chain verifies from its anchor.

use std::time::Instant;

use jiff::Timestamp;
use mycorrhizal_engine::{Engine, GlobalRecord, UserId, global_tables};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::auth::records::Account;
use crate::crm::attachment::Attachment;
use crate::crm::contact::Contact;

/// One finding: what kind of thing failed, and how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Failure {
    /// e.g. `contact.missing_index_entries`, `attachment.digest_mismatch`, `audit_chain.broken_users`.
    pub kind: String,
    pub count: u64,
}

/// One pass of the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Pass {
    /// `storage`, `indexes`, `blobs`, `change_feed`, `search`, `audit_chain` or `redo_log`.
    pub name: String,
    /// `ok`, `failed` or `error`.
    #[schema(pattern = "^(ok|failed|error)$")]
    pub status: String,
    /// What it looked at (rows, entries, users).
    pub checked: u64,
    pub failures: Vec<Failure>,
    /// Why the pass could not run (`status` `error`).
    pub error: Option<String>,
}

/// A whole sweep, as stored and as `GET /admin/integrity-check` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct IntegrityReport {
    #[schema(value_type = String)]
    pub checked_at: Timestamp,
    /// `ok` when every pass is; `failed` when any invariant fails; else `error`.
    #[schema(pattern = "^(ok|failed|error)$")]
    pub status: String,
    pub duration_ms: u64,
    pub passes: Vec<Pass>,
}

impl GlobalRecord for IntegrityReport {
    global_tables!("integrity_checks");
}

impl IntegrityReport {
    /// `kind: count` of every failure, for a job run's error and the log.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .passes
            .iter()
            .flat_map(|p| {
                p.failures
                    .iter()
                    .map(|f| format!("{}: {}", f.kind, f.count))
                    .chain(p.error.iter().map(|e| format!("{} could not run: {e}", p.name)))
                    .collect::<Vec<_>>()
            })
            .collect();
        if parts.is_empty() { "ok".into() } else { parts.join("; ") }
    }
}

fn pass(name: &str, outcome: mycorrhizal_engine::Result<(u64, Vec<Failure>)>) -> Pass {
    match outcome {
        Ok((checked, failures)) => {
            let failures: Vec<Failure> = failures.into_iter().filter(|f| f.count > 0).collect();
            let status = if failures.is_empty() { "ok" } else { "failed" };
            Pass { name: name.into(), status: status.into(), checked, failures, error: None }
        }
        Err(e) => Pass {
            name: name.into(),
            status: "error".into(),
            checked: 0,
            failures: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

fn failure(kind: impl Into<String>, count: u64) -> Failure {
    Failure { kind: kind.into(), count }
}

/// Runs the sweep over `engine` (blocking) and stores its report.
pub fn run(engine: &Engine) -> IntegrityReport {
    let started = Instant::now();
    let checked_at = engine.clock().now();
    let mut passes = Vec::new();
    match engine.check(&crate::crm::record_kinds()) {
        Ok(report) => {
            let rows = report.tables.values().sum();
            passes.push(pass("storage", Ok((rows, Vec::new()))));
            let checked = report.kinds.iter().map(|k| k.rows).sum();
            let failures = report
                .kinds
                .iter()
                .flat_map(|k| {
                    [
                        failure(format!("{}.missing_index_entries", k.kind), k.missing_entries),
                        failure(format!("{}.dangling_index_entries", k.kind), k.dangling_entries),
                    ]
                })
                .collect();
            passes.push(pass("indexes", Ok((checked, failures))));
            let feed = vec![failure("change_feed.users_past_head", report.feed.users_past_head)];
            passes.push(pass("change_feed", Ok((report.feed.users, feed))));
        }
        Err(e) => {
            // The storage read failed: the passes over the same transaction cannot run either.
            passes.push(pass("storage", Err(e)));
        }
    }
    let users = engine.global().and_then(|g| g.list::<Account>()).map(|u| u.into_iter().map(|(id, _)| id).collect());
    match users {
        Ok(users) => {
            let users: Vec<u64> = users;
            passes.push(pass("blobs", blobs(engine, &users)));
            passes.push(pass("search", search(engine)));
            passes.push(pass("audit_chain", audit(engine, &users)));
        }
        Err(e) => passes.push(pass("accounts", Err(e))),
    }
    // A redo log set aside at start (REDO_LOG_SET_ASIDE) may hold acknowledged writes the
    // database lacks: a failure until the operator has looked and removed it.
    let aside = mycorrhizal_engine::redo_set_aside_logs(engine.path()).len() as u64;
    passes.push(pass("redo_log", Ok((1, vec![failure("redo_log.set_aside", aside)]))));
    let status = if passes.iter().all(|p| p.status == "ok") {
        "ok"
    } else if passes.iter().any(|p| p.status == "failed") {
        "failed"
    } else {
        "error"
    };
    let report = IntegrityReport {
        checked_at,
        status: status.into(),
        duration_ms: started.elapsed().as_millis() as u64,
        passes,
    };
    let stored = report.clone();
    if let Err(e) = engine.write(move |tx| tx.global().insert(&stored).map(|_| ())) {
        tracing::error!(event = "integrity_report_not_stored", component = "app", error = %e);
    }
    report
}

fn blobs(engine: &Engine, users: &[u64]) -> mycorrhizal_engine::Result<(u64, Vec<Failure>)> {
    let (mut checked, mut pictures_missing, mut attachments_missing, mut digest_mismatch) = (0, 0, 0, 0);
    for user in users {
        let view = engine.user(UserId(*user)).view()?;
        let names: std::collections::HashSet<String> = view.blob_names()?.into_iter().collect();
        for contact in view.list::<Contact>()? {
            if !contact.body.photo.is_empty() {
                checked += 1;
                if !names.contains(&contact.body.photo) {
                    pictures_missing += 1;
                }
            }
        }
        for attachment in view.list::<Attachment>()? {
            checked += 1;
            match view.blob(&crate::crm::attachment::ops::blob_name(attachment.id))? {
                None => attachments_missing += 1,
                Some(bytes) => {
                    if hex::encode(Sha256::digest(&bytes)) != attachment.body.sha256 {
                        digest_mismatch += 1;
                    }
                }
            }
        }
    }
    Ok((
        checked,
        vec![
            failure("picture.missing", pictures_missing),
            failure("attachment.missing", attachments_missing),
            failure("attachment.digest_mismatch", digest_mismatch),
        ],
    ))
}

fn search(engine: &Engine) -> mycorrhizal_engine::Result<(u64, Vec<Failure>)> {
    let searchable: Vec<&str> =
        crate::crm::kinds::all().into_iter().filter(|k| k.search.is_some()).map(|k| k.name).collect();
    // Writes may land between the count and the index's; a second look settles them.
    let mut last = (0, 0);
    for _ in 0..2 {
        engine.search_flush()?;
        let (users, _) = engine.contents()?;
        let live: u64 = users
            .values()
            .flat_map(|kinds| kinds.iter())
            .filter(|(k, _)| searchable.contains(&k.as_str()))
            .map(|(_, n)| *n)
            .sum();
        let documents = engine.search_status().map(|s| s.documents).unwrap_or(0);
        last = (live, documents);
        if live == documents {
            break;
        }
    }
    let (live, documents) = last;
    Ok((
        live,
        vec![
            failure("search.missing_documents", live.saturating_sub(documents)),
            failure("search.extra_documents", documents.saturating_sub(live)),
        ],
    ))
}

fn audit(engine: &Engine, users: &[u64]) -> mycorrhizal_engine::Result<(u64, Vec<Failure>)> {
    let mut broken = 0;
    for user in users {
        match engine.user(UserId(*user)).view()?.verify_audit() {
            Ok(_) => {}
            Err(mycorrhizal_engine::Error::Corrupt { .. }) => broken += 1,
            Err(e) => return Err(e),
        }
    }
    Ok((users.len() as u64, vec![failure("audit_chain.broken_users", broken)]))
}
