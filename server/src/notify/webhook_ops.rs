//! The webhook operations a front door calls: create (the secret shown once), list, get, update,
//! delete, rotate the secret, send a test event, the delivery log and redelivery. The records,
//! the signature and the change hook are `webhooks`.

use mycorrhizal_engine::Tx;
use serde::Serialize;
use serde_json::json;

use super::notifier::Notifier;
use super::webhooks::{
    ADMIN_EVENTS, ALERT_EVENTS, DeliveryList, DeliveryView, EventList, MAX_WEBHOOKS, SUBS_TABLE, Subscriptions,
    Webhook, WebhookInput, WebhookList, WebhookView, WebhookWithSecret, binding, envelope, event_names,
};
use crate::auth::records::Account;
use crate::crm::{Error, Result};
use crate::outbox::{self, Message, Target};

fn new_secret() -> String {
    format!("whsec_{}", crate::auth::records::random_token(32))
}

async fn check_url(notifier: &Notifier, url: &str) -> Result<String> {
    if url.len() > 2000 || !crate::outbound::documented_shape(url, true) {
        return Err(Error::invalid("url", crate::outbound::SHAPE_REFUSED));
    }
    crate::outbound::check(url, notifier.features.webhook_block_private_urls)
        .await
        .map_err(|reason| Error::invalid("url", reason))?;
    Ok(url.to_string())
}

/// The events a webhook of `user` may subscribe to, deduplicated; the instance events
/// ([`ADMIN_EVENTS`], [`ALERT_EVENTS`]) only for an admin.
fn check_events(notifier: &Notifier, user: u64, events: &[String]) -> Result<Vec<String>> {
    let known = event_names();
    if events.is_empty() {
        return Err(Error::invalid("events", "must name at least one event"));
    }
    let mut admin = None;
    let mut out: Vec<String> = Vec::new();
    for e in events {
        if !known.contains(e) {
            return Err(Error::invalid("events", format!("{e:?} is not an event (see GET /webhooks/events)")));
        }
        if ADMIN_EVENTS.contains(&e.as_str()) || ALERT_EVENTS.contains(&e.as_str()) {
            let is_admin = match admin {
                Some(is_admin) => is_admin,
                None => *admin.insert(is_admin_account(notifier, user)?),
            };
            if !is_admin {
                return Err(Error::invalid(
                    "events",
                    format!("{e:?} is an instance event, for administrators' webhooks only"),
                ));
            }
        }
        if !out.contains(e) {
            out.push(e.clone());
        }
    }
    Ok(out)
}

fn is_admin_account(notifier: &Notifier, user: u64) -> Result<bool> {
    match notifier.engine.global()?.get::<Account>(user) {
        Ok(account) => Ok(account.is_admin),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn check_description(description: Option<&str>) -> Result<String> {
    let d = description.unwrap_or("").trim();
    if d.chars().count() > 200 {
        return Err(Error::invalid("description", "must be at most 200 characters"));
    }
    Ok(d.to_string())
}

/// Rewrites `user`'s subscription list from their webhooks, inside `tx`.
fn write_subscriptions(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<()> {
    let hooks = tx
        .global()
        .list::<Webhook>()?
        .into_iter()
        .filter(|(_, w)| w.user_id == user && w.active)
        .map(|(id, w)| (id, w.events))
        .collect();
    let subs = Subscriptions { hooks };
    tx.global().map_put(SUBS_TABLE, &user.to_string(), &postcard_bytes(&subs))?;
    super::webhooks::forget_subscriptions(tx, user)
}

fn postcard_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    mycorrhizal_engine::codec::encode(value)
}

fn owned(tx: &Tx<'_>, user: u64, id: u64) -> mycorrhizal_engine::Result<Option<Webhook>> {
    match tx.global().get::<Webhook>(id) {
        Ok(w) if w.user_id == user => Ok(Some(w)),
        Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every event a webhook may subscribe to.
pub fn events() -> EventList {
    EventList { events: event_names() }
}

/// Creates a webhook for `user`; the answer shows the secret, once.
pub async fn create(notifier: &Notifier, user: u64, input: WebhookInput) -> Result<WebhookWithSecret> {
    let url = check_url(notifier, input.url.as_deref().ok_or_else(|| Error::invalid("url", "is required"))?).await?;
    let events =
        check_events(notifier, user, input.events.as_deref().ok_or_else(|| Error::invalid("events", "is required"))?)?;
    let description = check_description(input.description.as_deref())?;
    let secret = new_secret();
    let sealed_secret = notifier.data_key.encrypt(secret.as_bytes(), &binding(user)).map_err(Error::internal)?;
    // Told before the write: the set may hold a user without webhooks, never the reverse.
    notifier.hook.subscribe(user);
    let active = input.active.unwrap_or(true);
    let created = notifier
        .engine
        .write_async(move |tx| {
            let count = tx.global().list::<Webhook>()?.iter().filter(|(_, w)| w.user_id == user).count();
            if count >= MAX_WEBHOOKS {
                return Ok(Err(Error::Conflict(format!("at most {MAX_WEBHOOKS} webhooks per user"))));
            }
            let now = tx.now();
            let webhook = Webhook {
                user_id: user,
                url: url.clone(),
                events: events.clone(),
                description: description.clone(),
                active,
                sealed_secret: sealed_secret.clone(),
                created_at: now,
                updated_at: now,
            };
            let id = tx.global().insert(&webhook)?;
            write_subscriptions(tx, user)?;
            Ok(Ok(WebhookView::of(id, &webhook)))
        })
        .await??;
    Ok(WebhookWithSecret { webhook: created, secret })
}

pub fn list(notifier: &Notifier, user: u64) -> Result<WebhookList> {
    let rows = notifier.engine.global()?.list::<Webhook>()?;
    let webhooks = rows.iter().filter(|(_, w)| w.user_id == user).map(|(id, w)| WebhookView::of(*id, w)).collect();
    Ok(WebhookList { webhooks })
}

pub fn get(notifier: &Notifier, user: u64, id: u64) -> Result<WebhookView> {
    match notifier.engine.global()?.get::<Webhook>(id) {
        Ok(w) if w.user_id == user => Ok(WebhookView::of(id, &w)),
        Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => Err(Error::NotFound),
        Err(e) => Err(e.into()),
    }
}

/// Changes the named fields of the caller's webhook `id`.
pub async fn update(notifier: &Notifier, user: u64, id: u64, input: WebhookInput) -> Result<WebhookView> {
    let url = match input.url.as_deref() {
        Some(url) => Some(check_url(notifier, url).await?),
        None => None,
    };
    let events = input.events.as_deref().map(|events| check_events(notifier, user, events)).transpose()?;
    let description = input.description.as_deref().map(|d| check_description(Some(d))).transpose()?;
    let active = input.active;
    notifier
        .engine
        .write_async(move |tx| {
            let Some(mut w) = owned(tx, user, id)? else { return Ok(Err(Error::NotFound)) };
            if let Some(url) = &url {
                w.url = url.clone();
            }
            if let Some(events) = &events {
                w.events = events.clone();
            }
            if let Some(d) = &description {
                w.description = d.clone();
            }
            if let Some(active) = active {
                w.active = active;
            }
            w.updated_at = tx.now();
            tx.global().put(id, &w)?;
            write_subscriptions(tx, user)?;
            Ok(Ok(WebhookView::of(id, &w)))
        })
        .await?
}

/// Deletes the caller's webhook `id`; its pending deliveries then fail ("the webhook was
/// deleted"), its log goes with retention.
pub async fn delete(notifier: &Notifier, user: u64, id: u64) -> Result<()> {
    notifier
        .engine
        .write_async(move |tx| {
            if owned(tx, user, id)?.is_none() {
                return Ok(Err(Error::NotFound));
            }
            tx.global().delete::<Webhook>(id)?;
            write_subscriptions(tx, user)?;
            Ok(Ok(()))
        })
        .await?
}

/// A new secret for webhook `id`, shown once; the old one stops signing at once.
pub async fn rotate_secret(notifier: &Notifier, user: u64, id: u64) -> Result<WebhookWithSecret> {
    let secret = new_secret();
    let sealed = notifier.data_key.encrypt(secret.as_bytes(), &binding(user)).map_err(Error::internal)?;
    let view = notifier
        .engine
        .write_async(move |tx| {
            let Some(mut w) = owned(tx, user, id)? else { return Ok(Err(Error::NotFound)) };
            w.sealed_secret = sealed.clone();
            w.updated_at = tx.now();
            tx.global().put(id, &w)?;
            Ok(Ok(WebhookView::of(id, &w)))
        })
        .await??;
    Ok(WebhookWithSecret { webhook: view, secret })
}

/// Queues a `test` event to webhook `id` (whatever it subscribes to).
pub async fn send_test(notifier: &Notifier, user: u64, id: u64) -> Result<DeliveryView> {
    // Events recorded before it go first in the webhook's lane: expanded before it is queued.
    super::webhooks::expand_all(&notifier.engine).await?;
    let delivery = notifier
        .engine
        .write_async(move |tx| {
            if owned(tx, user, id)?.is_none() {
                return Ok(Err(Error::NotFound));
            }
            let key = uuid::Uuid::new_v4().to_string();
            let body = envelope(&key, "test", tx.now(), json!({ "message": "This is a test delivery." }));
            let queued = outbox::enqueue_event(tx, user, &[id], "test", &key, body)?;
            let [mid] = queued[..] else { return Ok(Err(Error::NotFound)) };
            let m: Message = tx.global().get(mid)?;
            Ok(DeliveryView::of(mid, &m).ok_or(Error::NotFound))
        })
        .await??;
    notifier.outbox.signal.wake();
    Ok(delivery)
}

/// The delivery log of the caller's webhook `id`, newest first, at most `limit`. Events recorded
/// but not yet expanded into deliveries by the worker are expanded first, so the log shows every
/// delivery queued so far, each with its real id (redeliverable once finished).
pub async fn deliveries(notifier: &Notifier, user: u64, id: u64, limit: usize) -> Result<DeliveryList> {
    super::webhooks::expand_all(&notifier.engine).await?;
    let s = notifier.clone();
    crate::crm::blocking(&notifier.engine, move |_| delivery_log(&s, user, id, limit)).await?
}

fn delivery_log(notifier: &Notifier, user: u64, id: u64, limit: usize) -> Result<DeliveryList> {
    get(notifier, user, id)?;
    let mut deliveries: Vec<DeliveryView> = notifier
        .engine
        .global()?
        .list::<Message>()?
        .iter()
        .filter(|(_, m)| m.user_id == user && m.target.webhook().is_some_and(|(webhook_id, _)| webhook_id == id))
        .filter_map(|(mid, m)| DeliveryView::of(*mid, m))
        .collect();
    deliveries.reverse();
    deliveries.truncate(limit);
    Ok(DeliveryList { deliveries })
}

/// Delivers delivery `delivery` of webhook `id` again, as a new delivery with the same envelope
/// (same event id: a receiver that saw it may recognise it).
pub async fn redeliver(notifier: &Notifier, user: u64, id: u64, delivery: u64) -> Result<DeliveryView> {
    let view = notifier
        .engine
        .write_async(move |tx| {
            if owned(tx, user, id)?.is_none() {
                return Ok(Err(Error::NotFound));
            }
            let old: Message = match tx.global().get(delivery) {
                Ok(m) => m,
                Err(mycorrhizal_engine::Error::NotFound) => return Ok(Err(Error::NotFound)),
                Err(e) => return Err(e),
            };
            let Some((webhook_id, _)) = old.target.webhook() else { return Ok(Err(Error::NotFound)) };
            if old.user_id != user || webhook_id != id {
                return Ok(Err(Error::NotFound));
            }
            // The same envelope: one more delivery names the stored one (or, for a row that
            // holds its own, a copy of it).
            if let Some(envelope) = old.target.envelope() {
                outbox::share_envelope(tx, envelope)?;
            }
            let target = match &old.target {
                Target::WebhookEvent { event, envelope, .. } => {
                    Target::WebhookEvent { webhook_id: id, event: event.clone(), envelope: *envelope }
                }
                Target::Webhook { event, body, .. } => {
                    Target::Webhook { webhook_id: id, event: event.clone(), body: body.clone() }
                }
                _ => return Ok(Err(Error::NotFound)),
            };
            let mid = outbox::enqueue(tx, user, target, Some(old.key.clone()))?;
            let m: Message = tx.global().get(mid)?;
            Ok(DeliveryView::of(mid, &m).ok_or(Error::NotFound))
        })
        .await??;
    notifier.outbox.signal.wake();
    Ok(view)
}
