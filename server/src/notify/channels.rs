//! A user's notification channels and the one place a notification is fanned out to them.
//!
//! A [`Notification`] (the daily digest, a channel's "send a test", an alert to an admin) is
//! queued by [`fan_out`] inside the transaction of its cause: one outbox message per channel the
//! user has enabled, each with the idempotency key `{key}:{channel}` (receivers that honour it
//! drop a repeat). Sending once per cause is the caller's rule, kept in the same transaction.
//!
//! Channels today: `email`, to the account's address, whenever the instance has a mail provider.

use mycorrhizal_engine::Tx;

use super::outbox::{self, Target};
use crate::auth::keys::DataKey;
use crate::auth::records::Account;

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
}

impl Senders {
    pub fn of(state: &crate::state::AppState) -> Senders {
        Senders { data_key: state.auth.data_key.clone(), mail: state.mailer.is_configured() }
    }
}

/// Queues `notification` for every channel `user` has enabled, in `tx`. `key` names the cause
/// (e.g. `digest:<user>:<date>`). Returns the names of the channels it was queued for.
pub fn fan_out(
    tx: &Tx<'_>,
    senders: &Senders,
    user: u64,
    notification: &Notification,
    key: &str,
) -> mycorrhizal_engine::Result<Vec<&'static str>> {
    let mut queued = Vec::new();
    if senders.mail {
        let account: Account = tx.global().get(user)?;
        let sealed = senders
            .data_key
            .encrypt(notification.text.as_bytes(), &super::deliver::mail_binding(user))
            .map_err(|e| mycorrhizal_engine::Error::Io(std::io::Error::other(e)))?;
        let target = Target::Email { to: account.email, subject: notification.subject.clone(), text: sealed };
        outbox::enqueue(tx, user, target, Some(format!("{key}:email")))?;
        queued.push("email");
    }
    Ok(queued)
}
