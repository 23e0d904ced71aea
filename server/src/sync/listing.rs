//! What changed in a remote collection since the last pass: with a sync token, RFC 6578
//! `sync-collection` from it (a token the server no longer accepts starts a full pass); without
//! one, a full `sync-collection` where the collection offers it, else its `getctag` (unchanged:
//! nothing to do) and every resource's ETag. A full pass also finds what went away: links the
//! listing no longer names.

use std::collections::{HashMap, HashSet};

use libdav::caldav::FindCalendars;
use libdav::carddav::FindAddressBooks;
use libdav::dav::{GetProperty, ListResources, SyncCollection};
use libdav::{PropertyName, names};

use super::remote::{Class, Failure, Remote};
use super::{Link, Source, Subscription};

/// Every link of subscription `sub`, read off the async threads (a pass's first step).
pub(crate) async fn links_of(engine: &mycorrhizal_engine::Engine, sub: u64) -> Result<HashMap<String, Link>, Failure> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || super::links(&engine.global()?, sub))
        .await
        .map_err(Failure::local)?
        .map_err(Failure::local)
}

const GETCTAG: PropertyName = PropertyName::new(names::CALENDAR_SERVER, "getctag");

/// What the listing said: resources new or changed (href, ETag) and hrefs gone.
pub struct Listing {
    pub changed: Vec<(String, String)>,
    pub gone: Vec<String>,
    pub sync_token: String,
    pub ctag: String,
    pub incremental: bool,
}

/// What changed since the last pass, or `None` when the collection's tag says nothing did.
pub async fn list(
    remote: &Remote,
    collection: &str,
    sub: &Subscription,
    links: &HashMap<String, Link>,
) -> Result<Option<Listing>, Failure> {
    let state = &sub.state;
    let wanted = match sub.source {
        Source::AddressBook => "vcard",
        Source::Calendar => "calendar",
    };
    if !state.sync_token.is_empty() {
        let request = SyncCollection::new(collection).with_sync_token(&state.sync_token);
        match remote.send(&request).await {
            Ok(answer) => {
                return Ok(Some(Listing {
                    changed: answer
                        .changed
                        .into_iter()
                        .filter(|r| is_member(collection, &r.href))
                        .map(|r| (r.href, r.etag.unwrap_or_default()))
                        .collect(),
                    gone: answer.deleted,
                    sync_token: answer.new_sync_token,
                    ctag: String::new(),
                    incremental: true,
                }));
            }
            Err(f) if f.class == Class::TokenInvalid => {
                tracing::info!(event = "sync_token_invalid", component = sub.source.component(), "a full pass follows");
            }
            Err(f) => return Err(f),
        }
    }
    // A full pass: does the collection offer sync-collection?
    let about = match sub.source {
        Source::AddressBook => remote.send(&FindAddressBooks::new(collection)).await?.addressbooks,
        Source::Calendar => remote.send(&FindCalendars::new(collection)).await?.calendars,
    };
    let offers_sync = about.iter().find(|c| same_path(&c.href, collection)).is_some_and(|c| c.supports_sync);
    let (changed, sync_token, ctag): (Vec<(String, String)>, String, String) = if offers_sync {
        let answer = remote.send(&SyncCollection::new(collection)).await?;
        let changed = answer
            .changed
            .into_iter()
            .filter(|r| is_member(collection, &r.href))
            .map(|r| (r.href, r.etag.unwrap_or_default()))
            .collect();
        (changed, answer.new_sync_token, String::new())
    } else {
        let ctag =
            remote.send(&GetProperty::new(collection, &GETCTAG)).await.ok().and_then(|p| p.value).unwrap_or_default();
        if !ctag.is_empty() && ctag == state.ctag && state.last_success_at.is_some() {
            return Ok(None);
        }
        let listed = remote.send(&ListResources::new(collection)).await?.resources;
        let changed = listed
            .into_iter()
            .filter(|r| is_member(collection, &r.href))
            .filter(|r| r.content_type.as_deref().is_none_or(|t| t.to_ascii_lowercase().contains(wanted)))
            .map(|r| (r.href, r.etag.unwrap_or_default()))
            .collect();
        (changed, String::new(), ctag)
    };
    let listed: HashSet<&str> = changed.iter().map(|(h, _): &(String, String)| h.as_str()).collect();
    let gone = links.keys().filter(|h| !listed.contains(h.as_str())).cloned().collect();
    Ok(Some(Listing { changed, gone, sync_token, ctag, incremental: offers_sync }))
}

fn same_path(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// A resource of the collection, not the collection itself or a sub-collection.
pub fn is_member(collection: &str, href: &str) -> bool {
    !same_path(href, collection) && !href.ends_with('/')
}
