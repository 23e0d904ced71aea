//! An attachment: a file kept with a contact. The record (the bytes are the blob [`blob_name`]);
//! storing, reading and adopting are [`ops`].

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::{records::BY_CONTACT, records::length as text};

pub mod ops;

/// The blob holding attachment `id`'s bytes (the integrity check looks for this name).
pub fn blob_name(id: u64) -> String {
    format!("attachment-{id}")
}

/// A file kept with a contact. The bytes are the blob `attachment-<id>` (`crm::attachment`); this
/// row describes them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Attachment {
    pub contact_id: u64,
    pub original_name: String,
    pub content_type: String,
    pub size_bytes: u64,
    /// Hex SHA-256 of the bytes, checked when they are served.
    pub sha256: String,
}

impl Record for Attachment {
    const KIND: Kind = kind!("attachment", soft_delete);

    fn validate(&self) -> Result<(), Invalid> {
        text("original_name", &self.original_name, 1, 255)
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_CONTACT, format!("{:020}", self.contact_id))]
    }
}
