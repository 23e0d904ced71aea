//! The subscription operations a front door calls: create (the address checked, the collection
//! found), list, get, update (which clears a terminal failure), delete (the records stay, local),
//! discover and test. Every one takes the caller's id: another user's subscription is 404.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::remote::{Class, Collection, Failure, Remote, discover};
use super::run::{Syncer, parse_url};
use super::{Counts, MAX_PER_USER, Skip, Source, Subscription, SyncState, binding, remove_in};
use crate::crm::{Error, Result};

/// What a subscription is created or changed with. On a change, a field left out keeps its
/// value; an empty `password` keeps the stored one and `clear_password` removes it.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionInput {
    /// 1 to 100 characters.
    pub name: Option<String>,
    /// A server root, a principal or a collection (`http`, `https`; a calendar also `webcal` or
    /// an `.ics` address). The collection found is what is stored.
    pub url: Option<String>,
    pub username: Option<String>,
    /// A password or app token; never returned.
    pub password: Option<String>,
    pub clear_password: Option<bool>,
    /// Default `true`.
    pub sync_enabled: Option<bool>,
    /// Calendars only: events from this many days back (0 to 3650, default 30).
    pub past_days: Option<u32>,
    /// Calendars only: events up to this many days ahead (0 to 3650, default 365).
    pub future_days: Option<u32>,
}

/// Where to look for collections, and with which credentials.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverInput {
    pub url: String,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub password: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Collections {
    pub collections: Vec<Collection>,
}

/// A subscription as its owner sees it (never the password).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubscriptionView {
    pub id: u64,
    pub source: Source,
    pub name: String,
    pub url: String,
    pub username: String,
    pub has_password: bool,
    pub sync_enabled: bool,
    /// Calendars: read as a plain iCalendar file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub past_days: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub future_days: Option<u32>,
    /// `never_synced`, `syncing`, `ok`, `failing` (retried), `stopped` (action needed) or
    /// `disabled`.
    pub status: &'static str,
    /// The status in words (`Sync stopped, action needed`, ...).
    pub status_text: String,
    /// The last attempt (the existing clients' name for it).
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_synced_at: Option<Timestamp>,
    /// `""` before the first attempt, else `success` or `error`.
    pub last_sync_status: &'static str,
    pub last_sync_error: String,
    /// The last failure's class (`credentials`, `gone`, `refused`, `timeout`, `unreachable`,
    /// `server`, `local`), empty after a success.
    pub last_error_class: String,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_attempt_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_success_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_failure_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub incident_first_failure_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub terminal_failure_at: Option<Timestamp>,
    pub terminal_reason: String,
    pub consecutive_failures: u32,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_sync_at: Option<Timestamp>,
    /// What the last successful sync did.
    pub last_counts: Counts,
    /// Remote resources the last sync could not read, and why.
    pub skipped: Vec<Skip>,
    /// Whether the server offers incremental sync (`sync-collection`).
    pub incremental: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

impl SubscriptionView {
    pub fn of(id: u64, sub: &Subscription, syncing: bool) -> SubscriptionView {
        let s = &sub.state;
        let (status, status_text) = if syncing {
            ("syncing", "Syncing now".to_string())
        } else if s.terminal_failure_at.is_some() {
            ("stopped", format!("Sync stopped, action needed: {}", s.terminal_reason))
        } else if !sub.sync_enabled {
            ("disabled", "Sync is switched off".to_string())
        } else if s.last_attempt_at.is_none() {
            ("never_synced", "Not synced yet".to_string())
        } else if s.consecutive_failures > 0 {
            ("failing", format!("Sync failed ({} time(s) in a row), retried: {}", s.consecutive_failures, s.last_error))
        } else {
            ("ok", "Synced".to_string())
        };
        let calendar = sub.source == Source::Calendar;
        SubscriptionView {
            id,
            source: sub.source,
            name: sub.name.clone(),
            url: sub.url.clone(),
            username: sub.username.clone(),
            has_password: !sub.sealed_password.is_empty(),
            sync_enabled: sub.sync_enabled,
            feed: calendar.then_some(sub.feed),
            past_days: calendar.then_some(sub.past_days),
            future_days: calendar.then_some(sub.future_days),
            status,
            status_text,
            last_synced_at: s.last_attempt_at,
            last_sync_status: match (s.last_attempt_at, s.consecutive_failures) {
                (None, _) => "",
                (Some(_), 0) => "success",
                _ => "error",
            },
            last_sync_error: s.last_error.clone(),
            last_error_class: s.last_error_class.clone(),
            last_attempt_at: s.last_attempt_at,
            last_success_at: s.last_success_at,
            last_failure_at: s.last_failure_at,
            incident_first_failure_at: s.incident_first_failure_at,
            terminal_failure_at: s.terminal_failure_at,
            terminal_reason: s.terminal_reason.clone(),
            consecutive_failures: s.consecutive_failures,
            next_sync_at: if sub.sync_enabled && s.terminal_failure_at.is_none() { s.next_due_at } else { None },
            last_counts: s.last_counts,
            skipped: s.skipped.clone(),
            incremental: s.incremental,
            created_at: sub.created_at,
            updated_at: sub.updated_at,
        }
    }
}

/// The word for a source's collections in messages.
fn noun(source: Source) -> &'static str {
    match source {
        Source::AddressBook => "address book",
        Source::Calendar => "calendar",
    }
}

const DEFAULT_PAST_DAYS: u32 = 30;
const DEFAULT_FUTURE_DAYS: u32 = 365;

fn check_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(Error::invalid("name", "must be 1 to 100 characters"));
    }
    Ok(name.to_string())
}

fn check_days(field: &str, days: Option<u32>, source: Source) -> Result<Option<u32>> {
    match days {
        Some(_) if source == Source::AddressBook => Err(Error::invalid(field, "is for calendars only")),
        Some(d) if d > 3650 => Err(Error::invalid(field, "must be 0 to 3650")),
        other => Ok(other),
    }
}

fn check_text(field: &str, value: &str, max: usize) -> Result<()> {
    if value.chars().count() > max {
        return Err(Error::invalid(field, format!("must be at most {max} characters")));
    }
    Ok(())
}

/// The failure of reaching a server, as the field it is about.
fn refused_by(failure: Failure) -> Error {
    match failure.class {
        Class::Credentials => Error::invalid("password", failure.message),
        _ => Error::invalid("url", failure.message),
    }
}

/// Checks `url` (shape, scheme, the private-address posture) and finds the collection it means:
/// its address and whether it is a plain iCalendar file.
async fn resolve(syncer: &Syncer, source: Source, url: &str, username: &str, password: &str) -> Result<(String, bool)> {
    let url = url.trim();
    if url.is_empty() || url.len() > 2048 {
        return Err(Error::invalid("url", "must be 1 to 2048 characters"));
    }
    let webcal = url.starts_with("webcal://");
    if webcal && source == Source::AddressBook {
        return Err(Error::invalid("url", "must be http or https"));
    }
    let parsed = parse_url(url).map_err(refused_by)?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Error::invalid("url", "must be an http or https address with a host"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Error::invalid("url", "must not hold credentials; give them as username and password"));
    }
    crate::outbound::check(parsed.as_str(), syncer.block_private)
        .await
        .map_err(|reason| Error::invalid("url", reason))?;
    let remote = Remote::new(&parsed, username, password, syncer.block_private).map_err(refused_by)?;
    if source == Source::Calendar && (webcal || parsed.path().to_ascii_lowercase().ends_with(".ics")) {
        feed_check(&remote, &parsed).await.map_err(refused_by)?;
        return Ok((url.to_string(), true));
    }
    let found = discover(&remote, &parsed, source).await.map_err(refused_by)?;
    let same = |c: &Collection| c.url.trim_end_matches('/') == parsed.as_str().trim_end_matches('/');
    match found.as_slice() {
        [] if source == Source::Calendar => {
            feed_check(&remote, &parsed).await.map_err(|_| {
                Error::invalid("url", format!("no {} (and no iCalendar file) was found there", noun(source)))
            })?;
            Ok((url.to_string(), true))
        }
        [] => Err(Error::invalid("url", format!("no {} was found there", noun(source)))),
        [one] => Ok((one.url.clone(), false)),
        many => match many.iter().find(|c| same(c)) {
            Some(c) => Ok((c.url.clone(), false)),
            None => {
                let list: Vec<&str> = many.iter().map(|c| c.url.as_str()).collect();
                Err(Error::invalid(
                    "url",
                    format!(
                        "{} {}s were found there; subscribe to one of them: {}",
                        many.len(),
                        noun(source),
                        list.join(", ")
                    ),
                ))
            }
        },
    }
}

/// Whether `url` answers a `GET` with an iCalendar file.
async fn feed_check(remote: &Remote, url: &reqwest::Url) -> std::result::Result<(), Failure> {
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let answer = remote.get(&path).await?;
    let head: String =
        String::from_utf8_lossy(&answer.body[..answer.body.len().min(64)]).trim_start().to_ascii_uppercase();
    if head.starts_with("BEGIN:VCALENDAR") {
        Ok(())
    } else {
        Err(Failure::new(Class::Gone, "The address does not answer with an iCalendar file."))
    }
}

fn seal(syncer: &Syncer, user: u64, password: &str) -> Result<Vec<u8>> {
    if password.is_empty() {
        return Ok(Vec::new());
    }
    syncer.data_key.encrypt(password.as_bytes(), &binding(user)).map_err(Error::internal)
}

fn owned(view: &mycorrhizal_engine::GlobalView, user: u64, id: u64, source: Source) -> Result<Subscription> {
    match view.get::<Subscription>(id) {
        Ok(sub) if sub.user_id == user && sub.source == source => Ok(sub),
        Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => Err(Error::NotFound),
        Err(e) => Err(e.into()),
    }
}

/// Creates a subscription of `user`'s: the address is checked and its collection found first
/// (the connection is tested), so what is stored can be synced.
pub async fn create(syncer: &Syncer, user: u64, source: Source, input: SubscriptionInput) -> Result<SubscriptionView> {
    let name = check_name(input.name.as_deref().ok_or_else(|| Error::invalid("name", "is required"))?)?;
    let url = input.url.as_deref().ok_or_else(|| Error::invalid("url", "is required"))?;
    let username = input.username.clone().unwrap_or_default();
    check_text("username", &username, 200)?;
    let password =
        if input.clear_password == Some(true) { String::new() } else { input.password.clone().unwrap_or_default() };
    check_text("password", &password, 500)?;
    let past_days = check_days("past_days", input.past_days, source)?.unwrap_or(DEFAULT_PAST_DAYS);
    let future_days = check_days("future_days", input.future_days, source)?.unwrap_or(DEFAULT_FUTURE_DAYS);
    let (url, feed) = resolve(syncer, source, url, &username, &password).await?;
    let sealed_password = seal(syncer, user, &password)?;
    let sync_enabled = input.sync_enabled.unwrap_or(true);
    let (id, sub) = syncer
        .engine
        .write_async(move |tx| {
            let count = tx
                .global()
                .list::<Subscription>()?
                .iter()
                .filter(|(_, s)| s.user_id == user && s.source == source)
                .count();
            if count >= MAX_PER_USER {
                return Ok(Err(Error::Conflict(format!("at most {MAX_PER_USER} subscriptions of this kind per user"))));
            }
            let now = tx.now();
            let sub = Subscription {
                user_id: user,
                source,
                name: name.clone(),
                url: url.clone(),
                username: username.clone(),
                sealed_password: sealed_password.clone(),
                sync_enabled,
                feed,
                past_days,
                future_days,
                created_at: now,
                updated_at: now,
                state: SyncState::default(),
            };
            let id = tx.global().insert(&sub)?;
            Ok(Ok((id, sub)))
        })
        .await??;
    Ok(SubscriptionView::of(id, &sub, false))
}

/// `user`'s subscriptions of `source`, oldest first.
pub fn list(syncer: &Syncer, user: u64, source: Source) -> Result<Vec<SubscriptionView>> {
    let view = syncer.engine.global()?;
    let mut out = Vec::new();
    view.scan::<Subscription>(|id, sub| {
        if sub.user_id == user && sub.source == source {
            out.push(SubscriptionView::of(id, &sub, syncer.is_running(id)));
        }
        true
    })?;
    Ok(out)
}

pub fn get(syncer: &Syncer, user: u64, source: Source, id: u64) -> Result<SubscriptionView> {
    let sub = owned(&syncer.engine.global()?, user, id, source)?;
    Ok(SubscriptionView::of(id, &sub, syncer.is_running(id)))
}

/// Changes a subscription. Any change clears a terminal failure and makes it due at once; a new
/// address is resolved again, and what the old collection brought in stays, now local.
pub async fn update(
    syncer: &Syncer,
    user: u64,
    source: Source,
    id: u64,
    input: SubscriptionInput,
) -> Result<SubscriptionView> {
    let current = owned(&syncer.engine.global()?, user, id, source)?;
    let name = input.name.as_deref().map(check_name).transpose()?;
    let username = input.username.clone();
    if let Some(u) = &username {
        check_text("username", u, 200)?;
    }
    let new_password = match (input.clear_password, input.password.as_deref()) {
        (Some(true), _) => Some(String::new()),
        (_, Some(p)) if !p.is_empty() => {
            check_text("password", p, 500)?;
            Some(p.to_string())
        }
        _ => None,
    };
    let past_days = check_days("past_days", input.past_days, source)?;
    let future_days = check_days("future_days", input.future_days, source)?;
    let resolved = match input.url.as_deref() {
        Some(url) if url.trim() != current.url => {
            let password = match &new_password {
                Some(p) => p.clone(),
                None => super::run::password(syncer, &current).map_err(refused_by)?,
            };
            let username = username.clone().unwrap_or_else(|| current.username.clone());
            Some(resolve(syncer, source, url, &username, &password).await?)
        }
        _ => None,
    };
    let sealed = new_password.as_deref().map(|p| seal(syncer, user, p)).transpose()?;
    let sync_enabled = input.sync_enabled;
    let sub = syncer
        .engine
        .write_async(move |tx| {
            let mut sub = match tx.global().get::<Subscription>(id) {
                Ok(sub) if sub.user_id == user => sub,
                Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => return Ok(Err(Error::NotFound)),
                Err(e) => return Err(e),
            };
            if let Some((url, feed)) = &resolved {
                // Another collection: what the old one brought in stays, detached.
                let kind = sub.source.kind();
                for (href, link) in super::links_in(tx, id)? {
                    super::drop_link(tx, id, user, kind, &href, &link)?;
                }
                sub.url = url.clone();
                sub.feed = *feed;
                sub.state.sync_token.clear();
                sub.state.ctag.clear();
                sub.state.incremental = false;
            }
            if let Some(name) = &name {
                sub.name = name.clone();
            }
            if let Some(username) = &username {
                sub.username = username.clone();
            }
            if let Some(sealed) = &sealed {
                sub.sealed_password = sealed.clone();
            }
            if let Some(on) = sync_enabled {
                sub.sync_enabled = on;
            }
            if let Some(d) = past_days {
                sub.past_days = d;
            }
            if let Some(d) = future_days {
                sub.future_days = d;
            }
            sub.state.terminal_failure_at = None;
            sub.state.terminal_reason.clear();
            sub.state.next_due_at = None;
            sub.updated_at = tx.now();
            tx.global().put(id, &sub)?;
            Ok(Ok(sub))
        })
        .await??;
    Ok(SubscriptionView::of(id, &sub, syncer.is_running(id)))
}

/// Deletes a subscription; what it brought in stays, as the user's own records.
pub async fn delete(syncer: &Syncer, user: u64, source: Source, id: u64) -> Result<()> {
    owned(&syncer.engine.global()?, user, id, source)?;
    syncer
        .engine
        .write_async(move |tx| match tx.global().get::<Subscription>(id) {
            Ok(sub) if sub.user_id == user => remove_in(tx, id, &sub),
            Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => Ok(()),
            Err(e) => Err(e),
        })
        .await?;
    Ok(())
}

/// The collections of `source` reachable from an address (a form's "find my address books").
pub async fn find(syncer: &Syncer, source: Source, input: DiscoverInput) -> Result<Collections> {
    let url = input.url.trim();
    let parsed = parse_url(url).map_err(refused_by)?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Error::invalid("url", "must be an http or https address with a host"));
    }
    crate::outbound::check(parsed.as_str(), syncer.block_private)
        .await
        .map_err(|reason| Error::invalid("url", reason))?;
    let remote = Remote::new(&parsed, &input.username, &input.password, syncer.block_private).map_err(refused_by)?;
    let collections = discover(&remote, &parsed, source).await.map_err(refused_by)?;
    Ok(Collections { collections })
}

/// What a connection test found.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestResult {
    pub ok: bool,
    pub message: String,
    /// The failure's class when not `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
}

/// Tests a stored subscription's connection: its server answers, accepts the credentials and
/// still has the collection (nothing is synced or changed).
pub async fn test(syncer: &Syncer, user: u64, source: Source, id: u64) -> Result<TestResult> {
    let sub = owned(&syncer.engine.global()?, user, id, source)?;
    let outcome = async {
        let (remote, url) = super::run::connect(syncer, &sub)?;
        if sub.feed {
            return feed_check(&remote, &url).await;
        }
        let found = discover(&remote, &url, source).await?;
        let here = found.iter().any(|c| c.url.trim_end_matches('/') == sub.url.trim_end_matches('/'));
        if here {
            Ok(())
        } else {
            Err(Failure::new(Class::Gone, format!("The {} is not there any more.", noun(source))))
        }
    }
    .await;
    Ok(match outcome {
        Ok(()) => TestResult { ok: true, message: format!("Connected; the {} is there.", noun(source)), class: None },
        Err(f) => TestResult { ok: false, message: f.message, class: Some(f.class) },
    })
}

/// Subscription `id` once the sync running now has ended (at most `limit`): a "sync now" asked
/// while one runs answers with that one's outcome (the existing web client asks right after
/// creating one, whose first sync has started).
pub async fn after_running(
    syncer: &Syncer,
    user: u64,
    source: Source,
    id: u64,
    limit: std::time::Duration,
) -> Result<SubscriptionView> {
    let deadline = std::time::Instant::now() + limit;
    while syncer.is_running(id) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let syncer_ = syncer.clone();
    crate::crm::blocking(&syncer.engine, move |_| get(&syncer_, user, source, id)).await?
}
