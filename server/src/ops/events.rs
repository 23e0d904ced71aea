//! Emitting system events: the persisted operational timeline. Best-effort by design: recording
//! never fails the work it describes, and the same event is also a log line.

use jiff::Timestamp;
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::{Severity, SystemEvent};
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
        }
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
}

/// Logs the event and records it in the timeline.
pub async fn emit(engine: &Engine, event: Event) {
    let correlation_id = event.correlation_id.or_else(crate::ops::correlation::current);
    let now = engine.clock().now();
    tracing::info!(
        event = event.event_type,
        component = event.component,
        correlation_id = correlation_id.as_deref().unwrap_or(""),
        detail = %event.detail.as_ref().map(|d| d.to_string()).unwrap_or_default(),
        error = event.error.as_deref().unwrap_or(""),
    );
    let record = SystemEvent {
        id: 0,
        component: event.component.into(),
        severity: event.severity,
        event_type: event.event_type.into(),
        correlation_id,
        occurred_at: event.occurred_at.unwrap_or(now),
        created_at: now,
        detail: event.detail.map(|d| d.to_string()),
        error: event.error,
        duration_ms: event.duration_ms,
    };
    engine.record_event(record).await;
}
