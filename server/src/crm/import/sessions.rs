//! The import sessions of this process: the rows of an upload held between preview and confirm,
//! for 15 minutes, in memory (lost on restart, as the spec says), each visible to its user only.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mycorrhizal_engine::UserId;

use super::{ImportResult, ImportRow, Source};

/// How long a session lives.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// Where a session stands.
#[derive(Debug)]
pub enum Stage {
    /// A CSV upload waiting for its column mapping.
    Uploaded,
    /// Rows ready to confirm.
    Previewed(Vec<ImportRow>),
    /// A confirm is running.
    Applying,
    /// Confirmed; a repeated confirm gets this result back.
    Done(ImportResult),
}

#[derive(Debug)]
pub struct Session {
    pub user: UserId,
    pub source: Source,
    pub created: Instant,
    /// The parsed CSV, kept until the mapping is applied.
    pub table: Option<mycorrhizal_codecs::csv::Table>,
    pub stage: Stage,
}

/// Why a session cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum SessionError {
    /// Unknown, expired, lost with a restart, or another user's: all look the same.
    NotFound,
    /// Confirmed on the other family's endpoint.
    WrongEndpoint(Source),
    /// A CSV session confirmed before its mapping was previewed.
    NotPreviewed,
    /// Another confirm of this session is running.
    Busy,
}

/// The open import sessions of this process.
#[derive(Debug, Default)]
pub struct Sessions {
    inner: Mutex<HashMap<String, Session>>,
}

/// Open sessions one user may hold; the oldest is dropped past this.
const SESSIONS_PER_USER: usize = 8;

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sweep(map: &mut HashMap<String, Session>) {
        map.retain(|_, s| s.created.elapsed() < SESSION_LIFETIME);
    }

    /// A new session id (random, unguessable).
    pub fn fresh_id() -> String {
        uuid::Uuid::new_v4().to_string()
    }

    /// Opens a session and returns its id.
    pub fn open(
        &self,
        user: UserId,
        source: Source,
        table: Option<mycorrhizal_codecs::csv::Table>,
        stage: Stage,
    ) -> String {
        let id = Self::fresh_id();
        self.open_as(id.clone(), user, source, table, stage);
        id
    }

    /// Opens a session under `id` (from [`Sessions::fresh_id`]).
    pub fn open_as(
        &self,
        id: String,
        user: UserId,
        source: Source,
        table: Option<mycorrhizal_codecs::csv::Table>,
        stage: Stage,
    ) {
        let mut map = self.lock();
        Self::sweep(&mut map);
        let mut mine: Vec<(Instant, String)> =
            map.iter().filter(|(_, s)| s.user == user).map(|(k, s)| (s.created, k.clone())).collect();
        if mine.len() >= SESSIONS_PER_USER {
            mine.sort();
            for (_, k) in mine.iter().take(mine.len() + 1 - SESSIONS_PER_USER) {
                map.remove(k);
            }
        }
        map.insert(id, Session { user, source, created: Instant::now(), table, stage });
    }

    /// Runs `f` on the caller's live session.
    pub fn with<T>(
        &self,
        user: UserId,
        id: &str,
        f: impl FnOnce(&mut Session) -> Result<T, SessionError>,
    ) -> Result<T, SessionError> {
        let mut map = self.lock();
        Self::sweep(&mut map);
        match map.get_mut(id) {
            Some(s) if s.user == user => f(s),
            _ => Err(SessionError::NotFound),
        }
    }

    /// Takes the rows of a session for applying, or returns the earlier result of a consumed one.
    pub fn begin_confirm(
        &self,
        user: UserId,
        id: &str,
        accepts: &[Source],
    ) -> Result<Result<(Source, Vec<ImportRow>), ImportResult>, SessionError> {
        self.with(user, id, |s| {
            if !accepts.contains(&s.source) {
                return Err(SessionError::WrongEndpoint(s.source));
            }
            match std::mem::replace(&mut s.stage, Stage::Applying) {
                Stage::Previewed(rows) => Ok(Ok((s.source, rows))),
                Stage::Done(result) => {
                    s.stage = Stage::Done(result.clone());
                    Ok(Err(result))
                }
                Stage::Uploaded => {
                    s.stage = Stage::Uploaded;
                    Err(SessionError::NotPreviewed)
                }
                Stage::Applying => Err(SessionError::Busy),
            }
        })
    }

    /// Forgets a session.
    pub fn remove(&self, user: UserId, id: &str) {
        let mut map = self.lock();
        if map.get(id).is_some_and(|s| s.user == user) {
            map.remove(id);
        }
    }

    /// Stores the result of a confirm (or puts the rows back when the confirm was refused).
    pub fn finish(&self, user: UserId, id: &str, stage: Stage) {
        let _ = self.with(user, id, |s| {
            s.stage = stage;
            Ok(())
        });
    }
}
