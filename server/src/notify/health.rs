//! Each notification channel's health, derived on read from the `notification_sent` /
//! `notification_failed` system events (the channel name is their only detail), as the spec's
//! subsystem health folds them: a success resets the streak, each failure adds one to it, and
//! the first failure after a success opens the incident.
//!
//! A message is one event when it is finished: delivered, or failed for good (a permanent answer,
//! or its retries spent). Attempts still being retried are not failures yet.
//!
//! What it does not do: decide what a streak means to an operator (the diagnostics sweep and its
//! threshold, `ALERT_NOTIFY_FAILURE_THRESHOLD`), nor say anything of a destination: counts and
//! instants only, never a URL, a token or an error text.

use jiff::Timestamp;
use mycorrhizal_engine::Engine;

use super::channels::ChannelConfig;

/// How many of the newest notification events a sweep reads.
const LOOK_BACK: usize = 2000;

/// One channel's recent delivery outcomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelHealth {
    /// `email`, `ntfy`, `gotify`, `webpush` or `fcm`.
    pub channel: &'static str,
    /// Failures since the last success (all of them when there was none).
    pub consecutive_failures: u64,
    pub last_success_at: Option<Timestamp>,
    pub last_failure_at: Option<Timestamp>,
    /// The first failure of the current streak.
    pub incident_first_failure_at: Option<Timestamp>,
}

impl ChannelHealth {
    fn new(channel: &'static str) -> ChannelHealth {
        ChannelHealth {
            channel,
            consecutive_failures: 0,
            last_success_at: None,
            last_failure_at: None,
            incident_first_failure_at: None,
        }
    }
}

/// The channels this instance uses: email when it has a mail provider, FCM when it has a
/// service account, and each user-configured channel some user has set up.
pub fn in_use(engine: &Engine, mail: bool, fcm: bool) -> mycorrhizal_engine::Result<Vec<&'static str>> {
    let configs = engine.global()?.list::<ChannelConfig>()?;
    let mut channels = Vec::new();
    if mail {
        channels.push("email");
    }
    if configs.iter().any(|(_, c)| c.ntfy.is_some()) {
        channels.push("ntfy");
    }
    if configs.iter().any(|(_, c)| c.gotify.is_some()) {
        channels.push("gotify");
    }
    if configs.iter().any(|(_, c)| !c.push.is_empty()) {
        channels.push("webpush");
    }
    if fcm {
        channels.push("fcm");
    }
    Ok(channels)
}

/// The health of each of `channels`, from the newest notification events.
pub fn of(engine: &Engine, channels: &[&'static str]) -> mycorrhizal_engine::Result<Vec<ChannelHealth>> {
    let events = engine
        .system_events(LOOK_BACK, |e| e.event_type == "notification_sent" || e.event_type == "notification_failed")?;
    let mut health: Vec<ChannelHealth> = channels.iter().map(|c| ChannelHealth::new(c)).collect();
    // Newest first: a channel's streak is the failures before (newer than) its last success.
    for event in &events {
        let Some(channel) = event
            .detail
            .as_deref()
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .and_then(|d| d["channel"].as_str().map(str::to_string))
        else {
            continue;
        };
        let Some(h) = health.iter_mut().find(|h| h.channel == channel) else { continue };
        if event.event_type == "notification_sent" {
            h.last_success_at.get_or_insert(event.occurred_at);
        } else {
            h.last_failure_at.get_or_insert(event.occurred_at);
            if h.last_success_at.is_none() {
                h.consecutive_failures += 1;
                h.incident_first_failure_at = Some(event.occurred_at);
            }
        }
    }
    Ok(health)
}
