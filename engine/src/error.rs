//! The engine's one error type. Variants are what a caller can act on; storage failures carry
//! the storage layer's message for the log, never for the client, in an opaque [`StorageError`]
//! (which storage the engine runs on is not part of its API).

use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A field-level validation failure: which field, and why, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub reason: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { field: field.into(), reason: reason.into() }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No live row with this id in this user's scope (also: a tombstone, or another user's id).
    #[error("not found")]
    NotFound,
    /// A conditional write whose expected revision is not the row's current one.
    #[error("revision conflict: expected {expected}, actual {actual}")]
    Conflict { expected: u64, actual: u64 },
    /// A unique secondary index already holds this value.
    #[error("duplicate value for {index}")]
    Duplicate { index: &'static str },
    /// The record failed its type's validation.
    #[error("invalid {0}")]
    Invalid(Invalid),
    /// A stored row could not be decoded (unknown format version or corrupt bytes).
    #[error("undecodable row in {table}: {reason}")]
    Corrupt { table: String, reason: String },
    /// The database schema is newer than this binary knows.
    #[error(
        "database schema version {found} is newer than this build supports ({supported}); downgrade is unsupported, restore the pre-migration snapshot taken by the older version instead"
    )]
    SchemaAhead { found: u32, supported: u32 },
    /// A migration step started and never finished.
    #[error("migration to schema version {version} was left unfinished (dirty); restore the pre-migration snapshot in {} and start again", snapshot_dir.display())]
    DirtyMigration { version: u32, snapshot_dir: PathBuf },
    /// The snapshot that must precede a migration could not be written or verified.
    #[error("pre-migration snapshot could not be written to {}: {reason} (ErrPreMigrationBackupFailed); refusing to migrate", dir.display())]
    PreMigrationBackupFailed { dir: PathBuf, reason: String },
    /// A migration step failed; its transaction was rolled back.
    #[error("migration step {version} ({name}) failed: {reason}")]
    MigrationFailed { version: u32, name: &'static str, reason: String },
    /// Deriving a kind's index entries again failed; its transaction was rolled back.
    #[error("index backfill of {kind} (index version {version}) failed: {reason}")]
    ReindexFailed { kind: &'static str, version: u32, reason: String },
    /// A snapshot failed verification.
    #[error("snapshot verification failed: {0}")]
    SnapshotInvalid(String),
    /// An earlier I/O error left the database refusing writes until it is reopened.
    #[error("the database refused writes after an earlier I/O error; restart the server")]
    Poisoned,
    /// The commit of a write batch failed; nothing in it was applied.
    #[error("commit failed: {0}")]
    CommitFailed(String),
    /// The writer task is gone (the engine is shutting down).
    #[error("the engine is shut down")]
    ShutDown,
    /// The full-text index failed (the database is unaffected).
    #[error("search index: {0}")]
    Search(String),
    /// The redo log beside the database cannot be replayed into it (it is another database's,
    /// or it does not continue the last checkpoint): acknowledged writes may be in it that the
    /// database lacks, so the database is not opened without it unless told to set it aside.
    #[error("the redo log {} cannot be replayed into this database ({reason}); acknowledged writes may be in it and missing from the database. Keep a copy of it, then start with REDO_LOG_SET_ASIDE=true to set it aside and run without it", path.display())]
    RedoUnreplayable { path: PathBuf, reason: String },
    /// A search-index rebuild is already running in this process.
    #[error("a search index rebuild is already running")]
    RebuildRunning,
    /// The engine was opened without a search index.
    #[error("search is not enabled")]
    SearchDisabled,
    #[error("storage: {0}")]
    Storage(#[source] StorageError),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// The storage layer failed: opening the database, a transaction, a table or a commit. Only its
/// message is shown (for the log); its cause stays inside the engine.
#[derive(Debug)]
pub struct StorageError(redb::Error);

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.0)
    }
}

// How `?` turns the storage layer's errors into the engine's inside the engine. Trait impls cannot
// be private; these are hidden from the documentation, and a caller needs the storage crate itself
// to name their source types.
#[doc(hidden)]
impl From<redb::Error> for Error {
    fn from(e: redb::Error) -> Self {
        Error::Storage(StorageError(e))
    }
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        #[doc(hidden)]
        impl From<$t> for Error {
            fn from(e: $t) -> Self { Error::Storage(StorageError(e.into())) }
        }
    )*};
}
storage_from!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

impl Error {
    /// Whether this error means the storage itself failed (as opposed to the request).
    pub fn is_storage(&self) -> bool {
        matches!(
            self,
            Error::Storage(_)
                | Error::Io(_)
                | Error::Poisoned
                | Error::Corrupt { .. }
                | Error::CommitFailed(_)
                | Error::Search(_)
        )
    }
}
