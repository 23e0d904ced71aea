//! An alert leaves here: a condition raised or cleared (`crate::alerts`) goes out as the
//! `alert.raised` / `alert.cleared` webhook event to every admin's webhook subscribed to it, and
//! as a notification to each admin's own channels (email, ntfy, Gotify, push), its subject marked red
//! for a raise and green for a recovery. Counts and names only, never identifiers.

use jiff::Timestamp;
use mycorrhizal_engine::Tx;
use serde_json::json;

use super::channels::{self, Notification, Senders};
use super::webhooks::{self, ALERT_EVENTS};
use crate::auth::records::Account;
use crate::outbox::{Message, Status};

/// The marker a raise's subject starts with, and a recovery's.
pub const RAISED_MARK: &str = "🔴";
pub const CLEARED_MARK: &str = "🟢";

/// One transition of one condition, as it is told.
#[derive(Debug, Clone)]
pub struct Notice {
    pub condition: String,
    /// A raise (else a recovery).
    pub raised: bool,
    /// What is wrong (or was), in a sentence of counts and names.
    pub detail: String,
    /// Consecutive failures behind it, when the condition counts them.
    pub failures: u64,
    /// Since when the condition is in its new state.
    pub since: Timestamp,
    /// Idempotency key shared by every message of this telling.
    pub key: String,
}

/// Queues `notice` on every path in `tx`: the webhook event to every subscribed webhook, and the
/// notification to each admin's channels. Returns the queued messages' ids (none: no path).
pub fn dispatch(tx: &Tx<'_>, senders: &Senders, notice: &Notice) -> mycorrhizal_engine::Result<Vec<u64>> {
    let event = if notice.raised { ALERT_EVENTS[0] } else { ALERT_EVENTS[1] };
    let data = json!({
        "condition": notice.condition,
        "state": if notice.raised { "alerting" } else { "ok" },
        "detail": notice.detail,
        "failures": notice.failures,
        "since": notice.since,
    });
    let mut ids = webhooks::broadcast(tx, event, &notice.key, &data)?;
    let note = Notification {
        subject: if notice.raised {
            format!("{RAISED_MARK} Mycorrhizal alert: {}", notice.condition)
        } else {
            format!("{CLEARED_MARK} Mycorrhizal recovered: {}", notice.condition)
        },
        text: if notice.raised {
            format!("{}\nSince {}.", notice.detail, notice.since.strftime("%Y-%m-%d %H:%M UTC"))
        } else {
            format!(
                "Resolved: {}\nAll is well again since {}.",
                notice.detail,
                notice.since.strftime("%Y-%m-%d %H:%M UTC")
            )
        },
    };
    for (user, account) in tx.global().list::<Account>()? {
        if account.is_admin {
            ids.extend(channels::fan_out_ids(tx, senders, user, &note, &format!("{}:{user}", notice.key))?);
        }
    }
    Ok(ids)
}

/// How a telling's messages fare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// At least one was delivered: the telling is done.
    Accepted,
    /// None delivered yet, some still to be attempted.
    Waiting,
    /// None delivered and none left to attempt (or there were none): tell again.
    Refused,
}

/// How the messages `ids` fare (a message gone from the outbox counts as not delivered).
pub fn delivery(view: &mycorrhizal_engine::GlobalView, ids: &[u64]) -> mycorrhizal_engine::Result<Delivery> {
    let mut waiting = false;
    for id in ids {
        match view.get::<Message>(*id) {
            Ok(message) if message.status == Status::Delivered => return Ok(Delivery::Accepted),
            Ok(message) if message.status == Status::Pending => waiting = true,
            Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(if waiting { Delivery::Waiting } else { Delivery::Refused })
}
