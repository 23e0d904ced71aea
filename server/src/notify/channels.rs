//! A user's notification channels and the one place a notification is fanned out to them.
//!
//! A [`Notification`] (the daily digest, a channel's "send a test", an alert to an admin) is
//! queued by [`fan_out`] inside the transaction of its cause: one outbox message per channel the
//! user has enabled (per registered browser for Web Push), each with the idempotency key
//! `{key}:{channel}` (receivers that honour it drop a repeat). Sending once per cause is the
//! caller's rule, kept in the same transaction.
//!
//! Channels (their names are the `detail` of `notification_sent` / `notification_failed`):
//! - `email`: to the account's address, through the instance's provider. On by default when the
//!   instance has one; the user may turn it off.
//! - `ntfy`: an ntfy-style topic. Delivered as ntfy's JSON publish: a POST of
//!   `{"topic", "title", "message"}` to the server's root URL (ntfy reads a JSON body as the
//!   message itself when it is posted to `{url}/{topic}`), with `Authorization: Bearer <token>`
//!   when a token is set.
//! - `gotify`: a Gotify-style server. A POST of `{"title", "message", "priority"}` to
//!   `{url}/message` with the application token in `X-Gotify-Key`.
//! - `webpush`: every browser the user registered (`super::webpush`).
//! - `fcm`: every mobile device the user registered, when the instance has an FCM service
//!   account (`super::fcm`).
//!
//! Tokens are sealed with the data key and never shown again (a view says only whether one is
//! set). Their destinations go through the private-address guard: at save ([`check_url`]) and at
//! every delivery (the guarded client), when `WEBHOOK_BLOCK_PRIVATE_URLS` is on.
//!
//! This module holds the configuration and its operations; one delivery attempt of each channel
//! is in `super::deliver`.

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalRecord, Tx, global_tables};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::notifier::Notifier;
use crate::auth::records::Account;
use crate::crm::{Error, Result};
use crate::keys::DataKey;
use crate::outbox::{self, Target};

/// What is said to the user, whatever the channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// One line: a mail's subject, a push's title.
    pub subject: String,
    /// Plain text, a few lines.
    pub text: String,
}

/// What sending needs from the instance, taken outside the transaction.
#[derive(Clone)]
pub struct Senders {
    /// Seals message text (it can name the people in the user's life).
    pub data_key: DataKey,
    /// The instance has an email provider (SMTP or the email API).
    pub mail: bool,
    /// The instance has an FCM service account (mobile push).
    pub fcm: bool,
}

impl Senders {
    pub fn of(notifier: &Notifier) -> Senders {
        Senders {
            data_key: notifier.data_key.clone(),
            mail: notifier.mailer.is_configured(),
            fcm: notifier.fcm.is_some(),
        }
    }
}

/// The channels a notification can go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Email,
    Ntfy,
    Gotify,
    Webpush,
    Fcm,
}

impl Channel {
    pub fn name(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Ntfy => "ntfy",
            Channel::Gotify => "gotify",
            Channel::Webpush => "webpush",
            Channel::Fcm => "fcm",
        }
    }
}

/// One user's channel configuration, stored at the user's id.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChannelConfig {
    /// `None`: the default, on when the instance has a mail provider.
    pub email: Option<bool>,
    pub ntfy: Option<TopicChannel>,
    pub gotify: Option<GotifyChannel>,
    /// The ids of the user's Web Push subscriptions (`PushSubscription`).
    pub push: Vec<u64>,
}

impl GlobalRecord for ChannelConfig {
    global_tables!("notify_channels");
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopicChannel {
    /// The server's base URL (`https://ntfy.sh`).
    pub url: String,
    pub topic: String,
    /// The access token sealed with the data key.
    pub sealed_token: Option<Vec<u8>>,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GotifyChannel {
    /// The server's base URL; messages go to `{url}/message`.
    pub url: String,
    /// The application token sealed with the data key.
    pub sealed_token: Vec<u8>,
    pub updated_at: Timestamp,
}

/// One browser's push subscription, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PushSubscription {
    pub user_id: u64,
    pub endpoint: String,
    /// `p256dh` (65 bytes) then `auth` (16 bytes), sealed with the data key.
    pub sealed_keys: Vec<u8>,
    pub created_at: Timestamp,
}

impl GlobalRecord for PushSubscription {
    global_tables!("push_subscriptions");

    fn unique_keys(&self) -> Vec<(&'static str, String)> {
        // The endpoint is a capability: the unique index holds its digest only.
        vec![("endpoint", endpoint_digest(&self.endpoint))]
    }
}

pub(super) fn endpoint_digest(endpoint: &str) -> String {
    hex::encode(Sha256::digest(endpoint.as_bytes()))
}

/// The configuration of `user` (the default when they never saved one).
pub fn config_of(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<ChannelConfig> {
    match tx.global().get::<ChannelConfig>(user) {
        Ok(c) => Ok(c),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(ChannelConfig::default()),
        Err(e) => Err(e),
    }
}

fn read_config(notifier: &Notifier, user: u64) -> Result<ChannelConfig> {
    match notifier.engine.global()?.get::<ChannelConfig>(user) {
        Ok(c) => Ok(c),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(ChannelConfig::default()),
        Err(e) => Err(e.into()),
    }
}

/// Removes `user`'s configuration (an account's deletion). Returns how many rows went.
pub(crate) fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    Ok(u64::from(tx.global().remove::<ChannelConfig>(user)?))
}

/// What a channel token is sealed to.
pub fn token_binding(user: u64, channel: Channel) -> String {
    crate::keys::binding("notify_channels", user, channel.name())
}

// ---------------------------------------------------------------------------------------------
// Views and inputs

/// The email channel as its owner sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EmailView {
    /// The instance has a mail provider; without one nothing can be sent by mail.
    pub available: bool,
    /// Notifications go to the account's address.
    pub enabled: bool,
}

/// The ntfy-style topic as its owner sees it (never the token).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NtfyView {
    pub url: String,
    pub topic: String,
    /// Whether an access token is stored (it is never shown).
    pub token_set: bool,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

/// The Gotify-style server as its owner sees it (never the token).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GotifyView {
    pub url: String,
    /// Always true: a Gotify channel cannot be saved without its application token.
    pub token_set: bool,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebPushView {
    /// Browsers registered for Web Push (see `/notifications/push-subscriptions`).
    pub subscriptions: usize,
}

/// Mobile push through FCM.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FcmView {
    /// The instance has an FCM service account; without one nothing is sent to phones.
    pub available: bool,
    /// Devices registered (see `/notifications/fcm-devices`).
    pub devices: usize,
}

/// Every channel of the caller and its state.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChannelsView {
    pub email: EmailView,
    /// Absent when not configured.
    pub ntfy: Option<NtfyView>,
    /// Absent when not configured.
    pub gotify: Option<GotifyView>,
    pub webpush: WebPushView,
    pub fcm: FcmView,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailInput {
    pub enabled: bool,
}

/// An ntfy-style topic. `token` omitted keeps the stored one while the server stays the same
/// (scheme, host and port); an empty `token` removes it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NtfyInput {
    /// The server's base URL, http or https (`https://ntfy.sh`).
    #[schema(schema_with = crate::outbound::url_schema)]
    pub url: String,
    /// Letters, digits, `_` and `-`, 1 to 64.
    #[schema(pattern = r"^[A-Za-z0-9_-]{1,64}$")]
    pub topic: String,
    /// Access token sent as `Authorization: Bearer`: visible ASCII, at most 512.
    #[schema(pattern = r"^[!-~]{0,512}$")]
    pub token: Option<String>,
}

/// A Gotify-style server. `token` omitted keeps the stored one while the server stays the same.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GotifyInput {
    /// The server's base URL, http or https; messages go to `{url}/message`.
    #[schema(schema_with = crate::outbound::url_schema)]
    pub url: String,
    /// The application token sent as `X-Gotify-Key`: visible ASCII, 1 to 512 (required the
    /// first time and when the server changes).
    #[schema(pattern = r"^[!-~]{1,512}$")]
    pub token: Option<String>,
}

/// The channels a notification was queued for.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Queued {
    /// Channel names, one per queued message (`webpush` once per browser).
    pub queued: Vec<String>,
}

fn view(config: &ChannelConfig, mail: bool, fcm: FcmView) -> ChannelsView {
    ChannelsView {
        fcm,
        email: EmailView { available: mail, enabled: mail && config.email.unwrap_or(true) },
        ntfy: config.ntfy.as_ref().map(|t| NtfyView {
            url: t.url.clone(),
            topic: t.topic.clone(),
            token_set: t.sealed_token.is_some(),
            updated_at: t.updated_at,
        }),
        gotify: config.gotify.as_ref().map(|g| GotifyView {
            url: g.url.clone(),
            token_set: !g.sealed_token.is_empty(),
            updated_at: g.updated_at,
        }),
        webpush: WebPushView { subscriptions: config.push.len() },
    }
}

/// The view of `config` with what the instance offers and `user`'s mobile devices (reads the
/// database: on the blocking pool).
fn view_of(notifier: &Notifier, user: u64, config: &ChannelConfig) -> Result<ChannelsView> {
    let devices = super::fcm::list(notifier, user)?.devices.len();
    Ok(view(config, notifier.mailer.is_configured(), FcmView { available: notifier.fcm.is_some(), devices }))
}

/// [`view_of`] from an async operation.
async fn answer(notifier: &Notifier, user: u64, config: ChannelConfig) -> Result<ChannelsView> {
    let s = notifier.clone();
    crate::crm::blocking(&notifier.engine, move |_| view_of(&s, user, &config)).await?
}

// ---------------------------------------------------------------------------------------------
// Validation

/// Checks a channel's server URL: http(s), at most 2000 characters, and (when
/// `WEBHOOK_BLOCK_PRIVATE_URLS`) not a private or internal destination.
pub async fn check_url(notifier: &Notifier, field: &str, url: &str) -> Result<String> {
    if url.len() > 2000 || !crate::outbound::documented_shape(url, false) {
        return Err(Error::invalid(field, crate::outbound::SHAPE_REFUSED));
    }
    let url = url.trim_end_matches('/');
    let parsed = crate::outbound::check(url, notifier.features.webhook_block_private_urls)
        .await
        .map_err(|reason| Error::invalid(field, reason))?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(Error::invalid(field, "must have no query or fragment"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Error::invalid(field, "must not carry credentials (use the token)"));
    }
    Ok(url.to_string())
}

fn check_topic(topic: &str) -> Result<String> {
    let ok =
        (1..=64).contains(&topic.len()) && topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(Error::invalid("topic", "must be 1 to 64 letters, digits, '_' or '-'"));
    }
    Ok(topic.to_string())
}

/// A token goes into a request header: visible ASCII only.
fn check_token(token: &str, required: bool) -> Result<Option<String>> {
    if token.is_empty() {
        return if required { Err(Error::invalid("token", "is required")) } else { Ok(None) };
    }
    if token.len() > 512 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::invalid("token", "must be at most 512 visible ASCII characters"));
    }
    Ok(Some(token.to_string()))
}

/// Scheme, host and port: a stored token is kept only while they stay the same.
fn origin(url: &str) -> Option<String> {
    reqwest::Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

// ---------------------------------------------------------------------------------------------
// Operations

/// The caller's channels.
pub fn list(notifier: &Notifier, user: u64) -> Result<ChannelsView> {
    view_of(notifier, user, &read_config(notifier, user)?)
}

/// Turns the email channel on or off. Turning it on needs a mail provider.
pub async fn set_email(notifier: &Notifier, user: u64, input: EmailInput) -> Result<ChannelsView> {
    let mail = notifier.mailer.is_configured();
    if input.enabled && !mail {
        return Err(Error::Conflict("this instance has no mail provider, so email cannot be turned on".into()));
    }
    let config = notifier
        .engine
        .write_async(move |tx| {
            let mut c = config_of(tx, user)?;
            c.email = Some(input.enabled);
            tx.global().insert_at(user, &c)?;
            Ok(c)
        })
        .await?;
    answer(notifier, user, config).await
}

/// Sets the ntfy-style topic.
pub async fn set_ntfy(notifier: &Notifier, user: u64, input: NtfyInput) -> Result<ChannelsView> {
    let url = check_url(notifier, "url", &input.url).await?;
    let topic = check_topic(&input.topic)?;
    let token = input.token.as_deref().map(|t| check_token(t, false)).transpose()?;
    let sealed = match &token {
        Some(Some(t)) => Some(
            notifier.data_key.encrypt(t.as_bytes(), &token_binding(user, Channel::Ntfy)).map_err(Error::internal)?,
        ),
        _ => None,
    };
    let config = notifier
        .engine
        .write_async(move |tx| {
            let mut c = config_of(tx, user)?;
            let kept = match (&token, &c.ntfy) {
                // Omitted: keep the stored token while the server is the same.
                (None, Some(old)) if origin(&old.url) == origin(&url) => old.sealed_token.clone(),
                _ => sealed.clone(),
            };
            c.ntfy =
                Some(TopicChannel { url: url.clone(), topic: topic.clone(), sealed_token: kept, updated_at: tx.now() });
            tx.global().insert_at(user, &c)?;
            Ok(c)
        })
        .await?;
    answer(notifier, user, config).await
}

/// Sets the Gotify-style server.
pub async fn set_gotify(notifier: &Notifier, user: u64, input: GotifyInput) -> Result<ChannelsView> {
    let url = check_url(notifier, "url", &input.url).await?;
    let token = input.token.as_deref().map(|t| check_token(t, true)).transpose()?.flatten();
    let sealed = match &token {
        Some(t) => Some(
            notifier.data_key.encrypt(t.as_bytes(), &token_binding(user, Channel::Gotify)).map_err(Error::internal)?,
        ),
        None => None,
    };
    let config = notifier
        .engine
        .write_async(move |tx| {
            let mut c = config_of(tx, user)?;
            let token = match (&sealed, &c.gotify) {
                (Some(s), _) => s.clone(),
                (None, Some(old)) if origin(&old.url) == origin(&url) => old.sealed_token.clone(),
                (None, _) => return Ok(Err(Error::invalid("token", "is required for a new Gotify server"))),
            };
            c.gotify = Some(GotifyChannel { url: url.clone(), sealed_token: token, updated_at: tx.now() });
            tx.global().insert_at(user, &c)?;
            Ok(Ok(c))
        })
        .await??;
    answer(notifier, user, config).await
}

/// Removes a channel's configuration (email: turns it off; Web Push: every browser). Its
/// pending messages then fail ("the channel was removed").
pub async fn clear(notifier: &Notifier, user: u64, channel: Channel) -> Result<ChannelsView> {
    let config = notifier
        .engine
        .write_async(move |tx| {
            let mut c = config_of(tx, user)?;
            let had = match channel {
                Channel::Email => {
                    c.email = Some(false);
                    true
                }
                Channel::Ntfy => c.ntfy.take().is_some(),
                Channel::Gotify => c.gotify.take().is_some(),
                Channel::Fcm => super::fcm::remove_user(tx, user)? > 0,
                Channel::Webpush => {
                    let ids = std::mem::take(&mut c.push);
                    for id in &ids {
                        tx.global().remove::<PushSubscription>(*id)?;
                    }
                    !ids.is_empty()
                }
            };
            if !had {
                return Ok(Err(Error::NotFound));
            }
            tx.global().insert_at(user, &c)?;
            Ok(Ok(c))
        })
        .await??;
    answer(notifier, user, config).await
}

/// Queues a test notification to one of the caller's channels (404 when it is not set up).
pub async fn send_test(notifier: &Notifier, user: u64, channel: Channel) -> Result<Queued> {
    let senders = Senders::of(notifier);
    let note = Notification {
        subject: "Mycorrhizal: test notification".into(),
        text: format!("This is a test of your {} notifications. If you can read it, they reach you.", channel.name()),
    };
    let queued = notifier
        .engine
        .write_async(move |tx| {
            let key = format!("test:{}", uuid::Uuid::new_v4());
            let queued = queue(tx, &senders, user, &note, &key, Some(channel))?;
            if queued.is_empty() {
                return Ok(Err(Error::NotFound));
            }
            Ok(Ok(queued))
        })
        .await??;
    notifier.outbox.signal.wake();
    Ok(Queued { queued: queued.iter().map(|(c, _)| c.to_string()).collect() })
}

/// Queues `notification` for every channel `user` has enabled, in `tx`. `key` names the cause
/// (e.g. `digest:<user>:<date>`). Returns the names of the channels it was queued for (`webpush`
/// once per browser).
pub fn fan_out(
    tx: &Tx<'_>,
    senders: &Senders,
    user: u64,
    notification: &Notification,
    key: &str,
) -> mycorrhizal_engine::Result<Vec<&'static str>> {
    Ok(queue(tx, senders, user, notification, key, None)?.into_iter().map(|(name, _)| name).collect())
}

/// [`fan_out`], answering the queued messages' ids (to follow their delivery).
pub fn fan_out_ids(
    tx: &Tx<'_>,
    senders: &Senders,
    user: u64,
    notification: &Notification,
    key: &str,
) -> mycorrhizal_engine::Result<Vec<u64>> {
    Ok(queue(tx, senders, user, notification, key, None)?.into_iter().map(|(_, id)| id).collect())
}

fn queue(
    tx: &Tx<'_>,
    senders: &Senders,
    user: u64,
    notification: &Notification,
    key: &str,
    only: Option<Channel>,
) -> mycorrhizal_engine::Result<Vec<(&'static str, u64)>> {
    let config = config_of(tx, user)?;
    let wanted = |c: Channel| only.is_none_or(|o| o == c);
    let seal = || {
        senders
            .data_key
            .encrypt(notification.text.as_bytes(), &outbox::text_binding(user))
            .map_err(|e| mycorrhizal_engine::Error::Io(std::io::Error::other(e)))
    };
    let subject = notification.subject.clone();
    let mut queued = Vec::new();
    if wanted(Channel::Email) && senders.mail && config.email.unwrap_or(true) {
        let account: Account = tx.global().get(user)?;
        let target = Target::Email { to: account.email, subject: subject.clone(), text: seal()? };
        queued.push(("email", outbox::enqueue(tx, user, target, Some(format!("{key}:email")))?));
    }
    if wanted(Channel::Ntfy) && config.ntfy.is_some() {
        let target = Target::Ntfy { title: subject.clone(), text: seal()? };
        queued.push(("ntfy", outbox::enqueue(tx, user, target, Some(format!("{key}:ntfy")))?));
    }
    if wanted(Channel::Gotify) && config.gotify.is_some() {
        let target = Target::Gotify { title: subject.clone(), text: seal()? };
        queued.push(("gotify", outbox::enqueue(tx, user, target, Some(format!("{key}:gotify")))?));
    }
    if wanted(Channel::Webpush) {
        for id in &config.push {
            let target = Target::WebPush { subscription_id: *id, title: subject.clone(), text: seal()? };
            queued.push(("webpush", outbox::enqueue(tx, user, target, Some(format!("{key}:webpush:{id}")))?));
        }
    }
    if wanted(Channel::Fcm) && senders.fcm {
        for id in super::fcm::devices_of(tx, user)? {
            let target = Target::Fcm { device_id: id, title: subject.clone(), text: seal()? };
            queued.push(("fcm", outbox::enqueue(tx, user, target, Some(format!("{key}:fcm:{id}")))?));
        }
    }
    Ok(queued)
}
