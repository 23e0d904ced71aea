//! The notification service: what notify's operations use besides their arguments, one value
//! that `state.rs` assembles and every front door or job hands over.

use std::sync::Arc;

use mycorrhizal_engine::Engine;

use super::{email, fcm_client, webhooks};
use crate::outbox;

/// What notify's operations use, assembled once by `state.rs`: the engine, the data key that
/// seals channel tokens and message texts, the features that guard destinations, the server's
/// time zone (the digest's day), the mail transport, mobile push, the shared HTTP client, the
/// outbox's delivery side and the engine's change hook (webhook subscriptions).
#[derive(Clone)]
pub struct Notifier {
    pub engine: Engine,
    pub data_key: crate::keys::DataKey,
    pub features: crate::config::Features,
    pub reminder_timezone: jiff::tz::TimeZone,
    pub mailer: email::Mailer,
    pub fcm: Option<Arc<fcm_client::FcmClient>>,
    pub http: reqwest::Client,
    pub outbox: outbox::Outbox,
    pub hook: Arc<webhooks::OutboxHook>,
}
