//! The job table and its runner, in process: every row is reachable by name and records its
//! runs; a panicking job becomes a failed run with a `job_failed` event under the run's
//! correlation id; a name outside the table is refused; the configuration decides which
//! schedules start.

use mycorrhizal::jobs::{self, JOBS, Ran, Schedule};
use mycorrhizal_engine::system::{JobResult, Trigger};

use crate::sessions::in_process;

#[test]
fn every_job_has_one_row_and_a_name_the_runs_can_be_found_by() {
    let mut names: Vec<&str> = JOBS.iter().map(|job| job.name).collect();
    names.sort_unstable();
    let count = names.len();
    names.dedup();
    assert_eq!(names.len(), count, "job names are unique");
    for name in [jobs::PURGE, jobs::AUDIT_VERIFY, jobs::REACH_OUT, jobs::DIGEST, jobs::STORAGE_SAMPLE, jobs::BACKUP] {
        assert_eq!(jobs::job(name).map(|job| job.name), Some(name));
    }
    assert!(matches!(jobs::job(jobs::DIGEST).unwrap().schedule, Schedule::Daily));
    assert!(matches!(jobs::job(jobs::SEARCH_REBUILD).unwrap().schedule, Schedule::OnDemand));
    assert!(jobs::job("no_such_job").is_none());
}

#[tokio::test]
async fn the_configuration_decides_which_schedules_run() {
    let plain = in_process(&[]).await;
    let enabled = |app: &crate::sessions::InProcess, name: &str| (jobs::job(name).unwrap().enabled)(&app.state.config);
    assert!(!enabled(&plain, jobs::BACKUP), "no scheduled backups without BACKUP_DIR");
    assert!(enabled(&plain, jobs::PURGE));
    let dir = tempfile::tempdir().unwrap();
    let backups = in_process(&[
        ("BACKUP_DIR", dir.path().to_str().unwrap()),
        ("BACKUP_INTERVAL_HOURS", "6"),
        ("DB_INTEGRITY_CHECK_ENABLED", "false"),
    ])
    .await;
    assert!(enabled(&backups, jobs::BACKUP));
    assert!(!enabled(&backups, jobs::INTEGRITY));
    let Schedule::Every { every, first } = jobs::job(jobs::BACKUP).unwrap().schedule else { panic!("an interval") };
    assert_eq!(every(&backups.state.config), std::time::Duration::from_secs(6 * 3600));
    assert_eq!(first(&backups.state, every(&backups.state.config)), std::time::Duration::ZERO, "none yet: at once");
}

#[tokio::test]
async fn a_manual_trigger_runs_the_row_and_records_it() {
    let app = in_process(&[]).await;
    let run = jobs::run(&app.state, jobs::STORAGE_SAMPLE, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Success, "{:?}", run.error);
    assert_eq!(run.trigger, Trigger::Manual);
    assert!(run.items_processed.is_some());
    assert!(run.correlation_id.as_deref().unwrap().starts_with("job:storage_sample:"));
    let stored = app.state.engine.job_runs(10, |r| r.job_name == jobs::STORAGE_SAMPLE).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].id, run.id);
    assert!(jobs::run(&app.state, "no_such_job", Trigger::Manual).await.is_err());
}

#[tokio::test]
async fn a_skipped_run_says_why() {
    let app = in_process(&[]).await;
    let run = jobs::run(&app.state, jobs::BACKUP, Trigger::Manual).await.unwrap();
    assert_eq!(run.result, JobResult::Skipped);
    assert_eq!(run.error.as_deref(), Some("BACKUP_DIR is not set"));
}

#[tokio::test]
async fn a_panicking_job_is_a_failed_run_with_a_job_failed_event() {
    let app = in_process(&[]).await;
    let run = jobs::runner::record(&app.state, "exploding", Trigger::Manual, async {
        if std::hint::black_box(true) {
            panic!("boom");
        }
        Ok(Ran::Items(0))
    })
    .await;
    assert_eq!(run.result, JobResult::Failure);
    assert!(run.error.as_deref().unwrap().contains("panicked"), "{:?}", run.error);
    let correlation = run.correlation_id.clone().unwrap();
    let events = app.state.engine.system_events(10, |e| e.event_type == "job_failed").unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].correlation_id.as_deref(), Some(correlation.as_str()));
    // The server goes on: the next run of a real job still works.
    let next = jobs::run(&app.state, jobs::PURGE, Trigger::Manual).await.unwrap();
    assert_eq!(next.result, JobResult::Success, "{:?}", next.error);
}
