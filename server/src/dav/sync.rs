//! RFC 6578 sync tokens over the user's change feed. A token is opaque to clients:
//! `urn:mycorrhizal:sync:<seq>` (every change up to feed sequence `seq` is reported), or
//! `urn:mycorrhizal:sync:<seq>:<id>` in the middle of a first sync paged with `<limit>` (live
//! contacts up to id `id` are reported, then the changes after `seq`). Pages never skip a
//! change: a page stops before the first member that does not fit, and the next token resumes
//! right there; a member may be reported twice (harmless), never not at all.
//!
//! A token also carries the instant of the change at `seq` (`<seq>~<micros>`), so it names a
//! point of this feed's history, not only a number: after a restore from backup the feed goes
//! on from an older sequence, and once it passes a client's number again that number means
//! other changes. A token is stale when the feed can no longer answer it: one this server never
//! issued (another prefix, or a change at `seq` that is not the one it names), one ahead of the
//! feed (a restored backup), or one whose removed members' tombstones were purged after
//! `DELETED_RETENTION_DAYS` (their names are gone). The client then syncs afresh. A token
//! without the instant (issued before it was added) is taken on its number.

use std::collections::HashSet;

use mycorrhizal_engine::{Change, Record, Row, UserView};

use crate::crm::contact::card as cards;
use crate::crm::contact::{Contact, ContactHead};
use crate::crm::{calendar_events as events, calendar_events::CalendarEvent, calendar_events::Source};

const PREFIX: &str = "urn:mycorrhizal:sync:";
/// Change-feed entries read per step.
const STEP: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub seq: u64,
    /// The instant (microseconds) of the change at `seq`; `None` for `seq` 0 and for tokens
    /// issued before it was written into them.
    pub at: Option<i64>,
    /// During a paged first sync: the last contact id already reported.
    pub after: Option<u64>,
}

impl Token {
    pub fn parse(text: &str) -> Option<Token> {
        let rest = text.trim().strip_prefix(PREFIX)?;
        let mut parts = rest.split(':');
        let first = parts.next()?;
        let (seq, at) = match first.split_once('~') {
            Some((seq, at)) => (seq.parse().ok()?, Some(at.parse().ok()?)),
            None => (first.parse().ok()?, None),
        };
        let after = match parts.next() {
            None => None,
            Some(id) => Some(id.parse().ok()?),
        };
        parts.next().is_none().then_some(Token { seq, at, after })
    }

    /// The token of `view`'s feed at `seq`, naming the change there.
    fn at(view: &UserView, seq: u64, after: Option<u64>) -> mycorrhizal_engine::Result<Token> {
        Ok(Token { seq, at: change_at(view, seq)?, after })
    }

    /// Whether `view`'s feed is the history this token was issued from: the change at its
    /// sequence is the one it names (a token without an instant is taken on its number).
    fn of_this_feed(&self, view: &UserView) -> mycorrhizal_engine::Result<bool> {
        match self.at {
            None => Ok(true),
            Some(at) => Ok(change_at(view, self.seq)? == Some(at)),
        }
    }
}

/// The instant (microseconds) of the change at `seq` of `view`'s feed, if it has one.
fn change_at(view: &UserView, seq: u64) -> mycorrhizal_engine::Result<Option<i64>> {
    if seq == 0 {
        return Ok(None);
    }
    let found = view.changes_since(seq - 1, 1)?.into_iter().next().filter(|c| c.seq == seq);
    Ok(found.map(|c| c.at.as_microsecond()))
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{PREFIX}{}", self.seq)?;
        if let Some(at) = self.at {
            write!(f, "~{at}")?;
        }
        match self.after {
            None => Ok(()),
            Some(id) => write!(f, ":{id}"),
        }
    }
}

/// The token of the feed as `view` sees it (also the address book's `getctag`).
pub fn current(view: &UserView) -> mycorrhizal_engine::Result<Token> {
    Token::at(view, view.last_seq()?, None)
}

/// One sync-collection answer.
pub struct Page<M> {
    pub changed: Vec<M>,
    /// Names of removed members.
    pub removed: Vec<String>,
    pub next: Token,
    /// More changes wait (a `<limit>` cut the answer): the collection is reported 507.
    pub truncated: bool,
}

/// Why no page.
#[derive(Debug)]
pub enum SyncError {
    Stale,
    Engine(crate::crm::Error),
}

impl From<mycorrhizal_engine::Error> for SyncError {
    fn from(e: mycorrhizal_engine::Error) -> Self {
        SyncError::Engine(e.into())
    }
}

impl From<crate::crm::Error> for SyncError {
    fn from(e: crate::crm::Error) -> Self {
        SyncError::Engine(e)
    }
}

/// What a member key stands for now.
pub enum Resolved<M> {
    Live(M),
    /// Gone: the name it was served under.
    Removed(String),
    /// Gone, and its name with it (a purged tombstone).
    Stale,
}

/// What a collection is, for sync: its live members in key order, the member key a change-feed
/// entry touches, and what a key stands for now.
pub trait Members {
    type Member;
    fn all(&self, view: &UserView) -> Result<Vec<(u64, Self::Member)>, SyncError>;
    fn of_change(&self, change: &Change) -> Option<u64>;
    fn resolve(&self, view: &UserView, key: u64) -> Result<Resolved<Self::Member>, SyncError>;
}

/// The members changed and removed since `token` (`None`: a first sync), at most `limit`.
pub fn walk<C: Members>(
    collection: &C,
    view: &UserView,
    token: Option<&str>,
    limit: Option<usize>,
) -> Result<Page<C::Member>, SyncError> {
    let last = view.last_seq()?;
    let token = match token.map(str::trim).filter(|t| !t.is_empty()) {
        None => Token::at(view, last, Some(0))?,
        Some(text) => {
            let token = Token::parse(text).filter(|t| t.seq <= last).ok_or(SyncError::Stale)?;
            if !token.of_this_feed(view)? {
                return Err(SyncError::Stale);
            }
            token
        }
    };
    let mut budget = limit.unwrap_or(usize::MAX);
    let mut page = Page { changed: Vec::new(), removed: Vec::new(), next: token, truncated: false };
    let mut reported = HashSet::new();
    if let Some(after) = token.after {
        let members: Vec<(u64, C::Member)> = collection.all(view)?.into_iter().filter(|(k, _)| *k > after).collect();
        if members.len() > budget {
            let taken: Vec<(u64, C::Member)> = members.into_iter().take(budget).collect();
            let last_key = taken.last().map_or(after, |(k, _)| *k);
            page.changed = taken.into_iter().map(|(_, m)| m).collect();
            page.next = Token { seq: token.seq, at: token.at, after: Some(last_key) };
            page.truncated = true;
            return Ok(page);
        }
        budget -= members.len();
        for (key, member) in members {
            reported.insert(key);
            page.changed.push(member);
        }
    }
    let mut keys: Vec<u64> = Vec::new();
    let mut seen = HashSet::new();
    let mut consumed = token.seq;
    'feed: loop {
        let changes = view.changes_since(consumed, STEP)?;
        if changes.is_empty() {
            break;
        }
        for change in changes {
            if let Some(key) = collection.of_change(&change)
                && !reported.contains(&key)
                && !seen.contains(&key)
            {
                if keys.len() == budget {
                    page.truncated = true;
                    break 'feed;
                }
                seen.insert(key);
                keys.push(key);
            }
            consumed = change.seq;
        }
    }
    page.next = Token::at(view, if page.truncated { consumed } else { last.max(consumed) }, None)?;
    for key in keys {
        match collection.resolve(view, key)? {
            Resolved::Live(member) => page.changed.push(member),
            Resolved::Removed(name) => page.removed.push(name),
            Resolved::Stale => return Err(SyncError::Stale),
        }
    }
    Ok(page)
}

/// The address book: live contacts by id; a removed contact's name is read off its tombstone.
/// The contacts of `hidden` (brought in by a subscription) are not in it: they read as removed.
pub struct Book<'h> {
    pub hidden: &'h HashSet<u64>,
}

impl Members for Book<'_> {
    type Member = Row<Contact>;

    fn all(&self, view: &UserView) -> Result<Vec<(u64, Row<Contact>)>, SyncError> {
        Ok(view.list::<Contact>()?.into_iter().filter(|r| !self.hidden.contains(&r.id)).map(|r| (r.id, r)).collect())
    }

    fn of_change(&self, change: &Change) -> Option<u64> {
        (change.kind == Contact::KIND.name).then_some(change.id)
    }

    fn resolve(&self, view: &UserView, key: u64) -> Result<Resolved<Row<Contact>>, SyncError> {
        Ok(match view.get_any::<Contact>(key)? {
            Some(row) if self.hidden.contains(&row.id) => Resolved::Removed(cards::name_of(&row.body)),
            Some(row) if !row.is_deleted() => Resolved::Live(row),
            Some(row) => Resolved::Removed(cards::name_of(&row.body)),
            None => Resolved::Stale,
        })
    }
}

/// The address book for a sync that asks no card (`getetag` and the like): its members read as
/// heads, so a first sync of ten thousand cards decodes no card.
pub struct BookHeads<'h> {
    pub hidden: &'h HashSet<u64>,
}

impl Members for BookHeads<'_> {
    type Member = Row<ContactHead>;

    fn all(&self, view: &UserView) -> Result<Vec<(u64, Row<ContactHead>)>, SyncError> {
        Ok(view
            .list_heads::<Contact, ContactHead>()?
            .into_iter()
            .filter(|r| !self.hidden.contains(&r.id))
            .map(|r| (r.id, r))
            .collect())
    }

    fn of_change(&self, change: &Change) -> Option<u64> {
        Book { hidden: self.hidden }.of_change(change)
    }

    fn resolve(&self, view: &UserView, key: u64) -> Result<Resolved<Row<ContactHead>>, SyncError> {
        Ok(match (Book { hidden: self.hidden }).resolve(view, key)? {
            Resolved::Live(Row { id, meta, body }) => Resolved::Live(Row { id, meta, body: body.into() }),
            Resolved::Removed(name) => Resolved::Removed(name),
            Resolved::Stale => Resolved::Stale,
        })
    }
}

/// The calendar: every event, keyed by its source; a removed event's name comes from its source.
pub struct Calendar;

impl Members for Calendar {
    type Member = CalendarEvent;

    fn all(&self, view: &UserView) -> Result<Vec<(u64, CalendarEvent)>, SyncError> {
        let mut all: Vec<(u64, CalendarEvent)> = events::all(view)?.into_iter().map(|e| (e.source.key(), e)).collect();
        all.sort_by_key(|(k, _)| *k);
        Ok(all)
    }

    fn of_change(&self, change: &Change) -> Option<u64> {
        Source::of_change(&change.kind, change.id).map(Source::key)
    }

    fn resolve(&self, view: &UserView, key: u64) -> Result<Resolved<CalendarEvent>, SyncError> {
        let source = Source::of_key(key);
        Ok(match events::event(view, source)? {
            Some(event) => Resolved::Live(event),
            None => Resolved::Removed(events::removed_name(view, source)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_foreign_ones_are_refused() {
        for token in [
            Token { seq: 0, at: None, after: None },
            Token { seq: 42, at: Some(1_796_119_200_123_456), after: Some(7) },
            Token { seq: 43, at: Some(1_796_119_200_123_457), after: None },
            Token { seq: 44, at: None, after: Some(9) },
        ] {
            assert_eq!(Token::parse(&token.to_string()), Some(token));
        }
        assert_eq!(
            Token::parse("urn:mycorrhizal:sync:12"),
            Some(Token { seq: 12, at: None, after: None }),
            "old tokens"
        );
        for bad in [
            "",
            "urn:mycorrhizal:sync:",
            "urn:mycorrhizal:sync:x",
            "http://x/1",
            "urn:mycorrhizal:sync:1:2:3",
            "urn:mycorrhizal:sync:1~",
            "urn:mycorrhizal:sync:1~x:2",
        ] {
            assert_eq!(Token::parse(bad), None, "{bad}");
        }
    }
}
