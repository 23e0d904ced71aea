//! Messages that leave the server, all through the durable outbox (`outbox`, delivered by
//! `worker`): transactional email, signed webhook deliveries (`webhooks`), one attempt of each (`deliver`), and a user's
//! notification channels (`channels`), which every notification is fanned out to, the Web Push
//! pieces (`webpush`: VAPID key, browser subscriptions, RFC 8291 encryption), mobile push
//! (`fcm`: the service account's access token, FCM HTTP v1, devices), and the daily
//! digest (`digest`), the notification the scheduler sends each day; each channel's health from
//! its delivery events (`health`).
//!
//! [`remove_user`] is what an account's deletion removes on this side, in the deletion's own
//! transaction.

pub mod alerts;
pub mod channels;
pub mod client_config;
pub mod deliver;
pub mod digest;
pub mod email;
pub mod fcm;
pub mod fcm_client;
pub mod health;
mod notifier;
pub mod webhook_ops;
pub mod webhooks;
pub mod webpush;
pub mod worker;

use mycorrhizal_engine::Tx;

pub use notifier::Notifier;

/// Removes everything of `user`'s on the notification side inside `tx` (the account deletion's
/// transaction): the channel configuration with its sealed tokens, the Web Push browsers, the
/// FCM devices, the digest's day marker, the webhooks and their subscription list, and every outbox message of
/// the user (pending ones are then never attempted; finished ones hold copies of the user's
/// records). Returns how many rows went.
pub fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    let mut removed = channels::remove_user(tx, user)?;
    removed += webpush::remove_user(tx, user)?;
    removed += fcm::remove_user(tx, user)?;
    removed += digest::remove_user(tx, user)?;
    removed += webhooks::remove_user(tx, user)?;
    removed += crate::outbox::remove_user(tx, user)?;
    Ok(removed)
}
