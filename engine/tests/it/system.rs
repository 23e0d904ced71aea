use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::system::{JobResult, JobRun, Severity, SystemEvent, Trigger};
use mycorrhizal_engine::{Engine, FixedClock, Options};

fn event(kind: &str) -> SystemEvent {
    SystemEvent {
        id: 0,
        component: "app".into(),
        severity: Severity::Info,
        event_type: kind.into(),
        correlation_id: None,
        occurred_at: Timestamp::UNIX_EPOCH,
        created_at: Timestamp::UNIX_EPOCH,
        detail: None,
        error: Some("x".repeat(2000)),
        duration_ms: None,
    }
}

#[tokio::test]
async fn system_records_are_capped_listed_newest_first_and_purged_by_age() {
    let dir = tempfile::tempdir().unwrap();
    let start = Timestamp::from_second(1_800_000_000).unwrap();
    let clock = Arc::new(FixedClock::new(start));
    let (engine, _) =
        Engine::open(dir.path().join("db.redb"), Options { clock: clock.clone(), ..Options::default() }).unwrap();
    let first = engine.record_event(event("old")).await.unwrap();
    assert_eq!(first.error.as_deref().map(str::len), Some(500), "errors are length-capped");
    assert_eq!(first.created_at, start);
    let later = start.checked_add(SignedDuration::from_hours(48)).unwrap();
    clock.set(later);
    engine.record_event(event("new")).await.unwrap();
    let run = JobRun {
        id: 0,
        job_name: "purge".into(),
        trigger: Trigger::Scheduled,
        started_at: start,
        finished_at: start,
        duration_ms: 3,
        result: JobResult::Success,
        error: None,
        items_processed: Some(1),
        correlation_id: Some("job:purge:1".into()),
    };
    engine.record_job_run(run).await.unwrap();

    let listed: Vec<String> = engine.system_events(10, |_| true).unwrap().into_iter().map(|e| e.event_type).collect();
    assert_eq!(listed, ["new", "old"]);
    let cutoff = start.checked_add(SignedDuration::from_hours(24)).unwrap();
    assert_eq!(engine.purge_system_events(cutoff).await.unwrap(), 1);
    assert_eq!(engine.system_events(10, |_| true).unwrap().len(), 1);
    assert_eq!(engine.purge_job_runs(cutoff).await.unwrap(), 1);
    assert!(engine.job_runs(10, |_| true).unwrap().is_empty());
}
