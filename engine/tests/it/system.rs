use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::system::{JobResult, JobRun, LogQuery, Severity, SystemEvent, Trigger};
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
        operation: None,
        result: None,
        user_id: None,
    }
}

#[tokio::test]
async fn system_records_are_capped_listed_newest_first_and_purged_by_age() {
    let dir = tempfile::tempdir().unwrap();
    let start = Timestamp::from_second(1_800_000_000).unwrap();
    let clock = Arc::new(FixedClock::new(start));
    let (engine, _) =
        Engine::open(dir.path().join("db.redb"), Options { clock: clock.clone(), ..Options::default() }).unwrap();
    let first = engine.record_event(SystemEvent { occurred_at: start, ..event("old") }).await.unwrap();
    assert_eq!(first.error.as_deref().map(str::len), Some(500), "errors are length-capped");
    assert_eq!(first.created_at, start);
    let later = start.checked_add(SignedDuration::from_hours(48)).unwrap();
    clock.set(later);
    engine.record_event(SystemEvent { occurred_at: later, ..event("new") }).await.unwrap();
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
        detail: None,
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

/// Pages of the indexed timeline answer what filtering every event by hand answers: the same
/// events, newest first, and the same total, for each key, pair of keys and time range.
#[tokio::test]
async fn indexed_pages_match_a_filter_of_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let start = Timestamp::from_second(1_800_000_000).unwrap();
    let clock = Arc::new(FixedClock::new(start));
    let (engine, _) =
        Engine::open(dir.path().join("db.redb"), Options { clock: clock.clone(), ..Options::default() }).unwrap();
    let components = ["backup", "webhook", "notification"];
    let types = ["backup_completed", "integration_failed", "notification_sent", "notification_failed"];
    let severities = [Severity::Info, Severity::Warn, Severity::Error];
    for i in 0..300u64 {
        let at = start + SignedDuration::from_mins(i as i64 * 7 % 1000);
        let result = match i % 3 {
            0 => Some(JobResult::Success),
            1 => Some(JobResult::Failure),
            _ => None,
        };
        let e = SystemEvent {
            component: components[(i % 3) as usize].into(),
            severity: severities[(i % 5 % 3) as usize],
            event_type: types[(i % 4) as usize].into(),
            correlation_id: Some(format!("job:x:{}", i % 10)),
            occurred_at: at,
            result,
            error: None,
            ..event("x")
        };
        engine.record_event(e).await.unwrap();
    }
    let all = engine.system_events(usize::MAX, |_| true).unwrap();
    let queries: Vec<(Vec<String>, Option<Timestamp>, Option<Timestamp>)> = vec![
        (vec![], None, None),
        (vec![SystemEvent::key_component("backup")], None, None),
        (vec![SystemEvent::key_severity(Severity::Error)], Some(start + SignedDuration::from_hours(3)), None),
        (
            vec![SystemEvent::key_component_result("webhook", JobResult::Failure)],
            None,
            Some(start + SignedDuration::from_hours(10)),
        ),
        (vec![SystemEvent::key_type("notification_sent"), SystemEvent::key_correlation("job:x:4")], None, None),
        (vec![], Some(start + SignedDuration::from_hours(2)), Some(start + SignedDuration::from_hours(4))),
        (vec![SystemEvent::key_component("nothing")], None, None),
    ];
    for (keys, since, until) in queries {
        for limit in [1, 7, 1000] {
            let mut expected: Vec<&SystemEvent> = all
                .iter()
                .filter(|e| keys.iter().all(|k| e.index_keys().contains(k)))
                .filter(|e| since.is_none_or(|s| e.occurred_at >= s) && until.is_none_or(|u| e.occurred_at <= u))
                .collect();
            expected.sort_by_key(|e| std::cmp::Reverse((e.occurred_at, e.id)));
            let page = engine
                .events_page(&LogQuery { keys: keys.clone(), since, until, limit, ..LogQuery::default() })
                .unwrap();
            assert_eq!(page.total, expected.len() as u64, "{keys:?} {since:?} {until:?}");
            let ids: Vec<u64> = page.items.iter().map(|e| e.id).collect();
            let want: Vec<u64> = expected.iter().take(limit).map(|e| e.id).collect();
            assert_eq!(ids, want, "{keys:?} {since:?} {until:?} limit {limit}");
            let oldest = engine
                .events_page(&LogQuery {
                    keys: keys.clone(),
                    since,
                    until,
                    limit: 1,
                    oldest_first: true,
                    ..LogQuery::default()
                })
                .unwrap();
            assert_eq!(oldest.items.first().map(|e| e.id), expected.last().map(|e| e.id));
        }
    }
    // The purge takes the index entries and counts with the rows.
    let cutoff = start + SignedDuration::from_hours(5);
    let gone = engine.purge_system_events(cutoff).await.unwrap();
    assert_eq!(gone, all.iter().filter(|e| e.occurred_at < cutoff).count() as u64);
    let left = engine
        .events_page(&LogQuery { keys: vec![SystemEvent::key_component("backup")], limit: 1000, ..LogQuery::default() })
        .unwrap();
    assert_eq!(left.total, all.iter().filter(|e| e.component == "backup" && e.occurred_at >= cutoff).count() as u64);
    assert_eq!(left.items.len() as u64, left.total);
    let picked = engine.events_by_id(&[left.items[1].id, left.items[0].id, 999_999]).unwrap();
    assert_eq!(picked.iter().map(|e| e.id).collect::<Vec<_>>(), [left.items[0].id, left.items[1].id]);
}
