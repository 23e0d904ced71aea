//! Full-text search: one tantivy index in the data folder over the record kinds that declare a
//! [`SearchDoc`], fed from the change feed and nothing else.
//!
//! - **Feeding** (`feed`). After each group commit the writer tells the indexer thread which
//!   users changed, through its commit hook (`handle`).
//!   The indexer reads those users' change feeds from where it stopped, re-reads each touched row
//!   and replaces (or deletes) its document. Handlers never touch the index.
//! - **Commits.** One long-lived `IndexWriter`, committed every `commit_interval` (or on flush),
//!   never per write. Each commit's payload holds the schema version and, per user, the last
//!   change-feed sequence applied. At start the indexer replays what the payload says it missed,
//!   so a crash between a database commit and an index commit loses nothing.
//! - **Read-your-writes.** Before a write is acknowledged, the writer records each touched row in
//!   an in-memory overlay (`user -> (kind, id) -> seq`). A query skips overlaid documents in the
//!   index and judges those rows straight from the database with the same matching rules
//!   ([`query::Plan::score`]). An entry leaves the overlay only once a commit covering its
//!   sequence is visible to readers.
//! - **Rebuild.** A fresh index is built in a new folder from one read transaction, then handed
//!   to the indexer, which catches it up from the change feed and swaps it in; readers see the old
//!   index until that instant. `CURRENT` names the live folder.
//! - **Isolation.** Every term of the index carries its owner's scope and every query is built
//!   from the caller's scopes only ([`lookup`]); the API is only on [`crate::UserScope`].
//! - **Ranking.** Per kind, tantivy keeps the best hits asked for and skips postings that cannot
//!   reach them (block-max WAND); totals are counted up to [`TOTAL_CAP`].
//!
//! Where each part lives: `source` (what is searchable), `handle` (the engine's handle: open,
//! commit hook, flush, rebuild, status, stop), `shared` (state the handle, the indexer and
//! queries share), `indexer` (the indexer thread), `feed` (catching up from the change feed),
//! `overlay` (read-your-writes), `merges` (when segments merge: not while rows are
//! being written), `generation` (generations on disk), `rebuild` (build and swap),
//! `run` (running a query), and below them the matching rules (`query`), the index schema
//! (`schema`) and the query building blocks (`lookup`, `any`, `collect`).

mod any;
pub(crate) mod collect;
mod feed;
mod generation;
mod handle;
mod indexer;
mod lookup;
mod merges;
mod overlay;
pub mod query;
mod rebuild;
mod run;
mod schema;
mod shared;
mod source;

pub(crate) use handle::Search;
pub use handle::{RebuildReport, SearchOptions, SearchStatus};
pub use query::{Clause, MAX_CLAUSES, Plan, Snippet};
pub use rebuild::FromRows;
pub use run::{Hit, SearchGroup, SearchRequest, TOTAL_CAP};
pub use source::Source;

use crate::Error;

impl From<tantivy::TantivyError> for Error {
    fn from(e: tantivy::TantivyError) -> Self {
        Error::Search(e.to_string())
    }
}
