//! The durable outbox: every message that leaves the process (mail, a channel's push, a webhook
//! delivery) is first a row in `sys:outbox`, written in the same write transaction as its cause,
//! then delivered by one worker (`notify::worker::run`, stepping `deliver_once`). A crash at any point loses
//! nothing: a row is pending until an attempt's outcome is committed, so an attempt cut short by
//! a kill is simply made again (at least once; every message carries the same idempotency key on
//! every attempt). The retry schedule is in the row, so it survives restarts.
//!
//! A webhook event is first an entry of ONE row of [`EVENTS_TABLE`] ([`Event`]: what happened,
//! its key, the webhooks subscribed then, the row's body in the engine's row encoding, JSON only
//! later on the worker), written in its cause's transaction: the transaction gathers its events
//! and writes each user's as one row just before it commits ([`gather_event`]), so a group
//! commit of many changes pays one insert per user, however many webhooks subscribe. The worker
//! expands a row ([`expand_in`], from `webhooks::expand`) into the rows below in a write of its
//! own that also removes it, and a crash leaves a row's events either whole or unexpanded.
//!
//! A webhook event's envelope (the JSON body every delivery of the event POSTs) is stored once,
//! in `sys:outbox_envelopes` ([`Envelope`]), however many webhooks subscribe to the event: the
//! deliveries' rows ([`Target::WebhookEvent`]) are small and name it. It counts the rows that
//! name it and goes with the last of them (retention, an account's deletion), so a finished
//! delivery can still be redelivered until it is purged. Rows written before envelopes were
//! shared ([`Target::Webhook`], the body in the row) are still read and delivered.
//!
//! Pending rows also have a small entry in `map:outbox_due` ([`DUE_TABLE`]), keyed by the lane
//! they are delivered in and their id, holding when they are due: a lane's pending messages are
//! one run of keys in id order, so a round seeks to each lane's oldest and reads only what it
//! delivers, however large the backlog (see `worker`). Messages of one lane (one webhook) go in
//! id order, one at a time: a lane whose oldest message waits for a retry holds the later ones
//! back. Mails and channel pushes each have a lane of their own. (Before this index the pending
//! side was `sys:outbox_pending`, [`Pending`], keyed by id only; [`adopt_pending`] moves such
//! rows over at start.)
//!
//! Retries: after a failed attempt n the next comes [`BACKOFF`]\[n-1\] later (30 s, 2 min, 10 min,
//! 30 min, 1 h, 3 h, 6 h: eight attempts in about 11 hours), or after the receiver's `Retry-After`
//! when it sent one (at least 1 s, at most 6 h). A 4xx other than 408/429 (410 Gone among them), a
//! destination the private-address guard refuses, a deleted webhook or channel, or a mail the
//! provider refuses for good is permanent: the row becomes `failed` with "will not retry". A row
//! that exhausts its attempts fails too, with an `integration_failed` (webhook) or
//! `notification_failed` (channel, mail) system event. Finished rows are purged after
//! `WEBHOOK_DELIVERY_RETENTION_DAYS` by the retention job; a delivered mail's text is dropped at
//! once (it may hold a reset link), and so is a channel message's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::{Engine, GlobalRecord, Tx, global_tables};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

/// Delay after failed attempt n (index n-1); its length + 1 is the number of attempts.
pub const BACKOFF: [Duration; 7] = [
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(600),
    Duration::from_secs(1800),
    Duration::from_secs(3600),
    Duration::from_secs(3 * 3600),
    Duration::from_secs(6 * 3600),
];
/// Attempts before a message fails for good.
pub const MAX_ATTEMPTS: u32 = BACKOFF.len() as u32 + 1;
/// Bounds on a receiver's `Retry-After`.
const RETRY_AFTER_MIN: Duration = Duration::from_secs(1);
const RETRY_AFTER_MAX: Duration = Duration::from_secs(6 * 3600);

/// Where a message goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Target {
    /// A webhook delivery holding its envelope's JSON text, fixed at the cause (a copy of the
    /// entity), signed at each attempt with the webhook's current secret. Rows written before
    /// envelopes were stored once per event ([`Target::WebhookEvent`]); still read and delivered,
    /// and how the worker hands a delivery its envelope in memory.
    Webhook { webhook_id: u64, event: String, body: String },
    /// Mail through the instance's provider. `text` is sealed with the data key (a reset link is
    /// a credential) and emptied once delivered.
    Email { to: String, subject: String, text: Vec<u8> },
    /// The user's ntfy-style topic, as configured when the attempt is made. `text` is sealed
    /// with the data key like a mail's, and emptied once delivered.
    Ntfy { title: String, text: Vec<u8> },
    /// The user's Gotify-style server, as configured when the attempt is made.
    Gotify { title: String, text: Vec<u8> },
    /// One registered browser of the user (`notify::webpush`).
    WebPush { subscription_id: u64, title: String, text: Vec<u8> },
    /// One registered mobile device of the user, through FCM (`notify::fcm`).
    Fcm { device_id: u64, title: String, text: Vec<u8> },
    /// A webhook delivery of an event whose envelope is stored once for all its deliveries:
    /// [`Envelope`] row `envelope`. (Last of the variants: rows are postcard, which numbers them.)
    WebhookEvent { webhook_id: u64, event: String, envelope: u64 },
}

impl Target {
    pub fn channel_name(&self) -> &'static str {
        match self {
            Target::Webhook { .. } | Target::WebhookEvent { .. } => "webhook",
            Target::Email { .. } => "email",
            Target::Ntfy { .. } => "ntfy",
            Target::Gotify { .. } => "gotify",
            Target::WebPush { .. } => "webpush",
            Target::Fcm { .. } => "fcm",
        }
    }

    /// Drops a delivered message's sealed text (kept only while it may still be sent).
    /// The webhook and event of a webhook delivery, whichever way its envelope is stored.
    pub fn webhook(&self) -> Option<(u64, &str)> {
        match self {
            Target::Webhook { webhook_id, event, .. } | Target::WebhookEvent { webhook_id, event, .. } => {
                Some((*webhook_id, event))
            }
            _ => None,
        }
    }

    /// The stored envelope this delivery names, if it names one.
    pub fn envelope(&self) -> Option<u64> {
        match self {
            Target::WebhookEvent { envelope, .. } => Some(*envelope),
            _ => None,
        }
    }

    pub(crate) fn forget_text(&mut self) {
        match self {
            Target::Webhook { .. } | Target::WebhookEvent { .. } => {}
            Target::Email { text, .. }
            | Target::Ntfy { text, .. }
            | Target::Gotify { text, .. }
            | Target::WebPush { text, .. }
            | Target::Fcm { text, .. } => text.clear(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Pending,
    Delivered,
    /// Will not retry: permanent, or out of attempts.
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Delivered => "delivered",
            Status::Failed => "failed",
        }
    }
}

/// One outbound message and its delivery state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    /// The user it belongs to; 0 for the instance's own mail before an account exists.
    pub user_id: u64,
    /// Idempotency key: the same on every attempt and redelivery of this message.
    pub key: String,
    pub target: Target,
    /// The request or job that caused it.
    pub correlation_id: Option<String>,
    pub status: Status,
    pub attempts: u32,
    pub next_attempt_at: Timestamp,
    pub last_attempt_at: Option<Timestamp>,
    /// The receiver's HTTP status of the last attempt, if it answered.
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

impl GlobalRecord for Message {
    global_tables!("outbox");
}

/// A webhook event's envelope JSON text, stored once for every delivery of the event.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    /// The messages naming it ([`Target::WebhookEvent`]); it is removed with the last of them.
    pub refs: u32,
    pub body: String,
}

impl GlobalRecord for Envelope {
    global_tables!("outbox_envelopes");
}

/// The pending side as earlier versions kept it (`sys:outbox_pending`, same id as the message):
/// its lane and when it is due. Only read, by [`adopt_pending`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    pub lane: String,
    pub due: Timestamp,
}

impl GlobalRecord for Pending {
    global_tables!("outbox_pending");
}

/// The pending side: `<lane>\0<message id, 20 digits>` -> when it is due (microseconds since
/// the epoch, 8 bytes little-endian). Keys sort by lane, then by id within a lane.
pub const DUE_TABLE: &str = "map:outbox_due";

/// The lane message `id` is delivered in: its webhook's (deliveries of one webhook go in order),
/// or its own.
pub fn lane_of(id: u64, target: &Target) -> String {
    match target.webhook() {
        Some((webhook_id, _)) => format!("webhook:{webhook_id}"),
        None => format!("own:{id}"),
    }
}

fn due_key(lane: &str, id: u64) -> String {
    format!("{lane}\u{0}{id:020}")
}

/// A pending-side entry: (lane, message id, due), `None` for a key of another shape.
pub(crate) fn due_entry<'k>(key: &'k str, value: &[u8]) -> Option<(&'k str, u64, Timestamp)> {
    let (lane, id) = key.rsplit_once('\u{0}')?;
    let micros = i64::from_le_bytes(value.try_into().ok()?);
    Some((lane, id.parse().ok()?, Timestamp::from_microsecond(micros).ok()?))
}

/// Marks message `id` (of lane `lane`) pending, due `at`.
pub(crate) fn set_due(tx: &Tx<'_>, lane: &str, id: u64, at: Timestamp) -> mycorrhizal_engine::Result<()> {
    tx.global().map_put(DUE_TABLE, &due_key(lane, id), &at.as_microsecond().to_le_bytes())
}

/// Message `id` is no longer pending.
pub(crate) fn clear_due(tx: &Tx<'_>, lane: &str, id: u64) -> mycorrhizal_engine::Result<bool> {
    tx.global().map_remove(DUE_TABLE, &due_key(lane, id))
}

/// The ids of every pending message, by lane then id.
pub fn pending_ids(view: &mycorrhizal_engine::GlobalView) -> mycorrhizal_engine::Result<Vec<u64>> {
    let mut ids = Vec::new();
    view.map_scan(DUE_TABLE, "", |key, value| {
        if let Some((_, id, _)) = due_entry(key, value) {
            ids.push(id);
        }
        true
    })?;
    Ok(ids)
}

/// Moves a pending side written by an earlier version (`sys:outbox_pending`) into
/// [`DUE_TABLE`], in one write; nothing when there is none. Run at start, before the worker.
/// Returns how many rows moved.
pub async fn adopt_pending(engine: &Engine) -> mycorrhizal_engine::Result<u64> {
    let reader = engine.clone();
    let legacy = tokio::task::spawn_blocking(move || reader.global()?.list::<Pending>())
        .await
        .map_err(|e| mycorrhizal_engine::Error::CommitFailed(e.to_string()))??;
    if legacy.is_empty() {
        return Ok(0);
    }
    engine
        .write_async(move |tx| {
            let mut moved = 0;
            for (id, p) in &legacy {
                if tx.global().remove::<Pending>(*id)? {
                    set_due(tx, &p.lane, *id, p.due)?;
                    moved += 1;
                }
            }
            Ok(moved)
        })
        .await
}

/// What a queued message's text (a mail's, a channel notification's) is sealed to with the data
/// key: the text is readable only as this user's outbox text.
pub fn text_binding(user: u64) -> String {
    crate::keys::binding("outbox", user, "text")
}

/// Writes `target` as a pending message of `user` in transaction `tx` (the cause's own), due now.
/// Returns the message id.
pub fn enqueue(tx: &Tx<'_>, user: u64, target: Target, key: Option<String>) -> mycorrhizal_engine::Result<u64> {
    let key = key.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    enqueue_as(tx, user, target, key, tx.now(), tx.origin().map(|o| o.to_string()))
}

/// [`enqueue`] for a message whose cause came earlier (an [`Event`] expanded later): created at
/// `created_at` under `correlation_id`, due now.
fn enqueue_as(
    tx: &Tx<'_>,
    user: u64,
    target: Target,
    key: String,
    created_at: Timestamp,
    correlation_id: Option<String>,
) -> mycorrhizal_engine::Result<u64> {
    let now = tx.now();
    let message = Message {
        user_id: user,
        key,
        target,
        correlation_id,
        status: Status::Pending,
        attempts: 0,
        next_attempt_at: now,
        last_attempt_at: None,
        last_status: None,
        last_error: None,
        created_at,
        finished_at: None,
    };
    let id = tx.global().insert(&message)?;
    set_due(tx, &lane_of(id, &message.target), id, now)?;
    Ok(id)
}

/// Queues one delivery of event `event` (envelope `body`, idempotency key `key`) to each of
/// `webhooks`, in `tx` (the cause's transaction): the envelope is stored once, each delivery's
/// row names it. Returns the messages' ids.
pub fn enqueue_event(
    tx: &Tx<'_>,
    user: u64,
    webhooks: &[u64],
    event: &str,
    key: &str,
    body: String,
) -> mycorrhizal_engine::Result<Vec<u64>> {
    let correlation = tx.origin().map(|o| o.to_string());
    enqueue_event_as(tx, user, webhooks, event, key, body, tx.now(), correlation)
}

#[allow(clippy::too_many_arguments)]
fn enqueue_event_as(
    tx: &Tx<'_>,
    user: u64,
    webhooks: &[u64],
    event: &str,
    key: &str,
    body: String,
    created_at: Timestamp,
    correlation: Option<String>,
) -> mycorrhizal_engine::Result<Vec<u64>> {
    if webhooks.is_empty() {
        return Ok(Vec::new());
    }
    let refs = u32::try_from(webhooks.len()).unwrap_or(u32::MAX);
    let envelope = tx.global().insert(&Envelope { refs, body })?;
    webhooks
        .iter()
        .map(|webhook_id| {
            let target = Target::WebhookEvent { webhook_id: *webhook_id, event: event.to_string(), envelope };
            enqueue_as(tx, user, target, key.to_string(), created_at, correlation.clone())
        })
        .collect()
}

/// A webhook event as its cause's transaction records it, however many webhooks subscribe: one
/// entry of a row of [`EVENTS_TABLE`] that holds the events of one user in one transaction (see
/// [`gather_event`]). The delivery worker expands a row ([`expand`]) into each event's envelope
/// and one delivery per webhook, in a transaction of its own that also removes the row; until
/// then its events are pending for every webhook they name. An event's idempotency key is fixed
/// when its row is written, so an expansion cut short by a crash is made again whole with the
/// same key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Event {
    pub user_id: u64,
    /// The event's name (`contact.created`, ...).
    pub event: String,
    /// The idempotency key every delivery of it carries (the envelope's `id`).
    pub key: String,
    /// The instant of the cause (the envelope's `timestamp`, the deliveries' `created_at`).
    pub at: Timestamp,
    pub correlation_id: Option<String>,
    /// The webhooks subscribed to it when it happened, in the order of their ids.
    pub webhooks: Vec<u64>,
    /// The envelope's `data`: JSON text, or for a record change the row's body in the engine's
    /// row encoding (its first byte is `codec::FORMAT_V1`, which no JSON text starts with; events
    /// recorded by earlier builds hold the body as JSON text), which the expansion turns into
    /// JSON and completes with [`Event::record`].
    pub data: Vec<u8>,
    /// For a record change: its kind, id and revision.
    pub record: Option<(String, u64, u64)>,
}

/// Events not yet expanded, in rows keyed by the row's id (20 digits): `<id>` + [`RUN_SUFFIX`]
/// holds a run of events (`Vec<Event>`, postcard), one user's in one transaction; `<id>` alone
/// holds one [`Event`], as builds before runs wrote every event. Keys sort by id, which is the
/// order of their causes' commits, and a run keeps its events' order.
pub const EVENTS_TABLE: &str = "map:outbox_events";

/// The end of a run row's key in [`EVENTS_TABLE`].
pub const RUN_SUFFIX: &str = "+run";

/// Most events in one run row: a transaction that records more for one user (an import) writes
/// several rows, so one expansion, which takes rows whole, stays near the events it was asked for.
pub const RUN_MAX: usize = 64;

/// What a write transaction gathers for the outbox ([`Tx::gathered`]): its webhook events, by
/// user, written as run rows when it finishes; and each user's subscriptions as it has read them,
/// so a transaction of many changes (a batch of callers, an import) reads them once.
#[derive(Default)]
pub struct Gathering {
    /// Events not yet written, each user's in order.
    events: Vec<(u64, Vec<Event>)>,
    /// (webhook id, subscribed events) of each user this transaction has looked up.
    pub(crate) subscriptions: std::collections::HashMap<u64, Vec<(u64, Vec<String>)>>,
}

impl mycorrhizal_engine::Gathered for Gathering {
    fn finish(self: Box<Self>, tx: &Tx<'_>) -> mycorrhizal_engine::Result<()> {
        for (_, run) in self.events {
            write_run(tx, run)?;
        }
        Ok(())
    }
}

/// Records `event` in `tx` (the cause's transaction): gathered with the transaction's other
/// events of the same user and written with them, one row, before it commits (or at once when
/// the run is full). The event's key is given when the row is written.
pub fn gather_event(tx: &Tx<'_>, event: Event) -> mycorrhizal_engine::Result<()> {
    let full = tx.gathered(|g: &mut Gathering| {
        let user = event.user_id;
        let at = match g.events.iter().position(|(u, _)| *u == user) {
            Some(at) => at,
            None => {
                g.events.push((user, Vec::new()));
                g.events.len() - 1
            }
        };
        g.events[at].1.push(event);
        (g.events[at].1.len() >= RUN_MAX).then(|| g.events.swap_remove(at).1)
    })?;
    match full {
        Some(run) => write_run(tx, run),
        None => Ok(()),
    }
}

/// Drops what `tx` has gathered for `user` (their account is going) and forgets their
/// subscriptions as read.
fn forget_gathered(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<()> {
    tx.gathered(|g: &mut Gathering| {
        g.events.retain(|(u, _)| *u != user);
        g.subscriptions.remove(&user);
    })
}

/// Writes one run row: each event's idempotency key (a random UUID v4, from one read of the
/// system's randomness for the whole run), then the row under a fresh id.
fn write_run(tx: &Tx<'_>, mut run: Vec<Event>) -> mycorrhizal_engine::Result<()> {
    if run.is_empty() {
        return Ok(());
    }
    let mut random = vec![0u8; 16 * run.len()];
    getrandom::fill(&mut random)
        .map_err(|e| mycorrhizal_engine::Error::CommitFailed(format!("no randomness for event keys: {e}")))?;
    for (event, bytes) in run.iter_mut().zip(random.chunks_exact(16)) {
        let mut b = [0u8; 16];
        b.copy_from_slice(bytes);
        event.key = uuid::Builder::from_random_bytes(b).into_uuid().to_string();
    }
    let id = tx.next_counter("id:outbox_events")?;
    tx.global().map_put(EVENTS_TABLE, &format!("{id:020}{RUN_SUFFIX}"), &mycorrhizal_engine::codec::encode(&run))
}

/// The events of one row of [`EVENTS_TABLE`], of either form.
fn row_events(key: &str, value: &[u8]) -> mycorrhizal_engine::Result<Vec<Event>> {
    if key.ends_with(RUN_SUFFIX) {
        mycorrhizal_engine::codec::decode(EVENTS_TABLE, value)
    } else {
        Ok(vec![mycorrhizal_engine::codec::decode(EVENTS_TABLE, value)?])
    }
}

/// Events not yet expanded, oldest first: (key of their row, event), whole rows until at least
/// `limit` events (a row's events are expanded together, with the row's removal).
pub fn pending_events(
    view: &mycorrhizal_engine::GlobalView,
    limit: usize,
) -> mycorrhizal_engine::Result<Vec<(String, Event)>> {
    let mut events = Vec::new();
    let mut failed = None;
    view.map_scan(EVENTS_TABLE, "", |key, value| {
        match row_events(key, value) {
            Ok(row) => events.extend(row.into_iter().map(|event| (key.to_string(), event))),
            Err(e) => failed = Some(e),
        }
        failed.is_none() && events.len() < limit
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(events),
    }
}

/// Expands events read by [`pending_events`], each with its envelope's JSON text built by the
/// caller (outside the writer), in `tx`: removes each row still pending (once, for the events of
/// it that follow one another in `events`) and queues each of its events' deliveries (one
/// envelope, one row per webhook, with the event's key, instant and correlation id). The events
/// of a row already gone (expanded by another call, or its account deleted) are skipped, so
/// expanding twice is harmless. Returns how many events were expanded.
pub fn expand_in(tx: &Tx<'_>, events: &[(String, Event, String)]) -> mycorrhizal_engine::Result<usize> {
    let mut expanded = 0;
    // The row being expanded, and whether it was still there (its events follow one another).
    let mut row: Option<(&str, bool)> = None;
    for (key, event, body) in events {
        let pending = match row {
            Some((current, pending)) if current == key => pending,
            _ => {
                let pending = tx.global().map_remove(EVENTS_TABLE, key)?;
                row = Some((key, pending));
                pending
            }
        };
        if !pending {
            continue;
        }
        enqueue_event_as(
            tx,
            event.user_id,
            &event.webhooks,
            &event.event,
            &event.key,
            body.clone(),
            event.at,
            event.correlation_id.clone(),
        )?;
        expanded += 1;
    }
    Ok(expanded)
}

/// One more message names envelope `id` (a redelivery).
pub fn share_envelope(tx: &Tx<'_>, id: u64) -> mycorrhizal_engine::Result<()> {
    let mut envelope: Envelope = tx.global().get(id)?;
    envelope.refs = envelope.refs.saturating_add(1);
    tx.global().put(id, &envelope)
}

/// Envelopes named by messages being removed, with how many of their messages go.
#[derive(Default)]
struct Released(std::collections::HashMap<u64, u32>);

impl Released {
    fn add(&mut self, target: &Target) {
        if let Some(id) = target.envelope() {
            *self.0.entry(id).or_default() += 1;
        }
    }

    /// Lowers each envelope's count; removes the ones no message names any more.
    fn apply(self, tx: &Tx<'_>) -> mycorrhizal_engine::Result<()> {
        let g = tx.global();
        for (id, gone) in self.0 {
            let mut envelope: Envelope = match g.get(id) {
                Ok(e) => e,
                Err(mycorrhizal_engine::Error::NotFound) => continue,
                Err(e) => return Err(e),
            };
            if envelope.refs <= gone {
                g.delete::<Envelope>(id)?;
            } else {
                envelope.refs -= gone;
                g.put(id, &envelope)?;
            }
        }
        Ok(())
    }
}

/// `message` with its webhook envelope in the row (read from `view` when it is stored once for
/// the event), as a delivery attempt takes it. `None` when the envelope is gone.
pub fn with_envelope(
    view: &mycorrhizal_engine::GlobalView,
    message: Message,
) -> mycorrhizal_engine::Result<Option<Message>> {
    let Target::WebhookEvent { webhook_id, event, envelope } = &message.target else { return Ok(Some(message)) };
    let body = match view.get::<Envelope>(*envelope) {
        Ok(e) => e.body,
        Err(mycorrhizal_engine::Error::NotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    let target = Target::Webhook { webhook_id: *webhook_id, event: event.clone(), body };
    Ok(Some(Message { target, ..message }))
}

/// Wakes the delivery worker (after a commit that enqueued something).
#[derive(Default)]
pub struct Signal {
    pub(crate) notify: Notify,
    dirty: AtomicBool,
}

impl Signal {
    /// Marks that a transaction in progress enqueued something; [`Signal::committed`] wakes.
    pub fn mark(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    pub fn committed(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            self.notify.notify_one();
        }
    }

    pub fn wake(&self) {
        self.notify.notify_one();
    }
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    Delivered {
        status: Option<u16>,
    },
    /// Worth another try, after the receiver's `Retry-After` if it gave one.
    Retry {
        status: Option<u16>,
        error: String,
        retry_after: Option<Duration>,
    },
    /// Will not retry.
    Permanent {
        status: Option<u16>,
        error: String,
    },
}

/// Classifies an HTTP answer: 2xx delivered; 408, 429 and 5xx retried; any other status
/// permanent (410 Gone: the receiver is gone; a 3xx the client did not follow).
pub fn classify(status: u16, retry_after: Option<Duration>) -> Attempt {
    match status {
        200..=299 => Attempt::Delivered { status: Some(status) },
        408 | 429 | 500..=599 => {
            Attempt::Retry { status: Some(status), error: format!("the receiver answered {status}"), retry_after }
        }
        410 => Attempt::Permanent { status: Some(status), error: "the receiver answered 410 Gone".into() },
        _ => Attempt::Permanent { status: Some(status), error: format!("the receiver answered {status}") },
    }
}

/// Reads a `Retry-After` value: delay-seconds or an HTTP date (relative to `now`).
pub fn retry_after(value: &str, now: Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    Some(Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO))
}

/// When the next attempt after failed attempt number `attempts` is due, or `None` when the
/// budget is spent.
pub fn next_attempt(attempts: u32, retry_after: Option<Duration>, now: Timestamp) -> Option<Timestamp> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let delay = match retry_after {
        Some(wait) => wait.clamp(RETRY_AFTER_MIN, RETRY_AFTER_MAX),
        None => BACKOFF[(attempts.max(1) - 1) as usize],
    };
    now.checked_add(SignedDuration::try_from(delay).ok()?).ok()
}

/// How the outbox delivers: the pieces a delivery needs, built once.
#[derive(Clone)]
pub struct Outbox {
    pub signal: Arc<Signal>,
    /// The client for user-supplied destinations, guarded when `WEBHOOK_BLOCK_PRIVATE_URLS`.
    pub client: reqwest::Client,
}

/// Removes every message of `user`, pending or finished, with its pending side and its envelope,
/// and the user's events not yet expanded (an account's deletion; an envelope is one user's). An attempt already under way finds its row gone and records nothing. Returns how
/// many messages went.
pub fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    let g = tx.global();
    let mut removed = 0;
    let mut released = Released::default();
    for (id, m) in g.list::<Message>()? {
        if m.user_id == user {
            g.delete::<Message>(id)?;
            clear_due(tx, &lane_of(id, &m.target), id)?;
            released.add(&m.target);
            removed += 1;
        }
    }
    released.apply(tx)?;
    forget_gathered(tx, user)?;
    let mut rows = Vec::new();
    g.map_scan(EVENTS_TABLE, "", |key, value| {
        // A row holds one user's events (a run is one user's, in one transaction).
        if let Ok(events) = row_events(key, value)
            && events.first().is_some_and(|e| e.user_id == user)
        {
            rows.push((key.to_string(), events.len() as u64));
        }
        true
    })?;
    for (key, events) in rows {
        if g.map_remove(EVENTS_TABLE, &key)? {
            removed += events;
        }
    }
    Ok(removed)
}

/// Removes finished messages created before `cutoff`, and the envelopes no message names any
/// more. Returns how many messages.
pub async fn purge(engine: &Engine, cutoff: Timestamp) -> mycorrhizal_engine::Result<u64> {
    engine
        .write_async(move |tx| {
            let g = tx.global();
            let mut removed = 0;
            let mut released = Released::default();
            for (id, m) in g.list::<Message>()? {
                if m.status != Status::Pending && m.created_at < cutoff {
                    g.delete::<Message>(id)?;
                    released.add(&m.target);
                    removed += 1;
                }
            }
            released.apply(tx)?;
            Ok(removed)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_classified() {
        assert!(matches!(classify(204, None), Attempt::Delivered { .. }));
        for s in [408, 429, 500, 502, 503] {
            assert!(matches!(classify(s, None), Attempt::Retry { .. }), "{s}");
        }
        for s in [301, 400, 401, 403, 404, 410, 422] {
            assert!(matches!(classify(s, None), Attempt::Permanent { .. }), "{s}");
        }
    }

    #[test]
    fn the_schedule_backs_off_honours_retry_after_and_ends() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let at = |n, ra| next_attempt(n, ra, now).map(|t| t.duration_since(now).as_secs());
        assert_eq!(at(1, None), Some(30));
        assert_eq!(at(2, None), Some(120));
        assert_eq!(at(7, None), Some(6 * 3600));
        assert_eq!(at(MAX_ATTEMPTS, None), None);
        assert_eq!(at(1, Some(Duration::from_secs(7))), Some(7));
        assert_eq!(at(1, Some(Duration::ZERO)), Some(1));
        assert_eq!(at(1, Some(Duration::from_secs(999_999))), Some(6 * 3600));
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(retry_after("Thu, 01 Jan 2026 00:01:00 GMT", now), Some(Duration::from_secs(60)));
        assert_eq!(retry_after("soon", now), None);
    }
}
