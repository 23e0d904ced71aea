//! Exports: every live contact of a user as vCard (3.0 or 4.0, photos inline) or JSContact, and
//! the user's data as CSV, one table per request (contacts by default, re-importable with
//! identity column mappings) or every table in one ZIP. Each operation checks its request and
//! answers a [`Download`]: the bytes as a stream of chunks, with the content type and file name
//! they are to be saved under. Sending them (HTTP status, headers, the error body) is the front
//! door's.
//!
//! Exports stream: a blocking producer reads rows a page at a time (each page its own read
//! transaction), renders them and hands chunks on through a bounded channel, so memory stays flat
//! whatever the address book's size. A failure before the first chunk is
//! [`ExportError::Failed`] and nothing is sent; a failure after it ends the stream early.
//!
//! One concern per file: `stream` (chunking and the failure rule), `sections` (what a card
//! keeps), `contacts` (reading contacts and their records as they leave), `cards` (vCard and
//! JSContact), `csv` (the tables) and `archive` (all of them in one ZIP).

mod archive;
mod cards;
mod contacts;
mod csv;
mod legacy;
mod sections;
mod stream;
mod tables;

pub use cards::{VcardRequest, jscontact, vcard};
pub use contacts::{PAGE, json_record_of, record_of};
pub use csv::RecordTable;
pub use sections::Selection;
pub use stream::{CHUNK, Category, Chunks, Failure, Out, Sink, produce, stream};
pub use tables::csv;

/// An export ready to send: its bytes as they are made, what they are, and the file name they
/// are to be saved under.
pub struct Download {
    /// The media type, with its charset where it has one.
    pub content_type: &'static str,
    pub filename: String,
    pub body: Chunks,
}

/// Why an export was refused or failed before its first byte.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A request value is refused: the field (`version`, `sections`, `table`) and why.
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// The export failed before anything was made; `operation` names it (`export:csv`,
    /// `export:vcard4`, ...). The failure is logged already.
    #[error("{operation} failed ({}): {}", .failure.category.as_str(), .failure.message)]
    Failed { operation: &'static str, failure: Failure },
}

/// Streams what `producer` writes as a download.
async fn download(
    content_type: &'static str,
    filename: String,
    operation: &'static str,
    producer: impl FnOnce(&mut Sink) -> Result<(), Failure> + Send + 'static,
) -> Result<Download, ExportError> {
    Ok(Download { content_type, filename, body: stream(operation, producer).await? })
}
