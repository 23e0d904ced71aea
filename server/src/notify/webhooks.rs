//! Webhooks: a user's receivers of signed event deliveries, and the engine hook that turns each
//! change of a user record into outbox rows inside the change's own transaction.
//!
//! Events: `<kind>.created`, `<kind>.updated`, `<kind>.deleted` for every user record kind (the
//! registry `crm::kinds::all`), plus `test` (sent on request to one webhook) and the daily
//! digest's `reminder.triggered`, `birthday.occurred` and `cadence.overdue` (queued by
//! `notify::digest` through [`publish`], in the digest's transaction).
//!
//! A delivery POSTs the envelope `{id, event, timestamp, data}` (`id` is the event's idempotency
//! key, the same on every attempt and redelivery; `timestamp` the instant of the cause; `data` a
//! copy of the entity as stored when it changed) with
//! `X-Mycorrhizal-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, signed
//! at each attempt, so a receiver refuses a `t` more than five minutes from its clock
//! (README: "Webhooks").
//!
//! The secret is shown once (create, rotate) and stored sealed with the data key, since signing
//! needs it back. Which users have webhooks is kept in memory ([`OutboxHook`]): a user without
//! any costs a write one hash lookup; the subscriptions themselves (`map:webhook_subs`) are read
//! inside the transaction (once per transaction, forgotten when it rewrites them), so a webhook
//! created or removed is seen by the very next write. A subscribed change records one event
//! (`outbox::gather_event`: a transaction's events of one user share a row); [`expand`] turns
//! events into envelopes and deliveries later, in the worker's writes.
//!
//! The records, the signature, [`publish`] and the hook are here; the operations a front door
//! calls (create, list, rotate, test, redeliver, ...) are `webhook_ops`.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use hmac::{Hmac, Mac};
use jiff::Timestamp;
use mycorrhizal_engine::{Change, ChangeHook, GlobalRecord, Op, Tx, UserId, global_tables};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;
use utoipa::ToSchema;

use crate::keys::DataKey;
use crate::outbox::{self, Message, Signal, Status};

/// Events that do not come from a record change.
pub const DOMAIN_EVENTS: [&str; 4] = ["test", "reminder.triggered", "birthday.occurred", "cadence.overdue"];
/// Events about the whole instance, which only an administrator's webhooks may subscribe to
/// (a subscription by anyone else is refused naming `events`): a scheduled integrity pass that
/// fails (`{kind}`, the failed pass's name, e.g. `audit_chain`) and a restore drill that fails
/// (no payload beyond the envelope). They go to the webhooks of the accounts that are admins when
/// the event happens.
pub const ADMIN_EVENTS: [&str; 2] = ["db.integrity_check_failed", "db.restore_drill_failed"];
/// An alert condition raised and cleared (`crate::alerts`): instance events like
/// [`ADMIN_EVENTS`] (only an administrator's webhook may subscribe), broadcast to every
/// subscribed webhook of the accounts that are admins when it is told. Counts and names only.
pub const ALERT_EVENTS: [&str; 2] = ["alert.raised", "alert.cleared"];
/// Most webhooks one user may have.
pub const MAX_WEBHOOKS: usize = 20;
/// A `map:` table, like every map table (snapshots and checks know a table's layout by its prefix).
pub(super) const SUBS_TABLE: &str = "map:webhook_subs";
pub const SIGNATURE_HEADER: &str = "X-Mycorrhizal-Signature";

/// A webhook, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Webhook {
    pub user_id: u64,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub active: bool,
    /// The signing secret sealed with the data key.
    pub sealed_secret: Vec<u8>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl GlobalRecord for Webhook {
    global_tables!("webhooks");
}

/// One user's subscriptions, read inside every write of that user that may need them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Subscriptions {
    pub(super) hooks: Vec<(u64, Vec<String>)>,
}

/// Every event a webhook may subscribe to.
pub fn event_names() -> Vec<String> {
    let mut names: Vec<String> = crate::crm::kinds::all()
        .iter()
        .flat_map(|k| ["created", "updated", "deleted"].map(|op| format!("{}.{op}", k.name)))
        .collect();
    names.extend(DOMAIN_EVENTS.iter().map(|e| e.to_string()));
    names.extend(ADMIN_EVENTS.iter().map(|e| e.to_string()));
    names.extend(ALERT_EVENTS.iter().map(|e| e.to_string()));
    names
}

/// A webhook as its owner sees it (never the secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookView {
    pub id: u64,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub active: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

impl WebhookView {
    pub(super) fn of(id: u64, w: &Webhook) -> WebhookView {
        WebhookView {
            id,
            url: w.url.clone(),
            events: w.events.clone(),
            description: w.description.clone(),
            active: w.active,
            created_at: w.created_at,
            updated_at: w.updated_at,
        }
    }
}

/// A webhook with its secret: the one answer that shows it (create, rotate).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookWithSecret {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_...`: shown only here; sign-checking needs it.
    pub secret: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// What a webhook is created or changed with.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookInput {
    /// http or https receiver URL (required on create).
    #[schema(schema_with = crate::outbound::url_with_query_schema)]
    pub url: Option<String>,
    /// Events to receive (see `GET /webhooks/events`); at least one (required on create).
    #[schema(value_type = Option<Vec<EventName>>, min_items = 1)]
    pub events: Option<Vec<String>>,
    #[schema(max_length = 200)]
    pub description: Option<String>,
    pub active: Option<bool>,
}

/// One subscribable event name (the schema lists them all).
pub struct EventName;

impl utoipa::PartialSchema for EventName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new().schema_type(Type::String).enum_values(Some(event_names())).into()
    }
}

impl ToSchema for EventName {}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<String>,
}

/// One delivery of a webhook, for its log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryView {
    pub id: u64,
    pub event: String,
    /// The event's idempotency key (the envelope's `id`).
    pub event_id: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// False once delivered or failed for good ("will not retry").
    pub will_retry: bool,
    pub attempts: u32,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_attempt_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_attempt_at: Option<Timestamp>,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub correlation_id: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<Timestamp>,
}

impl DeliveryView {
    pub(super) fn of(id: u64, m: &Message) -> Option<DeliveryView> {
        let (_, event) = m.target.webhook()?;
        Some(DeliveryView {
            id,
            event: event.to_string(),
            event_id: m.key.clone(),
            status: m.status.as_str().to_string(),
            will_retry: m.status == Status::Pending,
            attempts: m.attempts,
            next_attempt_at: (m.status == Status::Pending).then_some(m.next_attempt_at),
            last_attempt_at: m.last_attempt_at,
            last_status: m.last_status,
            last_error: m.last_error.clone(),
            correlation_id: m.correlation_id.clone(),
            created_at: m.created_at,
            finished_at: m.finished_at,
        })
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
}

/// `t=<unix>,v1=<hex>` over `"<t>.<body>"`.
pub fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else { return String::new() };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("t={timestamp},v1={}", hex::encode(mac.finalize().into_bytes()))
}

pub(super) fn binding(user: u64) -> String {
    crate::keys::binding("webhooks", user, "secret")
}

/// The webhook's secret in the clear, for signing.
pub fn secret_of(data_key: &DataKey, webhook: &Webhook) -> Option<String> {
    let plain = data_key.decrypt(&webhook.sealed_secret, &binding(webhook.user_id))?;
    String::from_utf8(plain).ok()
}

/// Removes every webhook of `user` and their subscription list (an account's deletion; their
/// deliveries go with `outbox::remove_user`). Returns how many rows went.
pub(crate) fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    let mut removed = 0;
    for (id, w) in tx.global().list::<Webhook>()? {
        if w.user_id == user {
            tx.global().delete::<Webhook>(id)?;
            removed += 1;
        }
    }
    removed += u64::from(tx.global().map_remove(SUBS_TABLE, &user.to_string())?);
    forget_subscriptions(tx, user)?;
    Ok(removed)
}

/// The envelope's JSON text.
pub fn envelope(key: &str, event: &str, at: Timestamp, data: Value) -> String {
    json!({ "id": key, "event": event, "timestamp": at, "data": data }).to_string()
}

/// Queues `event` with `data` to each of `user`'s active webhooks subscribed to it, inside `tx`
/// (the cause's transaction): one event naming them (`outbox::gather_event`), expanded into
/// the envelope and a delivery per webhook by the worker ([`expand`]). Returns how many
/// deliveries were queued.
pub fn publish(tx: &Tx<'_>, user: u64, event: &str, data: &dyn Fn() -> Value) -> mycorrhizal_engine::Result<usize> {
    record(tx, user, event, &|| serde_json::to_vec(&data()).unwrap_or_default(), None)
}

/// [`publish`] with `data` as JSON text, and for a record change its (kind, id, revision).
fn record(
    tx: &Tx<'_>,
    user: u64,
    event: &str,
    data: &dyn Fn() -> Vec<u8>,
    change: Option<(String, u64, u64)>,
) -> mycorrhizal_engine::Result<usize> {
    let webhooks = subscribed(tx, user, event)?;
    if webhooks.is_empty() {
        return Ok(0);
    }
    let queued = webhooks.len();
    let event = outbox::Event {
        user_id: user,
        event: event.to_string(),
        // Given when the event's row is written.
        key: String::new(),
        at: tx.now(),
        correlation_id: tx.origin().map(|o| o.to_string()),
        webhooks,
        data: data(),
        record: change,
    };
    outbox::gather_event(tx, event)?;
    Ok(queued)
}

/// `user`'s active webhooks subscribed to `event`, in id order: their subscription list read
/// once per transaction (it is forgotten when the transaction rewrites it).
fn subscribed(tx: &Tx<'_>, user: u64, event: &str) -> mycorrhizal_engine::Result<Vec<u64>> {
    let pick = |hooks: &[(u64, Vec<String>)]| -> Vec<u64> {
        hooks.iter().filter(|(_, events)| events.iter().any(|e| e == event)).map(|(id, _)| *id).collect()
    };
    if let Some(webhooks) = tx.gathered(|g: &mut outbox::Gathering| g.subscriptions.get(&user).map(|h| pick(h)))? {
        return Ok(webhooks);
    }
    let hooks = match tx.global().map_get(SUBS_TABLE, &user.to_string())? {
        Some(bytes) => mycorrhizal_engine::codec::decode::<Subscriptions>(SUBS_TABLE, &bytes)?.hooks,
        None => Vec::new(),
    };
    let webhooks = pick(&hooks);
    tx.gathered(|g: &mut outbox::Gathering| g.subscriptions.insert(user, hooks))?;
    Ok(webhooks)
}

/// Forgets `user`'s subscription list as `tx` read it (it was just rewritten or removed).
pub(super) fn forget_subscriptions(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<()> {
    tx.gathered(|g: &mut outbox::Gathering| {
        g.subscriptions.remove(&user);
    })
}

/// The envelope JSON text of a recorded event.
fn event_envelope(event: &outbox::Event) -> String {
    let data = match (&event.record, event.data.first()) {
        (Some((kind, _, _)), Some(&mycorrhizal_engine::codec::FORMAT_V1)) => {
            crate::crm::kinds::body_json(kind, &event.data).unwrap_or(Value::Null)
        }
        _ => serde_json::from_slice(&event.data).unwrap_or(Value::Null),
    };
    let data = match &event.record {
        Some((kind, id, revision)) => entity(kind, *id, *revision, data),
        None => data,
    };
    envelope(&event.key, &event.event, event.at, data)
}

/// Expands recorded events into their deliveries, oldest first, at most `limit` of them in one
/// write (the envelopes' JSON is built before, outside the writer). Returns how many were
/// expanded. Idempotent: an event is removed in the write that queues its deliveries.
pub async fn expand(engine: &mycorrhizal_engine::Engine, limit: usize) -> mycorrhizal_engine::Result<usize> {
    let reader = engine.clone();
    let built =
        tokio::task::spawn_blocking(move || -> mycorrhizal_engine::Result<Vec<(String, outbox::Event, String)>> {
            let events = outbox::pending_events(&reader.global()?, limit)?;
            Ok(events
                .into_iter()
                .map(|(key, event)| {
                    let body = event_envelope(&event);
                    (key, event, body)
                })
                .collect())
        })
        .await
        .map_err(|e| mycorrhizal_engine::Error::CommitFailed(e.to_string()))??;
    if built.is_empty() {
        return Ok(0);
    }
    engine.write_async(move |tx| outbox::expand_in(tx, &built)).await
}

/// Expands every recorded event (in writes of at most [`EXPAND_BATCH`]), so what is queued is
/// all in delivery rows: before the delivery log is read, and before a test steps the worker.
pub async fn expand_all(engine: &mycorrhizal_engine::Engine) -> mycorrhizal_engine::Result<usize> {
    let mut total = 0;
    loop {
        let n = expand(engine, EXPAND_BATCH).await?;
        total += n;
        if n == 0 {
            return Ok(total);
        }
    }
}

/// Events one expansion write takes at most.
pub const EXPAND_BATCH: usize = 1000;

/// Queues the instance event `event` (one of [`ADMIN_EVENTS`]) with `data` to the active webhooks
/// subscribed to it of every account that is an admin now, inside `tx`. Returns how many
/// deliveries were queued.
pub fn publish_to_admins(tx: &Tx<'_>, event: &str, data: &dyn Fn() -> Value) -> mycorrhizal_engine::Result<usize> {
    let mut queued = 0;
    for (id, account) in tx.global().list::<crate::auth::records::Account>()? {
        if account.is_admin {
            queued += publish(tx, id, event, data)?;
        }
    }
    Ok(queued)
}

/// Queues `event` with `data` (one envelope, idempotency key `key`) to every active webhook
/// subscribed to it of every account that is an admin now, inside `tx`, as deliveries queued now. Returns their ids (to
/// follow their delivery).
pub fn broadcast(tx: &Tx<'_>, event: &str, key: &str, data: &Value) -> mycorrhizal_engine::Result<Vec<u64>> {
    let mut ids = Vec::new();
    for (user, account) in tx.global().list::<crate::auth::records::Account>()? {
        if !account.is_admin {
            continue;
        }
        let webhooks = subscribed(tx, user, event)?;
        if !webhooks.is_empty() {
            let body = envelope(key, event, tx.now(), data.clone());
            ids.extend(outbox::enqueue_event(tx, user, &webhooks, event, key, body)?);
        }
    }
    Ok(ids)
}

/// A record's stored body as the `data` of its event: the row's fields, with the contact's
/// JSON-text members (`card`, `crm`, `passthrough`) as objects, plus `id`, `kind`, `revision`.
fn entity(kind: &str, id: u64, revision: u64, body: Value) -> Value {
    let mut data = match body {
        Value::Object(map) => map,
        other => {
            let mut map = serde_json::Map::new();
            map.insert("value".into(), other);
            map
        }
    };
    for key in ["card", "crm", "passthrough"] {
        if let Some(Value::String(text)) = data.get(key)
            && let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(text)
        {
            data.insert(key.into(), parsed);
        }
    }
    data.insert("id".into(), json!(id));
    data.insert("kind".into(), json!(kind));
    data.insert("revision".into(), json!(revision));
    Value::Object(data)
}

/// The engine's change hook: queues webhook deliveries in the change's transaction, carries the
/// request's correlation id into it, and wakes the outbox worker after commits that queued.
pub struct OutboxHook {
    users: RwLock<HashSet<u64>>,
    signal: Arc<Signal>,
}

impl OutboxHook {
    pub fn new(users: HashSet<u64>, signal: Arc<Signal>) -> OutboxHook {
        OutboxHook { users: RwLock::new(users), signal }
    }

    /// `user` may have webhooks from now on.
    pub fn subscribe(&self, user: u64) {
        self.users.write().unwrap_or_else(|p| p.into_inner()).insert(user);
    }

    fn watched(&self, user: u64) -> bool {
        self.users.read().unwrap_or_else(|p| p.into_inner()).contains(&user)
    }

    /// The users with a webhook, read at start.
    pub fn load(engine: &mycorrhizal_engine::Engine) -> mycorrhizal_engine::Result<HashSet<u64>> {
        Ok(engine.global()?.list::<Webhook>()?.into_iter().map(|(_, w)| w.user_id).collect())
    }

    pub fn signal(&self) -> &Arc<Signal> {
        &self.signal
    }
}

impl ChangeHook for OutboxHook {
    fn changed(
        &self,
        tx: &Tx<'_>,
        user: UserId,
        change: &Change,
        body: &dyn Fn() -> Vec<u8>,
    ) -> mycorrhizal_engine::Result<()> {
        if !self.watched(user.0) {
            return Ok(());
        }
        let op = match change.op {
            Op::Created => "created",
            Op::Updated => "updated",
            Op::Deleted => "deleted",
        };
        let event = format!("{}.{op}", change.kind);
        if record(tx, user.0, &event, body, Some((change.kind.clone(), change.id, change.revision)))? > 0 {
            self.signal.mark();
        }
        Ok(())
    }

    fn origin(&self) -> Option<Arc<str>> {
        crate::ops::correlation::current().map(Arc::from)
    }

    fn committed(&self) {
        self.signal.committed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_over_timestamp_dot_body() {
        // Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        let sig = signature("whsec_test", 1_700_000_000, r#"{"a":1}"#);
        assert_eq!(sig, "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789");
        assert_ne!(sig, signature("whsec_test", 1_700_000_000, r#"{"a":2}"#));
        assert_ne!(sig, signature("whsec_other", 1_700_000_000, r#"{"a":1}"#));
    }

    #[test]
    fn every_record_kind_has_its_three_events() {
        let names = event_names();
        for e in
            ["contact.created", "contact.deleted", "reminder.deleted", "test", "reminder.triggered", "cadence.overdue"]
        {
            assert!(names.contains(&e.to_string()), "{e}");
        }
    }
}

/// Queues the instance event `event` once per payload in `each` to the admins' webhooks
/// subscribed to it, through the outbox (one write), and wakes the delivery worker. Best-effort:
/// a failure to queue is logged, never returned (an alert must not change its cause's outcome).
pub async fn alert_admins(
    engine: &mycorrhizal_engine::Engine,
    outbox: &crate::outbox::Outbox,
    event: &'static str,
    each: Vec<Value>,
) {
    let queued = engine
        .write_async(move |tx| {
            let mut queued = 0;
            for data in &each {
                queued += publish_to_admins(tx, event, &|| data.clone())?;
            }
            Ok(queued)
        })
        .await;
    match queued {
        Ok(0) => {}
        Ok(_) => outbox.signal.wake(),
        Err(e) => tracing::warn!(event = "webhook_not_queued", component = "backup", webhook_event = event, error = %e),
    }
}
