//! One pass over a remote address book, the remote copy winning.
//!
//! - **What changed**: with a sync token, RFC 6578 `sync-collection` from it (a token the server
//!   no longer accepts starts a full pass); without one, a full `sync-collection` where the
//!   collection offers it, else its `getctag` (unchanged: nothing to do) and every card's ETag.
//!   A full pass also finds what went away: links the listing no longer names.
//! - **Bodies** in `addressbook-multiget` batches of [`BATCH`]; each card is stored the way a
//!   CardDAV PUT stores it (`crm::contact::card::put`: the same codecs, the photo as the
//!   contact's picture, the CRM envelope kept), under the linked contact's name or else the
//!   card's UID, so a contact already holding that UID is adopted, never doubled. A card that
//!   does not read is skipped with its reason; the rest go on.
//! - **Removals**: the local copy is deleted, unless something the CRM keeps hangs off it
//!   (a note, an activity, a reminder, an edge...): then it is archived and becomes local, so
//!   nothing the user wrote is lost.

use std::collections::{HashMap, HashSet};

use libdav::FetchedResource;
use libdav::carddav::GetAddressBookResources;
use mycorrhizal_engine::{Engine, Precondition, UserId};

use super::remote::{Failure, Remote};
use super::{Counts, Link, Pass, Subscription, drop_link, put_link};
use crate::crm::contact::{Contact, card};

/// Cards asked for in one multiget.
pub const BATCH: usize = 100;
/// Cards stored at once (the writer batches them).
const IN_FLIGHT: usize = 32;

/// Syncs subscription `id` (an address book at `url`) into its owner's contacts.
pub async fn pass(
    engine: &Engine,
    id: u64,
    sub: &Subscription,
    remote: &Remote,
    url: &reqwest::Url,
) -> Result<Pass, Failure> {
    let collection = url.path().to_string();
    let links = super::listing::links_of(engine, id).await?;
    let listing = match super::listing::list(remote, &collection, sub, &links).await? {
        Some(listing) => listing,
        None => {
            // The collection's tag has not moved: nothing changed.
            let counts = Counts { unchanged: links.len() as u64, ..Counts::default() };
            let state = &sub.state;
            return Ok(Pass {
                counts,
                skipped: Vec::new(),
                sync_token: String::new(),
                ctag: state.ctag.clone(),
                incremental: false,
            });
        }
    };
    let mut out = Pass {
        sync_token: listing.sync_token.clone(),
        ctag: listing.ctag.clone(),
        incremental: listing.incremental,
        ..Pass::default()
    };
    let scope = engine.user(UserId(sub.user_id));
    let mut to_fetch = Vec::new();
    for (href, etag) in listing.changed {
        match links.get(&href) {
            Some(link) if !etag.is_empty() && link.etag == etag => out.counts.unchanged += 1,
            _ => to_fetch.push(href),
        }
    }
    let mut gone = listing.gone;
    for batch in to_fetch.chunks(BATCH) {
        let request = GetAddressBookResources::new(&collection).with_hrefs(batch);
        let fetched = remote.send(&request).await?.resources;
        let returned: HashSet<&str> = fetched.iter().map(|r| r.href.as_str()).collect();
        // A card the listing named and the multiget did not return is looked at next time.
        let missing = batch.iter().filter(|h| !returned.contains(h.as_str())).count();
        out.counts.skipped += missing as u64;
        store(engine, &scope, id, sub, &links, fetched, &mut out, &mut gone).await?;
    }
    for href in gone {
        if let Some(link) = links.get(&href) {
            match remove(engine, id, sub.user_id, &href, link.record).await? {
                Removal::Deleted => out.counts.deleted += 1,
                Removal::Kept => out.counts.kept += 1,
                Removal::AlreadyGone => {}
            }
        }
    }
    Ok(out)
}

/// The card's own UID, read without parsing the card (the name it is stored under).
pub fn uid_of(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let upper = line.get(..4)?.to_ascii_uppercase();
        if upper != "UID:" && upper != "UID;" {
            return None;
        }
        let value = line[3..].split_once(':')?.1.trim();
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// The name a card without a UID is stored under: its resource name.
fn name_of_href(href: &str) -> String {
    let last = href.trim_end_matches('/').rsplit('/').next().unwrap_or(href);
    let last = last.strip_suffix(".vcf").unwrap_or(last);
    mycorrhizal_codecs::text::percent_decode(last)
}

/// Stores one multiget's cards (several at once) and then their links, in one write.
#[allow(clippy::too_many_arguments)]
async fn store(
    engine: &Engine,
    scope: &mycorrhizal_engine::UserScope,
    id: u64,
    sub: &Subscription,
    links: &HashMap<String, Link>,
    fetched: Vec<FetchedResource>,
    out: &mut Pass,
    gone: &mut Vec<String>,
) -> Result<(), Failure> {
    // The names of linked contacts still here: their card goes back under the same name.
    let linked: Vec<u64> = fetched.iter().filter_map(|r| links.get(&r.href).map(|l| l.record)).collect();
    let names: HashMap<u64, String> = {
        let scope = scope.clone();
        tokio::task::spawn_blocking(move || -> mycorrhizal_engine::Result<HashMap<u64, String>> {
            let view = scope.view()?;
            let mut names = HashMap::new();
            for id in linked {
                if let Ok(row) = view.get::<Contact>(id) {
                    names.insert(id, card::name_of(&row.body));
                }
            }
            Ok(names)
        })
        .await
        .map_err(Failure::local)?
        .map_err(Failure::local)?
    };
    let mut tasks = tokio::task::JoinSet::new();
    let mut new_links: Vec<(String, Link)> = Vec::new();
    let mut pending = fetched.into_iter();
    loop {
        while tasks.len() < IN_FLIGHT {
            let Some(resource) = pending.next() else { break };
            let content = match resource.content {
                Ok(content) => content,
                Err(status) if status.as_u16() == 404 || status.as_u16() == 410 => {
                    gone.push(resource.href);
                    continue;
                }
                Err(status) => {
                    out.skip(&resource.href, format!("the server answered HTTP {status} for it"));
                    continue;
                }
            };
            let name = links
                .get(&resource.href)
                .and_then(|l| names.get(&l.record).cloned())
                .or_else(|| uid_of(&content.data))
                .unwrap_or_else(|| name_of_href(&resource.href));
            let scope = scope.clone();
            tasks.spawn(async move {
                let outcome = card::put(&scope, &name, content.data.into_bytes(), card::PutCondition::default()).await;
                (resource.href, content.etag, outcome)
            });
        }
        let Some(done) = tasks.join_next().await else { break };
        let (href, etag, outcome) = done.map_err(Failure::local)?;
        match outcome {
            Ok((row, created)) => {
                if created {
                    out.counts.created += 1;
                } else {
                    out.counts.updated += 1;
                }
                new_links.push((href, Link { record: row.id, etag, ..Link::default() }));
            }
            Err(crate::crm::Error::Unreadable(reason)) => out.skip(&href, reason),
            Err(crate::crm::Error::Invalid { field, reason }) => out.skip(&href, format!("{field}: {reason}")),
            Err(crate::crm::Error::UidConflict { holder }) => {
                out.skip(&href, format!("its UID is already the one of contact {holder}"))
            }
            Err(e) => return Err(Failure::local(e)),
        }
    }
    if new_links.is_empty() {
        return Ok(());
    }
    let user = sub.user_id;
    engine
        .write_async(move |tx| {
            for (href, link) in &new_links {
                put_link(tx, id, user, "contact", href, link)?;
            }
            Ok(())
        })
        .await
        .map_err(Failure::local)
}

enum Removal {
    Deleted,
    Kept,
    AlreadyGone,
}

/// The remote card at `href` is gone: its local copy goes too, unless the CRM holds something
/// about the person (then it is archived and kept, now local). One transaction.
async fn remove(engine: &Engine, id: u64, user: u64, href: &str, record: u64) -> Result<Removal, Failure> {
    let href = href.to_string();
    engine
        .write_async(move |tx| {
            let removal = {
                let scope = tx.user(UserId(user));
                match scope.get::<Contact>(record) {
                    Err(mycorrhizal_engine::Error::NotFound) => Removal::AlreadyGone,
                    Err(e) => return Err(e),
                    Ok(_) if crate::crm::kinds::holds_anything(&scope, record)? => {
                        scope.update::<Contact>(record, Precondition::Any, |c| {
                            c.archived = true;
                            Ok(())
                        })?;
                        Removal::Kept
                    }
                    Ok(_) => {
                        crate::crm::contact::ops::delete_in(&scope, record, Precondition::Any)?;
                        Removal::Deleted
                    }
                }
            };
            drop_link(tx, id, user, "contact", &href, &Link { record, ..Link::default() })?;
            Ok(removal)
        })
        .await
        .map_err(Failure::local)
}

#[cfg(test)]
mod tests {
    use super::super::listing::is_member;
    use super::*;

    #[test]
    fn a_cards_uid_is_read_from_its_line_and_a_missing_one_falls_back_to_the_resource_name() {
        assert_eq!(
            uid_of("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:abc-1\r\nFN:A\r\nEND:VCARD\r\n").as_deref(),
            Some("abc-1")
        );
        assert_eq!(uid_of("BEGIN:VCARD\nuid;VALUE=text:urn:uuid:x\nEND:VCARD").as_deref(), Some("urn:uuid:x"));
        assert_eq!(uid_of("BEGIN:VCARD\nFN:UID: not this\nEND:VCARD"), None);
        assert_eq!(name_of_href("/user/book/J%C3%B6rg%20K.vcf"), "Jörg K");
        assert!(is_member("/user/book/", "/user/book/a.vcf"));
        assert!(!is_member("/user/book/", "/user/book"));
    }
}
