//! Emitting system events: the persisted operational timeline. Best-effort by design: recording
//! never fails the work it describes, and the same event is also a log line.

use jiff::Timestamp;
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::{JobResult, Severity, SystemEvent};
use serde_json::Value;

/// An event about to be recorded.
pub struct Event {
    pub component: &'static str,
    pub severity: Severity,
    pub event_type: &'static str,
    pub detail: Option<Value>,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    pub correlation_id: Option<String>,
    pub occurred_at: Option<Timestamp>,
    /// What was being done; when unset, the detail's `operation` member names it.
    pub operation: Option<String>,
    /// The outcome; when unset, the event type says it (`*_failed` a failure, `*_completed` and
    /// `*_sent` a success).
    pub result: Option<JobResult>,
    pub user_id: Option<u64>,
}

impl Event {
    pub fn info(component: &'static str, event_type: &'static str) -> Self {
        Event {
            component,
            severity: Severity::Info,
            event_type,
            detail: None,
            error: None,
            duration_ms: None,
            correlation_id: None,
            occurred_at: None,
            operation: None,
            result: None,
            user_id: None,
        }
    }

    pub fn warn(component: &'static str, event_type: &'static str) -> Self {
        Event { severity: Severity::Warn, ..Event::info(component, event_type) }
    }

    pub fn error(component: &'static str, event_type: &'static str, error: impl Into<String>) -> Self {
        Event { severity: Severity::Error, error: Some(error.into()), ..Event::info(component, event_type) }
    }

    pub fn detail(mut self, detail: Value) -> Self {
        self.detail = Some(detail);
        self
    }

    pub fn at(mut self, occurred_at: Timestamp) -> Self {
        self.occurred_at = Some(occurred_at);
        self
    }

    pub fn duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = Some(ms);
        self
    }

    pub fn operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    pub fn result(mut self, result: JobResult) -> Self {
        self.result = Some(result);
        self
    }

    pub fn user(mut self, user_id: u64) -> Self {
        self.user_id = Some(user_id);
        self
    }
}

/// The outcome an event type reports: `*_failed` a failure; `*_completed` and `*_sent` a
/// success; others (`*_started`, `application_*`) none.
pub fn outcome_of(event_type: &str) -> Option<JobResult> {
    if event_type.ends_with("_failed") {
        Some(JobResult::Failure)
    } else if event_type.ends_with("_completed") || event_type.ends_with("_sent") {
        Some(JobResult::Success)
    } else {
        None
    }
}

/// An error as the timeline keeps it: one line, no control characters, credentials in URLs
/// and bearer or query tokens masked (the engine caps its length).
pub fn sanitise(error: &str) -> String {
    let line: String = error.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let mut out = String::with_capacity(line.len());
    for word in line.split(' ') {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&mask_word(word));
    }
    out
}

fn mask_word(word: &str) -> String {
    // `scheme://user:password@host`: the user information goes.
    if let Some(scheme_end) = word.find("://") {
        let rest = &word[scheme_end + 3..];
        let host_end = rest.find('/').unwrap_or(rest.len());
        if let Some(at) = rest[..host_end].rfind('@') {
            return format!("{}://***@{}", &word[..scheme_end], &rest[at + 1..]);
        }
    }
    // `token=...`, `secret=...`, `key=...`, `password=...` in a query or a message.
    for name in ["token=", "secret=", "password=", "key=", "access_token="] {
        if let Some(at) = word.to_ascii_lowercase().find(name) {
            let value_start = at + name.len();
            let value_end = word[value_start..].find('&').map_or(word.len(), |i| value_start + i);
            return format!("{}***{}", &word[..value_start], &word[value_end..]);
        }
    }
    word.to_string()
}

/// Logs the event (at the level its severity names, with the spec's keys) and records it in the
/// timeline.
pub async fn emit(engine: &Engine, event: Event) {
    let correlation_id = event.correlation_id.or_else(crate::ops::correlation::current);
    let now = engine.clock().now();
    let operation = event
        .operation
        .or_else(|| event.detail.as_ref().and_then(|d| d.get("operation")).and_then(Value::as_str).map(String::from));
    let result = event.result.or_else(|| outcome_of(event.event_type));
    let error = event.error.as_deref().map(sanitise);
    let detail = event.detail.map(|d| d.to_string());
    macro_rules! log {
        ($level:ident) => {
            tracing::$level!(
                event = event.event_type,
                component = event.component,
                operation = operation.as_deref().unwrap_or(""),
                duration_ms = event.duration_ms,
                result = result.map(JobResult::name).unwrap_or(""),
                correlation_id = correlation_id.as_deref().unwrap_or(""),
                user_id = event.user_id,
                detail = detail.as_deref().unwrap_or(""),
                error = error.as_deref().unwrap_or(""),
            )
        };
    }
    match event.severity {
        Severity::Info => log!(info),
        Severity::Warn => log!(warn),
        Severity::Error => log!(error),
    }
    let record = SystemEvent {
        id: 0,
        component: event.component.into(),
        severity: event.severity,
        event_type: event.event_type.into(),
        correlation_id,
        occurred_at: event.occurred_at.unwrap_or(now),
        created_at: now,
        detail,
        error,
        duration_ms: event.duration_ms,
        operation,
        result,
        user_id: event.user_id,
    };
    engine.record_event(record).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_lose_credentials_tokens_and_line_breaks() {
        assert_eq!(
            sanitise("POST https://bob:hunter2@hooks.example/x failed\nretry"),
            "POST https://***@hooks.example/x failed retry"
        );
        assert_eq!(sanitise("GET /send?token=abc123&x=1 refused"), "GET /send?token=***&x=1 refused");
        assert_eq!(sanitise("connection refused"), "connection refused");
    }

    #[test]
    fn an_event_type_says_its_outcome() {
        assert_eq!(outcome_of("backup_failed"), Some(JobResult::Failure));
        assert_eq!(outcome_of("restore_test_completed"), Some(JobResult::Success));
        assert_eq!(outcome_of("notification_sent"), Some(JobResult::Success));
        assert_eq!(outcome_of("application_started"), None);
    }
}
