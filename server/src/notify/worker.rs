//! The outbox's delivery worker: each round takes what is due from the pending side
//! (`outbox::DUE_TABLE`), delivers
//! each lane's messages in order (lanes side by side, `deliver::attempt` for one attempt) and
//! records every outcome of the round in one write, with the retry schedule of `outbox`. The
//! rows, their schedule and `enqueue` are `outbox`'s; this file is the only part that needs the
//! running server's state.
//!
//! The worker gives way to the user's writes: a delivery may wait a little, a write must not.
//! Before a round it waits (up to [`MAX_DEFER`]) until the engine's writer has no change in
//! flight (`Engine::writes_in_flight`: queued, or in the batch being made durable); while writes
//! are in flight a round expands only [`BUSY_EXPAND`] events (its expansion is one write of
//! several rows per event, on the same single writer as the user's changes) and a lane stops
//! early (after [`MIN_PER_LANE`] messages); what it left is the next round's, at full pace once
//! the writes pause. Tests step rounds with [`deliver_once`], which never gives way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use mycorrhizal_engine::Engine;

use super::notifier::Notifier;
use super::{deliver, webhooks};
use crate::ops::events::{Event, emit};
use crate::outbox::{self, Attempt, Message, Status, next_attempt};

/// Messages of one lane delivered in one round (they go one after the other).
const LANE_BATCH: usize = 200;
/// Lanes served at once in one round.
const LANES_AT_ONCE: usize = 32;
/// How long the worker sleeps when nothing is due and nothing woke it.
const IDLE: Duration = Duration::from_secs(5);
/// The longest a round waits for the writer's queue to empty: under writes that never pause,
/// deliveries still go, a few per lane every so often.
const MAX_DEFER: Duration = Duration::from_millis(500);
/// How often the writer's queue is looked at while giving way.
const DEFER_POLL: Duration = Duration::from_millis(5);
/// Messages a lane delivers in a round before it gives way to writes in flight.
const MIN_PER_LANE: usize = 16;
/// Events a running round expands while writes are in flight: a few rounds' worth of the lanes'
/// [`MIN_PER_LANE`], so an import with webhooks is not slowed by expansion writes of a thousand
/// events each (measured: `benches/webhooks.rs`, BENCHMARKS.md).
const BUSY_EXPAND: usize = 64;

/// Whether a round gives way to the user's writes.
#[derive(Clone, Copy, PartialEq)]
enum Pace {
    /// Everything due (up to the round's bounds): tests and on-demand steps.
    Full,
    /// The running worker: a lane stops early when writes are queued.
    Yielding,
}

/// Delivers everything due now: each lane's messages in order, lanes side by side. Returns how
/// many attempts were made. The step the worker repeats, and what tests call instead of waiting.
pub async fn deliver_once(notifier: &Notifier) -> usize {
    round(notifier, Pace::Full).await
}

async fn round(notifier: &Notifier, pace: Pace) -> usize {
    // Events recorded by their causes become deliveries first: all of them when stepped, one
    // write's worth ([`webhooks::EXPAND_BATCH`]) per round when running.
    let expanded = match pace {
        Pace::Full => webhooks::expand_all(&notifier.engine).await,
        Pace::Yielding => {
            let busy = notifier.engine.writes_in_flight() > 0;
            webhooks::expand(&notifier.engine, if busy { BUSY_EXPAND } else { webhooks::EXPAND_BATCH }).await
        }
    };
    if let Err(e) = expanded {
        tracing::error!(event = "outbox_expand_failed", component = "notification", error = %e);
    }
    let now = notifier.engine.clock().now();
    let due = match crate::crm::blocking(&notifier.engine, move |engine| due_lanes(engine, now)).await {
        Ok(Ok(lanes)) => lanes,
        Ok(Err(e)) => {
            tracing::error!(event = "outbox_read_failed", component = "notification", error = %e);
            return 0;
        }
        Err(_) => return 0,
    };
    let mut work = tokio::task::JoinSet::new();
    for ids in due {
        let notifier = notifier.clone();
        work.spawn(async move { deliver_lane(&notifier, ids, pace).await });
    }
    let mut outcomes = Vec::new();
    while let Some(done) = work.join_next().await {
        outcomes.extend(done.unwrap_or_default());
    }
    let attempts = outcomes.len();
    record(notifier, outcomes).await;
    attempts
}

/// The lanes due now, in the order of their oldest message, at most [`LANES_AT_ONCE`], each with
/// its due messages in id order up to its first one not yet due (at most [`LANE_BATCH`]).
/// Reads the pending side by lane (`outbox::DUE_TABLE`): one seek per lane to its oldest
/// message, then, for each lane taken, only the messages it delivers; a backlog is never read
/// whole.
fn due_lanes(engine: &Engine, now: Timestamp) -> mycorrhizal_engine::Result<Vec<Vec<u64>>> {
    let view = engine.global()?;
    // Each lane's oldest pending message: (id, lane, due).
    let mut heads: Vec<(u64, String, Timestamp)> = Vec::new();
    let mut from = String::new();
    loop {
        /// The next key of the due index: a lane's head, or a key that does not read as one.
        enum Next {
            Head(u64, String, Timestamp),
            Unreadable(String),
        }
        let mut next = None;
        view.map_scan(outbox::DUE_TABLE, &from, |key, value| {
            next = Some(match outbox::due_entry(key, value) {
                Some((lane, id, due)) => Next::Head(id, lane.to_string(), due),
                None => Next::Unreadable(key.to_string()),
            });
            false
        })?;
        match next {
            None => break,
            Some(Next::Head(id, lane, due)) => {
                let head = (id, lane, due);
                // Past the lane's last key: `\0` ends a lane's name in every key, `\u{1}` sorts after.
                from = format!("{}\u{1}", head.1);
                heads.push(head);
            }
            Some(Next::Unreadable(key)) => {
                tracing::error!(event = "outbox_entry_unreadable", component = "notification", key = %key.escape_debug());
                from = format!("{key}\u{0}");
            }
        }
    }
    heads.sort_unstable_by_key(|(id, _, _)| *id);
    let mut due = Vec::new();
    for (_, lane, _) in heads.into_iter().filter(|(_, _, at)| *at <= now).take(LANES_AT_ONCE) {
        let mut ids = Vec::new();
        view.map_scan(outbox::DUE_TABLE, &format!("{lane}\u{0}"), |key, value| match outbox::due_entry(key, value) {
            Some((l, id, at)) if l == lane && at <= now => {
                ids.push(id);
                ids.len() < LANE_BATCH
            }
            _ => false,
        })?;
        due.push(ids);
    }
    Ok(due)
}

/// Delivers a lane's messages one after the other until one is not delivered (or, when giving
/// way, writes are queued); returns the outcomes for the round's write.
async fn deliver_lane(notifier: &Notifier, ids: Vec<u64>, pace: Pace) -> Vec<(u64, Attempt)> {
    let mut outcomes = Vec::new();
    for id in ids {
        if pace == Pace::Yielding && outcomes.len() >= MIN_PER_LANE && notifier.engine.writes_in_flight() > 0 {
            break;
        }
        // The row and, for a webhook event, its envelope, in one read: `Some(None)` is a pending
        // delivery whose envelope is gone (it can never be made).
        let read = crate::crm::blocking(
            &notifier.engine,
            move |engine| -> mycorrhizal_engine::Result<Option<Option<Message>>> {
                let view = engine.global()?;
                let message = view.get::<Message>(id)?;
                if message.status != Status::Pending {
                    return Ok(None);
                }
                outbox::with_envelope(&view, message).map(Some)
            },
        )
        .await;
        let message = match read {
            Ok(Ok(Some(Some(message)))) => message,
            Ok(Ok(Some(None))) => {
                outcomes.push((id, Attempt::Permanent { status: None, error: "the event's envelope is gone".into() }));
                break;
            }
            _ => continue,
        };
        let attempt = deliver::attempt(notifier, &message).await;
        let stop = !matches!(attempt, Attempt::Delivered { .. });
        outcomes.push((id, attempt));
        if stop {
            break;
        }
    }
    outcomes
}

/// What an attempt's outcome changes, for the system events emitted after the write.
struct Finished {
    channel: &'static str,
    failed: bool,
    correlation: Option<String>,
    error: Option<String>,
    delivered: bool,
}

/// Writes the outcomes of a round's attempts (every lane's) in one transaction: one write per
/// round, not one per lane, beside the user's writes on the single writer.
async fn record(notifier: &Notifier, outcomes: Vec<(u64, Attempt)>) {
    if outcomes.is_empty() {
        return;
    }
    let written = notifier
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
                let lane = outbox::lane_of(*id, &m.target);
                match attempt {
                    Attempt::Delivered { status } => {
                        m.last_status = *status;
                        m.last_error = None;
                        done(&mut m, Status::Delivered);
                        outbox::clear_due(tx, &lane, *id)?;
                    }
                    Attempt::Permanent { status, error } => {
                        m.last_status = *status;
                        m.last_error = Some(format!("{error}; will not retry"));
                        done(&mut m, Status::Failed);
                        outbox::clear_due(tx, &lane, *id)?;
                    }
                    Attempt::Retry { status, error, retry_after } => {
                        m.last_status = *status;
                        match next_attempt(m.attempts, *retry_after, now) {
                            Some(at) => {
                                m.last_error = Some(error.clone());
                                m.next_attempt_at = at;
                                outbox::set_due(tx, &lane, *id, at)?;
                            }
                            None => {
                                m.last_error =
                                    Some(format!("{error}; gave up after {} attempts, will not retry", m.attempts));
                                done(&mut m, Status::Failed);
                                outbox::clear_due(tx, &lane, *id)?;
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
                report(&notifier.engine, f).await;
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

/// Waits until the engine's writer has had no change in flight at two looks [`DEFER_POLL`]
/// apart (between one caller's answer and its next change the count can touch zero), at most
/// [`MAX_DEFER`].
async fn give_way(engine: &Engine) {
    let until = Instant::now() + MAX_DEFER;
    let mut idle_looks = 0;
    while Instant::now() < until {
        idle_looks = if engine.writes_in_flight() == 0 { idle_looks + 1 } else { 0 };
        if idle_looks >= 2 {
            return;
        }
        tokio::time::sleep(DEFER_POLL).await;
    }
}

/// How much lower than the rest of the server the delivery worker's threads run: a nice value
/// added to the server's (Linux keeps it per thread). Like the search indexer's: a delivery may
/// wait a little, a request must not; when the cores are idle the worker gets them all.
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority by [`BACKGROUND_NICE`] (see [`mycorrhizal_engine::priority`]).
fn background_priority() {
    mycorrhizal_engine::lower_thread_priority(BACKGROUND_NICE, "outbox_priority_unchanged");
}

/// The running worker ([`start`]): dropping it stops the worker (at its next await).
#[must_use = "dropping it stops the worker"]
pub struct Running {
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Starts the worker ([`run`]) on a thread of its own, with a runtime of its own, at background
/// priority ([`BACKGROUND_NICE`], its blocking-pool threads too): its HTTP work, its reads of the
/// outbox and the signing compete with the user's requests only for what they leave. Outcomes
/// are still written by the engine's one writer. Where no thread can be made, it runs on the
/// caller's runtime instead.
pub fn start(notifier: Arc<Notifier>) -> Running {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new().name("outbox-worker".into());
    let worker = notifier.clone();
    let spawned = thread.spawn(move || {
        background_priority();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("outbox-blocking")
            .on_thread_start(background_priority)
            .build();
        match runtime {
            Ok(runtime) => runtime.block_on(async move {
                tokio::select! {
                    _ = run(worker) => {}
                    _ = stopped => {}
                }
            }),
            Err(e) => tracing::error!(event = "outbox_worker_failed", component = "notification", error = %e),
        }
    });
    if let Err(e) = spawned {
        tracing::error!(event = "outbox_worker_thread_failed", component = "notification", error = %e);
        tokio::spawn(run(notifier));
    }
    Running { _stop: stop }
}

/// The worker: delivers what is due, again at once while there was work, otherwise when woken
/// or after a few seconds (retries come due by time alone); each round first gives way to
/// queued writes.
pub async fn run(notifier: Arc<Notifier>) {
    let signal = notifier.outbox.signal.clone();
    loop {
        let wait = signal.notify.notified();
        give_way(&notifier.engine).await;
        let attempts = round(&notifier, Pace::Yielding).await;
        if attempts == 0 {
            let _ = tokio::time::timeout(IDLE, wait).await;
        }
    }
}
