//! Domain operations in process, on a temporary engine: no HTTP server, no `AppState`, one
//! user's scope and the operation under test. The domain's rules (validation, cascades, merges
//! of an input over a stored record, recurrence) are tested here, where a failure names the
//! rule; the end-to-end tests keep what only a whole binary shows (status codes, headers, the
//! wire shapes, authentication).

use std::sync::Arc;

use jiff::Timestamp;
use mycorrhizal_engine::{Durability, Engine, FixedClock, Options, SearchOptions, UserId, UserScope};

mod contacts;
mod merges;
mod relationships;
mod reminders;

/// A temporary engine with the server's record kinds, migrations and search index, and a clock
/// the test sets.
pub struct Domain {
    pub engine: Engine,
    pub clock: Arc<FixedClock>,
    _dir: tempfile::TempDir,
}

impl Domain {
    /// A fresh engine whose clock reads `now`.
    pub fn at(now: &str) -> Domain {
        let dir = tempfile::tempdir().expect("temporary folder");
        let clock = Arc::new(FixedClock::new(now.parse::<Timestamp>().expect("an instant")));
        let options = Options {
            migrations: mycorrhizal::crm::migrations(),
            clock: clock.clone(),
            durability: Durability::None,
            search: Some(SearchOptions::new(dir.path().join("search"), mycorrhizal::crm::search_sources())),
            ..Options::default()
        };
        let (engine, _) = Engine::open(dir.path().join("db.redb"), options).expect("open the engine");
        Domain { engine, clock, _dir: dir }
    }

    /// User `id`'s scope: every operation takes one.
    pub fn user(&self, id: u64) -> UserScope {
        self.engine.user(UserId(id))
    }
}

/// A domain input from its JSON form, as a front door would hand it over.
pub fn input<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a well-formed input")
}
