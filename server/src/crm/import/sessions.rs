//! The import sessions of this process: the rows of an upload held between preview and confirm
//! (`held`: what the confirm decides by in memory, the records in a spool file that never has a
//! name), for 15 minutes, lost on restart as the spec says, each visible to its user only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mycorrhizal_engine::UserId;

use super::{Held, ImportResult, Source};

/// How long a session lives.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// Where a session stands.
#[derive(Debug)]
pub enum Stage {
    /// A CSV upload waiting for its column mapping.
    Uploaded,
    /// Rows ready to confirm.
    Previewed(Held),
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
    /// What the session was opened for beyond an upload (a contact share's id): its confirm
    /// there checks it.
    pub bound: Option<String>,
}

/// Why a session cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Unknown, expired, lost with a restart, or another user's: all look the same.
    #[error("no such import session")]
    NotFound,
    /// Confirmed on the other family's endpoint.
    #[error("a {} session is confirmed elsewhere", .0.format())]
    WrongEndpoint(Source),
    /// A CSV session confirmed before its mapping was previewed.
    #[error("the session's column mapping is not previewed yet")]
    NotPreviewed,
    /// Another confirm of this session is running.
    #[error("the session is being confirmed")]
    Busy,
    /// The user holds [`OPEN_SESSIONS_PER_USER`] unconfirmed sessions; the oldest of them
    /// expires after this long.
    #[error("too many import sessions wait for a confirm")]
    TooManyOpen(Duration),
}

/// The open import sessions of this process. Time is read through `now`, so tests can move it.
#[derive(Debug)]
pub struct Sessions {
    inner: Mutex<HashMap<String, Session>>,
    now: fn() -> Instant,
    /// Where the sessions' spool files are made (the data folder; the system's temporary
    /// folder for sessions made without one).
    dir: PathBuf,
}

impl Default for Sessions {
    fn default() -> Self {
        Self::with_clock(Instant::now)
    }
}

/// Unconfirmed sessions (each holds an upload's parsed rows) one user may hold at once. Past it
/// a new upload is refused until one is confirmed or expires: dropping an older one instead
/// would make a preview the person is still reading answer 404 inside its 15 minutes (a client
/// that sends 5,000 records as ten batches previews all ten before confirming).
pub const OPEN_SESSIONS_PER_USER: usize = 32;
/// Confirmed sessions kept per user for repeated confirms (a result, no rows); the oldest goes
/// first past this, and a repeat of it then answers 404, never a second apply.
const CONFIRMED_SESSIONS_PER_USER: usize = 256;

impl Sessions {
    /// Sessions whose clock is `now` (tests pass one they can move forward).
    pub fn with_clock(now: fn() -> Instant) -> Self {
        Self { inner: Mutex::new(HashMap::new()), now, dir: std::env::temp_dir() }
    }

    /// Sessions whose rows wait in spool files in `dir` (the data folder).
    pub fn in_dir(dir: PathBuf) -> Self {
        Self { dir, ..Self::default() }
    }

    /// Where this process's sessions spool their rows.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sweep(&self, map: &mut HashMap<String, Session>) {
        let now = (self.now)();
        map.retain(|_, s| now.saturating_duration_since(s.created) < SESSION_LIFETIME);
    }

    /// Whether `user` may open another session now; when not, how long until the oldest of the
    /// unconfirmed ones expires.
    pub fn check_room(&self, user: UserId) -> Result<(), SessionError> {
        let mut map = self.lock();
        self.sweep(&mut map);
        self.room(&map, user)
    }

    fn room(&self, map: &HashMap<String, Session>, user: UserId) -> Result<(), SessionError> {
        let open: Vec<Instant> =
            map.values().filter(|s| s.user == user && !matches!(s.stage, Stage::Done(_))).map(|s| s.created).collect();
        if open.len() < OPEN_SESSIONS_PER_USER {
            return Ok(());
        }
        let oldest = open.into_iter().min().unwrap_or_else(self.now);
        Err(SessionError::TooManyOpen(SESSION_LIFETIME.saturating_sub((self.now)().saturating_duration_since(oldest))))
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
    ) -> Result<String, SessionError> {
        let id = Self::fresh_id();
        self.open_as(id.clone(), user, source, table, stage)?;
        Ok(id)
    }

    /// Opens a session under `id` (from [`Sessions::fresh_id`]), unless the user already holds
    /// [`OPEN_SESSIONS_PER_USER`] unconfirmed ones.
    pub fn open_as(
        &self,
        id: String,
        user: UserId,
        source: Source,
        table: Option<mycorrhizal_codecs::csv::Table>,
        stage: Stage,
    ) -> Result<(), SessionError> {
        let mut map = self.lock();
        self.sweep(&mut map);
        self.room(&map, user)?;
        map.insert(id, Session { user, source, created: (self.now)(), table, stage, bound: None });
        Ok(())
    }

    /// Runs `f` on the caller's live session.
    pub fn with<T>(
        &self,
        user: UserId,
        id: &str,
        f: impl FnOnce(&mut Session) -> Result<T, SessionError>,
    ) -> Result<T, SessionError> {
        let mut map = self.lock();
        self.sweep(&mut map);
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
    ) -> Result<Result<(Source, Held), ImportResult>, SessionError> {
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
        let confirmed = matches!(stage, Stage::Done(_));
        let mut map = self.lock();
        self.sweep(&mut map);
        match map.get_mut(id) {
            Some(s) if s.user == user => s.stage = stage,
            _ => return,
        }
        if confirmed {
            let mut done: Vec<(Instant, String)> = map
                .iter()
                .filter(|(_, s)| s.user == user && matches!(s.stage, Stage::Done(_)))
                .map(|(k, s)| (s.created, k.clone()))
                .collect();
            if done.len() > CONFIRMED_SESSIONS_PER_USER {
                done.sort();
                for (_, k) in &done[..done.len() - CONFIRMED_SESSIONS_PER_USER] {
                    map.remove(k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::crm::import::ImportResult;

    thread_local! {
        /// This test thread's clock: it stands still at its first reading until moved.
        static START: Instant = Instant::now();
        static AHEAD: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    }

    fn clock() -> Instant {
        START.with(|start| *start) + AHEAD.with(Cell::get)
    }

    fn advance(by: Duration) {
        AHEAD.with(|a| a.set(a.get() + by));
    }

    fn open(sessions: &Sessions, user: UserId) -> Result<String, SessionError> {
        let rows = Held::of(sessions.dir(), Vec::new()).expect("spool");
        sessions.open(user, Source::Vcf, None, Stage::Previewed(rows))
    }

    #[test]
    fn a_session_lives_fifteen_minutes_then_is_not_found() {
        let sessions = Sessions::with_clock(clock);
        let id = open(&sessions, UserId(1)).expect("room");
        advance(SESSION_LIFETIME - Duration::from_secs(1));
        assert!(sessions.with(UserId(1), &id, |_| Ok(())).is_ok(), "alive a second before its end");
        advance(Duration::from_secs(1));
        assert_eq!(sessions.with(UserId(1), &id, |_| Ok(())), Err(SessionError::NotFound));
        assert_eq!(sessions.begin_confirm(UserId(1), &id, &[Source::Vcf]).err(), Some(SessionError::NotFound));
    }

    #[test]
    fn another_users_session_is_not_found() {
        let sessions = Sessions::with_clock(clock);
        let id = open(&sessions, UserId(1)).expect("room");
        assert_eq!(sessions.with(UserId(2), &id, |_| Ok(())), Err(SessionError::NotFound));
        sessions.remove(UserId(2), &id);
        assert!(sessions.with(UserId(1), &id, |_| Ok(())).is_ok(), "another user cannot remove it either");
    }

    #[test]
    fn past_the_open_allowance_a_new_session_is_refused_and_none_is_dropped() {
        let sessions = Sessions::with_clock(clock);
        let first = open(&sessions, UserId(1)).expect("room");
        advance(Duration::from_secs(60));
        let ids: Vec<String> = (1..OPEN_SESSIONS_PER_USER)
            .map(|_| open(&sessions, UserId(1)).expect("room"))
            .chain([first.clone()])
            .collect();
        match open(&sessions, UserId(1)) {
            Err(SessionError::TooManyOpen(wait)) => assert_eq!(wait, SESSION_LIFETIME - Duration::from_secs(60)),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(
            sessions.check_room(UserId(1)).err(),
            Some(SessionError::TooManyOpen(SESSION_LIFETIME - Duration::from_secs(60)))
        );
        for id in &ids {
            assert!(sessions.with(UserId(1), id, |_| Ok(())).is_ok(), "every open session is still there");
        }
        assert!(open(&sessions, UserId(2)).is_ok(), "another user has an allowance of their own");
        // A confirmed session holds no rows and does not count.
        sessions.finish(UserId(1), &first, Stage::Done(ImportResult::default()));
        advance(Duration::from_secs(60));
        let newer = open(&sessions, UserId(1)).expect("room after a confirm");
        assert!(open(&sessions, UserId(1)).is_err());
        // Once the older unconfirmed ones expire, there is room again.
        advance(SESSION_LIFETIME - Duration::from_secs(60));
        assert!(sessions.with(UserId(1), &newer, |_| Ok(())).is_ok());
        assert!(open(&sessions, UserId(1)).is_ok());
    }

    #[test]
    fn confirmed_sessions_past_their_allowance_go_oldest_first() {
        let sessions = Sessions::with_clock(clock);
        let ids: Vec<String> = (0..CONFIRMED_SESSIONS_PER_USER + 2)
            .map(|_| {
                advance(Duration::from_millis(1));
                let id = open(&sessions, UserId(1)).expect("room");
                sessions.finish(UserId(1), &id, Stage::Done(ImportResult::default()));
                id
            })
            .collect();
        for (i, id) in ids.iter().enumerate() {
            let expected = if i < 2 { Err(SessionError::NotFound) } else { Ok(()) };
            assert_eq!(sessions.with(UserId(1), id, |_| Ok(())), expected, "session {i}");
        }
    }
}
