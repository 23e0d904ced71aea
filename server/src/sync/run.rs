//! One sync attempt of one subscription, and when each is due.
//!
//! An attempt: never two of one subscription at once ([`Syncer`] holds who is running);
//! `sync_started`, then the pass, then `sync_completed` with the counts or `sync_failed` with the
//! failure's class; the clocks of the spec kept on the subscription (last attempt, success and
//! failure, the incident's first failure, a terminal failure and its reason). A terminal class
//! (credentials refused, the collection gone, the address refused) stops the schedule until the
//! subscription is edited; other failures are retried with a backoff (5 minutes, doubling, at
//! most the interval). The schedule spreads subscriptions over a tenth of their interval.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::Engine;
use mycorrhizal_engine::system::JobResult;
use serde_json::json;

use super::remote::{Class, Failure, Remote};
use super::{Counts, Source, Subscription, addressbook};
use crate::keys::DataKey;
use crate::ops::events::{Event, emit};

/// An address book is looked at every hour: an incremental pass asks only what changed.
pub const ADDRESS_BOOK_EVERY: Duration = Duration::from_secs(3600);
/// The first retry after a failure that may mend; it doubles up to the interval.
const FIRST_RETRY: Duration = Duration::from_secs(5 * 60);

/// What syncing needs, shared by the schedule and the doors.
#[derive(Clone)]
pub struct Syncer {
    pub engine: Engine,
    pub data_key: DataKey,
    /// `CALDAV_BLOCK_PRIVATE_URLS`.
    pub block_private: bool,
    /// `CALDAV_SYNC_INTERVAL_HOURS`.
    pub calendar_every: Duration,
    running: Arc<Mutex<HashSet<u64>>>,
}

impl Syncer {
    pub fn new(engine: Engine, data_key: DataKey, block_private: bool, calendar_every: Duration) -> Syncer {
        Syncer { engine, data_key, block_private, calendar_every, running: Arc::default() }
    }

    /// How often a subscription of `source` is synced.
    pub fn every(&self, source: Source) -> Duration {
        match source {
            Source::AddressBook => ADDRESS_BOOK_EVERY,
            Source::Calendar => self.calendar_every,
        }
    }

    /// Whether subscription `id` is being synced now.
    pub fn is_running(&self, id: u64) -> bool {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(&id)
    }
}

/// Subscription `id` marked running in `running` until dropped.
struct Turn<'s> {
    running: &'s Mutex<HashSet<u64>>,
    id: u64,
}

impl<'s> Turn<'s> {
    fn take(running: &'s Mutex<HashSet<u64>>, id: u64) -> Option<Turn<'s>> {
        let mut held = running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Not `then_some`: a turn made and dropped here would lock the held mutex again, and
        // free another attempt's subscription.
        if held.insert(id) { Some(Turn { running, id }) } else { None }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.id);
    }
}

/// Where a sync's time went.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, utoipa::ToSchema)]
pub struct Timing {
    /// The whole attempt.
    pub duration_ms: u64,
    /// Waiting on the remote server (its answers and their transfer); the rest is this server's.
    pub remote_ms: u64,
}

/// How an attempt ended.
#[derive(Debug)]
pub enum Attempt {
    Synced(Counts, Timing),
    Failed(Failure),
    /// Another sync of it is running.
    Busy,
    /// It is not there any more.
    Gone,
}

/// The password of `sub`, or the failure of reading it back.
pub(crate) fn password(syncer: &Syncer, sub: &Subscription) -> Result<String, Failure> {
    if sub.sealed_password.is_empty() {
        return Ok(String::new());
    }
    syncer
        .data_key
        .decrypt(&sub.sealed_password, &super::binding(sub.user_id))
        .and_then(|p| String::from_utf8(p).ok())
        .ok_or_else(|| {
            Failure::new(
                Class::Credentials,
                "The stored password cannot be read (the server's key changed); enter it again.",
            )
        })
}

/// A connection to `sub`'s server and its address, parsed.
pub(crate) fn connect(syncer: &Syncer, sub: &Subscription) -> Result<(Remote, reqwest::Url), Failure> {
    let url = parse_url(&sub.url)?;
    let password = password(syncer, sub)?;
    Ok((Remote::new(&url, &sub.username, &password, syncer.block_private)?, url))
}

/// `url` as a request address (`webcal` is `https`).
pub(crate) fn parse_url(url: &str) -> Result<reqwest::Url, Failure> {
    let url = match url.strip_prefix("webcal://") {
        Some(rest) => format!("https://{rest}"),
        None => url.to_string(),
    };
    reqwest::Url::parse(&url).map_err(|e| Failure::new(Class::Gone, format!("The address cannot be used: {e}.")))
}

/// Syncs subscription `id` once now.
pub async fn attempt(syncer: &Syncer, id: u64) -> Attempt {
    let Some(_turn) = Turn::take(&syncer.running, id) else { return Attempt::Busy };
    let engine = &syncer.engine;
    let sub = match read(engine, id).await {
        Ok(Some(sub)) => sub,
        Ok(None) => return Attempt::Gone,
        Err(e) => return Attempt::Failed(Failure::new(Class::Local, e.to_string())),
    };
    let component = sub.source.component();
    let started = std::time::Instant::now();
    let started_at = engine.clock().now();
    let source = match sub.source {
        Source::AddressBook => "address_book",
        Source::Calendar => "calendar",
    };
    emit(engine, Event::info(component, "sync_started").user(sub.user_id).detail(json!({ "source": source }))).await;
    let mut remote_wait = Duration::ZERO;
    let outcome = match connect(syncer, &sub) {
        Ok((remote, url)) => {
            let outcome = match sub.source {
                Source::AddressBook => addressbook::pass(engine, id, &sub, &remote, &url).await,
                Source::Calendar => super::calendar::pass(engine, id, &sub, &remote, &url).await,
            };
            remote_wait = remote.waited();
            outcome
        }
        Err(f) => Err(f),
    };
    let ms = started.elapsed().as_millis() as u64;
    let timing = Timing { duration_ms: ms, remote_ms: remote_wait.as_millis() as u64 };
    let every = syncer.every(sub.source);
    let stored = store(engine, id, sub.updated_at, started_at, every, &outcome).await;
    if let Err(e) = stored {
        tracing::error!(event = "sync_state_not_stored", component, error = %e);
    }
    match outcome {
        Ok(super::Pass { counts, .. }) => {
            let detail = json!({
                "source": source, "created": counts.created, "updated": counts.updated, "deleted": counts.deleted,
                "kept": counts.kept, "unchanged": counts.unchanged, "skipped": counts.skipped,
                "remote_ms": timing.remote_ms,
            });
            emit(engine, Event::info(component, "sync_completed").user(sub.user_id).duration_ms(ms).detail(detail))
                .await;
            Attempt::Synced(counts, timing)
        }
        Err(failure) => {
            let severity_event = if failure.class.terminal() {
                Event::error(component, "sync_failed", failure.message.clone())
            } else {
                let mut e = Event::warn(component, "sync_failed");
                e.error = Some(failure.message.clone());
                e
            };
            let detail =
                json!({ "source": source, "class": failure.class.name(), "terminal": failure.class.terminal() });
            emit(engine, severity_event.user(sub.user_id).duration_ms(ms).detail(detail).result(JobResult::Failure))
                .await;
            Attempt::Failed(failure)
        }
    }
}

async fn read(engine: &Engine, id: u64) -> mycorrhizal_engine::Result<Option<Subscription>> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || match engine.global()?.get::<Subscription>(id) {
        Ok(sub) => Ok(Some(sub)),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    })
    .await
    .map_err(|e| mycorrhizal_engine::Error::Io(std::io::Error::other(e.to_string())))?
}

type Outcome = Result<super::Pass, Failure>;

/// A spread of up to a tenth of `every`, fixed per subscription.
fn jitter(id: u64, every: Duration) -> Duration {
    let tenth = (every.as_secs() / 10).max(1);
    Duration::from_secs(id.wrapping_mul(0x9E37_79B9_7F4A_7C15) % tenth)
}

fn later(now: Timestamp, by: Duration) -> Timestamp {
    now.checked_add(SignedDuration::try_from(by).unwrap_or(SignedDuration::from_hours(24))).unwrap_or(now)
}

/// Keeps the attempt's outcome on the subscription. A subscription edited while it ran keeps
/// the clocks but not the token (it may name another collection now).
async fn store(
    engine: &Engine,
    id: u64,
    version: Timestamp,
    started_at: Timestamp,
    every: Duration,
    outcome: &Outcome,
) -> mycorrhizal_engine::Result<()> {
    let outcome = match outcome {
        Ok(pass) => {
            Ok((pass.counts, pass.skipped.clone(), pass.sync_token.clone(), pass.ctag.clone(), pass.incremental))
        }
        Err(f) => Err(f.clone()),
    };
    engine
        .write_async(move |tx| {
            let mut sub = match tx.global().get::<Subscription>(id) {
                Ok(sub) => sub,
                Err(mycorrhizal_engine::Error::NotFound) => return Ok(()),
                Err(e) => return Err(e),
            };
            let now = tx.now();
            let same = sub.updated_at == version;
            let state = &mut sub.state;
            state.last_attempt_at = Some(started_at);
            match &outcome {
                Ok((counts, skipped, token, ctag, incremental)) => {
                    state.last_success_at = Some(now);
                    state.incident_first_failure_at = None;
                    state.consecutive_failures = 0;
                    state.last_error.clear();
                    state.last_error_class.clear();
                    state.last_counts = *counts;
                    state.skipped = skipped.clone();
                    if same {
                        state.sync_token = token.clone();
                        state.ctag = ctag.clone();
                        state.incremental = *incremental;
                    }
                    state.next_due_at = Some(later(now, every + jitter(id, every)));
                }
                Err(failure) => {
                    state.last_failure_at = Some(now);
                    state.incident_first_failure_at.get_or_insert(now);
                    state.consecutive_failures += 1;
                    state.last_error = crate::ops::events::sanitise(&failure.message);
                    state.last_error_class = failure.class.name().to_string();
                    if failure.class.terminal() && same {
                        state.terminal_failure_at = Some(now);
                        state.terminal_reason = state.last_error.clone();
                    }
                    let backoff = FIRST_RETRY.saturating_mul(1 << state.consecutive_failures.saturating_sub(1).min(10));
                    state.next_due_at = Some(later(now, backoff.min(every)));
                }
            }
            tx.global().put(id, &sub)
        })
        .await
}

/// The subscriptions whose sync is due at `now`: enabled, not stopped by a terminal failure,
/// and past their next due time (never synced: due at once).
pub fn due(engine: &Engine, now: Timestamp) -> mycorrhizal_engine::Result<Vec<(u64, Source)>> {
    let mut out = Vec::new();
    engine.global()?.scan::<Subscription>(|id, sub| {
        let state = &sub.state;
        if sub.sync_enabled && state.terminal_failure_at.is_none() && state.next_due_at.is_none_or(|at| at <= now) {
            out.push((id, sub.source));
        }
        true
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_turn_of_one_subscription_is_refused_until_the_first_ends() {
        let running = Mutex::new(HashSet::new());
        let first = Turn::take(&running, 1).expect("the first turn");
        assert!(Turn::take(&running, 1).is_none(), "one at a time");
        assert!(running.lock().unwrap().contains(&1), "a refused turn leaves the first one running");
        assert!(Turn::take(&running, 2).is_some(), "another subscription is not held up");
        drop(first);
        assert!(!running.lock().unwrap().contains(&1));
        assert!(Turn::take(&running, 1).is_some());
    }

    #[test]
    fn the_spread_stays_inside_a_tenth_of_the_interval_and_differs_between_subscriptions() {
        let every = Duration::from_secs(3600);
        let spreads: HashSet<Duration> = (1..50).map(|id| jitter(id, every)).collect();
        assert!(spreads.iter().all(|d| *d < Duration::from_secs(360)));
        assert!(spreads.len() > 20, "{spreads:?}");
    }
}
