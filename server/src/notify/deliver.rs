//! One delivery attempt of one outbox message, by target: a signed webhook POST, a mail through
//! the instance's provider. Only the attempt: what its
//! outcome changes is the outbox's business ([`super::outbox`]).

use std::time::Duration;

use super::outbox::{Attempt, Message, Target, classify, retry_after};
use super::webhooks::{self, SIGNATURE_HEADER, Webhook};
use crate::outbound;
use crate::state::AppState;

/// Makes one attempt to deliver `message`.
pub async fn attempt(state: &AppState, message: &Message) -> Attempt {
    match &message.target {
        Target::Webhook { webhook_id, event, body } => webhook(state, message, *webhook_id, event, body).await,
        Target::Email { to, subject, text } => email(state, message.user_id, to, subject, text).await,
    }
}

/// An answer (or the lack of one) of an HTTP receiver, as an attempt.
pub fn http_outcome(state: &AppState, sent: Result<reqwest::Response, reqwest::Error>) -> Attempt {
    match sent {
        Ok(response) => {
            let now = state.engine.clock().now();
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

async fn webhook(state: &AppState, message: &Message, webhook_id: u64, event: &str, body: &str) -> Attempt {
    let found = state.blocking(move |engine| engine.global()?.get::<Webhook>(webhook_id)).await;
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
    let Some(secret) = webhooks::secret_of(state, &hook) else {
        return Attempt::Permanent { status: None, error: "the webhook's secret cannot be read".into() };
    };
    let url = match reqwest::Url::parse(&hook.url) {
        Ok(url) => url,
        Err(e) => return Attempt::Permanent { status: None, error: format!("not a URL: {e}") },
    };
    if let Err(e) = outbound::check_literal(&url, state.config.features.webhook_block_private_urls) {
        return Attempt::Permanent {
            status: None,
            error: format!("destination refused by the private-address guard: {e}"),
        };
    }
    let t = state.engine.clock().now().as_second();
    let mut request = state
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
    http_outcome(state, request.send().await)
}

async fn email(state: &AppState, user: u64, to: &str, subject: &str, sealed: &[u8]) -> Attempt {
    let Some(text) = state.auth.data_key.decrypt(sealed, &mail_binding(user)) else {
        return Attempt::Permanent { status: None, error: "the message cannot be read (data key changed)".into() };
    };
    let text = String::from_utf8_lossy(&text);
    match tokio::time::timeout(Duration::from_secs(60), state.mailer.send(to, subject, &text)).await {
        Ok(Ok(())) => Attempt::Delivered { status: None },
        Ok(Err(e)) if e.permanent => Attempt::Permanent { status: None, error: e.message },
        Ok(Err(e)) => Attempt::Retry { status: None, error: e.message, retry_after: None },
        Err(_) => {
            Attempt::Retry { status: None, error: "the mail provider did not answer in time".into(), retry_after: None }
        }
    }
}

/// What a queued mail's text is sealed to.
pub fn mail_binding(user: u64) -> String {
    crate::auth::keys::binding("outbox", user, "text")
}
