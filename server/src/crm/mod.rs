//! The CRM domain: the user-owned record types (contacts, notes, activities, reminders,
//! completions, relationships, households), their validation and save hooks, and the calendar rules.
//! This is the domain layer: one function per operation (create, edit, delete with its cascade,
//! list, ...), typed input to typed output or [`Error`], no HTTP. Every front door (`api/`,
//! `web/`, `dav/`, the command line and jobs) calls these functions; the rules live here and in
//! the engine's write path. Nothing here imports a front door.
//!
//! Layout: one folder per record kind (`contact/`, `note/`, `activity/`, `reminder/`,
//! `relationship/`, `household/`, `attachment/`, `cadence/`, `reach_out/`; `depth/` holds the
//! three per-contact kinds that share their operations): `mod.rs` is the record (its fields,
//! validation, indexes), `ops.rs` its operations and the views they answer (`contact/` splits
//! those further). What every kind shares is `records.rs` (index keys, the delete step) and the
//! registry `kinds.rs`; rules about dates are `calendar.rs`. A new kind is a new folder.

pub mod activity;
pub mod address_suggestions;
pub mod attachment;
pub mod audit;
pub mod bodies;
pub mod bundle;
pub mod cadence;
pub mod calendar;
pub mod calendar_events;
pub mod client_settings;
pub mod collection;
pub mod contact;
pub mod cursor;
pub mod depth;
pub mod duplicate;
mod error;
pub mod export;
pub mod external;
pub mod field;
pub mod groups;
pub mod home;
pub mod household;
pub mod ical_feed;
pub mod import;
pub mod kinds;
pub mod legacy_files;
pub mod link_type;
pub mod note;
pub mod preference;
pub mod reach_out;
pub mod records;
pub mod relationship;
pub mod reminder;
pub mod schema;
pub mod search;
pub mod share;

pub use error::{Error, Result};

/// Runs blocking engine work (redb reads, snapshots) on the blocking pool, never on an async
/// worker. The one way off them: `AppState::blocking` and `AppState::read` wrap it, and what
/// holds only an engine (authenticating a request) calls it directly.
pub async fn blocking<T: Send + 'static>(
    engine: &mycorrhizal_engine::Engine,
    work: impl FnOnce(&mycorrhizal_engine::Engine) -> T + Send + 'static,
) -> Result<T> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || work(&engine)).await.map_err(Error::internal)
}

/// What every stored record's view carries about its version: `revision`, `etag` (unquoted) and
/// when it was created and last updated. Views flatten it into their own members.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Stamp {
    pub revision: u64,
    pub etag: String,
    #[schema(value_type = String)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String)]
    pub updated_at: jiff::Timestamp,
}

impl Stamp {
    pub fn of<R>(row: &mycorrhizal_engine::Row<R>) -> Stamp {
        Stamp {
            revision: row.meta.revision,
            etag: row.etag().trim_matches('"').to_string(),
            created_at: row.meta.created_at,
            updated_at: row.meta.updated_at,
        }
    }
}

/// `{message}`: what a write that has nothing else to show answers (a delete, a dismissal).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Message {
    pub message: String,
}

impl Message {
    pub fn new(message: &str) -> Message {
        Message { message: message.to_string() }
    }
}

/// The kinds full-text search indexes, in the order `/search` groups them (from [`kinds::all`]).
pub fn search_sources() -> Vec<mycorrhizal_engine::Source> {
    kinds::all().into_iter().filter_map(|k| k.search).collect()
}

/// Every user record kind's index backfill at start-up (`Engine::ensure_indexes`), from
/// [`kinds::all`]: a kind whose `INDEX_VERSION` was raised gets its entries derived again.
pub fn record_kinds() -> Vec<mycorrhizal_engine::Indexed> {
    kinds::all().into_iter().map(|k| k.indexed).collect()
}

/// The schema version this server's migrations produce (what `/health/ready` expects).
pub fn schema_version() -> u32 {
    migrations().last().map(|m| m.version).unwrap_or(0)
}

/// The schema migrations this server runs at open: the engine's own, then the steps that convert
/// stored rows of the server's record kinds whose shape changed.
pub fn migrations() -> Vec<mycorrhizal_engine::Migration> {
    let mut steps = mycorrhizal_engine::migrate::steps();
    steps.push(mycorrhizal_engine::Migration {
        version: 3,
        name: "reach-out suggestions carry old and new values",
        run: reach_out::migrate_values,
    });
    steps.push(mycorrhizal_engine::Migration {
        version: 4,
        name: "reach-out cursors in a map: table (snapshots could not copy them)",
        run: reach_out::migrate_cursor_table,
    });
    steps.push(mycorrhizal_engine::Migration {
        version: 5,
        name: "activities carry the calendar resource name a CalDAV client created them under",
        run: activity::migrate_activity_names,
    });
    steps.push(mycorrhizal_engine::Migration {
        version: 6,
        name: "relationship edges carry a status, an origin, a confidence and metadata",
        run: relationship::migrate_edge_status,
    });
    steps.push(mycorrhizal_engine::Migration {
        version: 7,
        name: "activities keep the iCalendar object a calendar client wrote for them",
        run: activity::migrate_activity_texts,
    });
    steps.push(mycorrhizal_engine::Migration {
        version: 8,
        name: "contacts keep the vCard a CardDAV client wrote for them",
        run: contact::migrate_contact_cards,
    });
    steps
}
