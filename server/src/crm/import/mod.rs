//! Importing contacts. An upload (CSV, vCard, JSContact) or a JSON batch of neutral records
//! becomes rows, each checked for the existing contact it duplicates and the earlier row of the
//! same upload it repeats; the rows wait in an import session between preview and confirm (15
//! minutes, in memory) and are written in batched transactions when the person confirms their
//! decisions, and each confirm leaves a run in the user's import history. Front doors (the JSON
//! API, the `import` command) read requests and call the operations here; no HTTP type enters.
//!
//! One concern per file: `rows` (an upload's rows), `prepare` (an incoming record as a new
//! contact, and the UID it is stored under), `detect` (duplicates), `merge` (what an update does,
//! and the diff the preview shows), `preview` (the operations that open and preview a session,
//! a batch of rows at a time, and the preview's shape), `held` (previewed rows waiting for the
//! confirm, their records in a spool file), `pictures` (inline photos), `apply` (writing decided
//! rows), `confirm` (the confirm operation around it), `runs` (the history) and `sessions`.

mod apply;
mod confirm;
mod detect;
mod held;
mod merge;
mod pictures;
mod prepare;
mod preview;
mod rows;
mod runs;
mod sessions;

pub use apply::{BATCH, ImportResult, Op, Outcome, apply_batch, execute};
pub use confirm::{Bulk, CONCURRENT_CONFIRM_WAIT, Decision, confirm};
pub use detect::{Detector, prepare};
pub use held::{Held, HeldRow, Holding};
pub use merge::{Added, FieldChange, MergeDiff, diff, merge};
pub use pictures::Picture;
pub use prepare::{ORIGINAL_UID_POINTER, hashed_uid, new_contact, stable_uid, stable_uid_of};
pub use preview::{
    CardFile, CsvUpload, Previewed, Previewing, parsed_contact, preview_cards, preview_csv, preview_rows, preview_vcf,
    upload_csv,
};
pub use rows::{
    Action, Categories, DuplicateMatch, ImportRow, MAX_RECORDS, check_count, row_of, rows_of, rows_of_cards,
    rows_of_records,
};
pub use runs::{ImportRun, ImportRunList, ImportRunView, RUNS_KEPT, recent_runs, record_run, run_list};
pub use sessions::{OPEN_SESSIONS_PER_USER, SESSION_LIFETIME, Session, SessionError, Sessions, Stage};

/// Where a session's rows came from. The confirm endpoints accept families: CSV on
/// `/contacts/import/confirm`; vCard, JSContact and records on `/contacts/import/vcf/confirm`;
/// vCard and JSContact also on the CSV route, as existing clients do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Csv,
    Vcf,
    JsContact,
    Records,
    /// A contact another user shared (JSContact), confirmed only through its share.
    Share,
}

impl Source {
    pub fn format(self) -> &'static str {
        match self {
            Source::Csv => "csv",
            Source::Vcf => "vcf",
            Source::JsContact => "jscontact",
            Source::Records => "records",
            // Its run is a JSContact import (the runs' formats are the files').
            Source::Share => "jscontact",
        }
    }
}

/// Why an import operation refused or failed. Per-row problems are not errors: they are rows
/// with `errors`, and a confirm's per-row account.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The uploaded file cannot be imported as a whole (unreadable, too many contacts).
    #[error("file: {0}")]
    File(String),
    /// A value of the request is refused: the field it is in (`records`, `categories`,
    /// `actions[2].action`, `mappings[0].contact_field`, ...) and why.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// The import session cannot be used.
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Engine(#[from] mycorrhizal_engine::Error),
    /// Work on the blocking pool did not finish (it panicked).
    #[error("internal: {0}")]
    Internal(String),
}
