//! One delivery attempt of one outbox message, by target: a signed webhook POST, a mail through
//! the instance's provider, a channel's push (ntfy-style topic, Gotify-style server, one Web
//! Push browser, one FCM device). Only the attempt: what its outcome changes is the outbox's
//! business ([`crate::outbox`]), except that a browser the push service says is gone (404, 410)
//! and a device FCM says is unregistered are removed here. Push channels carry the correlation id only in events and logs, never in
//! a header.

use std::time::Duration;

use super::channels::PushSubscription;
use super::channels::{self, Channel, ChannelConfig};
use super::fcm::{self, FcmDevice};
use super::fcm_client;
use super::notifier::Notifier;
use super::webhooks::{self, SIGNATURE_HEADER, Webhook};
use super::webpush;
use crate::outbound;
use crate::outbox::{self, Attempt, Message, Target, classify, retry_after};

/// Makes one attempt to deliver `message`.
pub async fn attempt(notifier: &Notifier, message: &Message) -> Attempt {
    match &message.target {
        Target::Webhook { webhook_id, event, body } => webhook(notifier, message, *webhook_id, event, body).await,
        Target::Email { to, subject, text } => email(notifier, message.user_id, to, subject, text).await,
        Target::Ntfy { title, text } => ntfy(notifier, message, title, text).await,
        Target::Gotify { title, text } => gotify(notifier, message, title, text).await,
        Target::WebPush { subscription_id, title, text } => {
            web_push(notifier, message, *subscription_id, title, text).await
        }
        Target::Fcm { device_id, title, text } => fcm(notifier, message, *device_id, title, text).await,
        Target::WebhookEvent { .. } => {
            // The worker reads the envelope with the row; a caller that did not is served here.
            let row = message.clone();
            match crate::crm::blocking(&notifier.engine, move |engine| outbox::with_envelope(&engine.global()?, row))
                .await
            {
                Ok(Ok(Some(loaded))) => match &loaded.target {
                    Target::Webhook { webhook_id, event, body } => {
                        webhook(notifier, &loaded, *webhook_id, event, body).await
                    }
                    _ => permanent("the event's envelope cannot be read"),
                },
                Ok(Ok(None)) => permanent("the event's envelope is gone"),
                Ok(Err(e)) => retry(e.to_string()),
                Err(e) => retry(e.to_string()),
            }
        }
    }
}

/// An answer (or the lack of one) of an HTTP receiver, as an attempt.
pub fn http_outcome(notifier: &Notifier, sent: Result<reqwest::Response, reqwest::Error>) -> Attempt {
    match sent {
        Ok(response) => {
            let now = notifier.engine.clock().now();
            let wait = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after(v, now));
            classify(response.status().as_u16(), wait)
        }
        Err(e) if outbound::is_refusal(&e) => Attempt::Permanent { status: None, error: refusal_text(&e) },
        Err(e) if e.is_timeout() => {
            Attempt::Retry { status: None, error: "the receiver did not answer in time".into(), retry_after: None }
        }
        Err(e) => Attempt::Retry {
            status: None,
            error: format!("cannot reach the receiver: {}", root_cause(&e)),
            retry_after: None,
        },
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

fn refusal_text(e: &reqwest::Error) -> String {
    format!("destination refused by the private-address guard: {}", root_cause(e))
}

async fn webhook(notifier: &Notifier, message: &Message, webhook_id: u64, event: &str, body: &str) -> Attempt {
    let found = crate::crm::blocking(&notifier.engine, move |engine| engine.global()?.get::<Webhook>(webhook_id)).await;
    let hook = match found {
        Ok(Ok(hook)) if hook.user_id == message.user_id => hook,
        Ok(Ok(_)) | Ok(Err(mycorrhizal_engine::Error::NotFound)) => {
            return Attempt::Permanent { status: None, error: "the webhook was deleted".into() };
        }
        Ok(Err(e)) => return Attempt::Retry { status: None, error: e.to_string(), retry_after: None },
        Err(e) => return Attempt::Retry { status: None, error: e.to_string(), retry_after: None },
    };
    if !hook.active {
        return Attempt::Permanent { status: None, error: "the webhook is paused".into() };
    }
    let Some(secret) = webhooks::secret_of(&notifier.data_key, &hook) else {
        return Attempt::Permanent { status: None, error: "the webhook's secret cannot be read".into() };
    };
    let url = match reqwest::Url::parse(&hook.url) {
        Ok(url) => url,
        Err(e) => return Attempt::Permanent { status: None, error: format!("not a URL: {e}") },
    };
    if let Err(e) = outbound::check_literal(&url, notifier.features.webhook_block_private_urls) {
        return Attempt::Permanent {
            status: None,
            error: format!("destination refused by the private-address guard: {e}"),
        };
    }
    let t = notifier.engine.clock().now().as_second();
    let mut request = notifier
        .outbox
        .client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, webhooks::signature(&secret, t, body))
        .header("X-Mycorrhizal-Event", event)
        .header("X-Mycorrhizal-Delivery", &message.key)
        .header("Idempotency-Key", &message.key)
        .body(body.to_string());
    if let Some(correlation) = &message.correlation_id {
        request = request.header("X-Correlation-ID", correlation);
    }
    http_outcome(notifier, request.send().await)
}

async fn email(notifier: &Notifier, user: u64, to: &str, subject: &str, sealed: &[u8]) -> Attempt {
    let Some(text) = notifier.data_key.decrypt(sealed, &outbox::text_binding(user)) else {
        return Attempt::Permanent { status: None, error: "the message cannot be read (data key changed)".into() };
    };
    let text = String::from_utf8_lossy(&text);
    match tokio::time::timeout(Duration::from_secs(60), notifier.mailer.send(to, subject, &text)).await {
        Ok(Ok(())) => Attempt::Delivered { status: None },
        Ok(Err(e)) if e.permanent => Attempt::Permanent { status: None, error: e.message },
        Ok(Err(e)) => Attempt::Retry { status: None, error: e.message, retry_after: None },
        Err(_) => {
            Attempt::Retry { status: None, error: "the mail provider did not answer in time".into(), retry_after: None }
        }
    }
}

/// An attempt that cannot be made and will not become possible.
fn permanent(error: impl std::fmt::Display) -> Attempt {
    Attempt::Permanent { status: None, error: error.to_string() }
}

fn retry(error: impl std::fmt::Display) -> Attempt {
    Attempt::Retry { status: None, error: error.to_string(), retry_after: None }
}

/// The user's channel configuration, read for an attempt.
async fn config(notifier: &Notifier, user: u64) -> Result<ChannelConfig, Attempt> {
    match crate::crm::blocking(&notifier.engine, move |engine| engine.global()?.get::<ChannelConfig>(user)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(mycorrhizal_engine::Error::NotFound)) => Ok(ChannelConfig::default()),
        Ok(Err(e)) => Err(retry(e.to_string())),
        Err(e) => Err(retry(e.to_string())),
    }
}

/// A queued message's text in the clear.
fn text_of(notifier: &Notifier, user: u64, sealed: &[u8]) -> Result<String, Attempt> {
    notifier
        .data_key
        .decrypt(sealed, &outbox::text_binding(user))
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .ok_or_else(|| permanent("the message cannot be read (data key changed)"))
}

/// A channel's stored token in the clear.
fn token_of(notifier: &Notifier, user: u64, channel: Channel, sealed: &[u8]) -> Result<String, Attempt> {
    notifier
        .data_key
        .decrypt(sealed, &channels::token_binding(user, channel))
        .and_then(|t| String::from_utf8(t).ok())
        .ok_or_else(|| permanent("the channel's token cannot be read (data key changed)"))
}

/// Parses a destination and refuses an internal literal when the guard is on (names are checked
/// by the guarded client's resolver).
fn destination(notifier: &Notifier, url: &str) -> Result<reqwest::Url, Attempt> {
    let url = reqwest::Url::parse(url).map_err(|e| permanent(format!("not a URL: {e}")))?;
    outbound::check_literal(&url, notifier.features.webhook_block_private_urls)
        .map_err(|e| permanent(format!("destination refused by the private-address guard: {e}")))?;
    Ok(url)
}

fn logged(message: &Message, channel: &str, attempt: Attempt) -> Attempt {
    tracing::info!(
        event = "notification_attempt",
        component = "notification",
        channel,
        correlation_id = message.correlation_id.as_deref().unwrap_or(""),
        outcome = ?attempt,
    );
    attempt
}

async fn ntfy(notifier: &Notifier, message: &Message, title: &str, sealed: &[u8]) -> Attempt {
    let user = message.user_id;
    let topic = match config(notifier, user).await {
        Ok(c) => match c.ntfy {
            Some(t) => t,
            None => return permanent("the channel was removed"),
        },
        Err(a) => return a,
    };
    let text = match text_of(notifier, user, sealed) {
        Ok(t) => t,
        Err(a) => return a,
    };
    // ntfy's JSON publish goes to the server's root; the topic is a member of the body.
    let url = match destination(notifier, &format!("{}/", topic.url.trim_end_matches('/'))) {
        Ok(u) => u,
        Err(a) => return a,
    };
    let body = serde_json::json!({ "topic": topic.topic, "title": title, "message": text });
    let mut request = notifier.outbox.client.post(url).header("Idempotency-Key", &message.key).json(&body);
    if let Some(sealed) = &topic.sealed_token {
        match token_of(notifier, user, Channel::Ntfy, sealed) {
            Ok(token) => request = request.bearer_auth(token),
            Err(a) => return a,
        }
    }
    logged(message, "ntfy", http_outcome(notifier, request.send().await))
}

async fn gotify(notifier: &Notifier, message: &Message, title: &str, sealed: &[u8]) -> Attempt {
    let user = message.user_id;
    let server = match config(notifier, user).await {
        Ok(c) => match c.gotify {
            Some(g) => g,
            None => return permanent("the channel was removed"),
        },
        Err(a) => return a,
    };
    let (text, token) =
        match (text_of(notifier, user, sealed), token_of(notifier, user, Channel::Gotify, &server.sealed_token)) {
            (Ok(t), Ok(k)) => (t, k),
            (Err(a), _) | (_, Err(a)) => return a,
        };
    let url = match destination(notifier, &format!("{}/message", server.url.trim_end_matches('/'))) {
        Ok(u) => u,
        Err(a) => return a,
    };
    let body = serde_json::json!({ "title": title, "message": text, "priority": 5 });
    let request = notifier
        .outbox
        .client
        .post(url)
        .header("X-Gotify-Key", token)
        .header("Idempotency-Key", &message.key)
        .json(&body);
    logged(message, "gotify", http_outcome(notifier, request.send().await))
}

async fn web_push(notifier: &Notifier, message: &Message, id: u64, title: &str, sealed: &[u8]) -> Attempt {
    let user = message.user_id;
    let sub = match crate::crm::blocking(&notifier.engine, move |engine| engine.global()?.get::<PushSubscription>(id))
        .await
    {
        Ok(Ok(s)) if s.user_id == user => s,
        Ok(Ok(_)) | Ok(Err(mycorrhizal_engine::Error::NotFound)) => {
            return permanent("the browser's subscription was removed");
        }
        Ok(Err(e)) => return retry(e.to_string()),
        Err(e) => return retry(e.to_string()),
    };
    let Some((p256dh, auth)) = webpush::keys_of(&notifier.data_key, &sub) else {
        return permanent("the subscription's keys cannot be read (data key changed)");
    };
    let text = match text_of(notifier, user, sealed) {
        Ok(t) => t,
        Err(a) => return a,
    };
    let url = match destination(notifier, &sub.endpoint) {
        Ok(u) => u,
        Err(a) => return a,
    };
    let key = match webpush::vapid_key(&notifier.engine, &notifier.data_key).await {
        Ok(k) => k,
        Err(e) => return retry(e),
    };
    let body = match webpush::encrypt(&webpush::payload(title, &text), &p256dh, &auth) {
        Ok(b) => b,
        Err(e) => return permanent(e),
    };
    let now = notifier.engine.clock().now();
    let request = notifier
        .outbox
        .client
        .post(url.clone())
        .header(
            reqwest::header::AUTHORIZATION,
            webpush::vapid_authorization(&key, &url, &notifier.features.vapid_subject, now),
        )
        .header("TTL", webpush::TTL_SECONDS.to_string())
        .header("Urgency", "normal")
        .header("Topic", webpush::topic(&message.key))
        .header(reqwest::header::CONTENT_ENCODING, "aes128gcm")
        .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
        .body(body);
    let sent = request.send().await;
    if let Ok(response) = &sent
        && matches!(response.status().as_u16(), 404 | 410)
    {
        // The push service no longer knows this browser: unregister it for good.
        let status = response.status().as_u16();
        let removed = notifier.engine.write_async(move |tx| webpush::remove_in(tx, user, id)).await;
        if let Err(e) = removed {
            tracing::error!(event = "push_unsubscribe_failed", component = "notification", error = %e);
        }
        return logged(
            message,
            "webpush",
            Attempt::Permanent {
                status: Some(status),
                error: format!("the push service answered {status}: the browser is gone, its subscription was removed"),
            },
        );
    }
    logged(message, "webpush", http_outcome(notifier, sent))
}

async fn fcm(notifier: &Notifier, message: &Message, id: u64, title: &str, sealed: &[u8]) -> Attempt {
    let user = message.user_id;
    let Some(client) = notifier.fcm.clone() else {
        return permanent("mobile push is not configured (no FCM service account)");
    };
    let device = match crate::crm::blocking(&notifier.engine, move |engine| engine.global()?.get::<FcmDevice>(id)).await
    {
        Ok(Ok(d)) if d.user_id == user => d,
        Ok(Ok(_)) | Ok(Err(mycorrhizal_engine::Error::NotFound)) => return permanent("the device was removed"),
        Ok(Err(e)) => return retry(e.to_string()),
        Err(e) => return retry(e.to_string()),
    };
    let text = match text_of(notifier, user, sealed) {
        Ok(t) => t,
        Err(a) => return a,
    };
    let now = notifier.engine.clock().now();
    let token = match client.access_token(&notifier.http, now).await {
        Ok(t) => t,
        Err(e) => return logged(message, "fcm", retry(e)),
    };
    let body = fcm_client::message(&device.token, title, &text, &message.key);
    let sent = notifier.http.post(client.send_url()).bearer_auth(token).json(&body).send().await;
    let response = match sent {
        Ok(r) => r,
        Err(e) => return logged(message, "fcm", http_outcome(notifier, Err(e))),
    };
    let status = response.status().as_u16();
    let wait = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| retry_after(v, now));
    let answer = if status >= 300 { response.text().await.unwrap_or_default() } else { String::new() };
    let attempt = if status < 300 {
        Attempt::Delivered { status: Some(status) }
    } else if fcm_client::unregistered(status, &answer) {
        // The app was uninstalled or its token replaced: unregister the device for good.
        if let Err(e) = notifier.engine.write_async(move |tx| fcm::remove_in(tx, user, id)).await {
            tracing::error!(event = "fcm_unregister_failed", component = "notification", error = %e);
        }
        Attempt::Permanent {
            status: Some(status),
            error: format!("FCM answered {status} UNREGISTERED: the device is gone, it was removed"),
        }
    } else if status == 401 {
        // The access token was refused: the next attempt asks for a new one.
        client.forget_token().await;
        Attempt::Retry { status: Some(status), error: "FCM refused the access token".into(), retry_after: wait }
    } else {
        classify(status, wait)
    };
    logged(message, "fcm", attempt)
}
