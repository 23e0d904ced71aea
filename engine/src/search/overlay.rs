//! The read-your-writes overlay: the rows written since the last index commit readers can see,
//! `user -> (kind code, id) -> entry`. The writer's commit hook adds each touched row before the
//! write is acknowledged ([`note`]); a query reads the overlay before it takes the index reader,
//! skips overlaid documents in the index and judges those rows from the database with the same
//! matching rules, caching each one's analysed text in its entry. An entry leaves only once a
//! commit covering its sequence is visible to readers ([`drop_covered`]), so no row is ever in
//! neither.

use std::collections::HashMap;
use std::sync::Arc;

use super::query;
use crate::changes::Touched;

/// `user -> (kind code, id) -> entry`.
pub(super) type Overlay = HashMap<u64, HashMap<(u64, u64), Pending>>;

/// A row written since the last visible commit: the sequence of its latest change, and its
/// analysed document once a query has needed it (`None` inside: the row is gone or unsearchable).
#[derive(Clone)]
pub(super) struct Pending {
    pub seq: u64,
    pub doc: Option<Arc<Option<Analysed>>>,
}

/// A document as the in-memory matcher reads it.
pub(super) struct Analysed {
    pub title: Vec<query::Token>,
    pub body: Vec<query::Token>,
    pub hidden: bool,
    pub contacts: Vec<u64>,
}

/// Records the rows of a committed batch whose kinds are searchable (`codes`) and forgets the
/// purged users. Returns the users with searchable rows in the batch, for the indexer.
pub(super) fn note(
    overlay: &mut Overlay,
    codes: &HashMap<&'static str, u64>,
    touched: &[Touched],
    purged: &[u64],
) -> Vec<u64> {
    let mut users = Vec::new();
    for t in touched {
        if let Some(code) = codes.get(t.kind) {
            let pending =
                overlay.entry(t.user).or_default().entry((*code, t.id)).or_insert(Pending { seq: 0, doc: None });
            if t.seq > pending.seq {
                *pending = Pending { seq: t.seq, doc: None };
            }
            if !users.contains(&t.user) {
                users.push(t.user);
            }
        }
    }
    for user in purged {
        overlay.remove(user);
    }
    users
}

/// Drops the entries that a commit with these applied sequences covers; call it only once that
/// commit is visible to readers.
pub(super) fn drop_covered(overlay: &mut Overlay, applied: &HashMap<u64, u64>) {
    overlay.retain(|user, rows| {
        let done = applied.get(user).copied().unwrap_or(0);
        rows.retain(|_, pending| pending.seq > done);
        !rows.is_empty()
    });
}
