//! The existing clients' one-form view of a user's notification channels
//! (`/notifications/config`): the ntfy topic and the Gotify server with on/off switches, and
//! whether push is on, over this server's channels (`channels`). A channel is on when it is
//! configured: switching one off removes it (this server keeps no switched-off channel), and
//! a form that leaves a channel's address empty leaves it as it is.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Notifier;
use super::channels::{self, Channel, GotifyInput, NtfyInput};
use crate::crm::{Error, Result};

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientConfig {
    pub ntfy_url: String,
    pub ntfy_topic: String,
    pub gotify_url: String,
    /// Whether a Gotify token is stored (it is never shown).
    pub gotify_has_token: bool,
    pub notify_ntfy: bool,
    pub notify_gotify: bool,
    /// A browser or a phone is registered for push.
    pub notify_push: bool,
    /// The server's VAPID key, for `pushManager.subscribe`.
    pub vapid_public_key: String,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ClientConfigInput {
    pub ntfy_url: Option<String>,
    pub ntfy_topic: Option<String>,
    pub gotify_url: Option<String>,
    /// Empty or absent keeps the stored token.
    pub gotify_token: Option<String>,
    pub notify_ntfy: Option<bool>,
    pub notify_gotify: Option<bool>,
    /// Push is on while a browser or phone is registered; this switch is accepted and ignored.
    pub notify_push: Option<bool>,
}

/// `{channel}`: `ntfy`, `gotify` or `push`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ClientTestInput {
    pub channel: String,
}

/// `{ok}`, or `{ok: false, error}` saying why nothing could be sent.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientTestOutcome {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The user's channels in the clients' form.
pub async fn config(notifier: &Notifier, user: u64) -> Result<ClientConfig> {
    let s = notifier.clone();
    let view = crate::crm::blocking(&notifier.engine, move |_| channels::list(&s, user)).await??;
    let key = super::webpush::public_key(notifier).await?.public_key;
    Ok(ClientConfig {
        ntfy_url: view.ntfy.as_ref().map(|n| n.url.clone()).unwrap_or_default(),
        ntfy_topic: view.ntfy.as_ref().map(|n| n.topic.clone()).unwrap_or_default(),
        gotify_url: view.gotify.as_ref().map(|g| g.url.clone()).unwrap_or_default(),
        gotify_has_token: view.gotify.as_ref().is_some_and(|g| g.token_set),
        notify_ntfy: view.ntfy.is_some(),
        notify_gotify: view.gotify.is_some(),
        notify_push: view.webpush.subscriptions > 0 || view.fcm.devices > 0,
        vapid_public_key: key,
    })
}

fn given(text: &Option<String>) -> Option<String> {
    text.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(|t| t.trim_end_matches('/').to_string())
}

/// Applies the clients' form: a switch turned off removes that channel; an address given (with
/// the switch not off) sets it, checked as the channel's own route checks it.
pub async fn set_config(notifier: &Notifier, user: u64, input: ClientConfigInput) -> Result<ClientConfig> {
    if input.notify_ntfy == Some(false) {
        off(notifier, user, Channel::Ntfy).await?;
    } else if let Some(url) = given(&input.ntfy_url) {
        let topic =
            given(&input.ntfy_topic).ok_or_else(|| Error::invalid("ntfy_topic", "is required with ntfy_url"))?;
        channels::set_ntfy(notifier, user, NtfyInput { url, topic, token: None })
            .await
            .map_err(|e| renamed(e, "ntfy_"))?;
    }
    if input.notify_gotify == Some(false) {
        off(notifier, user, Channel::Gotify).await?;
    } else if let Some(url) = given(&input.gotify_url) {
        let token = given(&input.gotify_token);
        channels::set_gotify(notifier, user, GotifyInput { url, token }).await.map_err(|e| renamed(e, "gotify_"))?;
    }
    config(notifier, user).await
}

/// Removes a channel; one not set up is off already.
async fn off(notifier: &Notifier, user: u64, channel: Channel) -> Result<()> {
    match channels::clear(notifier, user, channel).await {
        Ok(_) | Err(Error::NotFound) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A channel route's refusal with its field named as the form names it (`url` → `ntfy_url`).
fn renamed(e: Error, prefix: &str) -> Error {
    match e {
        Error::Invalid { field, reason } => Error::Invalid { field: format!("{prefix}{field}"), reason },
        other => other,
    }
}

/// Queues a test notification on `channel` (`push`: every browser and phone).
pub async fn test(notifier: &Notifier, user: u64, channel: &str) -> Result<ClientTestOutcome> {
    let channels_of: &[Channel] = match channel.trim() {
        "ntfy" => &[Channel::Ntfy],
        "gotify" => &[Channel::Gotify],
        "push" => &[Channel::Webpush, Channel::Fcm],
        _ => return Err(Error::invalid("channel", "must be ntfy, gotify or push")),
    };
    let mut last = None;
    for c in channels_of {
        match channels::send_test(notifier, user, *c).await {
            Ok(_) => return Ok(ClientTestOutcome { ok: true, error: None }),
            Err(e @ (Error::NotFound | Error::Conflict(_) | Error::Invalid { .. })) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    let why = match last {
        Some(Error::NotFound) | None => format!("{channel} is not set up: save it first"),
        Some(e) => e.to_string(),
    };
    Ok(ClientTestOutcome { ok: false, error: Some(why) })
}
