//! Contact shares between users of one instance: a one-time, frozen copy of one contact, cut to
//! the sections the sender chose, which the recipient previews and accepts through the import
//! pipeline (choosing per row to add it or update a contact of their own), or declines. Nothing
//! of the sender's changes on either answer, and a share cannot be withdrawn: it is a copy, as a
//! vCard sent by mail is.
//!
//! A share is two rows with one public id ([`ContactShare::share`], a UUID): the sender's
//! (outgoing, naming the contact shared) and the recipient's (incoming, naming the blob that
//! holds the copy as JSContact, so listing shares never reads copies). Both are written, and later answered, in one transaction, so each user's data
//! holds only rows of their own, and deleting an account takes its side along.

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

pub mod ops;

/// Index of share rows by their public id, unique per user.
pub const BY_SHARE: &str = "share";
/// Index of share rows by the other user and status (`<user>:<status>`).
pub const BY_OTHER: &str = "other";

/// Unanswered shares one user may have from another at once: a recipient is not to be flooded.
pub const PENDING_PER_SENDER: usize = 50;

/// The statuses a share goes through: `pending`, then `accepted` or `declined`.
pub const STATUSES: &[&str] = &["pending", "accepted", "declined"];

/// The largest copy a share holds, in bytes of JSContact (a contact with a large photo).
pub const PAYLOAD_MAX: usize = 12 * 1024 * 1024;

/// One user's side of a share.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContactShare {
    /// The public id, the same on both sides.
    pub share: String,
    /// The recipient's side (else the sender's).
    pub incoming: bool,
    /// The other user's account id.
    pub other_user: u64,
    /// The contact's name when it was shared.
    pub contact_display_name: String,
    /// The sender's side: the contact shared (0 on the recipient's side).
    pub contact_id: u64,
    /// The card sections the copy holds.
    pub sections: Vec<String>,
    pub include_sensitive: bool,
    /// One of [`STATUSES`].
    pub status: String,
    /// When the recipient answered (RFC 3339), or empty.
    pub responded_at: String,
    /// The recipient's side: the name of the blob holding the copy (a JSON array of one
    /// JSContact card), written in the transaction that writes the row; empty on the sender's.
    pub copy: String,
}

impl ContactShare {
    /// The blob name of share `share`'s copy.
    pub fn copy_name(share: &str) -> String {
        format!("share-{share}.json")
    }
}

impl Record for ContactShare {
    const KIND: Kind = kind!("contact_share", hard_delete);
    const UNIQUE: &'static [&'static str] = &[BY_SHARE];

    fn validate(&self) -> Result<(), Invalid> {
        if uuid::Uuid::parse_str(&self.share).is_err() {
            return Err(Invalid::new("share", "must be a UUID"));
        }
        if !STATUSES.contains(&self.status.as_str()) {
            return Err(Invalid::new("status", "must be pending, accepted or declined"));
        }
        if self.sections.is_empty() {
            return Err(Invalid::new("sections", "must name at least one section"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_SHARE, self.share.clone()), (BY_OTHER, format!("{}:{}", self.other_user, self.status))]
    }
}
