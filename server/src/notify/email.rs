//! Transactional email through the operator's provider: SMTP (lettre, STARTTLS or TLS) or an
//! HTTP email API (JSON POST with a bearer key). With neither configured, sending fails with a
//! clear reason and the caller decides what the user sees.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::json;

use crate::config::{Email, SmtpTls};

/// Why a mail was not sent.
#[derive(Debug, Clone)]
pub struct MailError {
    pub message: String,
    /// Trying again will not help (refused recipient, nothing configured).
    pub permanent: bool,
}

impl std::fmt::Display for MailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

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

    /// Sends one message; the error says whether trying again could help.
    pub async fn send(&self, to: &str, subject: &str, text: &str) -> Result<(), MailError> {
        let permanent = |message: String| MailError { message, permanent: true };
        let transient = |message: String| MailError { message, permanent: false };
        match &self.config {
            Email::Disabled => Err(permanent("no email provider is configured (SMTP_HOST or EMAIL_API_URL)".into())),
            Email::Smtp { host, port, username, password, tls, from } => {
                let from: Mailbox = from.parse().map_err(|e| permanent(format!("EMAIL_FROM: {e}")))?;
                let to: Mailbox = to.parse().map_err(|e| permanent(format!("recipient: {e}")))?;
                let message = Message::builder()
                    .from(from)
                    .to(to)
                    .subject(subject)
                    .body(text.to_string())
                    .map_err(|e| permanent(e.to_string()))?;
                let builder = match tls {
                    SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
                    SmtpTls::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host)
                        .map_err(|e| transient(e.to_string()))?,
                    SmtpTls::Tls => {
                        AsyncSmtpTransport::<Tokio1Executor>::relay(host).map_err(|e| transient(e.to_string()))?
                    }
                };
                let mut builder = builder.port(*port).timeout(Some(Duration::from_secs(10)));
                if let (Some(user), Some(pass)) = (username, password) {
                    builder = builder.credentials(Credentials::new(user.clone(), pass.expose().to_string()));
                }
                builder
                    .build()
                    .send(message)
                    .await
                    .map(|_| ())
                    .map_err(|e| MailError { permanent: e.is_permanent(), message: e.to_string() })
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
                    .map_err(|e| transient(e.to_string()))?;
                let status = response.status();
                if status.is_success() {
                    Ok(())
                } else {
                    let message = format!("email API answered {status}");
                    let retry = status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429;
                    Err(MailError { message, permanent: !retry })
                }
            }
        }
    }
}
