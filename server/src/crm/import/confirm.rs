//! The confirm operation: a person's decisions for a previewed session are checked, the session's
//! rows taken (one confirm at a time; a repeat gets the first result back, never a second apply),
//! written by [`execute`](super::execute), and the result settled into the session. Writing the
//! rows themselves is `apply`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mycorrhizal_engine::{UserId, UserScope};

use super::{Action, ImportError, ImportResult, SessionError, Sessions, Source, Stage, execute};

/// How long a confirm waits for another confirm of the same session to finish before it gives up
/// ([`SessionError::Busy`]); the second one then answers with the first one's result, as a repeat
/// does.
pub const CONCURRENT_CONFIRM_WAIT: Duration = Duration::from_secs(120);

/// A person's decision for one row, as the request gives it.
#[derive(Debug, Clone)]
pub struct Decision {
    pub row_index: usize,
    /// `add`, `update` or `skip`.
    pub action: String,
}

/// The choice for all rows a preview offers beside each row's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bulk {
    /// Each row's decision; a row without one (not shown: a page lists the first rows of a large
    /// file) takes its suggested action.
    Rows,
    /// Every row added, or merged into the contact it duplicates.
    AddUpdate,
    /// Every row added, but for duplicates, skipped.
    AddSkip,
    /// Nothing imported.
    Skip,
}

impl Bulk {
    /// The action for a row whose own decision (or, without one, suggestion) is `chosen`.
    pub fn choose(self, duplicate: bool, chosen: Action) -> Action {
        match self {
            Bulk::Rows => chosen,
            Bulk::Skip => Action::Skip,
            Bulk::AddUpdate if duplicate => Action::Update,
            Bulk::AddSkip if duplicate => Action::Skip,
            Bulk::AddUpdate | Bulk::AddSkip => Action::Add,
        }
    }
}

/// Confirms `session_id` of the scope's user with `decisions` (a row without one is skipped,
/// unless `bulk` is given: then every row read into a record takes `bulk`'s choice, from its
/// own decision or else its suggestion), when its source is one of `accepts`, writing `batch`
/// rows per transaction (see [`batch_rows`](super::batch_rows)).
///
/// The session is settled inside the blocking task, so a client that hangs up mid-import still
/// leaves the result for a repeat; if the task dies, the session is dropped (the client
/// re-uploads, and the preview shows what did get in as duplicates).
pub async fn confirm(
    sessions: Arc<Sessions>,
    scope: UserScope,
    session_id: String,
    decisions: &[Decision],
    bulk: Option<Bulk>,
    accepts: &[Source],
    batch: usize,
) -> Result<ImportResult, ImportError> {
    let mut actions = HashMap::new();
    for (i, d) in decisions.iter().enumerate() {
        let action = Action::parse(&d.action).ok_or_else(|| ImportError::Invalid {
            field: format!("actions[{i}].action"),
            reason: "must be add, update or skip".into(),
        })?;
        actions.insert(d.row_index, action);
    }
    let user = scope.id();
    let waited = tokio::time::Instant::now();
    let (source, held) = loop {
        match sessions.begin_confirm(user, &session_id, accepts) {
            Ok(Ok(taken)) => break taken,
            Ok(Err(earlier)) => return Ok(earlier),
            Err(SessionError::Busy) if waited.elapsed() < CONCURRENT_CONFIRM_WAIT => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e.into()),
        }
    };
    let count = held.rows.len();
    if let Some((i, d)) = decisions.iter().enumerate().find(|(_, d)| d.row_index >= count) {
        let reason = format!("row {} does not exist (the session has {count} rows)", d.row_index);
        sessions.finish(user, &session_id, Stage::Previewed(held));
        return Err(ImportError::Invalid { field: format!("actions[{i}].row_index"), reason });
    }
    if let Some(bulk) = bulk {
        for row in held.rows.iter().filter(|row| row.has_record()) {
            let chosen = actions.get(&row.index).copied().unwrap_or(row.suggested);
            actions.insert(row.index, bulk.choose(row.flagged, chosen));
        }
    }
    let settle = Settle { sessions, user, id: session_id, done: false };
    tokio::task::spawn_blocking(move || {
        let mut settle = settle;
        let result = execute(&scope, source, &held, &actions, batch, &|_, _| {});
        settle.sessions.finish(settle.user, &settle.id, Stage::Done(result.clone()));
        settle.done = true;
        result
    })
    .await
    .map_err(|e| ImportError::Internal(e.to_string()))
}

/// Drops a session whose confirm never reached its end.
struct Settle {
    sessions: Arc<Sessions>,
    user: UserId,
    id: String,
    done: bool,
}

impl Drop for Settle {
    fn drop(&mut self) {
        if !self.done {
            self.sessions.remove(self.user, &self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_for_all_rows_decides_from_each_rows_own() {
        use Action::{Add, Skip, Update};
        for chosen in [Add, Update, Skip] {
            assert_eq!(Bulk::Rows.choose(true, chosen), chosen);
            assert_eq!(Bulk::Skip.choose(false, chosen), Skip);
            assert_eq!(Bulk::AddUpdate.choose(true, chosen), Update);
            assert_eq!(Bulk::AddSkip.choose(true, chosen), Skip);
            assert_eq!(Bulk::AddUpdate.choose(false, chosen), Add);
            assert_eq!(Bulk::AddSkip.choose(false, chosen), Add);
        }
    }
}
