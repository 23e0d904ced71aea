//! One pass over a remote calendar (CalDAV, or a plain iCalendar file read with `GET`), the
//! remote copy winning. Each event, and each instance of a recurring one, that starts inside the
//! subscription's window (`past_days` back, `future_days` ahead) becomes an activity: its title,
//! description, location and start; the event's UID as its `external_ref` (`uuid`: the UID, or
//! `<UID>#<instance>` for an instance); the contacts whose email an attendee, the organizer or an
//! `X-` property names. A changed resource overwrites its activities (matched by UID and
//! instance), an instance or event gone removes its activity, a resource gone removes them all.
//! Resources holding a recurring event are read again at every pass, since the window moves.

use std::collections::{HashMap, HashSet};

use jiff::{SignedDuration, Timestamp};
use libdav::caldav::GetCalendarResources;
use mycorrhizal_codecs::ical::{Occurrence, occurrences};
use mycorrhizal_engine::{Engine, Precondition, TxUser, UserId};

use super::listing::{is_member, list};
use super::remote::{Failure, Remote};
use super::{Counts, Link, Pass, Subscription, drop_link, put_link};
use crate::crm::activity::Activity;
use crate::crm::contact::{Contact, INDEX_EMAIL};

/// Resources asked for in one multiget.
const BATCH: usize = 100;
/// The href a plain iCalendar file's events are linked under.
const FEED: &str = "feed";
/// What an activity from a calendar is (its open-vocabulary type).
pub const KIND: &str = "calendar_event";

/// The window of `sub` at `now`, in seconds since the epoch.
fn window(sub: &Subscription, now: Timestamp) -> (i64, i64) {
    let day = |d: u32| SignedDuration::from_hours(i64::from(d) * 24);
    let from = now.checked_sub(day(sub.past_days)).unwrap_or(now);
    let to = now.checked_add(day(sub.future_days)).unwrap_or(now);
    (from.as_second(), to.as_second())
}

/// Syncs subscription `id` (a calendar at `url`) into its owner's activities.
pub async fn pass(
    engine: &Engine,
    id: u64,
    sub: &Subscription,
    remote: &Remote,
    url: &reqwest::Url,
) -> Result<Pass, Failure> {
    let links = super::listing::links_of(engine, id).await?;
    let mut out = Pass::default();
    let span = window(sub, engine.clock().now());
    if sub.feed {
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let answer = remote.get(&path).await?;
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        let etag =
            answer.parts.headers.get("etag").and_then(|v| v.to_str().ok()).map(str::to_string).unwrap_or_else(|| {
                use sha2::Digest;
                hex::encode(sha2::Sha256::digest(&answer.body))
            });
        apply(engine, id, sub, &links, FEED, &text, etag, span, &mut out).await?;
        return Ok(out);
    }
    let collection = url.path().to_string();
    let Some(listing) = list(remote, &collection, sub, &links).await? else {
        // The collection's tag has not moved; recurring events still move with the window.
        let recurring: Vec<String> = links.iter().filter(|(_, l)| l.recurring).map(|(h, _)| h.clone()).collect();
        out.counts.unchanged = (links.len() - recurring.len()) as u64;
        out.ctag = sub.state.ctag.clone();
        fetch(engine, id, sub, remote, &collection, &links, recurring, span, &mut out).await?;
        return Ok(out);
    };
    out.sync_token = listing.sync_token;
    out.ctag = listing.ctag;
    out.incremental = listing.incremental;
    let mut to_fetch: Vec<String> = Vec::new();
    let mut named: HashSet<String> = HashSet::new();
    for (href, etag) in listing.changed {
        named.insert(href.clone());
        match links.get(&href) {
            Some(link) if !etag.is_empty() && link.etag == etag && !link.recurring => out.counts.unchanged += 1,
            _ => to_fetch.push(href),
        }
    }
    // Recurring events not in an incremental listing are expanded again too.
    for (href, link) in &links {
        if link.recurring && !named.contains(href) && !listing.gone.contains(href) {
            to_fetch.push(href.clone());
        }
    }
    fetch(engine, id, sub, remote, &collection, &links, to_fetch, span, &mut out).await?;
    for href in listing.gone {
        if let Some(link) = links.get(&href) {
            out.counts.deleted += remove(engine, id, sub.user_id, &href, link).await?;
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
async fn fetch(
    engine: &Engine,
    id: u64,
    sub: &Subscription,
    remote: &Remote,
    collection: &str,
    links: &HashMap<String, Link>,
    hrefs: Vec<String>,
    span: (i64, i64),
    out: &mut Pass,
) -> Result<(), Failure> {
    for batch in hrefs.chunks(BATCH) {
        let request = GetCalendarResources::new(collection).with_hrefs(batch);
        for resource in remote.send(&request).await?.resources {
            if !is_member(collection, &resource.href) {
                continue;
            }
            match resource.content {
                Ok(content) => {
                    apply(engine, id, sub, links, &resource.href, &content.data, content.etag, span, out).await?;
                }
                Err(status) if status.as_u16() == 404 || status.as_u16() == 410 => {
                    if let Some(link) = links.get(&resource.href) {
                        out.counts.deleted += remove(engine, id, sub.user_id, &resource.href, link).await?;
                    }
                }
                Err(status) => out.skip(&resource.href, format!("the server answered HTTP {status} for it")),
            }
        }
    }
    Ok(())
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The activity an occurrence becomes (its contacts found by the caller).
fn activity_of(o: &Occurrence, contact_ids: Vec<u64>) -> Activity {
    let title = if o.summary.trim().is_empty() { "(untitled event)".to_string() } else { clip(o.summary.trim(), 200) };
    Activity {
        uuid: if o.instance.is_empty() { o.uid.clone() } else { format!("{}#{}", o.uid, o.instance) },
        title,
        description: clip(&o.description, 2000),
        location: clip(&o.location, 300),
        date: Timestamp::from_second(o.start).unwrap_or(Timestamp::UNIX_EPOCH),
        contact_ids,
        kind: KIND.into(),
        external_ref: o.uid.clone(),
        dav_name: String::new(),
        ical: String::new(),
    }
}

/// The user's live contacts holding one of `emails`.
fn contacts_of(tx: &TxUser<'_, '_>, emails: &[String]) -> mycorrhizal_engine::Result<Vec<u64>> {
    let mut ids = Vec::new();
    for email in emails {
        for id in tx.find::<Contact>(INDEX_EMAIL, email)? {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// Stores the occurrences of one resource in one transaction: an occurrence already linked is
/// overwritten, a new one created, one no longer there removed; then its link.
#[allow(clippy::too_many_arguments)]
async fn apply(
    engine: &Engine,
    id: u64,
    sub: &Subscription,
    links: &HashMap<String, Link>,
    href: &str,
    text: &str,
    etag: String,
    span: (i64, i64),
    out: &mut Pass,
) -> Result<(), Failure> {
    let found = match occurrences(text, span.0, span.1) {
        Ok(found) => found,
        Err(reason) => {
            out.skip(href, reason);
            return Ok(());
        }
    };
    let recurring = found.iter().any(|o| !o.instance.is_empty()) || text.contains("RRULE:");
    let before: HashMap<String, u64> = links.get(href).map(|l| l.events.iter().cloned().collect()).unwrap_or_default();
    let (user, href_owned, old_link) = (sub.user_id, href.to_string(), links.get(href).cloned());
    let counts = engine
        .write_async(move |tx| {
            let mut counts = Counts::default();
            let mut events: Vec<(String, u64)> = Vec::new();
            {
                let scope = tx.user(UserId(user));
                for o in &found {
                    let key = format!("{}#{}", o.uid, o.instance);
                    if events.iter().any(|(k, _)| *k == key) {
                        continue;
                    }
                    let activity = activity_of(o, contacts_of(&scope, &o.emails)?);
                    let kept = match before.get(&key) {
                        Some(existing) => match scope.get::<Activity>(*existing) {
                            Ok(current)
                                if current.body.title == activity.title
                                    && current.body.description == activity.description
                                    && current.body.location == activity.location
                                    && current.body.date == activity.date
                                    && current.body.contact_ids == activity.contact_ids =>
                            {
                                counts.unchanged += 1;
                                Some(*existing)
                            }
                            Ok(_) => {
                                let fresh = activity.clone();
                                scope.update::<Activity>(*existing, Precondition::Any, move |a| {
                                    *a = Activity { dav_name: std::mem::take(&mut a.dav_name), ..fresh.clone() };
                                    Ok(())
                                })?;
                                counts.updated += 1;
                                Some(*existing)
                            }
                            // Deleted here: remote wins, it comes back.
                            Err(mycorrhizal_engine::Error::NotFound) => None,
                            Err(e) => return Err(e),
                        },
                        None => None,
                    };
                    let record = match kept {
                        Some(record) => record,
                        None => {
                            counts.created += 1;
                            scope.create(activity)?.id
                        }
                    };
                    events.push((key, record));
                }
                for (key, record) in &before {
                    if !events.iter().any(|(k, _)| k == key) {
                        match scope.delete::<Activity>(*record, Precondition::Any) {
                            Ok(()) => counts.deleted += 1,
                            Err(mycorrhizal_engine::Error::NotFound) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
            if let Some(old) = &old_link {
                drop_link(tx, id, user, "activity", &href_owned, old)?;
            }
            let link = Link { record: 0, etag: etag.clone(), events, recurring };
            put_link(tx, id, user, "activity", &href_owned, &link)?;
            Ok(counts)
        })
        .await
        .map_err(Failure::local)?;
    out.counts.created += counts.created;
    out.counts.updated += counts.updated;
    out.counts.deleted += counts.deleted;
    out.counts.unchanged += counts.unchanged;
    Ok(())
}

/// The resource at `href` is gone: its activities go. One transaction; how many went.
async fn remove(engine: &Engine, id: u64, user: u64, href: &str, link: &Link) -> Result<u64, Failure> {
    let (href, link) = (href.to_string(), link.clone());
    engine
        .write_async(move |tx| {
            let mut removed = 0;
            {
                let scope = tx.user(UserId(user));
                for (_, record) in &link.events {
                    match scope.delete::<Activity>(*record, Precondition::Any) {
                        Ok(()) => removed += 1,
                        Err(mycorrhizal_engine::Error::NotFound) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            drop_link(tx, id, user, "activity", &href, &link)?;
            Ok(removed)
        })
        .await
        .map_err(Failure::local)
}
