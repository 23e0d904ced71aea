//! Transactional email through the operator's provider: SMTP (lettre, STARTTLS or TLS) or an
//! HTTP email API (JSON POST with a bearer key). With neither configured, sending fails with a
//! clear reason and the caller decides what the user sees.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::json;

use crate::config::{Email, SmtpTls};

#[derive(Clone)]
pub struct Mailer {
    config: Email,
    client: reqwest::Client,
}

impl Mailer {
    pub fn new(config: Email, client: reqwest::Client) -> Self {
        Mailer { config, client }
    }

    pub fn is_configured(&self) -> bool {
        !matches!(self.config, Email::Disabled)
    }

    pub async fn send(&self, to: &str, subject: &str, text: &str) -> Result<(), String> {
        match &self.config {
            Email::Disabled => Err("no email provider is configured (SMTP_HOST or EMAIL_API_URL)".into()),
            Email::Smtp { host, port, username, password, tls, from } => {
                let from: Mailbox = from.parse().map_err(|e| format!("EMAIL_FROM: {e}"))?;
                let to: Mailbox = to.parse().map_err(|e| format!("recipient: {e}"))?;
                let message = Message::builder()
                    .from(from)
                    .to(to)
                    .subject(subject)
                    .body(text.to_string())
                    .map_err(|e| e.to_string())?;
                let builder = match tls {
                    SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
                    SmtpTls::StartTls => {
                        AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host).map_err(|e| e.to_string())?
                    }
                    SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(host).map_err(|e| e.to_string())?,
                };
                let mut builder = builder.port(*port).timeout(Some(Duration::from_secs(10)));
                if let (Some(user), Some(pass)) = (username, password) {
                    builder = builder.credentials(Credentials::new(user.clone(), pass.expose().to_string()));
                }
                builder.build().send(message).await.map(|_| ()).map_err(|e| e.to_string())
            }
            Email::Api { url, key, from } => {
                let body = json!({ "from": from, "to": to, "subject": subject, "text": text });
                let response = self
                    .client
                    .post(url)
                    .bearer_auth(key.expose())
                    .json(&body)
                    .timeout(Duration::from_secs(10))
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if response.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("email API answered {}", response.status()))
                }
            }
        }
    }
}
