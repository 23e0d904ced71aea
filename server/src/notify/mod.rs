//! Messages that leave the server, all through the durable outbox (`outbox`, delivered by
//! `worker`): transactional
//! email, signed webhook deliveries (`webhooks`), one attempt of each (`deliver`), and a user's
//! notification channels (`channels`), which every notification is fanned out to, the Web Push
//! pieces (`webpush`: VAPID key, browser subscriptions, RFC 8291 encryption), and the daily
//! digest (`digest`), the notification the scheduler sends each day.

pub mod channels;
pub mod deliver;
pub mod digest;
pub mod email;
pub mod outbox;
pub mod webhook_ops;
pub mod webhooks;
pub mod webpush;
pub mod worker;
