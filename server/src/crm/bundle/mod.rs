//! The account bundle: everything of one user in one ZIP, and that ZIP recreated in an account,
//! so a person moving between instances loses nothing.
//!
//! A bundle holds `records/<kind>.jsonl` for every kind of the registry (`crm::kinds::all`, so a
//! new kind is carried by its entry alone): one JSON object a line, `{id, created_at,
//! updated_at, body}`, the body as the kind stores it. Then each contact's picture as
//! `pictures/<name>` (the name its `photo` field holds) and each attachment's bytes as
//! `attachments/<id>`, and last `manifest.json`: the format and its version, the row count of
//! every kind, and the SHA-256 and length of every other file ([`Manifest`]). It is written from
//! one read transaction (rows, pictures and bytes agree) and streamed as it is written
//! (`export::stream`), so memory stays flat.
//!
//! An import ([`import`]) first reads the whole bundle without writing ([`check`]): the
//! manifest, every file's digest and length, every line as its kind (with the kind's write-time
//! checks), every picture as an image and every attachment against its row's digest; a bundle
//! that fails any of it is refused with the file (and line) named, and nothing is written. Then
//! one write transaction creates every row in registry order, each kind after the kinds it
//! names, with the ids its fields name remapped to the new rows' ([`Ref`]); pictures get new
//! names, attachments their blobs, in the same commit. A row naming a row the bundle does not
//! hold (an orphan where it came from) is left out and counted as skipped; an optional
//! reference to one becomes none. Row times (`created_at`, `updated_at`) are the import's; the
//! order rows were changed in is kept. Not carried: the audit log, the change feed, settings and
//! sessions (the account's, not its records).

mod kind;
mod read;
mod write;

use std::collections::BTreeMap;

use jiff::Timestamp;
use mycorrhizal_engine::UserScope;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use kind::{BundleKind, Line, Ref, Shape};
pub use read::{Checked, check, import};
pub use write::write;

use super::export::{Download, ExportError};

/// What the bundle says it is.
pub const FORMAT: &str = "mycorrhizal-bundle";
/// The version of the layout described above; a bundle of another version is refused.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's name in the archive.
pub const MANIFEST: &str = "manifest.json";

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    pub format_version: u32,
    pub created_at: Timestamp,
    /// Rows per kind (engine kind name), every kind of the registry.
    pub counts: BTreeMap<String, u64>,
    /// Every other file of the archive by its path.
    pub files: BTreeMap<String, FileEntry>,
}

/// One file of the bundle as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Hex SHA-256 of its bytes.
    pub sha256: String,
    pub bytes: u64,
}

/// Where kind `kind`'s rows are.
pub fn records_path(kind: &str) -> String {
    format!("records/{kind}.jsonl")
}

/// Where the picture a contact names `name` is.
pub fn picture_path(name: &str) -> String {
    format!("pictures/{name}")
}

/// Where attachment `id`'s bytes are.
pub fn attachment_path(id: u64) -> String {
    format!("attachments/{id}")
}

/// What an import created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Imported {
    /// Rows created per kind (engine kind name); every kind of the bundle is named, 0 included.
    pub imported: BTreeMap<String, u64>,
    /// Rows left out per kind: they named a row the bundle does not hold.
    pub skipped: BTreeMap<String, u64>,
    /// Contact pictures stored.
    pub pictures: u64,
    /// Attachment files stored.
    pub attachments: u64,
}

/// The caller's bundle as a download, `mycorrhizal-bundle-<date>.zip`, streamed.
pub async fn export(scope: UserScope, today: jiff::civil::Date) -> Result<Download, ExportError> {
    let body = super::export::stream("export:bundle", move |sink| {
        let view = scope.view().map_err(super::export::Failure::database)?;
        match write(&view, &mut *sink, Timestamp::now()) {
            Ok(_) => Ok(()),
            // The client went away: nothing to report.
            Err(_) if sink.client_gone() => Ok(()),
            Err(e) => Err(e),
        }
    })
    .await?;
    Ok(Download { content_type: "application/zip", filename: format!("mycorrhizal-bundle-{today}.zip"), body })
}
