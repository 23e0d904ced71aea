//! Sync in: a user's subscriptions to remote CardDAV address books and CalDAV calendars (or a
//! plain `.ics` address), pulled on a schedule, the remote copy winning.
//!
//! - [`Subscription`] is a global record (`sys:subscriptions`, like webhooks: the scheduler walks
//!   every user's) owned by `user_id`; every operation checks the owner, a foreign id is 404.
//!   Its password is sealed with the data key ([`binding`]) and never leaves.
//! - What a subscription brought in is ordinary user records (contacts, activities) plus two
//!   maps: `map:sync_links` (`<sub>/<href>` -> the local record and the remote ETag) and
//!   `map:sync_origin` (`<user>/<kind>/<record>` -> the subscription), which the contact's view
//!   reads to say where it comes from. Deleting a subscription keeps the records, now local.
//! - [`remote`] speaks DAV through `libdav`'s requests over the outbound guard's client;
//!   [`addressbook`] and [`calendar`] apply one pass; [`run`] is one attempt (the clocks, the
//!   events, the failure classes); [`ops`] are what the doors call.

pub mod addressbook;
pub mod calendar;
pub mod listing;
pub mod ops;
pub mod remote;
pub mod run;

use std::collections::HashMap;

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalRecord, GlobalView, Tx, global_tables};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Links from a subscription's remote resources to local records.
pub const LINKS: &str = "map:sync_links";
/// From a local record back to the subscription it came from.
pub const ORIGINS: &str = "map:sync_origin";
/// Most subscriptions of one source per user.
pub const MAX_PER_USER: usize = 20;

/// What a subscription pulls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A CardDAV address book: its cards become contacts.
    AddressBook,
    /// A CalDAV calendar or an `.ics` address: its events become activities.
    Calendar,
}

impl Source {
    /// The system-event component of its sync.
    pub fn component(self) -> &'static str {
        match self {
            Source::AddressBook => "contact_sync",
            Source::Calendar => "calendar_sync",
        }
    }

    /// The local kind its records are.
    pub fn kind(self) -> &'static str {
        match self {
            Source::AddressBook => "contact",
            Source::Calendar => "activity",
        }
    }
}

/// A subscription, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Subscription {
    pub user_id: u64,
    pub source: Source,
    pub name: String,
    /// The collection's address (after discovery), or the `.ics` address.
    pub url: String,
    pub username: String,
    /// The password or app token sealed with the data key; empty when none.
    pub sealed_password: Vec<u8>,
    pub sync_enabled: bool,
    /// A calendar read as a plain iCalendar file (`GET`), not a CalDAV collection.
    pub feed: bool,
    /// A calendar's window: events from this many days back...
    pub past_days: u32,
    /// ...to this many days ahead (recurring events are expanded inside it).
    pub future_days: u32,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub state: SyncState,
}

impl GlobalRecord for Subscription {
    global_tables!("subscriptions");
}

/// Where a subscription's sync stands: the spec's clocks and what the next pass starts from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SyncState {
    /// RFC 6578 token of the last complete pass (empty: the next pass is a full one).
    pub sync_token: String,
    /// The collection's `getctag` at the last complete pass (servers without `sync-collection`).
    pub ctag: String,
    /// Whether the collection offers `sync-collection` (learned at the last full pass).
    pub incremental: bool,
    pub last_attempt_at: Option<Timestamp>,
    pub last_success_at: Option<Timestamp>,
    pub last_failure_at: Option<Timestamp>,
    /// The first failure of the current run of failures (cleared by a success).
    pub incident_first_failure_at: Option<Timestamp>,
    /// Set by a failure that retrying cannot mend (credentials refused, collection gone): the
    /// schedule leaves the subscription alone until it is edited.
    pub terminal_failure_at: Option<Timestamp>,
    pub terminal_reason: String,
    /// The last failure's class and text (sanitised).
    pub last_error_class: String,
    pub last_error: String,
    pub consecutive_failures: u32,
    /// When the schedule syncs it next.
    pub next_due_at: Option<Timestamp>,
    /// What the last successful pass did.
    pub last_counts: Counts,
    /// Resources the last pass could not read, and why (at most [`MAX_SKIPS`]).
    pub skipped: Vec<Skip>,
}

/// Most skipped resources remembered.
pub const MAX_SKIPS: usize = 20;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
pub struct Counts {
    pub created: u64,
    pub updated: u64,
    pub deleted: u64,
    /// Removed remotely but kept here (archived), since notes or other records hang off it.
    pub kept: u64,
    pub unchanged: u64,
    pub skipped: u64,
}

/// What a pass did and where the next one starts.
#[derive(Debug, Default)]
pub struct Pass {
    pub counts: Counts,
    pub skipped: Vec<Skip>,
    pub sync_token: String,
    pub ctag: String,
    pub incremental: bool,
}

impl Pass {
    /// Counts `href` as skipped, and remembers why (the first [`MAX_SKIPS`]).
    pub(crate) fn skip(&mut self, href: &str, reason: String) {
        self.counts.skipped += 1;
        if self.skipped.len() < MAX_SKIPS {
            self.skipped.push(Skip { href: href.to_string(), reason: crate::ops::events::sanitise(&reason) });
        }
    }
}

/// A remote resource a pass could not take, and why.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Skip {
    pub href: String,
    pub reason: String,
}

/// The data-key binding of a subscription password of `user`'s.
pub fn binding(user: u64) -> String {
    crate::keys::binding("subscriptions", user, "password")
}

/// A link from a remote resource to the local record(s) it became.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Link {
    /// The contact a card became (0 for a calendar resource).
    pub record: u64,
    pub etag: String,
    /// A calendar resource's occurrences: `<uid>#<instance>` and the activity each became.
    pub events: Vec<(String, u64)>,
    /// Whether it holds a recurring event (expanded again at every pass, as the window moves).
    pub recurring: bool,
}

pub(crate) fn link_key(sub: u64, href: &str) -> String {
    format!("{sub:020}/{href}")
}

pub(crate) fn origin_key(user: u64, kind: &str, record: u64) -> String {
    format!("{user:020}/{kind}/{record:020}")
}

/// The subscription local record `record` of `kind` came from, if any.
pub fn origin(view: &GlobalView, user: u64, kind: &str, record: u64) -> mycorrhizal_engine::Result<Option<u64>> {
    Ok(view
        .map_get(ORIGINS, &origin_key(user, kind, record))?
        .and_then(|bytes| std::str::from_utf8(&bytes).ok().and_then(|s| s.parse().ok())))
}

/// Every link of subscription `sub`, by href.
pub fn links(view: &GlobalView, sub: u64) -> mycorrhizal_engine::Result<HashMap<String, Link>> {
    collect_links(sub, |from, visit| view.map_scan(LINKS, from, visit))
}

fn links_in(tx: &Tx<'_>, sub: u64) -> mycorrhizal_engine::Result<HashMap<String, Link>> {
    collect_links(sub, |from, visit| tx.global().map_scan(LINKS, from, visit))
}

type Visit<'v> = &'v mut dyn FnMut(&str, &[u8]) -> bool;

fn collect_links(
    sub: u64,
    scan: impl FnOnce(&str, Visit<'_>) -> mycorrhizal_engine::Result<()>,
) -> mycorrhizal_engine::Result<HashMap<String, Link>> {
    let prefix = format!("{sub:020}/");
    let mut out = HashMap::new();
    let mut failed = None;
    scan(&prefix, &mut |key, bytes| {
        let Some(href) = key.strip_prefix(&prefix) else { return false };
        match mycorrhizal_engine::codec::decode::<Link>("sync link", bytes) {
            Ok(link) => {
                out.insert(href.to_string(), link);
            }
            Err(e) => failed = Some(e),
        }
        true
    })?;
    failed.map_or(Ok(out), Err)
}

/// Records (inside `tx`) that `href` of subscription `sub` is local record `link.record`.
pub(crate) fn put_link(
    tx: &Tx<'_>,
    sub: u64,
    user: u64,
    kind: &str,
    href: &str,
    link: &Link,
) -> mycorrhizal_engine::Result<()> {
    tx.global().map_put(LINKS, &link_key(sub, href), &mycorrhizal_engine::codec::encode(link))?;
    for record in link.records() {
        tx.global().map_put(ORIGINS, &origin_key(user, kind, record), sub.to_string().as_bytes())?;
    }
    Ok(())
}

impl Link {
    /// The local records it names.
    pub fn records(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.events.iter().map(|(_, id)| *id).collect();
        if self.record != 0 {
            out.push(self.record);
        }
        out
    }
}

/// Forgets (inside `tx`) `href` of subscription `sub`, and where its records came from.
pub(crate) fn drop_link(
    tx: &Tx<'_>,
    sub: u64,
    user: u64,
    kind: &str,
    href: &str,
    link: &Link,
) -> mycorrhizal_engine::Result<()> {
    tx.global().map_remove(LINKS, &link_key(sub, href))?;
    for record in link.records() {
        tx.global().map_remove(ORIGINS, &origin_key(user, kind, record))?;
    }
    Ok(())
}

/// Removes (inside `tx`) subscription `id` and its links; the records it brought in stay, local.
pub(crate) fn remove_in(tx: &Tx<'_>, id: u64, sub: &Subscription) -> mycorrhizal_engine::Result<()> {
    let links = links_in(tx, id)?;
    for (href, link) in links {
        drop_link(tx, id, sub.user_id, sub.source.kind(), &href, &link)?;
    }
    tx.global().remove::<Subscription>(id)?;
    Ok(())
}

/// Removes (inside `tx`) every subscription of a deleted account.
pub fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<()> {
    let mine: Vec<(u64, Subscription)> =
        tx.global().list::<Subscription>()?.into_iter().filter(|(_, s)| s.user_id == user).collect();
    for (id, sub) in mine {
        remove_in(tx, id, &sub)?;
    }
    Ok(())
}

/// Where a local record came from: its subscription, as its owner sees it in the record.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Origin {
    /// The subscription's id (`/contact-subscriptions/{id}` or `/calendars/{id}`).
    pub id: u64,
    pub name: String,
    pub source: Source,
}

/// The subscription `user`'s record `record` of `kind` (`contact`, `activity`) came from.
pub fn origin_of(
    engine: &mycorrhizal_engine::Engine,
    user: u64,
    kind: &str,
    record: u64,
) -> mycorrhizal_engine::Result<Option<Origin>> {
    let view = engine.global()?;
    let Some(id) = origin(&view, user, kind, record)? else { return Ok(None) };
    match view.get::<Subscription>(id) {
        Ok(sub) if sub.user_id == user => Ok(Some(Origin { id, name: sub.name, source: sub.source })),
        Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The contacts of `user` a subscription brought in: this server's own CardDAV book leaves them
/// out, so a phone that syncs both that book and the remote one never shows a person twice.
pub fn subscribed_contacts(
    engine: &mycorrhizal_engine::Engine,
    user: u64,
) -> mycorrhizal_engine::Result<std::collections::HashSet<u64>> {
    let prefix = format!("{user:020}/contact/");
    let mut out = std::collections::HashSet::new();
    engine.global()?.map_scan(ORIGINS, &prefix, |key, _| {
        let Some(id) = key.strip_prefix(&prefix) else { return false };
        if let Ok(id) = id.parse() {
            out.insert(id);
        }
        true
    })?;
    Ok(out)
}
