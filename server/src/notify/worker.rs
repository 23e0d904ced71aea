//! The outbox's delivery worker: each round takes what is due from `sys:outbox_pending`, delivers
//! each lane's messages in order (lanes side by side, `deliver::attempt` for one attempt) and
//! records the outcomes with the retry schedule of `outbox`. The rows, their schedule and
//! `enqueue` are `outbox`'s; this file is the only part that needs the running server's state.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use mycorrhizal_engine::Engine;

use super::deliver;
use super::outbox::{Attempt, Message, Pending, Status, next_attempt};
use crate::ops::events::{Event, emit};
use crate::state::AppState;

/// Messages of one lane delivered in one round (they go one after the other).
const LANE_BATCH: usize = 200;
/// Lanes served at once in one round.
const LANES_AT_ONCE: usize = 32;
/// How long the worker sleeps when nothing is due and nothing woke it.
const IDLE: Duration = Duration::from_secs(5);

/// Delivers everything due now: each lane's messages in order, lanes side by side. Returns how
/// many attempts were made. The step the worker repeats, and what tests call instead of waiting.
pub async fn deliver_once(state: &AppState) -> usize {
    let now = state.engine.clock().now();
    let pending = match state.blocking(|engine| engine.global()?.list::<Pending>()).await {
        Ok(Ok(rows)) => rows,
        Ok(Err(e)) => {
            tracing::error!(event = "outbox_read_failed", component = "notification", error = %e);
            return 0;
        }
        Err(_) => return 0,
    };
    // Lanes in the order of their oldest message; each lane's ids ascending.
    let mut lanes: BTreeMap<String, Vec<(u64, Timestamp)>> = BTreeMap::new();
    for (id, p) in pending {
        lanes.entry(p.lane).or_default().push((id, p.due));
    }
    let mut due: Vec<Vec<u64>> = lanes
        .into_values()
        .filter(|ids| ids.first().is_some_and(|(_, at)| *at <= now))
        .map(|ids| ids.into_iter().take_while(|(_, at)| *at <= now).take(LANE_BATCH).map(|(id, _)| id).collect())
        .collect();
    due.sort_by_key(|ids: &Vec<u64>| ids.first().copied().unwrap_or(u64::MAX));
    due.truncate(LANES_AT_ONCE);
    let mut work = tokio::task::JoinSet::new();
    for ids in due {
        let state = state.clone();
        work.spawn(async move { deliver_lane(&state, ids).await });
    }
    let mut attempts = 0;
    while let Some(done) = work.join_next().await {
        attempts += done.unwrap_or(0);
    }
    attempts
}

/// Delivers a lane's messages one after the other until one is not delivered, then records every
/// outcome in one write.
async fn deliver_lane(state: &AppState, ids: Vec<u64>) -> usize {
    let mut outcomes = Vec::new();
    for id in ids {
        let Ok(Ok(message)) = state.blocking(move |engine| engine.global()?.get::<Message>(id)).await else {
            continue;
        };
        if message.status != Status::Pending {
            continue;
        }
        let attempt = deliver::attempt(state, &message).await;
        let stop = !matches!(attempt, Attempt::Delivered { .. });
        outcomes.push((id, attempt));
        if stop {
            break;
        }
    }
    let count = outcomes.len();
    record(state, outcomes).await;
    count
}

/// What an attempt's outcome changes, for the system events emitted after the write.
struct Finished {
    channel: &'static str,
    failed: bool,
    correlation: Option<String>,
    error: Option<String>,
    delivered: bool,
}

/// Writes the outcomes of one lane's attempts in one transaction.
async fn record(state: &AppState, outcomes: Vec<(u64, Attempt)>) {
    if outcomes.is_empty() {
        return;
    }
    let written = state
        .engine
        .write_async(move |tx| {
            let now = tx.now();
            let g = tx.global();
            let mut finished = Vec::new();
            for (id, attempt) in &outcomes {
                let Ok(mut m) = g.get::<Message>(*id) else { continue };
                if m.status != Status::Pending {
                    continue;
                }
                m.attempts += 1;
                m.last_attempt_at = Some(now);
                let mut done = |m: &mut Message, status: Status| {
                    m.status = status;
                    m.finished_at = Some(now);
                    if status == Status::Delivered {
                        m.target.forget_text();
                    }
                    finished.push(Finished {
                        channel: m.target.channel_name(),
                        failed: status == Status::Failed,
                        correlation: m.correlation_id.clone(),
                        error: m.last_error.clone(),
                        delivered: status == Status::Delivered,
                    });
                };
                match attempt {
                    Attempt::Delivered { status } => {
                        m.last_status = *status;
                        m.last_error = None;
                        done(&mut m, Status::Delivered);
                        g.remove::<Pending>(*id)?;
                    }
                    Attempt::Permanent { status, error } => {
                        m.last_status = *status;
                        m.last_error = Some(format!("{error}; will not retry"));
                        done(&mut m, Status::Failed);
                        g.remove::<Pending>(*id)?;
                    }
                    Attempt::Retry { status, error, retry_after } => {
                        m.last_status = *status;
                        match next_attempt(m.attempts, *retry_after, now) {
                            Some(at) => {
                                m.last_error = Some(error.clone());
                                m.next_attempt_at = at;
                                let mut p: Pending = g.get(*id)?;
                                p.due = at;
                                g.put(*id, &p)?;
                            }
                            None => {
                                m.last_error =
                                    Some(format!("{error}; gave up after {} attempts, will not retry", m.attempts));
                                done(&mut m, Status::Failed);
                                g.remove::<Pending>(*id)?;
                            }
                        }
                    }
                }
                g.put(*id, &m)?;
            }
            Ok(finished)
        })
        .await;
    match written {
        Ok(finished) => {
            for f in finished {
                report(&state.engine, f).await;
            }
        }
        Err(e) => tracing::error!(event = "outbox_write_failed", component = "notification", error = %e),
    }
}

/// The system events of a finished message: `integration_failed` for a webhook that will not be
/// retried; `notification_sent` / `notification_failed` for mail and channels, the channel name
/// as the only detail.
async fn report(engine: &Engine, f: Finished) {
    let detail = serde_json::json!({ "channel": f.channel });
    let mut event = match (f.channel, f.delivered, f.failed) {
        ("webhook", _, true) => Event::error("webhook", "integration_failed", f.error.unwrap_or_default()),
        ("webhook", _, _) => return,
        (_, true, _) => Event::info("notification", "notification_sent"),
        _ => Event::error("notification", "notification_failed", f.error.unwrap_or_default()),
    };
    event = event.detail(detail);
    event.correlation_id = f.correlation;
    emit(engine, event).await;
}

/// The worker: delivers what is due, again at once while there was work, otherwise when woken
/// or after a few seconds (retries come due by time alone).
pub async fn run(state: AppState) {
    let signal = state.outbox.signal.clone();
    loop {
        let wait = signal.notify.notified();
        let attempts = deliver_once(&state).await;
        if attempts == 0 {
            let _ = tokio::time::timeout(IDLE, wait).await;
        }
    }
}
