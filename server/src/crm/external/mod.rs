//! The generic integration layer: a contact linked to an identifier in another system (an
//! [`ExternalIdentity`]: the photo library's person, a document, a folder), and events from
//! another system about a contact (an [`ExternalActivity`]: a photo they appear in), which the
//! contact's timeline shows beside notes and activities. Each integration writes these through
//! `ops`; the JSON door offers them as `/external-identities` and `/external-activities`.

use jiff::Timestamp;
use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::{BY_CONTACT, length};

pub mod ops;

/// Unique per user: one identity per (system, identifier in it), one activity per (system,
/// identifier, contact). Named after the input field a duplicate is reported on.
pub const BY_EXTERNAL_ID: &str = "external_id";

pub const SYNC_STATUSES: &[&str] = &["idle", "syncing", "synced", "error"];
pub const PROVENANCES: &[&str] = &["external", "user"];
pub const SYNC_STATES: &[&str] = &["synced", "pending"];

/// A contact linked to an identifier in another system.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExternalIdentity {
    pub contact_id: u64,
    /// The system (`immich`, `paperless`, `seafile`, `nextcloud`, or any other name).
    pub system: String,
    /// The identifier inside that system.
    pub external_id: String,
    /// A link into the system: `http` or `https` only, or empty.
    pub url: String,
    /// What the system says of it (a person's name, a document's title), a JSON object as text.
    pub metadata: String,
    /// One of [`SYNC_STATUSES`].
    pub sync_status: String,
    pub last_synced_at: Option<Timestamp>,
}

/// Something that happened in another system, about a contact.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExternalActivity {
    pub contact_id: u64,
    pub source_system: String,
    pub external_id: String,
    /// Open vocabulary (`photo-appearance`, ...).
    pub kind: String,
    pub occurred_at: Timestamp,
    /// The system's details, a JSON object as text.
    pub payload: String,
    /// One of [`PROVENANCES`].
    pub provenance: String,
    /// One of [`SYNC_STATES`].
    pub sync_state: String,
}

/// A link a client may follow: empty, or an `http`/`https` URL of at most 2000 characters.
pub fn check_url(field: &'static str, url: &str) -> Result<(), Invalid> {
    if url.is_empty() {
        return Ok(());
    }
    length(field, url, 0, 2000)?;
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        _ => Err(Invalid::new(field, "must be an http:// or https:// URL")),
    }
}

fn object(field: &'static str, text: &str) -> Result<(), Invalid> {
    length(field, text, 0, 16_000)?;
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        _ => Err(Invalid::new(field, "must be a JSON object")),
    }
}

fn one_of(field: &'static str, value: &str, allowed: &[&str]) -> Result<(), Invalid> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(Invalid::new(field, format!("must be one of {}", allowed.join(", "))))
    }
}

impl Record for ExternalIdentity {
    const KIND: Kind = kind!("external_identity", hard_delete);
    const UNIQUE: &'static [&'static str] = &[BY_EXTERNAL_ID];

    fn validate(&self) -> Result<(), Invalid> {
        length("system", &self.system, 1, 64)?;
        length("external_id", &self.external_id, 1, 255)?;
        check_url("url", &self.url)?;
        object("metadata", &self.metadata)?;
        one_of("sync_status", &self.sync_status, SYNC_STATUSES)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![
            (BY_CONTACT, format!("{:020}", self.contact_id)),
            (BY_EXTERNAL_ID, format!("{}\u{1f}{}", self.system, self.external_id)),
        ]
    }
}

impl Record for ExternalActivity {
    const KIND: Kind = kind!("external_activity", hard_delete);
    const UNIQUE: &'static [&'static str] = &[BY_EXTERNAL_ID];

    fn validate(&self) -> Result<(), Invalid> {
        length("source_system", &self.source_system, 1, 64)?;
        length("external_id", &self.external_id, 1, 255)?;
        length("type", &self.kind, 1, 64)?;
        object("payload", &self.payload)?;
        one_of("provenance", &self.provenance, PROVENANCES)?;
        one_of("sync_state", &self.sync_state, SYNC_STATES)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![
            (BY_CONTACT, crate::crm::records::contact_time(self.contact_id, self.occurred_at)),
            // Per contact: one photo shows several people, each its own appearance.
            (BY_EXTERNAL_ID, format!("{}\u{1f}{}\u{1f}{}", self.source_system, self.external_id, self.contact_id)),
        ]
    }
}
