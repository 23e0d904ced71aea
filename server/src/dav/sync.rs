//! RFC 6578 sync tokens over the user's change feed. A token is opaque to clients:
//! `urn:mycorrhizal:sync:<seq>` (every change up to feed sequence `seq` is reported), or
//! `urn:mycorrhizal:sync:<seq>:<id>` in the middle of a first sync paged with `<limit>` (live
//! contacts up to id `id` are reported, then the changes after `seq`). Pages never skip a
//! change: a page stops before the first member that does not fit, and the next token resumes
//! right there; a member may be reported twice (harmless), never not at all.
//!
//! A token the feed can no longer answer is stale: one this server never issued, one ahead of the
//! feed (a restored backup), or one whose removed members' tombstones were purged after
//! `DELETED_RETENTION_DAYS` (their names are gone). The client then syncs afresh.

use mycorrhizal_engine::{Row, UserView};

use crate::crm::cards;
use crate::crm::contact::Contact;

const PREFIX: &str = "urn:mycorrhizal:sync:";
/// Change-feed entries read per step.
const STEP: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub seq: u64,
    /// During a paged first sync: the last contact id already reported.
    pub after: Option<u64>,
}

impl Token {
    pub fn parse(text: &str) -> Option<Token> {
        let rest = text.trim().strip_prefix(PREFIX)?;
        let mut parts = rest.split(':');
        let seq = parts.next()?.parse().ok()?;
        let after = match parts.next() {
            None => None,
            Some(id) => Some(id.parse().ok()?),
        };
        parts.next().is_none().then_some(Token { seq, after })
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.after {
            None => write!(f, "{PREFIX}{}", self.seq),
            Some(id) => write!(f, "{PREFIX}{}:{id}", self.seq),
        }
    }
}

/// The token of the feed as `view` sees it (also the address book's `getctag`).
pub fn current(view: &UserView) -> mycorrhizal_engine::Result<Token> {
    Ok(Token { seq: view.last_seq()?, after: None })
}

/// One sync-collection answer.
pub struct Page {
    pub changed: Vec<Row<Contact>>,
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
    Engine(mycorrhizal_engine::Error),
}

impl From<mycorrhizal_engine::Error> for SyncError {
    fn from(e: mycorrhizal_engine::Error) -> Self {
        SyncError::Engine(e)
    }
}

/// The contacts changed and removed since `token` (`None`: a first sync), at most `limit`
/// members.
pub fn contacts(view: &UserView, token: Option<&str>, limit: Option<usize>) -> Result<Page, SyncError> {
    let last = view.last_seq()?;
    let token = match token.map(str::trim).filter(|t| !t.is_empty()) {
        None => Token { seq: last, after: Some(0) },
        Some(text) => Token::parse(text).filter(|t| t.seq <= last).ok_or(SyncError::Stale)?,
    };
    let mut budget = limit.unwrap_or(usize::MAX);
    let mut page = Page { changed: Vec::new(), removed: Vec::new(), next: token, truncated: false };
    if let Some(after) = token.after {
        let rows: Vec<Row<Contact>> = view.list::<Contact>()?.into_iter().filter(|r| r.id > after).collect();
        if rows.len() > budget {
            let taken: Vec<Row<Contact>> = rows.into_iter().take(budget).collect();
            let last_id = taken.last().map_or(after, |r| r.id);
            page.changed = taken;
            page.next = Token { seq: token.seq, after: Some(last_id) };
            page.truncated = true;
            return Ok(page);
        }
        budget -= rows.len();
        page.changed = rows;
    }
    let reported: std::collections::HashSet<u64> = page.changed.iter().map(|r| r.id).collect();
    let mut ids: Vec<u64> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut consumed = token.seq;
    'feed: loop {
        let changes = view.changes_since(consumed, STEP)?;
        if changes.is_empty() {
            break;
        }
        for change in changes {
            if change.kind == "contact" && !reported.contains(&change.id) && !seen.contains(&change.id) {
                if ids.len() == budget {
                    page.truncated = true;
                    break 'feed;
                }
                seen.insert(change.id);
                ids.push(change.id);
            }
            consumed = change.seq;
        }
    }
    page.next = Token { seq: if page.truncated { consumed } else { last.max(consumed) }, after: None };
    for id in ids {
        match view.get_any::<Contact>(id)? {
            Some(row) if !row.is_deleted() => page.changed.push(row),
            Some(row) => page.removed.push(cards::name_of(&row.body)),
            None => return Err(SyncError::Stale),
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_foreign_ones_are_refused() {
        for token in [Token { seq: 0, after: None }, Token { seq: 42, after: Some(7) }] {
            assert_eq!(Token::parse(&token.to_string()), Some(token));
        }
        for bad in ["", "urn:mycorrhizal:sync:", "urn:mycorrhizal:sync:x", "http://x/1", "urn:mycorrhizal:sync:1:2:3"] {
            assert_eq!(Token::parse(bad), None, "{bad}");
        }
    }
}
