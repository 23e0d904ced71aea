//! What every record kind shares: the index names and key encodings, the length rule of text
//! fields, the id bound of requests and the delete step. Each kind's record, operations and
//! views live in its own folder (`contact/`, `note/`, `activity/`, ...).
//!
//! Composite index values are zero-padded so text order is numeric order: `"{contact:020}{time:020}"`
//! lists one contact's rows by time with a single range walk.

use jiff::Timestamp;
use mycorrhizal_engine::{Invalid, Record};

pub const BY_CONTACT: &str = "contact";
pub const BY_DATE: &str = "date";

/// `{contact:020}{micros:020}`.
pub fn contact_time(contact: u64, at: Timestamp) -> String {
    format!("{contact:020}{:020}", at.as_microsecond().max(0))
}

/// The walk bounds `[from, to)` of one contact's rows in a `contact` index.
pub fn contact_range(contact: u64) -> (String, String) {
    (format!("{contact:020}"), format!("{:020}", contact + 1))
}

pub fn micros(at: Timestamp) -> String {
    format!("{:020}", at.as_microsecond().max(0))
}

/// A text field's length rule: `min` to `max` characters once trimmed.
pub(crate) fn length(field: &str, text: &str, min: usize, max: usize) -> Result<(), Invalid> {
    let n = text.trim().chars().count();
    if n < min || n > max {
        return Err(Invalid::new(
            field,
            if min > 0 { format!("must be {min} to {max} characters") } else { format!("at most {max} characters") },
        ));
    }
    Ok(())
}

/// An id a request names must be one the API document allows: at most `i64::MAX` (the largest
/// integer every JSON client holds exactly), even where the route then ignores it.
pub fn check_id(field: &str, id: Option<u64>) -> super::Result<()> {
    match id {
        Some(id) if id > i64::MAX as u64 => Err(super::Error::invalid(field, "must be at most 9223372036854775807")),
        _ => Ok(()),
    }
}

/// Removes the user's record `id` of kind `R` when `pre` holds; a tombstone stays for sync
/// clients until the retention purge. The shared step of the kinds' own `delete` operations,
/// which say what their deletion leaves behind.
pub(crate) async fn delete<R: Record>(
    scope: &mycorrhizal_engine::UserScope,
    id: u64,
    pre: mycorrhizal_engine::Precondition,
) -> super::Result<()> {
    scope.write_async(move |tx| tx.delete::<R>(id, pre).map(|_| ())).await?;
    Ok(())
}
