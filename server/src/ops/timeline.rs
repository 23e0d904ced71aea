//! Reading the operational timeline: system events by filter, each subsystem's health folded
//! from its events, and failures gathered into buckets by cause. Every read is one pass over the
//! engine's log index (`events_page`), on the blocking pool.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::{JobResult, LogQuery, Severity, SystemEvent};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::crm::{Error, Result, blocking};

/// Default and largest page of the timeline and of the job runs.
pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 500;
/// At most this many event ids in a bucket, and in an `ids` filter.
pub const MAX_IDS: usize = 500;
/// A bucket is recurring from this many failures on.
pub const RECURRING: u64 = 3;
/// The subsystems, in the order the health answer lists them.
pub const SUBSYSTEMS: [&str; 6] = ["contact_sync", "calendar_sync", "notification", "backup", "scheduler", "webhook"];

/// A page size from the query: 1 to [`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent (an empty
/// value is not a number: refused).
pub fn limit(raw: Option<&str>) -> Result<usize> {
    match raw {
        None => Ok(DEFAULT_LIMIT),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            _ => Err(Error::bad_parameter("limit", format!("must be an integer from 1 to {MAX_LIMIT}"))),
        },
    }
}

/// An RFC 3339 instant from the query, naming the parameter when it is not one; blank is none.
pub fn instant(raw: Option<&str>, name: &str) -> Result<Option<Timestamp>> {
    match raw.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<Timestamp>()
            .map(Some)
            .map_err(|_| Error::bad_parameter(name, "must be an RFC 3339 instant such as 2026-12-07T08:00:00Z")),
    }
}

/// The timeline's filters, as the query names them.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    pub component: Option<String>,
    /// `info`, `warn` or `error`.
    #[param(pattern = "^(info|warn|error)?$")]
    pub severity: Option<String>,
    pub event_type: Option<String>,
    pub correlation_id: Option<String>,
    /// RFC 3339; events that occurred at or after it.
    #[param(value_type = Option<crate::crm::schema::InstantOrBlank>)]
    pub since: Option<String>,
    /// RFC 3339; events that occurred at or before it.
    #[param(value_type = Option<crate::crm::schema::InstantOrBlank>)]
    pub until: Option<String>,
    /// Default 100, at most 500.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
    /// Comma-separated event ids (at most 500).
    #[param(pattern = "^([0-9]{1,19}(,[0-9]{1,19}){0,499})?$")]
    pub ids: Option<String>,
}

/// A system event as the admin API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SystemEventView {
    pub id: u64,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
    #[schema(value_type = String)]
    pub occurred_at: Timestamp,
    pub event_type: String,
    /// `info`, `warn` or `error`.
    pub severity: String,
    pub component: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `success`, `failure` or `skipped`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub correlation_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Bounded JSON text: counts and names, never identifiers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<u64>,
}

impl From<SystemEvent> for SystemEventView {
    fn from(e: SystemEvent) -> Self {
        SystemEventView {
            id: e.id,
            created_at: e.created_at,
            occurred_at: e.occurred_at,
            event_type: e.event_type,
            severity: e.severity.name().into(),
            component: e.component,
            operation: e.operation,
            duration_ms: e.duration_ms,
            result: e.result.map(|r| r.name().into()),
            correlation_id: e.correlation_id.unwrap_or_default(),
            error: e.error,
            detail: e.detail,
            user_id: e.user_id,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventPage {
    pub system_events: Vec<SystemEventView>,
    /// Events matching the filters in all.
    pub total: u64,
}

fn severity(raw: Option<&str>) -> Result<Option<Severity>> {
    match raw.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some("info") => Ok(Some(Severity::Info)),
        Some("warn") => Ok(Some(Severity::Warn)),
        Some("error") => Ok(Some(Severity::Error)),
        Some(_) => Err(Error::bad_parameter("severity", "must be info, warn or error")),
    }
}

fn ids(raw: Option<&str>) -> Result<Option<Vec<u64>>> {
    let Some(raw) = raw.filter(|v| !v.trim().is_empty()) else { return Ok(None) };
    let ids: Vec<u64> = raw
        .split(',')
        .map(|id| id.trim().parse::<u64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::bad_parameter("ids", "must be comma-separated event ids"))?;
    if ids.len() > MAX_IDS {
        return Err(Error::bad_parameter("ids", format!("at most {MAX_IDS} ids")));
    }
    Ok(Some(ids))
}

/// The timeline for `query`, newest `occurred_at` first, with the number of events matching.
pub async fn events(engine: &Engine, query: EventQuery) -> Result<EventPage> {
    let severity = severity(query.severity.as_deref())?;
    let since = instant(query.since.as_deref(), "since")?;
    let until = instant(query.until.as_deref(), "until")?;
    let limit = limit(query.limit.as_deref())?;
    let ids = ids(query.ids.as_deref())?;
    let text = |v: Option<String>| v.filter(|v| !v.is_empty());
    let (component, event_type, correlation) =
        (text(query.component), text(query.event_type), text(query.correlation_id));
    let mut keys = Vec::new();
    match (&component, severity) {
        (Some(c), Some(s)) => keys.push(SystemEvent::key_component_severity(c, s)),
        (Some(c), None) => keys.push(SystemEvent::key_component(c)),
        (None, Some(s)) => keys.push(SystemEvent::key_severity(s)),
        (None, None) => {}
    }
    keys.extend(event_type.as_deref().map(SystemEvent::key_type));
    keys.extend(correlation.as_deref().map(SystemEvent::key_correlation));
    let page = blocking(engine, move |engine| match ids {
        Some(ids) => {
            let found = engine.events_by_id(&ids)?;
            let kept: Vec<SystemEvent> = found
                .into_iter()
                .filter(|e| {
                    let in_time = since.is_none_or(|s| e.occurred_at >= s) && until.is_none_or(|u| e.occurred_at <= u);
                    let listed = e.index_keys();
                    in_time && keys.iter().all(|k| listed.contains(k))
                })
                .collect();
            let total = kept.len() as u64;
            Ok::<_, mycorrhizal_engine::Error>((kept.into_iter().take(limit).collect(), total))
        }
        None => {
            let page = engine.events_page(&LogQuery { keys, since, until, limit, ..LogQuery::default() })?;
            Ok((page.items, page.total))
        }
    })
    .await??;
    Ok(EventPage { system_events: page.0.into_iter().map(SystemEventView::from).collect(), total: page.1 })
}

/// When the newest operator backup landed (`backup_completed` of component `backup`; the
/// pre-migration snapshot's, of component `migration`, is not one), if there is one.
pub fn newest_operator_backup(engine: &Engine) -> mycorrhizal_engine::Result<Option<Timestamp>> {
    let query = LogQuery {
        keys: vec![SystemEvent::key_component_type("backup", "backup_completed")],
        limit: 1,
        skip_total: true,
        ..LogQuery::default()
    };
    Ok(engine.events_page(&query)?.items.first().map(|e| e.occurred_at))
}

/// One subsystem's health, folded from its events.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubsystemHealth {
    pub subsystem: String,
    /// `healthy`, `failing` or `unknown` (no event yet).
    pub status: String,
    #[schema(value_type = Option<String>)]
    pub last_attempt_at: Option<Timestamp>,
    #[schema(value_type = Option<String>)]
    pub last_success_at: Option<Timestamp>,
    #[schema(value_type = Option<String>)]
    pub last_failure_at: Option<Timestamp>,
    /// When the current run of failures began (null unless failing).
    #[schema(value_type = Option<String>)]
    pub incident_first_failure_at: Option<Timestamp>,
    pub consecutive_failures: u64,
    /// The newest failure's error while failing, else "".
    pub last_error: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SubsystemList {
    pub subsystems: Vec<SubsystemHealth>,
}

/// The newest (or oldest) entry and the count for `keys` after `since`, from the index.
fn edge(
    engine: &Engine,
    key: String,
    since: Option<Timestamp>,
    oldest: bool,
) -> mycorrhizal_engine::Result<(Option<SystemEvent>, u64)> {
    let page = engine.events_page(&LogQuery {
        keys: vec![key],
        since,
        limit: 1,
        oldest_first: oldest,
        ..LogQuery::default()
    })?;
    Ok((page.items.into_iter().next(), page.total))
}

/// The fold of `component`'s events: a success makes it healthy and closes the incident; each
/// failure after the last success adds to the streak; the first of them opens the incident.
/// Subsystems that report only failures (`scheduler`, `webhook`) never become healthy.
pub fn subsystem(engine: &Engine, component: &str) -> mycorrhizal_engine::Result<SubsystemHealth> {
    let (success, _) = edge(engine, SystemEvent::key_component_result(component, JobResult::Success), None, false)?;
    let (failure, _) = edge(engine, SystemEvent::key_component_result(component, JobResult::Failure), None, false)?;
    let last_success_at = success.as_ref().map(|e| e.occurred_at);
    let last_failure_at = failure.as_ref().map(|e| e.occurred_at);
    let failing = match (last_success_at, last_failure_at) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(s), Some(f)) => f > s,
    };
    let (mut first, mut streak) = (None, 0);
    if failing {
        let after = last_success_at.map(|s| s + SignedDuration::from_micros(1));
        let (oldest, count) =
            edge(engine, SystemEvent::key_component_result(component, JobResult::Failure), after, true)?;
        first = oldest.map(|e| e.occurred_at);
        streak = count;
    }
    let status = match (last_success_at, last_failure_at) {
        (None, None) => "unknown",
        _ if failing => "failing",
        _ => "healthy",
    };
    Ok(SubsystemHealth {
        subsystem: component.to_string(),
        status: status.into(),
        last_attempt_at: last_success_at.max(last_failure_at),
        last_success_at,
        last_failure_at,
        incident_first_failure_at: first,
        consecutive_failures: streak,
        last_error: if failing { failure.and_then(|e| e.error).unwrap_or_default() } else { String::new() },
    })
}

/// Every subsystem's health, in [`SUBSYSTEMS`] order.
pub async fn subsystems(engine: &Engine) -> Result<SubsystemList> {
    let list = blocking(engine, |engine| {
        SUBSYSTEMS.iter().map(|c| subsystem(engine, c)).collect::<mycorrhizal_engine::Result<Vec<_>>>()
    })
    .await??;
    Ok(SubsystemList { subsystems: list })
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AggregationQuery {
    /// Hours back from now, 1 to 168 (default 24).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 168)]
    pub window_hours: Option<String>,
}

/// Failures that share a component and a cause.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBucket {
    pub component: String,
    /// The error with its numbers, quoted parts and addresses blanked (the event type when it
    /// has no error): what the failures have in common.
    pub cause: String,
    /// The newest failure's error.
    pub sample_error: String,
    pub event_types: Vec<String>,
    pub count: u64,
    /// Three failures or more.
    pub recurring: bool,
    #[schema(value_type = String)]
    pub first_seen: Timestamp,
    #[schema(value_type = String)]
    pub last_seen: Timestamp,
    /// Newest first, at most 500.
    pub event_ids: Vec<u64>,
    pub event_ids_truncated: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Aggregation {
    pub window_hours: u32,
    #[schema(value_type = String)]
    pub since: Timestamp,
    #[schema(value_type = String)]
    pub until: Timestamp,
    pub total_events: u64,
    /// Most failures first, then the most recent.
    pub buckets: Vec<ErrorBucket>,
}

/// What failures of one kind have in common: the error with digits, quoted parts and hex runs
/// blanked, at most 120 characters; the event type when there is no error.
pub fn cause_of(event: &SystemEvent) -> String {
    let Some(error) = event.error.as_deref().filter(|e| !e.trim().is_empty()) else {
        return event.event_type.clone();
    };
    let mut out = String::new();
    let mut quoted: Option<char> = None;
    for c in error.chars() {
        match quoted {
            Some(q) if c == q => {
                quoted = None;
                out.push_str("…\"");
            }
            Some(_) => {}
            None if c == '"' || c == '\'' || c == '`' => {
                quoted = Some(c);
                out.push('"');
            }
            None if c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            None => out.push(c),
        }
        if out.chars().count() >= 120 {
            break;
        }
    }
    out.trim().to_string()
}

/// Failure events (result `failure` or severity `error`) of the last `window_hours`, in buckets.
pub async fn aggregate(engine: &Engine, query: AggregationQuery) -> Result<Aggregation> {
    let window_hours = match query.window_hours.as_deref() {
        None => 24,
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|h| (1..=168).contains(h))
            .ok_or_else(|| Error::bad_parameter("window_hours", "must be an integer from 1 to 168"))?,
    };
    let until = engine.clock().now();
    let since = until - SignedDuration::from_hours(i64::from(window_hours));
    let failures = blocking(engine, move |engine| {
        let mut found: BTreeMap<u64, SystemEvent> = BTreeMap::new();
        for key in [SystemEvent::key_result(JobResult::Failure), SystemEvent::key_severity(Severity::Error)] {
            let query = LogQuery {
                keys: vec![key],
                since: Some(since),
                until: Some(until),
                limit: usize::MAX,
                ..LogQuery::default()
            };
            for event in engine.events_page(&query)?.items {
                found.insert(event.id, event);
            }
        }
        Ok::<_, mycorrhizal_engine::Error>(found)
    })
    .await??;
    let total_events = failures.len() as u64;
    let mut buckets: BTreeMap<(String, String), (ErrorBucket, BTreeSet<String>)> = BTreeMap::new();
    // Newest first, so the first event of a bucket is its sample and its last_seen.
    let mut newest_first: Vec<SystemEvent> = failures.into_values().collect();
    newest_first.sort_by_key(|e| std::cmp::Reverse((e.occurred_at, e.id)));
    for event in newest_first {
        let cause = cause_of(&event);
        let (bucket, types) = buckets.entry((event.component.clone(), cause.clone())).or_insert_with(|| {
            let bucket = ErrorBucket {
                component: event.component.clone(),
                cause,
                sample_error: event.error.clone().unwrap_or_default(),
                event_types: Vec::new(),
                count: 0,
                recurring: false,
                first_seen: event.occurred_at,
                last_seen: event.occurred_at,
                event_ids: Vec::new(),
                event_ids_truncated: false,
            };
            (bucket, BTreeSet::new())
        });
        bucket.count += 1;
        bucket.first_seen = event.occurred_at;
        types.insert(event.event_type.clone());
        if bucket.event_ids.len() < MAX_IDS {
            bucket.event_ids.push(event.id);
        } else {
            bucket.event_ids_truncated = true;
        }
    }
    let mut buckets: Vec<ErrorBucket> = buckets
        .into_values()
        .map(|(mut bucket, types)| {
            bucket.event_types = types.into_iter().collect();
            bucket.recurring = bucket.count >= RECURRING;
            bucket
        })
        .collect();
    buckets.sort_by(|a, b| b.count.cmp(&a.count).then(b.last_seen.cmp(&a.last_seen)));
    Ok(Aggregation { window_hours, since, until, total_events, buckets })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(error: Option<&str>) -> SystemEvent {
        SystemEvent {
            id: 1,
            component: "webhook".into(),
            severity: Severity::Error,
            event_type: "integration_failed".into(),
            correlation_id: None,
            occurred_at: Timestamp::UNIX_EPOCH,
            created_at: Timestamp::UNIX_EPOCH,
            detail: None,
            error: error.map(String::from),
            duration_ms: None,
            operation: None,
            result: Some(JobResult::Failure),
            user_id: None,
        }
    }

    #[test]
    fn failures_that_differ_in_numbers_and_quoted_parts_share_a_cause() {
        let a = cause_of(&failed(Some("receiver answered 503 after 3 attempts for 'hooks.example'")));
        let b = cause_of(&failed(Some("receiver answered 502 after 12 attempts for 'other.example'")));
        assert_eq!(a, b);
        assert_ne!(a, cause_of(&failed(Some("connection refused"))));
        assert_eq!(cause_of(&failed(None)), "integration_failed");
    }

    #[test]
    fn limits_and_instants_name_the_parameter() {
        assert_eq!(limit(None).unwrap(), DEFAULT_LIMIT);
        assert_eq!(limit(Some("500")).unwrap(), 500);
        for bad in ["0", "501", "ten"] {
            assert!(matches!(limit(Some(bad)), Err(Error::BadParameter { field, .. }) if field == "limit"), "{bad}");
        }
        assert!(
            matches!(instant(Some("yesterday"), "since"), Err(Error::BadParameter { field, .. }) if field == "since")
        );
        assert!(instant(Some("2026-12-07T08:00:00Z"), "since").unwrap().is_some());
    }
}
